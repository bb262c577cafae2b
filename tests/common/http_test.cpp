#include "common/http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "common/http_client.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

// An HttpServer on 127.0.0.1, port 0, served by one io thread for the test's lifetime.
class ServerThread {
 public:
  explicit ServerThread(HttpHandler handler, HttpServerOptions options = {})
      : server_(io_, "127.0.0.1", 0, std::move(handler), options) {
    server_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ServerThread(AsyncHttpHandler handler, HttpServerOptions options)
      : server_(io_, "127.0.0.1", 0, std::move(handler), options) {
    server_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ServerThread() {
    server_.stop();
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return server_.port(); }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port()) + path; }
  const HttpServer& server() const { return server_; }

 private:
  asio::io_context io_;
  HttpServer server_;
  std::thread thread_;
};

// A plain blocking TCP client with a receive timeout, for requests curl would not send.
class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket");
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("connect");
  }
  ~RawClient() { ::close(fd_); }

  void send(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send");
      off += static_cast<size_t>(n);
    }
  }
  // Reads one response with a Content-Length body; "" on timeout or close.
  std::string read_response() {
    while (true) {
      const size_t head_end = buf_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t length = 0;
        const std::string head = buf_.substr(0, head_end);
        std::string lower = head;
        for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const size_t cl = lower.find("content-length:");
        if (cl != std::string::npos) length = std::stoul(head.substr(cl + 15));
        if (buf_.size() >= head_end + 4 + length) {
          std::string out = buf_.substr(0, head_end + 4 + length);
          buf_.erase(0, head_end + 4 + length);
          return out;
        }
      }
      char tmp[4096];
      const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n <= 0) return "";
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }
  // True when the server closed the connection (recv returns 0) within the timeout.
  bool closed_by_peer() {
    char tmp[256];
    return ::recv(fd_, tmp, sizeof tmp, 0) == 0;
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

TEST(HttpServer, AnswersAHandlerOnPortZero) {
  std::mutex mu;
  HttpRequest seen;
  ServerThread s([&](const HttpRequest& req) {
    std::lock_guard lock(mu);
    seen = req;
    HttpResponse r = HttpResponse::json(201, R"({"ok":true})");
    r.headers.emplace_back("X-Extra", "yes");
    return r;
  });
  EXPECT_NE(s.port(), 0);
  EXPECT_EQ(s.server().address(), "127.0.0.1");
  HttpClient c;
  HttpCallOptions o;
  o.headers.emplace_back("X-Test", "Value 1");
  auto r = c.get(s.url("/s/x%20y/metrics?a=1&b=x%20y&c"), o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, R"({"ok":true})");
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.method, "GET");
  EXPECT_EQ(seen.target, "/s/x%20y/metrics?a=1&b=x%20y&c");
  EXPECT_EQ(seen.path, "/s/x y/metrics");
  EXPECT_EQ(seen.query, (std::map<std::string, std::string>{{"a", "1"}, {"b", "x y"}, {"c", ""}}));
  ASSERT_NE(seen.header("x-test"), nullptr);
  EXPECT_EQ(*seen.header("x-test"), "Value 1");
  EXPECT_EQ(seen.header("X-Test"), nullptr);  // names are lower-case
  EXPECT_EQ(seen.peer.rfind("127.0.0.1:", 0), 0u) << seen.peer;
}

TEST(HttpServer, PostBodyReachesTheHandler) {
  std::mutex mu;
  HttpRequest seen;
  ServerThread s([&](const HttpRequest& req) {
    std::lock_guard lock(mu);
    seen = req;
    return HttpResponse::text(200, "got " + std::to_string(req.body.size()));
  });
  HttpClient c;
  auto r = c.post(s.url("/rpc"), R"({"a":1})", "application/json");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "got 7\n");  // text() ends the body with a newline
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.body, R"({"a":1})");
  ASSERT_NE(seen.header("content-type"), nullptr);
  EXPECT_EQ(*seen.header("content-type"), "application/json");
}

TEST(HttpServer, BodyOverLimitIs413) {
  std::atomic<int> calls{0};
  HttpServerOptions o;
  o.body_limit = 16;
  ServerThread s(
      [&](const HttpRequest&) {
        ++calls;
        return HttpResponse::text(200, "ok");
      },
      o);
  HttpClient c;
  auto small = c.post(s.url("/x"), std::string(16, 'a'), "text/plain");
  ASSERT_TRUE(small.ok()) << small.error();
  EXPECT_EQ(small->status, 200);
  auto big = c.post(s.url("/x"), std::string(100, 'a'), "text/plain");
  ASSERT_TRUE(big.ok()) << big.error();
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpServer, MalformedRequestLineIs400AndCloses) {
  std::atomic<int> calls{0};
  ServerThread s([&](const HttpRequest&) {
    ++calls;
    return HttpResponse::text(200, "ok");
  });
  RawClient raw(s.port());
  raw.send("THIS IS NOT HTTP\r\n\r\n");
  const std::string resp = raw.read_response();
  EXPECT_EQ(resp.rfind("HTTP/1.1 400", 0), 0u) << resp;
  EXPECT_NE(resp.find("bad request"), std::string::npos) << resp;
  EXPECT_TRUE(raw.closed_by_peer());
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServer, HandlerThrowingIs500) {
  ServerThread s([&](const HttpRequest&) -> HttpResponse { throw std::runtime_error("kaboom"); });
  HttpClient c;
  auto r = c.get(s.url("/boom"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, "internal error: kaboom\n");
  // The server keeps serving.
  auto again = c.get(s.url("/boom"));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->status, 500);
}

TEST(HttpServer, KeepAliveServesASecondRequestOnTheSameConnection) {
  std::mutex mu;
  std::vector<std::string> peers, paths;
  ServerThread s([&](const HttpRequest& req) {
    std::lock_guard lock(mu);
    peers.push_back(req.peer);
    paths.push_back(req.path);
    return HttpResponse::text(200, "hello " + req.path);
  });
  RawClient raw(s.port());
  raw.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string r1 = raw.read_response();
  EXPECT_EQ(r1.rfind("HTTP/1.1 200", 0), 0u) << r1;
  EXPECT_NE(r1.find("hello /one\n"), std::string::npos) << r1;
  raw.send("GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string r2 = raw.read_response();
  EXPECT_EQ(r2.rfind("HTTP/1.1 200", 0), 0u) << r2;
  EXPECT_NE(r2.find("hello /two\n"), std::string::npos) << r2;
  // Connection: close is honoured.
  raw.send("GET /three HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string r3 = raw.read_response();
  EXPECT_NE(r3.find("hello /three\n"), std::string::npos) << r3;
  EXPECT_TRUE(raw.closed_by_peer());
  std::lock_guard lock(mu);
  ASSERT_EQ(peers.size(), 3u);
  EXPECT_EQ(peers[0], peers[1]);
  EXPECT_EQ(peers[1], peers[2]);
  EXPECT_EQ(paths, (std::vector<std::string>{"/one", "/two", "/three"}));
}

TEST(HttpServer, BadListenAddressThrows) {
  asio::io_context io;
  EXPECT_THROW(HttpServer(io, "not-an-address", 0, [](const HttpRequest&) { return HttpResponse{}; }),
               std::runtime_error);
}

TEST(HttpServer, PortInUseThrowsWithTheAddress) {
  ServerThread s([](const HttpRequest&) { return HttpResponse{}; });
  asio::io_context io;
  try {
    HttpServer second(io, "127.0.0.1", s.port(), [](const HttpRequest&) { return HttpResponse{}; });
    ADD_FAILURE() << "second bind succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(s.port())), std::string::npos) << e.what();
  }
}

TEST(HttpClient, ClosedPortIsAnErrorNamingTheUrl) {
  uint16_t port = 0;
  {
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = a.local_endpoint().port();
  }
  HttpClient c;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  auto r = c.get(url);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind(url + ": ", 0), 0u) << r.error();
  auto p = c.post(url, "{}", "application/json");
  ASSERT_FALSE(p.ok());
}

TEST(HttpClient, RefusesOtherProtocols) {
  HttpClient c;
  auto r = c.get("file:///etc/passwd");
  ASSERT_FALSE(r.ok());
}

TEST(UrlDecode, EdgeCases) {
  EXPECT_EQ(url_decode("a%20b"), "a b");
  EXPECT_EQ(url_decode("a+b"), "a b");
  EXPECT_EQ(url_decode("%2B"), "+");
  EXPECT_EQ(url_decode("%41%42c"), "ABc");
  EXPECT_EQ(url_decode("%6a%6A"), "jj");
  EXPECT_EQ(url_decode("%zz"), "%zz");
  EXPECT_EQ(url_decode("%4"), "%4");
  EXPECT_EQ(url_decode("100%"), "100%");
  EXPECT_EQ(url_decode("%"), "%");
  EXPECT_EQ(url_decode("x%4g"), "x%4g");
  EXPECT_EQ(url_decode("%%41"), "%A");
  EXPECT_EQ(url_decode(""), "");
}

TEST(ParseQuery, EdgeCases) {
  using Q = std::map<std::string, std::string>;
  EXPECT_EQ(parse_query(""), Q{});
  EXPECT_EQ(parse_query("a=1&b=2"), (Q{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(parse_query("a=1&&b=&c"), (Q{{"a", "1"}, {"b", ""}, {"c", ""}}));
  EXPECT_EQ(parse_query("a=1=2"), (Q{{"a", "1=2"}}));
  EXPECT_EQ(parse_query("k%3Dx=v+w"), (Q{{"k=x", "v w"}}));
  EXPECT_EQ(parse_query("a=1&a=2"), (Q{{"a", "2"}}));
  EXPECT_EQ(parse_query("q=%zz&r=%"), (Q{{"q", "%zz"}, {"r", "%"}}));
  EXPECT_EQ(parse_query("&&"), Q{});
  EXPECT_EQ(parse_query("=v"), (Q{{"", "v"}}));
}

TEST(HttpResponse, Constructors) {
  const HttpResponse t = HttpResponse::text(404, "nope");
  EXPECT_EQ(t.status, 404u);
  EXPECT_EQ(t.body, "nope\n");
  EXPECT_EQ(t.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(HttpResponse::text(200, "done\n").body, "done\n");
  EXPECT_EQ(HttpResponse::text(200, "").body, "\n");
  const HttpResponse j = HttpResponse::json(200, "{}");
  EXPECT_EQ(j.content_type, "application/json");
  EXPECT_EQ(j.body, "{}");
}


// ---------------------------------------------------------------------------------------
// Answers from elsewhere; hostile paths; floods of idle connections.

TEST(HttpServer, AnAsyncHandlerAnswersFromAnotherThreadWhileTheServerServesOthers) {
  // The slow path's answer comes from a worker thread half a second later; meanwhile a
  // fast path on the same one-thread server answers at once.
  std::vector<std::thread> workers;
  std::mutex mu;
  ServerThread s(AsyncHttpHandler([&](HttpRequest r, HttpRespond reply) {
                   if (r.path == "/slow") {
                     std::lock_guard lock(mu);
                     workers.emplace_back([reply] {
                       std::this_thread::sleep_for(std::chrono::milliseconds(500));
                       reply(HttpResponse::text(200, "slow"));
                     });
                     return;
                   }
                   reply(HttpResponse::text(200, "fast"));
                 }),
                 HttpServerOptions{});
  std::string slow_body;
  std::thread slow([&] {
    HttpClient c;
    auto r = c.get(s.url("/slow"));
    if (r.ok()) slow_body = r->body;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  HttpClient c;
  auto fast = c.get(s.url("/fast"));
  ASSERT_TRUE(fast.ok()) << fast.error();
  EXPECT_EQ(fast->body, "fast\n");
  slow.join();
  EXPECT_EQ(slow_body, "slow\n");
  std::lock_guard lock(mu);
  for (auto& w : workers) w.join();
}

TEST(HttpServer, APathThatIsNotUtf8Is400AndNeverReachesTheHandler) {
  std::atomic<int> calls{0};
  ServerThread s([&](const HttpRequest&) {
    ++calls;
    return HttpResponse::text(200, "ok");
  });
  for (const char* bad : {"/api/%FF", "/api/%c0%af", "/x?a=%ff"}) {
    RawClient c(s.port());
    c.send(std::string("GET ") + bad + " HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string r = c.read_response();
    EXPECT_NE(r.find("HTTP/1.1 400"), std::string::npos) << bad << ": " << r;
    EXPECT_NE(r.find("not valid UTF-8"), std::string::npos) << r;
  }
  EXPECT_EQ(calls.load(), 0);
  HttpClient c;
  EXPECT_EQ(c.get(s.url("/caf%C3%A9"))->status, 200u);  // UTF-8 escaped in a path is fine
}

TEST(HttpServer, IdleConnectionsNeverLockANewClientOut) {
  // At most 64 connections; 300 clients connect and say nothing. A new client is still
  // answered at once: the connections idle longest make room.
  HttpServerOptions o;
  o.max_sessions = 64;
  ServerThread s([](const HttpRequest&) { return HttpResponse::text(200, "ok"); }, o);
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(s.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    idle.push_back(fd);
  }
  for (int i = 0; i < 3; ++i) {
    HttpClient c;
    auto r = c.get(s.url("/healthz"));
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->status, 200u);
  }
  EXPECT_LE(s.server().sessions(), 64u);
  EXPECT_GE(s.server().evicted(), 300u - 64u);
  for (const int fd : idle) ::close(fd);
}

// A connection that says nothing is closed once its read deadline passes, not held open.
TEST(HttpServer, AnIdleConnectionIsClosedAtItsReadDeadline) {
  HttpServerOptions o;
  o.read_timeout_s = 0.5;
  ServerThread s([](const HttpRequest&) { return HttpResponse::text(200, "ok"); }, o);
  RawClient idle(s.port());
  ASSERT_TRUE(testing::eventually([&] { return s.server().sessions() == 1; }, std::chrono::seconds(5)));
  // The server closes it: the client reads the end of the stream (not its own 5 s timeout).
  EXPECT_EQ(idle.read_response(), "");
  EXPECT_TRUE(idle.closed_by_peer());
  EXPECT_TRUE(testing::eventually([&] { return s.server().sessions() == 0; }, std::chrono::seconds(5)));
  // And a kept-alive connection after its answer the same way.
  RawClient kept(s.port());
  kept.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(kept.read_response(), ::testing::HasSubstr("200"));
  EXPECT_EQ(kept.read_response(), "");
  EXPECT_TRUE(kept.closed_by_peer());
}

TEST(HttpServer, OneClientCannotHoldMoreThanItsShare) {
  HttpServerOptions o;
  o.max_sessions = 1000;
  o.max_sessions_per_client = 8;
  ServerThread s([](const HttpRequest&) { return HttpResponse::text(200, "ok"); }, o);
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(std::make_unique<RawClient>(s.port()));
  HttpClient c;
  ASSERT_EQ(c.get(s.url("/"))->status, 200u);
  EXPECT_LE(s.server().sessions(), 8u);
  EXPECT_GE(s.server().evicted(), 12u);
}

}  // namespace
}  // namespace medic

// HttpServer over TLS against libcurl (HttpClient) with throwaway certificates.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/asio.h"
#include "common/http_client.h"
#include "common/http_server.h"
#include "tests/support/testing.h"
#include "tests/support/tls_certs.h"

namespace medic {
namespace {

using testing::TlsFiles;

HttpServerOptions tls_options(const TlsFiles& pki) {
  HttpServerOptions o;
  o.tls_cert_file = pki.server_cert;
  o.tls_key_file = pki.server_key;
  return o;
}

// An HttpServer on 127.0.0.1, port 0, served by one io thread for the test's lifetime.
class ServerThread {
 public:
  ServerThread(HttpHandler handler, HttpServerOptions options)
      : server_(io_, "127.0.0.1", 0, std::move(handler), std::move(options)) {
    server_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ServerThread() {
    server_.stop();
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return server_.port(); }
  std::string url(const std::string& path, const std::string& scheme = "https") const {
    return scheme + "://127.0.0.1:" + std::to_string(port()) + path;
  }
  const HttpServer& server() const { return server_; }

 private:
  asio::io_context io_;
  HttpServer server_;
  std::thread thread_;
};

// A plain TCP connection, for what curl would not do: speak HTTP to a TLS port, or nothing.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket");
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("connect");
  }
  ~RawConnection() { ::close(fd_); }
  void send(const std::string& data) { ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL), ssize_t(data.size())); }
  // Reads until the server closes (true) or the 10 s receive timeout passes (false);
  // whatever arrived before the close is in `got`.
  bool read_until_closed(std::string& got) {
    char buf[4096];
    while (true) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        got.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) return true;
      return errno == ECONNRESET;  // EAGAIN: the timeout passed with the connection open
    }
  }

 private:
  int fd_ = -1;
};

class HttpsServer : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_setup();
    pki_ = testing::make_test_pki(dir_.path());
    other_ = testing::make_test_pki(dir_.path(), "other-");
  }
  HttpCallOptions trusting(const TlsFiles& pki) const {
    HttpCallOptions o;
    o.ca_file = pki.ca_cert;
    return o;
  }
  testing::TempDir dir_;
  TlsFiles pki_, other_;
};

TEST_F(HttpsServer, AnswersAnHttpsClientThatTrustsItsCa) {
  std::mutex mu;
  HttpRequest seen;
  ServerThread s(
      [&](const HttpRequest& req) {
        std::lock_guard lock(mu);
        seen = req;
        return HttpResponse::json(200, R"({"path":")" + req.path + R"(","n":)" + std::to_string(req.body.size()) + "}");
      },
      tls_options(pki_));
  EXPECT_TRUE(s.server().tls());
  HttpClient c;
  auto g = c.get(s.url("/s/rtsw0001/metrics?x=1"), trusting(pki_));
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g->status, 200);
  EXPECT_EQ(g->body, R"({"path":"/s/rtsw0001/metrics","n":0})");
  auto p = c.post(s.url("/s/rtsw0001/rpc"), R"({"jsonrpc":"2.0"})", "application/json", trusting(pki_));
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->status, 200);
  EXPECT_EQ(p->body, R"({"path":"/s/rtsw0001/rpc","n":17})");
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.body, R"({"jsonrpc":"2.0"})");
  EXPECT_EQ(seen.peer.rfind("127.0.0.1:", 0), 0u) << seen.peer;
}

TEST_F(HttpsServer, PlainServerHasNoTls) {
  ServerThread s([](const HttpRequest&) { return HttpResponse::text(200, "plain"); }, HttpServerOptions{});
  EXPECT_FALSE(s.server().tls());
  HttpClient c;
  auto r = c.get(s.url("/", "http"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->body, "plain\n");
}

TEST_F(HttpsServer, ClientTrustingAnotherCaFailsVerificationAndTheServerCarriesOn) {
  std::atomic<int> calls{0};
  ServerThread s(
      [&](const HttpRequest&) {
        ++calls;
        return HttpResponse::text(200, "ok");
      },
      tls_options(pki_));
  HttpClient c;
  const std::string url = s.url("/x");
  auto r = c.get(url, trusting(other_));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), url + ": SSL certificate problem: unable to get local issuer certificate");
  EXPECT_TRUE(c.last_failure_permanent());
  // No CA given: the system's CAs do not know this one either.
  auto sys = c.get(url);
  ASSERT_FALSE(sys.ok());
  EXPECT_EQ(sys.error(), url + ": SSL certificate problem: unable to get local issuer certificate");
  EXPECT_EQ(calls.load(), 0);

  auto ok = c.get(url, trusting(pki_));
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->status, 200);
  EXPECT_FALSE(c.last_failure_permanent());
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(HttpsServer, CertificateForAnotherHostFailsHostVerification) {
  testing::TlsSubject elsewhere;
  elsewhere.ip_sans = {"127.0.0.2"};
  elsewhere.dns_sans = {"switch.example"};
  elsewhere.common_name = "127.0.0.2";
  const TlsFiles wrong_host = testing::make_test_pki(dir_.path(), "elsewhere-", elsewhere);
  ServerThread s([](const HttpRequest&) { return HttpResponse::text(200, "ok"); }, tls_options(wrong_host));
  HttpClient c;
  const std::string url = s.url("/x");
  auto r = c.get(url, trusting(wrong_host));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), url + ": SSL: no alternative certificate subject name matches target host name '127.0.0.1'");
  EXPECT_TRUE(c.last_failure_permanent());
  // Only with verification off (never done by medicd) does it go through.
  HttpCallOptions insecure = trusting(wrong_host);
  insecure.verify_tls = false;
  auto through = c.get(url, insecure);
  ASSERT_TRUE(through.ok()) << through.error();
  EXPECT_EQ(through->status, 200);
}

TEST_F(HttpsServer, PlainHttpToTheTlsPortIsClosedWithoutAnAnswer) {
  std::atomic<int> calls{0};
  ServerThread s(
      [&](const HttpRequest&) {
        ++calls;
        return HttpResponse::text(200, "ok");
      },
      tls_options(pki_));
  {
    RawConnection raw(s.port());
    raw.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    std::string got;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(raw.read_until_closed(got)) << "the server kept a plain-HTTP connection open";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_EQ(got.find("HTTP/1."), std::string::npos) << got;
  }
  HttpClient c;
  auto r = c.get(s.url("/healthz", "http"));
  EXPECT_FALSE(r.ok() && r->status == 200);
  EXPECT_EQ(calls.load(), 0);
  // Still serving TLS.
  auto ok = c.get(s.url("/healthz"), trusting(pki_));
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(HttpsServer, SilentClientIsCutOffByTheHandshakeDeadline) {
  HttpServerOptions o = tls_options(pki_);
  o.read_timeout_s = 0.3;
  ServerThread s([](const HttpRequest&) { return HttpResponse::text(200, "ok"); }, o);
  RawConnection raw(s.port());
  std::string got;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(raw.read_until_closed(got));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(got, "");
}

TEST_F(HttpsServer, BodyLimitAndKeepAliveHoldOverTls) {
  std::mutex mu;
  std::vector<std::string> peers;
  HttpServerOptions o = tls_options(pki_);
  o.body_limit = 16;
  ServerThread s(
      [&](const HttpRequest& req) {
        std::lock_guard lock(mu);
        peers.push_back(req.peer);
        return HttpResponse::text(200, "ok");
      },
      o);
  HttpClient c;
  auto small = c.post(s.url("/x"), std::string(16, 'a'), "text/plain", trusting(pki_));
  ASSERT_TRUE(small.ok()) << small.error();
  EXPECT_EQ(small->status, 200);
  auto again = c.post(s.url("/y"), std::string(8, 'b'), "text/plain", trusting(pki_));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->status, 200);
  auto big = c.post(s.url("/z"), std::string(100, 'a'), "text/plain", trusting(pki_));
  ASSERT_TRUE(big.ok()) << big.error();
  EXPECT_EQ(big->status, 413);
  std::lock_guard lock(mu);
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_EQ(peers[0], peers[1]);  // the connection (and TLS session) was kept alive
}

std::string construction_error(const HttpServerOptions& o) {
  asio::io_context io;
  try {
    HttpServer s(io, "127.0.0.1", 0, [](const HttpRequest&) { return HttpResponse{}; }, o);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(HttpsServer, BadCertificateOrKeyFilesThrowNamingTheFileAndTheReason) {
  HttpServerOptions o = tls_options(pki_);
  o.tls_cert_file = dir_.file("missing.pem");
  EXPECT_EQ(construction_error(o), "TLS certificate " + dir_.file("missing.pem") + ": cannot open: No such file or directory");

  testing::write_file(dir_.file("garbage.pem"), "this is not a certificate\n");
  o.tls_cert_file = dir_.file("garbage.pem");
  EXPECT_EQ(construction_error(o),
            "TLS certificate " + dir_.file("garbage.pem") + ": no PEM block (-----BEGIN ...) in the file");

  // A PEM block whose content is not a certificate: OpenSSL's own reason, without "PEM lib".
  testing::write_file(dir_.file("broken.pem"), "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n");
  o.tls_cert_file = dir_.file("broken.pem");
  EXPECT_EQ(construction_error(o), "TLS certificate " + dir_.file("broken.pem") + ": bad base64 decode");

  o = tls_options(pki_);
  o.tls_key_file = dir_.file("garbage.pem");
  EXPECT_EQ(construction_error(o), "TLS key " + dir_.file("garbage.pem") + ": no PEM block (-----BEGIN ...) in the file");

  o = tls_options(pki_);
  o.tls_key_file = other_.server_key;  // a key, but not this certificate's
  EXPECT_EQ(construction_error(o), "TLS key " + other_.server_key + ": key values mismatch");

  o = tls_options(pki_);
  o.tls_key_file.clear();
  EXPECT_EQ(construction_error(o), "TLS needs both a certificate and a key file (got certificate \"" +
                                       pki_.server_cert + "\", key \"\")");
}

}  // namespace
}  // namespace medic

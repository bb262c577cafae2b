#include "remediation/driver.h"
#include "common/strings.h"
#include "tests/support/testing.h"
#include "tests/support/tls_certs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "common/http_server.h"
#include "fabric/generator.h"
#include "sim/server.h"

namespace medic::remediation {
namespace {

// An HttpServer on 127.0.0.1, port 0, served by one io thread for the test's lifetime;
// HTTPS when the options carry a certificate.
class ServerThread {
 public:
  explicit ServerThread(HttpHandler handler, HttpServerOptions options = {})
      : server_(io_, "127.0.0.1", 0, std::move(handler), std::move(options)) {
    server_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ServerThread() {
    server_.stop();
    io_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return std::string(server_.tls() ? "https" : "http") + "://127.0.0.1:" + std::to_string(server_.port()) + path;
  }

 private:
  asio::io_context io_;
  HttpServer server_;
  std::thread thread_;
};

// A port on 127.0.0.1 that nothing listens on: bound, then closed.
using medic::testing::closed_port;

JsonRpcOptions fast_options() {
  JsonRpcOptions o;
  o.timeout_s = 5.0;
  o.attempts = 3;
  o.backoff_s = 0.001;
  return o;
}

// fabsim's HTTP surface over the demo fabric, in process.
class JsonRpcAgainstSim : public ::testing::Test {
 protected:
  void start(sim::ServerOptions options = {}, HttpServerOptions http = {}) {
    options_ = options;
    server_ = std::make_unique<ServerThread>(
        [this](const HttpRequest& req) {
          std::lock_guard lock(mu_);
          ++requests_;
          return sim::handle(sim_, t_, req, options_);
        },
        std::move(http));
  }
  std::string rpc_url(const std::string& sw) const { return server_->url("/s/" + sw + "/rpc"); }
  bool sim_drained(const std::string& sw, const std::string& port) {
    std::lock_guard lock(mu_);
    return sim_.state(*topo_.find_device(sw), port, t_)->drained;
  }
  int requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

  fabric::Topology topo_ = fabric::generate_clos(*fabric::preset("demo"));
  std::mutex mu_;
  sim::FabricSim sim_{topo_};
  double t_ = 10.0;
  int requests_ = 0;
  sim::ServerOptions options_;
  std::unique_ptr<ServerThread> server_;
};

TEST_F(JsonRpcAgainstSim, DrainGetStateUndrainRoundTrip) {
  start();
  JsonRpcDriver d("rtsw0001", rpc_url("rtsw0001"), fast_options());
  EXPECT_EQ(d.kind(), "jsonrpc");

  auto st = d.get_state("eth5");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(st->interface, "eth5");
  EXPECT_FALSE(st->drained);
  EXPECT_TRUE(st->oper_up);

  auto dr = d.drain("eth5");
  ASSERT_TRUE(dr.ok()) << dr.error();
  EXPECT_TRUE(dr->drained);
  EXPECT_TRUE(sim_drained("rtsw0001", "eth5"));
  EXPECT_FALSE(sim_drained("rtsw0001", "eth6"));

  // Idempotent: draining again succeeds and changes nothing.
  auto again = d.drain("eth5");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->drained);

  st = d.get_state("eth5");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_TRUE(st->drained);

  auto un = d.undrain("eth5");
  ASSERT_TRUE(un.ok()) << un.error();
  EXPECT_FALSE(un->drained);
  EXPECT_FALSE(sim_drained("rtsw0001", "eth5"));
  EXPECT_EQ(requests(), 5);
}

TEST_F(JsonRpcAgainstSim, ReportsOperStatusOfADownLink) {
  start();
  {
    std::lock_guard lock(mu_);
    sim_.set_link_up(*topo_.find_link("rtsw0002:eth6"), false, t_);
  }
  JsonRpcDriver d("rtsw0002", rpc_url("rtsw0002"), fast_options());
  auto st = d.get_state("eth6");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_FALSE(st->oper_up);
}

TEST_F(JsonRpcAgainstSim, UnknownInterfaceCarriesTheSwitchMessage) {
  start();
  JsonRpcDriver d("rtsw0001", rpc_url("rtsw0001"), fast_options());
  auto r = d.drain("eth99");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "rtsw0001 interface.drain(eth99): switch refused: unknown interface \"eth99\" on rtsw0001");
  EXPECT_EQ(r.kind(), ErrorKind::conflict);  // the switch said no: certainly not carried out
  EXPECT_EQ(requests(), 1);  // a refusal is not retried
}

TEST_F(JsonRpcAgainstSim, WrongBearerTokenIsHttp401AndNotRetried) {
  start(sim::ServerOptions{"s3cret"});
  JsonRpcOptions o = fast_options();
  o.bearer_token = "wrong";
  JsonRpcDriver d("rtsw0001", rpc_url("rtsw0001"), o);
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("HTTP 401"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("rtsw0001 interface.drain(eth5)"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("missing or wrong bearer token"), std::string::npos) << r.error();
  EXPECT_EQ(r.kind(), ErrorKind::conflict);
  EXPECT_EQ(requests(), 1);
  EXPECT_FALSE(sim_drained("rtsw0001", "eth5"));

  JsonRpcDriver none("rtsw0001", rpc_url("rtsw0001"), fast_options());
  auto r2 = none.drain("eth5");
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().find("HTTP 401"), std::string::npos) << r2.error();

  o.bearer_token = "s3cret";
  JsonRpcDriver right("rtsw0001", rpc_url("rtsw0001"), o);
  auto ok = right.drain("eth5");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_TRUE(sim_drained("rtsw0001", "eth5"));
}

TEST_F(JsonRpcAgainstSim, UnknownSwitchIsHttp404) {
  start();
  JsonRpcDriver d("nope", rpc_url("nope"), fast_options());
  auto r = d.get_state("eth1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("HTTP 404"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("no switch named nope"), std::string::npos) << r.error();
}

TEST(JsonRpcDriver, UnreachableUrlFailsAfterTheConfiguredAttempts) {
  JsonRpcOptions o = fast_options();
  o.attempts = 2;
  o.timeout_s = 2.0;
  const std::string url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/s/rtsw0001/rpc";
  JsonRpcDriver d("rtsw0001", url, o);
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("rtsw0001 interface.drain(eth5): " + url + ": ", 0), 0u) << r.error();
  EXPECT_NE(r.error().find("(after 2 attempts)"), std::string::npos) << r.error();
  EXPECT_EQ(r.kind(), ErrorKind::unavailable) << "a refused connection sent nothing";
}

TEST(JsonRpcDriver, ServerErrorsAreRetriedThenReported) {
  std::atomic<int> calls{0};
  ServerThread server([&](const HttpRequest&) {
    ++calls;
    return HttpResponse::text(500, "internal trouble");
  });
  JsonRpcDriver d("rtsw0001", server.url("/rpc"), fast_options());
  auto r = d.get_state("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "rtsw0001 interface.get_state(eth5): HTTP 500 (after 3 attempts)");
  EXPECT_EQ(r.kind(), ErrorKind::indeterminate) << "a 5xx says nothing of what was done";
  EXPECT_EQ(calls.load(), 3);
}

TEST(JsonRpcDriver, ZeroAttemptsStillTriesOnceAndSaysSo) {
  std::atomic<int> calls{0};
  ServerThread server([&](const HttpRequest&) {
    ++calls;
    return HttpResponse::text(502, "bad gateway");
  });
  JsonRpcOptions o = fast_options();
  o.attempts = 0;
  JsonRpcDriver d("rtsw0001", server.url("/rpc"), o);
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "rtsw0001 interface.drain(eth5): HTTP 502 (after 1 attempts)");
  EXPECT_EQ(calls.load(), 1);
}

TEST(JsonRpcDriver, ServerErrorThenSuccessRecovers) {
  std::atomic<int> calls{0};
  ServerThread server([&](const HttpRequest&) {
    if (++calls == 1) return HttpResponse::text(503, "busy");
    return HttpResponse::json(200, R"({"jsonrpc":"2.0","id":2,"result":{"interface":"eth5","drained":true,"oper_status":"up"}})");
  });
  JsonRpcDriver d("rtsw0001", server.url("/rpc"), fast_options());
  auto r = d.drain("eth5");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->drained);
  EXPECT_EQ(calls.load(), 2);
}

TEST(JsonRpcDriver, GarbageAnswerIsAClearError) {
  std::atomic<int> calls{0};
  ServerThread server([&](const HttpRequest&) {
    ++calls;
    return HttpResponse::text(200, "<html>hello</html>");
  });
  JsonRpcDriver d("rtsw0001", server.url("/rpc"), fast_options());
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "rtsw0001 interface.drain(eth5): answer is not a JSON object");
  EXPECT_EQ(r.kind(), ErrorKind::indeterminate);
  EXPECT_EQ(calls.load(), 1);
}

// A switch that takes the request and answers too late, or closes the connection without
// an answer, may have carried it out: indeterminate, so the caller puts the interface back.
TEST(JsonRpcDriver, AnAnswerTooLateOrNeverIsIndeterminate) {
  std::atomic<int> calls{0};
  ServerThread slow([&](const HttpRequest&) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    return HttpResponse::json(200, R"({"jsonrpc":"2.0","id":1,"result":{"interface":"eth5","drained":true}})");
  });
  JsonRpcOptions o = fast_options();
  o.timeout_s = 0.2;
  o.attempts = 1;
  JsonRpcDriver d("rtsw0001", slow.url("/rpc"), o);
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("(after 1 attempts)"), std::string::npos) << r.error();
  EXPECT_EQ(r.kind(), ErrorKind::indeterminate) << r.error();
  EXPECT_TRUE(testing::eventually([&] { return calls.load() == 1; }, std::chrono::seconds(5)));

  // Reads the request, then closes without a word.
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = acceptor.local_endpoint().port();
  std::thread closer([&] {
    for (int i = 0; i < 2; ++i) {
      asio::ip::tcp::socket sock(io);
      acceptor.accept(sock);
      char buf[4096];
      boost::system::error_code ec;
      (void)sock.read_some(asio::buffer(buf), ec);
      sock.close();
    }
  });
  JsonRpcOptions two = fast_options();
  two.attempts = 2;
  JsonRpcDriver c("rtsw0001", "http://127.0.0.1:" + std::to_string(port) + "/rpc", two);
  auto rc = c.drain("eth5");
  closer.join();
  ASSERT_FALSE(rc.ok());
  EXPECT_NE(rc.error().find("(after 2 attempts)"), std::string::npos) << rc.error();
  EXPECT_EQ(rc.kind(), ErrorKind::indeterminate) << rc.error();
}

// What a broken or hostile switch says reaches logs and action rows escaped and cut.
TEST(JsonRpcDriver, BytesASwitchSendsAreEscapedAndCutInItsErrors) {
  ServerThread refusing([&](const HttpRequest&) {
    return HttpResponse::text(403, std::string("no\xff\x01\x1b[2J") + std::string(1000, 'x') + "\n");
  });
  JsonRpcDriver d("rtsw0001", refusing.url("/rpc"), fast_options());
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("rtsw0001 interface.drain(eth5): HTTP 403: no\\xff\\x01\\x1b[2Jxxx", 0), 0u) << r.error();
  EXPECT_FALSE(utf8_error(r.error()).has_value());
  EXPECT_LT(r.error().size(), 300u);
  ServerThread lying([&](const HttpRequest&) {
    return HttpResponse::json(200, R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"bad\u0007\u001b[31mred"}})");
  });
  JsonRpcDriver d2("rtsw0001", lying.url("/rpc"), fast_options());
  auto r2 = d2.drain("eth5");
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error(), "rtsw0001 interface.drain(eth5): switch refused: bad\\x07\\x1b[31mred");
}

TEST(JsonRpcDriver, AnswerWithoutDrainedBooleanIsAClearError) {
  ServerThread server([&](const HttpRequest&) {
    return HttpResponse::json(200, R"({"jsonrpc":"2.0","id":1,"result":{"drained":"yes"}})");
  });
  JsonRpcDriver d("rtsw0001", server.url("/rpc"), fast_options());
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "rtsw0001 interface.drain(eth5): answer has no result.drained boolean");
  EXPECT_EQ(r.kind(), ErrorKind::indeterminate);
}

TEST(JsonRpcDriver, SendsJsonRpcRequestWithBearerToken) {
  std::mutex mu;
  HttpRequest seen;
  ServerThread server([&](const HttpRequest& req) {
    std::lock_guard lock(mu);
    seen = req;
    return HttpResponse::json(200, R"({"jsonrpc":"2.0","id":1,"result":{"drained":false}})");
  });
  JsonRpcOptions o = fast_options();
  o.bearer_token = "tok";
  JsonRpcDriver d("rtsw0001", server.url("/rpc"), o);
  auto r = d.undrain("eth7");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->drained);
  EXPECT_FALSE(r->oper_up);  // no oper_status in the answer
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.method, "POST");
  ASSERT_NE(seen.header("authorization"), nullptr);
  EXPECT_EQ(*seen.header("authorization"), "Bearer tok");
  ASSERT_NE(seen.header("content-type"), nullptr);
  EXPECT_EQ(*seen.header("content-type"), "application/json");
  const auto body = nlohmann::json::parse(seen.body);
  EXPECT_EQ(body["jsonrpc"], "2.0");
  EXPECT_EQ(body["method"], "interface.undrain");
  EXPECT_EQ(body["params"]["interface"], "eth7");
  EXPECT_TRUE(body["id"].is_number_integer());
}

// fabsim's surface over HTTPS with a bearer token, as `fabsim --tls-cert --tls-key
// --rpc-token` serves it, with a throwaway CA made for the test.
class JsonRpcOverTls : public JsonRpcAgainstSim {
 protected:
  void SetUp() override {
    curl_global_setup();
    pki_ = testing::make_test_pki(dir_.path());
    other_ = testing::make_test_pki(dir_.path(), "other-");
    HttpServerOptions http;
    http.tls_cert_file = pki_.server_cert;
    http.tls_key_file = pki_.server_key;
    start(sim::ServerOptions{"s3cret"}, http);
  }
  JsonRpcOptions options(const std::string& ca_file, const std::string& token = "s3cret") const {
    JsonRpcOptions o = fast_options();
    o.ca_file = ca_file;
    o.bearer_token = token;
    return o;
  }
  testing::TempDir dir_;
  testing::TlsFiles pki_, other_;
};

TEST_F(JsonRpcOverTls, DrainGetStateUndrainWithTheRightCaAndToken) {
  const std::string url = rpc_url("rtsw0001");
  ASSERT_EQ(url.rfind("https://127.0.0.1:", 0), 0u) << url;
  JsonRpcDriver d("rtsw0001", url, options(pki_.ca_cert));
  auto st = d.get_state("eth5");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_FALSE(st->drained);
  EXPECT_TRUE(st->oper_up);
  auto dr = d.drain("eth5");
  ASSERT_TRUE(dr.ok()) << dr.error();
  EXPECT_TRUE(dr->drained);
  EXPECT_TRUE(sim_drained("rtsw0001", "eth5"));
  st = d.get_state("eth5");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_TRUE(st->drained);
  auto un = d.undrain("eth5");
  ASSERT_TRUE(un.ok()) << un.error();
  EXPECT_FALSE(un->drained);
  EXPECT_FALSE(sim_drained("rtsw0001", "eth5"));
  EXPECT_EQ(requests(), 4);
}

TEST_F(JsonRpcOverTls, WrongCaFailsWithTheVerificationErrorAndIsNotRetried) {
  const std::string url = rpc_url("rtsw0001");
  JsonRpcDriver d("rtsw0001", url, options(other_.ca_cert));
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "rtsw0001 interface.drain(eth5): " + url +
                           ": SSL certificate problem: unable to get local issuer certificate");
  EXPECT_EQ(r.kind(), ErrorKind::unavailable) << "nothing got past the handshake";
  // The system's CAs do not know the private CA either.
  JsonRpcDriver system_cas("rtsw0001", url, options(""));
  auto s = system_cas.get_state("eth5");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "rtsw0001 interface.get_state(eth5): " + url +
                           ": SSL certificate problem: unable to get local issuer certificate");
  EXPECT_EQ(requests(), 0);  // nothing got past the handshake
  EXPECT_FALSE(sim_drained("rtsw0001", "eth5"));
}

TEST_F(JsonRpcOverTls, UnreadableCaFileIsAClearErrorNamingIt) {
  const std::string url = rpc_url("rtsw0001");
  const std::string missing = dir_.file("no-such-ca.pem");
  JsonRpcDriver d("rtsw0001", url, options(missing));
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("rtsw0001 interface.drain(eth5): " + url + ": ", 0), 0u) << r.error();
  EXPECT_NE(r.error().find(missing), std::string::npos) << r.error();
  EXPECT_EQ(r.error().find("attempts"), std::string::npos) << r.error();  // not retried
  EXPECT_EQ(requests(), 0);
}

TEST_F(JsonRpcOverTls, MissingOrWrongTokenIsHttp401) {
  const std::string url = rpc_url("rtsw0001");
  JsonRpcDriver none("rtsw0001", url, options(pki_.ca_cert, ""));
  auto r = none.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "rtsw0001 interface.drain(eth5): HTTP 401: missing or wrong bearer token");
  EXPECT_EQ(requests(), 1);  // a 401 is not retried

  JsonRpcDriver wrong("rtsw0001", url, options(pki_.ca_cert, "guess"));
  auto w = wrong.undrain("eth5");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error(), "rtsw0001 interface.undrain(eth5): HTTP 401: missing or wrong bearer token");
  EXPECT_EQ(requests(), 2);
  EXPECT_FALSE(sim_drained("rtsw0001", "eth5"));
}

TEST_F(JsonRpcOverTls, PlainHttpToTheTlsPortFailsCleanlyAfterItsAttempts) {
  std::string url = rpc_url("rtsw0001");
  url.replace(0, 5, "http");  // https:// -> http://
  JsonRpcOptions o = options(pki_.ca_cert);
  o.attempts = 2;
  JsonRpcDriver d("rtsw0001", url, o);
  auto r = d.drain("eth5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("rtsw0001 interface.drain(eth5): " + url + ": ", 0), 0u) << r.error();
  EXPECT_NE(r.error().find("(after 2 attempts)"), std::string::npos) << r.error();
  EXPECT_EQ(requests(), 0);
  // The server is none the worse for it.
  JsonRpcDriver good("rtsw0001", rpc_url("rtsw0001"), options(pki_.ca_cert));
  auto ok = good.drain("eth5");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_TRUE(sim_drained("rtsw0001", "eth5"));
}

// Server errors over TLS are retried, each attempt a real request at the server, with the
// wait doubling between attempts.
TEST(JsonRpcDriverTls, ServerErrorsAreRetriedWithExponentialBackoff) {
  curl_global_setup();
  testing::TempDir dir;
  const auto pki = testing::make_test_pki(dir.path());
  HttpServerOptions http;
  http.tls_cert_file = pki.server_cert;
  http.tls_key_file = pki.server_key;
  std::mutex mu;
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  ServerThread server(
      [&](const HttpRequest&) {
        std::lock_guard lock(mu);
        arrivals.push_back(std::chrono::steady_clock::now());
        if (arrivals.size() < 3) return HttpResponse::text(503, "busy");
        return HttpResponse::json(200, R"({"jsonrpc":"2.0","id":3,"result":{"interface":"eth5","drained":true}})");
      },
      http);
  auto seen = [&] {
    std::lock_guard lock(mu);
    return arrivals;
  };
  JsonRpcOptions o;
  o.attempts = 3;
  o.backoff_s = 0.1;
  o.ca_file = pki.ca_cert;
  JsonRpcDriver d("rtsw0001", server.url("/rpc"), o);
  auto r = d.drain("eth5");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->drained);
  const auto first = seen();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_GE(first[1] - first[0], std::chrono::milliseconds(100));
  EXPECT_GE(first[2] - first[1], std::chrono::milliseconds(200));

  // Fewer attempts than the server needs: every attempt reaches it, then the error.
  {
    std::lock_guard lock(mu);
    arrivals.clear();
  }
  o.attempts = 2;
  o.backoff_s = 0.01;
  JsonRpcDriver short_of_it("rtsw0001", server.url("/rpc"), o);
  auto f = short_of_it.drain("eth5");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), "rtsw0001 interface.drain(eth5): HTTP 503 (after 2 attempts)");
  EXPECT_EQ(seen().size(), 2u);
}

TEST(DryRunDriver, LogsAndRemembersState) {
  DryRunDriver d("rtsw0004");
  EXPECT_EQ(d.kind(), "dryrun");
  EXPECT_FALSE(d.get_state("eth5")->drained);
  auto r = d.drain("eth5");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->drained);
  EXPECT_TRUE(d.get_state("eth5")->drained);
  EXPECT_FALSE(d.get_state("eth6")->drained);
  EXPECT_FALSE(d.undrain("eth5")->drained);
  EXPECT_FALSE(d.get_state("eth5")->drained);
  EXPECT_EQ(d.log(), (std::vector<std::string>{"drain rtsw0004:eth5", "undrain rtsw0004:eth5"}));
}

TEST(DriverSet, BuildsOneDriverPerSwitchFromTheTopology) {
  fabric::ClosShape shape = *fabric::preset("demo");
  shape.driver_kind = "dryrun";
  const fabric::Topology dry = fabric::generate_clos(shape);
  DriverSet set(dry, JsonRpcOptions{});
  ASSERT_NE(set.for_device(*dry.find_device("rtsw0001")), nullptr);
  EXPECT_EQ(set.for_device(*dry.find_device("rtsw0001"))->kind(), "dryrun");
  EXPECT_EQ(set.for_device(*dry.find_device("host0001")), nullptr);
  EXPECT_EQ(set.for_device(static_cast<fabric::DeviceId>(dry.devices().size())), nullptr);

  const fabric::Topology rpc = fabric::generate_clos(*fabric::preset("demo"));
  DriverSet rpc_set(rpc, JsonRpcOptions{});
  ASSERT_NE(rpc_set.for_device(*rpc.find_device("atsw01")), nullptr);
  EXPECT_EQ(rpc_set.for_device(*rpc.find_device("atsw01"))->kind(), "jsonrpc");
  rpc_set.replace(*rpc.find_device("atsw01"), std::make_unique<DryRunDriver>("atsw01"));
  EXPECT_EQ(rpc_set.for_device(*rpc.find_device("atsw01"))->kind(), "dryrun");
}

}  // namespace
}  // namespace medic::remediation

// End to end with the real Alertmanager (Debian's prometheus-alertmanager, on loopback with a
// config this test writes): a flap on fabsim becomes an active alert with the incident's
// labels and a link to its page in Alertmanager's own API, and is resolved after the repair
// (Alertmanager's own webhook says "resolved"); then Alertmanager is stopped for at least
// 30 s while a second link flaps, and once it is back it learns of that incident: nothing
// the outbox owed is lost. A signed webhook receives every event once, in order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/asio.h"
#include "common/http_client.h"
#include "common/http_server.h"
#include "common/token.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kFirst = "rtsw0001:eth5--ctsw001:eth1";
constexpr const char* kSecond = "rtsw0005:eth7--ctsw007:eth1";
constexpr const char* kSecret = "e2e-webhook-secret";
constexpr const char* kExternal = "http://medic.example.test:9400";

std::string scenario() {
  return json{{"faults",
               {{{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", 8}, {"count", 5}, {"period_s", 1.0}, {"down_s", 0.3}},
                {{"kind", "flap"}, {"link", "rtsw0005:eth7"}, {"at_s", 75}, {"count", 5}, {"period_s", 1.0},
                 {"down_s", 0.3}}}}}
      .dump(1);
}

// A port on 127.0.0.1 free now (the kernel's choice), for a program that must be told one
// (Alertmanager binds what it is given; another process taking it meanwhile fails the start,
// which the readiness wait reports).
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Keeps what Alertmanager's webhook and medicd's signed webhook send.
class Hooks {
 public:
  Hooks() : server_(io_, "127.0.0.1", 0, HttpHandler([this](const HttpRequest& r) { return take(r); })) {
    server_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Hooks() {
    server_.stop();
    io_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(server_.port()) + path; }
  // "firing 7", "resolved 7": what Alertmanager notified, per alert.
  std::vector<std::string> from_alertmanager() {
    std::lock_guard lock(mu_);
    return am_;
  }
  std::vector<HttpRequest> from_medicd() {
    std::lock_guard lock(mu_);
    return medic_;
  }

 private:
  HttpResponse take(const HttpRequest& r) {
    std::lock_guard lock(mu_);
    if (r.path == "/am") {
      const auto j = json::parse(r.body, nullptr, false);
      if (j.is_object() && j.contains("alerts")) {
        for (const auto& a : j["alerts"]) {
          am_.push_back(a.value("status", "?") + " " + a["labels"].value("incident", "?"));
        }
      }
    } else if (r.path == "/medic") {
      medic_.push_back(r);
    }
    return HttpResponse::text(200, "ok");
  }
  asio::io_context io_;
  HttpServer server_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> am_;
  std::vector<HttpRequest> medic_;
};

class Alertmanager {
 public:
  Alertmanager(const testing::TempDir& dir, const std::string& hook) : dir_(dir), port_(free_port()) {
    testing::write_file(dir.file("alertmanager.yml"), "route:\n"
                                                      "  receiver: hook\n"
                                                      "  group_by: ['incident']\n"
                                                      "  group_wait: 1s\n"
                                                      "  group_interval: 1s\n"
                                                      "  repeat_interval: 1h\n"
                                                      "receivers:\n"
                                                      "  - name: hook\n"
                                                      "    webhook_configs:\n"
                                                      "      - url: " + hook + "\n"
                                                      "        send_resolved: true\n");
  }
  void start() {
    process_ = std::make_unique<testing::Process>(
        "/usr/bin/prometheus-alertmanager",
        std::vector<std::string>{"--config.file=" + dir_.file("alertmanager.yml"), "--storage.path=" + dir_.file("am-data"),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--cluster.listen-address=",
                                 "--log.level=warn"});
  }
  void stop() {
    process_->signal(SIGTERM);
    process_->wait(20s);
    process_.reset();
  }
  bool ready(HttpClient& http) {
    const auto r = http.get(url() + "/-/ready");
    return r.ok() && r->status == 200;
  }
  // The alerts Alertmanager holds as active (resolved ones are not listed).
  json active(HttpClient& http) {
    const auto r = http.get(url() + "/api/v2/alerts?active=true&silenced=false&inhibited=false");
    if (!r.ok() || r->status != 200) return json::array();
    return json::parse(r->body, nullptr, false);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string output() const { return process_ ? process_->output() : std::string("(stopped)"); }

 private:
  const testing::TempDir& dir_;
  uint16_t port_;
  std::unique_ptr<testing::Process> process_;
};

// The active alert of `incident`, or null.
json alert_of(const json& active, const std::string& incident) {
  for (const auto& a : active) {
    if (a["labels"].value("incident", "") == incident) return a;
  }
  return nullptr;
}

TEST(E2EAlertmanager, AFlapFiresAndResolvesInAlertmanagerAndAThirtySecondOutageLosesNothing) {
  curl_global_setup();
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;
  Hooks hooks;
  Alertmanager am(dir, hooks.url("/am"));
  am.start();
  ASSERT_TRUE(testing::eventually([&] { return am.ready(http); }, 30s)) << am.output();
  ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  // The repair is validated after 5 s of soak instead of 5 minutes.
  auto policy = json::parse(testing::read_file(std::string(MEDIC_SOURCE_DIR) + "/data/remediation.json"));
  policy["validation"]["soak_s"] = 5;
  testing::write_file(dir.file("policy.json"), policy.dump());
  // Flap damping that forgets within seconds, so the repaired link may be validated.
  auto detectors = json::parse(testing::read_file(std::string(MEDIC_SOURCE_DIR) + "/data/detectors.json"));
  detectors["flap"]["half_life_s"] = 3;
  testing::write_file(dir.file("detectors.json"), detectors.dump());
  testing::write_file(dir.file("secret"), kSecret);
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario()));
  testing::Process medicd(MEDIC_MEDICD_BIN,
                          {"--topology", fabsim.exported, "--db", tdb.url(), "--no-probe", "--http", "127.0.0.1:0",
                           "--policy", dir.file("policy.json"), "--detectors", dir.file("detectors.json"), "--alertmanager", am.url(), "--webhook",
                           hooks.url("/medic"), "--webhook-secret-file", dir.file("secret"), "--external-url", kExternal,
                           "--alert-repeat", "10", "--notify-retry-max", "4", "--run-for", "400"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();

  // The first flap: an active alert with the incident's labels and a link to its page.
  auto id_of = [&](const char* link) {
    return try_scalar(tdb, std::string("SELECT id FROM incidents WHERE class = 'link_flap' AND link = '") + link + "'");
  };
  std::string first;
  ASSERT_TRUE(testing::eventually(
      [&] {
        first = id_of(kFirst);
        return !first.empty() && !alert_of(am.active(http), first).is_null();
      },
      90s))
      << medicd.output() << "\n" << am.output();
  const json a = alert_of(am.active(http), first);
  EXPECT_EQ(a["labels"]["alertname"], "MedicLinkFlap");
  EXPECT_EQ(a["labels"]["class"], "link_flap");
  EXPECT_EQ(a["labels"]["link"], kFirst);
  EXPECT_EQ(a["labels"]["owner"], "network");
  EXPECT_EQ(a["labels"]["zone"], "zone1");
  EXPECT_EQ(a["labels"]["plane"], "plane1");
  EXPECT_EQ(a["labels"]["severity"], try_scalar(tdb, "SELECT severity FROM incidents WHERE id = " + first));
  EXPECT_EQ(a["annotations"]["runbook_url"], std::string(kExternal) + "/incidents/" + first);
  EXPECT_THAT(a["annotations"]["summary"].get<std::string>(), HasSubstr(std::string("link_flap on ") + kFirst));
  EXPECT_EQ(a["generatorURL"], std::string(kExternal) + "/incidents/" + first);
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto n = hooks.from_alertmanager();
        return std::find(n.begin(), n.end(), "firing " + first) != n.end();
      },
      30s))
      << am.output();

  // Drained, then repaired by a person: validated, put back, closed: resolved in Alertmanager.
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb, "SELECT state FROM incidents WHERE id = " + first) == "repair_requested"; }, 60s))
      << medicd.output();
  const auto [st, out] = testing::run_command(
      MEDIC_CLI_BIN, {"incidents", "repaired", first, "--by", "e2e", "--reason", "optic reseated", "--db", tdb.url()});
  ASSERT_EQ(st, 0) << out;
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto n = hooks.from_alertmanager();
        return std::find(n.begin(), n.end(), "resolved " + first) != n.end();
      },
      90s))
      << ::testing::PrintToString(hooks.from_alertmanager()) << "\n" << medicd.output() << "\n" << am.output();
  EXPECT_EQ(try_scalar(tdb, "SELECT state FROM incidents WHERE id = " + first), "closed");
  EXPECT_TRUE(alert_of(am.active(http), first).is_null());

  // Alertmanager stops; the second link flaps meanwhile. Down for at least 30 s, and until
  // the second incident's opening waits in the outbox.
  EXPECT_EQ(id_of(kSecond), "") << "the second flap came before the outage: the test proves less than it says";
  am.stop();
  const auto down_at = std::chrono::steady_clock::now();
  std::string second;
  const std::string failures = "medic_notify_failed_total{receiver=\"alertmanager " + am.url() + "\"}";
  ASSERT_TRUE(testing::eventually(
      [&] {
        second = id_of(kSecond);
        const auto failed = metric(http, api, failures);
        return !second.empty() && std::chrono::steady_clock::now() - down_at >= 30s &&
               try_scalar(tdb, "SELECT count(*) FROM notify_outbox WHERE receiver LIKE 'alertmanager %' AND "
                               "delivered_at IS NULL AND incident_id = " + second) != "0" &&
               failed && *failed > 0;  // medicd tried, failed, and waits to try again
      },
      120s))
      << medicd.output();
  am.start();
  ASSERT_TRUE(testing::eventually([&] { return am.ready(http); }, 30s)) << am.output();
  // Back: it learns of the second incident, and the outbox owes it nothing.
  ASSERT_TRUE(testing::eventually(
      [&] {
        const json s = alert_of(am.active(http), second);
        return !s.is_null() && s["labels"]["link"] == kSecond;
      },
      60s))
      << medicd.output() << "\n" << am.output();
  // The restarted Alertmanager forgot everything; medicd repeats what is open, never the closed.
  EXPECT_TRUE(alert_of(am.active(http), first).is_null()) << "a closed incident was sent as firing";
  ASSERT_TRUE(testing::eventually(
      [&] {
        return try_scalar(tdb, "SELECT count(*) FROM notify_outbox WHERE receiver LIKE 'alertmanager %' AND "
                               "delivered_at IS NULL") == "0";
      },
      60s))
      << medicd.output();
  EXPECT_EQ(try_scalar(tdb, "SELECT count(*) FROM notify_outbox WHERE failed_at IS NOT NULL"), "0");

  // The signed webhook got every event once, in order, each signature good. The second
  // incident may still be moving (each state change is a new outbox row, sent at the
  // notifier's next pass): compare once everything written has been delivered.
  std::vector<std::string> rows, got;
  EXPECT_TRUE(testing::eventually(
      [&] {
        if (try_scalar(tdb, "SELECT count(*) FROM notify_outbox WHERE receiver LIKE 'webhook %' AND "
                            "delivered_at IS NULL") != "0") {
          return false;
        }
        rows = tdb.column("SELECT id FROM notify_outbox WHERE receiver LIKE 'webhook %' ORDER BY id");
        got.clear();
        for (const auto& r : hooks.from_medicd()) got.push_back(r.headers.at("x-medic-event-id"));
        return got == rows;
      },
      60s));
  for (const auto& r : hooks.from_medicd()) {
    EXPECT_EQ(r.headers.at("x-medic-signature"), hmac_sha256_signature(kSecret, r.body));
  }
  EXPECT_EQ(got, rows);
  EXPECT_GE(rows.size(), 6u) << "opened, drained, repair requested, repaired ... closed, and the second's opening";
}

}  // namespace
}  // namespace medic

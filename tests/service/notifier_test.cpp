// The notifier on the real PostgreSQL against receivers on loopback: webhooks signed and in
// order, a failing receiver retried with nothing lost, a refused event skipped, Alertmanager's
// batches and repeats, nothing sent by a medicd that does not lead, a lost database survived.
#include "service/notifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/asio.h"
#include "common/http_server.h"
#include "common/token.h"
#include "db/incident_store.h"
#include "db/inventory_store.h"
#include "fabric/generator.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/testing.h"

namespace medic::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

// An HTTP receiver on 127.0.0.1 that keeps every request and answers as `answer` says.
class Receiver {
 public:
  Receiver() {
    server_ = std::make_unique<HttpServer>(io_, "127.0.0.1", 0, HttpHandler([this](const HttpRequest& r) {
                                             std::lock_guard lock(mu_);
                                             requests_.push_back(r);
                                             return HttpResponse::text(answer_ ? answer_(r) : 200, "ok");
                                           }));
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Receiver() {
    server_->stop();
    io_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  void answer(std::function<unsigned(const HttpRequest&)> f) {
    std::lock_guard lock(mu_);
    answer_ = std::move(f);
  }
  std::vector<HttpRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<HttpRequest> requests_;
  std::function<unsigned(const HttpRequest&)> answer_;
};

struct Fixture {
  testing::TestDatabase tdb;
  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  db::Connection conn{tdb.url()};
  db::IncidentStore incidents{conn};
  SystemClock clock;
  metrics::Registry registry;
  std::atomic<bool> leading{true};
  Fixture() {
    conn.migrate();
    EXPECT_TRUE(db::InventoryStore(conn).sync_inventory(topo).ok());
  }
  NotifierOptions options() {
    NotifierOptions o;
    o.db_url = tdb.url();
    o.webhook_secret = "s3cret-s3cret";
    o.external_url = "http://medic.test:9400";
    o.retry_max_s = 1;
    o.timeout_s = 2;
    return o;
  }
  std::unique_ptr<Notifier> notifier(const NotifierOptions& o) {
    return std::make_unique<Notifier>(registry, o, clock, [this] { return leading.load(); });
  }
  int64_t flap(const std::string& ref) {
    triage::IncidentUpdate u;
    u.cls = triage::IncidentClass::link_flap;
    u.link = *topo.find_link(ref);
    u.severity = detectors::Severity::critical;
    u.started_at = u.detected_at = clock.now();
    u.summary = "carrier changes";
    const auto id = incidents.open_incident(u, topo, u.detected_at);
    EXPECT_TRUE(id.ok()) << id.error();
    return id.ok() ? *id : 0;
  }
  void set(int64_t id, triage::IncidentState s) { EXPECT_TRUE(incidents.set_incident_state(id, s, clock.now()).ok()); }
  // A receiver's metric (-1 when it is not there).
  double metric(const std::string& name, const std::string& receiver) {
    return testing::metric_value(registry.render(), name + "{receiver=\"" + receiver + "\"}").value_or(-1);
  }
  double metric(const std::string& name) { return testing::metric_value(registry.render(), name).value_or(-1); }
};

// Passes until `done` or 30 s.
bool pass_until(Notifier& n, const std::function<bool()>& done) {
  return testing::eventually(
      [&] {
        n.pass();
        return done();
      },
      std::chrono::seconds(30));
}

// The (event id, event) of every webhook request whose signature checks out.
std::vector<std::string> signed_events(const std::vector<HttpRequest>& rs, const std::string& secret) {
  std::vector<std::string> out;
  for (const auto& r : rs) {
    if (r.method != "POST") continue;
    const auto sig = r.headers.find("x-medic-signature");
    if (sig == r.headers.end() || sig->second != hmac_sha256_signature(secret, r.body)) {
      out.push_back("BAD SIGNATURE");
      continue;
    }
    const auto j = nlohmann::json::parse(r.body);
    EXPECT_EQ(r.headers.at("x-medic-event-id"), std::to_string(j["event_id"].get<int64_t>()));
    out.push_back(std::to_string(j["incident"]["id"].get<int64_t>()) + " " + j["event"].get<std::string>() + " " +
                  j["incident"]["state"].get<std::string>());
  }
  return out;
}

TEST(Notifier, WebhooksAreSignedAndSentInOrderOnlyByTheLeader) {
  Fixture f;
  Receiver hook;
  auto o = f.options();
  o.webhook_urls = {hook.url() + "/hook"};
  auto n = f.notifier(o);
  // A medicd that does not lead writes no receiver.
  f.leading = false;
  n->pass();
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_receivers"), "0");
  f.leading = true;
  n->pass();  // receivers written: changes from now on are owed
  const int64_t a = f.flap("rtsw0001:eth5");
  f.set(a, triage::IncidentState::pending_approval);
  const int64_t b = f.flap("rtsw0002:eth5");
  f.set(a, triage::IncidentState::dismissed);
  // Owed, but this medicd no longer leads: it sends nothing.
  f.leading = false;
  n->pass();
  n->pass();
  EXPECT_TRUE(hook.requests().empty());
  f.leading = true;
  const std::string sa = std::to_string(a), sb = std::to_string(b);
  ASSERT_TRUE(pass_until(*n, [&] { return hook.requests().size() >= 4; }));
  EXPECT_THAT(signed_events(hook.requests(), o.webhook_secret),
              ElementsAre(sa + " opened triaged", sa + " changed pending_approval", sb + " opened triaged",
                          sa + " resolved dismissed"));
  EXPECT_EQ(hook.requests()[0].path, "/hook");
  EXPECT_EQ(hook.requests()[0].headers.at("content-type"), "application/json");
  const auto first = nlohmann::json::parse(hook.requests()[0].body);
  EXPECT_EQ(first["incident"]["url"], "http://medic.test:9400/incidents/" + sa);
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NULL"), "0");
  EXPECT_EQ(f.metric("medic_notify_delivered_total", notify_receivers(o)[0].name), 4);
  // Nothing is sent twice.
  n->pass();
  n->pass();
  EXPECT_EQ(hook.requests().size(), 4u);
}

TEST(Notifier, AFailingReceiverIsRetriedInOrderAndLosesNothing) {
  Fixture f;
  Receiver hook;
  std::atomic<int> refusals{3};
  hook.answer([&](const HttpRequest&) { return refusals-- > 0 ? 503u : 200u; });
  auto o = f.options();
  o.webhook_urls = {hook.url()};
  auto n = f.notifier(o);
  n->pass();
  std::vector<std::string> want;
  for (int i = 1; i <= 3; ++i) {
    const int64_t id = f.flap("rtsw0001:eth" + std::to_string(4 + i));
    want.push_back(std::to_string(id) + " opened triaged");
  }
  ASSERT_TRUE(pass_until(*n, [&] { return f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NULL") == "0"; }));
  auto got = signed_events(hook.requests(), o.webhook_secret);
  // The first event was tried three times before it went through; the others waited behind it.
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0], want[0]);
  EXPECT_EQ(got[1], want[0]);
  EXPECT_EQ(got[2], want[0]);
  EXPECT_THAT(std::vector<std::string>(got.begin() + 3, got.end()), ElementsAre(want[0], want[1], want[2]));
  EXPECT_EQ(f.metric("medic_notify_failed_total", notify_receivers(o)[0].name), 3);
  EXPECT_EQ(f.tdb.scalar("SELECT attempts || ' ' || last_error FROM notify_outbox ORDER BY id LIMIT 1"), "4 HTTP 503: ok");
}

TEST(Notifier, AnEventTheReceiverRefusesForGoodIsRecordedAndSkipped) {
  Fixture f;
  Receiver hook;
  hook.answer([](const HttpRequest& r) { return r.body.find("\"changed\"") != std::string::npos ? 422u : 202u; });
  auto o = f.options();
  o.webhook_urls = {hook.url()};
  auto n = f.notifier(o);
  n->pass();
  const int64_t a = f.flap("rtsw0001:eth5");
  f.set(a, triage::IncidentState::escalated);
  f.set(a, triage::IncidentState::closed);
  ASSERT_TRUE(pass_until(*n, [&] { return hook.requests().size() >= 3; }));
  n->pass();
  EXPECT_EQ(hook.requests().size(), 3u) << "the refused event is not sent again";
  EXPECT_EQ(f.tdb.scalar("SELECT event || ' ' || (failed_at IS NOT NULL) || ' ' || last_error FROM notify_outbox "
                         "WHERE delivered_at IS NULL"),
            "changed true HTTP 422: ok");
  EXPECT_EQ(f.metric("medic_notify_refused_total", notify_receivers(o)[0].name), 1);
}

TEST(Notifier, AlertmanagerGetsBatchesAndRepeatsOfWhatIsOpen) {
  Fixture f;
  Receiver am;
  auto o = f.options();
  o.alertmanager_urls = {am.url()};
  o.repeat_s = 3600;  // one repeat, at the first pass
  auto n = f.notifier(o);
  n->pass();  // receivers written; the first repeat: nothing open yet
  const int64_t a = f.flap("rtsw0001:eth5");
  const int64_t b = f.flap("rtsw0002:eth5");
  f.set(b, triage::IncidentState::closed);
  ASSERT_TRUE(pass_until(*n, [&] { return f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NULL") == "0"; }));
  // Nothing was open at the first pass: no repeat was sent, only the batch.
  const auto rs = am.requests();
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs.back().path, "/api/v2/alerts");
  // One POST with both alerts: a firing (until four repeats from now) and b resolved.
  const auto alerts = nlohmann::json::parse(rs.back().body);
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[0]["labels"]["incident"], std::to_string(a));
  EXPECT_EQ(alerts[1]["labels"]["incident"], std::to_string(b));
  const Time a_end = *parse_iso8601(alerts[0]["endsAt"].get<std::string>());
  const Time b_end = *parse_iso8601(alerts[1]["endsAt"].get<std::string>());
  EXPECT_GT(a_end, f.clock.now() + std::chrono::seconds(30));
  EXPECT_LE(b_end, f.clock.now());
  // A new leader repeats what is open at once: only a.
  auto again = std::make_unique<Notifier>(f.registry, o, f.clock, [] { return true; });
  const size_t before = am.requests().size();
  again->pass();
  ASSERT_EQ(am.requests().size(), before + 1);
  const auto repeat = nlohmann::json::parse(am.requests().back().body);
  ASSERT_EQ(repeat.size(), 1u);
  EXPECT_EQ(repeat[0]["labels"]["incident"], std::to_string(a));
  EXPECT_EQ(f.metric("medic_notify_repeats_total", notify_receivers(o)[0].name), 1);
}

TEST(Notifier, ALostDatabaseIsSurvivedAndNothingIsSent) {
  Fixture f;
  Receiver hook;
  auto o = f.options();
  o.webhook_urls = {hook.url()};
  o.db_url = "postgresql://nobody@127.0.0.1:1/none";
  o.db.connect_timeout_s = 2;
  auto n = f.notifier(o);
  n->pass();
  n->pass();
  EXPECT_GE(f.metric("medic_notify_db_errors_total"), 2);
  EXPECT_TRUE(hook.requests().empty());
}

TEST(Notifier, WhatAStoppedMedicdOwedIsDeliveredByTheNextInOrder) {
  Fixture f;
  Receiver hook;
  std::atomic<bool> down{true};
  hook.answer([&](const HttpRequest&) { return down ? 503u : 200u; });
  auto o = f.options();
  o.webhook_urls = {hook.url()};
  auto first = f.notifier(o);
  first->pass();
  const int64_t a = f.flap("rtsw0001:eth5");
  f.set(a, triage::IncidentState::pending_approval);
  ASSERT_TRUE(pass_until(*first, [&] { return !hook.requests().empty(); }));
  first.reset();  // medicd stops (or dies) owing both events
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NULL"), "2");
  down = false;
  auto next = f.notifier(o);
  ASSERT_TRUE(pass_until(*next, [&] { return f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NULL") == "0"; }));
  std::vector<std::string> delivered;
  for (const auto& r : hook.requests()) {
    if (r.body.find("\"event_id\"") != std::string::npos) delivered.push_back(r.headers.at("x-medic-event-id"));
  }
  const auto ids = f.tdb.column("SELECT id FROM notify_outbox ORDER BY id");
  // Every attempt went to the first event until it was taken; then the second, once.
  ASSERT_GE(delivered.size(), 3u);
  EXPECT_EQ(delivered.back(), ids[1]);
  EXPECT_EQ(std::count(delivered.begin(), delivered.end(), ids[1]), 1);
}

TEST(Notifier, ADeliveryItCouldNotRecordIsRecordedBeforeAnythingIsSentAgain) {
  Fixture f;
  Receiver hook;
  // The notifier's database connection goes through a proxy the receiver hangs the moment
  // it takes the first event: the delivery cannot be recorded.
  const auto [host, port] = testing::TcpProxy::url_host_port(f.tdb.url());
  testing::TcpProxy proxy(host, port);
  std::atomic<int> taken{0};
  hook.answer([&](const HttpRequest&) {
    if (taken++ == 0) proxy.pause();
    return 200u;
  });
  auto o = f.options();
  o.webhook_urls = {hook.url()};
  o.db_url = testing::TcpProxy::rewrite_url(f.tdb.url(), proxy.port());
  o.db.call_timeout_s = 1;
  o.db.connect_timeout_s = 2;
  auto n = f.notifier(o);
  n->pass();
  f.flap("rtsw0001:eth5");
  f.flap("rtsw0002:eth5");
  ASSERT_TRUE(pass_until(*n, [&] { return taken > 0; }));
  for (int i = 0; i < 3; ++i) n->pass();  // the database does not answer: nothing more is sent
  EXPECT_EQ(taken.load(), 1);
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NULL"), "2");
  proxy.resume();
  proxy.cut();
  ASSERT_TRUE(pass_until(*n, [&] { return f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NULL") == "0"; }));
  EXPECT_EQ(taken.load(), 2) << "the first event, delivered while the database was away, is not sent twice";
  EXPECT_GE(f.metric("medic_notify_db_errors_total"), 1);
}

TEST(Notifier, AReceiversPasswordIsNeverInTheOutboxOrTheMetrics) {
  Fixture f;
  auto o = f.options();
  o.webhook_urls = {"http://medic:s3cret-pw@127.0.0.1:1/hook"};  // nothing listens on port 1
  auto n = f.notifier(o);
  n->pass();
  f.flap("rtsw0001:eth5");
  ASSERT_TRUE(pass_until(*n, [&] { return f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE last_error IS NOT NULL") != "0"; }));
  const std::string error = f.tdb.scalar("SELECT last_error FROM notify_outbox");
  EXPECT_THAT(error, Not(HasSubstr("s3cret-pw")));
  EXPECT_THAT(error, HasSubstr("127.0.0.1"));
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_receivers WHERE name LIKE '%s3cret-pw%'"), "0");
  EXPECT_THAT(f.registry.render(), Not(HasSubstr("s3cret-pw")));
}

TEST(Notifier, ReceiverNamesCarryNoCredentialsNorTokens) {
  NotifierOptions o;
  o.alertmanager_urls = {"https://am:s3cret@am.example.net:9093", "http://127.0.0.1:9093"};
  o.webhook_urls = {"https://hooks.example.net/services/T0/B0/XyzTok3n", "http://127.0.0.1:8080/hook?token=abc",
                    "https://hooks.example.net/services/T0/B0/XyzTok3n"};
  const auto r = notify_receivers(o);
  ASSERT_EQ(r.size(), 4u) << "a URL given twice is one receiver";
  EXPECT_EQ(r[0].kind, "alertmanager");
  EXPECT_THAT(r[0].name, MatchesRegex("alertmanager https://am\\.example\\.net:9093 #[0-9a-f]{8}"));
  EXPECT_EQ(r[1].name, "alertmanager http://127.0.0.1:9093") << "nothing to hide: the URL itself";
  EXPECT_THAT(r[2].name, MatchesRegex("webhook https://hooks\\.example\\.net #[0-9a-f]{8}"));
  EXPECT_THAT(r[3].name, MatchesRegex("webhook http://127\\.0\\.0\\.1:8080 #[0-9a-f]{8}"));
  EXPECT_NE(r[2].name, r[3].name);
  for (const auto& x : r) {
    EXPECT_THAT(x.name, Not(HasSubstr("s3cret")));
    EXPECT_THAT(x.name, Not(HasSubstr("Tok3n")));
    EXPECT_THAT(x.name, Not(HasSubstr("abc")));
  }
  // The same URL always has the same name (the outbox's rows stay its own across restarts).
  EXPECT_EQ(notify_receivers(o)[2].name, r[2].name);
}

TEST(Notifier, AnAlertmanagerBatchWithOneAlertItRefusesLosesOnlyThatOne) {
  Fixture f;
  Receiver am;
  // Refuses any POST holding the third incident's alert (as Alertmanager does a batch with
  // one invalid alert).
  std::atomic<int64_t> bad{0};
  am.answer([&](const HttpRequest& r) {
    const auto alerts = nlohmann::json::parse(r.body);
    for (const auto& a : alerts) {
      if (a["labels"]["incident"] == std::to_string(bad.load())) return 400u;
    }
    return 200u;
  });
  auto o = f.options();
  o.alertmanager_urls = {am.url()};
  o.repeat_s = 3600;
  auto n = f.notifier(o);
  n->pass();
  std::vector<int64_t> ids;
  for (int i = 1; i <= 6; ++i) ids.push_back(f.flap("rtsw000" + std::to_string(i) + ":eth5"));
  bad = ids[2];
  ASSERT_TRUE(pass_until(*n, [&] {
    return f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NULL AND failed_at IS NULL") == "0";
  }));
  EXPECT_EQ(f.tdb.scalar("SELECT string_agg(incident_id::text, ',') FROM notify_outbox WHERE failed_at IS NOT NULL"),
            std::to_string(ids[2]));
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE delivered_at IS NOT NULL"), "5");
  EXPECT_EQ(f.metric("medic_notify_refused_total", notify_receivers(o)[0].name), 1);
}

TEST(Notifier, WithNoReceiverConfiguredTheOldOnesAreDisabled) {
  Fixture f;
  auto o = f.options();
  o.webhook_urls = {"http://127.0.0.1:1/hook"};
  f.notifier(o)->pass();
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_receivers WHERE enabled"), "1");
  o.webhook_urls.clear();
  f.notifier(o)->pass();
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_receivers WHERE enabled"), "0");
  f.flap("rtsw0001:eth5");
  EXPECT_EQ(f.tdb.scalar("SELECT count(*) FROM notify_outbox"), "0") << "nothing is owed to nobody";
}

}  // namespace
}  // namespace medic::service

// medicd keeps serving when its database does not: a PostgreSQL of the test's own, frozen
// with SIGSTOP (hung: the kernel still accepts) or stopped, while fabsim's link flaps.
//  - hung: /healthz says 503 with the reason within seconds, /metrics always answers, the
//    repair queue answers 503 at once instead of holding a thread, polling goes on; when
//    the server is thawed medicd leads again and /healthz is 200;
//  - stopped for 60 s while a link flaps five times: medicd stays up (no exit 4), keeps
//    what it found, takes the lead again when the server is back, records the flaps and
//    drains the link, with its intent written before the switch was touched;
//  - restarted in the middle of a drain (the intent written, the switch still answering),
//    then its connections cut again and again by a proxy while medicd records the result:
//    the action is finished exactly once, the link drained once, nothing written twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/private_pg.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kFlapping = "rtsw0001:eth5--ctsw001:eth1";

std::string flap_at(double at_s) {
  return json{{"faults",
               {{{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", at_s}, {"count", 5}, {"period_s", 1.0},
                 {"down_s", 0.3}}}}}
      .dump();
}

// A query on the private server, "" while it cannot answer.
std::string query(const std::string& url, const std::string& sql) {
  try {
    pqxx::connection c(url);
    pqxx::nontransaction n(c);
    const auto r = n.exec(sql);
    return r.empty() || r[0][0].is_null() ? "" : r[0][0].as<std::string>();
  } catch (const std::exception&) {
    return "";
  }
}

class E2EDatabase : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_setup();
    ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  }
  std::pair<unsigned, std::string> get(const std::string& url) {
    HttpCallOptions o;
    o.timeout_s = 3;
    o.headers = {{"Authorization", "Bearer e2e-bootstrap"}};  // medicd's --api-token below
    auto r = http.get(url, o);
    if (!r.ok()) return {0, r.error()};
    return {r->status, r->body};
  }

  testing::TempDir dir;
  HttpClient http;
};

TEST_F(E2EDatabase, AHungDatabaseNeverStopsHealthMetricsOrPolling) {
  testing::PrivatePostgres pg;
  DemoFabsim fabsim;
  // A link that keeps flapping: something to keep while the database hangs, more than the
  // buffer of one holds.
  ASSERT_NO_FATAL_FAILURE(fabsim.start(
      dir, json{{"faults", {{{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", 1.0}, {"count", 200}, {"period_s", 1.0},
                              {"down_s", 0.3}}}}}
               .dump()));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", pg.url(), "--no-probe", "--http",
                                             "127.0.0.1:0", "--run-for", "240", "--db-timeout", "2", "--pending-limit",
                                             "1", "--api-token", "e2e-bootstrap"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return get(api + "/healthz").first == 200; }, 60s)) << medicd.output();
  EXPECT_THAT(get(api + "/healthz").second, HasSubstr("ok: leader (epoch 1)"));
  EXPECT_EQ(get(api + "/api/queue").first, 200u);

  pg.freeze();
  // Within a few seconds /healthz says why it is not healthy; it and /metrics always answer.
  ASSERT_TRUE(testing::eventually([&] { return get(api + "/healthz").first == 503; }, 20s)) << medicd.output();
  EXPECT_THAT(get(api + "/healthz").second, HasSubstr("the database"));
  const auto queue = get(api + "/api/queue");
  EXPECT_EQ(queue.first, 503u) << queue.second;
  EXPECT_THAT(queue.second, HasSubstr("database"));
  ASSERT_TRUE(testing::eventually([&] { return metric(http, api, "medic_db_up") == 0.0; }, 20s));
  EXPECT_EQ(metric(http, api, "medic_leader"), 0);
  // Polling goes on: cycles keep counting while the database is frozen.
  const auto c0 = metric(http, api, "medic_cycles_total");
  ASSERT_TRUE(c0);
  std::this_thread::sleep_for(6s);
  const auto c1 = metric(http, api, "medic_cycles_total");
  ASSERT_TRUE(c1);
  EXPECT_GE(*c1 - *c0, 3) << "the poll loop stalled on the database";
  // What it found meanwhile is kept in a bounded buffer (one update, one noted finding,
  // one link state here); the oldest go first and are counted.
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto d = metric(http, api, "medic_records_dropped_total");
        return d && *d >= 1;
      },
      20s))
      << medicd.output();
  const auto pending = metric(http, api, "medic_pending_records");
  ASSERT_TRUE(pending);
  EXPECT_LE(*pending, 3);
  // Ten requests to the queue at once: all answered (503), none left hanging.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(get(api + "/api/queue").first, 503u);
  EXPECT_EQ(get(api + "/metrics").first, 200u);

  pg.thaw();
  ASSERT_TRUE(testing::eventually([&] { return get(api + "/healthz").first == 200; }, 60s)) << medicd.output();
  EXPECT_THAT(get(api + "/healthz").second, HasSubstr("ok: leader (epoch 2)"));
  EXPECT_EQ(get(api + "/api/queue").first, 200u);
  // The poll loop reloads what the database holds at its next cycle, then leads.
  EXPECT_TRUE(testing::eventually([&] { return metric(http, api, "medic_leader") == 1.0; }, 10s));
  EXPECT_TRUE(medicd.running());
}

TEST_F(E2EDatabase, AStoppedDatabaseLosesNothingFoundMeanwhile) {
  testing::PrivatePostgres pg;
  // Commit times, to tell when the intent was committed (below).
  query(pg.url(), "ALTER SYSTEM SET track_commit_timestamp = on");
  pg.stop();
  pg.start();
  ASSERT_EQ(query(pg.url(), "SHOW track_commit_timestamp"), "on");
  DemoFabsim fabsim;
  // The link flaps 30 s in: while the database is down.
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, flap_at(30)));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", pg.url(), "--no-probe", "--http",
                                             "127.0.0.1:0", "--run-for", "280", "--db-timeout", "2"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return get(api + "/healthz").first == 200; }, 60s)) << medicd.output();
  std::this_thread::sleep_for(8s);  // polling: baselines made
  pg.stop();
  const auto stopped = std::chrono::steady_clock::now();
  const auto stopped_wall = std::chrono::system_clock::now();
  ASSERT_TRUE(testing::eventually([&] { return metric(http, api, "medic_db_up") == 0.0; }, 20s)) << medicd.output();
  // The flaps come and go while the database is down: found and kept.
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto p = metric(http, api, "medic_pending_records");
        return p && *p >= 1;
      },
      50s))
      << medicd.output();
  // Down for 60 s in all, the flaps well inside it. All along: /healthz says why it is not
  // healthy, the poll loop keeps cycling and detecting, and no switch is touched (no drain
  // can start while its intent cannot be written).
  const auto c0 = metric(http, api, "medic_cycles_total");
  ASSERT_TRUE(c0);
  const auto sampling_from = std::chrono::steady_clock::now();
  int samples = 0, switch_reads = 0;
  std::string health_seen, touched;
  while (std::chrono::steady_clock::now() < stopped + 59s) {
    const auto [status, body] = get(api + "/healthz");
    if (status != 503 && health_seen.empty()) health_seen = std::to_string(status) + " " + body;
    if (status == 503 && body.find("database") == std::string::npos && health_seen.empty()) health_seen = body;
    if (auto calls = http.get(fabsim.sim + "/admin/drain_calls"); calls.ok() && calls->status == 200) {
      ++switch_reads;
      if (!json::parse(calls->body)["calls"].empty() && touched.empty()) touched = calls->body;
    }
    ++samples;
    std::this_thread::sleep_for(1s);
  }
  EXPECT_GE(samples, 20);
  EXPECT_EQ(switch_reads, samples) << "fabsim's drain calls could not be read";
  EXPECT_EQ(health_seen, "") << "/healthz during the outage";
  EXPECT_EQ(touched, "") << "a switch was touched while no intent could be written";
  const auto c1 = metric(http, api, "medic_cycles_total");
  ASSERT_TRUE(c1);
  // One cycle a second (the demo's poll interval): at least half of them, however loaded.
  const double sampled_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sampling_from).count();
  EXPECT_GE(*c1 - *c0, sampled_s / 2) << "the poll loop stalled on the stopped database (" << sampled_s << " s)";
  EXPECT_GE(metric(http, api, "medic_findings_total").value_or(0), 3) << "detection stopped with the database";
  std::this_thread::sleep_until(stopped + 60s);
  EXPECT_TRUE(medicd.running()) << "medicd ended without its database:\n" << medicd.output();
  EXPECT_EQ(metric(http, api, "medic_drains_started_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_drains_succeeded_total"), 0);
  const auto restarted_wall = std::chrono::system_clock::now();
  pg.start();

  // Leads again, records what it kept, drains the link (its intent first).
  ASSERT_TRUE(testing::eventually(
      [&] {
        return query(pg.url(), "SELECT state FROM incidents WHERE link = '" + std::string(kFlapping) + "'") ==
               "repair_requested";
      },
      90s))
      << medicd.output();
  EXPECT_EQ(query(pg.url(), "SELECT count(*) FROM incidents"), "1");
  EXPECT_EQ(query(pg.url(), "SELECT class FROM incidents"), "link_flap");
  // What the flaps made while the database was down is all recorded, as it would have been
  // with the database up: the flaps noted one by one, then the one that reached the
  // suppress threshold (later flaps of a suppressed link make no finding); all of them seen
  // during the outage, none lost and none found again after it.
  const auto epoch_s = [](std::chrono::system_clock::time_point t) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  };
  const std::string during = "observed_at BETWEEN to_timestamp(" + epoch_s(stopped_wall) + ") AND to_timestamp(" +
                             epoch_s(restarted_wall) + ")";
  EXPECT_EQ(query(pg.url(), "SELECT count(*) FROM findings WHERE kind = 'link_flap' AND NOT (" + during + ")"), "0");
  EXPECT_GE(std::stoi("0" + query(pg.url(), "SELECT count(*) FROM findings WHERE kind = 'link_flap' AND " + during)), 3);
  EXPECT_EQ(query(pg.url(), "SELECT count(*) FROM findings WHERE kind = 'link_flap' AND severity = 'info' AND incident_id IS NULL AND " + during),
            query(pg.url(), "SELECT count(*) FROM findings WHERE kind = 'link_flap' AND severity = 'info'"));
  EXPECT_EQ(query(pg.url(), "SELECT count(*) > 0 FROM findings WHERE kind = 'link_flap' AND severity = 'critical' AND incident_id IS NOT NULL AND " + during),
            "t");
  EXPECT_EQ(query(pg.url(), "SELECT detected_at < to_timestamp(" + epoch_s(restarted_wall) + ") FROM incidents"), "t");
  EXPECT_EQ(query(pg.url(), "SELECT epoch FROM leader"), "2");
  EXPECT_EQ(query(pg.url(), "SELECT kind || ' ' || state FROM actions"), "drain succeeded");
  // The intent was committed before the switch was first touched: every drain call fabsim
  // carried out on the link's ends came after the commit of the intent's transaction (its
  // audit row's, never updated; one clock: this machine's), and none came before the
  // database was back.
  const double intent_at = std::stod(
      "0" + query(pg.url(), "SELECT extract(epoch from pg_xact_commit_timestamp(xmin)) FROM audit WHERE what = 'drain'"));
  ASSERT_GT(intent_at, 0) << query(pg.url(), "SELECT string_agg(what, ',') FROM audit");
  auto calls = http.get(fabsim.sim + "/admin/drain_calls");
  ASSERT_TRUE(calls.ok() && calls->status == 200);
  const json drain_calls = json::parse(calls->body)["calls"];
  ASSERT_GE(drain_calls.size(), 2u) << calls->body;  // both ends drained
  const double back_at =
      std::chrono::duration<double>(restarted_wall.time_since_epoch()).count();
  for (const auto& c : drain_calls) {
    EXPECT_TRUE(c["endpoint"] == "rtsw0001:eth5" || c["endpoint"] == "ctsw001:eth1") << c;
    EXPECT_GT(c["at_unix"].get<double>(), intent_at) << "the switch was touched before the intent was written: " << c;
    EXPECT_GT(c["at_unix"].get<double>(), back_at) << c;
  }
  EXPECT_EQ(metric(http, api, "medic_pending_records"), 0);
  EXPECT_EQ(metric(http, api, "medic_records_dropped_total"), 0);
  EXPECT_TRUE(leads(http, api, 2)) << healthz(http, api).second;
  EXPECT_THAT(medicd.output(), ::testing::Not(HasSubstr("stopping so a leader can act")));
}

TEST_F(E2EDatabase, AWaveFoundWhileTheDatabaseIsDownIsRecordedTogetherOnceItIsBack) {
  testing::PrivatePostgres pg;
  // 12 links, no device with more than two, go down 5 s in, while the database is down:
  // each becomes a link_down incident once down for 30 s, all kept, then recorded in one
  // transaction when the database is back.
  const json faults = links_down(dir, 12, 2, 5);
  ASSERT_EQ(faults.size(), 12u);
  const auto fabsim_started = std::chrono::steady_clock::now();
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, json{{"faults", faults}}.dump()));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", pg.url(), "--no-probe", "--http",
                                             "127.0.0.1:0", "--run-for", "200", "--db-timeout", "2"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return get(api + "/healthz").first == 200; }, 60s)) << medicd.output();
  pg.stop();
  ASSERT_TRUE(testing::eventually([&] { return metric(http, api, "medic_db_up") == 0.0; }, 20s)) << medicd.output();
  // Every link's incident found (down for 30 s, at 35 s of fabsim's scenario) and kept.
  std::this_thread::sleep_until(fabsim_started + 42s);
  EXPECT_EQ(metric(http, api, "medic_db_up"), 0.0) << "the database came back too soon for the test";
  EXPECT_EQ(metric(http, api, "medic_incidents_opened_total"), 0);
  pg.start();
  ASSERT_TRUE(testing::eventually([&] { return query(pg.url(), "SELECT count(*) FROM incidents") == "12"; }, 90s))
      << query(pg.url(), "SELECT count(*) FROM incidents") << "\n" << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return metric(http, api, "medic_pending_records") == 0; }, 30s));
  // One incident a link, each with the findings of both its ends, none opened twice: the
  // daemon's count is the database's.
  EXPECT_EQ(query(pg.url(), "SELECT count(DISTINCT link) FROM incidents WHERE class = 'link_down'"), "12");
  EXPECT_EQ(query(pg.url(), "SELECT count(*) FROM incidents i WHERE (SELECT count(DISTINCT device) FROM findings f "
                            "WHERE f.incident_id = i.id) = 2"),
            "12");
  EXPECT_EQ(metric(http, api, "medic_incidents_opened_total"), 12);
  EXPECT_EQ(metric(http, api, "medic_records_dropped_total"), 0);
  EXPECT_THAT(medicd.output(), HasSubstr("incident updates found while they could not be recorded"));
  EXPECT_TRUE(leads(http, api, 2)) << healthz(http, api).second;
}

TEST_F(E2EDatabase, ARestartMidDrainAndCutConnectionsFinishTheActionExactlyOnce) {
  testing::PrivatePostgres pg;
  const auto [pg_host, pg_port] = testing::TcpProxy::url_host_port(pg.url());
  testing::TcpProxy proxy(pg_host, pg_port);
  DemoFabsim fabsim;
  // rtsw0001's drain API takes 1.5 s per call (inside the driver's timeout): a drain spends
  // seconds between its intent and its result. Its uplink flaps 20 s in.
  ASSERT_NO_FATAL_FAILURE(fabsim.start(
      dir, json{{"faults",
                 {{{"kind", "rpc_delay"}, {"device", "rtsw0001"}, {"at_s", 0}, {"seconds", 1.5}},
                  {{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", 20.0}, {"count", 5}, {"period_s", 1.0},
                   {"down_s", 0.3}}}}}
               .dump()));
  testing::Process medicd(MEDIC_MEDICD_BIN,
                          {"--topology", fabsim.exported, "--db", testing::TcpProxy::rewrite_url(pg.url(), proxy.port()),
                           "--no-probe", "--http", "127.0.0.1:0", "--run-for", "200", "--db-timeout", "2"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return get(api + "/healthz").first == 200; }, 60s)) << medicd.output();
  const std::string link = std::string("link = '") + kFlapping + "'";

  // The intent is written and the switch is being called: the server restarts now.
  ASSERT_TRUE(testing::eventually(
      [&] { return query(pg.url(), "SELECT state FROM actions WHERE kind = 'drain' AND " + link) == "intent"; }, 60s))
      << medicd.output();
  const auto unix_now = [] { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); };
  pg.stop();
  std::this_thread::sleep_for(3s);
  pg.start();
  const double started_at = unix_now();
  // While medicd reconnects, leads again and records the result, every connection it has is
  // cut every 250 ms for 8 s: some of its transactions lose their connection half way.
  const auto cut_until = std::chrono::steady_clock::now() + 8s;
  int cuts = 0;
  while (std::chrono::steady_clock::now() < cut_until) {
    std::this_thread::sleep_for(250ms);
    proxy.cut();
    ++cuts;
  }
  EXPECT_GE(cuts, 20);

  // The drain is finished once: one action, succeeded; the link drained once, at both ends.
  ASSERT_TRUE(testing::eventually(
      [&] {
        return query(pg.url(), "SELECT string_agg(state, ',') FROM actions WHERE kind = 'drain' AND " + link) ==
               "succeeded";
      },
      90s))
      << medicd.output();
  EXPECT_EQ(query(pg.url(), "SELECT count(*) FROM actions"), "1");
  EXPECT_EQ(query(pg.url(), "SELECT count(*) FROM incidents"), "1");
  // The restart fell between the intent and the result: the intent was seen before the
  // server stopped (above), the result was written after it was back.
  EXPECT_GT(std::stod("0" + query(pg.url(), "SELECT extract(epoch from result_at) FROM actions")), started_at);
  // The incident's next state is written just after the action's end, in a transaction of
  // its own (and, if a cut connection loses it, by the next cycle from the link's drain state).
  EXPECT_TRUE(testing::eventually(
      [&] { return query(pg.url(), "SELECT state FROM incidents WHERE " + link) == "repair_requested"; }, 15s))
      << query(pg.url(), "SELECT state FROM incidents WHERE " + link);
  EXPECT_EQ(query(pg.url(), "SELECT drain_state || ' ' || (drain_incident_id = (SELECT id FROM incidents))::text FROM "
                            "links WHERE name = '" + std::string(kFlapping) + "'"),
            "drained true");
  // Verified once: the result the restart lost is found again at the switch (reconciliation)
  // or written as it came, never both, and the traffic check is made once.
  EXPECT_EQ(query(pg.url(), "SELECT count(*) FROM actions, jsonb_array_elements_text(steps) s "
                            "WHERE s LIKE 'verify traffic%' AND " + link),
            "1")
      << query(pg.url(), "SELECT steps::text FROM actions");
  auto r = http.get(fabsim.sim + "/admin/links");
  ASSERT_TRUE(r.ok() && r->status == 200);
  for (const auto& l : json::parse(r->body)) {
    const bool drained = l["a_drained"].get<bool>() || l["b_drained"].get<bool>();
    EXPECT_EQ(drained, l["name"] == kFlapping) << l.dump();
    if (l["name"] == kFlapping) {
      EXPECT_TRUE(l["a_drained"].get<bool>() && l["b_drained"].get<bool>());
    }
  }
  // A drain verified once; the audit trail holds its intent and its end once each.
  EXPECT_EQ(metric(http, api, "medic_drains_succeeded_total"), 1);
  EXPECT_EQ(query(pg.url(), "SELECT string_agg(what, ',' ORDER BY id) FROM audit WHERE what LIKE 'drain%'"),
            "drain,drain_succeeded");
  EXPECT_TRUE(medicd.running()) << medicd.output();
  EXPECT_THAT(medicd.output(), ::testing::Not(HasSubstr("stopping so a leader can act")));
}

}  // namespace
}  // namespace medic

// The SLO figures on /metrics, computed from the real PostgreSQL: per SLO compliance,
// objective, budget left and burn rates over five trailing windows; per open incident the
// seconds left of its stage (gone once it closes); promtool accepts the exposition. And the
// alert rules of docs/slo-alerts.yml pass `promtool check rules` and `promtool test rules`
// with series that must and must not fire.
#include "service/slo_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "db/incident_store.h"
#include "db/migrations.h"
#include "db/inventory_store.h"
#include "fabric/generator.h"
#include "tests/support/testing.h"

namespace medic::service {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SloAlertRules, PromtoolChecksAndTestsTheRuleFile) {
  const std::string src = MEDIC_SOURCE_DIR;
  const auto [check, out] = testing::run_command("/usr/bin/promtool", {"check", "rules", src + "/docs/slo-alerts.yml"});
  EXPECT_EQ(check, 0) << out;
  EXPECT_THAT(out, HasSubstr("SUCCESS: 6 rules found"));
  const auto [test, tout] =
      testing::run_command("/usr/bin/promtool", {"test", "rules", src + "/tests/service/slo-alerts.test.yml"});
  EXPECT_EQ(test, 0) << tout;
  EXPECT_THAT(tout, HasSubstr("SUCCESS"));
}

TEST(SloMetrics, ComplianceBudgetBurnAndSecondsLeftFromTheDatabase) {
  testing::TestDatabase tdb;
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  db::Connection conn(tdb.url());
  conn.migrate();
  ASSERT_TRUE(db::InventoryStore(conn).sync_inventory(topo).ok());
  db::IncidentStore incidents(conn);
  const Time now = SystemClock().now();
  auto open = [&](const std::string& ref, Duration ago, Duration detect) {
    triage::IncidentUpdate u;
    u.cls = triage::IncidentClass::link_flap;
    u.link = *topo.find_link(ref);
    u.severity = detectors::Severity::critical;
    u.started_at = now - ago;
    u.detected_at = now - ago + detect;
    u.summary = "flaps";
    const auto id = incidents.open_incident(u, topo, u.detected_at);
    EXPECT_TRUE(id.ok()) << id.error();
    return *id;
  };
  // Detected in 10 s (met) and in 5 min (missed), both within the last hour; the second
  // waits to be drained, 2 min of its 2-min mitigate target long gone.
  const int64_t a = open("rtsw0001:eth5", std::chrono::minutes(30), std::chrono::seconds(10));
  ASSERT_TRUE(incidents.set_incident_state(a, triage::IncidentState::closed, now - std::chrono::minutes(20)).ok());
  const int64_t b = open("rtsw0002:eth5", std::chrono::minutes(20), std::chrono::minutes(5));

  metrics::Registry registry;
  SloMetricsOptions o;
  o.db_url = tdb.url();
  SystemClock clock;
  SloMetrics m(registry, o, clock);
  ASSERT_TRUE(m.refresh().ok());
  const std::string text = registry.render();
  const std::string key = "{class=\"link_flap\",stage=\"detect\"}";
  EXPECT_EQ(testing::metric_value(text, "medic_slo_compliance" + key), 0.5) << text;
  EXPECT_EQ(testing::metric_value(text, "medic_slo_objective" + key), 0.99);
  EXPECT_NEAR(*testing::metric_value(text, "medic_slo_error_budget_remaining" + key), 1 - 1 / 0.02, 1e-6);
  EXPECT_NEAR(*testing::metric_value(text, "medic_slo_burn_rate{class=\"link_flap\",stage=\"detect\",window=\"1h\"}"), 50, 1e-6);
  EXPECT_EQ(testing::metric_value(text, "medic_slo_burn_rate{class=\"link_flap\",stage=\"detect\",window=\"5m\"}"), 0)
      << "nothing decided in the last 5 minutes";
  for (const char* w : {"30m", "6h", "3d"}) {
    EXPECT_TRUE(testing::metric_value(text, std::string("medic_slo_burn_rate{class=\"link_flap\",stage=\"detect\",window=\"") + w + "\"}"))
        << w;
  }
  // b: in its mitigate stage since its detection 15 min ago, 2 min allowed: about 13 min late.
  const std::string left = "medic_incident_slo_seconds_left{class=\"link_flap\",incident=\"" + std::to_string(b) + "\",stage=\"mitigate\"}";
  const auto secs = testing::metric_value(text, left);
  ASSERT_TRUE(secs) << text;
  EXPECT_NEAR(*secs, -13 * 60, 30);
  EXPECT_THAT(text, Not(HasSubstr("incident=\"" + std::to_string(a) + "\""))) << "a is closed";
  EXPECT_EQ(testing::metric_value(text, "medic_slo_refreshes_total"), 1);

  testing::TempDir dir;
  testing::write_file(dir.file("metrics.prom"), text);
  const auto [status, out] = testing::run_command("/bin/sh", {"-c", "promtool check metrics < " + dir.file("metrics.prom")});
  EXPECT_EQ(status, 0) << out;

  // Once b closes, its gauge goes.
  ASSERT_TRUE(incidents.set_incident_state(b, triage::IncidentState::closed, now).ok());
  ASSERT_TRUE(m.refresh().ok());
  EXPECT_FALSE(testing::metric_value(registry.render(), left));
  EXPECT_EQ(testing::metric_value(registry.render(), "medic_slo_refreshes_total"), 2);
}

TEST(SloMetrics, ADatabaseThatCannotBeReachedCountsAnErrorAndKeepsTheGauges) {
  const int port = testing::closed_port();
  metrics::Registry registry;
  SloMetricsOptions o;
  o.db_url = "postgresql://medic@127.0.0.1:" + std::to_string(port) + "/medic?connect_timeout=2";
  o.db.connect_timeout_s = 2;
  SystemClock clock;
  SloMetrics m(registry, o, clock);
  const auto st = m.refresh();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), ErrorKind::unavailable) << st.error();
  EXPECT_EQ(testing::metric_value(registry.render(), "medic_slo_refresh_errors_total"), 1);
  EXPECT_EQ(testing::metric_value(registry.render(), "medic_slo_refreshes_total"), 0);
}

}  // namespace
}  // namespace medic::service

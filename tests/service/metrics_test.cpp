// Every metric medicd declares, rendered as /metrics renders it, passes promtool's checks
// (Debian's prometheus package: `promtool check metrics` reads an exposition on stdin).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/metrics.h"
#include "remediation/workflow.h"
#include "service/daemon.h"
#include "service/notifier.h"
#include "service/slo_metrics.h"
#include "tests/support/testing.h"

namespace medic::service {
namespace {

using ::testing::HasSubstr;

TEST(Metrics, EveryMetricMedicdDeclaresPassesPromtool) {
  metrics::Registry registry;
  DaemonMetrics daemon(registry);
  remediation::WorkflowMetrics workflow(registry);
  // The threads' own metrics (built without touching a database).
  SystemClock clock;
  SloMetrics slo(registry, SloMetricsOptions{}, clock);
  NotifierOptions no;
  no.alertmanager_urls = {"http://127.0.0.1:9093"};
  no.webhook_urls = {"http://127.0.0.1:8080/hook"};
  Notifier notifier(registry, no, clock, [] { return false; });
  ++daemon.cycles;
  daemon.poll_cycle_seconds.observe(0.012);
  workflow.fault_to_drain_seconds.observe(4.5);
  daemon.role.set(1);
  const std::string text = registry.render();
  EXPECT_THAT(text, HasSubstr("# TYPE medic_cycles_total counter"));
  EXPECT_THAT(text, HasSubstr("medic_poll_cycle_seconds_bucket{le=\"0.025\"} 1"));
  EXPECT_THAT(text, HasSubstr("medic_fault_to_drain_seconds_count 1"));
  EXPECT_EQ(testing::metric_value(text, "medic_cycles_total"), 1);
  EXPECT_EQ(testing::metric_value(text, "medic_role"), 1);
  EXPECT_EQ(testing::metric_value(text, "medic_notify_pending{receiver=\"" + notify_receivers(no)[1].name + "\"}"), 0);
  // Declared once: asking the registry again for the same name gives the same metric.
  metrics::Counter again = registry.counter("medic_cycles_total", "Poll cycles run.");
  ++again;
  EXPECT_EQ(daemon.cycles.value(), 2u);

  testing::TempDir dir;
  testing::write_file(dir.file("metrics.prom"), text);
  const auto [status, out] = testing::run_command("/bin/sh", {"-c", "promtool check metrics < " + dir.file("metrics.prom")});
  EXPECT_EQ(status, 0) << out << "\n" << text;
  EXPECT_EQ(out, "") << "promtool has something to say:\n" << out;
}

}  // namespace
}  // namespace medic::service

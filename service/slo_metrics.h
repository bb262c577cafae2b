// The SLOs on /metrics, for Prometheus-based SLO tooling and docs/slo-alerts.yml: per SLO
// (class x stage) its compliance and error budget left over a trailing window (28 days by
// default) and its burn rates over 5m, 30m, 1h, 6h and 3d; per open incident the seconds
// left of its current stage's target. Computed on a thread of its own with its own
// database connection, every `every` seconds: a slow or hung database never delays /metrics
// or the poll loop; the gauges keep their last values and medic_slo_refresh_errors_total
// counts the failures.
#pragma once

#include <memory>
#include <string>

#include "common/metrics.h"
#include "common/periodic.h"
#include "common/result.h"
#include "common/time.h"
#include "db/connection.h"

namespace medic::service {

struct SloMetricsOptions {
  std::string db_url;
  db::DbOptions db;
  double every_s = 60;        // between refreshes
  double window_days = 28;    // compliance and budget over the trailing window
};

class SloMetrics {
 public:
  SloMetrics(metrics::Registry& registry, SloMetricsOptions options, const Clock& clock);
  ~SloMetrics();
  void start();  // the refresh thread
  void stop();
  Status refresh();  // once, now (the thread calls it; so can a test)

 private:
  SloMetricsOptions o_;
  const Clock& clock_;
  std::unique_ptr<db::Connection> conn_;
  metrics::GaugeFamily compliance_, objective_, budget_left_, burn_, seconds_left_;
  metrics::Counter refreshes_, errors_;
  metrics::Gauge refresh_seconds_;
  Periodic thread_;
};

}  // namespace medic::service

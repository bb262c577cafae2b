#include "service/slo_metrics.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <limits>

#include "db/incident_store.h"
#include "db/slo_store.h"
#include "service/queue_view.h"
#include "slo/render.h"
#include "slo/report.h"

namespace medic::service {

SloMetrics::SloMetrics(metrics::Registry& r, SloMetricsOptions options, const Clock& clock)
    : o_(std::move(options)),
      clock_(clock),
      compliance_(r.gauge_family("medic_slo_compliance",
                                 "Share of the SLO's stages decided in the trailing window that met their target (1 when none was decided).")),
      objective_(r.gauge_family("medic_slo_objective", "The share of stages the SLO's objective requires to meet the target.")),
      budget_left_(r.gauge_family("medic_slo_error_budget_remaining",
                                  "Share of the SLO's error budget over the trailing window still unspent (negative: overspent).")),
      burn_(r.gauge_family("medic_slo_burn_rate",
                           "Missed share of the stages decided in the trailing window, over the share the objective allows.")),
      seconds_left_(r.gauge_family("medic_incident_slo_seconds_left",
                                   "Seconds left of the target of the stage an open incident is in (negative: late).")),
      refreshes_(r.counter("medic_slo_refreshes_total", "SLO figures computed for /metrics.")),
      errors_(r.counter("medic_slo_refresh_errors_total", "SLO refreshes that failed (the gauges keep their last values).")),
      refresh_seconds_(r.gauge("medic_slo_refresh_seconds", "How long the last SLO refresh took.")) {}

SloMetrics::~SloMetrics() { stop(); }

void SloMetrics::start() {
  thread_.start(o_.every_s, [this] {
    if (auto s = refresh(); !s.ok()) spdlog::warn("SLO metrics: {}", s.error());
  }, "medic-slo");
}

void SloMetrics::stop() { thread_.stop(); }

Status SloMetrics::refresh() {
  const auto t0 = std::chrono::steady_clock::now();
  const Time now = clock_.now();
  slo::ReportQuery q;
  q.window = {now - from_seconds(o_.window_days * 86400), now};
  q.burn_windows = {{"5m", 300}, {"30m", 1800}, {"1h", 3600}, {"6h", 6 * 3600}, {"3d", 3 * 86400}};
  // Connected on first use (and again after a failure to connect): medicd starts, and
  // /metrics answers, whatever the database does.
  if (!conn_) {
    try {
      conn_ = std::make_unique<db::Connection>(o_.db_url, o_.db);
    } catch (const std::exception& e) {
      ++errors_;
      return Error::unavailable(std::string("SLO metrics: ") + e.what());
    }
  }
  db::SloStore slos(*conn_);
  const auto rep = slos.report(q, now);
  if (!rep.ok()) {
    ++errors_;
    return rep.failure();
  }
  db::IncidentStore incidents(*conn_);
  db::IncidentFilter open;
  open.open_only = true;
  open.limit = 100000;
  const auto rows = incidents.incidents(open);
  const auto targets = slos.slo_targets();
  if (!rows.ok() || !targets.ok()) {
    ++errors_;
    return rows.ok() ? targets.failure() : rows.failure();
  }
  std::vector<std::pair<metrics::Labels, double>> comp, obj, left, burn, secs;
  for (const auto& l : rep->slos) {
    const metrics::Labels key = {{"class", l.incident_class}, {"stage", std::string(slo::to_string(l.stage))}};
    comp.emplace_back(key, l.compliance().compliance);
    obj.emplace_back(key, l.objective);
    left.emplace_back(key, slo::budget_remaining(l).value_or(-std::numeric_limits<double>::infinity()));
    for (const auto& [window, v] : l.burn) {
      metrics::Labels k = key;
      k["window"] = window;
      burn.emplace_back(std::move(k), v);
    }
  }
  for (const auto& r : *rows) {
    const auto b = slo::current_budget(times_of(r), *targets, now);
    if (!b) continue;
    secs.push_back({{{"incident", std::to_string(r.id)},
                     {"class", r.incident_class},
                     {"stage", std::string(slo::to_string(b->stage))}},
                    seconds(b->left())});
  }
  compliance_.replace(comp);
  objective_.replace(obj);
  budget_left_.replace(left);
  burn_.replace(burn);
  seconds_left_.replace(secs);
  ++refreshes_;
  refresh_seconds_.set(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return Ok{};
}

}  // namespace medic::service

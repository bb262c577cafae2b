#include "slo/slo.h"

#include "slo/compliance.h"

#include <algorithm>
#include <cmath>

namespace medic::slo {

std::string_view to_string(Stage s) {
  switch (s) {
    case Stage::detect: return "detect";
    case Stage::mitigate: return "mitigate";
    case Stage::repair: return "repair";
    case Stage::restore: return "restore";
  }
  return "?";
}

std::optional<Stage> parse_stage(std::string_view s) {
  for (const Stage st : kStages) {
    if (to_string(st) == s) return st;
  }
  return std::nullopt;
}


Verdict judge(const IncidentTimes& inc, Stage stage, Duration target, Time now,
              std::optional<Duration>* elapsed) {
  const auto [begin, end] = stage_bounds(inc, stage);
  if (!begin) return Verdict::not_applicable;
  if (end) {
    const Duration d = std::max(Duration::zero(), *end - *begin);
    if (elapsed) *elapsed = d;
    return d <= target ? Verdict::met : Verdict::missed;
  }
  if (!inc.open) return Verdict::not_applicable;  // closed without reaching this stage
  return now - *begin > target ? Verdict::missed : Verdict::pending;
}

double StageBudget::share_left() const {
  if (target <= Duration::zero()) return 0;
  return std::min(1.0, seconds(left()) / seconds(target));
}

std::optional<StageBudget> current_budget(const IncidentTimes& inc, std::span<const Target> targets, Time now) {
  if (!inc.open) return std::nullopt;
  for (const Stage s : {Stage::mitigate, Stage::repair, Stage::restore}) {
    const auto [begin, end] = stage_bounds(inc, s);
    if (!begin) return std::nullopt;  // an earlier stage is still running (or none applies)
    if (end) continue;
    for (const Target& t : targets) {
      if (t.incident_class == inc.incident_class && t.stage == s) {
        return StageBudget{s, t.target, std::max(Duration::zero(), now - *begin)};
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::vector<StageReport> compute_report(std::span<const IncidentTimes> incidents,
                                        std::span<const Target> targets, Time now) {
  std::vector<StageReport> out;
  for (const Target& t : targets) {
    StageReport r;
    r.incident_class = t.incident_class;
    r.stage = t.stage;
    r.target = t.target;
    r.objective = t.objective;
    std::vector<Duration> finished;
    for (const IncidentTimes& inc : incidents) {
      if (inc.incident_class != t.incident_class) continue;
      std::optional<Duration> elapsed;
      switch (judge(inc, t.stage, t.target, now, &elapsed)) {
        case Verdict::met: ++r.met; break;
        case Verdict::missed:
          ++r.missed;
          r.breaches.push_back(inc.id);
          break;
        case Verdict::pending: ++r.pending; break;
        case Verdict::not_applicable: break;
      }
      if (elapsed) finished.push_back(*elapsed);
    }
    const int decided = r.met + r.missed;
    r.share_met = decided > 0 ? static_cast<double>(r.met) / decided : 1.0;
    r.objective_met = r.share_met + 1e-12 >= r.objective;
    if (!finished.empty()) {
      r.p50 = quantile(finished, 0.50);
      r.p95 = quantile(finished, 0.95);
      r.max = *std::max_element(finished.begin(), finished.end());
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace medic::slo

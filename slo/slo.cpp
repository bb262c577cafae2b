#include "slo/slo.h"

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

}  // namespace medic::slo

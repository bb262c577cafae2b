// SLO arithmetic over incident lifecycle timestamps. Each stage is timed from the end of
// the previous one, so stage budgets add up:
//   detect   = detected_at   - started_at
//   mitigate = mitigated_at  - detected_at
//   repair   = repaired_at   - mitigated_at
//   restore  = undrained_at  - repaired_at
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/time.h"

namespace medic::slo {

enum class Stage : uint8_t { detect, mitigate, repair, restore };
std::string_view to_string(Stage s);
std::optional<Stage> parse_stage(std::string_view s);
inline constexpr Stage kStages[] = {Stage::detect, Stage::mitigate, Stage::repair, Stage::restore};

struct IncidentTimes {
  int64_t id = 0;
  std::string incident_class;
  bool open = true;  // closed or dismissed incidents no longer accrue time
  std::optional<Time> started_at, detected_at, mitigated_at, repaired_at, undrained_at;
};

// The timestamps that open and close a stage, of anything with the five stage times
// (IncidentTimes here, StageTimes in slo/compliance.h).
template <class Times>
std::pair<std::optional<Time>, std::optional<Time>> stage_bounds(const Times& i, Stage s) {
  switch (s) {
    case Stage::detect: return {i.started_at, i.detected_at};
    case Stage::mitigate: return {i.detected_at, i.mitigated_at};
    case Stage::repair: return {i.mitigated_at, i.repaired_at};
    case Stage::restore: return {i.repaired_at, i.undrained_at};
  }
  return {};
}

struct Target {
  std::string incident_class;
  Stage stage = Stage::detect;
  Duration target{};
  double objective = 0.99;  // share of incidents that must meet the target
};

enum class Verdict : uint8_t { met, missed, pending, not_applicable };

// How one incident fares on one stage at time `now`. A stage not finished yet is pending
// until its target has passed, then missed (an incident cannot hide a breach by being slow).
Verdict judge(const IncidentTimes& inc, Stage stage, Duration target, Time now,
              std::optional<Duration>* elapsed = nullptr);

// The stage an open incident is in now and how much of its target is left: the first
// stage that started and has not finished (detect is never current: an incident exists
// once detected). nullopt when none is running or no target covers it.
struct StageBudget {
  Stage stage = Stage::mitigate;
  Duration target{}, elapsed{};
  Duration left() const { return target - elapsed; }  // negative: late by that much
  double share_left() const;                           // left / target, at most 1, negative when late
};
std::optional<StageBudget> current_budget(const IncidentTimes& inc, std::span<const Target> targets, Time now);

}  // namespace medic::slo

// SLO compliance over a window, as a reliability review judges it (issue 14, the pure core).
// All times are UTC; windows are half-open, [from, to).
//
// Targets are versioned: each version of a (class, stage[, scope]) target holds from its
// `from` until the next version; the first version also holds for all history before it.
//
// When a stage is decided (and so which window it belongs to):
//   - a stage without a start time is not applicable;
//   - it is late from the first moment its elapsed time exceeds the target in force at that
//     moment (its deadline); a stage that finishes at or before its deadline is met, decided
//     when it finished, against the target in force then; one that finishes after it, or
//     never, is missed, decided at the deadline, against the target in force then;
//   - a dismissed or closed incident decides nothing after it was dismissed or closed (a
//     stage it never reached is not missed for it afterwards);
//   - in a window [from, to), a stage that started before `to` and is not decided before
//     `to` is pending.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/time.h"
#include "slo/slo.h"

namespace medic::slo {

struct Window {
  Time from{}, to{};  // [from, to)
  bool contains(Time t) const { return from <= t && t < to; }
};

// One version of a target. `scope_kind` is "" (every incident of the class), "zone",
// "plane" or "role"; a scoped version applies to incidents of that group only and is
// preferred over an unscoped one.
struct TargetVersion {
  std::string incident_class;
  Stage stage = Stage::detect;
  std::string scope_kind, scope_value;
  Duration target{};
  double objective = 0.99;
  Time from{};
};

// An incident as compliance sees it: its stage times, when it was dismissed, and the
// groups it belongs to (for scoped targets and --by).
struct StageTimes {
  int64_t id = 0;
  std::string incident_class;
  std::optional<Time> started_at, detected_at, mitigated_at, repaired_at, undrained_at, dismissed_at, closed_at;
  // When it stopped deciding anything: the earlier of its dismissal and its closing.
  std::optional<Time> ended_at() const;
  std::map<std::string, std::string> groups;  // "zone" -> "zone1", "plane" -> ..., "role" -> ...
};

// The versions of one (class, stage) that apply to an incident: its scoped ones when it has
// any, else the unscoped ones; sorted by `from`. Empty when no target covers it.
std::vector<TargetVersion> versions_for(std::span<const TargetVersion> all, const StageTimes& inc, Stage stage);

// The version in force at `t` (the first one before all of them). `versions` sorted by from.
const TargetVersion* in_force(std::span<const TargetVersion> versions, Time t);

enum class Decision : uint8_t { met, missed, pending, not_applicable, not_yet };

struct StageOutcome {
  Decision decision = Decision::not_applicable;
  std::optional<Time> decided_at;
  Duration elapsed{};   // finished: its time; missed unfinished: until the window's end
  Duration target{};    // the target it was judged against (the one in force at decided_at)
  double objective = 0;
  Duration late{};      // missed: how late at the window's end (or at its finish)
};

// The first moment a stage started at `start` is late under `versions`; nullopt never.
std::optional<Time> deadline(Time start, std::span<const TargetVersion> versions);

// How a stage fares in window `w`: decided in it (met or missed), pending at its end, or
// neither (not_applicable: no start or no target; not_yet: decided outside the window or
// not started before its end).
StageOutcome judge_in_window(const StageTimes& inc, Stage stage, std::span<const TargetVersion> versions, Window w);

struct Compliance {
  int decided = 0, met = 0, missed = 0, pending = 0;
  double compliance = 1;          // met / decided; 1 when nothing was decided
  double allowed_misses = 0;      // (1 - objective) * decided
  double budget_remaining = 0;    // allowed_misses - missed (negative: overspent)
  double budget_consumed = 0;     // missed / allowed_misses (0 when none allowed and none missed)
};
Compliance compliance(int met, int missed, int pending, double objective);

// Burn rate: the share missed among stages decided in the trailing `span` ending at `end`,
// over the share the objective allows (1 - objective). 0 when nothing was decided.
double burn_rate(int met, int missed, double objective);

}  // namespace medic::slo

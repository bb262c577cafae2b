#include "slo/compliance.h"

#include <algorithm>
#include <cmath>

namespace medic::slo {

std::optional<Time> StageTimes::ended_at() const {
  if (dismissed_at && closed_at) return std::min(*dismissed_at, *closed_at);
  return dismissed_at ? dismissed_at : closed_at;
}

std::vector<TargetVersion> versions_for(std::span<const TargetVersion> all, const StageTimes& inc, Stage stage) {
  std::vector<TargetVersion> scoped, unscoped;
  for (const auto& v : all) {
    if (v.incident_class != inc.incident_class || v.stage != stage) continue;
    if (v.scope_kind.empty()) {
      unscoped.push_back(v);
      continue;
    }
    const auto g = inc.groups.find(v.scope_kind);
    if (g != inc.groups.end() && g->second == v.scope_value) scoped.push_back(v);
  }
  auto& out = scoped.empty() ? unscoped : scoped;
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.from < b.from; });
  return std::move(out);
}

const TargetVersion* in_force(std::span<const TargetVersion> versions, Time t) {
  if (versions.empty()) return nullptr;
  const TargetVersion* v = &versions.front();  // the first holds for all history before it too
  for (const auto& x : versions) {
    if (x.from <= t) v = &x;
  }
  return v;
}

std::optional<Time> deadline(Time start, std::span<const TargetVersion> versions) {
  // Each version holds over [its from, the next one's from) (the first from the beginning
  // of time). Within one, the stage is late from start + target on (elapsed exactly the
  // target is still on time); a version that starts when the stage is already over its
  // target makes it late at that version's start.
  for (size_t i = 0; i < versions.size(); ++i) {
    const std::optional<Time> begin = i == 0 ? std::nullopt : std::optional<Time>(versions[i].from);
    const std::optional<Time> end = i + 1 < versions.size() ? std::optional<Time>(versions[i + 1].from) : std::nullopt;
    if (end && *end <= start) continue;  // over before the stage started
    Time due = start + versions[i].target;
    if (begin && due < *begin) due = *begin;
    if (!end || due < *end) return due;
  }
  return std::nullopt;
}

StageOutcome judge_in_window(const StageTimes& inc, Stage stage, std::span<const TargetVersion> versions, Window w) {
  StageOutcome o;
  const auto bounds = stage_bounds(inc, stage);
  const std::optional<Time>& begin = bounds.first;  // names, not a binding: the lambda below captures it
  const std::optional<Time>& finish = bounds.second;
  if (!begin || versions.empty()) return o;  // not applicable
  const auto due = deadline(*begin, versions);
  // Decided when it finished (on time) or when its deadline passed, whichever came first.
  std::optional<Time> decided;
  bool met = false;
  if (finish && (!due || *finish <= *due)) {
    decided = *finish;
    met = true;
  } else if (due) {
    decided = *due;
  }
  // Started before the window's end and not decided by then.
  const auto pending = [&] {
    const TargetVersion* v = in_force(versions, w.to);
    o.decision = Decision::pending;
    o.target = v->target;
    o.objective = v->objective;
    o.elapsed = std::max(Duration::zero(), w.to - *begin);
    return o;
  };
  // A dismissed (or closed) incident decides nothing after that; until then it may be pending.
  if (const auto ended = inc.ended_at(); ended && (!decided || *decided > *ended)) {
    if (*begin < w.to && *ended >= w.to) return pending();
    return o;
  }
  if (decided && w.contains(*decided)) {
    const TargetVersion* v = in_force(versions, *decided);
    o.decision = met ? Decision::met : Decision::missed;
    o.decided_at = decided;
    o.target = v->target;
    o.objective = v->objective;
    const Time stop = finish ? *finish : w.to;
    o.elapsed = std::max(Duration::zero(), stop - *begin);
    if (!met) o.late = std::max(Duration::zero(), stop - *due);
    return o;
  }
  if (*begin < w.to && (!decided || *decided >= w.to)) return pending();
  o.decision = Decision::not_yet;
  return o;
}

Compliance compliance(int met, int missed, int pending, double objective) {
  Compliance c;
  c.met = met;
  c.missed = missed;
  c.pending = pending;
  c.decided = met + missed;
  c.compliance = c.decided == 0 ? 1.0 : static_cast<double>(met) / c.decided;
  c.allowed_misses = (1.0 - objective) * c.decided;
  c.budget_remaining = c.allowed_misses - missed;
  c.budget_consumed = c.allowed_misses > 0 ? missed / c.allowed_misses : (missed > 0 ? INFINITY : 0.0);
  return c;
}

double burn_rate(int met, int missed, double objective) {
  const int decided = met + missed;
  if (decided == 0) return 0;
  const double allowed = 1.0 - objective;
  const double share = static_cast<double>(missed) / decided;
  return allowed > 0 ? share / allowed : (missed > 0 ? INFINITY : 0.0);
}

}  // namespace medic::slo

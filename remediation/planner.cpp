#include "remediation/planner.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <unordered_map>

namespace medic::remediation {

namespace {

constexpr double kLossEpsilon = 1e-9;

// The capacity model plus the drains chosen so far in the search, with undo.
class Overlay {
 public:
  explicit Overlay(const CapacityModel& m) : m_(m), t_(m.topology()) {}

  // Whether `link` can be drained on top of what is chosen; the reason when not. The same
  // rules as CapacityModel::check_drain, with the chosen links counted as drained.
  bool fits(fabric::LinkId link, Refusal* refusal, std::string* reason) const {
    // Already drained or held by a drain in flight: nothing changes.
    if (m_.drained(link) || m_.reserved(link)) return true;
    const int64_t speed = m_.in_service(link) ? m_.speed_mbps(link) : 0;
    for (const fabric::GroupId g : t_.groups_of(link)) {
      const auto& grp = t_.group(g);
      const double after = m_.fraction(g, m_.available_mbps(g) - lost(g) - speed);
      if (below_floor(after, grp.floor)) {
        if (refusal) *refusal = Refusal::floor;
        if (reason) *reason = floor_reason(grp, after);
        return false;
      }
    }
    const auto& budget = m_.budget();
    if (budget.fabric > 0 && m_.budget_used() + added_ + 1 > budget.fabric) {
      if (refusal) *refusal = Refusal::budget_fabric;
      if (reason) *reason = budget_fabric_reason(m_.budget_used() + added_, budget.fabric);
      return false;
    }
    if (budget.per_switch > 0) {
      const auto& l = t_.link(link);
      for (const fabric::PortId p : {l.a, l.b}) {
        const fabric::DeviceId d = t_.port(p).device;
        if (!t_.device(d).is_switch()) continue;
        const int used = m_.budget_used(d) + added(d);
        if (used + 1 > budget.per_switch) {
          if (refusal) *refusal = Refusal::budget_switch;
          if (reason) *reason = budget_switch_reason(t_.device(d).name, used, budget.per_switch);
          return false;
        }
      }
    }
    return true;
  }

  void push(fabric::LinkId link) {
    const int64_t speed = m_.in_service(link) ? m_.speed_mbps(link) : 0;
    for (const fabric::GroupId g : t_.groups_of(link)) lost_[g] += speed;
    if (!m_.drained(link) && !m_.reserved(link)) {
      ++added_;
      const auto& l = t_.link(link);
      for (const fabric::PortId p : {l.a, l.b}) ++added_device_[t_.port(p).device];
    }
  }

  void pop(fabric::LinkId link) {
    const int64_t speed = m_.in_service(link) ? m_.speed_mbps(link) : 0;
    for (const fabric::GroupId g : t_.groups_of(link)) lost_[g] -= speed;
    if (!m_.drained(link) && !m_.reserved(link)) {
      --added_;
      const auto& l = t_.link(link);
      for (const fabric::PortId p : {l.a, l.b}) --added_device_[t_.port(p).device];
    }
  }

 private:
  int64_t lost(fabric::GroupId g) const {
    const auto it = lost_.find(g);
    return it == lost_.end() ? 0 : it->second;
  }
  int added(fabric::DeviceId d) const {
    const auto it = added_device_.find(d);
    return it == added_device_.end() ? 0 : it->second;
  }

  const CapacityModel& m_;
  const fabric::Topology& t_;
  std::unordered_map<fabric::GroupId, int64_t> lost_;
  std::unordered_map<fabric::DeviceId, int> added_device_;
  int added_ = 0;
};

struct Search {
  const std::vector<DrainCandidate>& c;
  std::vector<double> suffix;  // loss of c[i..]
  Overlay& overlay;
  size_t node_limit;
  std::vector<size_t> current, best;
  double best_loss = -1;
  size_t nodes = 0;
  bool cut = false;

  void run(size_t i, double loss) {
    if (++nodes > node_limit) {
      cut = true;
      return;
    }
    if (loss > best_loss + kLossEpsilon) {
      best_loss = loss;
      best = current;
    }
    if (i == c.size() || loss + suffix[i] <= best_loss + kLossEpsilon) return;
    if (overlay.fits(c[i].link, nullptr, nullptr)) {
      overlay.push(c[i].link);
      current.push_back(i);
      run(i + 1, loss + c[i].loss);
      current.pop_back();
      overlay.pop(c[i].link);
      if (cut) return;
    }
    run(i + 1, loss);
  }
};

}  // namespace

DrainPlan plan_drains(const CapacityModel& model, std::span<const DrainCandidate> candidates,
                      const PlannerOptions& options) {
  DrainPlan plan;
  // One candidate per link: the highest loss, on a tie the oldest incident. A loss that is
  // not a finite number or is below zero counts as none.
  std::vector<DrainCandidate> c;
  c.reserve(candidates.size());
  std::unordered_map<fabric::LinkId, size_t> by_link;
  auto better = [](const DrainCandidate& a, const DrainCandidate& b) {
    if (a.loss != b.loss) return a.loss > b.loss;
    if (a.incident_id != b.incident_id) return a.incident_id < b.incident_id;
    return a.link < b.link;
  };
  for (DrainCandidate x : candidates) {
    assert(x.link < model.topology().links().size());
    if (!std::isfinite(x.loss) || x.loss < 0) x.loss = 0;
    const auto [it, fresh] = by_link.try_emplace(x.link, c.size());
    if (fresh) {
      c.push_back(x);
    } else if (better(x, c[it->second])) {
      c[it->second] = x;
    }
  }
  // Highest loss first, so the search's first answer is the greedy one.
  std::sort(c.begin(), c.end(), better);
  Overlay overlay(model);
  std::vector<bool> chosen(c.size(), false);
  if (c.size() <= options.exact_limit) {
    Search s{c, std::vector<double>(c.size() + 1, 0.0), overlay, options.node_limit, {}, {}, -1, 0, false};
    for (size_t i = c.size(); i-- > 0;) s.suffix[i] = s.suffix[i + 1] + c[i].loss;
    s.run(0, 0.0);
    plan.nodes = s.nodes;
    plan.exact = !s.cut;
    for (const size_t i : s.best) chosen[i] = true;
  } else {
    plan.exact = false;
    for (size_t i = 0; i < c.size(); ++i) {
      ++plan.nodes;
      if (overlay.fits(c[i].link, nullptr, nullptr)) {
        overlay.push(c[i].link);
        chosen[i] = true;
      }
    }
    for (size_t i = c.size(); i-- > 0;) {
      if (chosen[i]) overlay.pop(c[i].link);
    }
  }
  for (size_t i = 0; i < c.size(); ++i) {
    if (chosen[i]) overlay.push(c[i].link);
  }
  // Whatever still fits goes too (candidates with no measurable loss are not worth a
  // search branch, but are still faults to take out).
  for (size_t i = 0; i < c.size(); ++i) {
    if (!chosen[i] && overlay.fits(c[i].link, nullptr, nullptr)) {
      overlay.push(c[i].link);
      chosen[i] = true;
    }
  }
  for (size_t i = 0; i < c.size(); ++i) {
    if (!chosen[i]) continue;
    plan.drain.push_back(c[i]);
    plan.loss_removed += c[i].loss;
  }
  // The reason each other candidate waits: what blocks it once the chosen ones are drained.
  for (size_t i = 0; i < c.size(); ++i) {
    if (chosen[i]) continue;
    WaitingDrain w{c[i], Refusal::none, ""};
    overlay.fits(c[i].link, &w.refusal, &w.reason);
    plan.wait.push_back(std::move(w));
  }
  return plan;
}

}  // namespace medic::remediation

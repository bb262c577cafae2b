#include "remediation/planner.h"

#include <algorithm>
#include <unordered_map>

#include "common/strings.h"

namespace medic::remediation {

namespace {

constexpr double kEpsilon = 1e-9;

// The capacity model plus the drains chosen so far in the search, with undo.
class Overlay {
 public:
  explicit Overlay(const CapacityModel& m) : m_(m), t_(m.topology()) {}

  // Whether `link` can be drained on top of what is chosen; the reason when not.
  bool fits(fabric::LinkId link, Refusal* refusal, std::string* reason) const {
    const bool counted = m_.in_service(link);
    const double speed = t_.link(link).speed_gbps;
    for (const fabric::GroupId g : t_.groups_of(link)) {
      const auto& grp = t_.group(g);
      const double after = (m_.available_gbps(g) - lost(g) - (counted ? speed : 0.0)) / grp.total_gbps;
      if (after < grp.floor - kEpsilon) {
        if (refusal) *refusal = Refusal::floor;
        if (reason) *reason = grp.name + " would fall to " + format_percent(after) + " < floor " + format_percent(grp.floor);
        return false;
      }
    }
    if (m_.drained(link) || m_.reserved(link)) return true;
    const auto& budget = m_.budget();
    if (budget.fabric > 0 && m_.budget_used() + added_ + 1 > budget.fabric) {
      if (refusal) *refusal = Refusal::budget_fabric;
      if (reason) {
        *reason = "drain budget spent: " + std::to_string(m_.budget_used() + added_) +
                  " links drained or draining fabric-wide (limit " + std::to_string(budget.fabric) + ")";
      }
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
          if (reason) {
            *reason = "drain budget spent on " + t_.device(d).name + ": " + std::to_string(used) +
                      " links drained or draining (limit " + std::to_string(budget.per_switch) + " per switch)";
          }
          return false;
        }
      }
    }
    return true;
  }

  void push(fabric::LinkId link) {
    const double speed = m_.in_service(link) ? t_.link(link).speed_gbps : 0.0;
    for (const fabric::GroupId g : t_.groups_of(link)) lost_[g] += speed;
    if (!m_.drained(link) && !m_.reserved(link)) {
      ++added_;
      const auto& l = t_.link(link);
      for (const fabric::PortId p : {l.a, l.b}) ++added_device_[t_.port(p).device];
    }
  }

  void pop(fabric::LinkId link) {
    const double speed = m_.in_service(link) ? t_.link(link).speed_gbps : 0.0;
    for (const fabric::GroupId g : t_.groups_of(link)) lost_[g] -= speed;
    if (!m_.drained(link) && !m_.reserved(link)) {
      --added_;
      const auto& l = t_.link(link);
      for (const fabric::PortId p : {l.a, l.b}) --added_device_[t_.port(p).device];
    }
  }

 private:
  double lost(fabric::GroupId g) const {
    const auto it = lost_.find(g);
    return it == lost_.end() ? 0.0 : it->second;
  }
  int added(fabric::DeviceId d) const {
    const auto it = added_device_.find(d);
    return it == added_device_.end() ? 0 : it->second;
  }

  const CapacityModel& m_;
  const fabric::Topology& t_;
  std::unordered_map<fabric::GroupId, double> lost_;
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
    if (loss > best_loss + kEpsilon) {
      best_loss = loss;
      best = current;
    }
    if (i == c.size() || loss + suffix[i] <= best_loss + kEpsilon) return;
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
  // One candidate per link (the highest loss), highest loss first, ties by incident id.
  std::vector<DrainCandidate> c;
  for (const auto& x : candidates) {
    auto it = std::find_if(c.begin(), c.end(), [&](const DrainCandidate& y) { return y.link == x.link; });
    if (it == c.end()) {
      c.push_back(x);
    } else if (x.loss > it->loss) {
      *it = x;
    }
  }
  std::sort(c.begin(), c.end(), [](const DrainCandidate& a, const DrainCandidate& b) {
    if (a.loss != b.loss) return a.loss > b.loss;
    return a.incident_id < b.incident_id;
  });
  Overlay overlay(model);
  std::vector<bool> chosen(c.size(), false);
  if (c.size() <= options.exact_limit) {
    Search s{c, std::vector<double>(c.size() + 1, 0.0), overlay, options.node_limit, {}, {}, -1, 0, false};
    for (size_t i = c.size(); i-- > 0;) s.suffix[i] = s.suffix[i + 1] + std::max(0.0, c[i].loss);
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

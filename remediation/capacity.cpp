#include "remediation/capacity.h"

#include <algorithm>
#include <unordered_map>

#include "common/strings.h"

namespace medic::remediation {

namespace {
constexpr double kEpsilon = 1e-9;

std::string floor_reason(const fabric::CapacityGroup& g, double after) {
  return g.name + " would fall to " + format_percent(after) + " < floor " + format_percent(g.floor);
}
}  // namespace

std::string_view to_string(Refusal r) {
  switch (r) {
    case Refusal::none: return "none";
    case Refusal::floor: return "floor";
    case Refusal::budget_fabric: return "budget_fabric";
    case Refusal::budget_switch: return "budget_switch";
  }
  return "?";
}

CapacityModel::CapacityModel(const fabric::Topology& topology, DrainBudget budget)
    : topology_(topology),
      budget_(budget),
      links_(topology.links().size()),
      available_(topology.groups().size()),
      used_device_(topology.devices().size(), 0) {
  for (fabric::GroupId g = 0; g < topology.groups().size(); ++g) {
    available_[g] = topology.group(g).total_gbps;
  }
}

void CapacityModel::update(fabric::LinkId link, State next) {
  State& cur = links_[link];
  const bool was = contributes(cur), will = contributes(next);
  const bool used_was = uses_budget(cur), used_will = uses_budget(next);
  cur = next;
  if (used_was != used_will) {
    const int d = used_will ? 1 : -1;
    used_fabric_ += d;
    const auto& l = topology_.link(link);
    used_device_[topology_.port(l.a).device] += d;
    used_device_[topology_.port(l.b).device] += d;
  }
  if (was == will) return;
  const double delta = (will ? 1.0 : -1.0) * topology_.link(link).speed_gbps;
  for (const fabric::GroupId g : topology_.groups_of(link)) available_[g] += delta;
}

void CapacityModel::set_oper_up(fabric::LinkId link, bool up) {
  State s = links_[link];
  s.oper_up = up;
  update(link, s);
}

void CapacityModel::set_drained(fabric::LinkId link, bool drained) {
  State s = links_[link];
  s.drained = drained;
  update(link, s);
}

void CapacityModel::set_reserved(fabric::LinkId link, bool reserved) {
  State s = links_[link];
  s.reserved = reserved;
  update(link, s);
}

double CapacityModel::fraction_in_service(fabric::GroupId g) const {
  const double total = topology_.group(g).total_gbps;
  return total > 0 ? available_[g] / total : 0.0;
}

DrainCheck CapacityModel::check_drain(fabric::LinkId link) const {
  DrainCheck out;
  const State& s = links_[link];
  const bool changes = !uses_budget(s);  // already drained or held: nothing would change
  const double speed = topology_.link(link).speed_gbps;
  const bool counted = contributes(s);
  for (const fabric::GroupId g : topology_.groups_of(link)) {
    const fabric::CapacityGroup& grp = topology_.group(g);
    GroupImpact im;
    im.group = g;
    im.floor = grp.floor;
    im.before = available_[g] / grp.total_gbps;
    im.after = (available_[g] - (counted ? speed : 0.0)) / grp.total_gbps;
    // Judged on the group without this link, whether or not it is up at this moment: a
    // flapping link that happens to be down still carries traffic between its flaps.
    im.breaks_floor = changes && im.after < grp.floor - kEpsilon;
    if (im.breaks_floor && out.allowed) {
      out.allowed = false;
      out.refusal = Refusal::floor;
      out.reason = floor_reason(grp, im.after);
    }
    out.impacts.push_back(im);
  }
  if (!out.allowed || !changes) return out;
  if (budget_.fabric > 0 && used_fabric_ + 1 > budget_.fabric) {
    out.allowed = false;
    out.refusal = Refusal::budget_fabric;
    out.reason = "drain budget spent: " + std::to_string(used_fabric_) + " links drained or draining fabric-wide (limit " +
                 std::to_string(budget_.fabric) + ")";
    return out;
  }
  if (budget_.per_switch > 0) {
    const auto& l = topology_.link(link);
    for (const fabric::PortId p : {l.a, l.b}) {
      const fabric::DeviceId d = topology_.port(p).device;
      if (!topology_.device(d).is_switch()) continue;
      if (used_device_[d] + 1 > budget_.per_switch) {
        out.allowed = false;
        out.refusal = Refusal::budget_switch;
        out.reason = "drain budget spent on " + topology_.device(d).name + ": " + std::to_string(used_device_[d]) +
                     " links drained or draining (limit " + std::to_string(budget_.per_switch) + " per switch)";
        return out;
      }
    }
  }
  return out;
}

WhatIf CapacityModel::what_if(std::span<const fabric::LinkId> links) const {
  WhatIf out;
  std::unordered_map<fabric::GroupId, double> lost;
  std::unordered_map<fabric::GroupId, bool> changed;
  std::vector<fabric::GroupId> order;
  std::unordered_map<fabric::DeviceId, int> added_device;
  std::vector<fabric::LinkId> seen;
  int added = 0;
  for (const fabric::LinkId l : links) {
    if (std::find(seen.begin(), seen.end(), l) != seen.end()) continue;
    seen.push_back(l);
    const State& s = links_[l];
    for (const fabric::GroupId g : topology_.groups_of(l)) {
      auto [it, fresh] = lost.try_emplace(g, 0.0);
      if (fresh) order.push_back(g);
      if (contributes(s)) it->second += topology_.link(l).speed_gbps;
      if (!uses_budget(s)) changed[g] = true;
    }
    if (!uses_budget(s)) {
      ++added;
      const auto& link = topology_.link(l);
      for (const fabric::PortId p : {link.a, link.b}) ++added_device[topology_.port(p).device];
    }
  }
  std::sort(order.begin(), order.end());
  for (const fabric::GroupId g : order) {
    const fabric::CapacityGroup& grp = topology_.group(g);
    GroupImpact im;
    im.group = g;
    im.floor = grp.floor;
    im.before = available_[g] / grp.total_gbps;
    im.after = (available_[g] - lost[g]) / grp.total_gbps;
    im.breaks_floor = changed[g] && im.after < grp.floor - kEpsilon;
    if (im.breaks_floor) out.problems.push_back(floor_reason(grp, im.after));
    out.impacts.push_back(im);
  }
  out.drained_before = used_fabric_;
  out.drained_after = used_fabric_ + added;
  if (budget_.fabric > 0 && added > 0 && out.drained_after > budget_.fabric) {
    out.problems.push_back("drain budget: " + std::to_string(out.drained_after) +
                           " links drained or draining fabric-wide > limit " + std::to_string(budget_.fabric));
  }
  if (budget_.per_switch > 0) {
    std::vector<std::pair<fabric::DeviceId, int>> per(added_device.begin(), added_device.end());
    std::sort(per.begin(), per.end());
    for (const auto& [d, n] : per) {
      if (!topology_.device(d).is_switch()) continue;
      if (used_device_[d] + n > budget_.per_switch) {
        out.problems.push_back("drain budget on " + topology_.device(d).name + ": " +
                               std::to_string(used_device_[d] + n) + " links drained or draining > limit " +
                               std::to_string(budget_.per_switch) + " per switch");
      }
    }
  }
  out.allowed = out.problems.empty();
  return out;
}

}  // namespace medic::remediation

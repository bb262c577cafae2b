#include "remediation/capacity.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <unordered_map>

#include "common/strings.h"

namespace medic::remediation {

namespace {
constexpr double kEpsilon = 1e-9;

// Topologies bound speeds (fabric::kMaxLinkSpeedGbps); clamped here too, so that no sum of
// a fabric's links in Mb/s can overflow whatever built the topology.
int64_t to_mbps(double gbps) {
  return std::llround(std::clamp(gbps, 0.0, fabric::kMaxLinkSpeedGbps) * 1000.0);
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

std::string floor_reason(const fabric::CapacityGroup& g, double after) {
  return g.name + " would fall to " + format_percent(after) + " < floor " + format_percent(g.floor);
}

namespace {
std::string count_links(int n) { return std::to_string(n) + (n == 1 ? " link" : " links"); }
}  // namespace

std::string budget_fabric_reason(int used, int limit) {
  return "drain budget spent: " + count_links(used) + " drained or draining fabric-wide (limit " + std::to_string(limit) + ")";
}

std::string budget_switch_reason(const std::string& device, int used, int limit) {
  return "drain budget spent on " + device + ": " + count_links(used) + " drained or draining (limit " +
         std::to_string(limit) + " per switch)";
}

bool below_floor(double fraction, double floor) { return fraction < floor - kEpsilon; }

CapacityModel::CapacityModel(const fabric::Topology& topology, DrainBudget budget)
    : topology_(topology),
      budget_(budget),
      links_(topology.links().size()),
      ends_(topology.links().size()),
      speed_(topology.links().size()),
      floor_(topology.groups().size()),
      total_(topology.groups().size(), 0),
      available_(topology.groups().size(), 0),
      links_in_service_(topology.groups().size(), 0),
      used_device_(topology.devices().size(), 0) {
  for (fabric::LinkId l = 0; l < topology.links().size(); ++l) {
    const auto& link = topology.link(l);
    speed_[l] = to_mbps(link.speed_gbps);
    Ends& e = ends_[l];
    e.a = topology.port(link.a).device;
    e.b = topology.port(link.b).device;
    e.a_switch = topology.device(e.a).is_switch();
    e.b_switch = topology.device(e.b).is_switch();
  }
  for (fabric::GroupId g = 0; g < topology.groups().size(); ++g) {
    floor_[g] = topology.group(g).floor;
    for (const fabric::LinkId l : topology.group(g).links) total_[g] += speed_[l];
    // A group of links too slow to count in Mb/s still needs a non-zero total.
    total_[g] = std::max<int64_t>(total_[g], 1);
    available_[g] = total_[g];
    links_in_service_[g] = static_cast<int>(topology.group(g).links.size());
  }
}

void CapacityModel::update(fabric::LinkId link, State next) {
  assert(link < links_.size());
  State& cur = links_[link];
  const bool was = contributes(cur), will = contributes(next);
  const bool used_was = uses_budget(cur), used_will = uses_budget(next);
  cur = next;
  if (used_was != used_will) {
    const int d = used_will ? 1 : -1;
    used_fabric_ += d;
    used_device_[ends_[link].a] += d;
    used_device_[ends_[link].b] += d;
  }
  if (was == will) return;
  const int64_t delta = will ? speed_[link] : -speed_[link];
  const int count = will ? 1 : -1;
  for (const fabric::GroupId g : topology_.groups_of(link)) {
    available_[g] += delta;
    links_in_service_[g] += count;
  }
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

void CapacityModel::clear_drains() {
  for (fabric::LinkId l = 0; l < links_.size(); ++l) {
    if (!links_[l].drained && !links_[l].reserved) continue;
    State s = links_[l];
    s.drained = false;
    s.reserved = false;
    update(l, s);
  }
}

double CapacityModel::fraction_in_service(fabric::GroupId g) const { return fraction(g, available_[g]); }

DrainCheck CapacityModel::check_drain(fabric::LinkId link) const {
  assert(link < links_.size());
  DrainCheck out;
  const State& s = links_[link];
  const bool changes = !uses_budget(s);  // already drained or held: nothing would change
  const int64_t lost = contributes(s) ? speed_[link] : 0;
  const auto groups = topology_.groups_of(link);
  out.impacts.reserve(groups.size());
  for (const fabric::GroupId g : groups) {
    GroupImpact im;
    im.group = g;
    im.floor = floor_[g];
    im.before = fraction(g, available_[g]);
    // Judged on the group without this link, whether or not it is up at this moment: a
    // flapping link that happens to be down still carries traffic between its flaps.
    im.after = fraction(g, available_[g] - lost);
    im.breaks_floor = changes && below_floor(im.after, im.floor);
    if (im.breaks_floor && out.allowed) {
      out.allowed = false;
      out.refusal = Refusal::floor;
      out.reason = floor_reason(topology_.group(g), im.after);
    }
    out.impacts.push_back(im);
  }
  if (!out.allowed || !changes) return out;
  if (budget_.fabric > 0 && used_fabric_ + 1 > budget_.fabric) {
    out.allowed = false;
    out.refusal = Refusal::budget_fabric;
    out.reason = budget_fabric_reason(used_fabric_, budget_.fabric);
    return out;
  }
  if (budget_.per_switch > 0) {
    const Ends& e = ends_[link];
    for (const auto& [d, is_switch] : {std::pair{e.a, e.a_switch}, std::pair{e.b, e.b_switch}}) {
      if (!is_switch || used_device_[d] + 1 <= budget_.per_switch) continue;
      out.allowed = false;
      out.refusal = Refusal::budget_switch;
      out.reason = budget_switch_reason(topology_.device(d).name, used_device_[d], budget_.per_switch);
      return out;
    }
  }
  return out;
}

WhatIf CapacityModel::what_if(std::span<const fabric::LinkId> links) const {
  WhatIf out;
  struct Touch {
    int64_t lost = 0;
    bool changed = false;
  };
  std::unordered_map<fabric::GroupId, Touch> groups;
  std::unordered_map<fabric::DeviceId, int> added_device;
  std::vector<fabric::LinkId> seen;
  int added = 0;
  for (const fabric::LinkId l : links) {
    assert(l < links_.size());
    if (std::find(seen.begin(), seen.end(), l) != seen.end()) continue;
    seen.push_back(l);
    const State& s = links_[l];
    const bool changes = !uses_budget(s);
    for (const fabric::GroupId g : topology_.groups_of(l)) {
      Touch& t = groups[g];
      if (contributes(s)) t.lost += speed_[l];
      t.changed = t.changed || changes;
    }
    if (changes) {
      ++added;
      const auto& link = topology_.link(l);
      for (const fabric::PortId p : {link.a, link.b}) ++added_device[topology_.port(p).device];
    }
  }
  std::vector<fabric::GroupId> order;
  order.reserve(groups.size());
  for (const auto& [g, t] : groups) order.push_back(g);
  std::sort(order.begin(), order.end());
  for (const fabric::GroupId g : order) {
    const fabric::CapacityGroup& grp = topology_.group(g);
    const Touch& t = groups[g];
    GroupImpact im;
    im.group = g;
    im.floor = grp.floor;
    im.before = fraction(g, available_[g]);
    im.after = fraction(g, available_[g] - t.lost);
    im.breaks_floor = t.changed && below_floor(im.after, grp.floor);
    if (im.breaks_floor) out.problems.push_back(floor_reason(grp, im.after));
    out.impacts.push_back(im);
  }
  out.drained_before = used_fabric_;
  out.drained_after = used_fabric_ + added;
  if (budget_.fabric > 0 && added > 0 && out.drained_after > budget_.fabric) {
    out.problems.push_back("drain budget: " + count_links(out.drained_after) + " drained or draining fabric-wide > limit " +
                           std::to_string(budget_.fabric));
  }
  std::vector<std::pair<fabric::DeviceId, int>> per(added_device.begin(), added_device.end());
  std::sort(per.begin(), per.end());
  for (const auto& [d, n] : per) {
    if (!topology_.device(d).is_switch()) continue;
    out.switches.push_back({d, used_device_[d], used_device_[d] + n});
    if (budget_.per_switch > 0 && used_device_[d] + n > budget_.per_switch) {
      out.problems.push_back("drain budget on " + topology_.device(d).name + ": " + count_links(used_device_[d] + n) +
                             " drained or draining > limit " + std::to_string(budget_.per_switch) + " per switch");
    }
  }
  out.allowed = out.problems.empty();
  return out;
}

}  // namespace medic::remediation

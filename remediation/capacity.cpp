#include "remediation/capacity.h"

#include "common/strings.h"

namespace medic::remediation {

namespace {
constexpr double kEpsilon = 1e-9;
}

CapacityModel::CapacityModel(const fabric::Topology& topology)
    : topology_(topology), links_(topology.links().size()), available_(topology.groups().size()) {
  for (fabric::GroupId g = 0; g < topology.groups().size(); ++g) {
    available_[g] = topology.group(g).total_gbps;
  }
}

void CapacityModel::update(fabric::LinkId link, State next) {
  State& cur = links_[link];
  const bool was = contributes(cur), will = contributes(next);
  cur = next;
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
  const double speed = topology_.link(link).speed_gbps;
  const bool counted = contributes(links_[link]);
  for (const fabric::GroupId g : topology_.groups_of(link)) {
    const fabric::CapacityGroup& grp = topology_.group(g);
    GroupImpact im;
    im.group = g;
    im.floor = grp.floor;
    im.before = available_[g] / grp.total_gbps;
    im.after = (available_[g] - (counted ? speed : 0.0)) / grp.total_gbps;
    im.breaks_floor = im.after < grp.floor - kEpsilon;
    if (im.breaks_floor && out.allowed) {
      out.allowed = false;
      out.reason = grp.name + " would fall to " + format_percent(im.after) + " < floor " +
                   format_percent(grp.floor);
    }
    out.impacts.push_back(im);
  }
  return out;
}

}  // namespace medic::remediation

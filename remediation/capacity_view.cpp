#include "remediation/capacity_view.h"

#include <map>
#include <vector>

#include "common/strings.h"

namespace medic::remediation {

using nlohmann::json;

LinkStateCounts apply_link_states(CapacityModel& model, std::span<const RecordedLinkState> rows) {
  LinkStateCounts c;
  const fabric::Topology& t = model.topology();
  for (const auto& r : rows) {
    const auto link = t.find_link(r.link);
    if (!link) {
      ++c.not_in_topology;
      continue;
    }
    // An undrain in flight keeps the link out of service until the switch has done it.
    if (r.drain_state == "drained" || r.drain_state == "undraining") {
      model.set_drained(*link, true);
      ++c.drained;
    } else if (r.drain_state == "draining") {
      model.set_reserved(*link, true);
      ++c.draining;
    }
    if (r.oper_state == "down") {
      model.set_oper_up(*link, false);
      ++c.down;
    } else if (r.oper_state != "up") {
      ++c.oper_unknown;
    }
  }
  return c;
}

std::string link_state_text(const CapacityModel& m, fabric::LinkId l) {
  std::vector<std::string> parts;
  if (!m.oper_up(l)) parts.push_back("down");
  if (m.drained(l)) parts.push_back("drained");
  if (m.reserved(l)) parts.push_back("draining");
  return parts.empty() ? "in service" : join(parts, ", ");
}

json what_if_json(const CapacityModel& m, std::span<const fabric::LinkId> links) {
  const fabric::Topology& t = m.topology();
  const WhatIf w = m.what_if(links);
  // Links of each group that are in service now and would not be.
  std::map<fabric::GroupId, int> leaving;
  for (const fabric::LinkId l : links) {
    if (!m.in_service(l)) continue;
    for (const fabric::GroupId g : t.groups_of(l)) ++leaving[g];
  }
  json lj = json::array();
  for (const fabric::LinkId l : links) {
    lj.push_back({{"link", t.link(l).name}, {"state", link_state_text(m, l)}, {"changes", !(m.drained(l) || m.reserved(l))}});
  }
  // Every group that would change (or break without changing: a group already below its
  // floor losing a link that is down now).
  json gj = json::array();
  for (const auto& im : w.impacts) {
    if (im.after == im.before && !im.breaks_floor) continue;
    const auto& grp = t.group(im.group);
    const int in = m.links_in_service(im.group);
    gj.push_back({{"name", grp.name},
                  {"kind", grp.kind},
                  {"links", grp.links.size()},
                  {"links_before", in},
                  {"links_after", in - leaving[im.group]},
                  {"before", im.before},
                  {"after", im.after},
                  {"floor", im.floor},
                  {"breaks_floor", im.breaks_floor}});
  }
  const auto& budget = m.budget();
  json sw = json::array();
  for (const auto& s : w.switches) {
    sw.push_back({{"name", t.device(s.device).name},
                  {"before", s.before},
                  {"after", s.after},
                  {"over", budget.per_switch > 0 && s.after > budget.per_switch}});
  }
  return {{"allowed", w.allowed},
          {"links", std::move(lj)},
          {"groups", std::move(gj)},
          {"budget",
           {{"fabric", {{"before", w.drained_before}, {"after", w.drained_after}, {"limit", budget.fabric}}},
            {"per_switch_limit", budget.per_switch},
            {"switches", std::move(sw)}}},
          {"problems", w.problems}};
}

}  // namespace medic::remediation

// The capacity model: for every capacity group, how much of its capacity is in service,
// kept up to date incrementally so a drain check costs work proportional to the groups of
// the link, not to the fabric. A link is in service when it is up, not drained and not
// held by an in-flight drain. A budget caps how many links may be drained (or held by a
// drain in flight) at once, fabric-wide and per switch.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "fabric/topology.h"

namespace medic::remediation {

// 0 means no limit.
struct DrainBudget {
  int fabric = 0;
  int per_switch = 0;
};

struct GroupImpact {
  fabric::GroupId group = fabric::kNone;
  double before = 0;  // fraction of the group's capacity in service now
  double after = 0;   // ... if the link (or links) were drained
  double floor = 0;
  bool breaks_floor = false;
};

enum class Refusal : uint8_t { none, floor, budget_fabric, budget_switch };
std::string_view to_string(Refusal r);

struct DrainCheck {
  bool allowed = true;
  Refusal refusal = Refusal::none;
  std::vector<GroupImpact> impacts;
  std::string reason;  // for a refusal: "rtsw0003 uplinks would fall to 50.0% < floor 75.0%"
};

// What draining several links at once would do: every group touched, before and after,
// and every rule that would break (all of them, not only the first).
struct WhatIf {
  bool allowed = true;
  std::vector<GroupImpact> impacts;
  std::vector<std::string> problems;
  int drained_before = 0, drained_after = 0;  // fabric-wide count against the budget
};

class CapacityModel {
 public:
  explicit CapacityModel(const fabric::Topology& topology, DrainBudget budget = {});

  void set_oper_up(fabric::LinkId link, bool up);
  void set_drained(fabric::LinkId link, bool drained);
  // An in-flight drain holds the link's capacity (and a place in the budget) so two
  // concurrent checks cannot both pass.
  void set_reserved(fabric::LinkId link, bool reserved);

  bool oper_up(fabric::LinkId link) const { return links_[link].oper_up; }
  bool drained(fabric::LinkId link) const { return links_[link].drained; }
  bool reserved(fabric::LinkId link) const { return links_[link].reserved; }
  bool in_service(fabric::LinkId link) const { return contributes(links_[link]); }

  // Would draining `link` keep every group it belongs to at or above its floor, and the
  // drained links within the budget? The link itself is counted as lost whether or not it
  // happens to be up right now (a flapping link carries traffic between flaps). A link
  // already drained or held is allowed (nothing changes).
  DrainCheck check_drain(fabric::LinkId link) const;
  // The same for a set of links drained together.
  WhatIf what_if(std::span<const fabric::LinkId> links) const;

  double available_gbps(fabric::GroupId g) const { return available_[g]; }
  double fraction_in_service(fabric::GroupId g) const;
  // Links drained or held by a drain in flight: fabric-wide and touching one device.
  int budget_used() const { return used_fabric_; }
  int budget_used(fabric::DeviceId device) const { return used_device_[device]; }
  const DrainBudget& budget() const { return budget_; }
  const fabric::Topology& topology() const { return topology_; }

 private:
  struct State {
    bool oper_up = true;
    bool drained = false;
    bool reserved = false;
  };
  static bool contributes(const State& s) { return s.oper_up && !s.drained && !s.reserved; }
  static bool uses_budget(const State& s) { return s.drained || s.reserved; }
  void update(fabric::LinkId link, State next);

  const fabric::Topology& topology_;
  DrainBudget budget_;
  std::vector<State> links_;
  std::vector<double> available_;
  int used_fabric_ = 0;
  std::vector<int> used_device_;
};

}  // namespace medic::remediation

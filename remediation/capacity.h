// The capacity model: for every capacity group, how much of its capacity is in service,
// kept up to date incrementally so a drain check costs work proportional to the groups of
// the link, not to the fabric. A link is in service when it is up, not drained and not
// held by an in-flight drain. A budget caps how many links may be drained (or held by a
// drain in flight) at once, fabric-wide and per switch.
#pragma once

#include <cstdint>
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

// The reasons a drain is refused, worded the same by the model and the planner.
std::string floor_reason(const fabric::CapacityGroup& g, double after);
std::string budget_fabric_reason(int used, int limit);
std::string budget_switch_reason(const std::string& device, int used, int limit);
// A fraction below a floor, with room for rounding (a group exactly at its floor is not).
bool below_floor(double fraction, double floor);

struct DrainCheck {
  bool allowed = true;
  Refusal refusal = Refusal::none;
  std::vector<GroupImpact> impacts;
  std::string reason;  // for a refusal: "rtsw0003 uplinks would fall to 50.0% < floor 75.0%"
};

// Links drained or held by a drain in flight on one switch, before and after a what-if.
struct SwitchBudget {
  fabric::DeviceId device = fabric::kNone;
  int before = 0, after = 0;
};

// What draining several links at once would do: every group touched, before and after,
// and every rule that would break (all of them, not only the first). A link listed twice
// counts once; a link already drained or held changes nothing.
struct WhatIf {
  bool allowed = true;
  std::vector<GroupImpact> impacts;  // by group id
  std::vector<std::string> problems;
  int drained_before = 0, drained_after = 0;  // fabric-wide count against the budget
  std::vector<SwitchBudget> switches;         // every switch at an end of a link that changes, by id
};

class CapacityModel {
 public:
  // Every link starts up, undrained and unreserved. The model keeps a reference to the
  // topology, which must outlive it.
  explicit CapacityModel(const fabric::Topology& topology, DrainBudget budget = {});
  CapacityModel(fabric::Topology&&, DrainBudget = {}) = delete;

  void set_oper_up(fabric::LinkId link, bool up);
  void set_drained(fabric::LinkId link, bool drained);
  // An in-flight drain holds the link's capacity (and a place in the budget) so two
  // concurrent checks cannot both pass.
  void set_reserved(fabric::LinkId link, bool reserved);
  // Every link undrained and unreserved again (oper states kept), before drain states are
  // reloaded from the record.
  void clear_drains();

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

  // Capacity is counted in whole Mb/s, so the incremental sums equal a recount exactly
  // however many changes came before.
  double available_gbps(fabric::GroupId g) const { return static_cast<double>(available_[g]) / 1000.0; }
  double fraction_in_service(fabric::GroupId g) const;
  int64_t available_mbps(fabric::GroupId g) const { return available_[g]; }
  int64_t total_mbps(fabric::GroupId g) const { return total_[g]; }
  int64_t speed_mbps(fabric::LinkId l) const { return speed_[l]; }
  // What fraction of the group `available_mbps` is.
  double fraction(fabric::GroupId g, int64_t available_mbps) const {
    return static_cast<double>(available_mbps) / static_cast<double>(total_[g]);
  }
  // Links of the group in service now.
  int links_in_service(fabric::GroupId g) const { return links_in_service_[g]; }
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

  // The switches at the ends of a link (a host end takes budget but is never limited).
  struct Ends {
    fabric::DeviceId a = fabric::kNone, b = fabric::kNone;
    bool a_switch = false, b_switch = false;
  };

  // What a check reads is copied here into flat arrays, so a check touches a few cache
  // lines rather than the topology's records.
  const fabric::Topology& topology_;
  DrainBudget budget_;
  std::vector<State> links_;
  std::vector<Ends> ends_;          // per link
  std::vector<int64_t> speed_;      // per link, Mb/s
  std::vector<double> floor_;       // per group
  std::vector<int64_t> total_;      // per group, Mb/s
  std::vector<int64_t> available_;  // per group, Mb/s in service
  std::vector<int> links_in_service_;
  int used_fabric_ = 0;
  std::vector<int> used_device_;
};

}  // namespace medic::remediation

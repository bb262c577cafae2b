// The capacity model: for every capacity group, how much of its capacity is in service,
// kept up to date incrementally so a drain check costs work proportional to the groups of
// the link, not to the fabric. A link is in service when it is up, not drained and not
// held by an in-flight drain.
#pragma once

#include <string>
#include <vector>

#include "fabric/topology.h"

namespace medic::remediation {

struct GroupImpact {
  fabric::GroupId group = fabric::kNone;
  double before = 0;  // fraction of the group's capacity in service now
  double after = 0;   // ... if the link were drained
  double floor = 0;
  bool breaks_floor = false;
};

struct DrainCheck {
  bool allowed = true;
  std::vector<GroupImpact> impacts;
  std::string reason;  // for a refusal: "rtsw0003 uplinks would fall to 50.0% < floor 75.0%"
};

class CapacityModel {
 public:
  explicit CapacityModel(const fabric::Topology& topology);

  void set_oper_up(fabric::LinkId link, bool up);
  void set_drained(fabric::LinkId link, bool drained);
  // An in-flight drain holds the link's capacity so two concurrent checks cannot both pass.
  void set_reserved(fabric::LinkId link, bool reserved);

  bool oper_up(fabric::LinkId link) const { return links_[link].oper_up; }
  bool drained(fabric::LinkId link) const { return links_[link].drained; }
  bool in_service(fabric::LinkId link) const { return contributes(links_[link]); }

  // Would draining `link` keep every group it belongs to at or above its floor? The link
  // itself is counted as lost whether or not it happens to be up right now (a flapping link
  // carries traffic between flaps).
  DrainCheck check_drain(fabric::LinkId link) const;

  double available_gbps(fabric::GroupId g) const { return available_[g]; }
  double fraction_in_service(fabric::GroupId g) const;

 private:
  struct State {
    bool oper_up = true;
    bool drained = false;
    bool reserved = false;
  };
  static bool contributes(const State& s) { return s.oper_up && !s.drained && !s.reserved; }
  void update(fabric::LinkId link, State next);

  const fabric::Topology& topology_;
  std::vector<State> links_;
  std::vector<double> available_;
};

}  // namespace medic::remediation

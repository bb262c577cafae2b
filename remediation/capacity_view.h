// The capacity as people look at it, shared by `medic capacity` and medicd's incident page:
// the link states the database records applied to a model, and what draining links would do.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "remediation/capacity.h"

namespace medic::remediation {

// One link's recorded states (the links table), by name.
struct RecordedLinkState {
  std::string link;         // the link's full name
  std::string drain_state;  // undrained, draining, drained, undraining
  std::string oper_state;   // up, down, unknown
};

// What applying the recorded states found.
struct LinkStateCounts {
  int drained = 0, draining = 0, down = 0, oper_unknown = 0, not_in_topology = 0;
};

// Drained (and undraining: out of service until the switch has done it) and draining
// (held) links, and links down, set in the model.
LinkStateCounts apply_link_states(CapacityModel& model, std::span<const RecordedLinkState> rows);

// "in service", "down", "drained", "draining", or several of them.
std::string link_state_text(const CapacityModel& m, fabric::LinkId l);

// What draining `links` would do, as `medic capacity whatif --json` prints it (without the
// topology and states, which the caller adds): allowed, links, groups that change, budget,
// problems.
nlohmann::json what_if_json(const CapacityModel& m, std::span<const fabric::LinkId> links);

}  // namespace medic::remediation

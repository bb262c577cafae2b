// How much of the fabric must stay in service: the floors of the capacity groups derived
// from the topology (per group kind), and the budget of links that may be drained at once,
// fabric-wide and per switch. Read from data/capacity.json (or the operator's file) and
// validated in full.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fabric/topology.h"
#include "remediation/capacity.h"

namespace medic::remediation {

class CapacityConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CapacityConfig {
  // Groups derived from the topology, per kind: "tor_uplinks" (each RTSW's links to its
  // spines), "spine_downlinks" (each CTSW's links to the RTSWs of one zone),
  // "spine_uplinks" (each CTSW's links to aggregation), "plane" (every CTSW-ATSW link of a
  // plane). A kind without a floor (null in the file) is not derived. A file's "floors"
  // changes the kinds it names; the others keep these defaults.
  std::map<std::string, double, std::less<>> floors = {
      {"tor_uplinks", 0.75}, {"spine_downlinks", 0.75}, {"spine_uplinks", 0.75}, {"plane", 0.85}};
  int budget_fabric = 64;     // links drained (or being drained) at once, fabric-wide
  int budget_per_switch = 2;  // ... touching any one switch

  DrainBudget budget() const { return {budget_fabric, budget_per_switch}; }

  // Throws CapacityConfigError "FILE: $.path: problem".
  static CapacityConfig load_file(const std::string& path);
  static CapacityConfig parse(std::string_view text, const std::string& source);
};

// The kinds of group with_derived_groups knows, in the order it derives them.
inline constexpr std::string_view kDerivedKinds[] = {"tor_uplinks", "spine_downlinks", "spine_uplinks", "plane"};

// The topology with the derived capacity groups added: the same devices, ports, links and
// ids; the topology's own groups first (same group ids), then the derived ones. A derived
// group and a group of the topology with the same links are one group, under the
// topology's name and kind, with the higher of the two floors (configuration never lowers
// a floor a topology file sets, nor the reverse). Throws CapacityConfigError when a group
// of the topology has a derived group's name but other links.
fabric::Topology with_derived_groups(const fabric::Topology& topology, const CapacityConfig& config);

}  // namespace medic::remediation

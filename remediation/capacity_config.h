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

namespace medic::remediation {

class CapacityConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CapacityConfig {
  // Groups derived from the topology, per kind: "tor_uplinks" (each RTSW's links to its
  // spines), "spine_downlinks" (each CTSW's links to its zone's RTSWs), "spine_uplinks"
  // (each CTSW's links to aggregation), "plane" (every spine-aggregation link of a plane).
  // A kind without a floor is not derived; groups the topology names itself are kept.
  std::map<std::string, double, std::less<>> floors = {
      {"tor_uplinks", 0.75}, {"spine_downlinks", 0.75}, {"spine_uplinks", 0.75}, {"plane", 0.85}};
  int budget_fabric = 64;     // links drained (or being drained) at once, fabric-wide
  int budget_per_switch = 2;  // ... touching any one switch

  // Throws CapacityConfigError "FILE: $.path: problem".
  static CapacityConfig load_file(const std::string& path);
  static CapacityConfig parse(std::string_view text, const std::string& source);
};

// The topology with the derived capacity groups added (same devices, ports and links, same
// ids). Explicit groups keep their floors; a derived group whose name is already taken is
// not added.
fabric::Topology with_derived_groups(const fabric::Topology& topology, const CapacityConfig& config);

}  // namespace medic::remediation

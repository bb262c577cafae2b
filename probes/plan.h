// Which probes to send: link-pinned sessions (one per link, from an end that can send to
// the far end's address) and path flows between hosts whose source ports sweep the ECMP
// paths, chosen so every link is crossed by several flows.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/topology.h"
#include "probes/ecmp.h"

namespace medic::probes {

struct PlanConfig {
  int flows_per_nic = 4;      // path flows leaving each host NIC
  int min_cover = 3;          // try to cross every link with at least this many flows
  uint16_t sport_base = 33434;
  uint16_t sport_count = 1024;  // source ports the sweep draws from
  uint64_t seed = 1;
};

struct ProbePlan {
  std::vector<fabric::LinkId> pinned;  // links to probe end to end (from their A end)
  std::vector<Flow> flows;             // host-to-host path flows
};

// Deterministic for a seed. Links that no flow crosses (after trying) are listed in
// `pinned` so they are still watched.
ProbePlan make_plan(const fabric::Topology& topology, const EcmpModel& ecmp, const PlanConfig& config = {});

}  // namespace medic::probes

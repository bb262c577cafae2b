// Which of the links waiting for a drain to take out now. When capacity floors and the
// budget cannot take them all, drain the set that removes the most packet loss (the
// objective of CorrOpt, Zhuo et al., SIGCOMM 2017, for corrupting links): an exact
// branch-and-bound search over the candidates, highest loss first, so its first answer is
// the greedy one and it only improves on it; beyond `exact_limit` candidates, greedy.
// Pure: reads the capacity model, changes nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "remediation/capacity.h"

namespace medic::remediation {

struct DrainCandidate {
  int64_t incident_id = 0;
  fabric::LinkId link = fabric::kNone;
  double loss = 0;  // fraction of the link's traffic it loses (policy.h loss_estimate)
};

struct WaitingDrain {
  DrainCandidate candidate;
  Refusal refusal = Refusal::none;
  std::string reason;  // "rtsw0003 uplinks would fall to 50.0% < floor 75.0%"
};

struct DrainPlan {
  std::vector<DrainCandidate> drain;  // highest loss first
  std::vector<WaitingDrain> wait;
  double loss_removed = 0;
  bool exact = true;       // the search finished: no other feasible set removes more loss
  size_t nodes = 0;        // search nodes visited
};

struct PlannerOptions {
  size_t exact_limit = 24;       // candidates searched exactly; greedy beyond
  size_t node_limit = 200000;    // search nodes before settling for the best found
};

// Several candidates on one link count once: the highest loss, on a tie the oldest
// incident. A loss that is not a finite number >= 0 counts as none; such candidates are
// still drained when they fit after the others. Every candidate link ends up in `drain` or
// in `wait`, with the rule that keeps it waiting once the chosen ones are drained. Plan
// again whenever the model changes (a link back from repair frees capacity and budget).
DrainPlan plan_drains(const CapacityModel& model, std::span<const DrainCandidate> candidates,
                      const PlannerOptions& options = {});

}  // namespace medic::remediation

// ECMP forwarding in a Clos, as a model: the equal-cost next hops at every device towards
// a destination, every path between two ports, and the path one flow (a 5-tuple) takes
// when each switch picks among its next hops by a hash of the flow, as switches do.
//
// Path probes between hosts sweep the UDP source port to cover the paths; localization
// needs to know which links each flow crossed. When the fabric's hash is known (fabsim, or
// a production fabric whose switches hash deterministically), path_of() says; otherwise the
// flow could have crossed any of paths(), and localization weighs them all.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fabric/topology.h"

namespace medic::probes {

using Path = std::vector<fabric::LinkId>;

struct Flow {
  fabric::PortId src = fabric::kNone;  // the port the probe leaves from (e.g. a host NIC)
  fabric::PortId dst = fabric::kNone;  // the port it is addressed to (e.g. another host's NIC)
  uint16_t sport = 0;
  uint16_t dport = 862;
};

class EcmpModel {
 public:
  // `seed` perturbs every switch's hash, as switches' hash seeds differ between fabrics.
  // The topology must outlive the model. Distances to recently used destinations are
  // cached (bounded), so many flows towards the same ToR cost one BFS; the const methods
  // are safe to call from several threads. Copies share the cache.
  explicit EcmpModel(const fabric::Topology& topology, uint64_t seed = 0);

  // The path a flow takes, first link (the one src is on) to last (the one dst is on).
  // Empty when dst cannot be reached (no route without crossing a host).
  Path path_of(const Flow& f) const;

  // Every shortest path from src to dst (hosts never transit), at most `limit` of them.
  std::vector<Path> paths(fabric::PortId src, fabric::PortId dst, size_t limit = 4096) const;

  // How many shortest paths there are (without listing them).
  uint64_t path_count(fabric::PortId src, fabric::PortId dst) const;

 private:
  struct Impl;
  const fabric::Topology& topology_;
  uint64_t seed_;
  std::shared_ptr<Impl> impl_;  // adjacency and the distance cache
};

}  // namespace medic::probes

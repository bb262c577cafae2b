// Shared by the probe tests: the demo fabric, built once, and its links by name.
#pragma once

#include <stdexcept>
#include <string>

#include "fabric/generator.h"
#include "fabric/topology.h"

namespace medic::probes::testing {

inline const fabric::Topology& demo() {
  static const fabric::Topology t = fabric::generate_clos(*fabric::preset("demo"));
  return t;
}

// A link by its name or either end ("rtsw0002:eth6"); throws naming a missing one.
inline fabric::LinkId link(const fabric::Topology& t, const std::string& ref) {
  const auto l = t.find_link(ref);
  if (!l) throw std::invalid_argument("no link " + ref);
  return *l;
}

}  // namespace medic::probes::testing

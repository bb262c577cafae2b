// A topology file as medicd, fabsim and `medic fabric check` read it (fabric/loader.cpp):
// parse_topology. A topology it accepts must survive topology_to_json and a second parse
// unchanged, and every link must join two ports of two devices.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fabric/loader.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;
using namespace medic::fabric;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Topology t;
  try {
    t = parse_topology(text, "fuzz.json");
  } catch (const TopologyError& e) {
    fuzz::check(!e.problems().empty(), "TopologyError without a problem");
    for (const auto& p : e.problems()) fuzz::check(p.rfind("fuzz.json: ", 0) == 0, "problem without the file", p);
    return 0;
  }
  for (const Link& l : t.links()) {
    fuzz::check(l.a < t.ports().size() && l.b < t.ports().size() && l.a != l.b, "link with a bad port");
    fuzz::check(t.port(l.a).device != t.port(l.b).device, "link from a device to itself");
    fuzz::check(l.speed_gbps > 0 && l.speed_gbps <= 100000, "link speed out of range");
    fuzz::check(t.peer(l.a) == l.b && t.peer(l.b) == l.a, "peer() disagrees with the link");
  }
  for (const CapacityGroup& g : t.groups()) fuzz::check(g.floor > 0 && g.floor <= 1, "floor out of (0, 1]");

  const std::string once = topology_to_json(t).dump();
  Topology again;
  try {
    again = parse_topology(once, "again.json");
  } catch (const TopologyError& e) {
    fuzz::fail("the written topology does not load again:", e.problems().front());
  }
  fuzz::check(again.devices().size() == t.devices().size() && again.ports().size() == t.ports().size() &&
                  again.links().size() == t.links().size() && again.groups().size() == t.groups().size(),
              "the written topology loads with other counts");
  fuzz::check(topology_to_json(again).dump() == once, "writing the topology again gives other JSON");
  return 0;
}

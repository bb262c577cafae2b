// A fabsim scenario file (sim/scenario.cpp) against the demo fabric `medic fabric gen demo`
// writes (the fabric sim/scenarios/*.json are written for): parse_scenario, then
// Scenario::events, which fabsim plays. Events come sorted by time, each naming a fault of
// the scenario; link events name the fault's link.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fabric/generator.h"
#include "sim/scenario.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;
using namespace medic::sim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Scenario s;
  try {
    s = parse_scenario(text, "fuzz.json", topo);
  } catch (const ScenarioError& e) {
    fuzz::check(std::string_view(e.what()).rfind("fuzz.json: ", 0) == 0, "error without the file", e.what());
    return 0;
  }
  // Up to 100000 flaps a fault is allowed: list the events only while that stays small.
  size_t expected = 0;
  for (const Fault& f : s.faults) {
    fuzz::check(f.at_s >= 0 && f.duration_s >= 0, "negative time in a fault");
    if (f.kind == FaultKind::flap) {
      fuzz::check(f.count >= 1 && f.count <= 100000, "flap count out of range");
      fuzz::check(f.down_s > 0 && f.down_s < f.period_s, "flap down_s not within its period");
    }
    expected += f.kind == FaultKind::flap ? 2 * static_cast<size_t>(f.count) : 2;
  }
  if (expected > 200000) return 0;
  const auto events = s.events();
  for (size_t i = 0; i < events.size(); ++i) {
    const SimEvent& e = events[i];
    fuzz::check(e.fault < s.faults.size(), "event of no fault");
    if (i > 0) fuzz::check(!(e.at_s < events[i - 1].at_s), "events out of time order");
    if (e.phase == SimEvent::Phase::link_down || e.phase == SimEvent::Phase::link_up) {
      fuzz::check(e.link == s.faults[e.fault].link && e.link < topo.links().size(), "link event on another link");
    }
  }
  return 0;
}

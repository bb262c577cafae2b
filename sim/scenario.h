// fabsim scenarios: timed faults applied to the emulated fabric (docs/formats.md).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/topology.h"

namespace medic::sim {

enum class FaultKind : uint8_t {
  flap,  // the link goes down and up `count` times, every `period_s`, down for `down_s`
  down,  // the link goes down at `at_s` (and up again after `duration_s`, if given)
};

struct Fault {
  FaultKind kind = FaultKind::flap;
  fabric::LinkId link = fabric::kNone;
  double at_s = 0;
  int count = 1;
  double period_s = 1.0;
  double down_s = 0.2;
  double duration_s = 0;  // 0: stays down
};

// A link state change at a time; what the simulator applies.
struct LinkEvent {
  double at_s = 0;
  fabric::LinkId link = fabric::kNone;
  bool up = false;
};

struct Scenario {
  std::vector<Fault> faults;
  // Every state change the faults cause, sorted by time.
  std::vector<LinkEvent> events() const;
};

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws ScenarioError "FILE: $.faults[2].link: unknown link "x"".
Scenario load_scenario_file(const std::string& path, const fabric::Topology& topology);
Scenario parse_scenario(std::string_view text, const std::string& source, const fabric::Topology& topology);

}  // namespace medic::sim

// fabsim scenarios: timed faults applied to the emulated fabric (docs/formats.md).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/topology.h"

namespace medic::sim {

enum class FaultKind : uint8_t {
  flap,          // link: down and up `count` times, every `period_s`, down for `down_s`
  down,          // link: down at `at_s` (up again after `duration_s`, if given)
  optics_loss,   // end: the light it receives is `value` dB weaker (a dirty connector, a bent fiber)
  weak_tx,       // end: its transmitter is `value` dB weaker (a dying laser)
  optics_drift,  // end: the light it receives fades by `value` dB per minute
  corrupt,       // end: a share `value` of the frames it receives fail their FCS
  fec,           // end: pre-FEC BER `value` on what it receives; `value2` uncorrectable codewords/s
  pause,         // end: it sends `value` pause frames per second (a slow receiver on a host NIC)
  congestion,    // end: runs at utilization `value` and discards a share `value2` of packets
  silent,        // device: stops answering its telemetry endpoint (HTTP 503)
  garbage,       // device: answers with a malformed payload
  reboot,        // device: restarts, its counters start again from zero
  probe_loss,    // end: a share `value` of the probes it receives vanish, counters clean (a gray failure)
  probe_delay,   // end: what it receives is held `value` milliseconds longer
  reflector_down,  // device: its STAMP reflector stops answering (the device itself is fine)
  reflector_busy,  // device: its STAMP reflector answers a share `value` of probes `value2` ms late (a busy CPU)
  absurd,        // end: its `counter` reads `value` while the fault lasts (a broken exporter)
  rpc_delay,     // device: its drain API answers (and acts) `value` seconds after each request
  rpc_fault,     // device: its drain API misbehaves as `answer` says (RpcAnswer)
};
// How a drain API with an rpc_fault answers: HTTP 500; 200 with a body that is not
// JSON-RPC; the connection closed without an answer; or a lie (every call answered as if it
// had worked, with nothing done: get_state says what the last call asked for).
enum class RpcAnswer : uint8_t { none, error, garbage, close, lie };
std::string_view to_string(RpcAnswer a);
std::string_view to_string(FaultKind k);
// The counters an `absurd` fault can replace (fabsim's port counters, by canonical name).
const std::vector<std::string>& absurd_counters();
bool absurd_counter_supported(const std::string& name);

struct Fault {
  FaultKind kind = FaultKind::flap;
  fabric::LinkId link = fabric::kNone;      // flap, down
  fabric::PortId port = fabric::kNone;      // the port-level faults ("end")
  fabric::DeviceId device = fabric::kNone;  // silent, garbage, reboot
  double at_s = 0;
  double duration_s = 0;  // 0: until fabsim stops
  int count = 1;          // flap
  double period_s = 1.0;  // flap
  double down_s = 0.2;    // flap
  double value = 0;
  double value2 = 0;
  std::string counter;  // absurd: the canonical counter name it replaces
  RpcAnswer answer = RpcAnswer::none;  // rpc_fault
};

// What the simulator does at a moment: a link goes down or up, or a fault starts or ends.
struct SimEvent {
  enum class Phase : uint8_t { link_down, link_up, start, end };
  double at_s = 0;
  size_t fault = 0;  // index into Scenario::faults
  Phase phase = Phase::start;
  fabric::LinkId link = fabric::kNone;  // for link_down / link_up
  bool up = false;                      // for link_down / link_up
};

struct Scenario {
  std::vector<Fault> faults;
  // Every change the faults cause, sorted by time (stable for equal times).
  std::vector<SimEvent> events() const;
};

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws ScenarioError "FILE: $.faults[2].link: unknown link "x"".
Scenario load_scenario_file(const std::string& path, const fabric::Topology& topology);
Scenario parse_scenario(std::string_view text, const std::string& source, const fabric::Topology& topology);

}  // namespace medic::sim

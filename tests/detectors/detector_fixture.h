// Shared by the detector tests: a small fabric, simulated time, and port deltas built the
// way telemetry::CounterTracker produces them.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "common/time.h"
#include "detectors/finding.h"
#include "fabric/loader.h"
#include "telemetry/counters.h"

namespace medic::detectors::test {

using telemetry::Counter;
using telemetry::PortDelta;

// A reading the source did not give (absent optics, a counter it does not have).
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline const Time kT0 = from_unix_seconds(1.8e9);
inline Time at(double s) { return kT0 + from_seconds(s); }

// rtsw1 is a ToR with two spine uplinks and two host downlinks; the links carry different
// optics (the config's default type, FR4, and one type no config knows).
inline fabric::Topology small_fabric() {
  return fabric::parse_topology(R"({
    "switches": [
      {"name": "rtsw1", "role": "rtsw", "telemetry": "http://sim/rtsw1", "driver": {"kind": "dryrun"}},
      {"name": "ctsw1", "role": "ctsw", "telemetry": "http://sim/ctsw1", "driver": {"kind": "dryrun"}},
      {"name": "ctsw2", "role": "ctsw", "telemetry": "http://sim/ctsw2", "driver": {"kind": "dryrun"}}
    ],
    "hosts": [
      {"name": "host1", "nics": ["nic0", "nic1"]},
      {"name": "host2", "nics": ["nic0"]}
    ],
    "links": [
      {"a": "rtsw1:eth1", "b": "ctsw1:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth2", "b": "ctsw2:eth1", "speed_gbps": 400, "optic": "400G-FR4"},
      {"a": "rtsw1:eth3", "b": "ctsw1:eth3", "speed_gbps": 400, "optic": "800G-MYSTERY"},
      {"a": "host1:nic0", "b": "rtsw1:eth10", "speed_gbps": 400},
      {"a": "host2:nic0", "b": "rtsw1:eth11", "speed_gbps": 400}
    ]
  })",
                                "small.json");
}

// A delta of one port, `interval_s` long, ending at `t`.
class Delta {
 public:
  Delta(fabric::PortId port, Time t, double interval_s = 10) {
    d_.port = port;
    d_.time = t;
    d_.interval = from_seconds(interval_s);
  }
  Delta& set(Counter c, double value) {
    d_.v[static_cast<size_t>(c)] = value;
    d_.present |= telemetry::bit(c);
    return *this;
  }
  Delta& reset() {
    d_.counters_reset = true;
    return *this;
  }
  operator const PortDelta&() const { return d_; }  // NOLINT: a builder
  const PortDelta& get() const { return d_; }

 private:
  PortDelta d_;
};

inline std::vector<Finding> of_kind(const std::vector<Finding>& all, FindingKind k) {
  std::vector<Finding> out;
  for (const auto& f : all) {
    if (f.kind == k) out.push_back(f);
  }
  return out;
}

inline size_t count(const std::vector<Finding>& all, FindingKind k, Severity s) {
  size_t n = 0;
  for (const auto& f : all) n += f.kind == k && f.severity == s ? 1 : 0;
  return n;
}

}  // namespace medic::detectors::test

// Pause frames. A host port that keeps sending pause frames to its ToR (its NIC's tx pause
// counter, or the ToR port's rx pause counter) for the sustain time is a slow receiver:
// host memory, PCIe or a stuck process, routed to the host's owner and never drained as a
// link fault. Switches pausing each other for that long is a PFC storm.
#pragma once

#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "telemetry/counters.h"

namespace medic::detectors {

class PfcDetector {
 public:
  PfcDetector(const fabric::Topology& topology, PfcConfig config);
  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);

 private:
  struct PortState {
    Time pausing_since{};
    bool pausing = false;
    bool reported = false;
  };
  const fabric::Topology& topology_;
  PfcConfig config_;
  std::vector<PortState> ports_;
};

}  // namespace medic::detectors

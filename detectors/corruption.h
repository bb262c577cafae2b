// Corrupting links: CRC/FCS errors (or, without them, receive errors) as a share of the
// frames received over a sliding window, in the bands of datacenter corruption studies:
// >= 1e-8 corrupting (warning), >= 1e-5 critical, with the 1e-4 and 1e-3 bands named in
// the evidence. Corruption is told apart from congestion: errors do not follow load;
// discards that rise with utilization (or happen at high utilization) are congestion and
// only noted, discards at low load with no explanation are a warning.
#pragma once

#include <deque>
#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "telemetry/counters.h"

namespace medic::detectors {

// "1e-5" for the band a loss rate falls in (1e-8, 1e-5, 1e-4, 1e-3), "" below 1e-8.
std::string corruption_band(double rate);

class CorruptionDetector {
 public:
  CorruptionDetector(const fabric::Topology& topology, CorruptionConfig config);

  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);

  // The port's corruption loss rate over the window (0 when nothing is known).
  double loss_rate(fabric::PortId port) const;

 private:
  struct Bucket {
    Time time;
    double errors = 0, frames = 0, discards = 0, packets = 0, utilization = NAN;
  };
  struct PortState {
    std::deque<Bucket> buckets;
    double errors = 0, frames = 0, discards = 0, packets = 0;
    int level = 0;  // 0 clean, 1 corrupting, 2 critical
    bool discards_reported = false;
  };
  void check_discards(const telemetry::PortDelta& d, PortState& s, std::vector<Finding>& out);

  const fabric::Topology& topology_;
  CorruptionConfig config_;
  std::vector<PortState> ports_;
};

}  // namespace medic::detectors

// Flap detection: a link whose carrier keeps going down and up. Counts carrier
// transitions (from the carrier-change counter, or from oper-state changes when a source
// has no such counter) in a sliding window and reports the link once the count reaches
// the threshold; it reports again only after the window has gone quiet.
#pragma once

#include <deque>
#include <vector>

#include "detectors/finding.h"
#include "telemetry/counters.h"

namespace medic::detectors {

struct FlapConfig {
  Duration window = std::chrono::seconds(60);
  int transitions = 6;  // 3 down-up cycles

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

class FlapDetector {
 public:
  FlapDetector(const fabric::Topology& topology, FlapConfig config);

  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);

  // Transitions currently inside the window for a port (for tests and the API).
  int transitions_in_window(fabric::PortId port, Time now) const;

 private:
  struct Event {
    Time time;
    int count;
  };
  struct PortState {
    std::deque<Event> events;
    int in_window = 0;
    int8_t last_oper = -1;
    bool reported = false;
  };
  void expire(PortState& s, Time now) const;

  const fabric::Topology& topology_;
  FlapConfig config_;
  std::vector<PortState> ports_;
};

}  // namespace medic::detectors

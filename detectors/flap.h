// Flapping links, by link-event damping (the scheme switch operating systems use for
// interface dampening): each flap adds a penalty, the penalty decays exponentially with a
// half-life, and a port is suppressed once it reaches the suppress threshold. A single flap
// is noted (an info finding, no incident); a port that keeps flapping crosses the threshold
// and is reported critical; and it counts as suppressed, so it is not put back in
// service, until the penalty has decayed below the reuse threshold. A port that stays down
// longer than the hold time is reported as link_down instead.
#pragma once

#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "telemetry/counters.h"

namespace medic::detectors {

class FlapDetector {
 public:
  FlapDetector(const fabric::Topology& topology, FlapConfig config);

  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);

  // The port's penalty decayed to `now`.
  double penalty(fabric::PortId port, Time now) const;
  // Whether the link (either end) is still suppressed at `now`: it went over the suppress
  // threshold and has not yet decayed below reuse. Undrain waits for this to be false.
  bool suppressed(fabric::LinkId link, Time now) const;
  const FlapConfig& config() const { return config_; }

 private:
  struct PortState {
    double penalty = 0;
    Time updated{};
    Time episode_start{};
    Time down_since{};
    int flaps_in_episode = 0;
    int8_t last_oper = -1;
    bool suppressed = false;
    bool down_reported = false;
    bool carrier_down = false;  // as far as the transitions seen so far tell
  };
  double decayed(const PortState& s, Time now) const;
  Finding make(const telemetry::PortDelta& d, const PortState& s, Severity sev, FindingKind kind) const;

  const fabric::Topology& topology_;
  FlapConfig config_;
  std::vector<PortState> ports_;
};

}  // namespace medic::detectors

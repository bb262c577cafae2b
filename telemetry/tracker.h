// Turns successive samples of a port into deltas. Counter resets (a device reboot) and
// 32- and 64-bit wraps are told apart so neither produces a false spike.
#pragma once

#include <vector>

#include "telemetry/counters.h"

namespace medic::telemetry {

class CounterTracker {
 public:
  explicit CounterTracker(size_t port_count);

  // The delta since the previous sample of the same port. The first sample of a port, or
  // a sample not newer than the previous one, yields only gauges.
  PortDelta observe(const PortSample& s);

  // Forget a port (e.g. after a long telemetry gap) so the next sample starts afresh.
  void forget(fabric::PortId port);

  // The port's latest sample (present == 0 before its first).
  const PortSample& last(fabric::PortId port) const { return last_[port]; }

  size_t resets() const { return resets_; }
  size_t wraps() const { return wraps_; }

 private:
  std::vector<PortSample> last_;
  size_t resets_ = 0;
  size_t wraps_ = 0;
};

// The increase from `prev` to `cur` of a monotonic counter; false if the counter was reset
// (the increase is unknown). Exposed for tests.
bool counter_increase(double prev, double cur, double& increase, bool& wrapped);

}  // namespace medic::telemetry

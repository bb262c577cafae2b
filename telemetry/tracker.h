// Turns successive samples of a port into deltas. Counter resets (a device reboot) and
// 32- and 64-bit wraps are told apart so neither produces a false spike. A value no port
// can report (a negative or beyond-64-bit counter, a gauge out of physical range) or a
// rise no link can produce in the elapsed time at its speed (flaps, errors, packets,
// bytes) is implausible: it yields no delta, is flagged in PortDelta::implausible, and
// never becomes the baseline; after kRebaselineAfter implausible values in a row the
// counter is taken to have really jumped and starts afresh from the new value. A restart
// sets a port's counters back once and then they rise; counters that go back in
// kRebaselineAfter samples in a row are implausible too (PortDelta::went_back).
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "telemetry/counters.h"

namespace medic::telemetry {

// The most a monotonic counter can rise over `interval` on a port of `speed_gbps` (0:
// unknown, taken as 1.6 Tb/s), with room for the jitter of when answers arrive.
double max_increase(Counter c, double speed_gbps, Duration interval);
// Whether a value is one a port can report for this counter at all.
bool plausible_value(Counter c, double v);

class CounterTracker {
 public:
  static constexpr int kRebaselineAfter = 3;

  // Ports of unknown speed (the counters' plausibility is bounded at 1.6 Tb/s).
  explicit CounterTracker(size_t port_count);
  // Each port's link speed in Gb/s (0: unknown).
  explicit CounterTracker(std::vector<double> port_speed_gbps);

  // The delta since the previous sample of the same port. The first sample of a port, or
  // a sample not newer than the previous one, yields only gauges. Order and intervals are
  // on the monotonic stamps where both samples have one (PortSample::mono), else the wall.
  PortDelta observe(const PortSample& s);

  // Forget a port (e.g. after a long telemetry gap) so the next sample starts afresh.
  void forget(fabric::PortId port);

  // The port's latest sample (present == 0 before its first).
  const PortSample& last(fabric::PortId port) const { return last_[port]; }

  size_t resets() const { return resets_; }
  size_t wraps() const { return wraps_; }
  size_t implausible() const { return implausible_; }
  size_t rebaselines() const { return rebaselines_; }

 private:
  // The baseline an implausible value did not replace, while such values keep coming.
  struct Held {
    double value = 0;
    Time time{};
    std::optional<Duration> mono;
    int strikes = 0;
  };
  std::vector<PortSample> last_;
  std::vector<double> speed_gbps_;
  std::unordered_map<uint64_t, Held> held_;  // port * kCounterCount + counter
  // Baselines near the top of 64 bits that no sound rise led to (a first value, a restart
  // after a jump): no wrap is taken from them.
  std::unordered_set<uint64_t> unconfirmed_;
  std::vector<uint8_t> back_in_a_row_;  // per port: samples in a row whose counters went back
  size_t resets_ = 0;
  size_t wraps_ = 0;
  size_t implausible_ = 0;
  size_t rebaselines_ = 0;
};

// The increase from `prev` to `cur` of a monotonic counter; false if the counter was reset
// (the increase is unknown). Exposed for tests.
bool counter_increase(double prev, double cur, double& increase, bool& wrapped);

}  // namespace medic::telemetry

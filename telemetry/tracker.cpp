#include "telemetry/tracker.h"

#include <cmath>

namespace medic::telemetry {

namespace {
constexpr double k2p32 = 4294967296.0;
constexpr double k2p64 = 18446744073709551616.0;
}  // namespace

bool counter_increase(double prev, double cur, double& increase, bool& wrapped) {
  wrapped = false;
  if (cur >= prev) {
    increase = cur - prev;
    return true;
  }
  // A counter that went down either wrapped or was reset. A wrap leaves a counter that was
  // near the top of its width near the bottom; anything else is a reset, whose increase
  // is unknown and is not guessed (guessing is how false spikes are made).
  if (prev < k2p32 && prev >= 0.75 * k2p32 && cur < 0.25 * k2p32) {
    increase = (k2p32 - prev) + cur;
    wrapped = true;
    return true;
  }
  if (prev >= 0.75 * k2p64 && cur < 0.25 * k2p64) {
    increase = (k2p64 - prev) + cur;
    wrapped = true;
    return true;
  }
  increase = 0;
  return false;
}

CounterTracker::CounterTracker(size_t port_count) : last_(port_count) {}

void CounterTracker::forget(fabric::PortId port) {
  if (port < last_.size()) last_[port].present = 0;
}

PortDelta CounterTracker::observe(const PortSample& s) {
  PortDelta d;
  d.port = s.port;
  d.time = s.time;
  if (s.port >= last_.size()) return d;
  PortSample& prev = last_[s.port];
  const bool have_prev = prev.present != 0 && prev.time < s.time;
  if (have_prev) d.interval = s.time - prev.time;
  for (size_t i = 0; i < kCounterCount; ++i) {
    const auto c = static_cast<Counter>(i);
    if (!s.has(c) || std::isnan(s.v[i])) continue;
    if (is_gauge(c)) {
      d.v[i] = s.v[i];
      d.present |= bit(c);
      continue;
    }
    if (!have_prev || !prev.has(c) || std::isnan(prev.v[i])) continue;
    double inc = 0;
    bool wrapped = false;
    if (counter_increase(prev.v[i], s.v[i], inc, wrapped)) {
      d.v[i] = inc;
      d.present |= bit(c);
      if (wrapped) ++wraps_;
    } else {
      d.counters_reset = true;
    }
  }
  if (d.counters_reset) ++resets_;
  if (prev.present == 0 || prev.time < s.time) prev = s;
  return d;
}

}  // namespace medic::telemetry

#include "telemetry/tracker.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

double max_increase(Counter c, double speed_gbps, Duration interval) {
  // Answers arrive with the jitter of the scrape (up to its timeout): the counters may span
  // more time than the arrivals say. Generous on purpose: this catches the impossible, not
  // the merely unusual.
  constexpr double kJitterS = 2.0, kSlack = 1.5, kFloor = 10;
  const double bps = (speed_gbps > 0 ? speed_gbps : 1600.0) * 1e9;
  const double secs = std::max(0.0, seconds(interval)) + kJitterS;
  double per_s = 0;
  switch (c) {
    // A link must train after every loss of carrier (tens of milliseconds at best, hundreds
    // at 400G PAM4): 20 transitions a second is already a link that never carries a frame.
    case Counter::carrier_changes:
    case Counter::link_down_events: per_s = 20; break;
    case Counter::rx_bytes:
    case Counter::tx_bytes: per_s = bps / 8; break;
    case Counter::rx_packets:
    case Counter::tx_packets:
    case Counter::rx_errors:
    case Counter::tx_errors:
    case Counter::rx_discards:
    case Counter::tx_discards:
    case Counter::rx_crc_errors:
    case Counter::rx_pause:
    case Counter::tx_pause: per_s = bps / (84 * 8); break;  // minimum frames: 64 bytes + preamble and gap
    case Counter::rx_symbol_errors:
    case Counter::fec_corrected_bits: per_s = bps; break;  // at most every bit
    case Counter::fec_corrected_codewords:
    case Counter::fec_uncorrectable_codewords:
    case Counter::fec_codewords: per_s = bps / 1000; break;  // a codeword carries thousands of bits
    default: return std::numeric_limits<double>::infinity();  // gauges
  }
  return per_s * secs * kSlack + kFloor;
}

bool plausible_value(Counter c, double v) {
  if (std::isnan(v)) return true;  // "no reading": left out before this is asked
  switch (c) {
    case Counter::oper_up: return v >= 0 && v <= 1;
    case Counter::rx_power_dbm:
    case Counter::tx_power_dbm: return v == -std::numeric_limits<double>::infinity() || (v >= -100 && v <= 40);
    case Counter::laser_bias_ma: return v >= 0 && v <= 10000;
    case Counter::temperature_c: return v >= -100 && v <= 300;
    case Counter::pre_fec_ber: return v >= 0 && v <= 1;
    default: return v >= 0 && v < k2p64;  // a counter no wider than 64 bits (2^64 itself is not one)
  }
}

CounterTracker::CounterTracker(size_t port_count)
    : last_(port_count), speed_gbps_(port_count, 0.0), back_in_a_row_(port_count, 0) {}

CounterTracker::CounterTracker(std::vector<double> port_speed_gbps)
    : last_(port_speed_gbps.size()), speed_gbps_(std::move(port_speed_gbps)), back_in_a_row_(last_.size(), 0) {}

void CounterTracker::forget(fabric::PortId port) {
  if (port < last_.size()) {
    last_[port].present = 0;
    back_in_a_row_[port] = 0;
  }
}

namespace {

// From a sample taken at (time, mono) to `s`: on the monotonic clock where both have it.
Duration elapsed(Time time, const std::optional<Duration>& mono, const PortSample& s) {
  return mono && s.mono ? *s.mono - *mono : s.time - time;
}

}  // namespace

PortDelta CounterTracker::observe(const PortSample& s) {
  PortDelta d;
  d.port = s.port;
  d.time = s.time;
  if (s.port >= last_.size()) return d;
  PortSample& prev = last_[s.port];
  const Duration since_prev = elapsed(prev.time, prev.mono, s);
  const bool have_prev = prev.present != 0 && since_prev > Duration::zero();
  const bool newer = prev.present == 0 || since_prev > Duration::zero();
  if (have_prev) d.interval = since_prev;
  PortSample next = s;  // what becomes the baseline
  auto flag = [&](Counter c, double v) {
    if (d.implausible == 0) d.implausible_value = v;
    d.implausible |= bit(c);
    ++implausible_;
  };
  uint32_t went_back = 0;  // counters that went back this sample
  double went_back_value = 0;
  for (size_t i = 0; i < kCounterCount; ++i) {
    const auto c = static_cast<Counter>(i);
    if (!s.has(c) || std::isnan(s.v[i])) continue;
    if (!plausible_value(c, s.v[i]) && is_gauge(c)) {
      flag(c, s.v[i]);
      next.present &= ~bit(c);
      continue;
    }
    if (is_gauge(c)) {
      d.v[i] = s.v[i];
      d.present |= bit(c);
      continue;
    }
    const uint64_t key = static_cast<uint64_t>(s.port) * kCounterCount + i;
    const auto held = held_.find(key);
    const bool have_base = held != held_.end() || (have_prev && prev.has(c) && !std::isnan(prev.v[i]));
    if (!newer) continue;
    if (!have_base) {
      if (!plausible_value(c, s.v[i])) {  // never a baseline
        flag(c, s.v[i]);
        next.present &= ~bit(c);
      } else if (s.v[i] >= 0.75 * k2p64) {
        unconfirmed_.insert(key);
      }
      continue;
    }

    const double base = held != held_.end() ? held->second.value : prev.v[i];
    const Time base_time = held != held_.end() ? held->second.time : prev.time;
    const std::optional<Duration> base_mono = held != held_.end() ? held->second.mono : prev.mono;
    double inc = 0;
    bool wrapped = false;
    const bool absurd = !plausible_value(c, s.v[i]);
    bool counted = !absurd && counter_increase(base, s.v[i], inc, wrapped);
    if (counted && wrapped && unconfirmed_.count(key) != 0) {
      // A 64-bit wrap needs a baseline near the top that a sound rise led to: a first value
      // (or a restart from a jump) up there proves nothing, and wrapping from it would count
      // the next sound value whole (240 flaps from one bogus 2^64 - 1). A reset instead.
      counted = false;
    }
    const double speed = s.port < speed_gbps_.size() ? speed_gbps_[s.port] : 0.0;
    if (absurd || (counted && inc > max_increase(c, speed, elapsed(base_time, base_mono, s)))) {
      flag(c, s.v[i]);
      Held& h = held_[key];
      if (h.strikes == 0) h = Held{base, base_time, base_mono, 0};
      ++h.strikes;
      if (!absurd && h.strikes >= kRebaselineAfter) {
        // It keeps reporting from there: the counter really jumped. Start afresh.
        held_.erase(key);
        ++rebaselines_;
        if (s.v[i] >= 0.75 * k2p64) unconfirmed_.insert(key);
      } else {
        next.v[i] = h.value;  // the implausible value never becomes the baseline
      }
      continue;
    }
    if (held != held_.end()) {
      // Back to plausible after implausible values: resume from here without a delta (the
      // increase spans the bad samples' time, not this interval).
      held_.erase(held);
      if (s.v[i] >= 0.75 * k2p64) unconfirmed_.insert(key);
      continue;
    }
    if (counted) {
      d.v[i] = inc;
      d.present |= bit(c);
      if (wrapped) ++wraps_;
      unconfirmed_.erase(key);  // a sound rise led here: a real baseline
    } else {
      d.counters_reset = true;
      if (went_back == 0) went_back_value = s.v[i];
      went_back |= bit(c);
      // Restarted from this value: near the top of 64 bits it proves nothing yet.
      if (s.v[i] >= 0.75 * k2p64) {
        unconfirmed_.insert(key);
      } else {
        unconfirmed_.erase(key);
      }
    }
  }
  if (d.counters_reset) ++resets_;
  if (newer) {
    uint8_t& in_a_row = back_in_a_row_[s.port];
    if (went_back == 0) {
      in_a_row = 0;
    } else if (in_a_row < kRebaselineAfter) {
      ++in_a_row;
    }
    if (in_a_row >= kRebaselineAfter) {
      // A restart sets counters back once; back again and again is the telemetry at fault.
      d.went_back = true;
      for (size_t i = 0; i < kCounterCount; ++i) {
        if ((went_back & bit(static_cast<Counter>(i))) != 0) flag(static_cast<Counter>(i), went_back_value);
      }
    }
  }
  if (newer) prev = next;
  return d;
}

}  // namespace medic::telemetry

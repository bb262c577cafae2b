// The canonical counter set every source is mapped onto (data/counter_map.json says how).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/time.h"
#include "fabric/topology.h"

namespace medic::telemetry {

enum class Counter : uint8_t {
  oper_up,           // gauge: 1 up, 0 down
  carrier_changes,   // monotonic: carrier transitions (up->down and down->up each count)
  link_down_events,  // monotonic: link-down events (one per flap)
  rx_packets,
  tx_packets,
  rx_bytes,
  tx_bytes,
  rx_errors,
  tx_errors,
  rx_discards,
  tx_discards,
  rx_crc_errors,
  rx_symbol_errors,
  fec_corrected_bits,
  fec_corrected_codewords,
  fec_uncorrectable_codewords,
  fec_codewords,     // monotonic: codewords received (denominator for codeword error rates)
  rx_pause,
  tx_pause,
  rx_power_dbm,      // gauge
  tx_power_dbm,      // gauge
  laser_bias_ma,     // gauge
  temperature_c,     // gauge
  pre_fec_ber,       // gauge: pre-FEC bit error rate as the device reports it
  kCount
};
inline constexpr size_t kCounterCount = static_cast<size_t>(Counter::kCount);

std::string_view to_string(Counter c);
std::optional<Counter> parse_counter(std::string_view s);
// Gauges are readings; all others only grow (until a reset or wrap).
bool is_gauge(Counter c);

inline constexpr uint32_t bit(Counter c) { return 1u << static_cast<unsigned>(c); }

// One port's readings from one scrape. Only counters whose bit is in `present` are valid.
struct PortSample {
  fabric::PortId port = fabric::kNone;
  Time time{};
  // When it was taken on the monotonic clock (Clock::monotonic), where known: the tracker
  // orders samples and measures their intervals by it, so a step of the wall clock neither
  // freezes the deltas nor stretches an interval. Without it (replays, files) the wall time.
  std::optional<Duration> mono;
  uint32_t present = 0;
  std::array<double, kCounterCount> v{};

  bool has(Counter c) const { return (present & bit(c)) != 0; }
  double get(Counter c) const { return v[static_cast<size_t>(c)]; }
  void set(Counter c, double value) {
    v[static_cast<size_t>(c)] = value;
    present |= bit(c);
  }
};

// What happened on a port between two samples: for monotonic counters the increase
// (corrected for resets and wraps), for gauges the latest reading.
struct PortDelta {
  fabric::PortId port = fabric::kNone;
  Time time{};
  Duration interval{};
  uint32_t present = 0;
  bool counters_reset = false;  // the device restarted its counters this interval
  // Its counters went back sample after sample (CounterTracker::kRebaselineAfter in a row)
  // with no rise between: no restart does that, the telemetry is lying. The counters that
  // went back are also flagged in `implausible`.
  bool went_back = false;
  // Counters whose value this sample was implausible (left out), and the first such
  // counter's reported value, for the message.
  uint32_t implausible = 0;
  double implausible_value = 0;
  std::array<double, kCounterCount> v{};

  bool has(Counter c) const { return (present & bit(c)) != 0; }
  double get(Counter c) const { return v[static_cast<size_t>(c)]; }
};

}  // namespace medic::telemetry

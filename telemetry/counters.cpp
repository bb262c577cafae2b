#include "telemetry/counters.h"

namespace medic::telemetry {

namespace {
constexpr std::array<std::string_view, kCounterCount> kNames = {
    "oper_up",          "carrier_changes",        "link_down_events",
    "rx_packets",       "tx_packets",             "rx_bytes",
    "tx_bytes",         "rx_errors",              "tx_errors",
    "rx_discards",      "tx_discards",            "rx_crc_errors",
    "rx_symbol_errors", "fec_corrected_bits",     "fec_corrected_codewords",
    "fec_uncorrectable_codewords", "fec_codewords", "rx_pause",
    "tx_pause",         "rx_power_dbm",           "tx_power_dbm",
    "laser_bias_ma",    "temperature_c",          "pre_fec_ber",
};
}  // namespace

std::string_view to_string(Counter c) { return kNames[static_cast<size_t>(c)]; }

std::optional<Counter> parse_counter(std::string_view s) {
  for (size_t i = 0; i < kCounterCount; ++i) {
    if (kNames[i] == s) return static_cast<Counter>(i);
  }
  return std::nullopt;
}

bool is_gauge(Counter c) {
  switch (c) {
    case Counter::oper_up:
    case Counter::rx_power_dbm:
    case Counter::tx_power_dbm:
    case Counter::laser_bias_ma:
    case Counter::temperature_c:
    case Counter::pre_fec_ber:
      return true;
    default:
      return false;
  }
}

}  // namespace medic::telemetry

// Forward error correction health: the pre-FEC bit error rate over a window, from corrected
// bits (or, failing that, corrected codewords as a lower bound, or the device's own pre-FEC
// BER reading) against a warning level and the code's limit (KP4: 2.4e-4). Any
// uncorrectable codeword means frames were lost and is critical at once.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "telemetry/counters.h"

namespace medic::detectors {

class FecDetector {
 public:
  FecDetector(const fabric::Topology& topology, FecConfig config);

  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);
  double pre_fec_ber(fabric::PortId port) const;

 private:
  struct Bucket {
    Time time;
    double bits = 0, codewords = 0, reported_ber = NAN;
    int64_t us = 0;  // the interval, in the clock's whole microseconds
    bool has_bits = false, has_codewords = false;
  };
  struct PortState {
    std::deque<Bucket> buckets;
    // The window's sums, kept as buckets come and go: its length exactly (whole
    // microseconds), the counts summed again from the buckets every kResum buckets (and at
    // once should one overflow), so float rounding never lasts.
    double bits = 0, codewords = 0;
    int64_t us = 0;
    uint32_t with_bits = 0, with_codewords = 0, since_resum = 0;
    double ber = 0;
    int level = 0;  // 0 ok, 1 warning, 2 over the limit
    bool uncorrectable_reported = false;
    Time last_uncorrectable{};
  };

  static constexpr uint32_t kResum = 64;
  void add(PortState& s, const Bucket& b, double sign);
  void resum(PortState& s);

  const fabric::Topology& topology_;
  FecConfig config_;
  std::vector<PortState> ports_;
};

}  // namespace medic::detectors

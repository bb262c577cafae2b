// Statistics for probe results: loss with a Wilson score interval, RTT quantiles from a
// streaming sketch with bounded relative error, jitter, reordering and duplicates.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/sketch.h"

namespace medic::probes {

// Wilson score interval for a binomial proportion (lost of sent) at z standard deviations
// (1.96: 95%, 2.58: 99%). {0, 0} ... {lower, upper} in [0, 1]; {0, 1} when sent is 0.
struct Interval {
  double lower = 0, upper = 1;
};
Interval wilson(uint64_t lost, uint64_t sent, double z = 1.96);

// P(X >= k) for X ~ Poisson(mean): the chance of seeing k or more lost probes where `mean`
// are expected. 1 when k <= 0 and when either is NaN (nothing shown); 0 when mean <= 0.
// The exact tail, where the normal approximation behind a Wilson bound is far too
// optimistic for a handful of events.
double poisson_at_least(double k, double mean);

using medic::QuantileSketch;  // common/sketch.h

// One session's replies, in arrival order: loss, duplicates, reordering, RTT and jitter.
class SessionStats {
 public:
  void sent(uint32_t seq);
  // A reply for `seq`, with its round-trip time (and one-way delays when both clocks are
  // synchronized; NAN otherwise).
  void received(uint32_t seq, double rtt_s, double forward_s = 0.0 / 0.0, double backward_s = 0.0 / 0.0);

  uint64_t sent_count() const { return sent_; }
  uint64_t received_count() const { return received_; }  // distinct sequence numbers answered
  uint64_t lost() const { return sent_ >= received_ ? sent_ - received_ : 0; }
  uint64_t duplicates() const { return duplicates_; }
  uint64_t reordered() const { return reordered_; }  // replies arriving after a later sequence number
  double jitter_s() const { return jitter_; }        // RFC 3550 interarrival jitter of the RTT
  const QuantileSketch& rtt() const { return rtt_; }
  const QuantileSketch& forward() const { return forward_; }
  const QuantileSketch& backward() const { return backward_; }
  Interval loss_interval(double z = 1.96) const { return wilson(lost(), sent_, z); }

 private:
  uint64_t sent_ = 0, received_ = 0, duplicates_ = 0, reordered_ = 0;
  uint32_t highest_ = 0;
  bool any_ = false;
  std::vector<uint64_t> seen_;  // bitmap of answered sequence numbers (relative to first_)
  uint32_t first_ = 0;
  bool first_set_ = false;
  double last_rtt_ = 0, jitter_ = 0;
  QuantileSketch rtt_, forward_, backward_;
};

}  // namespace medic::probes

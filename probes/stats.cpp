#include "probes/stats.h"

#include <algorithm>
#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <exception>

namespace medic::probes {

Interval wilson(uint64_t lost, uint64_t sent, double z) {
  if (sent == 0) return {0, 1};
  const double n = static_cast<double>(sent);
  const double p = static_cast<double>(std::min(lost, sent)) / n;
  const double z2 = z * z;
  const double denom = 1 + z2 / n;
  const double centre = (p + z2 / (2 * n)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

double poisson_at_least(double k, double mean) {
  if (!(k > 0) || std::isnan(mean)) return 1.0;
  if (!(mean > 0)) return 0.0;
  try {
    return boost::math::gamma_p(k, mean);  // P(k, mean) = P(Poisson(mean) >= k) for whole k
  } catch (const std::exception&) {
    return 1.0;  // not computable (Boost.Math's evaluation errors throw): shows nothing
  }
}

void SessionStats::sent(uint32_t seq) {
  ++sent_;
  if (!first_set_) {
    first_ = seq;
    first_set_ = true;
  }
}

void SessionStats::received(uint32_t seq, double rtt_s, double forward_s, double backward_s) {
  if (!first_set_) return;  // a reply to nothing this session sent
  const uint32_t rel = seq - first_;
  if (rel >= sent_) return;  // not one of ours (or from before a wrap we never sent)
  const size_t word = rel / 64, bitno = rel % 64;
  if (seen_.size() <= word) seen_.resize(word + 1, 0);
  if (seen_[word] & (uint64_t{1} << bitno)) {
    ++duplicates_;
    return;
  }
  seen_[word] |= uint64_t{1} << bitno;
  ++received_;
  if (any_ && rel < highest_) ++reordered_;
  if (!any_ || rel > highest_) highest_ = rel;
  // Interarrival jitter as RTP computes it (RFC 3550 6.4.1), over round-trip times.
  if (any_) jitter_ += (std::fabs(rtt_s - last_rtt_) - jitter_) / 16.0;
  last_rtt_ = rtt_s;
  any_ = true;
  rtt_.add(rtt_s);
  if (!std::isnan(forward_s)) forward_.add(forward_s);
  if (!std::isnan(backward_s)) backward_.add(backward_s);
}

}  // namespace medic::probes

#include "probes/stats.h"

#include <algorithm>
#include <cmath>

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

QuantileSketch::QuantileSketch(double relative_error) {
  const double a = std::clamp(relative_error, 1e-4, 0.5);
  gamma_ = (1 + a) / (1 - a);
  log_gamma_ = std::log(gamma_);
}

int QuantileSketch::key(double v) const { return static_cast<int>(std::ceil(std::log(v) / log_gamma_)); }

double QuantileSketch::value_of(int k) const {
  // The middle of bucket k ((gamma^(k-1), gamma^k]) in the relative sense.
  return 2 * std::pow(gamma_, k) / (gamma_ + 1);
}

void QuantileSketch::add(double value) {
  if (std::isnan(value)) return;
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  ++count_;
  if (value <= 0) {
    ++zeros_;
    return;
  }
  ++slot(key(value));
}

uint64_t& QuantileSketch::slot(int k) {
  if (buckets_.empty()) {
    offset_ = k;
    buckets_.assign(1, 0);
  } else if (k < offset_) {
    buckets_.insert(buckets_.begin(), static_cast<size_t>(offset_ - k), 0);
    offset_ = k;
  } else if (k >= offset_ + static_cast<int>(buckets_.size())) {
    buckets_.resize(static_cast<size_t>(k - offset_ + 1), 0);
  }
  return buckets_[static_cast<size_t>(k - offset_)];
}

void QuantileSketch::merge(const QuantileSketch& o) {
  if (o.count_ == 0) return;
  if (count_ == 0) {
    *this = o;
    return;
  }
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
  count_ += o.count_;
  zeros_ += o.zeros_;
  for (size_t i = 0; i < o.buckets_.size(); ++i) {
    if (o.buckets_[i] == 0) continue;
    slot(o.offset_ + static_cast<int>(i)) += o.buckets_[i];
  }
}

std::optional<double> QuantileSketch::quantile(double q) const {
  if (count_ == 0) return std::nullopt;
  q = std::clamp(q, 0.0, 1.0);
  if (q == 0) return min_;
  if (q == 1) return max_;
  // The rank of the q-quantile (nearest rank), counted from the bottom.
  const uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  uint64_t seen = zeros_;
  if (rank <= seen) return std::max(min_, 0.0);
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::clamp(value_of(offset_ + static_cast<int>(i)), min_, max_);
  }
  return max_;
}

void QuantileSketch::clear() {
  buckets_.clear();
  zeros_ = count_ = 0;
  min_ = max_ = 0;
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

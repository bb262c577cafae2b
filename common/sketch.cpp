#include "common/sketch.h"

#include <algorithm>
#include <cmath>

namespace medic {

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

}  // namespace medic

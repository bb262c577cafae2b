// A bounded-memory quantile sketch, shared by the prober (round-trip times) and the SLO
// report (stage times past what it keeps exactly).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace medic {

// A quantile sketch in the manner of DDSketch: values are counted in buckets whose
// boundaries grow geometrically, so every quantile is returned within `relative_error` of
// the true value, in memory logarithmic in the range, and sketches merge by adding buckets.
class QuantileSketch {
 public:
  explicit QuantileSketch(double relative_error = 0.01);
  void add(double value);  // values <= 0 are counted in a zero bucket
  void merge(const QuantileSketch& other);
  // q in [0, 1]; nullopt when empty.
  std::optional<double> quantile(double q) const;
  uint64_t count() const { return count_; }
  double min() const { return min_; }
  double max() const { return max_; }
  void clear();

 private:
  int key(double v) const;
  double value_of(int key) const;
  uint64_t& slot(int key);  // the bucket of `key`, made room for
  double gamma_, log_gamma_;
  int offset_ = 0;  // key of buckets_[0]
  std::vector<uint64_t> buckets_;
  uint64_t zeros_ = 0, count_ = 0;
  double min_ = 0, max_ = 0;
};

}  // namespace medic

// A strict parser for the Prometheus text exposition format (version 0.0.4): HELP and TYPE
// lines, label value escapes, optional millisecond timestamps, NaN and +/-Inf. Samples
// of histogram and summary families are reported with their family's type so callers can
// skip them. A malformed line fails the whole payload with "line N: what", as Prometheus
// itself does, so a half-parsed scrape never looks like a healthy one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/hash.h"
#include "common/result.h"

namespace medic::telemetry {

enum class MetricType : uint8_t { untyped, counter, gauge, histogram, summary };

struct Label {
  std::string_view name;
  std::string_view value;  // unescaped
};

struct PromSample {
  std::string_view name;
  std::span<const Label> labels;
  double value = 0;
  bool has_timestamp = false;
  int64_t timestamp_ms = 0;
  MetricType type = MetricType::untyped;  // type of the family the sample belongs to
  bool name_repeats = false;  // the sample before it, in the same payload, had the same name

  // Value of a label, or nullptr.
  const std::string_view* label(std::string_view label_name) const;
};

class PromSink {
 public:
  virtual ~PromSink() = default;
  virtual void on_sample(const PromSample& s) = 0;
};

struct PromStats {
  size_t lines = 0;
  size_t samples = 0;
  size_t skipped_histogram_summary = 0;
};

// Bounds on what one payload may cost: work stays linear in its bytes.
struct PromLimits {
  size_t max_labels_per_sample = 128;  // real exporters use a handful; 100,000 is an attack
};

class PromParser {
 public:
  explicit PromParser(PromLimits limits = {}) : limits_(limits) {}
  // Calls sink.on_sample for every sample; stops at the first malformed line. Label values
  // must be valid UTF-8 (the format's rule); anything quoted back in an error is escaped.
  Status parse(std::string_view text, PromSink& sink, PromStats* stats = nullptr);

 private:
  PromLimits limits_;
  std::vector<Label> labels_;
  std::vector<std::string_view> names_;  // for the duplicate check of large label sets
  std::vector<std::string> unescaped_;
  std::vector<uint8_t> needs_unescape_;
  StringMap<MetricType> types_;
  StringMap<bool> seen_samples_;  // families that already had samples (TYPE must precede them)
  std::string_view last_name_;    // the previous sample's name (points into the payload)
  MetricType last_type_ = MetricType::untyped;
};

// Parses a sample value as the format allows: decimal or exponent floats, NaN, +Inf, -Inf.
bool parse_prom_float(std::string_view s, double& out);

}  // namespace medic::telemetry

// Backoff for endpoints that fail: a device that failed n polls in a row is next tried
// after min(interval * 2^(n-1), max) so a dead switch does not cost a timeout every poll,
// and is tried again promptly once it answers.
#pragma once

#include <vector>

#include "common/time.h"

namespace medic::telemetry {

class Backoff {
 public:
  Backoff(size_t devices, Duration interval, Duration max_delay);

  bool due(size_t device, Time now) const { return now >= next_[device]; }
  void record(size_t device, bool ok, Time now);
  int failures(size_t device) const { return failures_[device]; }
  Time next_attempt(size_t device) const { return next_[device]; }

 private:
  Duration interval_, max_;
  std::vector<int> failures_;
  std::vector<Time> next_;
};

}  // namespace medic::telemetry

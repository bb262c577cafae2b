#include "telemetry/backoff.h"

#include <algorithm>

namespace medic::telemetry {

Backoff::Backoff(size_t devices, Duration interval, Duration max_delay)
    : interval_(interval), max_(std::max(interval, max_delay)), failures_(devices, 0), next_(devices, Time{}) {}

void Backoff::record(size_t device, bool ok, Time now) {
  if (ok) {
    failures_[device] = 0;
    next_[device] = Time{};
    return;
  }
  const int n = ++failures_[device];
  // The first failure is retried at the next poll; then the wait doubles.
  Duration delay = interval_;
  for (int i = 1; i < n && delay < max_; ++i) delay *= 2;
  next_[device] = now + std::min(delay, max_) - interval_ / 2;
}

}  // namespace medic::telemetry

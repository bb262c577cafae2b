// Time for the whole project. The core never reads a clock: callers pass `Time now`,
// and the shells get it from a Clock, which tests replace with a SimulatedClock.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace medic {

using Time = std::chrono::sys_time<std::chrono::microseconds>;
using Duration = std::chrono::microseconds;

// Two readings: the wall clock (what is recorded, what people and other hosts compare) and
// a monotonic one (how long something took, when a timer is due). The wall clock may be
// stepped, backwards or forwards (NTP, an operator); the monotonic one never is, so
// intervals and timers are measured on it.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time now() const = 0;
  // Time since an arbitrary fixed point; never goes backwards, never jumps.
  virtual Duration monotonic() const = 0;
};

class SystemClock final : public Clock {
 public:
  Time now() const override;
  Duration monotonic() const override;
};

// A clock that only moves when a test moves it.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(Time start) : now_(start) {}
  Time now() const override { return now_; }
  Duration monotonic() const override { return mono_; }
  // Time passes: both readings move.
  void advance(Duration d) {
    now_ += d;
    mono_ += d;
  }
  // The wall clock is set (stepped): the monotonic reading stays where it is.
  void set(Time t) { now_ = t; }
  void step(Duration d) { now_ += d; }

 private:
  Time now_;
  Duration mono_{0};
};

inline Time from_unix_seconds(double s) {
  return Time(Duration(std::llround(s * 1e6)));
}
inline double to_unix_seconds(Time t) { return t.time_since_epoch().count() / 1e6; }
inline double seconds(Duration d) { return d.count() / 1e6; }
inline Duration from_seconds(double s) { return Duration(std::llround(s * 1e6)); }

// 2026-11-21T16:14:03.123456Z
std::string format_iso8601(Time t);
// RFC 3339: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM); nullopt for anything else.
std::optional<Time> parse_iso8601(std::string_view s);
// "850ms", "12.4s", "3m07s", "2h05m", "3d04h"
std::string format_duration(Duration d);
// For short measured times: "52us", "1.25ms", "1.002s".
std::string format_short_seconds(double s);

// A time as people type it on a command line or in a query: "now"; "+90m" or "-7d" from
// `now` (s, m, h, d); seconds since the epoch; or ISO 8601 in UTC, "2026-11-01",
// "2026-11-01T08:00:00Z", "2026-11-01T08:00:00.5Z". nullopt for anything else, or a time
// no PostgreSQL timestamp holds.
std::optional<Time> parse_time_arg(const std::string& s, Time now);

}  // namespace medic

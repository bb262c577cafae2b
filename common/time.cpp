#include "common/time.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace medic {

Time SystemClock::now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

std::string format_iso8601(Time t) {
  const int64_t us = t.time_since_epoch().count();
  int64_t secs = us / 1000000;
  int64_t frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06" PRId64 "Z", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

std::string format_duration(Duration d) {
  char buf[48];
  const bool neg = d.count() < 0;
  const double s = (neg ? -d.count() : d.count()) / 1e6;
  const char* sign = neg ? "-" : "";
  if (s < 1.0) {
    std::snprintf(buf, sizeof buf, "%s%.0fms", sign, s * 1000.0);
  } else if (s < 60.0) {
    std::snprintf(buf, sizeof buf, "%s%.1fs", sign, s);
  } else if (s < 3600.0) {
    const auto whole = static_cast<int64_t>(s);
    std::snprintf(buf, sizeof buf, "%s%" PRId64 "m%02" PRId64 "s", sign, whole / 60, whole % 60);
  } else if (s < 86400.0) {
    const auto whole = static_cast<int64_t>(s);
    std::snprintf(buf, sizeof buf, "%s%" PRId64 "h%02" PRId64 "m", sign, whole / 3600,
                  (whole % 3600) / 60);
  } else {
    const auto whole = static_cast<int64_t>(s);
    std::snprintf(buf, sizeof buf, "%s%" PRId64 "d%02" PRId64 "h", sign, whole / 86400,
                  (whole % 86400) / 3600);
  }
  return buf;
}

}  // namespace medic

namespace medic {

std::string format_short_seconds(double s) {
  char buf[32];
  const double a = s < 0 ? -s : s;
  if (a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.0fus", s * 1e6);
  } else if (a < 1.0) {
    std::snprintf(buf, sizeof buf, "%.2fms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3fs", s);
  }
  return buf;
}

}  // namespace medic

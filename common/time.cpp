#include "common/time.h"

#include <charconv>

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace medic {

Time SystemClock::now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

Duration SystemClock::monotonic() const {
  return std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now().time_since_epoch());
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

namespace {

bool digits(std::string_view s, size_t at, size_t n, int& out) {
  if (at + n > s.size()) return false;
  out = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

std::optional<Time> parse_iso8601(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
  int year, month, day, hour, minute, second;
  if (s.size() < 20 || !digits(s, 0, 4, year) || s[4] != '-' || !digits(s, 5, 2, month) || s[7] != '-' ||
      !digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s, 11, 2, hour) ||
      s[13] != ':' || !digits(s, 14, 2, minute) || s[16] != ':' || !digits(s, 17, 2, second)) {
    return std::nullopt;
  }
  size_t i = 19;
  int64_t micros = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int n = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++n) {
      if (n < 6) micros = micros * 10 + (s[i] - '0');
    }
    if (n == 0) return std::nullopt;
    for (; n < 6; ++n) micros *= 10;
  }
  int offset_min = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om;
    if (!digits(s, i + 1, 2, oh) || i + 3 >= s.size() || s[i + 3] != ':' || !digits(s, i + 4, 2, om) || oh > 23 ||
        om > 59) {
      return std::nullopt;
    }
    offset_min = (s[i] == '-' ? -1 : 1) * (oh * 60 + om);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != s.size() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) return std::nullopt;
  const auto days = std::chrono::sys_days(ymd);
  const int64_t secs = int64_t(days.time_since_epoch().count()) * 86400 + hour * 3600 + minute * 60 + second -
                       int64_t(offset_min) * 60;
  return Time(Duration(secs * 1000000 + micros));
}

std::optional<Time> parse_time_arg(const std::string& s, Time now) {
  // Numbers must be finite and stay within what a Time (and PostgreSQL) holds: from_chars
  // also reads "inf".
  constexpr double kMaxSeconds = 9e12;
  if (s == "now") return now;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    double v = 0;
    const char* b = s.data() + 1;
    const char* e = s.data() + s.size();
    const auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || ptr + 1 != e || !(v >= 0)) return std::nullopt;
    const char unit = *ptr;
    const double mult = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : -1;
    if (mult < 0 || !(v * mult < kMaxSeconds)) return std::nullopt;
    return s[0] == '+' ? now + from_seconds(v * mult) : now - from_seconds(v * mult);
  }
  if (s.size() >= 10 && s[4] == '-' && s[7] == '-') {
    // YYYY-MM-DD (midnight UTC) or a full RFC 3339 time; none before 1970.
    const auto t = parse_iso8601(s.size() == 10 ? s + "T00:00:00Z" : s);
    if (!t || t->time_since_epoch().count() < 0) return std::nullopt;
    return t;
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !(v > 0 && v < kMaxSeconds)) return std::nullopt;
  return from_unix_seconds(v);
}

}  // namespace medic

#include "common/time.h"

#include <gtest/gtest.h>

namespace medic {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(FormatIso8601, ExactStrings) {
  EXPECT_EQ(format_iso8601(Time{}), "1970-01-01T00:00:00.000000Z");
  // A Friday afternoon in 2026.
  EXPECT_EQ(format_iso8601(Time(Duration(1795796043123456))), "2026-11-27T16:14:03.123456Z");
  EXPECT_EQ(format_iso8601(Time(Duration(951782400000001))), "2000-02-29T00:00:00.000001Z");
  EXPECT_EQ(format_iso8601(Time(Duration(-1))), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(format_iso8601(Time(Duration(-1000000))), "1969-12-31T23:59:59.000000Z");
}

TEST(FormatDuration, ExactStrings) {
  EXPECT_EQ(format_duration(Duration(0)), "0ms");
  EXPECT_EQ(format_duration(milliseconds(850)), "850ms");
  EXPECT_EQ(format_duration(Duration(1499)), "1ms");
  EXPECT_EQ(format_duration(seconds(1)), "1.0s");
  EXPECT_EQ(format_duration(milliseconds(12400)), "12.4s");
  EXPECT_EQ(format_duration(minutes(3) + seconds(7)), "3m07s");
  EXPECT_EQ(format_duration(minutes(1)), "1m00s");
  EXPECT_EQ(format_duration(minutes(59) + seconds(59) + milliseconds(900)), "59m59s");
  EXPECT_EQ(format_duration(hours(2) + minutes(5)), "2h05m");
  EXPECT_EQ(format_duration(hours(23) + minutes(59) + seconds(59)), "23h59m");
  EXPECT_EQ(format_duration(hours(24 * 3 + 4)), "3d04h");
  EXPECT_EQ(format_duration(hours(24 * 400)), "400d00h");
  EXPECT_EQ(format_duration(-milliseconds(1500)), "-1.5s");
  EXPECT_EQ(format_duration(-milliseconds(20)), "-20ms");
  EXPECT_EQ(format_duration(-(minutes(3) + seconds(7))), "-3m07s");
}

TEST(TimeConversions, SecondsRoundTrip) {
  EXPECT_EQ(from_unix_seconds(1.5).time_since_epoch(), Duration(1500000));
  EXPECT_DOUBLE_EQ(to_unix_seconds(Time(Duration(2500000))), 2.5);
  EXPECT_EQ(from_seconds(0.25), Duration(250000));
  EXPECT_DOUBLE_EQ(medic::seconds(Duration(1750000)), 1.75);
  EXPECT_EQ(from_seconds(-2.0), Duration(-2000000));
}

TEST(TimeConversions, DecimalSecondsAreNotTruncatedBelowTheMicrosecond) {
  // 2.01 * 1e6 is 2009999.9999999998 in binary floating point.
  EXPECT_EQ(from_seconds(2.01), Duration(2010000));
  EXPECT_EQ(from_seconds(4.35), Duration(4350000));
  EXPECT_EQ(from_unix_seconds(1700000000.01).time_since_epoch(), Duration(1700000000010000));
  for (int cs = 0; cs < 100000; ++cs) {
    ASSERT_EQ(from_seconds(cs / 100.0), Duration(int64_t{cs} * 10000)) << cs / 100.0;
  }
}

TEST(SimulatedClock, MovesOnlyWhenTold) {
  SimulatedClock c(from_unix_seconds(100));
  EXPECT_EQ(c.now(), from_unix_seconds(100));
  EXPECT_EQ(c.now(), from_unix_seconds(100));
  c.advance(milliseconds(250));
  EXPECT_EQ(c.now(), from_unix_seconds(100.25));
  c.set(from_unix_seconds(5));
  EXPECT_EQ(c.now(), from_unix_seconds(5));
  const Clock& base = c;
  EXPECT_EQ(base.now(), from_unix_seconds(5));
}

TEST(SimulatedClock, AStepMovesTheWallClockOnlyAndTimePassingMovesBoth) {
  SimulatedClock c(from_unix_seconds(100));
  c.advance(seconds(2));
  EXPECT_EQ(c.monotonic(), seconds(2));
  c.step(-std::chrono::hours(1));
  EXPECT_EQ(c.now(), from_unix_seconds(102 - 3600));
  EXPECT_EQ(c.monotonic(), seconds(2));
  c.set(from_unix_seconds(5));
  EXPECT_EQ(c.monotonic(), seconds(2));
}

TEST(SystemClock, MonotonicNeverGoesBack) {
  const SystemClock c;
  const Duration a = c.monotonic();
  EXPECT_GE(c.monotonic(), a);
}

TEST(SystemClock, IsAfter2020) {
  EXPECT_GT(SystemClock().now(), from_unix_seconds(1577836800));
}

}  // namespace
}  // namespace medic

#include "telemetry/tracker.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace medic::telemetry {
namespace {

constexpr double k2p32 = 4294967296.0;
constexpr double k2p64 = 18446744073709551616.0;
const Time kT0 = from_unix_seconds(1'800'000'000);

Time at(int seconds) { return kT0 + std::chrono::seconds(seconds); }

PortSample sample(fabric::PortId port, Time t) {
  PortSample s;
  s.port = port;
  s.time = t;
  return s;
}

// ---------------------------------------------------------------------------------------
// counter_increase

TEST(CounterIncrease, GrowthIsTheDifference) {
  double inc = -1;
  bool wrapped = true;
  EXPECT_TRUE(counter_increase(100, 250, inc, wrapped));
  EXPECT_EQ(inc, 150.0);
  EXPECT_FALSE(wrapped);
}

TEST(CounterIncrease, UnchangedIsZero) {
  double inc = -1;
  bool wrapped = true;
  EXPECT_TRUE(counter_increase(7, 7, inc, wrapped));
  EXPECT_EQ(inc, 0.0);
  EXPECT_FALSE(wrapped);
  EXPECT_TRUE(counter_increase(0, 0, inc, wrapped));
  EXPECT_EQ(inc, 0.0);
}

TEST(CounterIncrease, Wrap32) {
  double inc = 0;
  bool wrapped = false;
  EXPECT_TRUE(counter_increase(k2p32 - 296, 200, inc, wrapped));
  EXPECT_EQ(inc, 496.0);
  EXPECT_TRUE(wrapped);
  // From the very top to zero is one step.
  EXPECT_TRUE(counter_increase(k2p32 - 1, 0, inc, wrapped));
  EXPECT_EQ(inc, 1.0);
  EXPECT_TRUE(wrapped);
}

TEST(CounterIncrease, Wrap32Boundaries) {
  double inc = 0;
  bool wrapped = false;
  // prev exactly at 3/4 of the 32-bit range: still a wrap.
  EXPECT_TRUE(counter_increase(0.75 * k2p32, 0, inc, wrapped));
  EXPECT_EQ(inc, 0.25 * k2p32);
  EXPECT_TRUE(wrapped);
  // prev just below 3/4: a reset.
  EXPECT_FALSE(counter_increase(0.75 * k2p32 - 1, 0, inc, wrapped));
  EXPECT_FALSE(wrapped);
  EXPECT_EQ(inc, 0.0);
  // cur at 1/4 of the range is too high to have wrapped: a reset.
  EXPECT_FALSE(counter_increase(k2p32 - 1, 0.25 * k2p32, inc, wrapped));
  // cur just below 1/4: a wrap.
  EXPECT_TRUE(counter_increase(k2p32 - 1, 0.25 * k2p32 - 1, inc, wrapped));
  EXPECT_EQ(inc, 0.25 * k2p32);
  // prev at 2^32 cannot be a 32-bit counter, and is far below the 64-bit top: a reset.
  EXPECT_FALSE(counter_increase(k2p32, 0, inc, wrapped));
}

TEST(CounterIncrease, Wrap64) {
  double inc = 0;
  bool wrapped = false;
  // Near 2^64 doubles are 2048 apart; 2^64 - 12288 is exact.
  EXPECT_TRUE(counter_increase(k2p64 - 12288, 5000, inc, wrapped));
  EXPECT_EQ(inc, 17288.0);
  EXPECT_TRUE(wrapped);
  EXPECT_TRUE(counter_increase(0.75 * k2p64, 0, inc, wrapped));
  EXPECT_EQ(inc, 0.25 * k2p64);
  EXPECT_TRUE(wrapped);
  EXPECT_FALSE(counter_increase(0.5 * k2p64, 0, inc, wrapped));
  EXPECT_FALSE(wrapped);
  EXPECT_FALSE(counter_increase(k2p64 - 12288, 0.25 * k2p64, inc, wrapped));
}

TEST(CounterIncrease, ResetIsUnknownNotGuessed) {
  double inc = -1;
  bool wrapped = true;
  EXPECT_FALSE(counter_increase(1'000'000, 10, inc, wrapped));
  EXPECT_EQ(inc, 0.0);
  EXPECT_FALSE(wrapped);
  EXPECT_FALSE(counter_increase(1, 0, inc, wrapped));
}

// ---------------------------------------------------------------------------------------
// CounterTracker

TEST(CounterTracker, FirstSampleYieldsOnlyGauges) {
  CounterTracker tr(4);
  PortSample s = sample(2, at(0));
  s.set(Counter::oper_up, 1);
  s.set(Counter::rx_power_dbm, -3.5);
  s.set(Counter::rx_packets, 1000);
  s.set(Counter::carrier_changes, 4);
  const PortDelta d = tr.observe(s);
  EXPECT_EQ(d.port, 2u);
  EXPECT_EQ(d.time, at(0));
  EXPECT_EQ(d.interval, Duration::zero());
  EXPECT_FALSE(d.counters_reset);
  EXPECT_EQ(d.present, bit(Counter::oper_up) | bit(Counter::rx_power_dbm));
  EXPECT_EQ(d.get(Counter::oper_up), 1.0);
  EXPECT_EQ(d.get(Counter::rx_power_dbm), -3.5);
  EXPECT_FALSE(d.has(Counter::rx_packets));
  EXPECT_FALSE(d.has(Counter::carrier_changes));
}

TEST(CounterTracker, DeltasBetweenSamples) {
  CounterTracker tr(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, 1000);
  a.set(Counter::tx_bytes, 5e12);
  a.set(Counter::carrier_changes, 4);
  a.set(Counter::temperature_c, 40);
  tr.observe(a);
  PortSample b = sample(0, at(10));
  b.set(Counter::rx_packets, 1600);
  b.set(Counter::tx_bytes, 5e12 + 4096);
  b.set(Counter::carrier_changes, 4);
  b.set(Counter::temperature_c, 42);
  const PortDelta d = tr.observe(b);
  EXPECT_EQ(d.interval, std::chrono::seconds(10));
  EXPECT_FALSE(d.counters_reset);
  EXPECT_EQ(d.get(Counter::rx_packets), 600.0);
  EXPECT_EQ(d.get(Counter::tx_bytes), 4096.0);
  EXPECT_TRUE(d.has(Counter::carrier_changes));
  EXPECT_EQ(d.get(Counter::carrier_changes), 0.0);
  EXPECT_EQ(d.get(Counter::temperature_c), 42.0);  // gauges are the latest reading
  EXPECT_EQ(d.present, bit(Counter::rx_packets) | bit(Counter::tx_bytes) | bit(Counter::carrier_changes) |
                           bit(Counter::temperature_c));
  EXPECT_EQ(tr.resets(), 0u);
  EXPECT_EQ(tr.wraps(), 0u);

  PortSample c = sample(0, at(25));
  c.set(Counter::rx_packets, 1700);
  const PortDelta d2 = tr.observe(c);
  EXPECT_EQ(d2.interval, std::chrono::seconds(15));
  EXPECT_EQ(d2.get(Counter::rx_packets), 100.0);
  EXPECT_EQ(d2.present, bit(Counter::rx_packets));
}

TEST(CounterTracker, CounterNewInThisSampleHasNoDeltaYet) {
  CounterTracker tr(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, 10);
  tr.observe(a);
  PortSample b = sample(0, at(10));
  b.set(Counter::rx_packets, 20);
  b.set(Counter::rx_crc_errors, 5);
  const PortDelta d = tr.observe(b);
  EXPECT_TRUE(d.has(Counter::rx_packets));
  EXPECT_FALSE(d.has(Counter::rx_crc_errors));
  PortSample c = sample(0, at(20));
  c.set(Counter::rx_packets, 30);
  c.set(Counter::rx_crc_errors, 8);
  EXPECT_EQ(tr.observe(c).get(Counter::rx_crc_errors), 3.0);
}

TEST(CounterTracker, DeviceRebootIsAResetNotASpike) {
  CounterTracker tr(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, 9'000'000);
  a.set(Counter::rx_crc_errors, 500);
  a.set(Counter::oper_up, 1);
  tr.observe(a);
  // The switch restarted: its counters start again near zero.
  PortSample b = sample(0, at(10));
  b.set(Counter::rx_packets, 1200);
  b.set(Counter::rx_crc_errors, 0);
  b.set(Counter::oper_up, 1);
  const PortDelta d = tr.observe(b);
  EXPECT_TRUE(d.counters_reset);
  EXPECT_FALSE(d.has(Counter::rx_packets));
  EXPECT_FALSE(d.has(Counter::rx_crc_errors));
  EXPECT_TRUE(d.has(Counter::oper_up));
  EXPECT_EQ(d.present, bit(Counter::oper_up));
  for (size_t i = 0; i < kCounterCount; ++i) {
    if (!is_gauge(static_cast<Counter>(i))) {
      EXPECT_EQ(d.v[i], 0.0) << to_string(static_cast<Counter>(i));
    }
  }
  EXPECT_EQ(tr.resets(), 1u);
  EXPECT_EQ(tr.wraps(), 0u);

  // The sample after the reset is the new baseline.
  PortSample c = sample(0, at(20));
  c.set(Counter::rx_packets, 2200);
  c.set(Counter::rx_crc_errors, 1);
  const PortDelta d2 = tr.observe(c);
  EXPECT_FALSE(d2.counters_reset);
  EXPECT_EQ(d2.get(Counter::rx_packets), 1000.0);
  EXPECT_EQ(d2.get(Counter::rx_crc_errors), 1.0);
  EXPECT_EQ(tr.resets(), 1u);
}

TEST(CounterTracker, ResetOfOneCounterCountsOnce) {
  CounterTracker tr(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, 500);
  a.set(Counter::tx_packets, 500);
  tr.observe(a);
  PortSample b = sample(0, at(10));
  b.set(Counter::rx_packets, 5);
  b.set(Counter::tx_packets, 6);
  EXPECT_TRUE(tr.observe(b).counters_reset);
  EXPECT_EQ(tr.resets(), 1u);  // one reset event, however many counters went back
}

TEST(CounterTracker, Wrap32GivesTheRightIncrease) {
  CounterTracker tr(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, k2p32 - 100);
  tr.observe(a);
  PortSample b = sample(0, at(10));
  b.set(Counter::rx_packets, 400);
  const PortDelta d = tr.observe(b);
  EXPECT_FALSE(d.counters_reset);
  EXPECT_EQ(d.get(Counter::rx_packets), 500.0);
  EXPECT_EQ(tr.wraps(), 1u);
  EXPECT_EQ(tr.resets(), 0u);
}

TEST(CounterTracker, Wrap64GivesTheRightIncrease) {
  CounterTracker tr(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_bytes, k2p64 - 4096);
  tr.observe(a);
  PortSample b = sample(0, at(10));
  b.set(Counter::rx_bytes, 1000);
  const PortDelta d = tr.observe(b);
  EXPECT_FALSE(d.counters_reset);
  EXPECT_EQ(d.get(Counter::rx_bytes), 5096.0);
  EXPECT_EQ(tr.wraps(), 1u);
}

TEST(CounterTracker, NaNIsIgnored) {
  CounterTracker tr(1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, 100);
  a.set(Counter::tx_packets, nan);
  a.set(Counter::rx_power_dbm, nan);
  const PortDelta d0 = tr.observe(a);
  EXPECT_FALSE(d0.has(Counter::rx_power_dbm));  // a NaN gauge is not a reading

  PortSample b = sample(0, at(10));
  b.set(Counter::rx_packets, nan);
  b.set(Counter::tx_packets, 50);
  b.set(Counter::rx_power_dbm, -2);
  const PortDelta d = tr.observe(b);
  EXPECT_FALSE(d.counters_reset);
  EXPECT_FALSE(d.has(Counter::rx_packets));  // NaN now
  EXPECT_FALSE(d.has(Counter::tx_packets));  // NaN before
  EXPECT_TRUE(d.has(Counter::rx_power_dbm));
  EXPECT_EQ(d.get(Counter::rx_power_dbm), -2.0);
  for (size_t i = 0; i < kCounterCount; ++i) EXPECT_FALSE(std::isnan(d.v[i]));

  PortSample c = sample(0, at(20));
  c.set(Counter::rx_packets, 300);
  c.set(Counter::tx_packets, 80);
  const PortDelta d2 = tr.observe(c);
  EXPECT_FALSE(d2.counters_reset);
  EXPECT_EQ(d2.get(Counter::tx_packets), 30.0);
  EXPECT_EQ(tr.resets(), 0u);
}

TEST(CounterTracker, OlderSampleDoesNotMoveTheBaseline) {
  CounterTracker tr(1);
  PortSample a = sample(0, at(10));
  a.set(Counter::rx_packets, 100);
  tr.observe(a);
  PortSample b = sample(0, at(20));
  b.set(Counter::rx_packets, 200);
  EXPECT_EQ(tr.observe(b).get(Counter::rx_packets), 100.0);

  // A late sample from before the baseline: gauges only, and nothing moves.
  PortSample late = sample(0, at(15));
  late.set(Counter::rx_packets, 150);
  late.set(Counter::oper_up, 0);
  const PortDelta dl = tr.observe(late);
  EXPECT_EQ(dl.present, bit(Counter::oper_up));
  EXPECT_FALSE(dl.counters_reset);
  EXPECT_EQ(dl.interval, Duration::zero());

  // A duplicate of the baseline's time is no newer either.
  PortSample dup = sample(0, at(20));
  dup.set(Counter::rx_packets, 10);
  const PortDelta dd = tr.observe(dup);
  EXPECT_EQ(dd.present, 0u);
  EXPECT_FALSE(dd.counters_reset);

  PortSample c = sample(0, at(30));
  c.set(Counter::rx_packets, 300);
  const PortDelta d = tr.observe(c);
  EXPECT_EQ(d.get(Counter::rx_packets), 100.0);  // from the t=20 baseline
  EXPECT_EQ(d.interval, std::chrono::seconds(10));
  EXPECT_EQ(tr.resets(), 0u);
}

TEST(CounterTracker, PortsAreIndependent) {
  CounterTracker tr(2);
  PortSample a0 = sample(0, at(0)), a1 = sample(1, at(0));
  a0.set(Counter::rx_packets, 10);
  a1.set(Counter::rx_packets, 1000);
  tr.observe(a0);
  tr.observe(a1);
  PortSample b0 = sample(0, at(10)), b1 = sample(1, at(10));
  b0.set(Counter::rx_packets, 15);
  b1.set(Counter::rx_packets, 1100);
  EXPECT_EQ(tr.observe(b0).get(Counter::rx_packets), 5.0);
  EXPECT_EQ(tr.observe(b1).get(Counter::rx_packets), 100.0);
}

TEST(CounterTracker, ForgetStartsThePortAfresh) {
  CounterTracker tr(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, 100);
  tr.observe(a);
  tr.forget(0);
  tr.forget(99);  // out of range: harmless
  PortSample b = sample(0, at(600));
  b.set(Counter::rx_packets, 50);
  const PortDelta d = tr.observe(b);
  EXPECT_FALSE(d.counters_reset);
  EXPECT_EQ(d.present, 0u);
  EXPECT_EQ(tr.resets(), 0u);
  PortSample c = sample(0, at(610));
  c.set(Counter::rx_packets, 70);
  EXPECT_EQ(tr.observe(c).get(Counter::rx_packets), 20.0);
}

TEST(CounterTracker, UnknownPortYieldsAnEmptyDelta) {
  CounterTracker tr(1);
  PortSample s = sample(5, at(0));
  s.set(Counter::oper_up, 1);
  const PortDelta d = tr.observe(s);
  EXPECT_EQ(d.port, 5u);
  EXPECT_EQ(d.present, 0u);
}

}  // namespace
}  // namespace medic::telemetry

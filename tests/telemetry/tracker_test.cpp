#include "telemetry/tracker.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/support/epoch.h"

namespace medic::telemetry {
namespace {

constexpr double k2p32 = 4294967296.0;
constexpr double k2p64 = 18446744073709551616.0;

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

// A restart sets counters back once, then they rise; counters that go back sample after
// sample with no rise between are the telemetry lying (tests/e2e/hostile_telemetry_test.cpp):
// implausible from the kRebaselineAfter-th in a row, and never a delta.
TEST(CounterTracker, CountersGoingBackSampleAfterSampleAreImplausible) {
  CounterTracker tr(1);
  double packets = 1'000'000;
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, packets);
  a.set(Counter::rx_crc_errors, 0);
  EXPECT_FALSE(tr.observe(a).went_back);
  for (int i = 1; i <= CounterTracker::kRebaselineAfter + 1; ++i) {
    packets *= 0.97;
    PortSample b = sample(0, at(i));
    b.set(Counter::rx_packets, packets);
    b.set(Counter::rx_crc_errors, 0);
    const PortDelta d = tr.observe(b);
    EXPECT_TRUE(d.counters_reset) << i;
    EXPECT_FALSE(d.has(Counter::rx_packets)) << i;
    EXPECT_EQ(d.went_back, i >= CounterTracker::kRebaselineAfter) << i;
    EXPECT_EQ(d.implausible, i >= CounterTracker::kRebaselineAfter ? bit(Counter::rx_packets) : 0u) << i;
    if (d.went_back) {
      EXPECT_EQ(d.implausible_value, packets);
    }
  }
  // Rising again: a sound delta, and going back once more starts the count afresh.
  PortSample c = sample(0, at(10));
  c.set(Counter::rx_packets, packets + 500);
  const PortDelta d = tr.observe(c);
  EXPECT_FALSE(d.went_back);
  EXPECT_EQ(d.get(Counter::rx_packets), 500.0);
  PortSample e = sample(0, at(11));
  e.set(Counter::rx_packets, 10);
  EXPECT_FALSE(tr.observe(e).went_back);
}

TEST(CounterTracker, ARestartIsNeverCountersGoingBack) {
  CounterTracker tr(1);
  for (int restart = 0; restart < 3; ++restart) {
    for (int i = 0; i < 3; ++i) {
      PortSample s = sample(0, at(restart * 10 + i));
      s.set(Counter::rx_packets, 1000.0 * (i + 1) + (restart == 0 ? 1e6 : 0));
      const PortDelta d = tr.observe(s);
      EXPECT_FALSE(d.went_back);
      EXPECT_EQ(d.implausible, 0u);
    }
  }
  EXPECT_EQ(tr.resets(), 2u);
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
  // The counter climbs to near the top soundly first: a 64-bit wrap is only believed from
  // a baseline a rise led to (NoWrapFromABaselineNoSoundRiseLedTo).
  CounterTracker tr(1);
  PortSample z = sample(0, at(-10));
  z.set(Counter::rx_bytes, k2p64 - 8192);
  tr.observe(z);
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

// ---------------------------------------------------------------------------------------
// Implausible values: a rise no link can make, a value no counter can hold.

// Every monotonic counter: a 400 Gb/s port's counter jumping by 2^64 (or to 1e308) in one
// second is left out, never becomes the baseline, and the next sound sample resumes the
// counting without a spike.
TEST(CounterTracker, ARiseNoLinkCanMakeIsLeftOutForEveryCounter) {
  for (size_t i = 0; i < kCounterCount; ++i) {
    const auto c = static_cast<Counter>(i);
    if (is_gauge(c)) continue;
    for (const double absurd : {k2p64, 1e308, 1e15}) {
      CounterTracker t(std::vector<double>{400.0});
      PortSample a = sample(0, at(0));
      a.set(c, 4);
      t.observe(a);
      PortSample b = sample(0, at(1));
      b.set(c, absurd);
      const PortDelta db = t.observe(b);
      EXPECT_FALSE(db.has(c)) << to_string(c) << " " << absurd;
      EXPECT_EQ(db.implausible, bit(c)) << to_string(c) << " " << absurd;
      EXPECT_EQ(db.implausible_value, absurd);
      EXPECT_FALSE(db.counters_reset) << to_string(c);
      // Back to sound values: one interval without a delta (the gap spans the bad sample),
      // then deltas as before.
      PortSample c2 = sample(0, at(2));
      c2.set(c, 5);
      const PortDelta d2 = t.observe(c2);
      EXPECT_FALSE(d2.has(c)) << to_string(c);
      EXPECT_EQ(d2.implausible, 0u);
      EXPECT_FALSE(d2.counters_reset) << to_string(c) << ": not a reset either";
      PortSample c3 = sample(0, at(3));
      c3.set(c, 6);
      const PortDelta d3 = t.observe(c3);
      ASSERT_TRUE(d3.has(c)) << to_string(c);
      EXPECT_EQ(d3.get(c), 1.0) << to_string(c);
    }
  }
}

TEST(CounterTracker, WhatALinkCanDoIsNotImplausible) {
  // A 400 Gb/s port at line rate for 10 s: bytes, minimum-size frames, every bit corrected.
  CounterTracker t(std::vector<double>{400.0});
  PortSample a = sample(0, at(0));
  for (Counter c : {Counter::tx_bytes, Counter::rx_packets, Counter::fec_corrected_bits, Counter::carrier_changes}) a.set(c, 0);
  t.observe(a);
  PortSample b = sample(0, at(10));
  b.set(Counter::tx_bytes, 400e9 / 8 * 10);
  b.set(Counter::rx_packets, 400e9 / (84 * 8) * 10);
  b.set(Counter::fec_corrected_bits, 400e9 * 10);
  b.set(Counter::carrier_changes, 50);
  const PortDelta d = t.observe(b);
  EXPECT_EQ(d.implausible, 0u);
  EXPECT_EQ(d.get(Counter::tx_bytes), 400e9 / 8 * 10);
  EXPECT_EQ(d.get(Counter::carrier_changes), 50.0);
  // A slower port has a lower bound: 50 Gb/s of bytes in 1 s from a 10 Gb/s port is not.
  CounterTracker slow(std::vector<double>{10.0});
  PortSample s0 = sample(0, at(0));
  s0.set(Counter::rx_bytes, 0);
  slow.observe(s0);
  PortSample s1 = sample(0, at(1));
  s1.set(Counter::rx_bytes, 50e9 / 8 * 10);
  EXPECT_EQ(slow.observe(s1).implausible, bit(Counter::rx_bytes));
}

TEST(CounterTracker, ACounterThatKeepsReportingFromThereStartsAfresh) {
  CounterTracker t(std::vector<double>{400.0});
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_crc_errors, 10);
  t.observe(a);
  for (int i = 1; i < CounterTracker::kRebaselineAfter; ++i) {
    PortSample b = sample(0, at(i));
    b.set(Counter::rx_crc_errors, 1e13 + i);
    EXPECT_EQ(t.observe(b).implausible, bit(Counter::rx_crc_errors)) << i;
  }
  // The third in a row: the counter really jumped (a firmware bug, a hand-set counter).
  PortSample c = sample(0, at(CounterTracker::kRebaselineAfter));
  c.set(Counter::rx_crc_errors, 1e13 + 3);
  EXPECT_EQ(t.observe(c).implausible, bit(Counter::rx_crc_errors));
  EXPECT_EQ(t.rebaselines(), 1u);
  PortSample d = sample(0, at(CounterTracker::kRebaselineAfter + 1));
  d.set(Counter::rx_crc_errors, 1e13 + 5);
  const PortDelta dd = t.observe(d);
  EXPECT_EQ(dd.implausible, 0u);
  EXPECT_EQ(dd.get(Counter::rx_crc_errors), 2.0);
}

TEST(CounterTracker, AnAbsurdFirstValueIsNeverABaseline) {
  CounterTracker t(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::carrier_changes, 1e308);
  EXPECT_EQ(t.observe(a).implausible, bit(Counter::carrier_changes));
  PortSample b = sample(0, at(1));
  b.set(Counter::carrier_changes, 4);
  const PortDelta d = t.observe(b);
  EXPECT_FALSE(d.has(Counter::carrier_changes));  // the first sound value is the baseline
  EXPECT_FALSE(d.counters_reset);
  PortSample c = sample(0, at(2));
  c.set(Counter::carrier_changes, 4);
  EXPECT_EQ(t.observe(c).get(Counter::carrier_changes), 0.0);
}

TEST(CounterTracker, EveryGaugeHasItsPhysicalRange) {
  for (size_t i = 0; i < kCounterCount; ++i) {
    const auto c = static_cast<Counter>(i);
    if (!is_gauge(c)) continue;
    for (const double absurd : {1e308, -1e308}) {
      CounterTracker t(1);
      PortSample a = sample(0, at(0));
      a.set(c, absurd);
      const PortDelta d = t.observe(a);
      EXPECT_EQ(d.implausible, bit(c)) << to_string(c) << " " << absurd;
      EXPECT_FALSE(d.has(c)) << to_string(c);
    }
  }
}

TEST(CounterTracker, NegativeCountersAndGaugesOutOfRangeAreImplausible) {
  CounterTracker t(1);
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_packets, -5);
  a.set(Counter::rx_power_dbm, 1e308);
  a.set(Counter::temperature_c, -300);
  a.set(Counter::pre_fec_ber, 2);
  a.set(Counter::oper_up, 7);
  a.set(Counter::laser_bias_ma, -1);
  a.set(Counter::tx_power_dbm, -std::numeric_limits<double>::infinity());  // no light: a real reading
  const PortDelta d = t.observe(a);
  EXPECT_EQ(d.implausible, bit(Counter::rx_packets) | bit(Counter::rx_power_dbm) | bit(Counter::temperature_c) |
                               bit(Counter::pre_fec_ber) | bit(Counter::oper_up) | bit(Counter::laser_bias_ma));
  EXPECT_TRUE(d.has(Counter::tx_power_dbm));
  EXPECT_FALSE(d.has(Counter::rx_power_dbm));
  EXPECT_EQ(t.implausible(), 6u);
}

TEST(CounterTracker, ResetsAndWrapsStillWorkBesideTheBounds) {
  // A 32-bit counter wrapping on a 1 Gb/s port, and a reboot: neither is implausible.
  CounterTracker t(std::vector<double>{1.0});
  PortSample a = sample(0, at(0));
  a.set(Counter::rx_bytes, k2p32 - 1000);
  t.observe(a);
  PortSample b = sample(0, at(1));
  b.set(Counter::rx_bytes, 500);
  const PortDelta d = t.observe(b);
  EXPECT_EQ(d.implausible, 0u);
  EXPECT_EQ(d.get(Counter::rx_bytes), 1500.0);
  PortSample c = sample(0, at(2));
  c.set(Counter::rx_bytes, 10);
  const PortDelta r = t.observe(c);
  EXPECT_TRUE(r.counters_reset);
  EXPECT_EQ(r.implausible, 0u);
}

TEST(MaxIncrease, GrowsWithTheIntervalAndTheSpeed) {
  EXPECT_LT(max_increase(Counter::rx_bytes, 100, std::chrono::seconds(1)),
            max_increase(Counter::rx_bytes, 400, std::chrono::seconds(1)));
  EXPECT_LT(max_increase(Counter::rx_bytes, 400, std::chrono::seconds(1)),
            max_increase(Counter::rx_bytes, 400, std::chrono::seconds(60)));
  // Unknown speed: the bound of the fastest ports there are.
  EXPECT_EQ(max_increase(Counter::tx_packets, 0, std::chrono::seconds(1)),
            max_increase(Counter::tx_packets, 1600, std::chrono::seconds(1)));
  EXPECT_TRUE(std::isinf(max_increase(Counter::rx_power_dbm, 400, std::chrono::seconds(1))));
}

// 2^64 - 1 (a double rounds it to 2^64) as a port's first value, or as a value it jumped to
// and kept: a 64-bit wrap from there is not believed, so the next sound value is not
// counted whole (240 flaps from one bogus sample would drain the link).
TEST(CounterTracker, NoWrapFromABaselineNoSoundRiseLedTo) {
  const double top = 18446744073709551615.0;  // rounds to 2^64
  {
    CounterTracker t(std::vector<double>{400.0});
    PortSample a = sample(0, at(0));
    a.set(Counter::carrier_changes, top);
    const PortDelta da = t.observe(a);
    EXPECT_EQ(da.implausible, bit(Counter::carrier_changes));  // 2^64 is no 64-bit value
    PortSample b = sample(0, at(1));
    b.set(Counter::carrier_changes, 240);
    EXPECT_FALSE(t.observe(b).has(Counter::carrier_changes));
  }
  {
    // Near the top but representable, as a first value: the next small one is a restart.
    CounterTracker t(std::vector<double>{400.0});
    PortSample a = sample(0, at(0));
    a.set(Counter::carrier_changes, 0.9 * k2p64);
    EXPECT_EQ(t.observe(a).implausible, 0u);
    PortSample b = sample(0, at(1));
    b.set(Counter::carrier_changes, 240);
    const PortDelta d = t.observe(b);
    EXPECT_FALSE(d.has(Counter::carrier_changes));
    EXPECT_TRUE(d.counters_reset);
    EXPECT_EQ(t.wraps(), 0u);
  }
  {
    // Jumped up there three times in a row (a real jump is believed), then back: a restart.
    CounterTracker t(std::vector<double>{400.0});
    PortSample a = sample(0, at(0));
    a.set(Counter::carrier_changes, 5);
    t.observe(a);
    for (int i = 1; i <= CounterTracker::kRebaselineAfter; ++i) {
      PortSample j = sample(0, at(i));
      j.set(Counter::carrier_changes, 0.9 * k2p64);
      EXPECT_EQ(t.observe(j).implausible, bit(Counter::carrier_changes)) << i;
    }
    PortSample b = sample(0, at(10));
    b.set(Counter::carrier_changes, 241);
    const PortDelta d = t.observe(b);
    EXPECT_FALSE(d.has(Counter::carrier_changes));
    EXPECT_EQ(t.wraps(), 0u);
  }
  {
    // A real wrap is still counted: the counter climbed there soundly.
    CounterTracker t(std::vector<double>{400.0});
    PortSample a = sample(0, at(0));
    a.set(Counter::tx_bytes, k2p64 - 4096.0 * 1024 * 1024);
    t.observe(a);
    PortSample b = sample(0, at(1));
    b.set(Counter::tx_bytes, k2p64 - 2048.0 * 1024 * 1024);
    EXPECT_TRUE(t.observe(b).has(Counter::tx_bytes));
    PortSample c = sample(0, at(2));
    c.set(Counter::tx_bytes, 1024.0 * 1024 * 1024);
    const PortDelta d = t.observe(c);
    ASSERT_TRUE(d.has(Counter::tx_bytes));
    EXPECT_EQ(d.get(Counter::tx_bytes), 3072.0 * 1024 * 1024);
    EXPECT_EQ(t.wraps(), 1u);
  }
}

TEST(CounterTracker, ThousandsOfFlapsInAPollAreImplausible) {
  CounterTracker t(std::vector<double>{400.0});
  PortSample a = sample(0, at(0));
  a.set(Counter::carrier_changes, 4);
  t.observe(a);
  PortSample b = sample(0, at(10));
  b.set(Counter::carrier_changes, 5004);
  EXPECT_EQ(t.observe(b).implausible, bit(Counter::carrier_changes));
}

// A sample taken `mono_s` seconds into the monotonic clock, at wall time `wall`.
PortSample stamped(Time wall, int mono_s, double rx_packets) {
  PortSample s = sample(0, wall);
  s.mono = std::chrono::seconds(mono_s);
  s.set(Counter::rx_packets, rx_packets);
  return s;
}

TEST(CounterTracker, AWallClockStepBackDoesNotFreezeTheDeltas) {
  CounterTracker t(std::vector<double>{400.0});
  t.observe(stamped(at(3600), 100, 1000));
  // NTP sets the clock back an hour between two polls one second apart.
  const PortDelta d = t.observe(stamped(at(1), 101, 1500));
  ASSERT_TRUE(d.has(Counter::rx_packets));
  EXPECT_EQ(d.get(Counter::rx_packets), 500.0);
  EXPECT_EQ(d.interval, std::chrono::seconds(1));
  EXPECT_EQ(d.time, at(1));  // what is recorded is still the wall time
  const PortDelta e = t.observe(stamped(at(2), 102, 1700));
  EXPECT_EQ(e.get(Counter::rx_packets), 200.0);
}

TEST(CounterTracker, AWallClockStepForwardDoesNotStretchTheInterval) {
  CounterTracker t(std::vector<double>{400.0});
  PortSample a = stamped(at(0), 50, 0);
  a.set(Counter::carrier_changes, 4);
  t.observe(a);
  // Two hours forward on the wall, one second on the monotonic clock: a thousand flaps
  // could fit two hours, not one second.
  PortSample b = stamped(at(7201), 51, 10);
  b.set(Counter::carrier_changes, 1004);
  const PortDelta d = t.observe(b);
  EXPECT_EQ(d.interval, std::chrono::seconds(1));
  EXPECT_EQ(d.implausible, bit(Counter::carrier_changes));
  EXPECT_EQ(d.get(Counter::rx_packets), 10.0);
}

TEST(CounterTracker, AMonotonicStampNotNewerIsNotNewerWhateverTheWallSays) {
  CounterTracker t(std::vector<double>{400.0});
  t.observe(stamped(at(0), 100, 1000));
  const PortDelta d = t.observe(stamped(at(60), 100, 2000));
  EXPECT_FALSE(d.has(Counter::rx_packets));
  EXPECT_EQ(t.last(0).get(Counter::rx_packets), 1000.0);  // the baseline did not move
}

TEST(CounterTracker, WithoutMonotonicStampsTheWallTimeOrdersSamples) {
  CounterTracker t(std::vector<double>{400.0});
  PortSample a = sample(0, at(10));
  a.set(Counter::rx_packets, 1000);
  t.observe(a);
  PortSample b = stamped(at(20), 5, 1300);  // only one of the two has a stamp: the wall
  const PortDelta d = t.observe(b);
  EXPECT_EQ(d.interval, std::chrono::seconds(10));
  EXPECT_EQ(d.get(Counter::rx_packets), 300.0);
}

}  // namespace
}  // namespace medic::telemetry

#include "detectors/fec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tests/detectors/detector_fixture.h"

namespace medic::detectors::test {
namespace {

// A 400G link carries 2.4e13 bits a minute: 2.4e8 corrected bits in a minute is a pre-FEC
// BER of 1e-5 (the warning), 5.76e9 is 2.4e-4 (the KP4 limit).
constexpr double kWarnBits = 2.4e8;
constexpr double kLimitBits = 5.76e9;

Delta bits(fabric::PortId p, Time t, double corrected, double interval_s = 60) {
  return Delta(p, t, interval_s).set(Counter::fec_corrected_bits, corrected);
}
Delta codewords(fabric::PortId p, Time t, double corrected, double interval_s = 60) {
  return Delta(p, t, interval_s).set(Counter::fec_corrected_codewords, corrected);
}
Delta uncorrectable(fabric::PortId p, Time t, double n, double interval_s = 10) {
  return Delta(p, t, interval_s).set(Counter::fec_uncorrectable_codewords, n);
}

class FecTest : public ::testing::Test {
 protected:
  FecConfig config;  // 60 s window, warning 1e-5, limit 2.4e-4
  fabric::Topology topo = small_fabric();
  fabric::PortId port = *topo.find_port("rtsw1", "eth1");
  fabric::LinkId link = *topo.find_link("rtsw1:eth1");
  FecDetector det{topo, config};
  std::vector<Finding> out;

  void feed(const PortDelta& d) { det.observe(d, out); }
};

TEST_F(FecTest, BerIsCorrectedBitsOverLineBits) {
  feed(bits(port, at(10), 1e6, 10));
  feed(bits(port, at(20), 2e6, 10));
  feed(bits(port, at(30), 3e6, 10));
  EXPECT_DOUBLE_EQ(det.pre_fec_ber(port), 6e6 / (400e9 * 30));
  for (int t = 40; t <= 70; t += 10) feed(bits(port, at(t), 0, 10));
  // At 70 s the first interval has left the window: 5e6 over the last 60 s.
  EXPECT_DOUBLE_EQ(det.pre_fec_ber(port), 5e6 / (400e9 * 60));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.pre_fec_ber(fabric::PortId(9999)), 0.0);
}

TEST_F(FecTest, JustBelowAndAtTheWarning) {
  feed(bits(port, at(60), kWarnBits - 1));
  EXPECT_TRUE(out.empty());
  EXPECT_LT(det.pre_fec_ber(port), 1e-5);
  feed(bits(port, at(120), kWarnBits));
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::fec_ber);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.link, link);
  EXPECT_EQ(f.port, port);
  EXPECT_EQ(f.device, *topo.find_device("rtsw1"));
  EXPECT_EQ(f.observed_at, at(120));
  EXPECT_EQ(f.summary,
            "pre-FEC BER 1.00e-05 on rtsw1:eth1 (from corrected bits over 1m00s) above the warning level 1.0e-05");
  EXPECT_DOUBLE_EQ(f.evidence.at("pre_fec_ber"), 1e-5);
  EXPECT_DOUBLE_EQ(f.evidence.at("warning_ber"), 1e-5);
  EXPECT_DOUBLE_EQ(f.evidence.at("limit_ber"), 2.4e-4);
}

TEST_F(FecTest, JustBelowAndAtTheLimit) {
  feed(bits(port, at(60), kLimitBits - 1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::warning);
  feed(bits(port, at(120), kLimitBits));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].kind, FindingKind::fec_ber);
  EXPECT_EQ(out[1].severity, Severity::critical);
  EXPECT_EQ(out[1].summary,
            "pre-FEC BER 2.40e-04 on rtsw1:eth1 (from corrected bits over 1m00s) at or over the FEC limit 2.4e-04");
}

TEST_F(FecTest, CorrectedCodewordsGiveALowerBound) {
  feed(codewords(port, at(60), kWarnBits - 1));
  EXPECT_TRUE(out.empty());
  feed(codewords(port, at(120), kWarnBits));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_NE(out[0].summary.find("from corrected codewords (lower bound)"), std::string::npos) << out[0].summary;
}

TEST_F(FecTest, CorrectedBitsWinOverCodewords) {
  feed(Delta(port, at(60), 60).set(Counter::fec_corrected_bits, 0).set(Counter::fec_corrected_codewords, kLimitBits));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.pre_fec_ber(port), 0.0);
}

TEST_F(FecTest, TheDevicesOwnBerIsTheLastResort) {
  feed(Delta(port, at(60), 60).set(Counter::pre_fec_ber, 9e-6));
  EXPECT_TRUE(out.empty());
  feed(Delta(port, at(70), 10).set(Counter::pre_fec_ber, 3e-4));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_NE(out[0].summary.find("from the device's pre-FEC BER"), std::string::npos) << out[0].summary;
  // The worst reading in the window counts.
  feed(Delta(port, at(80), 10).set(Counter::pre_fec_ber, 1e-9));
  EXPECT_DOUBLE_EQ(det.pre_fec_ber(port), 3e-4);
  // A gauge-only first sample (no interval yet) is a reading too.
  FecDetector first(topo, config);
  first.observe(Delta(port, at(0), 0).set(Counter::pre_fec_ber, 2e-5), out);
  EXPECT_DOUBLE_EQ(first.pre_fec_ber(port), 2e-5);
}

TEST_F(FecTest, CountersWinOverTheDevicesBer) {
  feed(Delta(port, at(60), 60).set(Counter::fec_corrected_bits, 0).set(Counter::pre_fec_ber, 1e-3));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.pre_fec_ber(port), 0.0);
}

TEST_F(FecTest, HysteresisOnTheWayDown) {
  feed(bits(port, at(60), 2 * kWarnBits));  // 2e-5
  ASSERT_EQ(out.size(), 1u);
  feed(bits(port, at(120), 0.6 * kWarnBits));  // 6e-6: holds
  feed(bits(port, at(180), 2 * kWarnBits));
  EXPECT_EQ(out.size(), 1u);
  feed(bits(port, at(240), 0.4 * kWarnBits));  // 4e-6: clears
  feed(bits(port, at(300), 2 * kWarnBits));
  ASSERT_EQ(out.size(), 2u);

  feed(bits(port, at(360), 2 * kLimitBits));  // critical
  ASSERT_EQ(out.size(), 3u);
  feed(bits(port, at(420), 0.6 * kLimitBits));  // holds critical
  feed(bits(port, at(480), 2 * kLimitBits));
  EXPECT_EQ(out.size(), 3u);
  feed(bits(port, at(540), 0.4 * kLimitBits));  // down to a warning
  feed(bits(port, at(600), 2 * kLimitBits));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].severity, Severity::critical);
}

TEST_F(FecTest, CodewordCountersAlsoClear) {
  feed(codewords(port, at(60), 2 * kWarnBits));
  ASSERT_EQ(out.size(), 1u);
  feed(codewords(port, at(120), 0));  // a clean minute
  EXPECT_EQ(det.pre_fec_ber(port), 0.0);
  feed(codewords(port, at(180), 2 * kWarnBits));  // a new episode
  EXPECT_EQ(out.size(), 2u);
}

TEST_F(FecTest, UncorrectableCodewordsAreCriticalAtOnce) {
  feed(uncorrectable(port, at(10), 3));
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::fec_uncorrectable);
  EXPECT_EQ(f.severity, Severity::critical);
  EXPECT_EQ(f.port, port);
  EXPECT_EQ(f.link, link);
  EXPECT_EQ(f.first_seen, at(0));
  EXPECT_EQ(f.observed_at, at(10));
  EXPECT_EQ(f.summary, "3 uncorrectable FEC codewords on rtsw1:eth1 in 10.0s");
  EXPECT_EQ(f.evidence.at("uncorrectable"), 3);
  EXPECT_EQ(f.evidence.at("interval_s"), 10);
}

TEST_F(FecTest, UncorrectableOncePerEpisode) {
  feed(uncorrectable(port, at(10), 3));
  feed(uncorrectable(port, at(20), 1));  // the same episode
  for (int t = 30; t <= 70; t += 10) feed(uncorrectable(port, at(t), 0));  // 50 s clean: not a window
  feed(uncorrectable(port, at(80), 2));
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(FecTest, UncorrectableRearmedAfterACleanWindow) {
  feed(uncorrectable(port, at(10), 3));
  for (int t = 20; t <= 70; t += 10) feed(uncorrectable(port, at(t), 0));  // 60 s clean
  feed(uncorrectable(port, at(80), 2));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].kind, FindingKind::fec_uncorrectable);
  EXPECT_EQ(out[1].first_seen, at(70));
}

TEST_F(FecTest, CounterResetsAreIgnored) {
  feed(Delta(port, at(60), 60)
           .set(Counter::fec_uncorrectable_codewords, 5)
           .set(Counter::fec_corrected_bits, 100 * kLimitBits)
           .reset());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.pre_fec_ber(port), 0.0);
}

TEST_F(FecTest, MissingCountersJudgeNothing) {
  feed(Delta(port, at(60), 60).set(Counter::rx_packets, 1e9));
  feed(Delta(port, at(70), 0).set(Counter::fec_uncorrectable_codewords, 5));  // no interval
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.pre_fec_ber(port), 0.0);
}

TEST_F(FecTest, GarbageDoesNotPoisonTheWindow) {
  feed(bits(port, at(10), kNaN, 10));
  feed(uncorrectable(port, at(20), kNaN));
  EXPECT_TRUE(out.empty());
  feed(bits(port, at(30), kLimitBits, 10));  // a real burst in the same window
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_DOUBLE_EQ(det.pre_fec_ber(port), kLimitBits / (400e9 * 30));
}

// The window's sums are kept as intervals come and go: after every one of thousands of
// random intervals (irregular lengths, counters there or not, the device's own BER now and
// then, long gaps that empty the window) the BER is what summing the window afresh gives.
TEST_F(FecTest, TheKeptWindowIsTheWindowSummedAfresh) {
  struct Seen {
    int64_t t_us;  // in whole microseconds, as the detector's clock counts
    double secs, bits, codewords, reported;
    bool has_bits, has_codewords;
  };
  std::vector<Seen> seen;
  std::mt19937_64 rng(8762);
  std::uniform_real_distribution<double> unit(0, 1);
  int64_t t_us = 0;
  for (int i = 0; i < 5000; ++i) {
    // Now and then a gap past the window.
    const int64_t secs_us = unit(rng) < 0.02 ? 90'000'000 : static_cast<int64_t>(200'000 + 3e6 * unit(rng));
    t_us += secs_us;
    const double secs = static_cast<double>(secs_us) / 1e6;
    Seen s{t_us, secs, 0, 0, NAN, unit(rng) < 0.6, unit(rng) < 0.3};
    Delta d(port, kT0 + Duration(t_us), secs);
    if (s.has_bits) d.set(Counter::fec_corrected_bits, s.bits = std::floor(unit(rng) * 4e6));
    if (s.has_codewords) d.set(Counter::fec_corrected_codewords, s.codewords = std::floor(unit(rng) * 5e3));
    if (unit(rng) < 0.1) d.set(Counter::pre_fec_ber, s.reported = unit(rng) * 1e-6);
    feed(d);
    seen.push_back(s);

    double secs_in = 0, bits_in = 0, cws_in = 0, reported = NAN;
    bool any_bits = false, any_cws = false;
    for (const Seen& x : seen) {
      if (x.t_us <= t_us - 60'000'000) continue;
      secs_in += x.secs;
      bits_in += x.bits;
      cws_in += x.codewords;
      any_bits = any_bits || x.has_bits;
      any_cws = any_cws || x.has_codewords;
      if (!std::isnan(x.reported)) reported = std::isnan(reported) ? x.reported : std::max(reported, x.reported);
    }
    const double line = 400e9 * secs_in;
    // The BER stays what it was when the window has nothing to judge by.
    if (!any_bits && !any_cws && std::isnan(reported)) continue;
    const double want = any_bits ? bits_in / line : any_cws ? cws_in / line : reported;
    ASSERT_NEAR(det.pre_fec_ber(port), want, 1e-12 * std::max(1e-12, want)) << "interval " << i << " at " << t_us << " us";
  }
}

// What the kept sums could get wrong and summing afresh would not: two readings so large
// their sum overflows (the BER is right again once they have left), and a window left with
// only zero-length intervals (no line bits: the device's own BER, as before).
TEST_F(FecTest, HugeReadingsAndZeroLengthIntervalsLeaveNoTrace) {
  feed(bits(port, at(10), 1e308, 10));
  feed(bits(port, at(20), 1e308, 10));
  for (int t = 30; t <= 90; t += 10) feed(bits(port, at(t), 0, 10));
  feed(bits(port, at(100), 1e6, 10));  // the window: the intervals that end at 50 s to 100 s
  EXPECT_DOUBLE_EQ(det.pre_fec_ber(port), 1e6 / (400e9 * 60));

  const fabric::PortId other = *topo.find_port("ctsw1", "eth1");
  feed(bits(other, at(10), 3e6, 10));
  // Intervals of no length (two answers with one timestamp) carrying the device's BER: once
  // the real interval has left, there are no line bits to divide by, only that reading.
  feed(Delta(other, at(80), 0).set(Counter::fec_corrected_bits, 0).set(Counter::pre_fec_ber, 2e-7));
  EXPECT_DOUBLE_EQ(det.pre_fec_ber(other), 2e-7);
  feed(Delta(other, at(81), 0).set(Counter::fec_corrected_bits, 0).set(Counter::pre_fec_ber, 1e-7));
  EXPECT_DOUBLE_EQ(det.pre_fec_ber(other), 2e-7);  // the window's highest
}

TEST_F(FecTest, PortsWithoutALinkAreIgnored) {
  feed(uncorrectable(*topo.find_port("host1", "nic1"), at(10), 3));
  feed(uncorrectable(fabric::PortId(9999), at(10), 3));
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace medic::detectors::test

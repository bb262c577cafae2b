#include "detectors/corruption.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/detectors/detector_fixture.h"

namespace medic::detectors::test {
namespace {

// Received frames and CRC errors over `interval_s`.
Delta crc(fabric::PortId p, Time t, double errors, double packets, double interval_s = 60) {
  return Delta(p, t, interval_s).set(Counter::rx_crc_errors, errors).set(Counter::rx_packets, packets);
}

// Traffic with discards at a utilization of the 400G link (both directions busy alike).
Delta traffic(fabric::PortId p, Time t, double packets_each_way, double discards, double utilization) {
  const double bytes = utilization * 400e9 * 10 / 8;
  return Delta(p, t, 10)
      .set(Counter::rx_packets, packets_each_way)
      .set(Counter::tx_packets, packets_each_way)
      .set(Counter::rx_discards, discards)
      .set(Counter::rx_bytes, bytes)
      .set(Counter::tx_bytes, bytes);
}

class CorruptionTest : public ::testing::Test {
 protected:
  CorruptionConfig config;  // 60 s window, 1e-8 corrupting, 1e-5 critical, 3 errors
  fabric::Topology topo = small_fabric();
  fabric::PortId port = *topo.find_port("rtsw1", "eth1");
  fabric::LinkId link = *topo.find_link("rtsw1:eth1");
  CorruptionDetector det{topo, config};
  std::vector<Finding> out;

  void feed(const PortDelta& d) { det.observe(d, out); }
};

TEST(CorruptionBand, NamesTheBandOfARate) {
  EXPECT_EQ(corruption_band(0), "");
  EXPECT_EQ(corruption_band(9.99e-9), "");
  EXPECT_EQ(corruption_band(1e-8), "1e-8");
  EXPECT_EQ(corruption_band(9.99e-6), "1e-8");
  EXPECT_EQ(corruption_band(1e-5), "1e-5");
  EXPECT_EQ(corruption_band(9.99e-5), "1e-5");
  EXPECT_EQ(corruption_band(1e-4), "1e-4");
  EXPECT_EQ(corruption_band(1e-3), "1e-3");
  EXPECT_EQ(corruption_band(0.5), "1e-3");
}

TEST_F(CorruptionTest, CleanTrafficMakesNothing) {
  for (int t = 60; t <= 600; t += 60) feed(crc(port, at(t), 0, 1e9));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.loss_rate(port), 0.0);
}

TEST_F(CorruptionTest, FewerErrorsThanTheMinimumAreNoise) {
  feed(crc(port, at(60), 2, 10));  // a loss rate of 1 in 6, but only two errors
  EXPECT_TRUE(out.empty());
  EXPECT_DOUBLE_EQ(det.loss_rate(port), 2.0 / 12.0);
  feed(crc(port, at(70), 1, 10, 10));  // the third error in the window
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
}

TEST_F(CorruptionTest, LossRateIsErrorsOverFramesInTheWindow) {
  feed(crc(port, at(10), 3, 999'997, 10));
  feed(crc(port, at(20), 5, 1'999'995, 10));
  EXPECT_DOUBLE_EQ(det.loss_rate(port), 8.0 / 3e6);  // frames = packets + errors
  EXPECT_EQ(det.loss_rate(fabric::PortId(9999)), 0.0);
}

TEST_F(CorruptionTest, JustBelowCorruptingIsNothing) {
  feed(crc(port, at(60), 10, 1e9 - 9));  // 10 in 1e9 + 1 frames
  EXPECT_TRUE(out.empty());
  EXPECT_LT(det.loss_rate(port), 1e-8);
}

TEST_F(CorruptionTest, AtCorruptingIsAWarning) {
  feed(crc(port, at(60), 10, 1e9 - 10));  // exactly 1e-8
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::corruption);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.link, link);
  EXPECT_EQ(f.port, port);
  EXPECT_EQ(f.device, *topo.find_device("rtsw1"));
  EXPECT_EQ(f.observed_at, at(60));
  EXPECT_EQ(f.summary,
            "rtsw1:eth1 receives corrupted frames: loss rate 1.00e-08 (10 of 1e+09 frames in 1m00s), band 1e-8");
  EXPECT_DOUBLE_EQ(f.evidence.at("loss_rate"), 1e-8);
  EXPECT_EQ(f.evidence.at("errors"), 10);
  EXPECT_EQ(f.evidence.at("frames"), 1e9);
  EXPECT_DOUBLE_EQ(f.evidence.at("band"), -8);
}

TEST_F(CorruptionTest, JustBelowAndAtCritical) {
  feed(crc(port, at(60), 1e4, 1e9 - 1e4 + 1));  // just under 1e-5: a warning
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::warning);
  feed(crc(port, at(120), 1e4, 1e9 - 1e4));  // exactly 1e-5: critical
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::critical);
  EXPECT_NE(out[1].summary.find("band 1e-5"), std::string::npos) << out[1].summary;
}

TEST_F(CorruptionTest, WorseBandsAreNamed) {
  feed(crc(port, at(60), 1e6, 1e9 - 1e6));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_EQ(out[0].summary,
            "rtsw1:eth1 receives corrupted frames: loss rate 1.00e-03 (1000000 of 1e+09 frames in 1m00s), band 1e-3");
  EXPECT_DOUBLE_EQ(out[0].evidence.at("band"), -3);
}

TEST_F(CorruptionTest, OnlyEscalationsAreReported) {
  feed(crc(port, at(60), 20, 1e9));  // 2e-8: warning
  feed(crc(port, at(120), 30, 1e9));  // still a warning
  ASSERT_EQ(out.size(), 1u);
  feed(crc(port, at(180), 5e4, 1e9));  // critical
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::critical);
  feed(crc(port, at(240), 1e5, 1e9));  // worse, same level
  feed(crc(port, at(300), 20, 1e9));  // back to a warning: not reported
  EXPECT_EQ(out.size(), 2u);
  feed(crc(port, at(360), 5e4, 1e9));  // critical again: an escalation
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].severity, Severity::critical);
}

TEST_F(CorruptionTest, HysteresisOnTheWayDown) {
  feed(crc(port, at(60), 20, 1e9));  // 2e-8: warning
  ASSERT_EQ(out.size(), 1u);
  feed(crc(port, at(120), 6, 1e9));  // 6e-9: under the threshold, above half of it: holds
  feed(crc(port, at(180), 20, 1e9));
  EXPECT_EQ(out.size(), 1u);
  feed(crc(port, at(240), 4, 1e9));  // 4e-9: clear
  feed(crc(port, at(300), 20, 1e9));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::warning);

  // Critical holds down to half the critical rate.
  feed(crc(port, at(360), 2e4, 1e9));  // 2e-5
  ASSERT_EQ(out.size(), 3u);
  feed(crc(port, at(420), 6e3, 1e9));  // 6e-6: still critical
  feed(crc(port, at(480), 2e4, 1e9));
  EXPECT_EQ(out.size(), 3u);
  feed(crc(port, at(540), 4e3, 1e9));  // 4e-6: a warning now
  feed(crc(port, at(600), 2e4, 1e9));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3].severity, Severity::critical);
}

TEST_F(CorruptionTest, ZeroErrorsClearTheLevel) {
  feed(crc(port, at(60), 20, 1e9));
  feed(crc(port, at(120), 0, 1e9));
  feed(crc(port, at(180), 20, 1e9));
  EXPECT_EQ(out.size(), 2u);
}

TEST_F(CorruptionTest, ReceiveErrorsStandInForMissingCrcErrors) {
  feed(Delta(port, at(60), 60).set(Counter::rx_errors, 1e4).set(Counter::rx_packets, 1e9 - 1e4));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  // With both, CRC errors are the measure: receive errors may be anything.
  CorruptionDetector both(topo, config);
  std::vector<Finding> out2;
  both.observe(
      Delta(port, at(60), 60).set(Counter::rx_crc_errors, 0).set(Counter::rx_errors, 1e4).set(Counter::rx_packets, 1e9),
      out2);
  EXPECT_TRUE(out2.empty());
}

TEST_F(CorruptionTest, OldIntervalsLeaveTheWindow) {
  feed(crc(port, at(10), 1e4, 1e8, 10));  // 1e-4: critical
  ASSERT_EQ(out.size(), 1u);
  for (int t = 20; t <= 60; t += 10) feed(crc(port, at(t), 0, 1e8, 10));
  EXPECT_GT(det.loss_rate(port), 0.0);  // 50 s later: still in the 60 s window
  feed(crc(port, at(70), 0, 1e8, 10));
  EXPECT_EQ(det.loss_rate(port), 0.0);  // 60 s later: gone
  // Clear now, so new errors are a new finding.
  feed(crc(port, at(80), 1e4, 1e8, 10));
  EXPECT_EQ(out.size(), 2u);
}

TEST_F(CorruptionTest, FirstSeenIsTheFirstIntervalWithErrors) {
  for (int t = 10; t <= 40; t += 10) feed(crc(port, at(t), 0, 1e7, 10));
  feed(crc(port, at(50), 2, 1e7, 10));  // under the minimum
  feed(crc(port, at(60), 2, 1e7, 10));  // 4 in 6e7: 6.7e-8
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_seen, at(50));
  EXPECT_EQ(out[0].observed_at, at(60));
}

TEST_F(CorruptionTest, CounterResetsAreIgnored) {
  feed(crc(port, at(60), 1e6, 1e9).reset());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.loss_rate(port), 0.0);
  feed(crc(port, at(120), 1e4, 1e9));
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(CorruptionTest, MissingCountersJudgeNothing) {
  feed(Delta(port, at(60), 60).set(Counter::rx_packets, 1e9));  // no error counter at all
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.loss_rate(port), 0.0);

  CorruptionDetector no_frames(topo, config);
  no_frames.observe(Delta(port, at(60), 60).set(Counter::rx_crc_errors, 100), out);  // errors of unknown frames
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(no_frames.loss_rate(port), 0.0);

  // A port's first sample has no interval: nothing to judge.
  CorruptionDetector first(topo, config);
  first.observe(Delta(port, at(60), 0).set(Counter::rx_crc_errors, 1e6).set(Counter::rx_packets, 1), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(first.loss_rate(port), 0.0);
}

TEST_F(CorruptionTest, GarbageDoesNotPoisonTheWindow) {
  feed(crc(port, at(10), kNaN, 1e8, 10));
  feed(crc(port, at(20), 2, kNaN, 10));
  feed(crc(port, at(30), 1e4, 1e8, 10));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_TRUE(std::isfinite(det.loss_rate(port)));
}

TEST_F(CorruptionTest, PortsWithoutALinkAreIgnored) {
  feed(crc(*topo.find_port("host1", "nic1"), at(60), 1e6, 1e9));
  feed(crc(fabric::PortId(9999), at(60), 1e6, 1e9));
  EXPECT_TRUE(out.empty());
}

// Discards are judged once at least three intervals covering half the window are in:
// before that, congestion and anything else cannot be told apart.
TEST_F(CorruptionTest, DiscardsWaitForHalfAWindowBeforeAJudgement) {
  feed(traffic(port, at(10), 5e6, 100, 0.7));
  feed(traffic(port, at(20), 5e6, 100, 0.7));
  feed(traffic(port, at(30), 5e6, 100, 0.7));
  EXPECT_TRUE(out.empty()) << "three intervals spanning 20 s: not yet";
  feed(traffic(port, at(40), 5e6, 100, 0.7));
  EXPECT_EQ(out.size(), 1u) << "four intervals spanning 30 s: judged";
}

TEST_F(CorruptionTest, DiscardsAtHighLoadAreCongestion) {
  for (int t = 10; t <= 40; t += 10) feed(traffic(port, at(t), 5e6, 100, 0.7));  // 1e-5 at 70%
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::discards);
  EXPECT_EQ(f.severity, Severity::info);
  EXPECT_EQ(f.evidence.at("congestion"), 1);
  EXPECT_DOUBLE_EQ(f.evidence.at("utilization"), 0.7);
  EXPECT_DOUBLE_EQ(f.evidence.at("utilization_at_discards"), 0.7);
  EXPECT_DOUBLE_EQ(f.evidence.at("discard_rate"), 1e-5);
  EXPECT_EQ(f.summary,
            "rtsw1:eth1 discards 1.00e-05 of packets at 70% utilization: congestion (discards follow load), not a link "
            "fault");
}

TEST_F(CorruptionTest, DiscardsAtBusyMomentsAreCongestionWhateverTheAverage) {
  // Quiet most of the time; every discard came while the port ran at 90%.
  feed(traffic(port, at(10), 5e6, 0, 0.1));
  feed(traffic(port, at(20), 5e6, 0, 0.1));
  feed(traffic(port, at(30), 5e6, 0, 0.1));
  feed(traffic(port, at(40), 5e6, 400, 0.9));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::info);
  EXPECT_NEAR(out[0].evidence.at("utilization"), 0.3, 1e-12);            // low on average ...
  EXPECT_NEAR(out[0].evidence.at("utilization_at_discards"), 0.9, 1e-12);  // ... busy when dropping
}

TEST_F(CorruptionTest, DiscardsThatFollowLoadAreCongestion) {
  feed(traffic(port, at(10), 5e6, 0, 0.1));
  feed(traffic(port, at(20), 5e6, 5, 0.2));
  feed(traffic(port, at(30), 5e6, 20, 0.3));
  EXPECT_TRUE(out.empty());
  feed(traffic(port, at(40), 5e6, 60, 0.4));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::info);
  EXPECT_EQ(out[0].evidence.at("congestion"), 1);
  EXPECT_NEAR(out[0].evidence.at("utilization"), 0.25, 1e-12);  // low on average ...
  EXPECT_GE(out[0].evidence.at("load_correlation"), 0.5);        // ... but rising with load
}

TEST_F(CorruptionTest, DiscardsAtLowLoadWithoutErrorsAreAWarning) {
  for (int t = 10; t <= 50; t += 10) feed(traffic(port, at(t), 5e6, 100, 0.05));
  ASSERT_EQ(out.size(), 1u);  // reported once
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::discards);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.evidence.at("congestion"), 0);
  EXPECT_EQ(f.first_seen, at(10));
  EXPECT_EQ(f.summary, "rtsw1:eth1 discards 1.00e-05 of packets at 5% utilization: not explained by load");
  EXPECT_TRUE(of_kind(out, FindingKind::corruption).empty());
}

TEST_F(CorruptionTest, DiscardsAreReportedAgainAfterTheyFallBelowHalf) {
  for (int t = 10; t <= 40; t += 10) feed(traffic(port, at(t), 5e6, 100, 0.05));
  ASSERT_EQ(out.size(), 1u);
  for (int t = 50; t <= 110; t += 10) feed(traffic(port, at(t), 5e6, 0, 0.05));  // the window empties
  for (int t = 120; t <= 150; t += 10) feed(traffic(port, at(t), 5e6, 100, 0.05));
  EXPECT_EQ(out.size(), 2u);
}

TEST_F(CorruptionTest, TooLittleTrafficForADiscardJudgement) {
  for (int t = 10; t <= 40; t += 10) feed(traffic(port, at(t), 1e5, 100, 0.01));  // 8e5 packets
  EXPECT_TRUE(out.empty());
  feed(traffic(port, at(50), 1e5, 0, 0.01));  // 1e6 in the window: judged
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::discards);
}

TEST_F(CorruptionTest, DiscardsBelowTheRateAreNothing) {
  feed(traffic(port, at(10), 5e6, 9, 0.05));  // 9e-7
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace medic::detectors::test

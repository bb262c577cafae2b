#include "detectors/optics.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <limits>
#include <vector>

#include "tests/detectors/detector_fixture.h"
#include "tests/support/testing.h"

namespace medic::detectors::test {
namespace {

OpticsConfig shipped() {
  return DetectorConfig::load_file(medic::testing::source_dir() + "/data/detectors.json").optics;
}

class OpticsTest : public ::testing::Test {
 protected:
  fabric::Topology topo = small_fabric();
  fabric::PortId a = *topo.find_port("rtsw1", "eth1");   // 400G-DR4 by default
  fabric::PortId b = *topo.find_port("ctsw1", "eth1");
  fabric::PortId fr4 = *topo.find_port("rtsw1", "eth2");  // 400G-FR4
  fabric::PortId mystery = *topo.find_port("rtsw1", "eth3");
  fabric::LinkId link = *topo.find_link("rtsw1:eth1");
  std::vector<Finding> out;

  // One poll: every delta, then the checks that need both ends.
  static void poll(OpticsDetector& det, Time t, std::initializer_list<Delta> deltas, std::vector<Finding>& out) {
    for (const Delta& d : deltas) det.observe(d, out);
    det.end_poll(t, out);
  }
  static Delta rx(fabric::PortId p, Time t, double dbm) { return Delta(p, t).set(Counter::rx_power_dbm, dbm); }
  static Delta tx(fabric::PortId p, Time t, double dbm) { return Delta(p, t).set(Counter::tx_power_dbm, dbm); }
  static Delta both(fabric::PortId p, Time t, double tx_dbm, double rx_dbm) {
    return Delta(p, t).set(Counter::tx_power_dbm, tx_dbm).set(Counter::rx_power_dbm, rx_dbm);
  }
};

TEST_F(OpticsTest, ShippedTypesCoverTheLinks) {
  const OpticsConfig c = shipped();
  ASSERT_NE(c.type_for(""), nullptr);
  EXPECT_EQ(c.type_for("")->name, "400G-DR4");
  EXPECT_EQ(c.type_for("400G-FR4")->name, "400G-FR4");
  EXPECT_EQ(c.type_for("800G-MYSTERY"), nullptr);
  EXPECT_DOUBLE_EQ(c.types.at("400G-DR4").rx_power_dbm.warn_low, -6.9);
  EXPECT_DOUBLE_EQ(c.types.at("400G-DR4").rx_power_dbm.alarm_low, -8.9);
}

TEST_F(OpticsTest, ReceivePowerWarningAndAlarmOnTheWayDown) {
  OpticsDetector det(topo, shipped());
  det.observe(rx(a, at(0), -6.89), out);  // just inside
  EXPECT_TRUE(out.empty());
  det.observe(rx(a, at(10), -6.91), out);  // just below warning
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::optics_rx_power);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_EQ(out[0].link, link);
  EXPECT_EQ(out[0].port, a);
  EXPECT_EQ(out[0].device, *topo.find_device("rtsw1"));
  EXPECT_EQ(out[0].first_seen, at(10));
  EXPECT_EQ(out[0].observed_at, at(10));
  EXPECT_EQ(out[0].summary, "receive power -6.91 dBm on rtsw1:eth1 below warning -6.90 dBm");
  EXPECT_DOUBLE_EQ(out[0].evidence.at("value"), -6.91);
  EXPECT_DOUBLE_EQ(out[0].evidence.at("threshold"), -6.9);
  EXPECT_EQ(out[0].suspect_port, fabric::kNone);  // the far transmitter is not known to be weak

  det.observe(rx(a, at(20), -8.89), out);  // still a warning: nothing new
  EXPECT_EQ(out.size(), 1u);
  det.observe(rx(a, at(30), -8.91), out);  // just below alarm
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::critical);
  EXPECT_EQ(out[1].summary, "receive power -8.91 dBm on rtsw1:eth1 below alarm -8.90 dBm");
  EXPECT_DOUBLE_EQ(out[1].evidence.at("threshold"), -8.9);
}

TEST_F(OpticsTest, ExactlyAtAThresholdIsInside) {
  OpticsDetector det(topo, shipped());
  det.observe(rx(a, at(0), -6.9), out);
  det.observe(rx(a, at(10), 4.0), out);
  EXPECT_TRUE(out.empty());
}

TEST_F(OpticsTest, ReceivePowerTooHigh) {
  OpticsDetector det(topo, shipped());
  det.observe(rx(a, at(0), 3.99), out);
  EXPECT_TRUE(out.empty());
  det.observe(rx(a, at(10), 4.01), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_EQ(out[0].summary, "receive power 4.01 dBm on rtsw1:eth1 above warning 4.00 dBm");
  det.observe(rx(a, at(20), 5.01), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::critical);
  EXPECT_EQ(out[1].summary, "receive power 5.01 dBm on rtsw1:eth1 above alarm 5.00 dBm");
}

TEST_F(OpticsTest, LevelsClearOnlyHysteresisBackInside) {
  OpticsDetector det(topo, shipped());
  det.observe(rx(a, at(0), -8.91), out);  // alarm
  ASSERT_EQ(out.size(), 1u);
  det.observe(rx(a, at(10), -8.5), out);  // inside by 0.4 dB < 0.5: still an alarm
  det.observe(rx(a, at(20), -8.91), out);
  EXPECT_EQ(out.size(), 1u);
  det.observe(rx(a, at(30), -8.39), out);  // 0.51 dB back: down to a warning, not reported
  EXPECT_EQ(out.size(), 1u);
  det.observe(rx(a, at(40), -8.91), out);  // up again: reported
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::critical);
  det.observe(rx(a, at(50), -6.5), out);  // inside the warning by 0.4: still a warning
  det.observe(rx(a, at(60), -6.91), out);
  EXPECT_EQ(out.size(), 2u);
  det.observe(rx(a, at(70), -6.39), out);  // clear
  det.observe(rx(a, at(80), -6.91), out);  // a new warning
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].severity, Severity::warning);
}

TEST_F(OpticsTest, WeakTransmitterBlamesItsOwnPort) {
  OpticsDetector det(topo, shipped());
  poll(det, at(0), {tx(a, at(0), -2.89)}, out);
  EXPECT_TRUE(out.empty());
  poll(det, at(10), {tx(a, at(10), -3.0)}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::optics_tx_power);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_EQ(out[0].port, a);
  EXPECT_EQ(out[0].suspect_port, a);
  EXPECT_EQ(out[0].summary, "transmit power -3.00 dBm on rtsw1:eth1 below warning -2.90 dBm");
  EXPECT_EQ(out[0].suspect, "the transceiver in rtsw1:eth1 (transmit power out of range)");
  poll(det, at(20), {tx(a, at(20), -4.91)}, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::critical);
  EXPECT_EQ(out[1].suspect_port, a);
}

TEST_F(OpticsTest, LossJustBelowAndJustAboveTheBudget) {
  OpticsDetector det(topo, shipped());  // DR4: 3.0 dB
  poll(det, at(0), {tx(a, at(0), 1.0), rx(b, at(0), -1.99)}, out);
  EXPECT_TRUE(out.empty());  // 2.99 dB
  poll(det, at(10), {tx(a, at(10), 1.0), rx(b, at(10), -2.01)}, out);
  ASSERT_EQ(out.size(), 1u);  // 3.01 dB
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::optics_loss);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.link, link);
  EXPECT_EQ(f.port, b);
  EXPECT_EQ(f.device, *topo.find_device("ctsw1"));
  EXPECT_EQ(f.observed_at, at(10));
  EXPECT_EQ(f.summary, "3.01 dB lost from rtsw1:eth1 (tx 1.00 dBm) to ctsw1:eth1 (rx -2.01 dBm), budget 3.0 dB");
  EXPECT_NEAR(f.evidence.at("loss_db"), 3.01, 1e-9);
  EXPECT_EQ(f.evidence.at("budget_db"), 3.0);
  EXPECT_EQ(f.evidence.at("far_tx_dbm"), 1.0);
  EXPECT_EQ(f.evidence.at("rx_dbm"), -2.01);
  EXPECT_EQ(f.evidence.count("reverse_loss_db"), 0u);
  // Only one direction known: no end can be blamed.
  EXPECT_EQ(f.suspect_port, fabric::kNone);
  EXPECT_EQ(f.suspect, "the fiber or a connector between rtsw1:eth1 and ctsw1:eth1");

  poll(det, at(20), {tx(a, at(20), 1.0), rx(b, at(20), -5.01)}, out);  // 6.01 dB: budget + 3
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].kind, FindingKind::optics_loss);
  EXPECT_EQ(out[1].severity, Severity::critical);
}

TEST_F(OpticsTest, LossClearsOnlyHysteresisBelowTheBudget) {
  OpticsDetector det(topo, shipped());
  poll(det, at(0), {tx(a, at(0), 1.0), rx(b, at(0), -2.5)}, out);  // 3.5
  ASSERT_EQ(out.size(), 1u);
  poll(det, at(10), {tx(a, at(10), 1.0), rx(b, at(10), -1.6)}, out);  // 2.6: above 2.5, holds
  poll(det, at(20), {tx(a, at(20), 1.0), rx(b, at(20), -2.5)}, out);
  EXPECT_EQ(out.size(), 1u);
  poll(det, at(30), {tx(a, at(30), 1.0), rx(b, at(30), -1.4)}, out);  // 2.4: clears
  poll(det, at(40), {tx(a, at(40), 1.0), rx(b, at(40), -2.5)}, out);
  EXPECT_EQ(out.size(), 2u);
}

TEST_F(OpticsTest, LossWithAWeakFarTransmitterBlamesTheTransmitter) {
  OpticsDetector det(topo, shipped());
  poll(det, at(0), {tx(a, at(0), -3.5), rx(b, at(0), -7.0)}, out);
  ASSERT_EQ(of_kind(out, FindingKind::optics_tx_power).size(), 1u);
  const auto rx_findings = of_kind(out, FindingKind::optics_rx_power);
  ASSERT_EQ(rx_findings.size(), 1u);
  EXPECT_EQ(rx_findings[0].port, b);
  EXPECT_EQ(rx_findings[0].suspect_port, a);
  EXPECT_EQ(rx_findings[0].suspect, "the transceiver in rtsw1:eth1 (weak transmitter: -3.50 dBm)");
  const auto loss = of_kind(out, FindingKind::optics_loss);
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].port, b);
  EXPECT_EQ(loss[0].suspect_port, a);
  EXPECT_EQ(loss[0].suspect, "the transceiver in rtsw1:eth1 (its transmit power is low)");
}

TEST_F(OpticsTest, BothDirectionsLossyBlamesTheFiber) {
  OpticsDetector det(topo, shipped());
  poll(det, at(0), {both(a, at(0), 1.0, -2.5), both(b, at(0), 1.0, -2.5)}, out);
  const auto loss = of_kind(out, FindingKind::optics_loss);
  ASSERT_EQ(loss.size(), 2u);  // one per direction
  for (const Finding& f : loss) {
    EXPECT_EQ(f.suspect_port, fabric::kNone);
    EXPECT_NEAR(f.evidence.at("reverse_loss_db"), 3.5, 1e-9);
  }
  EXPECT_EQ(loss[0].suspect,
            "the fiber or a connector between ctsw1:eth1 and rtsw1:eth1 (both directions lossy)");
  EXPECT_EQ(loss[1].suspect,
            "the fiber or a connector between rtsw1:eth1 and ctsw1:eth1 (both directions lossy)");
  EXPECT_EQ(out.size(), 2u);  // nothing else: powers are inside their bands
}

TEST_F(OpticsTest, CleanReverseDirectionBlamesTheReceiver) {
  OpticsDetector det(topo, shipped());
  // rtsw1 -> ctsw1 loses 3.5 dB; ctsw1 -> rtsw1 only 0.5 dB.
  poll(det, at(0), {both(a, at(0), 1.0, 0.5), both(b, at(0), 1.0, -2.5)}, out);
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::optics_loss);
  EXPECT_EQ(f.port, b);
  EXPECT_EQ(f.suspect_port, b);
  EXPECT_NEAR(f.evidence.at("reverse_loss_db"), 0.5, 1e-9);
  EXPECT_EQ(f.suspect,
            "the transceiver in ctsw1:eth1 (weak receiver; the reverse direction is clean), or the rtsw1:eth1 -> "
            "ctsw1:eth1 strand");
}

TEST_F(OpticsTest, LossComparesBothEndsOfTheSamePoll) {
  // Within one poll the receiving end may answer before the transmitting end: the loss is
  // judged once both are in, so the weak transmitter is blamed, not the receiver.
  OpticsDetector det(topo, shipped());
  poll(det, at(0), {both(b, at(0), 1.0, 0.5), both(a, at(0), 1.0, 0.5)}, out);
  ASSERT_TRUE(out.empty());
  poll(det, at(10), {both(b, at(10), 1.0, -6.5), both(a, at(10), -3.0, 0.5)}, out);
  const auto loss = of_kind(out, FindingKind::optics_loss);
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].port, b);
  EXPECT_EQ(loss[0].suspect_port, a);
}

TEST_F(OpticsTest, StaleFarEndIsNotCompared) {
  OpticsDetector fresh(topo, shipped());
  poll(fresh, at(0), {tx(a, at(0), 1.0)}, out);
  poll(fresh, at(120), {rx(b, at(120), -2.5)}, out);
  EXPECT_EQ(of_kind(out, FindingKind::optics_loss).size(), 1u);  // 120 s apart: still a pair

  std::vector<Finding> out2;
  OpticsDetector stale(topo, shipped());
  poll(stale, at(0), {tx(a, at(0), 1.0)}, out2);
  poll(stale, at(121), {rx(b, at(121), -2.5)}, out2);
  EXPECT_TRUE(out2.empty());
}

TEST_F(OpticsTest, DownPortMakesNoPowerFinding) {
  OpticsDetector det(topo, shipped());
  // rtsw1:eth1 is down with readings far out of range; its peer is fine. The peer's
  // transmit power against the down port's receive power is no loss either.
  poll(det, at(0),
       {Delta(a, at(0))
            .set(Counter::oper_up, 0)
            .set(Counter::rx_power_dbm, -20)
            .set(Counter::tx_power_dbm, -20)
            .set(Counter::laser_bias_ma, 0.5),
        Delta(b, at(0)).set(Counter::oper_up, 1).set(Counter::tx_power_dbm, 1.0).set(Counter::rx_power_dbm, -1.0)},
       out);
  EXPECT_TRUE(out.empty());
  // The same readings with the port up are findings.
  poll(det, at(10), {Delta(a, at(10)).set(Counter::oper_up, 1).set(Counter::rx_power_dbm, -20)}, out);
  EXPECT_EQ(of_kind(out, FindingKind::optics_rx_power).size(), 1u);
  EXPECT_EQ(of_kind(out, FindingKind::optics_loss).size(), 1u);  // 1.0 dBm sent, -20 received
}

TEST_F(OpticsTest, DownPortOnBothEndsMakesNothing) {
  OpticsDetector det(topo, shipped());
  for (const fabric::PortId p : {a, b}) {
    det.observe(Delta(p, at(0))
                    .set(Counter::oper_up, 0)
                    .set(Counter::rx_power_dbm, -40)
                    .set(Counter::tx_power_dbm, -40)
                    .set(Counter::laser_bias_ma, 0),
                out);
  }
  det.end_poll(at(0), out);
  EXPECT_TRUE(out.empty());
}

TEST_F(OpticsTest, NoLightIsNotAPowerFinding) {
  // -40 dBm is what a transceiver reports with no light at all, even with oper status up
  // or unknown: the down detector's business, not a receive power alarm.
  OpticsDetector det(topo, shipped());
  poll(det, at(0), {Delta(a, at(0)).set(Counter::oper_up, 1).set(Counter::rx_power_dbm, -40), rx(b, at(0), -40)},
       out);
  poll(det, at(10), {both(a, at(10), 1.0, -40), both(b, at(10), -40, -40)}, out);
  EXPECT_TRUE(out.empty());
  // Light returns at a bad level: that is reported.
  poll(det, at(20), {rx(a, at(20), -9.0)}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::optics_rx_power);
  EXPECT_EQ(out[0].severity, Severity::critical);
}

TEST_F(OpticsTest, ReadingsInADeltaWithCounterResetsStillCount) {
  // A counter reset says nothing about gauges: the tracker passes them on, and so do we.
  OpticsDetector det(topo, shipped());
  det.observe(rx(a, at(0), -6.91).reset(), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::optics_rx_power);
}

TEST_F(OpticsTest, TemperatureOutOfRange) {
  OpticsDetector det(topo, shipped());
  det.observe(Delta(a, at(0)).set(Counter::temperature_c, 70.0), out);
  EXPECT_TRUE(out.empty());
  det.observe(Delta(a, at(10)).set(Counter::temperature_c, 70.01), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::optics_temperature);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_EQ(out[0].suspect_port, a);
  EXPECT_EQ(out[0].summary, "temperature 70.01 C on rtsw1:eth1 above warning 70.00 C");
  EXPECT_EQ(out[0].suspect, "the transceiver in rtsw1:eth1 (temperature out of range)");
  det.observe(Delta(a, at(20)).set(Counter::temperature_c, 75.01), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::critical);
  det.observe(Delta(a, at(30)).set(Counter::temperature_c, 69.6), out);  // not 0.5 below yet
  det.observe(Delta(a, at(40)).set(Counter::temperature_c, 70.5), out);
  EXPECT_EQ(out.size(), 2u);
}

TEST_F(OpticsTest, LaserBiasOutOfRange) {
  OpticsDetector det(topo, shipped());
  det.observe(Delta(a, at(0)).set(Counter::laser_bias_ma, 2.0), out);
  EXPECT_TRUE(out.empty());
  det.observe(Delta(a, at(10)).set(Counter::laser_bias_ma, 1.99), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::optics_bias);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_EQ(out[0].suspect_port, a);
  EXPECT_EQ(out[0].summary, "laser bias 1.99 mA on rtsw1:eth1 below warning 2.00 mA");
  det.observe(Delta(a, at(20)).set(Counter::laser_bias_ma, 0.99), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::critical);
  EXPECT_EQ(out[1].summary, "laser bias 0.99 mA on rtsw1:eth1 below alarm 1.00 mA");

  OpticsDetector high(topo, shipped());
  std::vector<Finding> out2;
  high.observe(Delta(a, at(0)).set(Counter::laser_bias_ma, 13.01), out2);
  ASSERT_EQ(out2.size(), 1u);
  EXPECT_EQ(out2[0].summary, "laser bias 13.01 mA on rtsw1:eth1 above warning 13.00 mA");
}

TEST_F(OpticsTest, EachLinkIsJudgedByItsOwnOpticType) {
  OpticsDetector det(topo, shipped());
  det.observe(rx(fr4, at(0), -7.0), out);  // a DR4 warning, fine for FR4 (-8.1)
  EXPECT_TRUE(out.empty());
  det.observe(rx(fr4, at(10), -8.11), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].summary, "receive power -8.11 dBm on rtsw1:eth2 below warning -8.10 dBm");
}

TEST_F(OpticsTest, UnknownOpticTypeIsIgnored) {
  OpticsDetector det(topo, shipped());
  const fabric::PortId far = *topo.find_port("ctsw1", "eth3");
  poll(det, at(0),
       {Delta(mystery, at(0))
            .set(Counter::rx_power_dbm, -20)
            .set(Counter::tx_power_dbm, -20)
            .set(Counter::temperature_c, 99)
            .set(Counter::laser_bias_ma, 50),
        both(far, at(0), 5.0, -20)},
       out);
  EXPECT_TRUE(out.empty());
}

TEST_F(OpticsTest, WithoutADefaultTypeLinksNamingNoOpticAreIgnored) {
  OpticsConfig c = shipped();
  c.default_type = "";
  OpticsDetector det(topo, c);
  det.observe(rx(a, at(0), -20), out);  // no optic named, no default
  EXPECT_TRUE(out.empty());
  det.observe(rx(fr4, at(0), -20), out);  // FR4 is still judged
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(OpticsTest, PortsWithoutALinkAreIgnored) {
  OpticsDetector det(topo, shipped());
  det.observe(rx(*topo.find_port("host1", "nic1"), at(0), -20), out);
  det.observe(rx(fabric::PortId(9999), at(0), -20), out);
  det.end_poll(at(0), out);
  EXPECT_TRUE(out.empty());
}

TEST_F(OpticsTest, GarbageReadingsAreIgnored) {
  OpticsDetector det(topo, shipped());
  det.observe(rx(a, at(0), -6.91), out);
  ASSERT_EQ(out.size(), 1u);
  det.observe(rx(a, at(10), kNaN), out);  // neither a new level nor a cleared one
  det.observe(rx(a, at(20), -6.91), out);
  EXPECT_EQ(out.size(), 1u);
  det.observe(Delta(a, at(30)).set(Counter::temperature_c, kNaN).set(Counter::laser_bias_ma, kNaN), out);
  det.observe(Delta(a, at(40)).set(Counter::tx_power_dbm, std::numeric_limits<double>::infinity()), out);
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(OpticsTest, GarbageDoesNotForgetTheLastGoodReading) {
  OpticsDetector det(topo, shipped());
  poll(det, at(0), {tx(a, at(0), 1.0)}, out);
  poll(det, at(10), {tx(a, at(10), kNaN), rx(b, at(10), -2.5)}, out);
  const auto loss = of_kind(out, FindingKind::optics_loss);
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].evidence.at("far_tx_dbm"), 1.0);
}

// Drift with a receive average that follows at once and a baseline that barely moves, so
// the drop is the difference of two readings.
OpticsConfig crisp_drift() {
  OpticsConfig c = shipped();
  c.drift_recent = std::chrono::seconds(1);
  c.drift_baseline = std::chrono::hours(1'000'000);
  return c;
}

TEST_F(OpticsTest, DriftNeedsHistoryFirst) {
  OpticsDetector det(topo, crisp_drift());
  det.observe(rx(a, at(0), -2.0), out);
  for (int t = 60; t < 1800; t += 60) det.observe(rx(a, at(t), -4.5), out);
  EXPECT_TRUE(out.empty());  // 2.5 dB down, but less than 30 min of history
  det.observe(rx(a, at(1800), -4.5), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::optics_drift);
  EXPECT_EQ(out[0].observed_at, at(1800));
}

TEST_F(OpticsTest, DriftJustBelowAndJustAbove) {
  OpticsDetector det(topo, crisp_drift());
  for (int t = 0; t <= 1800; t += 60) det.observe(rx(a, at(t), -2.0), out);
  det.observe(rx(a, at(1860), -3.99), out);  // 1.99 dB
  EXPECT_TRUE(out.empty());
  det.observe(rx(a, at(1920), -4.01), out);  // 2.01 dB
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::optics_drift);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.port, a);
  EXPECT_NEAR(f.evidence.at("drop_db"), 2.01, 1e-3);
  EXPECT_NEAR(f.evidence.at("baseline_dbm"), -2.0, 1e-3);
  EXPECT_NEAR(f.evidence.at("recent_dbm"), -4.01, 1e-3);
  EXPECT_EQ(f.summary, "receive power on rtsw1:eth1 drifted 2.01 dB below its baseline (-2.00 -> -4.01 dBm)");
}

TEST_F(OpticsTest, DriftIsReportedAgainOnlyAfterItRecovers) {
  OpticsDetector det(topo, crisp_drift());
  for (int t = 0; t <= 1800; t += 60) det.observe(rx(a, at(t), -2.0), out);
  det.observe(rx(a, at(1860), -4.01), out);
  ASSERT_EQ(out.size(), 1u);
  for (int t = 1920; t <= 3000; t += 60) det.observe(rx(a, at(t), -4.01), out);
  det.observe(rx(a, at(3060), -3.6), out);  // 1.6 dB: not recovered (needs < 1.5)
  det.observe(rx(a, at(3120), -4.01), out);
  EXPECT_EQ(out.size(), 1u);
  det.observe(rx(a, at(3180), -3.4), out);  // 1.4 dB: recovered
  det.observe(rx(a, at(3240), -4.01), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].kind, FindingKind::optics_drift);
}

TEST_F(OpticsTest, SlowBaselineAgainstFastRecentAverage) {
  // The shipped time constants: a 6 h baseline and a 5 min recent average.
  OpticsDetector det(topo, shipped());
  for (int t = 0; t <= 1800; t += 60) det.observe(rx(a, at(t), -2.0), out);
  // A 3 dB step: the recent average needs minutes to fall 2 dB below the baseline.
  for (int t = 1860; t <= 1800 + 5 * 60; t += 60) det.observe(rx(a, at(t), -5.0), out);
  EXPECT_TRUE(out.empty());
  for (int t = 1800 + 6 * 60; t <= 1800 + 10 * 60; t += 60) det.observe(rx(a, at(t), -5.0), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::optics_drift);
  EXPECT_GE(out[0].evidence.at("drop_db"), 2.0);
  EXPECT_NEAR(out[0].evidence.at("baseline_dbm"), -2.0, 0.1);
  // A slow slide the baseline can follow is no drift: 1 dB over 12 hours.
  OpticsDetector slow(topo, shipped());
  std::vector<Finding> out2;
  for (int m = 0; m <= 12 * 60; ++m) slow.observe(rx(a, at(m * 60.0), -2.0 - m / 720.0), out2);
  EXPECT_TRUE(out2.empty());
}

TEST_F(OpticsTest, NoLightIsNoDrift) {
  OpticsDetector det(topo, crisp_drift());
  for (int t = 0; t <= 1800; t += 60) det.observe(rx(a, at(t), -2.0), out);
  det.observe(rx(a, at(1860), -40), out);
  det.observe(Delta(a, at(1920)).set(Counter::oper_up, 0).set(Counter::rx_power_dbm, -25), out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace medic::detectors::test

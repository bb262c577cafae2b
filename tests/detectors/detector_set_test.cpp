#include "detectors/detectors.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/detectors/detector_fixture.h"
#include "tests/support/testing.h"

namespace medic::detectors::test {
namespace {

class DetectorSetTest : public ::testing::Test {
 protected:
  DetectorConfig config = DetectorConfig::load_file(medic::testing::source_dir() + "/data/detectors.json");
  fabric::Topology topo = small_fabric();
  fabric::PortId port = *topo.find_port("rtsw1", "eth1");
  fabric::PortId peer = *topo.find_port("ctsw1", "eth1");
  fabric::PortId nic = *topo.find_port("host1", "nic0");
  DetectorSet set{topo, config};
  std::vector<Finding> out;
};

TEST_F(DetectorSetTest, ADeltaThatFlapsAndCorruptsYieldsBoth) {
  set.observe(Delta(port, at(60), 60)
                  .set(Counter::carrier_changes, 6)
                  .set(Counter::rx_crc_errors, 1e4)
                  .set(Counter::rx_packets, 1e9 - 1e4),
              out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(count(out, FindingKind::link_flap, Severity::critical), 1u);
  EXPECT_EQ(count(out, FindingKind::corruption, Severity::critical), 1u);
  EXPECT_DOUBLE_EQ(set.flap().penalty(port, at(60)), 3000);
  EXPECT_TRUE(set.flap().suppressed(*topo.find_link("rtsw1:eth1"), at(60)));
  EXPECT_DOUBLE_EQ(set.corruption().loss_rate(port), 1e-5);
  EXPECT_EQ(set.flap().config().suppress, 2500);  // the file's damping
}

TEST_F(DetectorSetTest, EveryDetectorSeesEveryDelta) {
  // One poll: bad optics and an FEC burst on rtsw1:eth1, a weak far end, a pausing host.
  for (int t = 10; t <= 30; t += 10) {
    set.observe(Delta(port, at(t))
                    .set(Counter::rx_power_dbm, -9.0)
                    .set(Counter::fec_corrected_bits, 1e10)
                    .set(Counter::fec_uncorrectable_codewords, 1),
                out);
    set.observe(Delta(peer, at(t)).set(Counter::tx_power_dbm, 1.0), out);
    set.observe(Delta(nic, at(t)).set(Counter::tx_pause, 1e4), out);
    set.end_poll(at(t), out);
  }
  EXPECT_EQ(count(out, FindingKind::optics_rx_power, Severity::critical), 1u);
  EXPECT_EQ(count(out, FindingKind::optics_loss, Severity::critical), 1u);  // compared at the poll's end
  EXPECT_EQ(count(out, FindingKind::fec_ber, Severity::critical), 1u);
  EXPECT_EQ(count(out, FindingKind::fec_uncorrectable, Severity::critical), 1u);
  EXPECT_EQ(count(out, FindingKind::slow_receiver, Severity::warning), 1u);
  EXPECT_EQ(out.size(), 5u);
  EXPECT_GT(set.fec().pre_fec_ber(port), 2.4e-4);
}

TEST_F(DetectorSetTest, PollOutcomesGoToTheStalenessDetector) {
  const fabric::DeviceId rtsw1 = *topo.find_device("rtsw1");
  set.observe_poll(rtsw1, false, at(0), "timeout", out);
  set.observe_poll(rtsw1, false, at(29), "timeout", out);
  EXPECT_TRUE(out.empty());
  set.observe_poll(rtsw1, false, at(30), "timeout", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::telemetry_stale);
  EXPECT_TRUE(set.stale().stale(rtsw1));
  set.observe_poll(rtsw1, true, at(40), "", out);
  EXPECT_FALSE(set.stale().stale(rtsw1));
}

TEST_F(DetectorSetTest, AQuietDeltaYieldsNothing) {
  for (int t = 10; t <= 300; t += 10) {
    set.observe(Delta(port, at(t))
                    .set(Counter::oper_up, 1)
                    .set(Counter::carrier_changes, 0)
                    .set(Counter::rx_packets, 1e8)
                    .set(Counter::tx_packets, 1e8)
                    .set(Counter::rx_crc_errors, 0)
                    .set(Counter::rx_discards, 0)
                    .set(Counter::fec_corrected_bits, 1e4)
                    .set(Counter::fec_uncorrectable_codewords, 0)
                    .set(Counter::rx_pause, 0)
                    .set(Counter::rx_power_dbm, -1.0)
                    .set(Counter::tx_power_dbm, 1.0)
                    .set(Counter::temperature_c, 45)
                    .set(Counter::laser_bias_ma, 7),
                out);
    set.end_poll(at(t), out);
  }
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace medic::detectors::test

#include "detectors/pfc.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "tests/detectors/detector_fixture.h"

namespace medic::detectors::test {
namespace {

// Pause frames over a 10 s interval; 5000 of them are exactly the 500/s rate.
Delta tx_pause(fabric::PortId p, Time t, double frames) {
  return Delta(p, t, 10).set(Counter::tx_pause, frames);
}
Delta rx_pause(fabric::PortId p, Time t, double frames) {
  return Delta(p, t, 10).set(Counter::rx_pause, frames);
}

class PfcTest : public ::testing::Test {
 protected:
  PfcConfig config;  // 500 pause frames/s for 30 s
  fabric::Topology topo = small_fabric();
  fabric::PortId nic = *topo.find_port("host1", "nic0");
  fabric::PortId tor_down = *topo.find_port("rtsw1", "eth10");  // faces host1
  fabric::PortId tor_up = *topo.find_port("rtsw1", "eth1");     // faces ctsw1
  fabric::DeviceId host1 = *topo.find_device("host1");
  PfcDetector det{topo, config};
  std::vector<Finding> out;

  void feed(const PortDelta& d) { det.observe(d, out); }
};

TEST_F(PfcTest, HostPausingItsTorIsASlowReceiver) {
  feed(tx_pause(nic, at(10), 5000));
  feed(tx_pause(nic, at(20), 5000));
  EXPECT_TRUE(out.empty());  // 20 s: not yet
  feed(tx_pause(nic, at(30), 5000));
  ASSERT_EQ(out.size(), 1u);  // 30 s: sustained
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::slow_receiver);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.device, host1);
  EXPECT_FALSE(topo.device(f.device).is_switch());
  EXPECT_EQ(f.port, nic);
  EXPECT_EQ(f.link, *topo.find_link("host1:nic0"));
  EXPECT_EQ(f.first_seen, at(0));
  EXPECT_EQ(f.observed_at, at(30));
  EXPECT_EQ(f.evidence.at("pause_rate"), 500);
  EXPECT_EQ(f.evidence.at("sustained_s"), 30);
  EXPECT_EQ(f.summary,
            "host host1 has been pausing its ToR for 30.0s (500 pause frames/s seen on host1:nic0): a slow receiver, "
            "not a link fault");
}

TEST_F(PfcTest, JustBelowThePauseRateIsNothing) {
  for (int t = 10; t <= 120; t += 10) feed(tx_pause(nic, at(t), 4999));
  EXPECT_TRUE(out.empty());
}

TEST_F(PfcTest, ReportedOnceWhileItLasts) {
  for (int t = 10; t <= 300; t += 10) feed(tx_pause(nic, at(t), 20000));
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(PfcTest, TheTorSideNamesTheHost) {
  for (int t = 10; t <= 30; t += 10) feed(rx_pause(tor_down, at(t), 6000));
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::slow_receiver);
  EXPECT_EQ(f.device, host1);  // the host at fault, not the switch that saw it
  EXPECT_EQ(f.port, tor_down);
  EXPECT_EQ(f.evidence.at("pause_rate"), 600);
  EXPECT_EQ(f.summary,
            "host host1 has been pausing its ToR for 30.0s (600 pause frames/s seen on rtsw1:eth10): a slow receiver, "
            "not a link fault");
}

TEST_F(PfcTest, SwitchesPausingEachOtherAreAPfcStorm) {
  for (int t = 10; t <= 30; t += 10) feed(rx_pause(tor_up, at(t), 5000));
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::pfc_storm);
  EXPECT_EQ(f.device, *topo.find_device("ctsw1"));  // the pausing peer
  EXPECT_EQ(f.port, tor_up);
  EXPECT_EQ(f.summary, "ctsw1 has been pausing rtsw1:eth1 for 30.0s (500 pause frames/s): PFC storm");
}

TEST_F(PfcTest, ADipRestartsTheSustainClock) {
  feed(tx_pause(nic, at(10), 5000));
  feed(tx_pause(nic, at(20), 5000));
  feed(tx_pause(nic, at(30), 4990));  // a dip
  feed(tx_pause(nic, at(40), 5000));
  feed(tx_pause(nic, at(50), 5000));
  EXPECT_TRUE(out.empty());  // 20 s since the dip
  feed(tx_pause(nic, at(60), 5000));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_seen, at(30));
}

TEST_F(PfcTest, ReportedAgainAfterItStops) {
  for (int t = 10; t <= 30; t += 10) feed(tx_pause(nic, at(t), 5000));
  feed(tx_pause(nic, at(40), 0));
  for (int t = 50; t <= 70; t += 10) feed(tx_pause(nic, at(t), 5000));
  EXPECT_EQ(out.size(), 2u);
}

TEST_F(PfcTest, CountersThatDoNotSayWhoPausesAreIgnored) {
  for (int t = 10; t <= 60; t += 10) {
    feed(rx_pause(nic, at(t), 1e6));      // the ToR pausing the host
    feed(tx_pause(tor_down, at(t), 1e6));  // likewise, seen from the ToR
    feed(tx_pause(tor_up, at(t), 1e6));    // the ToR pausing the spine
  }
  EXPECT_TRUE(out.empty());
}

TEST_F(PfcTest, ResetsMissingCountersAndGarbageAreIgnored) {
  for (int t = 10; t <= 60; t += 10) {
    feed(tx_pause(nic, at(t), 1e6).reset());
    feed(Delta(tor_down, at(t)).set(Counter::rx_packets, 1e9));
    feed(rx_pause(tor_up, at(t), std::numeric_limits<double>::quiet_NaN()));
  }
  feed(Delta(nic, at(70), 0).set(Counter::tx_pause, 1e6));  // no interval
  feed(tx_pause(*topo.find_port("host1", "nic1"), at(70), 1e6));  // no link
  feed(tx_pause(fabric::PortId(9999), at(70), 1e6));
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace medic::detectors::test

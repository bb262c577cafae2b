#include "detectors/stale.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/detectors/detector_fixture.h"

namespace medic::detectors::test {
namespace {

class StaleTest : public ::testing::Test {
 protected:
  StaleConfig config;  // 30 s
  fabric::Topology topo = small_fabric();
  fabric::DeviceId rtsw1 = *topo.find_device("rtsw1");
  fabric::DeviceId ctsw1 = *topo.find_device("ctsw1");
  StaleDetector det{topo, config};
  std::vector<Finding> out;

  void answered(fabric::DeviceId d, double t) { det.observe(d, true, at(t), "", out); }
  void silent(fabric::DeviceId d, double t, const std::string& error = "timeout") {
    det.observe(d, false, at(t), error, out);
  }
};

TEST_F(StaleTest, AnsweringDeviceIsNeverStale) {
  for (int t = 0; t <= 600; t += 10) answered(rtsw1, t);
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(det.stale(rtsw1));
}

TEST_F(StaleTest, DeviceThatNeverAnswersIsStaleFromItsFirstPoll) {
  silent(rtsw1, 100);
  silent(rtsw1, 110);
  silent(rtsw1, 129.999);
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(det.stale(rtsw1));
  silent(rtsw1, 130, "connection refused");
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::telemetry_stale);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.device, rtsw1);
  EXPECT_EQ(f.link, fabric::kNone);
  EXPECT_EQ(f.port, fabric::kNone);
  EXPECT_EQ(f.first_seen, at(100));
  EXPECT_EQ(f.observed_at, at(130));
  EXPECT_EQ(f.summary, "rtsw1 has not answered for 30.0s (last error: connection refused)");
  EXPECT_EQ(f.evidence.at("silent_s"), 30);
  EXPECT_TRUE(det.stale(rtsw1));
}

TEST_F(StaleTest, DeviceThatStopsAnsweringIsStaleFromItsLastAnswer) {
  answered(rtsw1, 0);
  answered(rtsw1, 100);
  silent(rtsw1, 110);
  silent(rtsw1, 129.9);
  EXPECT_TRUE(out.empty());
  silent(rtsw1, 130, "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_seen, at(100));
  EXPECT_EQ(out[0].summary, "rtsw1 has not answered for 30.0s");
  for (int t = 140; t <= 600; t += 10) silent(rtsw1, t);
  EXPECT_EQ(out.size(), 1u);  // once per silence
  EXPECT_TRUE(det.stale(rtsw1));
}

TEST_F(StaleTest, AnsweringAgainRearms) {
  answered(rtsw1, 0);
  silent(rtsw1, 30);
  ASSERT_EQ(out.size(), 1u);
  answered(rtsw1, 40);
  EXPECT_FALSE(det.stale(rtsw1));
  silent(rtsw1, 50);
  silent(rtsw1, 69);
  EXPECT_EQ(out.size(), 1u);
  silent(rtsw1, 70);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].first_seen, at(40));
}

TEST_F(StaleTest, DevicesAreJudgedApart) {
  answered(ctsw1, 0);
  silent(rtsw1, 0);
  for (int t = 10; t <= 60; t += 10) {
    answered(ctsw1, t);
    silent(rtsw1, t);
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].device, rtsw1);
  EXPECT_FALSE(det.stale(ctsw1));
  // A host exporter is a device like any other.
  silent(*topo.find_device("host1"), 0);
  silent(*topo.find_device("host1"), 30);
  EXPECT_EQ(out.size(), 2u);
  silent(fabric::DeviceId(9999), 0);
  silent(fabric::DeviceId(9999), 100);
  EXPECT_EQ(out.size(), 2u);
}


// ---------------------------------------------------------------------------------------
// Most devices silent at once: the collector's outage, not each device's.

TEST_F(StaleTest, AnOutageJudgesNoDeviceAndIsOneFindingOnceItLasts) {
  // Four devices asked, four failing, for 45 s.
  for (int t = 0; t <= 10; t += 10) {
    det.begin_poll(4, 0, at(t), out);
    answered(rtsw1, t);
    answered(ctsw1, t);
  }
  for (int t = 20; t <= 65; t += 5) {
    det.begin_poll(4, 4, at(t), out);
    silent(rtsw1, t);
    silent(ctsw1, t);
  }
  EXPECT_TRUE(det.in_outage());
  // No telemetry_stale for anyone; one telemetry_outage after 30 s of it.
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::telemetry_outage);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_EQ(out[0].device, fabric::kNone);
  EXPECT_EQ(out[0].first_seen, at(20));
  EXPECT_EQ(out[0].observed_at, at(50));
  EXPECT_EQ(out[0].summary, "4 of 4 devices have not answered their telemetry for 30.0s: the collector's side "
                            "(medicd's host or network, or the exporters' host), not each device");
  EXPECT_FALSE(det.stale(rtsw1));
  // They answer again: the outage clears, and nobody is stale for the silence it caused.
  out.clear();
  det.begin_poll(4, 0, at(70), out);
  answered(rtsw1, 70);
  answered(ctsw1, 70);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::telemetry_outage);
  EXPECT_TRUE(out[0].clears);
  EXPECT_EQ(out[0].severity, Severity::info);
  EXPECT_FALSE(det.in_outage());
}

TEST_F(StaleTest, AShortOutageMakesNoFindingAtAll) {
  det.begin_poll(2, 0, at(0), out);
  answered(rtsw1, 0);
  for (int t = 1; t <= 15; ++t) {
    det.begin_poll(2, 2, at(t), out);
    silent(rtsw1, t);
  }
  det.begin_poll(2, 0, at(16), out);
  answered(rtsw1, 16);
  EXPECT_TRUE(out.empty());
}

TEST_F(StaleTest, SilenceBeforeAnOutageStillCountsAfterIt) {
  // rtsw1 falls silent at 0, an outage runs from 20 to 60, and rtsw1 stays silent: it is
  // stale 30 s of its own silence later (20 s before the outage, 10 s after it), at 70.
  det.begin_poll(3, 1, at(0), out);
  silent(rtsw1, 0);
  det.begin_poll(3, 1, at(10), out);
  silent(rtsw1, 10);
  for (int t = 20; t <= 60; t += 10) {
    det.begin_poll(3, 3, at(t), out);
    silent(rtsw1, t);
  }
  out.clear();
  det.begin_poll(3, 1, at(61), out);  // the outage is over; rtsw1 still silent
  silent(rtsw1, 61);
  ASSERT_EQ(out.size(), 1u);  // the outage (40 s long, so reported) clears
  EXPECT_TRUE(out[0].clears);
  out.clear();
  det.begin_poll(3, 1, at(69), out);
  silent(rtsw1, 69);
  EXPECT_TRUE(out.empty());
  det.begin_poll(3, 1, at(71), out);
  silent(rtsw1, 71);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::telemetry_stale);
  EXPECT_EQ(out[0].device, rtsw1);
}

TEST_F(StaleTest, OutageNeedsAShareAndACount) {
  StaleConfig c;
  EXPECT_TRUE(telemetry_outage(6, 3, c));    // half
  EXPECT_FALSE(telemetry_outage(6, 2, c));
  EXPECT_FALSE(telemetry_outage(4, 2, c));   // half, but fewer than 3 devices
  EXPECT_FALSE(telemetry_outage(2, 2, c));   // fewer than 3 devices: those devices' own silence
  EXPECT_TRUE(telemetry_outage(6264, 3200, c));
  EXPECT_FALSE(telemetry_outage(6264, 2000, c));
  EXPECT_FALSE(telemetry_outage(0, 0, c));
}

// ---------------------------------------------------------------------------------------
// Counter values no port can produce.

class InvalidTelemetryTest : public ::testing::Test {
 protected:
  fabric::Topology topo = small_fabric();
  StaleConfig config;
  InvalidTelemetryDetector det{topo, config};
  std::vector<Finding> out;
  fabric::PortId port = *topo.find_port("rtsw1", "eth1");

  telemetry::PortDelta bad(double t, double value) {
    telemetry::PortDelta d;
    d.port = port;
    d.time = at(t);
    d.interval = std::chrono::seconds(1);
    d.implausible = telemetry::bit(telemetry::Counter::carrier_changes);
    d.implausible_value = value;
    return d;
  }
};

TEST_F(InvalidTelemetryTest, OneFindingPerDeviceAboutItsTelemetryNeverItsLink) {
  det.observe(bad(0, 18446744073709551616.0), out);
  det.observe(bad(1, 1e308), out);
  det.end_poll(at(1), out);
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::telemetry_invalid);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.device, *topo.find_device("rtsw1"));
  EXPECT_EQ(f.link, fabric::kNone);
  EXPECT_EQ(f.port, port);
  EXPECT_EQ(f.summary, "rtsw1:eth1 reported carrier_changes = 1.84467e+19, more than a 400 Gb/s port can count in "
                       "1.0s: the sample is left out; the device's telemetry is at fault, not its link");
  // Clean for `after` (30 s): the condition clears.
  out.clear();
  det.end_poll(at(30), out);
  EXPECT_TRUE(out.empty());
  det.end_poll(at(31), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].clears);
  EXPECT_EQ(out[0].kind, FindingKind::telemetry_invalid);
  // Another bad value later is a new finding.
  out.clear();
  det.observe(bad(40, 1e300), out);
  EXPECT_EQ(out.size(), 1u);
}

}  // namespace
}  // namespace medic::detectors::test

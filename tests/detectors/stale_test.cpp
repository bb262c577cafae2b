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

}  // namespace
}  // namespace medic::detectors::test

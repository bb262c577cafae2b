#include "detectors/flap.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "fabric/loader.h"

namespace medic::detectors {
namespace {

using telemetry::Counter;
using telemetry::PortDelta;

const Time kT0 = from_unix_seconds(1'800'000'000);

fabric::Topology small_topology() {
  return fabric::parse_topology(R"({
    "switches": [
      {"name": "rtsw1", "role": "rtsw", "telemetry": "http://sim/s/rtsw1/metrics", "driver": {"kind": "dryrun"}},
      {"name": "ctsw1", "role": "ctsw", "telemetry": "http://sim/s/ctsw1/metrics", "driver": {"kind": "dryrun"}}
    ],
    "links": [
      {"a": "rtsw1:eth1", "b": "ctsw1:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth2", "b": "ctsw1:eth2", "speed_gbps": 400}
    ]
  })",
                                "small.json");
}

// Deltas are built directly, as the tracker would produce them every `step`.
PortDelta delta(fabric::PortId port, Time t) {
  PortDelta d;
  d.port = port;
  d.time = t;
  d.interval = std::chrono::seconds(10);
  return d;
}

PortDelta carrier(fabric::PortId port, Time t, double changes) {
  PortDelta d = delta(port, t);
  d.v[static_cast<size_t>(Counter::carrier_changes)] = changes;
  d.present |= telemetry::bit(Counter::carrier_changes);
  return d;
}

PortDelta link_downs(fabric::PortId port, Time t, double downs) {
  PortDelta d = delta(port, t);
  d.v[static_cast<size_t>(Counter::link_down_events)] = downs;
  d.present |= telemetry::bit(Counter::link_down_events);
  return d;
}

PortDelta oper(fabric::PortId port, Time t, bool up) {
  PortDelta d = delta(port, t);
  d.v[static_cast<size_t>(Counter::oper_up)] = up ? 1 : 0;
  d.present |= telemetry::bit(Counter::oper_up);
  return d;
}

Time at(int seconds) { return kT0 + std::chrono::seconds(seconds); }

class FlapTest : public ::testing::Test {
 protected:
  fabric::Topology topo = small_topology();
  fabric::PortId port = *topo.find_port("rtsw1", "eth1");
  fabric::PortId peer_port = *topo.find_port("ctsw1", "eth1");
  fabric::PortId other = *topo.find_port("rtsw1", "eth2");
  FlapDetector det{topo, FlapConfig{}};  // 6 transitions in 60 s
  std::vector<Finding> out;
};

TEST_F(FlapTest, BelowThresholdNoFinding) {
  det.observe(carrier(port, at(10), 2), out);
  det.observe(carrier(port, at(20), 2), out);
  det.observe(carrier(port, at(30), 1), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.transitions_in_window(port, at(30)), 5);
}

TEST_F(FlapTest, QuietLinkNoFinding) {
  for (int t = 10; t <= 600; t += 10) det.observe(carrier(port, at(t), 0), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.transitions_in_window(port, at(600)), 0);
}

TEST_F(FlapTest, ExactlyAtThresholdOneFinding) {
  det.observe(carrier(port, at(0), 0), out);
  det.observe(carrier(port, at(10), 2), out);
  det.observe(carrier(port, at(20), 2), out);
  EXPECT_TRUE(out.empty());
  det.observe(carrier(port, at(30), 2), out);
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::link_flap);
  EXPECT_EQ(f.severity, Severity::critical);
  EXPECT_EQ(f.link, *topo.find_link("rtsw1:eth1"));
  EXPECT_EQ(f.port, port);
  EXPECT_EQ(f.device, *topo.find_device("rtsw1"));
  EXPECT_EQ(f.first_seen, at(10));  // the first transition in the window
  EXPECT_EQ(f.observed_at, at(30));
  EXPECT_EQ(f.evidence.at("transitions"), 6.0);
  EXPECT_EQ(f.evidence.at("window_s"), 60.0);
  EXPECT_EQ(f.evidence.at("threshold"), 6.0);
  EXPECT_EQ(f.evidence.count("oper_up"), 0u);  // not in these deltas
  EXPECT_EQ(f.summary, "6 carrier transitions in 1m00s on rtsw1:eth1");
}

TEST_F(FlapTest, OneBigDeltaReachesTheThreshold) {
  det.observe(carrier(port, at(10), 8), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_seen, at(10));
  EXPECT_EQ(out[0].evidence.at("transitions"), 8.0);
}

TEST_F(FlapTest, ReportsOnceWhileFlappingContinues) {
  for (int t = 10; t <= 600; t += 10) det.observe(carrier(port, at(t), 2), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].observed_at, at(30));
  EXPECT_EQ(det.transitions_in_window(port, at(600)), 12);  // 6 deltas of 2 inside 60 s
}

TEST_F(FlapTest, TransitionsLeavingTheWindowExpire) {
  det.observe(carrier(port, at(0), 3), out);
  EXPECT_EQ(det.transitions_in_window(port, at(0)), 3);
  EXPECT_EQ(det.transitions_in_window(port, at(59)), 3);
  EXPECT_EQ(det.transitions_in_window(port, at(60)), 0);  // exactly one window later: gone
  // 3 at t=0 and 3 at t=60 are never inside one 60 s window.
  det.observe(carrier(port, at(60), 3), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.transitions_in_window(port, at(60)), 3);
  // ... but 3 at t=60 and 3 at t=119 are.
  det.observe(carrier(port, at(119), 3), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_seen, at(60));
  EXPECT_EQ(out[0].evidence.at("transitions"), 6.0);
}

TEST_F(FlapTest, SlowFlappingNeverReachesTheThreshold) {
  // One transition every 15 s is 4 per window: below 6 forever.
  for (int t = 15; t <= 1500; t += 15) det.observe(carrier(port, at(t), 1), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.transitions_in_window(port, at(1500)), 4);
}

TEST_F(FlapTest, ReportsAgainAfterAQuietWindow) {
  for (int t = 10; t <= 50; t += 10) det.observe(carrier(port, at(t), 2), out);
  ASSERT_EQ(out.size(), 1u);
  // Quiet deltas for more than a window.
  for (int t = 60; t <= 120; t += 10) det.observe(carrier(port, at(t), 0), out);
  EXPECT_EQ(det.transitions_in_window(port, at(120)), 0);
  // A new episode is a new finding.
  for (int t = 130; t <= 160; t += 10) det.observe(carrier(port, at(t), 2), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].first_seen, at(130));
  EXPECT_EQ(out[1].observed_at, at(150));
}

TEST_F(FlapTest, ReportsAgainAfterAQuietWindowWithoutDeltasInBetween) {
  // Telemetry went silent after the first episode; the next delta already flaps.
  for (int t = 10; t <= 30; t += 10) det.observe(carrier(port, at(t), 2), out);
  ASSERT_EQ(out.size(), 1u);
  det.observe(carrier(port, at(200), 6), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].first_seen, at(200));
  EXPECT_EQ(out[1].evidence.at("transitions"), 6.0);
}

TEST_F(FlapTest, QuietWindowThenSlowStartStillReportsTheNextEpisode) {
  for (int t = 10; t <= 30; t += 10) det.observe(carrier(port, at(t), 2), out);
  ASSERT_EQ(out.size(), 1u);
  // More than a window later, one transition (below threshold), then a burst.
  det.observe(carrier(port, at(100), 1), out);
  EXPECT_EQ(out.size(), 1u);
  det.observe(carrier(port, at(110), 5), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].first_seen, at(100));
}

TEST_F(FlapTest, NotQuietEnoughDoesNotReportAgain) {
  for (int t = 10; t <= 30; t += 10) det.observe(carrier(port, at(t), 2), out);
  ASSERT_EQ(out.size(), 1u);
  // Dropping below the threshold is not the same as a quiet window.
  det.observe(carrier(port, at(80), 1), out);
  EXPECT_EQ(det.transitions_in_window(port, at(80)), 3);
  det.observe(carrier(port, at(85), 5), out);
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(FlapTest, LinkDownEventsCountTwice) {
  det.observe(link_downs(port, at(10), 2), out);
  EXPECT_EQ(det.transitions_in_window(port, at(10)), 4);
  EXPECT_TRUE(out.empty());
  det.observe(link_downs(port, at(20), 1), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].evidence.at("transitions"), 6.0);
}

TEST_F(FlapTest, CarrierCounterWinsOverLinkDownEvents) {
  PortDelta d = carrier(port, at(10), 1);
  d.v[static_cast<size_t>(Counter::link_down_events)] = 5;
  d.present |= telemetry::bit(Counter::link_down_events);
  det.observe(d, out);
  EXPECT_EQ(det.transitions_in_window(port, at(10)), 1);
}

TEST_F(FlapTest, OperStateFallbackWithoutCarrierCounter) {
  // The first reading only sets the baseline.
  det.observe(oper(port, at(0), true), out);
  EXPECT_EQ(det.transitions_in_window(port, at(0)), 0);
  det.observe(oper(port, at(10), true), out);  // no change
  EXPECT_EQ(det.transitions_in_window(port, at(10)), 0);
  bool up = true;
  for (int t = 15; t <= 35; t += 5) {
    up = !up;
    det.observe(oper(port, at(t), up), out);
  }
  EXPECT_EQ(det.transitions_in_window(port, at(35)), 5);
  EXPECT_TRUE(out.empty());
  det.observe(oper(port, at(40), !up), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_seen, at(15));
  EXPECT_EQ(out[0].evidence.at("transitions"), 6.0);
  ASSERT_EQ(out[0].evidence.count("oper_up"), 1u);
  EXPECT_EQ(out[0].evidence.at("oper_up"), !up ? 1.0 : 0.0);
}

TEST_F(FlapTest, OperStateIsNotCountedWhenTheCarrierCounterIsThere) {
  det.observe(oper(port, at(0), true), out);
  for (int t = 10; t <= 100; t += 10) {
    PortDelta d = oper(port, at(t), t % 20 == 0);
    d.v[static_cast<size_t>(Counter::carrier_changes)] = 0;
    d.present |= telemetry::bit(Counter::carrier_changes);
    det.observe(d, out);
  }
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.transitions_in_window(port, at(100)), 0);
}

TEST_F(FlapTest, CountersResetDeltaIsNotAFlap) {
  // A device reboot: the delta says the counters restarted. Whatever the carrier counter
  // did across the reboot is not evidence of a flapping link.
  PortDelta d = carrier(port, at(10), 40);
  d.counters_reset = true;
  det.observe(d, out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.transitions_in_window(port, at(10)), 0);

  PortDelta downs = link_downs(port, at(20), 10);
  downs.counters_reset = true;
  det.observe(downs, out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.transitions_in_window(port, at(20)), 0);

  // Normal deltas afterwards count as usual.
  det.observe(carrier(port, at(30), 6), out);
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(FlapTest, CountersResetDeltaWithOnlyOperStateIsNotAFlap) {
  // The tracker drops the carrier counter on a reset; the oper-state fallback must not
  // turn the reboot's own down/up into transitions.
  det.observe(oper(port, at(0), true), out);
  for (int t = 10; t <= 60; t += 10) {
    PortDelta d = oper(port, at(t), t % 20 == 0);
    d.counters_reset = true;
    det.observe(d, out);
  }
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.transitions_in_window(port, at(60)), 0);
}

TEST_F(FlapTest, PortsAreIndependent) {
  det.observe(carrier(port, at(10), 3), out);
  det.observe(carrier(peer_port, at(10), 3), out);
  det.observe(carrier(other, at(10), 3), out);
  EXPECT_TRUE(out.empty());
  det.observe(carrier(peer_port, at(20), 3), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, peer_port);
  EXPECT_EQ(out[0].device, *topo.find_device("ctsw1"));
  EXPECT_EQ(out[0].link, *topo.find_link("rtsw1:eth1"));  // same link as rtsw1:eth1
  EXPECT_EQ(out[0].summary, "6 carrier transitions in 1m00s on ctsw1:eth1");
  EXPECT_EQ(det.transitions_in_window(port, at(20)), 3);
}

TEST_F(FlapTest, UnknownPortIsIgnored) {
  det.observe(carrier(9999, at(10), 100), out);
  EXPECT_TRUE(out.empty());
}

TEST_F(FlapTest, NegativeOrFractionalChangesAreNotTransitions) {
  det.observe(carrier(port, at(10), -5), out);
  det.observe(carrier(port, at(20), 0.5), out);
  EXPECT_EQ(det.transitions_in_window(port, at(20)), 0);
}

TEST(FlapCustomConfig, ThresholdAndWindowAreHonoured) {
  const fabric::Topology topo = small_topology();
  const fabric::PortId port = *topo.find_port("rtsw1", "eth2");
  FlapConfig cfg;
  cfg.window = std::chrono::seconds(10);
  cfg.transitions = 2;
  FlapDetector det(topo, cfg);
  std::vector<Finding> out;
  det.observe(carrier(port, at(0), 1), out);
  det.observe(carrier(port, at(10), 1), out);  // the first has just left the window
  EXPECT_TRUE(out.empty());
  det.observe(carrier(port, at(15), 1), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_seen, at(10));
  EXPECT_EQ(out[0].evidence.at("window_s"), 10.0);
  EXPECT_EQ(out[0].evidence.at("threshold"), 2.0);
  EXPECT_EQ(out[0].summary, "2 carrier transitions in 10.0s on rtsw1:eth2");
}

TEST(FlapConfigValidate, DefaultsAreValid) {
  EXPECT_NO_THROW(FlapConfig{}.validate());
  FlapConfig c;
  c.transitions = 2;
  c.window = Duration(1);
  EXPECT_NO_THROW(c.validate());
}

TEST(FlapConfigValidate, RejectsBadWindow) {
  for (const Duration w : {Duration::zero(), Duration(-1), Duration(std::chrono::seconds(-60))}) {
    FlapConfig c;
    c.window = w;
    try {
      c.validate();
      ADD_FAILURE() << "accepted window " << w.count();
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("flap.window"));
    }
  }
}

TEST(FlapConfigValidate, RejectsTooFewTransitions) {
  for (const int n : {1, 0, -3}) {
    FlapConfig c;
    c.transitions = n;
    try {
      c.validate();
      ADD_FAILURE() << "accepted transitions " << n;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("flap.transitions"));
    }
  }
}

TEST(FlapConfigValidate, DetectorRefusesABadConfig) {
  const fabric::Topology topo = small_topology();
  FlapConfig c;
  c.transitions = 1;
  EXPECT_THROW(FlapDetector(topo, c), std::invalid_argument);
  c = FlapConfig{};
  c.window = Duration::zero();
  EXPECT_THROW(FlapDetector(topo, c), std::invalid_argument);
}

TEST(FindingNames, KindAndSeverityStrings) {
  EXPECT_EQ(to_string(FindingKind::link_flap), "link_flap");
  EXPECT_EQ(parse_finding_kind("link_flap"), FindingKind::link_flap);
  EXPECT_FALSE(parse_finding_kind("flap"));
  EXPECT_EQ(to_string(Severity::info), "info");
  EXPECT_EQ(to_string(Severity::warning), "warning");
  EXPECT_EQ(to_string(Severity::critical), "critical");
}

}  // namespace
}  // namespace medic::detectors

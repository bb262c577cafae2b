#include "detectors/flap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/detectors/detector_fixture.h"

namespace medic::detectors::test {
namespace {

Delta carrier(fabric::PortId port, Time t, double changes, double interval_s = 10) {
  return Delta(port, t, interval_s).set(Counter::carrier_changes, changes);
}

// The penalty `p` decayed over `dt` seconds with the default 60 s half-life.
double decay(double p, double dt) { return p * std::exp2(-dt / 60.0); }

class FlapTest : public ::testing::Test {
 protected:
  FlapConfig config;  // the defaults: 1000 a flap, 60 s half-life, suppress 2500, reuse 800
  fabric::Topology topo = small_fabric();
  fabric::PortId port = *topo.find_port("rtsw1", "eth1");
  fabric::PortId peer = *topo.find_port("ctsw1", "eth1");
  fabric::PortId other = *topo.find_port("rtsw1", "eth2");
  fabric::LinkId link = *topo.find_link("rtsw1:eth1");
  FlapDetector det{topo, config};
  std::vector<Finding> out;

  void feed(const PortDelta& d) { det.observe(d, out); }
  // `n` linkDown/linkUp notifications for `port`: down at 1, 3, 5 ... s, up a second later.
  void notify_flaps(int n) {
    for (int i = 0; i < n; ++i) {
      det.link_event(port, false, at(1 + 2 * i), out);
      det.link_event(port, true, at(2 + 2 * i), out);
    }
  }
};

TEST_F(FlapTest, DefaultsAreTheDocumentedDamping) {
  EXPECT_EQ(config.penalty_per_flap, 1000);
  EXPECT_EQ(config.half_life, std::chrono::seconds(60));
  EXPECT_EQ(config.suppress, 2500);
  EXPECT_EQ(config.reuse, 800);
  EXPECT_EQ(config.max_penalty, 8000);
  EXPECT_EQ(config.down_hold, std::chrono::seconds(30));
  EXPECT_EQ(config.trap_confirm, std::chrono::seconds(30));
}

TEST_F(FlapTest, QuietPortMakesNothing) {
  for (int t = 10; t <= 600; t += 10) feed(carrier(port, at(t), 0));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.penalty(port, at(600)), 0.0);
  EXPECT_FALSE(det.suppressed(link, at(600)));
}

TEST_F(FlapTest, OneFlapIsNotedNotCritical) {
  feed(carrier(port, at(10), 2));
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::link_flap);
  EXPECT_EQ(f.severity, Severity::info);
  EXPECT_EQ(f.link, link);
  EXPECT_EQ(f.port, port);
  EXPECT_EQ(f.device, *topo.find_device("rtsw1"));
  EXPECT_EQ(f.first_seen, at(0));  // somewhere in the interval
  EXPECT_EQ(f.observed_at, at(10));
  EXPECT_EQ(f.summary, "flap noted on rtsw1:eth1: penalty 1000 (suppress at 2500)");
  EXPECT_EQ(f.evidence.at("penalty"), 1000);
  EXPECT_EQ(f.evidence.at("flaps"), 1);
  EXPECT_EQ(f.evidence.at("suppress"), 2500);
  EXPECT_EQ(f.evidence.at("reuse"), 800);
  EXPECT_EQ(f.evidence.at("half_life_s"), 60);
  EXPECT_EQ(f.evidence.count("oper_up"), 0u);  // not in this delta
  EXPECT_DOUBLE_EQ(det.penalty(port, at(10)), 1000);
  EXPECT_FALSE(det.suppressed(link, at(10)));
  EXPECT_EQ(det.penalty(other, at(10)), 0.0);  // nothing leaks to another port
}

TEST_F(FlapTest, ThreeFlapsWithinSecondsAreOneCriticalFinding) {
  feed(carrier(port, at(1), 2, 1));
  feed(carrier(port, at(2), 2, 1));
  feed(carrier(port, at(3), 2, 1));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(count(out, FindingKind::link_flap, Severity::info), 2u);
  EXPECT_EQ(count(out, FindingKind::link_flap, Severity::critical), 1u);
  const Finding& f = out[2];
  EXPECT_EQ(f.severity, Severity::critical);
  EXPECT_EQ(f.first_seen, at(1));  // the delta that carried the episode's first flap
  EXPECT_EQ(f.observed_at, at(3));
  EXPECT_EQ(f.summary, "rtsw1:eth1 keeps flapping: 3 flaps since 08:00:01, penalty 2966 >= suppress 2500");
  EXPECT_EQ(f.evidence.at("flaps"), 3);
  EXPECT_EQ(f.evidence.at("penalty"), 2966);
  EXPECT_NEAR(det.penalty(port, at(3)), decay(decay(1000, 1) + 1000, 1) + 1000, 1e-6);
  EXPECT_TRUE(det.suppressed(link, at(3)));
}

TEST_F(FlapTest, PenaltyHalvesEveryHalfLife) {
  feed(carrier(port, at(10), 2));
  for (const double dt : {0.0, 1.0, 30.0, 60.0, 120.0, 600.0}) {
    const double expect = 1000 * std::exp2(-dt / 60.0);
    EXPECT_NEAR(det.penalty(port, at(10 + dt)), expect, 1e-6 * expect) << dt;
  }
  EXPECT_DOUBLE_EQ(det.penalty(port, at(70)), 500);
  EXPECT_DOUBLE_EQ(det.penalty(port, at(130)), 250);
  // The decay is applied on every observation, and adds up to the same curve.
  for (int t = 20; t <= 130; t += 10) feed(carrier(port, at(t), 0));
  EXPECT_NEAR(det.penalty(port, at(130)), 250, 1e-6 * 250);
  EXPECT_EQ(det.penalty(fabric::PortId(9999), at(130)), 0.0);  // no such port
}

TEST_F(FlapTest, JustBelowSuppressStaysInfo) {
  config.penalty_per_flap = 833;
  FlapDetector d833(topo, config);
  d833.observe(carrier(port, at(10), 6), out);  // three flaps in one interval: 2499
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::info);
  EXPECT_DOUBLE_EQ(d833.penalty(port, at(10)), 2499);
  EXPECT_FALSE(d833.suppressed(link, at(10)));
}

TEST_F(FlapTest, JustAboveSuppressIsCritical) {
  config.penalty_per_flap = 834;
  FlapDetector d834(topo, config);
  d834.observe(carrier(port, at(10), 6), out);  // 2502
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_EQ(out[0].evidence.at("flaps"), 3);
  EXPECT_DOUBLE_EQ(d834.penalty(port, at(10)), 2502);
  EXPECT_TRUE(d834.suppressed(link, at(10)));
}

TEST_F(FlapTest, ExactlyAtSuppressIsCritical) {
  config.penalty_per_flap = 1250;
  FlapDetector d(topo, config);
  d.observe(carrier(port, at(10), 4), out);  // 2500
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
}

TEST_F(FlapTest, DecayDecidesBetweenBelowAndAboveSuppress) {
  // Two flaps, then a third 25 s later: 2000 decayed to 1498.3, plus 1000 = 2498.3.
  feed(carrier(port, at(0), 4));
  feed(carrier(port, at(25), 2, 25));
  EXPECT_NEAR(det.penalty(port, at(25)), decay(2000, 25) + 1000, 1e-6 * 2500);
  EXPECT_LT(det.penalty(port, at(25)), 2500);
  EXPECT_EQ(count(out, FindingKind::link_flap, Severity::critical), 0u);
  EXPECT_EQ(count(out, FindingKind::link_flap, Severity::info), 2u);

  // The same a second earlier: 2515.7.
  FlapDetector early(topo, config);
  std::vector<Finding> out2;
  early.observe(carrier(port, at(0), 4), out2);
  early.observe(carrier(port, at(24), 2, 24), out2);
  EXPECT_NEAR(early.penalty(port, at(24)), decay(2000, 24) + 1000, 1e-6 * 2500);
  EXPECT_GT(early.penalty(port, at(24)), 2500);
  EXPECT_EQ(count(out2, FindingKind::link_flap, Severity::critical), 1u);
}

TEST_F(FlapTest, WhileSuppressedMoreFlapsMakeNoFinding) {
  feed(carrier(port, at(10), 6));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].severity, Severity::critical);
  for (int t = 20; t <= 60; t += 10) feed(carrier(port, at(t), 2));
  EXPECT_EQ(out.size(), 1u);
  EXPECT_TRUE(det.suppressed(link, at(60)));
  EXPECT_GT(det.penalty(port, at(60)), 3000);  // the flaps still count
}

TEST_F(FlapTest, SuppressedUntilTheDecayedPenaltyIsBelowReuse) {
  feed(carrier(port, at(0), 6));  // 3000: suppressed; below 800 after 114.41 s
  EXPECT_TRUE(det.suppressed(link, at(0)));
  EXPECT_TRUE(det.suppressed(link, at(60)));
  EXPECT_TRUE(det.suppressed(link, at(114)));
  EXPECT_GE(det.penalty(port, at(114)), 800);
  EXPECT_FALSE(det.suppressed(link, at(115)));
  EXPECT_LT(det.penalty(port, at(115)), 800);
  EXPECT_FALSE(det.suppressed(link, at(1000)));
}

TEST_F(FlapTest, SuppressionOnEitherEndHoldsTheLink) {
  feed(carrier(peer, at(0), 6));
  EXPECT_TRUE(det.suppressed(link, at(0)));
  EXPECT_FALSE(det.suppressed(*topo.find_link("rtsw1:eth2"), at(0)));
}

TEST_F(FlapTest, ReleasedPortIsNotResuppressedByOneMoreFlap) {
  // Suppressed at 3000; no delta for 120 s, by when it had decayed to 750, below reuse.
  // The next flap takes it to 1750: a noted flap on a released port, not a suppressed one.
  feed(carrier(port, at(0), 6));
  feed(carrier(port, at(120), 2, 120));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].severity, Severity::info);
  EXPECT_NEAR(det.penalty(port, at(120)), 1750, 1e-6 * 1750);
  EXPECT_FALSE(det.suppressed(link, at(120)));
}

TEST_F(FlapTest, MaxPenaltyCapsHowLongSuppressionLasts) {
  feed(carrier(port, at(0), 40));  // 20 flaps: 20000, capped
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_EQ(out[0].evidence.at("penalty"), 8000);
  EXPECT_EQ(out[0].evidence.at("flaps"), 20);
  EXPECT_DOUBLE_EQ(det.penalty(port, at(0)), 8000);
  feed(carrier(port, at(1), 40, 1));
  EXPECT_DOUBLE_EQ(det.penalty(port, at(1)), 8000);
  // From 8000 to below 800 takes log2(10) half-lives after the last flap: 199.3 s.
  EXPECT_TRUE(det.suppressed(link, at(1 + 199)));
  EXPECT_FALSE(det.suppressed(link, at(1 + 200)));
}

TEST_F(FlapTest, LinkDownEventsCountOneFlapEach) {
  feed(Delta(port, at(10)).set(Counter::link_down_events, 1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::info);
  EXPECT_DOUBLE_EQ(det.penalty(port, at(10)), 1000);
  feed(Delta(port, at(11), 1).set(Counter::link_down_events, 2));
  EXPECT_NEAR(det.penalty(port, at(11)), decay(1000, 1) + 2000, 1e-6 * 3000);
  EXPECT_EQ(count(out, FindingKind::link_flap, Severity::critical), 1u);
}

TEST_F(FlapTest, CarrierChangesAreTheFirstChoice) {
  // Both counters: carrier transitions are used (2 transitions, one flap), not 3 downs.
  feed(Delta(port, at(10)).set(Counter::carrier_changes, 2).set(Counter::link_down_events, 3));
  EXPECT_DOUBLE_EQ(det.penalty(port, at(10)), 1000);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::info);
}

TEST_F(FlapTest, OddTransitionCountsRoundUpToWholeFlaps) {
  feed(carrier(port, at(10), 1));  // went down: that is the flap
  EXPECT_DOUBLE_EQ(det.penalty(port, at(10)), 1000);
  FlapDetector d3(topo, config);
  d3.observe(carrier(port, at(10), 3), out);  // down, up, down: two flaps
  EXPECT_DOUBLE_EQ(d3.penalty(port, at(10)), 2000);
}

TEST_F(FlapTest, OneFlapSplitAcrossTwoPollsCountsOnce) {
  feed(carrier(port, at(10), 1));  // down
  feed(carrier(port, at(20), 1));  // back up
  EXPECT_EQ(out.size(), 1u);
  EXPECT_NEAR(det.penalty(port, at(20)), decay(1000, 10), 1e-6 * 1000);
  feed(carrier(port, at(30), 1));  // down again: the second flap
  EXPECT_EQ(out.size(), 2u);
  EXPECT_NEAR(det.penalty(port, at(30)), decay(1000, 20) + 1000, 1e-6 * 2000);
}

TEST_F(FlapTest, SplitFlapWithOperStatusCountsOnce) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  feed(Delta(port, at(10)).set(Counter::oper_up, 0).set(Counter::carrier_changes, 1));
  feed(Delta(port, at(20)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].evidence.at("oper_up"), 0);
  EXPECT_NEAR(det.penalty(port, at(20)), decay(1000, 10), 1e-6 * 1000);
}

TEST_F(FlapTest, PortComingUpIsNotAFlap) {
  // First seen down, then up with one carrier transition: it came up, it did not flap.
  feed(Delta(port, at(0)).set(Counter::oper_up, 0).set(Counter::carrier_changes, 0));
  feed(Delta(port, at(10)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 1));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.penalty(port, at(10)), 0.0);
}

TEST_F(FlapTest, OperStatusChangesAreTheFallback) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1));
  EXPECT_TRUE(out.empty());  // the first reading is no change
  feed(Delta(port, at(10)).set(Counter::oper_up, 0));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::info);
  EXPECT_DOUBLE_EQ(det.penalty(port, at(10)), 1000);
  feed(Delta(port, at(20)).set(Counter::oper_up, 1));  // the same flap ends
  EXPECT_EQ(out.size(), 1u);
  feed(Delta(port, at(30)).set(Counter::oper_up, 1));
  EXPECT_EQ(out.size(), 1u);
  feed(Delta(port, at(40)).set(Counter::oper_up, 0));  // a second flap
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(det.penalty(port, at(40)), decay(1000, 30) + 1000, 1e-6 * 2000);
}

TEST_F(FlapTest, CountersResetCountsNothing) {
  feed(Delta(port, at(10)).set(Counter::carrier_changes, 1000).reset());
  feed(Delta(port, at(20)).set(Counter::link_down_events, 500).reset());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.penalty(port, at(20)), 0.0);
  // Counting resumes with the next normal delta.
  feed(carrier(port, at(30), 2));
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(FlapTest, MissingCountersCountNothing) {
  feed(Delta(port, at(10)));
  feed(Delta(port, at(20)).set(Counter::rx_packets, 1e6));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.penalty(port, at(20)), 0.0);
}

TEST_F(FlapTest, GarbageCountsNothing) {
  feed(carrier(port, at(10), kNaN));
  feed(Delta(port, at(20)).set(Counter::link_down_events, kNaN));
  feed(carrier(port, at(30), std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.penalty(port, at(30)), 0.0);
}

TEST_F(FlapTest, GarbageOperStatusIsNotADownLink) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1));
  for (int t = 10; t <= 120; t += 10) feed(Delta(port, at(t)).set(Counter::oper_up, kNaN));
  EXPECT_TRUE(out.empty());
}

TEST_F(FlapTest, UnknownPortIsIgnored) {
  feed(carrier(fabric::PortId(9999), at(10), 10));
  EXPECT_TRUE(out.empty());
}

TEST_F(FlapTest, ALaterEpisodeStartsAfresh) {
  feed(carrier(port, at(0), 2));  // decays to 1000 / 2^10 by t=600
  feed(carrier(port, at(600), 2, 1));
  feed(carrier(port, at(601), 2, 1));
  feed(carrier(port, at(602), 2, 1));
  const auto flaps = of_kind(out, FindingKind::link_flap);
  ASSERT_EQ(flaps.size(), 4u);
  EXPECT_EQ(flaps[3].severity, Severity::critical);
  EXPECT_EQ(flaps[3].first_seen, at(600));
  EXPECT_EQ(flaps[3].evidence.at("flaps"), 3);
}

TEST_F(FlapTest, DownLongerThanTheHoldIsLinkDownOnce) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1));
  feed(Delta(port, at(10)).set(Counter::oper_up, 0));  // down from here (and a flap noted)
  feed(Delta(port, at(39.9), 29.9).set(Counter::oper_up, 0));
  EXPECT_TRUE(of_kind(out, FindingKind::link_down).empty());  // 29.9 s
  feed(Delta(port, at(40), 0.1).set(Counter::oper_up, 0));
  auto downs = of_kind(out, FindingKind::link_down);
  ASSERT_EQ(downs.size(), 1u);  // 30 s
  EXPECT_EQ(downs[0].severity, Severity::warning);
  EXPECT_EQ(downs[0].first_seen, at(10));
  EXPECT_EQ(downs[0].observed_at, at(40));
  EXPECT_EQ(downs[0].link, link);
  EXPECT_EQ(downs[0].summary, "rtsw1:eth1 down for 30.0s");
  EXPECT_EQ(downs[0].evidence.at("down_s"), 30);
  EXPECT_EQ(downs[0].evidence.at("oper_up"), 0);
  for (int t = 50; t <= 200; t += 10) feed(Delta(port, at(t)).set(Counter::oper_up, 0));
  EXPECT_EQ(of_kind(out, FindingKind::link_down).size(), 1u);  // once

  // Up again re-arms it: the next long outage is reported from its own start.
  feed(Delta(port, at(210)).set(Counter::oper_up, 1));
  feed(Delta(port, at(220)).set(Counter::oper_up, 0));
  feed(Delta(port, at(249)).set(Counter::oper_up, 0));
  EXPECT_EQ(of_kind(out, FindingKind::link_down).size(), 1u);
  feed(Delta(port, at(250)).set(Counter::oper_up, 0));
  downs = of_kind(out, FindingKind::link_down);
  ASSERT_EQ(downs.size(), 2u);
  EXPECT_EQ(downs[1].first_seen, at(220));
}

TEST_F(FlapTest, ShortOutagesAreNotLinkDown) {
  for (int i = 0; i < 10; ++i) {
    feed(Delta(port, at(i * 40)).set(Counter::oper_up, 1));
    feed(Delta(port, at(i * 40 + 20)).set(Counter::oper_up, 0));  // down for 20 s each time
  }
  EXPECT_TRUE(of_kind(out, FindingKind::link_down).empty());
}

TEST_F(FlapTest, ValidateRejectsBadDamping) {
  auto message = [](FlapConfig c) -> std::string {
    try {
      c.validate();
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(FlapConfig{}), "");
  FlapConfig c;
  c.reuse = c.suppress;
  EXPECT_EQ(message(c), "flap.reuse must be positive and below flap.suppress");
  c = FlapConfig{};
  c.reuse = 3000;
  EXPECT_EQ(message(c), "flap.reuse must be positive and below flap.suppress");
  c = FlapConfig{};
  c.reuse = 0;
  EXPECT_EQ(message(c), "flap.reuse must be positive and below flap.suppress");
  c = FlapConfig{};
  c.max_penalty = 2499;
  EXPECT_EQ(message(c), "flap.max_penalty must be at least flap.suppress");
  c = FlapConfig{};
  c.max_penalty = 2500;
  EXPECT_EQ(message(c), "");
  c = FlapConfig{};
  c.half_life = Duration(0);
  EXPECT_EQ(message(c), "flap.half_life_s must be positive");
  c.half_life = std::chrono::seconds(-5);
  EXPECT_EQ(message(c), "flap.half_life_s must be positive");
  c = FlapConfig{};
  c.penalty_per_flap = 0;
  EXPECT_EQ(message(c), "flap.penalty_per_flap must be positive");
  c = FlapConfig{};
  c.down_hold = Duration(0);
  EXPECT_EQ(message(c), "flap.down_hold_s must be positive");

  FlapConfig bad;
  bad.reuse = 2600;
  EXPECT_THROW(FlapDetector(topo, bad), ConfigError);
}

// --- link events (SNMP linkDown/linkUp notifications) -------------------------------------

// A real flap, seen by notifications between polls: each down counts at once; reaching
// suppress on them alone is a warning (nothing is drained); the poll's counters confirming
// them make it critical.
TEST_F(FlapTest, LinkEventsCountAtOnceAndThePollConfirmsThem) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  notify_flaps(3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].severity, Severity::info);
  EXPECT_EQ(out[0].summary, "flap noted on rtsw1:eth1 (SNMP linkDown notification): penalty 1000 (suppress at 2500)");
  EXPECT_EQ(out[0].evidence.at("unconfirmed_link_events"), 1);
  EXPECT_EQ(out[1].severity, Severity::info);
  EXPECT_EQ(out[2].severity, Severity::warning);
  EXPECT_EQ(out[2].kind, FindingKind::link_flap);
  EXPECT_EQ(out[2].first_seen, at(1));
  EXPECT_EQ(out[2].observed_at, at(5));
  EXPECT_NE(out[2].summary.find("not drained until a poll confirms"), std::string::npos) << out[2].summary;
  EXPECT_EQ(out[2].evidence.at("unconfirmed_link_events"), 3);
  EXPECT_FALSE(det.suppressed(link, at(6)));  // only confirmed flaps suppress (and hold the undrain)
  // The poll: 6 transitions, up at the end: the same 3 flaps, confirmed, not counted again.
  out.clear();
  const double before = det.penalty(port, at(10));
  feed(Delta(port, at(10)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 6));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_EQ(out[0].evidence.at("confirmed_link_events"), 3);
  EXPECT_EQ(out[0].evidence.count("unconfirmed_link_events"), 0u);
  EXPECT_EQ(out[0].evidence.at("flaps"), 3);
  EXPECT_DOUBLE_EQ(det.penalty(port, at(10)), before);
  EXPECT_TRUE(det.suppressed(link, at(10)));
  EXPECT_EQ(det.event_flaps_confirmed(), 3u);
  EXPECT_EQ(det.event_flaps_withdrawn(), 0u);
}

// Notifications no poll ever confirms (lost polls' worth of evidence, or forged traps):
// they are taken back after trap_confirm, and never made the port critical.
TEST_F(FlapTest, LinkEventsThePollsNeverConfirmAreTakenBack) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  notify_flaps(4);
  EXPECT_GT(det.penalty(port, at(8)), config.suppress);
  for (int t = 10; t <= 60; t += 10) feed(Delta(port, at(t)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  for (const Finding& f : out) EXPECT_NE(f.severity, Severity::critical) << f.summary;
  EXPECT_EQ(det.event_flaps_withdrawn(), 4u);
  EXPECT_EQ(det.event_flaps_confirmed(), 0u);
  EXPECT_NEAR(det.penalty(port, at(60)), 0.0, 1e-6);
  EXPECT_FALSE(det.suppressed(link, at(60)));
}

// A poll confirms only the notifications of its own interval. One that had not seen the
// flap yet (an agent's cached table) and the next that does: that one counts the flap
// itself, and the notification, older than its interval, is taken back in time: the flap
// is counted once, never twice.
TEST_F(FlapTest, APollConfirmsOnlyItsOwnIntervalAndAFlapIsNeverCountedTwice) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  det.link_event(port, false, at(1), out);
  det.link_event(port, true, at(3), out);
  feed(Delta(port, at(4)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));   // stale
  feed(Delta(port, at(14)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 2));  // seen now
  EXPECT_EQ(det.event_flaps_confirmed(), 0u);
  for (int t = 24; t <= 44; t += 10) feed(Delta(port, at(t)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  EXPECT_EQ(det.event_flaps_withdrawn(), 1u);
  EXPECT_NEAR(det.penalty(port, at(44)), decay(1000, 30), 1e-6);  // the poll's flap only
  for (const Finding& f : out) EXPECT_EQ(f.severity, Severity::info) << f.summary;
}

// Near max_penalty a notification adds less than a flap's penalty (nothing at the cap):
// taking it back takes back what it added, no more. A suppressed port stays suppressed.
TEST_F(FlapTest, TakingBackNotificationsAtTheCapTakesNoConfirmedPenalty) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  feed(Delta(port, at(10)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 20));  // 10 flaps: at the cap
  ASSERT_TRUE(det.suppressed(link, at(10)));
  EXPECT_DOUBLE_EQ(det.penalty(port, at(10)), config.max_penalty);
  for (int i = 0; i < 10; ++i) {
    det.link_event(port, false, at(10), out);
    det.link_event(port, true, at(10), out);
  }
  EXPECT_DOUBLE_EQ(det.penalty(port, at(10)), config.max_penalty);
  for (int t = 20; t <= 50; t += 10) feed(Delta(port, at(t)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  EXPECT_EQ(det.event_flaps_withdrawn(), 10u);
  EXPECT_NEAR(det.penalty(port, at(50)), decay(config.max_penalty, 40), 1e-6);
  EXPECT_TRUE(det.suppressed(link, at(50)));
}

// Notifications stamped ahead of a clock that then stepped back are taken back too, not
// left pending for good (which would fill the port's queue of them).
TEST_F(FlapTest, NotificationsFromBeforeAClockStepBackAreTakenBack) {
  feed(Delta(port, at(3600)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  det.link_event(port, false, at(3601), out);
  det.link_event(port, true, at(3602), out);
  feed(Delta(port, at(10)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));  // the clock went back an hour
  EXPECT_EQ(det.event_flaps_withdrawn(), 1u);
}

// An SNMP poll sees that a port flapped (ifLastChange moved: 2 transitions), not how often:
// that confirms every notification of its interval.
TEST_F(FlapTest, APollThatSawTheFlappingConfirmsAllItsNotifications) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  notify_flaps(3);
  out.clear();
  feed(Delta(port, at(10)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 2));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_EQ(out[0].evidence.at("confirmed_link_events"), 3);
  EXPECT_EQ(out[0].evidence.at("flaps"), 3);  // not 4: the poll's flap is one of theirs
  EXPECT_EQ(det.event_flaps_confirmed(), 3u);
  // A notification after the poll's time waits for the next poll.
  det.link_event(port, false, at(12), out);
  feed(Delta(port, at(11)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 2));
  EXPECT_EQ(det.event_flaps_confirmed(), 3u);
}

// The same linkDown twice (a resent notification) is one flap; flaps the notifications
// missed are counted from the poll as before.
TEST_F(FlapTest, ARepeatedLinkDownIsOneFlapAndMissedOnesComeFromThePoll) {
  feed(Delta(port, at(0)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 0));
  det.link_event(port, false, at(1), out);
  det.link_event(port, false, at(1), out);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(det.penalty(port, at(1)), 1000);
  det.link_event(port, true, at(2), out);
  // The poll counts 2 flaps (4 transitions): one was the notification's, one is new.
  feed(Delta(port, at(10)).set(Counter::oper_up, 1).set(Counter::carrier_changes, 4));
  EXPECT_EQ(det.event_flaps_confirmed(), 1u);
  EXPECT_NEAR(det.penalty(port, at(10)), decay(1000, 9) + 1000, 1e-6);
  EXPECT_EQ(out.back().severity, Severity::info);
  EXPECT_EQ(out.back().evidence.at("flaps"), 2);
}

// A linkUp is never a flap; an event for a port out of range is ignored.
TEST_F(FlapTest, LinkUpAloneAndStrangePortsCountNothing) {
  det.link_event(port, true, at(1), out);
  det.link_event(static_cast<fabric::PortId>(topo.ports().size() + 5), false, at(1), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(det.penalty(port, at(1)), 0.0);
}

}  // namespace
}  // namespace medic::detectors::test

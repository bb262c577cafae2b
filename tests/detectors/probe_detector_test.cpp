// The probe detector over hand-made probe rounds: localization verdicts become probe_loss
// findings (warning, critical, escalated once, quiet while they persist, re-armed after
// quiet rounds), links far slower than the fabric's median become probe_latency findings,
// and links telemetry says are down are left alone. Also the "probe" section of the
// detector configuration.
#include "detectors/probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "detectors/config.h"
#include "tests/detectors/detector_fixture.h"
#include "tests/support/testing.h"

namespace medic::detectors {
namespace {

using test::at;
using ::testing::IsEmpty;

constexpr double kUs = 1e-6;

class ProbeDetectorTest : public ::testing::Test {
 protected:
  // A round at `s` seconds with the given verdicts and link stats.
  static probes::RoundResult round(double s, std::vector<probes::LinkVerdict> verdicts = {},
                                   std::vector<probes::LinkProbeStats> links = {}) {
    probes::RoundResult r;
    r.at = at(s);
    r.round = static_cast<int>(s);
    r.verdicts = std::move(verdicts);
    r.links = std::move(links);
    return r;
  }
  static probes::LinkVerdict verdict(fabric::LinkId l, double loss, double confidence = 0.9) {
    probes::LinkVerdict v;
    v.link = l;
    v.loss = loss;
    v.confidence = confidence;
    v.probes = 300;
    v.lossy_paths = 4;
    v.explained_paths = 3;
    v.method = "link-pinned+path";
    return v;
  }
  // A link whose fastest round trip is `min_s` (its lower quartile 20 us more, its median 50).
  static probes::LinkProbeStats rtt(fabric::LinkId l, double min_s, uint64_t sent = 120, uint64_t lost = 0) {
    probes::LinkProbeStats s;
    s.link = l;
    s.sent = sent;
    s.lost = lost;
    s.rtts = sent - lost;
    s.rtt_min_s = min_s;
    s.rtt_p25_s = min_s > 0 ? min_s + 20 * kUs : 0;
    s.rtt_p50_s = min_s > 0 ? min_s + 50 * kUs : 0;
    s.rtt_p99_s = min_s * 2;
    s.jitter_s = min_s / 10;
    return s;
  }
  // Every link up unless listed in `down`.
  std::vector<Finding> observe(const probes::RoundResult& r, std::vector<fabric::LinkId> down = {}) {
    std::vector<Finding> out;
    det.observe(
        r, [&](fabric::LinkId l) { return std::find(down.begin(), down.end(), l) != down.end(); }, out);
    return out;
  }
  // `n` rounds a second apart from `s`, their findings together.
  std::vector<Finding> observe_rounds(double s, int n, const std::vector<probes::LinkProbeStats>& links) {
    std::vector<Finding> all;
    for (int i = 0; i < n; ++i) {
      for (auto& f : observe(round(s + i, {}, links))) all.push_back(std::move(f));
    }
    return all;
  }
  // Every link's fastest round trip at 100 us, and `slow`'s at `slow_min_s`.
  std::vector<probes::LinkProbeStats> fabric_rtts(double slow_min_s) const {
    std::vector<probes::LinkProbeStats> out;
    for (fabric::LinkId l = 0; l < topo.links().size(); ++l) out.push_back(rtt(l, l == slow ? slow_min_s : 100 * kUs));
    return out;
  }

  fabric::Topology topo = test::small_fabric();
  ProbeConfig config;  // critical at 1%, confidence 0.5, 4x and 0.5 ms on 40 round trips, 3 rounds in a row, 3 quiet rounds
  ProbeDetector det{topo, config};
  fabric::LinkId up1 = *topo.find_link("rtsw1:eth1");
  fabric::LinkId up2 = *topo.find_link("rtsw1:eth2");
  fabric::LinkId slow = *topo.find_link("rtsw1:eth3");
};

TEST_F(ProbeDetectorTest, AConfidentVerdictBelowTheCriticalLossIsAWarning) {
  const auto out = observe(round(10, {verdict(up1, 0.005)}));
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::probe_loss);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.link, up1);
  EXPECT_EQ(f.port, fabric::kNone);
  EXPECT_EQ(f.first_seen, at(10));
  EXPECT_EQ(f.observed_at, at(10));
  EXPECT_EQ(f.summary, "probes lose 0.50% across " + topo.link(up1).name +
                           " (confidence 0.90, 300 probes, link-pinned+path)");
  EXPECT_DOUBLE_EQ(f.evidence.at("loss"), 0.005);
  EXPECT_DOUBLE_EQ(f.evidence.at("confidence"), 0.9);
  EXPECT_EQ(f.evidence.at("probes"), 300);
  EXPECT_EQ(f.evidence.at("lossy_paths"), 4);
  EXPECT_EQ(f.evidence.at("explained_paths"), 3);
  EXPECT_EQ(f.evidence.at("link_pinned"), 1);
}

TEST_F(ProbeDetectorTest, AVerdictAtTheCriticalLossIsCritical) {
  probes::LinkVerdict v = verdict(up1, 0.01);
  v.method = "path tomography";
  const auto out = observe(round(10, {v, verdict(up2, 0.3)}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].link, up1);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_EQ(out[0].evidence.at("link_pinned"), 0);
  EXPECT_EQ(out[1].link, up2);
  EXPECT_EQ(out[1].severity, Severity::critical);
}

TEST_F(ProbeDetectorTest, VerdictsBelowTheMinimumConfidenceAreNotReported) {
  EXPECT_THAT(observe(round(10, {verdict(up1, 0.5, 0.49)})), IsEmpty());
  // At the minimum, reported.
  EXPECT_EQ(observe(round(11, {verdict(up1, 0.5, 0.5)})).size(), 1u);
  // A verdict about a link the topology does not have is ignored.
  EXPECT_THAT(observe(round(12, {verdict(static_cast<fabric::LinkId>(topo.links().size() + 3), 0.5)})), IsEmpty());
}

TEST_F(ProbeDetectorTest, AWarningEscalatesToCriticalOnceAndIsNotRepeated) {
  auto out = observe(round(10, {verdict(up1, 0.004)}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::warning);
  // Still a warning: nothing new.
  EXPECT_THAT(observe(round(20, {verdict(up1, 0.006)})), IsEmpty());
  // Worse: critical, once.
  out = observe(round(30, {verdict(up1, 0.05)}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  EXPECT_EQ(out[0].first_seen, at(30));
  for (int s = 40; s <= 90; s += 10) {
    EXPECT_THAT(observe(round(s, {verdict(up1, 0.05)})), IsEmpty()) << s;
  }
  // Better again: never lowered, nothing said.
  EXPECT_THAT(observe(round(100, {verdict(up1, 0.004)})), IsEmpty());
}

TEST_F(ProbeDetectorTest, ALinkClearsAfterQuietRoundsAndCanBeReportedAgain) {
  ASSERT_EQ(observe(round(10, {verdict(up1, 0.05)})).size(), 1u);
  // Two quiet rounds, then the verdict again: the count starts over, nothing reported.
  EXPECT_THAT(observe(round(20)), IsEmpty());
  EXPECT_THAT(observe(round(30)), IsEmpty());
  EXPECT_THAT(observe(round(40, {verdict(up1, 0.05)})), IsEmpty());
  EXPECT_THAT(observe(round(50)), IsEmpty());
  EXPECT_THAT(observe(round(60)), IsEmpty());
  // A verdict below the minimum confidence does not keep it from clearing.
  EXPECT_THAT(observe(round(70, {verdict(up1, 0.05, 0.1)})), IsEmpty());
  // Three quiet rounds in a row: cleared, so the next verdict is news.
  auto out = observe(round(80, {verdict(up1, 0.004)}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_EQ(out[0].first_seen, at(80));
}

TEST_F(ProbeDetectorTest, TheQuietRoundsComeFromTheConfig) {
  ProbeConfig c;
  c.clear_rounds = 1;
  ProbeDetector d(topo, c);
  std::vector<Finding> out;
  auto up = [](fabric::LinkId) { return false; };
  d.observe(round(10, {verdict(up1, 0.05)}), up, out);
  d.observe(round(20), up, out);
  d.observe(round(30, {verdict(up1, 0.05)}), up, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].observed_at, at(30));
}

TEST_F(ProbeDetectorTest, LinksEachHaveTheirOwnState) {
  ASSERT_EQ(observe(round(10, {verdict(up1, 0.05)})).size(), 1u);
  const auto out = observe(round(20, {verdict(up1, 0.05), verdict(up2, 0.002)}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].link, up2);
  EXPECT_EQ(out[0].severity, Severity::warning);
}

TEST_F(ProbeDetectorTest, AVerdictOnALinkTelemetrySaysIsDownIsNotAFinding) {
  EXPECT_THAT(observe(round(10, {verdict(up1, 1.0)}), {up1}), IsEmpty());
  // Back up and still losing: now it is a gray failure worth reporting.
  const auto out = observe(round(20, {verdict(up1, 0.05)}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::critical);
  // Down again: the verdicts are no evidence; after the quiet rounds it may report again.
  for (int s = 30; s <= 50; s += 10) EXPECT_THAT(observe(round(s, {verdict(up1, 1.0)}), {up1}), IsEmpty()) << s;
  EXPECT_EQ(observe(round(60, {verdict(up1, 0.05)})).size(), 1u);
}

TEST_F(ProbeDetectorTest, ALinkFarSlowerThanTheFabricInConfirmRoundsInARowIsAProbeLatencyWarningOnce) {
  // Median 100 us: the threshold is max(4 x 100 us, 100 us + 500 us) = 600 us.
  EXPECT_THAT(observe(round(10, {}, fabric_rtts(590 * kUs))), IsEmpty());
  // Over it: the first and second rounds in a row are not yet a finding, the third is.
  EXPECT_THAT(observe(round(20, {}, fabric_rtts(610 * kUs))), IsEmpty());
  EXPECT_THAT(observe(round(30, {}, fabric_rtts(610 * kUs))), IsEmpty());
  auto out = observe(round(40, {}, fabric_rtts(610 * kUs)));
  ASSERT_EQ(out.size(), 1u);
  const Finding& f = out[0];
  EXPECT_EQ(f.kind, FindingKind::probe_latency);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.link, slow);
  EXPECT_EQ(f.first_seen, at(40));
  EXPECT_EQ(f.observed_at, at(40));
  EXPECT_EQ(f.summary, "every one of 120 round trips across " + topo.link(slow).name +
                           " took 610us or more (median 660us), the fabric's 100us, 3 rounds in a row");
  EXPECT_DOUBLE_EQ(f.evidence.at("rtt_min_s"), 610 * kUs);
  EXPECT_DOUBLE_EQ(f.evidence.at("rtt_p25_s"), 630 * kUs);
  EXPECT_DOUBLE_EQ(f.evidence.at("rtt_p50_s"), 660 * kUs);
  EXPECT_DOUBLE_EQ(f.evidence.at("rtt_p99_s"), 1220 * kUs);
  EXPECT_DOUBLE_EQ(f.evidence.at("fabric_min_s"), 100 * kUs);
  EXPECT_DOUBLE_EQ(f.evidence.at("jitter_s"), 61 * kUs);
  EXPECT_DOUBLE_EQ(f.evidence.at("rtts"), 120);
  EXPECT_DOUBLE_EQ(f.evidence.at("rounds"), 3);
  // Persisting, or easing off but above the midpoint (350 us): nothing new.
  EXPECT_THAT(observe(round(50, {}, fabric_rtts(2000 * kUs))), IsEmpty());
  EXPECT_THAT(observe(round(60, {}, fabric_rtts(360 * kUs))), IsEmpty());
  EXPECT_THAT(observe(round(70, {}, fabric_rtts(700 * kUs))), IsEmpty());
  // Below the midpoint: re-armed, so the next three slow rounds are reported again.
  EXPECT_THAT(observe(round(80, {}, fabric_rtts(340 * kUs))), IsEmpty());
  EXPECT_THAT(observe(round(90, {}, fabric_rtts(700 * kUs))), IsEmpty());
  EXPECT_THAT(observe(round(100, {}, fabric_rtts(700 * kUs))), IsEmpty());
  out = observe(round(110, {}, fabric_rtts(700 * kUs)));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::probe_latency);
  EXPECT_EQ(out[0].observed_at, at(110));
}

// A busy reflector or prober host answers some probes late, even most of them (fabsim at
// zone32k: about 70%): a link's median and lower quartile may be slow while its fastest
// round trip is not. A slow link delays every probe across it.
TEST_F(ProbeDetectorTest, ASlowMedianAndQuartileOverAFastRoundTripIsNoLatencyFinding) {
  auto links = fabric_rtts(100 * kUs);
  links[slow].rtt_p25_s = 4e-3;
  links[slow].rtt_p50_s = 5e-3;
  links[slow].rtt_p99_s = 9e-3;
  for (int s = 10; s <= 100; s += 10) EXPECT_THAT(observe(round(s, {}, links)), IsEmpty()) << s;
  EXPECT_EQ(det.last_latency().judged, topo.links().size());
  EXPECT_EQ(det.last_latency().over, 0u);
  // Its fastest slow too: three rounds later, a finding.
  links[slow].rtt_min_s = 3.5e-3;
  const auto out = observe_rounds(110, 3, links);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].link, slow);
  EXPECT_DOUBLE_EQ(out[0].evidence.at("rtt_p50_s"), 5e-3);
}

TEST_F(ProbeDetectorTest, SlowRoundsNotInARowAreNotALatencyFinding) {
  // Two slow rounds, one under the threshold, two slow again: never three in a row.
  for (int i = 0; i < 4; ++i) {
    const double t = 10 + 50 * i;
    EXPECT_THAT(observe(round(t, {}, fabric_rtts(5e-3))), IsEmpty()) << t;
    EXPECT_THAT(observe(round(t + 10, {}, fabric_rtts(5e-3))), IsEmpty()) << t;
    EXPECT_THAT(observe(round(t + 20, {}, fabric_rtts(590 * kUs))), IsEmpty()) << t;
  }
  // The count is the config's.
  ProbeConfig once = config;
  once.confirm_rounds = 1;
  ProbeDetector eager(topo, once);
  std::vector<Finding> out;
  eager.observe(round(10, {}, fabric_rtts(5e-3)), [](fabric::LinkId) { return false; }, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].link, slow);
}

TEST_F(ProbeDetectorTest, LatencyIsJudgedOnlyOnEnoughRoundTrips) {
  // zone32k's first rounds time 10 round trips a link: a median of 10 is no judgement, of
  // the slow link nor of the fabric's baseline.
  auto with_rtts = [&](double slow_p50_s, uint64_t n) {
    auto links = fabric_rtts(slow_p50_s);
    for (auto& l : links) l.rtts = n;
    return links;
  };
  for (int s = 10; s <= 100; s += 10) EXPECT_THAT(observe(round(s, {}, with_rtts(50e-3, 10))), IsEmpty()) << s;
  for (int s = 110; s <= 150; s += 10) EXPECT_THAT(observe(round(s, {}, with_rtts(50e-3, 39))), IsEmpty()) << s;
  EXPECT_EQ(det.last_latency().judged, 0u);
  EXPECT_EQ(det.last_latency().over, 0u);
  // At 40, three rounds in a row; every link judged, the slow one over from the first.
  EXPECT_THAT(observe(round(160, {}, with_rtts(50e-3, 40))), IsEmpty());
  EXPECT_EQ(det.last_latency().judged, topo.links().size());
  EXPECT_EQ(det.last_latency().over, 1u);
  // A round with too few (a round left out as an outage) neither counts nor breaks the run.
  EXPECT_THAT(observe(round(170, {}, with_rtts(50e-3, 12))), IsEmpty());
  EXPECT_THAT(observe(round(180, {}, with_rtts(50e-3, 45))), IsEmpty());
  auto out = observe(round(190, {}, with_rtts(50e-3, 50)));
  EXPECT_EQ(det.last_latency().over, 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].link, slow);
  EXPECT_DOUBLE_EQ(out[0].evidence.at("rtts"), 50);
  // The fabric's baseline is taken over the links with enough: a slow link among links with
  // too few is not compared with them.
  ProbeDetector fresh(topo, config);
  auto links = fabric_rtts(50e-3);
  for (auto& l : links) l.rtts = l.link == slow ? 200 : 10;
  for (int s = 10; s <= 60; s += 10) {
    std::vector<Finding> none;
    fresh.observe(round(s, {}, links), [](fabric::LinkId) { return false; }, none);
    EXPECT_THAT(none, IsEmpty()) << s;
  }
}

TEST_F(ProbeDetectorTest, OnASlowFabricTheFactorSetsTheThreshold) {
  // Median 1 ms: max(4 ms, 1.5 ms) = 4 ms.
  std::vector<probes::LinkProbeStats> links;
  for (fabric::LinkId l = 0; l < topo.links().size(); ++l) links.push_back(rtt(l, l == slow ? 3.9e-3 : 1e-3));
  for (int s = 10; s <= 50; s += 10) EXPECT_THAT(observe(round(s, {}, links)), IsEmpty()) << s;
  links[slow].rtt_min_s = 4.1e-3;
  const auto out = observe_rounds(60, 3, links);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].link, slow);
}

TEST_F(ProbeDetectorTest, FewerThanThreeTimedLinksGiveNoLatencyJudgement) {
  // Two links, one of them very slow.
  EXPECT_THAT(observe_rounds(10, 5, {rtt(up1, 100 * kUs), rtt(slow, 50e-3)}), IsEmpty());
  // Three links, but one lost everything (its round trips are no measure) and one has none.
  EXPECT_THAT(observe_rounds(20, 5, {rtt(up1, 100 * kUs), rtt(slow, 50e-3), rtt(up2, 100 * kUs, 120, 120)}),
              IsEmpty());
  EXPECT_THAT(observe_rounds(30, 5, {rtt(up1, 100 * kUs), rtt(slow, 50e-3), rtt(up2, 0)}), IsEmpty());
  // A third timed link: now there is a fabric to compare with.
  const auto out = observe_rounds(40, 3, {rtt(up1, 100 * kUs), rtt(slow, 50e-3), rtt(up2, 100 * kUs)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::probe_latency);
  EXPECT_EQ(out[0].link, slow);
}

TEST_F(ProbeDetectorTest, ASlowLinkTelemetrySaysIsDownIsNotJudged) {
  EXPECT_THAT(observe(round(10, {}, fabric_rtts(5e-3))), IsEmpty());
  EXPECT_THAT(observe(round(20, {}, fabric_rtts(5e-3))), IsEmpty());
  // Down: not judged, and the rounds in a row start again once it is up.
  EXPECT_THAT(observe(round(30, {}, fabric_rtts(5e-3)), {slow}), IsEmpty());
  EXPECT_THAT(observe(round(40, {}, fabric_rtts(5e-3))), IsEmpty());
  EXPECT_THAT(observe(round(50, {}, fabric_rtts(5e-3))), IsEmpty());
  EXPECT_EQ(observe(round(60, {}, fabric_rtts(5e-3))).size(), 1u);
}

TEST_F(ProbeDetectorTest, LossAndLatencyOfOneLinkAreSeparateFindings) {
  EXPECT_THAT(observe(round(10, {}, fabric_rtts(5e-3))), IsEmpty());
  EXPECT_THAT(observe(round(20, {}, fabric_rtts(5e-3))), IsEmpty());
  const auto out = observe(round(30, {verdict(slow, 0.02)}, fabric_rtts(5e-3)));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, FindingKind::probe_loss);
  EXPECT_EQ(out[1].kind, FindingKind::probe_latency);
  // The loss clearing does not re-arm the latency finding, nor the other way round.
  for (int s = 40; s <= 60; s += 10) EXPECT_THAT(observe(round(s, {}, fabric_rtts(5e-3))), IsEmpty()) << s;
  const auto again = observe(round(70, {verdict(slow, 0.02)}, fabric_rtts(5e-3)));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].kind, FindingKind::probe_loss);
}

// ---------------------------------------------------------------------------------------
// The "probe" section of the detector configuration

std::string error_of(const std::string& text) {
  try {
    DetectorConfig::parse(text, "t.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ProbeDetectorConfig, DefaultsAndTheShippedFile) {
  const ProbeConfig d = DetectorConfig::parse("{}", "t.json").probe;
  EXPECT_DOUBLE_EQ(d.critical_loss, 0.01);
  EXPECT_DOUBLE_EQ(d.min_confidence, 0.5);
  EXPECT_DOUBLE_EQ(d.latency_factor, 4.0);
  EXPECT_EQ(d.latency_floor, std::chrono::microseconds(500));
  EXPECT_EQ(d.latency_min_rtts, 40);
  EXPECT_EQ(d.confirm_rounds, 3);
  EXPECT_EQ(d.clear_rounds, 3);
  const ProbeConfig shipped = DetectorConfig::load_file(testing::source_dir() + "/data/detectors.json").probe;
  EXPECT_DOUBLE_EQ(shipped.critical_loss, 0.01);
  EXPECT_DOUBLE_EQ(shipped.min_confidence, 0.5);
  EXPECT_DOUBLE_EQ(shipped.latency_factor, 4.0);
  EXPECT_EQ(shipped.latency_floor, std::chrono::microseconds(500));
  EXPECT_EQ(shipped.latency_min_rtts, 40);
  EXPECT_EQ(shipped.confirm_rounds, 3);
  EXPECT_EQ(shipped.clear_rounds, 3);
}

TEST(ProbeDetectorConfig, EveryValueIsRead) {
  const ProbeConfig c = DetectorConfig::parse(R"({"probe": {"comment": "x", "critical_loss": 0.05, "min_confidence": 0.8,
                                               "latency_factor": 2.5, "latency_floor_ms": 0.25, "clear_rounds": 6,
                                               "latency_min_rtts": 120}})",
                                              "t.json")
                            .probe;
  EXPECT_DOUBLE_EQ(c.critical_loss, 0.05);
  EXPECT_DOUBLE_EQ(c.min_confidence, 0.8);
  EXPECT_DOUBLE_EQ(c.latency_factor, 2.5);
  EXPECT_EQ(c.latency_floor, std::chrono::microseconds(250));
  EXPECT_EQ(c.clear_rounds, 6);
  EXPECT_EQ(c.latency_min_rtts, 120);
  // Partial: the rest keep their defaults.
  const ProbeConfig p = DetectorConfig::parse(R"({"probe": {"latency_factor": 8}})", "t.json").probe;
  EXPECT_DOUBLE_EQ(p.latency_factor, 8);
  EXPECT_DOUBLE_EQ(p.critical_loss, 0.01);
  EXPECT_EQ(p.clear_rounds, 3);
}

TEST(ProbeDetectorConfig, ErrorsNameTheirPath) {
  EXPECT_EQ(error_of(R"({"probe": 1})"), "t.json: $.probe: expected an object");
  EXPECT_EQ(error_of(R"({"probe": []})"), "t.json: $.probe: expected an object");
  EXPECT_EQ(error_of(R"({"probe": {"loss": 0.1}})"), "t.json: $.probe: unknown key \"loss\"");
  EXPECT_EQ(error_of(R"({"probe": {"latency_floor_s": 1}})"), "t.json: $.probe: unknown key \"latency_floor_s\"");
  EXPECT_EQ(error_of(R"({"probe": {"critical_loss": "1%"}})"),
            "t.json: $.probe.critical_loss: expected a finite number, got \"1%\"");
  EXPECT_EQ(error_of(R"({"probe": {"min_confidence": null}})"),
            "t.json: $.probe.min_confidence: expected a finite number, got null");
  EXPECT_EQ(error_of(R"({"probe": {"latency_factor": [4]}})"),
            "t.json: $.probe.latency_factor: expected a finite number, got [4]");
  EXPECT_EQ(error_of(R"({"probe": {"latency_floor_ms": true}})"),
            "t.json: $.probe.latency_floor_ms: expected a finite number, got true");
  EXPECT_EQ(error_of(R"({"probe": {"confirm_rounds": 0}})"), "t.json: $.probe.confirm_rounds: must be at least 1");
  EXPECT_EQ(error_of(R"({"probe": {"confirm_rounds": 2.5}})"),
            "t.json: $.probe.confirm_rounds: must be a whole number of rounds, got 2.5");
  EXPECT_EQ(error_of(R"({"probe": {"clear_rounds": "3"}})"),
            "t.json: $.probe.clear_rounds: expected a finite number, got \"3\"");
}

TEST(ProbeDetectorConfig, ValuesMustBeInRange) {
  EXPECT_EQ(error_of(R"({"probe": {"critical_loss": 0}})"), "t.json: $.probe.critical_loss: must be in (0, 1]");
  EXPECT_EQ(error_of(R"({"probe": {"critical_loss": -0.01}})"), "t.json: $.probe.critical_loss: must be in (0, 1]");
  EXPECT_EQ(error_of(R"({"probe": {"critical_loss": 1.01}})"), "t.json: $.probe.critical_loss: must be in (0, 1]");
  EXPECT_EQ(error_of(R"({"probe": {"critical_loss": 1}})"), "");
  EXPECT_EQ(error_of(R"({"probe": {"min_confidence": -0.1}})"), "t.json: $.probe.min_confidence: must be in [0, 1]");
  EXPECT_EQ(error_of(R"({"probe": {"min_confidence": 1.1}})"), "t.json: $.probe.min_confidence: must be in [0, 1]");
  EXPECT_EQ(error_of(R"({"probe": {"min_confidence": 0}})"), "");
  EXPECT_EQ(error_of(R"({"probe": {"min_confidence": 1}})"), "");
  EXPECT_EQ(error_of(R"({"probe": {"latency_factor": 1}})"), "t.json: $.probe.latency_factor: must be above 1");
  EXPECT_EQ(error_of(R"({"probe": {"latency_factor": 0.5}})"), "t.json: $.probe.latency_factor: must be above 1");
  EXPECT_EQ(error_of(R"({"probe": {"latency_factor": 1.01}})"), "");
  EXPECT_EQ(error_of(R"({"probe": {"latency_floor_ms": -1}})"), "t.json: $.probe.latency_floor_ms: must not be negative");
  EXPECT_EQ(error_of(R"({"probe": {"latency_floor_ms": 0}})"), "");
  EXPECT_EQ(error_of(R"({"probe": {"latency_min_rtts": 0}})"), "t.json: $.probe.latency_min_rtts: must be in [1, 384], got 0");
  EXPECT_EQ(error_of(R"({"probe": {"latency_min_rtts": 385}})"),
            "t.json: $.probe.latency_min_rtts: must be in [1, 384], got 385");
  EXPECT_EQ(error_of(R"({"probe": {"latency_min_rtts": 40.5}})"),
            "t.json: $.probe.latency_min_rtts: expected a whole number in [0, 1000000000], got 40.5");
  EXPECT_EQ(error_of(R"({"probe": {"latency_min_rtts": "40"}})"),
            "t.json: $.probe.latency_min_rtts: expected a finite number, got \"40\"");
  EXPECT_EQ(error_of(R"({"probe": {"latency_min_rtts": 1}})"), "");
  EXPECT_EQ(error_of(R"({"probe": {"latency_min_rtts": 384}})"), "");
  EXPECT_EQ(error_of(R"({"probe": {"clear_rounds": 0}})"), "t.json: $.probe.clear_rounds: must be at least 1");
  EXPECT_EQ(error_of(R"({"probe": {"clear_rounds": -2}})"), "t.json: $.probe.clear_rounds: must be at least 1");
  EXPECT_EQ(error_of(R"({"probe": {"clear_rounds": 1}})"), "");
  // A count of rounds is a whole number, and one an int holds.
  EXPECT_EQ(error_of(R"({"probe": {"clear_rounds": 2.5}})"),
            "t.json: $.probe.clear_rounds: must be a whole number of rounds, got 2.5");
  EXPECT_EQ(error_of(R"({"probe": {"clear_rounds": 1e12}})"),
            "t.json: $.probe.clear_rounds: must be at most 1000000");
  EXPECT_EQ(error_of(R"({"probe": {"clear_rounds": -1e12}})"), "t.json: $.probe.clear_rounds: must be at least 1");
}

TEST(ProbeDetectorConfig, ValidateNamesTheProbeFields) {
  DetectorConfig c;
  c.probe.clear_rounds = 0;
  try {
    c.validate("medicd --detectors");
    FAIL() << "validated";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "medicd --detectors: $.probe.clear_rounds: must be at least 1");
  }
}


// ---------------------------------------------------------------------------------------
// The measurement doubted first: probers, reflectors, silent devices.

TEST_F(ProbeDetectorTest, AnOutageRoundIsOneProberFindingThatClearsByItself) {
  probes::RoundResult r = round(10);
  r.outages.push_back({"local", 208, 208, 2080, 1900});
  auto out = observe(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::prober_loss);
  EXPECT_EQ(out[0].severity, Severity::warning);
  EXPECT_EQ(out[0].link, fabric::kNone);
  EXPECT_EQ(out[0].device, fabric::kNone);
  EXPECT_EQ(out[0].summary, "prober local: 208 of 208 probe sessions lost probes at once in round 10 (1900 of 2080 "
                            "probes): the prober, its host or network, or the reflectors it probes failed; the round is "
                            "left out of localization");
  // Still out next round: nothing new.
  probes::RoundResult r2 = round(11);
  r2.outages.push_back({"local", 208, 200, 2080, 900});
  EXPECT_THAT(observe(r2), IsEmpty());
  // Clean for clear_rounds rounds: a finding that clears it.
  EXPECT_THAT(observe(round(12)), IsEmpty());
  EXPECT_THAT(observe(round(13)), IsEmpty());
  out = observe(round(14));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::prober_loss);
  EXPECT_TRUE(out[0].clears);
  EXPECT_EQ(out[0].severity, Severity::info);
}

TEST_F(ProbeDetectorTest, AReflectorVerdictIsAboutItsDeviceNeverALink) {
  probes::RoundResult r = round(10, {verdict(up1, 0.05)});
  probes::EndpointVerdict e;
  e.kind = probes::ProbeEndpoint::Kind::reflector;
  e.name = "ctsw2";
  e.device = *topo.find_device("ctsw2");
  e.loss = 1.0;
  e.confidence = 0.99;
  e.probes = 480;
  e.lost = 480;
  e.observations = 4;
  e.lossy_observations = 4;
  e.explained_by_links = 1.5;
  r.endpoints.push_back(e);
  // Named in confirm_rounds (3) rounds in a row before it is reported.
  probes::RoundResult early = round(8);
  early.endpoints.push_back(e);
  EXPECT_TRUE(observe(early).empty());
  early = round(9);
  early.endpoints.push_back(e);
  EXPECT_TRUE(observe(early).empty());
  const auto out = observe(r);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, FindingKind::reflector_loss);
  EXPECT_EQ(out[0].device, e.device);
  EXPECT_EQ(out[0].link, fabric::kNone);
  EXPECT_EQ(out[0].summary, "the STAMP reflector of ctsw2 loses 100.00% of what it should answer, alike on 4 sessions "
                            "(480 of 480 probes lost, on 4 sessions): the reflector or its host, not the links under it");
  EXPECT_EQ(out[0].evidence.at("lost"), 480);
  EXPECT_EQ(out[0].evidence.at("lossy_sessions"), 4);
  EXPECT_EQ(out[0].evidence.at("explained_by_links"), 1.5);
  EXPECT_EQ(out[1].kind, FindingKind::probe_loss);  // a link beside it is still its own finding
  EXPECT_EQ(out[1].link, up1);
  // Gone for clear_rounds rounds: cleared.
  observe(round(11));
  observe(round(12));
  const auto later = observe(round(13));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_TRUE(later[0].clears);
  EXPECT_EQ(later[0].kind, FindingKind::reflector_loss);
  EXPECT_EQ(later[0].device, e.device);
}

// One round's few lost probes do not make a reflector fault: it must be named in
// confirm_rounds rounds in a row; a round without it starts the count again.
TEST_F(ProbeDetectorTest, AReflectorIsReportedOnlyWhenNamedInConfirmRoundsInARow) {
  probes::EndpointVerdict e;
  e.kind = probes::ProbeEndpoint::Kind::reflector;
  e.name = "host2";
  e.device = *topo.find_device("ctsw2");
  e.loss = 0.0083;
  e.confidence = 0.7;
  e.probes = 360;
  e.observations = 18;
  auto named = [&](double t) {
    probes::RoundResult r = round(t);
    r.endpoints.push_back(e);
    return r;
  };
  EXPECT_TRUE(observe(named(10)).empty());
  EXPECT_TRUE(observe(named(11)).empty());
  EXPECT_TRUE(observe(round(12)).empty()) << "not named: the count starts again";
  EXPECT_TRUE(observe(named(13)).empty());
  EXPECT_TRUE(observe(named(14)).empty());
  const auto out = observe(named(15));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::reflector_loss);
  EXPECT_EQ(out[0].observed_at, at(15));
  // From the config: 1 reports at once.
  ProbeConfig c;
  c.confirm_rounds = 1;
  ProbeDetector d(topo, c);
  std::vector<Finding> found;
  d.observe(named(20), [](fabric::LinkId) { return false; }, found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, FindingKind::reflector_loss);
}

TEST_F(ProbeDetectorTest, AProberVerdictIsAProberFinding) {
  probes::RoundResult r = round(10);
  probes::EndpointVerdict e;
  e.kind = probes::ProbeEndpoint::Kind::sender;
  e.name = "netns:h1";
  e.loss = 0.031;
  e.confidence = 0.95;
  e.probes = 24960;
  e.observations = 208;
  r.endpoints.push_back(e);
  const auto out = observe(r);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::prober_loss);
  EXPECT_EQ(out[0].summary, "prober netns:h1 loses 3.10% of its probes alike across 208 sessions (24960 probes): the "
                            "prober or its host, not the links they cross");
  // A weak verdict is not reported.
  probes::RoundResult weak = round(20);
  e.name = "netns:h2";
  e.confidence = 0.2;
  weak.endpoints.push_back(e);
  EXPECT_THAT(observe(weak), IsEmpty());
}

TEST_F(ProbeDetectorTest, LossOnALinkOfASilentDeviceIsLeftToTheDevice) {
  const fabric::DeviceId ctsw1 = *topo.find_device("ctsw1");
  std::vector<Finding> out;
  auto silent = [&](fabric::DeviceId d) { return d == ctsw1; };
  det.observe(round(10, {verdict(up1, 0.05), verdict(up2, 0.05)}), [](fabric::LinkId) { return false; }, silent, out);
  // up1 (to ctsw1) is only noted; up2 (to ctsw2) is a real finding.
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].link, up1);
  EXPECT_EQ(out[0].severity, Severity::info);
  EXPECT_EQ(out[0].device, ctsw1);
  EXPECT_EQ(out[0].summary, "probes lose 5.00% across " + topo.link(up1).name +
                                " while ctsw1 did not answer its telemetry: left to the device, not the link");
  EXPECT_EQ(out[1].link, up2);
  EXPECT_EQ(out[1].severity, Severity::critical);
  EXPECT_EQ(det.attributed_to_silence(), 1u);
  // Noted once while it lasts.
  out.clear();
  det.observe(round(11, {verdict(up1, 0.05)}), [](fabric::LinkId) { return false; }, silent, out);
  EXPECT_THAT(out, IsEmpty());
  // The device answers again and the loss goes on: now it is the link's.
  det.observe(round(12, {verdict(up1, 0.05)}), [](fabric::LinkId) { return false; },
              [](fabric::DeviceId) { return false; }, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::probe_loss);
  EXPECT_EQ(out[0].severity, Severity::critical);
}

}  // namespace
}  // namespace medic::detectors

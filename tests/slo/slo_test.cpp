#include "slo/slo.h"

#include "slo/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/epoch.h"

namespace medic::slo {
namespace {

using ::testing::ElementsAre;

Time at(Duration d) { return kT0 + d; }

// An incident that started at kT0 and reached each given stage end after the given
// number of seconds from the previous one.
IncidentTimes incident(int64_t id, std::string cls, std::optional<int> detect_s,
                       std::optional<int> mitigate_s = std::nullopt, std::optional<int> repair_s = std::nullopt,
                       std::optional<int> restore_s = std::nullopt) {
  IncidentTimes i;
  i.id = id;
  i.incident_class = std::move(cls);
  i.started_at = kT0;
  Time t = kT0;
  if (detect_s) {
    t += std::chrono::seconds(*detect_s);
    i.detected_at = t;
    if (mitigate_s) {
      t += std::chrono::seconds(*mitigate_s);
      i.mitigated_at = t;
      if (repair_s) {
        t += std::chrono::seconds(*repair_s);
        i.repaired_at = t;
        if (restore_s) {
          t += std::chrono::seconds(*restore_s);
          i.undrained_at = t;
        }
      }
    }
  }
  return i;
}

// ---------------------------------------------------------------------------------------
// judge

TEST(Judge, MetWhenTheStageEndedWithinTarget) {
  const IncidentTimes inc = incident(1, "link_flap", 30);
  std::optional<Duration> elapsed;
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(60), at(std::chrono::minutes(10)), &elapsed), Verdict::met);
  ASSERT_TRUE(elapsed);
  EXPECT_EQ(*elapsed, std::chrono::seconds(30));
}

TEST(Judge, ExactlyAtTargetIsMet) {
  const IncidentTimes inc = incident(1, "link_flap", 60);
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(60), at(std::chrono::minutes(10))), Verdict::met);
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(60) - Duration(1), at(std::chrono::minutes(10))), Verdict::missed);
}

TEST(Judge, MissedWhenTheStageTookTooLong) {
  const IncidentTimes inc = incident(1, "link_flap", 90);
  std::optional<Duration> elapsed;
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(60), at(std::chrono::minutes(10)), &elapsed), Verdict::missed);
  ASSERT_TRUE(elapsed);
  EXPECT_EQ(*elapsed, std::chrono::seconds(90));
}

TEST(Judge, VerdictOfAFinishedStageDoesNotDependOnNow) {
  const IncidentTimes inc = incident(1, "link_flap", 30);
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(60), at(std::chrono::seconds(31))), Verdict::met);
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(60), at(std::chrono::hours(1000))), Verdict::met);
}

TEST(Judge, PendingUntilTheTargetPassesThenMissed) {
  const IncidentTimes inc = incident(1, "link_flap", 10);  // detected, not mitigated
  std::optional<Duration> elapsed;
  // The mitigate stage began at t=10 s with a 5 min target.
  EXPECT_EQ(judge(inc, Stage::mitigate, std::chrono::minutes(5), at(std::chrono::seconds(10)), &elapsed), Verdict::pending);
  EXPECT_FALSE(elapsed);
  EXPECT_EQ(judge(inc, Stage::mitigate, std::chrono::minutes(5), at(std::chrono::seconds(10) + std::chrono::minutes(5)), &elapsed), Verdict::pending);
  EXPECT_EQ(judge(inc, Stage::mitigate, std::chrono::minutes(5), at(std::chrono::seconds(10) + std::chrono::minutes(5) + Duration(1)), &elapsed),
            Verdict::missed);
  EXPECT_FALSE(elapsed);  // not finished: no elapsed time
}

TEST(Judge, NotApplicableWhenTheStageNeverBegan) {
  IncidentTimes inc = incident(1, "link_flap", std::nullopt);
  inc.started_at.reset();
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(60), at(std::chrono::minutes(10))), Verdict::not_applicable);
  // Detected but never mitigated: the repair stage has not begun.
  const IncidentTimes det = incident(2, "link_flap", 5);
  EXPECT_EQ(judge(det, Stage::repair, std::chrono::minutes(1), at(std::chrono::hours(24))), Verdict::not_applicable);
  EXPECT_EQ(judge(det, Stage::restore, std::chrono::minutes(1), at(std::chrono::hours(24))), Verdict::not_applicable);
}

TEST(Judge, ClosedWithoutReachingTheStageIsNotApplicable) {
  IncidentTimes inc = incident(1, "link_flap", 10);  // detected, then dismissed
  inc.open = false;
  std::optional<Duration> elapsed;
  EXPECT_EQ(judge(inc, Stage::mitigate, std::chrono::minutes(5), at(std::chrono::hours(5)), &elapsed), Verdict::not_applicable);
  EXPECT_FALSE(elapsed);
  // Stages it did finish are still judged.
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(60), at(std::chrono::hours(5))), Verdict::met);
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(5), at(std::chrono::hours(5))), Verdict::missed);
}

TEST(Judge, EachStageIsTimedFromThePreviousOne) {
  const IncidentTimes inc = incident(1, "link_flap", 10, 20, 3600, 120);
  std::optional<Duration> e;
  const Time now = at(std::chrono::hours(10));
  EXPECT_EQ(judge(inc, Stage::detect, std::chrono::seconds(10), now, &e), Verdict::met);
  EXPECT_EQ(*e, std::chrono::seconds(10));
  EXPECT_EQ(judge(inc, Stage::mitigate, std::chrono::seconds(20), now, &e), Verdict::met);
  EXPECT_EQ(*e, std::chrono::seconds(20));
  EXPECT_EQ(judge(inc, Stage::repair, std::chrono::seconds(3599), now, &e), Verdict::missed);
  EXPECT_EQ(*e, std::chrono::seconds(3600));
  EXPECT_EQ(judge(inc, Stage::restore, std::chrono::seconds(120), now, &e), Verdict::met);
  EXPECT_EQ(*e, std::chrono::seconds(120));
}

TEST(Judge, EndBeforeBeginCountsAsZero) {
  IncidentTimes inc = incident(1, "link_flap", 10);
  inc.detected_at = kT0 - std::chrono::seconds(3);  // clocks of different sources disagree
  std::optional<Duration> e;
  EXPECT_EQ(judge(inc, Stage::detect, Duration::zero(), at(std::chrono::minutes(1)), &e), Verdict::met);
  EXPECT_EQ(*e, Duration::zero());
}

TEST(StageNames, RoundTrip) {
  for (const Stage s : kStages) EXPECT_EQ(parse_stage(to_string(s)), s);
  EXPECT_EQ(to_string(Stage::detect), "detect");
  EXPECT_EQ(to_string(Stage::mitigate), "mitigate");
  EXPECT_EQ(to_string(Stage::repair), "repair");
  EXPECT_EQ(to_string(Stage::restore), "restore");
  EXPECT_FALSE(parse_stage("Detect"));
  EXPECT_FALSE(parse_stage(""));
}

// ---------------------------------------------------------------------------------------
// The report over all history up to `now` (the window [epoch, now)), one line per target in
// the targets' order, through slo/report.h's builder.

struct StageReport {
  std::string incident_class;
  Stage stage = Stage::detect;
  int met = 0, missed = 0, pending = 0;
  double share_met = 1;
  bool objective_met = true;
  std::optional<Duration> p50, p95, max;
  std::vector<int64_t> breaches;
};

std::vector<StageReport> compute_report(const std::vector<IncidentTimes>& incs, const std::vector<Target>& targets, Time now) {
  std::vector<TargetVersion> versions;
  for (const auto& t : targets) versions.push_back({t.incident_class, t.stage, "", "", t.target, t.objective, kT0});
  ReportQuery q;
  q.window = {Time{}, now};
  ReportBuilder b(q, versions, now);
  for (const auto& i : incs) {
    ReportIncident r;
    r.id = i.id;
    r.incident_class = i.incident_class;
    r.started_at = i.started_at;
    r.detected_at = i.detected_at;
    r.mitigated_at = i.mitigated_at;
    r.repaired_at = i.repaired_at;
    r.undrained_at = i.undrained_at;
    if (!i.open) r.closed_at = i.started_at;  // ended at once: decides nothing
    b.add(r);
  }
  const Report rep = b.finish();
  std::vector<StageReport> out;
  for (const auto& t : targets) {
    for (const auto& l : rep.slos) {
      if (l.incident_class != t.incident_class || l.stage != t.stage) continue;
      StageReport s;
      s.incident_class = l.incident_class;
      s.stage = l.stage;
      s.met = l.met;
      s.missed = l.missed;
      s.pending = l.pending;
      s.share_met = l.compliance().compliance;
      s.objective_met = l.missed <= l.allowed_misses + 1e-9;
      auto d = [](std::optional<double> v) { return v ? std::optional<Duration>(from_seconds(*v)) : std::nullopt; };
      s.p50 = d(l.seconds.quantile(0.5));
      s.p95 = d(l.seconds.quantile(0.95));
      s.max = d(l.seconds.max());
      s.breaches = l.breaches;
      out.push_back(std::move(s));
    }
  }
  return out;
}

TEST(Report, NothingDecidedYet) {
  std::vector<IncidentTimes> incs = {incident(1, "c", std::nullopt)};
  const std::vector<Target> targets = {{"c", Stage::detect, std::chrono::minutes(5), 0.99}};
  const auto r = compute_report(incs, targets, at(std::chrono::seconds(30)))[0];
  EXPECT_EQ(r.met, 0);
  EXPECT_EQ(r.missed, 0);
  EXPECT_EQ(r.pending, 1);
  EXPECT_EQ(r.share_met, 1.0);
  EXPECT_TRUE(r.objective_met);
  EXPECT_FALSE(r.p50);
  EXPECT_FALSE(r.p95);
  EXPECT_FALSE(r.max);
  EXPECT_TRUE(r.breaches.empty());
}

TEST(Report, NoIncidentsAtAll) {
  const std::vector<Target> targets = {{"c", Stage::repair, std::chrono::minutes(30), 0.9}};
  const auto reports = compute_report({}, targets, kT0);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].met + reports[0].missed + reports[0].pending, 0);
  EXPECT_EQ(reports[0].share_met, 1.0);
  EXPECT_TRUE(reports[0].objective_met);
}

TEST(Report, NoTargetsNoReports) {
  const std::vector<IncidentTimes> incs = {incident(1, "c", 10)};
  EXPECT_TRUE(compute_report(incs, {}, kT0).empty());
}

TEST(Report, ClassFilter) {
  const std::vector<IncidentTimes> incs = {
      incident(1, "link_flap", 10), incident(2, "optics", 500), incident(3, "optics", 20),
      incident(4, "link_flap", 70), incident(5, "", 1),
  };
  const std::vector<Target> targets = {{"link_flap", Stage::detect, std::chrono::seconds(60), 0.5},
                                       {"optics", Stage::detect, std::chrono::seconds(60), 0.5},
                                       {"corruption", Stage::detect, std::chrono::seconds(60), 0.5}};
  const auto reports = compute_report(incs, targets, at(std::chrono::hours(1)));
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].incident_class, "link_flap");
  EXPECT_EQ(reports[0].met, 1);
  EXPECT_EQ(reports[0].missed, 1);
  EXPECT_THAT(reports[0].breaches, ElementsAre(4));
  EXPECT_EQ(*reports[0].max, std::chrono::seconds(70));
  EXPECT_TRUE(reports[0].objective_met);  // 0.5 >= 0.5
  EXPECT_EQ(reports[1].incident_class, "optics");
  EXPECT_THAT(reports[1].breaches, ElementsAre(2));
  EXPECT_EQ(*reports[1].max, std::chrono::seconds(500));
  EXPECT_EQ(reports[2].incident_class, "corruption");
  EXPECT_EQ(reports[2].met + reports[2].missed + reports[2].pending, 0);
}

TEST(Report, OneReportPerTargetInOrder) {
  const std::vector<IncidentTimes> incs = {incident(1, "c", 10, 100, 4000, 50), incident(2, "c", 30, 400)};
  const std::vector<Target> targets = {{"c", Stage::restore, std::chrono::minutes(1), 0.9},
                                       {"c", Stage::detect, std::chrono::seconds(20), 0.9},
                                       {"c", Stage::mitigate, std::chrono::minutes(5), 0.9},
                                       {"c", Stage::repair, std::chrono::hours(2), 0.9}};
  const Time now = at(std::chrono::hours(3));
  const auto r = compute_report(incs, targets, now);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].stage, Stage::restore);
  EXPECT_EQ(r[0].met, 1);  // #2 has not been repaired: restore not begun
  EXPECT_EQ(r[0].pending + r[0].missed, 0);
  EXPECT_EQ(r[1].stage, Stage::detect);
  EXPECT_EQ(r[1].met, 1);
  EXPECT_EQ(r[1].missed, 1);
  EXPECT_EQ(r[2].stage, Stage::mitigate);
  EXPECT_EQ(r[2].met, 1);
  EXPECT_EQ(r[2].missed, 1);
  EXPECT_THAT(r[2].breaches, ElementsAre(2));
  EXPECT_EQ(r[3].stage, Stage::repair);
  EXPECT_EQ(r[3].met, 1);      // 4000 s < 2 h
  EXPECT_EQ(r[3].missed, 1);   // #2 mitigated at 430 s, still not repaired after 3 h
  EXPECT_THAT(r[3].breaches, ElementsAre(2));
  EXPECT_EQ(*r[3].max, std::chrono::seconds(4000));  // only finished stages make percentiles
}

// Nearest-rank percentiles: the smallest value with at least q of the values at or below.
StageReport report_of_detect_times(const std::vector<int>& secs) {
  std::vector<IncidentTimes> incs;
  int64_t id = 0;
  for (const int s : secs) incs.push_back(incident(++id, "c", s));
  const std::vector<Target> targets = {{"c", Stage::detect, std::chrono::hours(1), 0.9}};
  return compute_report(incs, targets, at(std::chrono::hours(10)))[0];
}

TEST(ReportPercentiles, SingleValue) {
  const auto r = report_of_detect_times({42});
  EXPECT_EQ(*r.p50, std::chrono::seconds(42));
  EXPECT_EQ(*r.p95, std::chrono::seconds(42));
  EXPECT_EQ(*r.max, std::chrono::seconds(42));
}

TEST(ReportPercentiles, TwoValues) {
  const auto r = report_of_detect_times({20, 10});
  EXPECT_EQ(*r.p50, std::chrono::seconds(10));  // rank ceil(0.5 * 2) = 1
  EXPECT_EQ(*r.p95, std::chrono::seconds(20));  // rank ceil(0.95 * 2) = 2
  EXPECT_EQ(*r.max, std::chrono::seconds(20));
}

TEST(ReportPercentiles, FiveValuesUnsorted) {
  const auto r = report_of_detect_times({50, 10, 40, 20, 30});
  EXPECT_EQ(*r.p50, std::chrono::seconds(30));  // rank 3
  EXPECT_EQ(*r.p95, std::chrono::seconds(50));  // rank 5
  EXPECT_EQ(*r.max, std::chrono::seconds(50));
}

TEST(ReportPercentiles, TwentyValues) {
  std::vector<int> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);
  const auto r = report_of_detect_times(v);
  EXPECT_EQ(*r.p50, std::chrono::seconds(10));  // rank 10
  EXPECT_EQ(*r.p95, std::chrono::seconds(19));  // rank 19
  EXPECT_EQ(*r.max, std::chrono::seconds(20));
}

TEST(ReportPercentiles, ExactRanksForEverySizeUpTo200) {
  // Guards against floating-point error in q * n turning an exact rank into the next one.
  for (int n = 1; n <= 200; ++n) {
    std::vector<int> v;
    for (int i = 1; i <= n; ++i) v.push_back(i);
    const auto r = report_of_detect_times(v);
    const int rank50 = (n + 1) / 2;          // ceil(n / 2)
    const int rank95 = (95 * n + 99) / 100;  // ceil(0.95 n) in integers
    ASSERT_EQ(*r.p50, std::chrono::seconds(rank50)) << "n=" << n;
    ASSERT_EQ(*r.p95, std::chrono::seconds(rank95)) << "n=" << n;
    ASSERT_EQ(*r.max, std::chrono::seconds(n)) << "n=" << n;
  }
}

TEST(ReportPercentiles, DuplicatesAndZero) {
  const auto r = report_of_detect_times({0, 0, 0, 7});
  EXPECT_EQ(*r.p50, Duration::zero());
  EXPECT_EQ(*r.p95, std::chrono::seconds(7));
}

}  // namespace
}  // namespace medic::slo

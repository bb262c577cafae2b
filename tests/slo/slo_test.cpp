#include "slo/slo.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace medic::slo {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;

const Time kT0 = from_unix_seconds(1'800'000'000);

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
    t += seconds(*detect_s);
    i.detected_at = t;
    if (mitigate_s) {
      t += seconds(*mitigate_s);
      i.mitigated_at = t;
      if (repair_s) {
        t += seconds(*repair_s);
        i.repaired_at = t;
        if (restore_s) {
          t += seconds(*restore_s);
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
  EXPECT_EQ(judge(inc, Stage::detect, seconds(60), at(minutes(10)), &elapsed), Verdict::met);
  ASSERT_TRUE(elapsed);
  EXPECT_EQ(*elapsed, seconds(30));
}

TEST(Judge, ExactlyAtTargetIsMet) {
  const IncidentTimes inc = incident(1, "link_flap", 60);
  EXPECT_EQ(judge(inc, Stage::detect, seconds(60), at(minutes(10))), Verdict::met);
  EXPECT_EQ(judge(inc, Stage::detect, seconds(60) - Duration(1), at(minutes(10))), Verdict::missed);
}

TEST(Judge, MissedWhenTheStageTookTooLong) {
  const IncidentTimes inc = incident(1, "link_flap", 90);
  std::optional<Duration> elapsed;
  EXPECT_EQ(judge(inc, Stage::detect, seconds(60), at(minutes(10)), &elapsed), Verdict::missed);
  ASSERT_TRUE(elapsed);
  EXPECT_EQ(*elapsed, seconds(90));
}

TEST(Judge, VerdictOfAFinishedStageDoesNotDependOnNow) {
  const IncidentTimes inc = incident(1, "link_flap", 30);
  EXPECT_EQ(judge(inc, Stage::detect, seconds(60), at(seconds(31))), Verdict::met);
  EXPECT_EQ(judge(inc, Stage::detect, seconds(60), at(std::chrono::hours(1000))), Verdict::met);
}

TEST(Judge, PendingUntilTheTargetPassesThenMissed) {
  const IncidentTimes inc = incident(1, "link_flap", 10);  // detected, not mitigated
  std::optional<Duration> elapsed;
  // The mitigate stage began at t=10 s with a 5 min target.
  EXPECT_EQ(judge(inc, Stage::mitigate, minutes(5), at(seconds(10)), &elapsed), Verdict::pending);
  EXPECT_FALSE(elapsed);
  EXPECT_EQ(judge(inc, Stage::mitigate, minutes(5), at(seconds(10) + minutes(5)), &elapsed), Verdict::pending);
  EXPECT_EQ(judge(inc, Stage::mitigate, minutes(5), at(seconds(10) + minutes(5) + Duration(1)), &elapsed),
            Verdict::missed);
  EXPECT_FALSE(elapsed);  // not finished: no elapsed time
}

TEST(Judge, NotApplicableWhenTheStageNeverBegan) {
  IncidentTimes inc = incident(1, "link_flap", std::nullopt);
  inc.started_at.reset();
  EXPECT_EQ(judge(inc, Stage::detect, seconds(60), at(minutes(10))), Verdict::not_applicable);
  // Detected but never mitigated: the repair stage has not begun.
  const IncidentTimes det = incident(2, "link_flap", 5);
  EXPECT_EQ(judge(det, Stage::repair, minutes(1), at(std::chrono::hours(24))), Verdict::not_applicable);
  EXPECT_EQ(judge(det, Stage::restore, minutes(1), at(std::chrono::hours(24))), Verdict::not_applicable);
}

TEST(Judge, ClosedWithoutReachingTheStageIsNotApplicable) {
  IncidentTimes inc = incident(1, "link_flap", 10);  // detected, then dismissed
  inc.open = false;
  std::optional<Duration> elapsed;
  EXPECT_EQ(judge(inc, Stage::mitigate, minutes(5), at(std::chrono::hours(5)), &elapsed), Verdict::not_applicable);
  EXPECT_FALSE(elapsed);
  // Stages it did finish are still judged.
  EXPECT_EQ(judge(inc, Stage::detect, seconds(60), at(std::chrono::hours(5))), Verdict::met);
  EXPECT_EQ(judge(inc, Stage::detect, seconds(5), at(std::chrono::hours(5))), Verdict::missed);
}

TEST(Judge, EachStageIsTimedFromThePreviousOne) {
  const IncidentTimes inc = incident(1, "link_flap", 10, 20, 3600, 120);
  std::optional<Duration> e;
  const Time now = at(std::chrono::hours(10));
  EXPECT_EQ(judge(inc, Stage::detect, seconds(10), now, &e), Verdict::met);
  EXPECT_EQ(*e, seconds(10));
  EXPECT_EQ(judge(inc, Stage::mitigate, seconds(20), now, &e), Verdict::met);
  EXPECT_EQ(*e, seconds(20));
  EXPECT_EQ(judge(inc, Stage::repair, seconds(3599), now, &e), Verdict::missed);
  EXPECT_EQ(*e, seconds(3600));
  EXPECT_EQ(judge(inc, Stage::restore, seconds(120), now, &e), Verdict::met);
  EXPECT_EQ(*e, seconds(120));
}

TEST(Judge, EndBeforeBeginCountsAsZero) {
  IncidentTimes inc = incident(1, "link_flap", 10);
  inc.detected_at = kT0 - seconds(3);  // clocks of different sources disagree
  std::optional<Duration> e;
  EXPECT_EQ(judge(inc, Stage::detect, Duration::zero(), at(minutes(1)), &e), Verdict::met);
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
// compute_report

TEST(Report, CountsShareAndBreaches) {
  std::vector<IncidentTimes> incs = {
      incident(1, "link_flap", 20),             // met
      incident(2, "link_flap", 90),             // missed
      incident(3, "link_flap", 60),             // met (at target)
      incident(4, "link_flap", std::nullopt),   // open, started 2 min ago: missed
      incident(5, "link_flap", 45),             // met
      incident(6, "optics", 500),               // other class
  };
  IncidentTimes pending = incident(7, "link_flap", std::nullopt);
  pending.started_at = kT0 + seconds(100);  // began 20 s before now
  incs.push_back(pending);
  IncidentTimes dismissed = incident(8, "link_flap", std::nullopt);
  dismissed.open = false;
  incs.push_back(dismissed);

  const std::vector<Target> targets = {{"link_flap", Stage::detect, seconds(60), 0.75}};
  const auto reports = compute_report(incs, targets, at(seconds(120)));
  ASSERT_EQ(reports.size(), 1u);
  const StageReport& r = reports[0];
  EXPECT_EQ(r.incident_class, "link_flap");
  EXPECT_EQ(r.stage, Stage::detect);
  EXPECT_EQ(r.target, seconds(60));
  EXPECT_EQ(r.objective, 0.75);
  EXPECT_EQ(r.met, 3);
  EXPECT_EQ(r.missed, 2);
  EXPECT_EQ(r.pending, 1);
  EXPECT_DOUBLE_EQ(r.share_met, 3.0 / 5.0);
  EXPECT_FALSE(r.objective_met);
  EXPECT_THAT(r.breaches, ElementsAre(2, 4));
  // Percentiles are over finished stages only (20, 45, 60, 90 s).
  ASSERT_TRUE(r.p50 && r.p95 && r.max);
  EXPECT_EQ(*r.p50, seconds(45));
  EXPECT_EQ(*r.p95, seconds(90));
  EXPECT_EQ(*r.max, seconds(90));
}

TEST(Report, ObjectiveMetAtExactlyTheObjective) {
  std::vector<IncidentTimes> incs;
  for (int i = 0; i < 99; ++i) incs.push_back(incident(i, "c", 10));
  incs.push_back(incident(99, "c", 1000));
  const std::vector<Target> targets = {{"c", Stage::detect, seconds(60), 0.99}};
  auto r = compute_report(incs, targets, at(std::chrono::hours(1)))[0];
  EXPECT_EQ(r.met, 99);
  EXPECT_EQ(r.missed, 1);
  EXPECT_DOUBLE_EQ(r.share_met, 0.99);
  EXPECT_TRUE(r.objective_met);
  EXPECT_THAT(r.breaches, ElementsAre(99));

  incs.push_back(incident(100, "c", 1000));
  r = compute_report(incs, targets, at(std::chrono::hours(1)))[0];
  EXPECT_FALSE(r.objective_met);  // 99/101 < 0.99
}

TEST(Report, NothingDecidedYet) {
  std::vector<IncidentTimes> incs = {incident(1, "c", std::nullopt)};
  const std::vector<Target> targets = {{"c", Stage::detect, minutes(5), 0.99}};
  const auto r = compute_report(incs, targets, at(seconds(30)))[0];
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
  const std::vector<Target> targets = {{"c", Stage::repair, minutes(30), 0.9}};
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
  const std::vector<Target> targets = {{"link_flap", Stage::detect, seconds(60), 0.5},
                                       {"optics", Stage::detect, seconds(60), 0.5},
                                       {"corruption", Stage::detect, seconds(60), 0.5}};
  const auto reports = compute_report(incs, targets, at(std::chrono::hours(1)));
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].incident_class, "link_flap");
  EXPECT_EQ(reports[0].met, 1);
  EXPECT_EQ(reports[0].missed, 1);
  EXPECT_THAT(reports[0].breaches, ElementsAre(4));
  EXPECT_EQ(*reports[0].max, seconds(70));
  EXPECT_TRUE(reports[0].objective_met);  // 0.5 >= 0.5
  EXPECT_EQ(reports[1].incident_class, "optics");
  EXPECT_THAT(reports[1].breaches, ElementsAre(2));
  EXPECT_EQ(*reports[1].max, seconds(500));
  EXPECT_EQ(reports[2].incident_class, "corruption");
  EXPECT_EQ(reports[2].met + reports[2].missed + reports[2].pending, 0);
}

TEST(Report, OneReportPerTargetInOrder) {
  const std::vector<IncidentTimes> incs = {incident(1, "c", 10, 100, 4000, 50), incident(2, "c", 30, 400)};
  const std::vector<Target> targets = {{"c", Stage::restore, minutes(1), 0.9},
                                       {"c", Stage::detect, seconds(20), 0.9},
                                       {"c", Stage::mitigate, minutes(5), 0.9},
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
  EXPECT_EQ(*r[3].max, seconds(4000));  // only finished stages make percentiles
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
  EXPECT_EQ(*r.p50, seconds(42));
  EXPECT_EQ(*r.p95, seconds(42));
  EXPECT_EQ(*r.max, seconds(42));
}

TEST(ReportPercentiles, TwoValues) {
  const auto r = report_of_detect_times({20, 10});
  EXPECT_EQ(*r.p50, seconds(10));  // rank ceil(0.5 * 2) = 1
  EXPECT_EQ(*r.p95, seconds(20));  // rank ceil(0.95 * 2) = 2
  EXPECT_EQ(*r.max, seconds(20));
}

TEST(ReportPercentiles, FiveValuesUnsorted) {
  const auto r = report_of_detect_times({50, 10, 40, 20, 30});
  EXPECT_EQ(*r.p50, seconds(30));  // rank 3
  EXPECT_EQ(*r.p95, seconds(50));  // rank 5
  EXPECT_EQ(*r.max, seconds(50));
}

TEST(ReportPercentiles, TwentyValues) {
  std::vector<int> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);
  const auto r = report_of_detect_times(v);
  EXPECT_EQ(*r.p50, seconds(10));  // rank 10
  EXPECT_EQ(*r.p95, seconds(19));  // rank 19
  EXPECT_EQ(*r.max, seconds(20));
}

TEST(ReportPercentiles, ExactRanksForEverySizeUpTo200) {
  // Guards against floating-point error in q * n turning an exact rank into the next one.
  for (int n = 1; n <= 200; ++n) {
    std::vector<int> v;
    for (int i = 1; i <= n; ++i) v.push_back(i);
    const auto r = report_of_detect_times(v);
    const int rank50 = (n + 1) / 2;          // ceil(n / 2)
    const int rank95 = (95 * n + 99) / 100;  // ceil(0.95 n) in integers
    ASSERT_EQ(*r.p50, seconds(rank50)) << "n=" << n;
    ASSERT_EQ(*r.p95, seconds(rank95)) << "n=" << n;
    ASSERT_EQ(*r.max, seconds(n)) << "n=" << n;
  }
}

TEST(ReportPercentiles, DuplicatesAndZero) {
  const auto r = report_of_detect_times({0, 0, 0, 7});
  EXPECT_EQ(*r.p50, Duration::zero());
  EXPECT_EQ(*r.p95, seconds(7));
}

}  // namespace
}  // namespace medic::slo

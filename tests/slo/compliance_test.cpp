// The SLO compliance core on its edges: a stage finishing exactly at its target, a deadline
// on a window's edge, pending turning into missed, dismissed and reopened incidents, a
// target changed mid-window, empty windows, a month with a daylight-saving change (UTC).
#include "slo/compliance.h"

#include <gtest/gtest.h>

#include "tests/slo/slo_times.h"

namespace medic::slo {
namespace {

TargetVersion v(double target_s, double from_s, double objective = 0.99) {
  return {"link_flap", Stage::mitigate, "", "", from_seconds(target_s), objective, t(from_s)};
}

StageTimes inc(double detected, std::optional<double> mitigated) {
  StageTimes i;
  i.id = 1;
  i.incident_class = "link_flap";
  i.detected_at = t(detected);
  if (mitigated) i.mitigated_at = t(*mitigated);
  return i;
}

StageOutcome judge(const StageTimes& i, const std::vector<TargetVersion>& vs, double from, double to) {
  return judge_in_window(i, Stage::mitigate, vs, Window{t(from), t(to)});
}

TEST(Compliance, FinishingExactlyAtTheTargetIsMetWhenItFinished) {
  const std::vector<TargetVersion> vs = {v(120, 0)};
  const auto o = judge(inc(100, 220), vs, 0, 1000);
  EXPECT_EQ(o.decision, Decision::met);
  EXPECT_EQ(o.decided_at, t(220));
  EXPECT_EQ(o.elapsed, from_seconds(120));
  // One microsecond later is missed, decided at the deadline, late by that microsecond.
  StageTimes late = inc(100, 220);
  late.mitigated_at = t(220) + Duration(1);
  const auto m = judge(late, vs, 0, 1000);
  EXPECT_EQ(m.decision, Decision::missed);
  EXPECT_EQ(m.decided_at, t(220));
  EXPECT_EQ(m.late, Duration(1));
}

TEST(Compliance, ADeadlineOnAWindowsEdgeBelongsToTheWindowItOpens) {
  const std::vector<TargetVersion> vs = {v(120, 0)};
  const StageTimes never = inc(880, std::nullopt);  // due at 1000
  EXPECT_EQ(judge(never, vs, 0, 1000).decision, Decision::pending) << "[from, to): 1000 is not in [0, 1000)";
  const auto next = judge(never, vs, 1000, 2000);
  EXPECT_EQ(next.decision, Decision::missed);
  EXPECT_EQ(next.decided_at, t(1000));
  EXPECT_EQ(next.late, from_seconds(1000)) << "unfinished: late until the window's end";
  // A stage met exactly at `to` belongs to the next window too.
  EXPECT_EQ(judge(inc(900, 1000), vs, 0, 1000).decision, Decision::pending);
  EXPECT_EQ(judge(inc(900, 1000), vs, 1000, 2000).decision, Decision::met);
}

TEST(Compliance, PendingTurnsIntoMissedWhenTheDeadlinePasses) {
  const std::vector<TargetVersion> vs = {v(120, 0)};
  const StageTimes open = inc(100, std::nullopt);
  EXPECT_EQ(judge(open, vs, 0, 200).decision, Decision::pending);
  EXPECT_EQ(judge(open, vs, 0, 220).decision, Decision::pending);
  EXPECT_EQ(judge(open, vs, 0, 221).decision, Decision::missed);
  // Not started before the window's end: nothing.
  EXPECT_EQ(judge(inc(300, std::nullopt), vs, 0, 200).decision, Decision::not_yet);
  // Decided before the window: nothing in it.
  EXPECT_EQ(judge(inc(100, 150), vs, 200, 400).decision, Decision::not_yet);
}

TEST(Compliance, DismissedIncidentsDecideNothingAfterTheirDismissal) {
  const std::vector<TargetVersion> vs = {v(120, 0)};
  StageTimes d = inc(100, std::nullopt);
  d.dismissed_at = t(150);  // before the deadline at 220
  EXPECT_EQ(judge(d, vs, 0, 1000).decision, Decision::not_applicable);
  EXPECT_EQ(judge(d, vs, 0, 140).decision, Decision::pending) << "not dismissed yet at the window's end";
  d.dismissed_at = t(300);  // after the deadline: the miss was decided before it
  EXPECT_EQ(judge(d, vs, 0, 1000).decision, Decision::missed);
  // A reopened incident is judged on its new times (the store clears the later stages).
  StageTimes reopened = inc(5000, 5050);
  EXPECT_EQ(judge(reopened, vs, 0, 1000).decision, Decision::not_yet);
  EXPECT_EQ(judge(reopened, vs, 4000, 6000).decision, Decision::met);
}

TEST(Compliance, ATargetChangedMidWindowJudgesEachStageByTheOneInForceWhenDecided) {
  // 600 s until t=1000, then 60 s.
  const std::vector<TargetVersion> vs = {v(600, 0), v(60, 1000)};
  // Finished at 500 after 400 s: met under the old target, whatever came later.
  const auto before = judge(inc(100, 500), vs, 0, 2000);
  EXPECT_EQ(before.decision, Decision::met);
  EXPECT_EQ(before.target, from_seconds(600));
  // Started at 900 and still open at 1000: over the new target the moment it holds.
  const auto at_change = judge(inc(900, 1500), vs, 0, 2000);
  EXPECT_EQ(at_change.decision, Decision::missed);
  EXPECT_EQ(at_change.decided_at, t(1000));
  EXPECT_EQ(at_change.target, from_seconds(60));
  // Started after the change: the new target.
  EXPECT_EQ(judge(inc(1100, 1200), vs, 0, 2000).decision, Decision::missed);
  EXPECT_EQ(judge(inc(1100, 1150), vs, 0, 2000).decision, Decision::met);
  // The first version holds for all history before it too.
  const std::vector<TargetVersion> late_start = {v(120, 10'000)};
  EXPECT_EQ(judge(inc(100, 200), late_start, 0, 1000).decision, Decision::met);
  // A report of the past does not change when a target changes later.
  const std::vector<TargetVersion> changed_today = {v(120, 0), v(10, 50'000)};
  EXPECT_EQ(judge(inc(100, 200), changed_today, 0, 1000).decision, Decision::met);
}

TEST(Compliance, NoStartOrNoTargetIsNotApplicable) {
  StageTimes none;
  none.incident_class = "link_flap";
  EXPECT_EQ(judge(none, {v(120, 0)}, 0, 1000).decision, Decision::not_applicable);
  EXPECT_EQ(judge(inc(100, 200), {}, 0, 1000).decision, Decision::not_applicable);
  EXPECT_EQ(judge_in_window(inc(100, 200), Stage::detect, std::vector<TargetVersion>{v(120, 0)}, Window{t(0), t(1000)})
                .decision,
            Decision::not_applicable)
      << "no fault start known";
}

TEST(Compliance, ScopedTargetsWinOverUnscopedOnesForTheirGroup) {
  std::vector<TargetVersion> all = {v(120, 0)};
  TargetVersion zone = v(30, 0);
  zone.scope_kind = "zone";
  zone.scope_value = "zone2";
  all.push_back(zone);
  StageTimes a = inc(100, 200);
  a.groups["zone"] = "zone1";
  StageTimes b = inc(100, 200);
  b.groups["zone"] = "zone2";
  EXPECT_EQ(versions_for(all, a, Stage::mitigate).front().target, from_seconds(120));
  EXPECT_EQ(versions_for(all, b, Stage::mitigate).front().target, from_seconds(30));
  EXPECT_TRUE(versions_for(all, a, Stage::repair).empty());
}

TEST(Compliance, AMonthWithADaylightSavingChangeIsPlainUtc) {
  // Europe's clocks went back on 2026-10-25: the UTC window of October has 31 × 24 hours.
  const Window oct{*parse_iso8601("2026-10-01T00:00:00Z"), *parse_iso8601("2026-11-01T00:00:00Z")};
  EXPECT_EQ(oct.to - oct.from, std::chrono::hours(31 * 24));
  StageTimes i;
  i.incident_class = "link_flap";
  i.detected_at = *parse_iso8601("2026-10-25T00:59:00Z");
  i.mitigated_at = *parse_iso8601("2026-10-25T01:01:00Z");  // two minutes across the change
  const std::vector<TargetVersion> vs = {v(120, -1e9)};
  EXPECT_EQ(judge_in_window(i, Stage::mitigate, vs, oct).decision, Decision::met);
}

TEST(Compliance, BudgetsAndBurnRates) {
  const auto empty = compliance(0, 0, 3, 0.99);
  EXPECT_EQ(empty.decided, 0);
  EXPECT_DOUBLE_EQ(empty.compliance, 1.0);
  EXPECT_DOUBLE_EQ(empty.allowed_misses, 0.0);
  EXPECT_DOUBLE_EQ(empty.budget_consumed, 0.0);
  const auto c = compliance(195, 5, 1, 0.95);
  EXPECT_EQ(c.decided, 200);
  EXPECT_DOUBLE_EQ(c.compliance, 0.975);
  EXPECT_NEAR(c.allowed_misses, 10.0, 1e-9);
  EXPECT_NEAR(c.budget_remaining, 5.0, 1e-9);
  EXPECT_NEAR(c.budget_consumed, 0.5, 1e-9);
  EXPECT_NEAR(burn_rate(95, 5, 0.95), 1.0, 1e-9) << "missing exactly the allowed share burns at 1";
  EXPECT_NEAR(burn_rate(90, 10, 0.99), 10.0, 1e-9);
  EXPECT_DOUBLE_EQ(burn_rate(0, 0, 0.99), 0.0);
}

}  // namespace
}  // namespace medic::slo

// /healthz's judgement, from plain facts.
#include "service/health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace medic::service {
namespace {

using ::testing::HasSubstr;

const Time kNow = Time(std::chrono::seconds(1'800'000'000));

HealthFacts leading() {
  HealthFacts f;
  f.leadership.role = Role::leader;
  f.leadership.epoch = 3;
  f.leadership.db_up = true;
  f.leadership.checked_at = kNow;
  f.leadership.db_answered_at = kNow - std::chrono::seconds(1);
  f.since_last_cycle_s = 0.4;
  f.stale_after_s = 10;
  f.now = kNow;
  return f;
}

TEST(Health, ALeaderThatPollsIsHealthy) {
  const Health h = judge_health(leading());
  EXPECT_EQ(h.status, 200);
  EXPECT_THAT(h.text, HasSubstr("ok: leader (epoch 3)"));
  EXPECT_THAT(h.text, HasSubstr("last poll cycle 0.4 s ago"));
}

TEST(Health, APollLoopThatHasNotFinishedACycleWithinItsBoundIsStuck) {
  HealthFacts f = leading();
  f.since_last_cycle_s = 10.5;
  const Health h = judge_health(f);
  EXPECT_EQ(h.status, 503);
  EXPECT_THAT(h.text, HasSubstr("the poll loop is stuck: last poll cycle 10.5 s ago (expected within 10 s)"));
  // Exactly at the bound it is still on time.
  f.since_last_cycle_s = 10;
  EXPECT_EQ(judge_health(f).status, 200);
}

TEST(Health, ALeaderThatNeverFinishedACycleIsStuck) {
  HealthFacts f = leading();
  f.since_last_cycle_s = -1;
  const Health h = judge_health(f);
  EXPECT_EQ(h.status, 503);
  EXPECT_THAT(h.text, HasSubstr("no poll cycle finished yet"));
}

TEST(Health, ADatabaseThatStoppedAnsweringIsUnhealthyEvenBeforeTheCheckGivesUp) {
  HealthFacts f = leading();
  f.leadership.db_answered_at = kNow - std::chrono::seconds(4);  // the check itself waits on it
  const Health h = judge_health(f);
  EXPECT_EQ(h.status, 503);
  EXPECT_THAT(h.text, HasSubstr("the database has not answered for 4 s"));
  f.leadership.db_answered_at = kNow - std::chrono::seconds(3);
  EXPECT_EQ(judge_health(f).status, 200);
}

TEST(Health, AWallClockSteppedForwardIsNotASilentDatabase) {
  HealthFacts f = leading();
  f.leadership.db_answered_mono = std::chrono::seconds(100);
  f.mono_now = std::chrono::seconds(101);  // answered a second ago
  f.now = kNow + std::chrono::hours(2);    // by a wall clock stepped two hours forward since
  EXPECT_EQ(judge_health(f).status, 200);
  f.mono_now = std::chrono::seconds(105);
  EXPECT_THAT(judge_health(f).text, HasSubstr("the database has not answered for 5 s"));
}

TEST(Health, ADatabaseDownSaysWhatWaits) {
  HealthFacts f = leading();
  f.leadership.role = Role::degraded;
  f.leadership.db_up = false;
  f.leadership.db_error = "connection refused";
  f.pending_records = 7;
  const Health h = judge_health(f);
  EXPECT_EQ(h.status, 503);
  EXPECT_THAT(h.text, HasSubstr("the database does not answer (connection refused)"));
  EXPECT_THAT(h.text, HasSubstr("7 records wait"));
}

TEST(Health, DegradedWithTheDatabaseUpIsUnhealthy) {
  HealthFacts f = leading();
  f.leadership.role = Role::degraded;
  const Health h = judge_health(f);
  EXPECT_EQ(h.status, 503);
  EXPECT_THAT(h.text, HasSubstr("degraded: the leader lock is not held"));
}

TEST(Health, AStandbyIsHealthyWhateverItsLoop) {
  HealthFacts f = leading();
  f.leadership.role = Role::standby;
  f.leadership.leader = "medicd-a:12";
  f.since_last_cycle_s = 1000;
  const Health h = judge_health(f);
  EXPECT_EQ(h.status, 200);
  EXPECT_THAT(h.text, HasSubstr("standby, medicd-a:12 leads"));
}

}  // namespace
}  // namespace medic::service

#include "telemetry/backoff.h"

#include <gtest/gtest.h>

#include <iterator>
#include <vector>

#include "tests/support/epoch.h"

namespace medic::telemetry {
namespace {

using std::chrono::seconds;

constexpr Duration kOneUs{1};

TEST(Backoff, EveryDeviceIsDueBeforeAnyFailure) {
  const Backoff b(3, seconds(10), seconds(300));
  for (size_t d = 0; d < 3; ++d) {
    EXPECT_TRUE(b.due(d, kT0)) << d;
    EXPECT_EQ(b.failures(d), 0) << d;
  }
}

TEST(Backoff, FirstFailureIsRetriedAtTheNextPoll) {
  Backoff b(1, seconds(10), seconds(300));
  b.record(0, false, kT0);
  EXPECT_EQ(b.failures(0), 1);
  EXPECT_FALSE(b.due(0, kT0));
  // Half an interval of slack, so a poll that runs a little early is not skipped.
  EXPECT_EQ(b.next_attempt(0), kT0 + seconds(5));
  EXPECT_FALSE(b.due(0, kT0 + seconds(5) - kOneUs));
  EXPECT_TRUE(b.due(0, kT0 + seconds(5)));
  EXPECT_TRUE(b.due(0, kT0 + seconds(10)));
}

TEST(Backoff, WaitDoublesPerFailureUpToTheMaximum) {
  Backoff b(1, seconds(10), seconds(60));
  // failure n waits min(10 s * 2^(n-1), 60 s), less half an interval of slack.
  const Duration waits[] = {seconds(10), seconds(20), seconds(40), seconds(60), seconds(60), seconds(60)};
  Time now = kT0;
  for (size_t n = 0; n < std::size(waits); ++n) {
    ASSERT_TRUE(b.due(0, now)) << n;
    b.record(0, false, now);
    EXPECT_EQ(b.failures(0), static_cast<int>(n + 1));
    const Time next = now + waits[n] - seconds(5);
    EXPECT_EQ(b.next_attempt(0), next) << "failure " << n + 1;
    EXPECT_FALSE(b.due(0, next - kOneUs)) << n;
    EXPECT_TRUE(b.due(0, next)) << n;
    // The poll at which it is tried again: the first multiple of the interval past `next`.
    now += waits[n];
  }
}

TEST(Backoff, PollsSkippedWhileBackingOff) {
  // Polled every 10 s from kT0: which polls try the device while it keeps failing.
  Backoff b(1, seconds(10), seconds(40));
  std::vector<int> tried;
  for (int poll = 0; poll <= 16; ++poll) {
    const Time now = kT0 + seconds(10 * poll);
    if (!b.due(0, now)) continue;
    tried.push_back(poll);
    b.record(0, false, now);
  }
  // waits 1, 2, 4, 4, 4 polls
  EXPECT_EQ(tried, (std::vector<int>{0, 1, 3, 7, 11, 15}));
}

TEST(Backoff, SuccessResets) {
  Backoff b(1, seconds(10), seconds(300));
  b.record(0, false, kT0);
  b.record(0, false, kT0 + seconds(10));
  b.record(0, false, kT0 + seconds(30));
  ASSERT_EQ(b.failures(0), 3);
  ASSERT_FALSE(b.due(0, kT0 + seconds(40)));
  b.record(0, true, kT0 + seconds(40));
  EXPECT_EQ(b.failures(0), 0);
  EXPECT_TRUE(b.due(0, kT0 + seconds(40)));
  EXPECT_EQ(b.next_attempt(0), Time{});
  // The next failure starts over at one interval.
  b.record(0, false, kT0 + seconds(50));
  EXPECT_EQ(b.failures(0), 1);
  EXPECT_EQ(b.next_attempt(0), kT0 + seconds(55));
}

TEST(Backoff, DevicesAreIndependent) {
  Backoff b(2, seconds(10), seconds(300));
  b.record(0, false, kT0);
  b.record(0, false, kT0 + seconds(10));
  b.record(1, true, kT0 + seconds(10));
  EXPECT_FALSE(b.due(0, kT0 + seconds(20)));
  EXPECT_TRUE(b.due(1, kT0 + seconds(20)));
  EXPECT_EQ(b.failures(1), 0);
}

TEST(Backoff, MaximumBelowTheIntervalIsTheInterval) {
  Backoff b(1, seconds(10), seconds(2));
  for (int i = 0; i < 5; ++i) b.record(0, false, kT0);
  EXPECT_EQ(b.next_attempt(0), kT0 + seconds(5));
}

TEST(Backoff, ManyFailuresDoNotOverflow) {
  Backoff b(1, seconds(1), seconds(3600));
  Time now = kT0;
  for (int i = 0; i < 10'000; ++i) {
    b.record(0, false, now);
    now += seconds(3600);
  }
  EXPECT_EQ(b.failures(0), 10'000);
  EXPECT_EQ(b.next_attempt(0), now - seconds(3600) + seconds(3600) - std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace medic::telemetry

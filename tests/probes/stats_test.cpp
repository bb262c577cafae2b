#include "probes/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace medic::probes {
namespace {

TEST(Wilson, NothingLostOfAHundred) {
  // Upper bound z^2 / (n + z^2) when nothing is lost: 3.8416 / 103.8416.
  const Interval w = wilson(0, 100, 1.96);
  EXPECT_DOUBLE_EQ(w.lower, 0);
  EXPECT_NEAR(w.upper, 0.036995, 1e-6);
}

TEST(Wilson, KnownValues) {
  const Interval half = wilson(50, 100, 1.96);
  EXPECT_NEAR(half.lower, 0.40383, 1e-5);
  EXPECT_NEAR(half.upper, 0.59617, 1e-5);
  const Interval all = wilson(10, 10, 1.96);
  EXPECT_NEAR(all.lower, 10 / 13.8416, 1e-6);
  EXPECT_DOUBLE_EQ(all.upper, 1);
  const Interval one = wilson(1, 100, 2.58);
  EXPECT_NEAR(one.lower, 0.001174, 1e-5);
  EXPECT_NEAR(one.upper, 0.07999, 1e-5);
}

TEST(Wilson, WiderAtHigherZAndNarrowerWithMoreProbes) {
  const Interval z95 = wilson(5, 200, 1.96), z99 = wilson(5, 200, 2.58);
  EXPECT_LT(z99.lower, z95.lower);
  EXPECT_GT(z99.upper, z95.upper);
  const Interval more = wilson(50, 2000, 1.96);
  EXPECT_GT(more.lower, z95.lower);
  EXPECT_LT(more.upper, z95.upper);
}

TEST(Wilson, NothingSentAndMoreLostThanSent) {
  const Interval none = wilson(0, 0);
  EXPECT_DOUBLE_EQ(none.lower, 0);
  EXPECT_DOUBLE_EQ(none.upper, 1);
  const Interval over = wilson(12, 10);
  EXPECT_DOUBLE_EQ(over.upper, 1);
  EXPECT_DOUBLE_EQ(over.lower, wilson(10, 10).lower);
}

TEST(PoissonAtLeast, KnownValuesAndEdges) {
  EXPECT_NEAR(poisson_at_least(1, 1.0), 1 - std::exp(-1.0), 1e-12);
  const double m = 0.03;
  EXPECT_NEAR(poisson_at_least(3, m) / (1 - std::exp(-m) * (1 + m + m * m / 2)), 1.0, 1e-6);
  EXPECT_NEAR(poisson_at_least(4, m) / (1 - std::exp(-m) * (1 + m + m * m / 2 + m * m * m / 6)), 1.0, 1e-4);
  EXPECT_NEAR(poisson_at_least(10, 10.0), 0.5420702855, 1e-9);
  EXPECT_DOUBLE_EQ(poisson_at_least(0, 5.0), 1.0);
  EXPECT_DOUBLE_EQ(poisson_at_least(-1, 5.0), 1.0);
  EXPECT_DOUBLE_EQ(poisson_at_least(3, 0.0), 0.0);
  EXPECT_LT(poisson_at_least(200, 1.0), 1e-300);
  // Huge and odd arguments answer within [0, 1] (or 1: nothing shown), never throw.
  for (const double k : {1.0, 3.0, 1e6, 1e12, 1e300}) {
    for (const double mean : {1e-300, 1e-9, 1.0, 1e6, 1e12, 1e300}) {
      const double p = poisson_at_least(k, mean);
      EXPECT_TRUE(p >= 0 && p <= 1) << k << " " << mean << " " << p;
    }
  }
  EXPECT_DOUBLE_EQ(poisson_at_least(std::nan(""), 1.0), 1.0);
  EXPECT_DOUBLE_EQ(poisson_at_least(3, std::nan("")), 1.0);
}

// The nearest-rank quantile of sorted values, as the sketch defines it.
double exact_quantile(const std::vector<double>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::max<size_t>(rank, 1) - 1];
}

TEST(QuantileSketch, WithinRelativeErrorOnKnownDistributions) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> expo(1 / 20e-6);  // RTTs around 20 us
  std::lognormal_distribution<double> lognormal(std::log(5e-6), 1.0);
  for (int which = 0; which < 3; ++which) {
    QuantileSketch s(0.01);
    std::vector<double> values;
    for (int i = 0; i < 20000; ++i) {
      const double v = which == 0 ? (i + 1) * 1e-6 : which == 1 ? expo(rng) : lognormal(rng);
      values.push_back(v);
      s.add(v);
    }
    std::sort(values.begin(), values.end());
    EXPECT_EQ(s.count(), values.size());
    EXPECT_DOUBLE_EQ(s.min(), values.front());
    EXPECT_DOUBLE_EQ(s.max(), values.back());
    for (double q : {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999}) {
      const double want = exact_quantile(values, q);
      EXPECT_NEAR(*s.quantile(q), want, want * 0.01 + 1e-15) << "distribution " << which << " q " << q;
    }
    EXPECT_DOUBLE_EQ(*s.quantile(0), values.front());
    EXPECT_DOUBLE_EQ(*s.quantile(1), values.back());
  }
}

TEST(QuantileSketch, MergeEqualsOneSketchOverEverything) {
  QuantileSketch a(0.01), b(0.01), all(0.01);
  for (int i = 1; i <= 5000; ++i) {
    const double v = 1e-6 * i * i;
    (i % 3 == 0 ? a : b).add(v);
    all.add(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_DOUBLE_EQ(a.min(), all.min());
  EXPECT_DOUBLE_EQ(a.max(), all.max());
  for (double q : {0.0, 0.05, 0.5, 0.95, 0.999, 1.0}) EXPECT_DOUBLE_EQ(*a.quantile(q), *all.quantile(q));

  QuantileSketch empty(0.01), copy(0.01);
  copy.merge(all);  // into an empty sketch
  copy.merge(empty);  // from an empty one
  EXPECT_EQ(copy.count(), all.count());
  EXPECT_DOUBLE_EQ(*copy.quantile(0.5), *all.quantile(0.5));
}

TEST(QuantileSketch, EmptyZeroesAndClear) {
  QuantileSketch s;
  EXPECT_EQ(s.count(), 0u);
  EXPECT_FALSE(s.quantile(0.5).has_value());
  s.add(0);
  s.add(-1);
  s.add(2);
  s.add(NAN);  // ignored
  EXPECT_EQ(s.count(), 3u);
  EXPECT_DOUBLE_EQ(*s.quantile(0), -1);
  EXPECT_DOUBLE_EQ(*s.quantile(0.5), 0);  // values <= 0 share the zero bucket
  EXPECT_NEAR(*s.quantile(1), 2, 1e-12);
  s.clear();
  EXPECT_EQ(s.count(), 0u);
  EXPECT_FALSE(s.quantile(0.5).has_value());
}

TEST(SessionStats, LossDuplicatesReorderingAndJitter) {
  SessionStats s;
  for (uint32_t seq = 100; seq < 110; ++seq) s.sent(seq);
  // Replies: 100..109 except 103 and 107; 105 twice; 109 before 108.
  const double rtts[] = {10e-6, 12e-6, 10e-6, 0, 14e-6, 10e-6, 10e-6, 0, 10e-6, 11e-6};
  for (uint32_t seq : {100u, 101u, 102u, 104u, 105u, 106u, 109u, 108u}) {
    s.received(seq, rtts[seq - 100]);
  }
  s.received(105, 10e-6);  // duplicate
  s.received(200, 10e-6);  // never sent
  EXPECT_EQ(s.sent_count(), 10u);
  EXPECT_EQ(s.received_count(), 8u);
  EXPECT_EQ(s.lost(), 2u);
  EXPECT_EQ(s.duplicates(), 1u);
  EXPECT_EQ(s.reordered(), 1u);  // 108 arrived after 109
  EXPECT_EQ(s.rtt().count(), 8u);
  EXPECT_NEAR(*s.rtt().quantile(1), 14e-6, 1e-12);

  // RFC 3550: J += (|D| - J) / 16 over consecutive RTTs in arrival order.
  const double order[] = {10e-6, 12e-6, 10e-6, 14e-6, 10e-6, 10e-6, 11e-6, 10e-6};
  double j = 0;
  for (size_t i = 1; i < 8; ++i) j += (std::fabs(order[i] - order[i - 1]) - j) / 16;
  EXPECT_NEAR(s.jitter_s(), j, 1e-15);

  const Interval li = s.loss_interval(1.96);
  EXPECT_DOUBLE_EQ(li.lower, wilson(2, 10, 1.96).lower);
  EXPECT_DOUBLE_EQ(li.upper, wilson(2, 10, 1.96).upper);
}

TEST(SessionStats, OneWayDelaysOnlyWhenKnown) {
  SessionStats s;
  s.sent(0);
  s.sent(1);
  s.received(0, 20e-6, 9e-6, 11e-6);
  s.received(1, 20e-6);
  EXPECT_EQ(s.forward().count(), 1u);
  EXPECT_EQ(s.backward().count(), 1u);
  EXPECT_EQ(s.rtt().count(), 2u);
  EXPECT_DOUBLE_EQ(s.jitter_s(), 0);
  EXPECT_EQ(s.lost(), 0u);
}

TEST(SessionStats, RepliesBeforeAnythingSentAreIgnored) {
  SessionStats s;
  s.received(1, 1e-6);
  EXPECT_EQ(s.received_count(), 0u);
  EXPECT_EQ(s.lost(), 0u);
  EXPECT_DOUBLE_EQ(s.loss_interval().upper, 1);
}

}  // namespace
}  // namespace medic::probes

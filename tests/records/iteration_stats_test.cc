// SPDX-License-Identifier: Apache-2.0
// The iteration-time statistics of a run summary (core/records/records.h IterationTimeStatsOf), shared by the
// simulator and the backend: against a brute-force oracle (long-double sums, order statistics of a sorted copy,
// the textbook interval), the edge cases of the finite-population correction, and the interval's coverage of the
// epoch mean when iterations are drawn without replacement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/records/records.h"

namespace mmtwin {
namespace {

struct Oracle {
  double mean, p50, p99, min, max, half;
};

// Quantile by the definition: linear interpolation between the order statistics around q (n - 1).
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double h = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= v.size()) return v.back();
  return v[lo] + (h - static_cast<double>(lo)) * (v[lo + 1] - v[lo]);
}

Oracle BruteForce(const std::vector<double>& t, int64_t epoch) {
  long double sum = 0;
  for (double x : t) sum += x;
  const long double n = static_cast<long double>(t.size());
  const long double mean = sum / n;
  long double ss = 0;
  for (double x : t) ss += (x - mean) * (x - mean);
  const long double var = t.size() > 1 ? ss / (n - 1) : 0;
  const long double fpc = epoch > 1 ? std::sqrt(std::max<long double>(0, (epoch - n) / (epoch - 1.0L))) : 0;
  const long double half = 1.96L * std::sqrt(var / n) * fpc;
  return {static_cast<double>(mean),
          Quantile(t, 0.5),
          Quantile(t, 0.99),
          *std::min_element(t.begin(), t.end()),
          *std::max_element(t.begin(), t.end()),
          static_cast<double>(half)};
}

TEST(IterationTimeStats, MatchTheBruteForceOracle) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> time_us(std::log(5e5), 0.3);
  for (int n : {1, 2, 3, 8, 17, 100, 1000}) {
    for (int64_t epoch : {int64_t{n}, int64_t{n} + 1, int64_t{4} * n, int64_t{100000}}) {
      std::vector<double> t(static_cast<size_t>(n));
      for (double& x : t) x = time_us(rng);
      const IterationTimeStats s = IterationTimeStatsOf(t, epoch);
      const Oracle o = BruteForce(t, epoch);
      const double tol = 1e-9 * o.mean;
      SCOPED_TRACE("n " + std::to_string(n) + ", epoch " + std::to_string(epoch));
      EXPECT_NEAR(s.mean, o.mean, tol);
      EXPECT_NEAR(s.p50, o.p50, tol);
      EXPECT_NEAR(s.p99, o.p99, tol);
      EXPECT_EQ(s.min, o.min);
      EXPECT_EQ(s.max, o.max);
      EXPECT_NEAR(s.ci95_low, o.mean - o.half, tol);
      EXPECT_NEAR(s.ci95_high, o.mean + o.half, tol);
      EXPECT_NEAR(s.ci95_high - s.ci95_low, 2 * o.half, tol);
    }
  }
}

TEST(IterationTimeStats, TheFinitePopulationCorrectionClosesTheInterval) {
  const std::vector<double> t = {900, 1000, 1100, 1300};
  // The whole epoch replayed (n = N): the mean is the epoch's, the interval has no width.
  IterationTimeStats all = IterationTimeStatsOf(t, 4);
  EXPECT_DOUBLE_EQ(all.mean, 1075);
  EXPECT_EQ(all.ci95_low, all.mean);
  EXPECT_EQ(all.ci95_high, all.mean);
  // More replayed than the epoch holds, or an epoch of one iteration: no width either (never a NaN).
  for (int64_t epoch : {int64_t{2}, int64_t{1}, int64_t{0}}) {
    const IterationTimeStats s = IterationTimeStatsOf(t, epoch);
    EXPECT_EQ(s.ci95_low, s.mean) << epoch;
    EXPECT_EQ(s.ci95_high, s.mean) << epoch;
  }
  // One iteration: no variance, so no width; p50 = p99 = min = max = it.
  const IterationTimeStats one = IterationTimeStatsOf({1234.5}, 1000);
  EXPECT_EQ(one.mean, 1234.5);
  EXPECT_EQ(one.p50, 1234.5);
  EXPECT_EQ(one.p99, 1234.5);
  EXPECT_EQ(one.ci95_low, 1234.5);
  EXPECT_EQ(one.ci95_high, 1234.5);
  // Closed form for a sample of 4 of 9: s2 = 87500 / 3 (squared deviations 175^2 + 75^2 + 25^2 + 225^2 over
  // n - 1 = 3), half = 1.96 sqrt(s2 / 4) sqrt(5 / 8).
  const IterationTimeStats four = IterationTimeStatsOf(t, 9);
  EXPECT_NEAR(four.ci95_high - four.mean, 1.96 * std::sqrt(87500.0 / 3 / 4) * std::sqrt(5.0 / 8), 1e-9);
  // No times: every statistic 0.
  const IterationTimeStats none = IterationTimeStatsOf({}, 10);
  EXPECT_EQ(none.mean, 0);
  EXPECT_EQ(none.p99, 0);
  EXPECT_EQ(none.ci95_high, 0);
}

// The interval is for the mean of the epoch's N iterations from n drawn without replacement (as the planner draws
// the replayed iterations): it covers that mean about 95% of the time. Without the correction it would cover it
// far more often at n = N / 2 (about 99.5%), so this checks the correction, not only the formula's shape.
TEST(IterationTimeStats, TheIntervalCoversTheEpochMeanNinetyFivePercentOfTheTime) {
  std::mt19937_64 rng(11);
  std::gamma_distribution<double> gamma(20, 25000);  // iteration times around 0.5 s, a little skewed
  const int N = 400, n = 200, trials = 4000;
  std::vector<double> epoch(N);
  for (double& x : epoch) x = gamma(rng);
  double epoch_mean = 0;
  for (double x : epoch) epoch_mean += x / N;
  int covered = 0;
  std::vector<double> pool = epoch;
  for (int k = 0; k < trials; ++k) {
    std::shuffle(pool.begin(), pool.end(), rng);
    const std::vector<double> sample(pool.begin(), pool.begin() + n);
    const IterationTimeStats s = IterationTimeStatsOf(sample, N);
    covered += s.ci95_low <= epoch_mean && epoch_mean <= s.ci95_high;
  }
  const double coverage = static_cast<double>(covered) / trials;
  EXPECT_GT(coverage, 0.93);
  EXPECT_LT(coverage, 0.97);
}

}  // namespace
}  // namespace mmtwin

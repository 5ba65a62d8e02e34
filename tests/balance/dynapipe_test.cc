// SPDX-License-Identifier: Apache-2.0
// DynaPipe's micro-batching (core/balance/dynapipe.h): the split against brute force over every way to cut small
// sorted inputs into k parts, the closed form on uniform samples, and the policy's plan (every sample once, exactly
// micro_batches per rank per iteration, padded, the light-ends order, the data-plan cache keyed on pp).
#include "core/balance/dynapipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "balance/synthetic_sizes.h"
#include "core/balance/data_policy.h"
#include "core/model/model.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

// The best objective over every composition of n sorted items into k consecutive non-empty parts.
double BruteForce(const std::vector<DynapipeItem>& sorted, int k, int pp, const DynapipeCosts& c,
                  int64_t max_tokens) {
  const size_t n = sorted.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<size_t> ends;
  std::function<void(size_t, int)> rec = [&](size_t start, int left) {
    if (left == 1) {
      ends.push_back(n);
      double sum = 0, mx = 0;
      bool ok = true;
      size_t i = 0;
      for (size_t e : ends) {
        if (max_tokens > 0 && static_cast<int64_t>(e - i) * sorted[i].llm_tokens > max_tokens) ok = false;
        const double t = DynapipeCost(sorted, i, e, c);
        sum += t;
        mx = std::max(mx, t);
        i = e;
      }
      if (ok) best = std::min(best, (pp - 1) * mx + sum);
      ends.pop_back();
      return;
    }
    for (size_t e = start + 1; e + static_cast<size_t>(left - 1) <= n; ++e) {
      ends.push_back(e);
      rec(e, left - 1);
      ends.pop_back();
    }
  };
  rec(0, k);
  return best;
}

std::vector<DynapipeItem> RandomSorted(Rng& rng, size_t n) {
  std::vector<DynapipeItem> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back({64 + static_cast<int64_t>(rng.Below(4000)), static_cast<int64_t>(rng.Below(3)) * 1025});
  std::sort(v.begin(), v.end(),
            [](const DynapipeItem& a, const DynapipeItem& b) { return a.llm_tokens > b.llm_tokens; });
  return v;
}

TEST(DynapipeSplitTest, EqualsBruteForceOnSmallInputs) {
  Rng rng(11);
  const DynapipeCosts c{1.0, 1.0 / 4096, 0.3, 200};
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 2 + rng.Below(9);
    const int k = 1 + static_cast<int>(rng.Below(std::min<uint64_t>(n, 5)));
    const int pp = 1 + static_cast<int>(rng.Below(8));
    const int64_t max_tokens = rng.Below(3) == 0 ? 6000 : 0;
    const std::vector<DynapipeItem> items = RandomSorted(rng, n);
    const double want = BruteForce(items, k, pp, c, max_tokens);
    auto got = SplitDynapipe(items, k, pp, c, max_tokens);
    if (!std::isfinite(want)) {
      EXPECT_FALSE(got.ok()) << "n " << n << " k " << k;
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.error().message();
    EXPECT_NEAR(got->objective, want, 1e-9 * want) << "n " << n << " k " << k << " pp " << pp;
    // The reported parts are the split whose objective it reports.
    ASSERT_EQ(got->ends.size(), static_cast<size_t>(k));
    double sum = 0, mx = 0;
    for (double t : got->costs) sum += t, mx = std::max(mx, t);
    EXPECT_NEAR((pp - 1) * mx + sum, got->objective, 1e-9 * want);
    ++checked;
  }
  EXPECT_GT(checked, 200);
}

// Uniform samples (one length, no encoder tokens, no fixed cost): every part costs its count x u, so the best
// split has ceil(n / k) in the largest part: objective (pp - 1) ceil(n / k) u + n u.
TEST(DynapipeSplitTest, UniformSamplesSplitEvenly) {
  const DynapipeCosts c{1.0, 0, 0, 0};
  for (int n : {7, 12, 30})
    for (int k : {1, 3, 5})
      for (int pp : {1, 4}) {
        const std::vector<DynapipeItem> items(static_cast<size_t>(n), DynapipeItem{512, 0});
        auto got = SplitDynapipe(items, k, pp, c, 0);
        ASSERT_TRUE(got.ok());
        const double u = 512;
        EXPECT_DOUBLE_EQ(got->objective, (pp - 1) * std::ceil(static_cast<double>(n) / k) * u + n * u)
            << n << " " << k << " " << pp;
      }
}

// With pp 1 and no fixed cost the split minimises the summed padded cost; a deep pipeline trades some of it for a
// smaller slowest part. 1000, 900, 800, 100 into two: pp 1 cuts after 800 (3000 + 100), pp 16 after 900
// (15 x 2000 + 3600 = 33,600 against 15 x 3000 + 3100 = 48,100).
TEST(DynapipeSplitTest, DeepPipelinesTradePaddingForAnEvenMax) {
  const DynapipeCosts c{1.0, 0, 0, 0};
  const std::vector<DynapipeItem> items = {{1000, 0}, {900, 0}, {800, 0}, {100, 0}};
  auto flat = SplitDynapipe(items, 2, 1, c, 0);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->ends, (std::vector<size_t>{3, 4}));
  EXPECT_DOUBLE_EQ(flat->objective, 3100);
  auto deep = SplitDynapipe(items, 2, 16, c, 0);
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(deep->ends, (std::vector<size_t>{2, 4}));
  EXPECT_DOUBLE_EQ(deep->objective, 33600);
}

TEST(DynapipeSplitTest, ImpossibleInputsAreErrors) {
  const DynapipeCosts c{1.0, 0, 0, 0};
  const std::vector<DynapipeItem> items = {{4000, 0}, {100, 0}};
  EXPECT_FALSE(SplitDynapipe(items, 3, 1, c, 0).ok());
  EXPECT_FALSE(SplitDynapipe(items, 1, 1, c, 1000).ok());  // the longest sample alone is above the cap
  auto e = SplitDynapipe({{100, 0}, {4000, 0}}, 1, 1, c, 0);
  EXPECT_FALSE(e.ok());  // not sorted
}

TEST(DynapipePolicyTest, EverySampleOnceMicroBatchesPerRankAndLightEnds) {
  fixtures::SyntheticSizes f(4000, 2048);
  DataPolicyContext ctx{&f.trace, &f.model, &f.sizes, /*dp=*/4, 8, /*seed=*/3, /*pp=*/4, /*micro_batches=*/6};
  auto plan = RunDataPolicy("dynapipe", {{"batch_size", "4"}}, ctx);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_TRUE(CheckPlan(*plan, f.trace.size()).ok());
  EXPECT_FALSE(plan->packed);
  const size_t per_iteration = 4 * 6 * 4;
  EXPECT_EQ(plan->steps.size(), f.trace.size() / per_iteration * 6);
  EXPECT_EQ(plan->dropped_remainder, static_cast<int64_t>(f.trace.size() % per_iteration));
  EXPECT_GE(plan->metrics.at("dynapipe_padding_ratio"), 1.0);
  // Light ends: in every iteration and rank, the first and the last micro-batch are no heavier than the heaviest.
  const DynapipeCosts c = DynapipeCosts::Of(f.model, 0);
  auto cost = [&](const std::vector<uint32_t>& s) {
    std::vector<DynapipeItem> items;
    for (uint32_t x : s) items.push_back({f.sizes.llm_tokens[x], f.sizes.vit_tokens[x]});
    std::sort(items.begin(), items.end(), [](auto& a, auto& b) { return a.llm_tokens > b.llm_tokens; });
    return DynapipeCost(items, 0, items.size(), c);
  };
  for (size_t it = 0; it < plan->steps.size() / 6; ++it)
    for (int r = 0; r < 4; ++r) {
      std::vector<double> t;
      for (int q = 0; q < 6; ++q) t.push_back(cost(plan->steps[it * 6 + q].ranks[r].samples));
      const double mx = *std::max_element(t.begin(), t.end());
      EXPECT_LT(t.front(), mx + 1e-9);
      EXPECT_LT(t.back(), mx + 1e-9);
      EXPECT_LE(std::min(t.front(), t.back()), *std::min_element(t.begin() + 1, t.end() - 1) + 1e-9);
    }
  // Fewer padded tokens than the random baseline's padded mini-batches of the same size.
  auto random = RunDataPolicy("random", {{"batch_size", "4"}}, ctx);
  ASSERT_TRUE(random.ok());
  double padded = 0, real = 0;
  for (const DataStep& st : random->steps)
    for (const MiniBatch& mb : st.ranks) {
      int64_t longest = 0;
      for (uint32_t x : mb.samples)
        longest = std::max<int64_t>(longest, f.sizes.llm_tokens[x]), real += f.sizes.llm_tokens[x];
      padded += static_cast<double>(longest) * mb.samples.size();
    }
  EXPECT_LT(plan->metrics.at("dynapipe_padding_ratio"), padded / real);
  // Pure: the same inputs and seed give the same plan.
  auto again = RunDataPolicy("dynapipe", {{"batch_size", "4"}}, ctx);
  ASSERT_TRUE(again.ok());
  for (size_t s = 0; s < plan->steps.size(); ++s)
    for (int r = 0; r < 4; ++r) EXPECT_EQ(plan->steps[s].ranks[r].samples, again->steps[s].ranks[r].samples);
  EXPECT_TRUE(DataPolicyUsesPipeline("dynapipe"));
  EXPECT_FALSE(DataPolicyUsesPipeline("isf"));
}

}  // namespace
}  // namespace mmtwin

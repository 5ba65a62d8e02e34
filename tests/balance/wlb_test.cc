// SPDX-License-Identifier: Apache-2.0
// WLB-LLM's packing with outlier delay (core/balance/wlb.h): Algorithm 1's rules on hand-worked draws (longest
// first into the least-loaded micro-batch, the shortest one under the cap, carried samples first in the next
// iteration, outliers held until every micro-batch can take one, released early rather than leaving a micro-batch
// empty, everything released at the epoch's end), the greedy's 4/3 bound against brute force, and the policy's
// plan (every sample once, packed, balanced better than random mini-batches, pure).
#include "core/balance/wlb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "balance/synthetic_sizes.h"
#include "core/balance/data_policy.h"
#include "core/model/model.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

// Items numbered in draw order, sample index = position + offset.
std::vector<WlbItem> Draw(const std::vector<int64_t>& tokens, uint32_t offset = 0) {
  std::vector<WlbItem> v;
  for (size_t i = 0; i < tokens.size(); ++i) v.push_back({static_cast<uint32_t>(i) + offset, tokens[i], 0});
  return v;
}

WlbOptions Options(int n, int64_t cap, std::vector<int64_t> thresholds, DynapipeCosts c) {
  WlbOptions o;
  o.micro_batches = n;
  o.max_tokens = cap;
  o.thresholds = std::move(thresholds);
  o.costs = c;
  return o;
}

constexpr DynapipeCosts kLinear{1.0, 0, 0, 0};       // workload = tokens
constexpr DynapipeCosts kQuadratic{0.0, 1.0, 0, 0};  // workload = tokens^2

TEST(WlbPackerTest, LongestFirstIntoTheLeastLoaded) {
  WlbPacker p(Options(2, 0, {}, kLinear));
  // Samples 0..4 of 3 5 1 4 3 tokens, sorted 5 4 3 3 1 (samples 1 3 0 4 2; equal lengths in draw order): 1 -> 0
  // (load 5), 3 -> 1 (4), 0 -> 1 (7), 4 -> 0 (8), 2 -> 1 (8).
  auto bins = p.Pack(Draw({3, 5, 1, 4, 3}), false);
  ASSERT_TRUE(bins.ok()) << bins.error().message();
  EXPECT_EQ((*bins)[0], (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ((*bins)[1], (std::vector<uint32_t>{3, 0, 2}));
  EXPECT_DOUBLE_EQ(p.LastImbalance(), 1.0);
  EXPECT_EQ(p.Waiting(), 0);
}

TEST(WlbPackerTest, TheCapSendsASampleToTheShortestThenToTheNextIteration) {
  WlbPacker p(Options(2, 10, {}, kQuadratic));
  // Samples 0..5 of 3 6 3 4 3 3 tokens, sorted 6 4 3 3 3 3 (samples 1 3 0 2 4 5): 1 -> 0 (load 36, 6 tokens);
  // 3 -> 1 (16, 4); 0 -> 1 (25, 7); 2 -> 1 (34, 10); 4: the least loaded, 1, is full (13 > 10), the shortest, 0,
  // takes it (45, 9); 5: 1 full, 0 full (12 > 10): it waits.
  auto bins = p.Pack(Draw({3, 6, 3, 4, 3, 3}), false);
  ASSERT_TRUE(bins.ok()) << bins.error().message();
  EXPECT_EQ((*bins)[0], (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ((*bins)[1], (std::vector<uint32_t>{3, 0, 2}));
  EXPECT_EQ(p.Carried(), 1);
  EXPECT_EQ(p.Waiting(), 1);
  EXPECT_DOUBLE_EQ(p.LastImbalance(), 45.0 * 2 / (45 + 34));
  // Next iteration: the carried 3 (sample 5) first, then the new ones.
  auto next = p.Pack(Draw({1, 1}, 10), false);
  ASSERT_TRUE(next.ok()) << next.error().message();
  EXPECT_EQ((*next)[0], (std::vector<uint32_t>{5}));
  EXPECT_EQ((*next)[1], (std::vector<uint32_t>{10, 11}));
  EXPECT_EQ(p.Waiting(), 0);
  int64_t waited = -1;
  for (const auto& [item, w] : p.Placed())
    if (item.sample == 5) waited = w;
  EXPECT_EQ(waited, 1);
}

TEST(WlbPackerTest, OutliersWaitUntilEveryMicroBatchCanTakeOne) {
  WlbPacker p(Options(2, 0, {100}, kLinear));
  auto first = p.Pack(Draw({150, 10, 10, 10}), false);
  ASSERT_TRUE(first.ok()) << first.error().message();
  for (const auto& bin : *first) EXPECT_EQ(std::count(bin.begin(), bin.end(), 0u), 0);  // 150 waits
  EXPECT_EQ(p.Waiting(), 1);
  auto second = p.Pack(Draw({160, 10, 10, 10}, 4), false);
  ASSERT_TRUE(second.ok()) << second.error().message();
  // Both outliers now: 160 -> 0, 150 -> 1, one in each micro-batch.
  EXPECT_EQ((*second)[0].front(), 4u);
  EXPECT_EQ((*second)[1].front(), 0u);
  EXPECT_EQ(p.Waiting(), 0);
  for (const auto& [item, w] : p.Placed()) EXPECT_EQ(w, item.sample == 0 ? 1 : 0) << item.sample;
}

TEST(WlbPackerTest, QueuesByLengthReleaseSeparately) {
  // Queue 0: [100, 200), queue 1: [200, ...). One of each per iteration: neither queue reaches 2 until the second.
  WlbPacker p(Options(2, 0, {100, 200}, kLinear));
  ASSERT_TRUE(p.Pack(Draw({150, 250, 10, 10}), false).ok());
  EXPECT_EQ(p.Waiting(), 2);
  ASSERT_TRUE(p.Pack(Draw({120, 10, 10}, 4), false).ok());  // queue 0 full: 150 and 120 go; 250 stays
  EXPECT_EQ(p.Waiting(), 1);
  auto last = p.Pack(Draw({10, 10}, 8), /*last=*/true);  // the epoch's end releases it alone
  ASSERT_TRUE(last.ok()) << last.error().message();
  EXPECT_EQ(p.Waiting(), 0);
  EXPECT_EQ((*last)[0].front(), 1u);
}

TEST(WlbPackerTest, TooFewSamplesReleaseOutliersEarly) {
  WlbPacker p(Options(3, 0, {100}, kLinear));
  auto bins = p.Pack(Draw({150, 10, 170}), false);  // one regular sample for three micro-batches
  ASSERT_TRUE(bins.ok()) << bins.error().message();
  for (const auto& bin : *bins) EXPECT_EQ(bin.size(), 1u);
  EXPECT_EQ(p.Waiting(), 0);
  WlbPacker q(Options(3, 0, {}, kLinear));
  EXPECT_FALSE(q.Pack(Draw({10, 10}), false).ok());  // nothing to release: an error, not an empty micro-batch
}

// Graham's bound for longest-processing-time-first: max <= (4/3 - 1/(3N)) OPT, OPT by brute force.
TEST(WlbPackerTest, WithinTheLptBoundOfTheBestAssignment) {
  Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n_mb = 2 + static_cast<int>(rng.Below(2));
    const size_t n = 3 + rng.Below(6);
    std::vector<int64_t> tokens;
    for (size_t i = 0; i < n; ++i) tokens.push_back(1 + static_cast<int64_t>(rng.Below(60)));
    WlbPacker p(Options(n_mb, 0, {}, kQuadratic));
    auto bins = p.Pack(Draw(tokens), false);
    ASSERT_TRUE(bins.ok());
    double got = 0;
    for (const auto& bin : *bins) {
      double w = 0;
      for (uint32_t s : bin) w += static_cast<double>(tokens[s] * tokens[s]);
      got = std::max(got, w);
    }
    double best = std::numeric_limits<double>::infinity();
    std::vector<double> load(n_mb, 0);
    std::function<void(size_t)> rec = [&](size_t i) {
      if (i == n) {
        best = std::min(best, *std::max_element(load.begin(), load.end()));
        return;
      }
      for (int b = 0; b < n_mb; ++b) {
        load[b] += static_cast<double>(tokens[i] * tokens[i]);
        rec(i + 1);
        load[b] -= static_cast<double>(tokens[i] * tokens[i]);
      }
    };
    rec(0);
    EXPECT_GE(got, best - 1e-9);
    EXPECT_LE(got, (4.0 / 3 - 1.0 / (3 * n_mb)) * best + 1e-9) << "trial " << trial;
  }
}

TEST(WlbPolicyTest, EverySampleOncePackedAndBetterBalancedThanRandom) {
  fixtures::SyntheticSizes f(4000, 4096);
  DataPolicyContext ctx{&f.trace, &f.model, &f.sizes, /*dp=*/4, 8, /*seed=*/3, /*pp=*/4, /*micro_batches=*/6};
  auto plan = RunDataPolicy("wlb-llm", {{"batch_size", "4"}}, ctx);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_TRUE(CheckPlan(*plan, f.trace.size()).ok());
  EXPECT_TRUE(plan->packed);
  const size_t per_iteration = 4 * 6 * 4;
  EXPECT_EQ(plan->steps.size(), f.trace.size() / per_iteration * 6);
  EXPECT_EQ(plan->dropped_remainder, static_cast<int64_t>(f.trace.size() % per_iteration));
  EXPECT_GT(plan->metrics.at("wlb_delayed_samples"), 0);
  EXPECT_GT(plan->metrics.at("wlb_token_delay_iterations"), 0);
  for (const DataStep& st : plan->steps)
    for (const MiniBatch& mb : st.ranks) EXPECT_FALSE(mb.samples.empty());
  // The paper's imbalance degree (max x N / total, per iteration) on the same workload: well below random
  // mini-batches of the same size.
  WlbPacker w(Options(1, 0, {}, DynapipeCosts::Of(f.model, 0)));
  auto degree = [&](const DataPlan& p) {
    double sum = 0;
    const size_t iterations = p.steps.size() / 6;
    for (size_t it = 0; it < iterations; ++it) {
      double mx = 0, total = 0, count = 0;
      for (int q = 0; q < 6; ++q)
        for (const MiniBatch& mb : p.steps[it * 6 + q].ranks) {
          double load = 0;
          for (uint32_t s : mb.samples) load += w.Workload({s, f.sizes.llm_tokens[s], f.sizes.vit_tokens[s]});
          mx = std::max(mx, load), total += load, ++count;
        }
      sum += mx * count / total;
    }
    return sum / static_cast<double>(iterations);
  };
  auto random = RunDataPolicy("random", {{"batch_size", "4"}}, ctx);
  ASSERT_TRUE(random.ok());
  const double wlb = degree(*plan), rnd = degree(*random);
  EXPECT_NEAR(wlb, plan->metrics.at("wlb_imbalance"), 1e-9);
  EXPECT_LT(wlb, 1.1);
  EXPECT_GT(rnd, 1.5);
  // Without queues nothing waits.
  auto no_delay = RunDataPolicy("wlb-llm", {{"batch_size", "4"}, {"queues", "0"}}, ctx);
  ASSERT_TRUE(no_delay.ok());
  EXPECT_EQ(no_delay->metrics.at("wlb_delayed_samples"), 0);
  EXPECT_EQ(no_delay->metrics.at("wlb_token_delay_iterations"), 0);
  // A cap below the longest sample skips it; CheckPlan still accounts for every sample.
  auto capped = RunDataPolicy("wlb-llm", {{"batch_size", "4"}, {"max_tokens", "3000"}}, ctx);
  ASSERT_TRUE(capped.ok()) << capped.error().message();
  EXPECT_TRUE(CheckPlan(*capped, f.trace.size()).ok());
  for (uint32_t s : capped->skipped) EXPECT_GT(f.sizes.llm_tokens[s], 3000);
  for (const DataStep& st : capped->steps)
    for (const MiniBatch& mb : st.ranks) {
      int64_t tokens = 0;
      for (uint32_t s : mb.samples) tokens += f.sizes.llm_tokens[s];
      EXPECT_LE(tokens, 3000);
    }
  // Pure.
  auto again = RunDataPolicy("wlb-llm", {{"batch_size", "4"}}, ctx);
  ASSERT_TRUE(again.ok());
  for (size_t s = 0; s < plan->steps.size(); ++s)
    for (int r = 0; r < 4; ++r) EXPECT_EQ(plan->steps[s].ranks[r].samples, again->steps[s].ranks[r].samples);
  EXPECT_TRUE(DataPolicyUsesPipeline("wlb-llm"));
}

}  // namespace
}  // namespace mmtwin

#include "core/balance/data_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/balance/metrics.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

// A synthetic VLM-like dataset: tiles 0..13, LLM tokens = text + 256 per tile (InternVL-like), ViT 1025 per tile.
struct Fixture {
  Trace trace;
  SampleSizes sizes;
  ModelSpec model;
  explicit Fixture(size_t n, uint64_t seed = 3) {
    Rng rng(seed);
    model.name = "synthetic";
    for (size_t i = 0; i < n; ++i) {
      Sample s;
      s.id = std::to_string(i);
      s.subset = trace.SubsetIndex(i % 2 ? "a" : "b");
      trace.samples.push_back(s);
      const int64_t tiles =
          rng.Below(10) == 0 ? 0 : 1 + static_cast<int64_t>(rng.Below(rng.Below(2) ? 3 : 13));
      const int64_t text = 20 + static_cast<int64_t>(rng.LogNormal(300, 0.9));
      sizes.vision_units.push_back(tiles);
      sizes.vit_tokens.push_back(tiles * 1025);
      sizes.audio_tokens.push_back(0);
      sizes.llm_tokens.push_back(std::min<int64_t>(4096, text + 256 * tiles));
    }
  }
  DataPolicyContext Ctx(int dp, uint64_t seed = 1) { return {&trace, &model, &sizes, dp, 8, seed}; }
};

std::vector<std::vector<std::vector<uint32_t>>> Flatten(const DataPlan& p) {
  std::vector<std::vector<std::vector<uint32_t>>> o;
  for (auto& s : p.steps) {
    o.emplace_back();
    for (auto& m : s.ranks) o.back().push_back(m.samples);
  }
  return o;
}

class EveryPolicyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryPolicyTest, PlacesEachSampleOnceAndIsDeterministic) {
  Fixture f(5000);
  for (int dp : {1, 3, 16}) {
    auto a = RunDataPolicy(GetParam(), {}, f.Ctx(dp, 7));
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_TRUE(CheckPlan(*a, f.trace.size()).ok()) << CheckPlan(*a, f.trace.size()).error().message();
    EXPECT_GT(a->steps.size(), 0u);
    auto b = RunDataPolicy(GetParam(), {}, f.Ctx(dp, 7));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(Flatten(*a), Flatten(*b)) << "same seed must give the same plan";
    auto c = RunDataPolicy(GetParam(), {}, f.Ctx(dp, 8));
    ASSERT_TRUE(c.ok());
    EXPECT_NE(Flatten(*a), Flatten(*c)) << "another seed should give another plan";
    EXPECT_EQ(a->policy, GetParam());
    EXPECT_FALSE(a->params.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Data, EveryPolicyTest,
                         ::testing::Values("random", "length-group", "device-group", "isf"));

TEST(DataPolicyTest, UnknownPolicyAndParameterListValidNames) {
  Fixture f(10);
  auto r = RunDataPolicy("bogus", {}, f.Ctx(2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.error().message(),
      "unknown data policy 'bogus'; valid values are: random, length-group, device-group, isf, post-balance, "
      "orchestrator");
  r = RunDataPolicy("isf", {{"iteration", "3"}}, f.Ctx(2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("unknown parameter 'iteration'; valid parameters are: q_v, q_t"),
            std::string::npos);
  r = RunDataPolicy("random", {{"batch_size", "zero"}}, f.Ctx(2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "policy 'random': parameter 'batch_size': 'zero' is not an integer");
  r = RunDataPolicy("random", {{"batch_size", "0"}}, f.Ctx(2));
  ASSERT_FALSE(r.ok());
  r = RunDataPolicy("random", {}, f.Ctx(0));
  ASSERT_FALSE(r.ok());
}

TEST(DataPolicyTest, RandomHasFixedBatchSize) {
  Fixture f(1000);
  auto p = RunDataPolicy("random", {{"batch_size", "6"}}, f.Ctx(4));
  ASSERT_TRUE(p.ok());
  for (auto& s : p->steps)
    for (auto& m : s.ranks) EXPECT_EQ(m.samples.size(), 6u);
  EXPECT_EQ(p->dropped_remainder, 1000 % 24);
  EXPECT_FALSE(p->packed);
}

TEST(DataPolicyTest, LengthGroupSortsWithinAStep) {
  Fixture f(2000);
  auto p = RunDataPolicy("length-group", {{"key", "llm"}, {"megabatch_mult", "1"}}, f.Ctx(8));
  ASSERT_TRUE(p.ok());
  for (auto& s : p->steps)
    for (size_t r = 0; r + 1 < s.ranks.size(); ++r) {
      int64_t mn = INT64_MAX, mx = 0;
      for (auto i : s.ranks[r].samples) mn = std::min(mn, f.sizes.llm_tokens[i]);
      for (auto i : s.ranks[r + 1].samples) mx = std::max(mx, f.sizes.llm_tokens[i]);
      EXPECT_GE(mn, mx);
    }
}

TEST(DataPolicyTest, LengthGroupEvenSplitBalancesRankTotals) {
  // LLaVA's split_to_even_chunks: each chunk gets b samples; totals differ by at most the largest sample.
  Fixture f(4000);
  auto p =
      RunDataPolicy("length-group", {{"key", "llm"}, {"split", "even"}, {"megabatch_mult", "1"}}, f.Ctx(8));
  ASSERT_TRUE(p.ok());
  for (auto& s : p->steps) {
    int64_t lo = INT64_MAX, hi = 0, big = 0;
    for (auto& m : s.ranks) {
      EXPECT_EQ(m.samples.size(), 4u);
      int64_t t = 0;
      for (auto i : m.samples) {
        t += f.sizes.llm_tokens[i];
        big = std::max(big, f.sizes.llm_tokens[i]);
      }
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    EXPECT_LE(hi - lo, big);
  }
}

TEST(DataPolicyTest, DeviceGroupTotalsDifferByAtMostTheLargestSample) {
  // Snake dealing of a descending list: any two ranks' totals differ by at most the largest item.
  Fixture f(4000);
  auto p = RunDataPolicy("device-group", {{"batch_size", "5"}}, f.Ctx(16));
  ASSERT_TRUE(p.ok());
  for (auto& s : p->steps) {
    int64_t lo = INT64_MAX, hi = 0, big = 0;
    for (auto& m : s.ranks) {
      int64_t t = 0;
      for (auto i : m.samples) {
        t += f.sizes.llm_tokens[i];
        big = std::max(big, f.sizes.llm_tokens[i]);
      }
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    EXPECT_LE(hi - lo, big);
  }
}

TEST(IsfTest, GroupsRespectBoundsAndOversizeSamplesAreSkipped) {
  Fixture f(20000);
  f.sizes.vision_units[5] = 100;  // alone above Q_v
  auto p = RunDataPolicy("isf", {{"q_v", "9"}, {"q_t", "4096"}}, f.Ctx(8));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->packed);
  std::vector<uint32_t> oversize;
  for (uint32_t i = 0; i < f.sizes.size(); ++i)
    if (f.sizes.vision_units[i] > 9 || f.sizes.llm_tokens[i] > 4096) oversize.push_back(i);
  EXPECT_EQ(p->skipped, oversize);
  EXPECT_TRUE(std::binary_search(p->skipped.begin(), p->skipped.end(), 5u));
  for (auto& s : p->steps)
    for (auto& m : s.ranks) {
      int64_t v = 0, t = 0;
      for (auto i : m.samples) {
        v += f.sizes.vision_units[i];
        t += f.sizes.llm_tokens[i];
      }
      EXPECT_LE(v, 9);
      EXPECT_LE(t, 4096);
      EXPECT_FALSE(m.samples.empty());
    }
  EXPECT_EQ(p->metrics.at("isf_q_v"), 9);
}

TEST(IsfTest, MoreIterationsKeepMoreFullGroupsAndBalanceBetterThanRandom) {
  Fixture f(30000);
  auto one = RunDataPolicy("isf", {{"iterations", "1"}}, f.Ctx(16));
  auto ten = RunDataPolicy("isf", {{"iterations", "10"}}, f.Ctx(16));
  auto rnd = RunDataPolicy("random", {}, f.Ctx(16));
  ASSERT_TRUE(one.ok() && ten.ok() && rnd.ok());
  EXPECT_LT(ten->metrics.at("isf_leftover_samples"), one->metrics.at("isf_leftover_samples"));
  const DataMetrics m10 = ComputeDataMetrics(*ten, f.sizes), m1 = ComputeDataMetrics(*one, f.sizes),
                    mr = ComputeDataMetrics(*rnd, f.sizes);
  EXPECT_EQ(m10.pad_ratio, 0);
  EXPECT_LT(m10.dist_ratio_vit, m1.dist_ratio_vit);
  EXPECT_LT(m10.dist_ratio_vit, mr.dist_ratio_vit / 3);
  EXPECT_LT(m10.dist_ratio_llm, mr.dist_ratio_llm);
  EXPECT_GT(mr.pad_ratio, 0.2);
}

TEST(IsfTest, SearchPicksThresholdsNoWorseThanTheStartOnItsOwnScore) {
  Fixture f(20000);
  auto s = RunDataPolicy("isf", {{"search", "true"}, {"iterations", "3"}}, f.Ctx(8));
  ASSERT_TRUE(s.ok()) << s.error().message();
  const IsfThresholds start = AutoIsfThresholds(f.sizes);
  EXPECT_LE(std::abs(s->metrics.at("isf_q_v") - start.q_v), 1);
  EXPECT_TRUE(CheckPlan(*s, f.trace.size()).ok());
}

TEST(IsfTest, AutoThresholdsFollowThePublicFormula) {
  // mean_t = 1400, mean_v = 3: ratio 466 -> ave = ((466+1)/16)*16 = 464 -> Q_v = 4096/464 = 8.
  SampleSizes s;
  s.llm_tokens = {4096, 100, 4};
  s.vision_units = {3, 3, 3};
  s.vit_tokens = {0, 0, 0};
  s.audio_tokens = {0, 0, 0};
  const IsfThresholds q = AutoIsfThresholds(s);
  EXPECT_EQ(q.q_t, 4096);
  EXPECT_EQ(q.q_v, 4096 / ((((4200 / 3) / 3 + 1) / 16) * 16));
}

TEST(MetricsTest, HandComputedPadAndDist) {
  // Two ranks, one step. Rank 0: LLM lengths {100, 50} (padded to 2*100 = 200), ViT {1025, 0};
  // rank 1: {80} -> 80, ViT {2050}.
  SampleSizes s;
  s.llm_tokens = {100, 50, 80};
  s.vit_tokens = {1025, 0, 2050};
  s.vision_units = {1, 0, 2};
  s.audio_tokens = {0, 0, 0};
  DataPlan p;
  p.dp = 2;
  p.steps.resize(1);
  p.steps[0].ranks = {MiniBatch{{0, 1}}, MiniBatch{{2}}};
  DataMetrics m = ComputeDataMetrics(p, s);
  EXPECT_DOUBLE_EQ(m.pad_ratio, (50.0 / 200 + 0.0) / 2);
  EXPECT_DOUBLE_EQ(m.dist_ratio_llm, (200.0 - 80) / (200 * 2));
  EXPECT_DOUBLE_EQ(m.dist_ratio_vit, (2050.0 - 1025) / (2050 * 2));
  EXPECT_DOUBLE_EQ(m.mean_batch_size, 1.5);
  EXPECT_EQ(m.max_llm_tokens, 200);
  p.packed = true;
  m = ComputeDataMetrics(p, s);
  EXPECT_DOUBLE_EQ(m.pad_ratio, 0);
  EXPECT_DOUBLE_EQ(m.dist_ratio_llm, (150.0 - 80) / (150 * 2));
}

TEST(CheckPlanTest, DetectsDuplicatesAndLosses) {
  DataPlan p;
  p.dp = 1;
  p.steps.resize(1);
  p.steps[0].ranks = {MiniBatch{{0, 1, 1}}};
  EXPECT_FALSE(CheckPlan(p, 3).ok());
  p.steps[0].ranks = {MiniBatch{{0, 1}}};
  EXPECT_FALSE(CheckPlan(p, 3).ok());
  p.dropped_remainder = 1;
  EXPECT_TRUE(CheckPlan(p, 3).ok());
}

}  // namespace
}  // namespace mmtwin

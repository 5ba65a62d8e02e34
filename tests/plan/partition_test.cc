// SPDX-License-Identifier: Apache-2.0
#include "core/plan/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "core/cluster/cluster.h"
#include "core/cost/cost_model.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

LayerProfile MakeProfile(const std::vector<double>& fwd, const std::vector<int64_t>& boundary = {},
                         const std::vector<int64_t>& params = {}) {
  LayerProfile p;
  const size_t n = fwd.size();
  p.fwd_us = fwd;
  for (double f : fwd) p.bwd_us.push_back(2 * f);
  p.params = params.empty() ? std::vector<int64_t>(n, 100) : params;
  p.boundary_bytes = boundary.empty() ? std::vector<int64_t>(n, 1000) : boundary;
  p.act_bytes.assign(n, 10);
  p.act_bytes_recompute.assign(n, 1);
  return p;
}

// A VLM-like profile: a ViT (cheap layers, wide boundary), a projector (narrow), an LLM (heavier layers).
LayerProfile VlmProfile(int vit, int llm) {
  std::vector<double> fwd;
  std::vector<int64_t> boundary, params;
  fwd.push_back(0.5), boundary.push_back(9000), params.push_back(10);  // vit embed
  for (int i = 0; i < vit; ++i)
    fwd.push_back(1.0 + 0.01 * i), boundary.push_back(9000), params.push_back(100);
  fwd.push_back(0.3), boundary.push_back(3000), params.push_back(50);   // projector (pixel shuffle before it)
  fwd.push_back(0.1), boundary.push_back(4000), params.push_back(300);  // llm embed
  for (int i = 0; i < llm; ++i) fwd.push_back(2.5), boundary.push_back(4000), params.push_back(400);
  fwd.push_back(3.0), boundary.push_back(0), params.push_back(300);  // head
  return MakeProfile(fwd, boundary, params);
}

// Every partition of n layers into c non-empty chunks.
void ForEachPartition(int n, int c, const std::function<void(const Partition&)>& fn) {
  Partition p;
  p.bounds.assign(c + 1, 0);
  p.bounds[c] = n;
  std::function<void(int, int)> rec = [&](int k, int lo) {
    if (k == c) {
      fn(p);
      return;
    }
    for (int b = lo; b <= n - (c - k); ++b) {
      p.bounds[k] = b;
      rec(k + 1, b + 1);
    }
  };
  if (c == 1) {
    fn(p);
    return;
  }
  rec(1, 1);
}

double SumSquares(const std::vector<double>& w, const Partition& p) {
  double s = 0;
  for (int c = 0; c < p.chunks(); ++c) {
    double x = 0;
    for (int l = p.bounds[c]; l < p.bounds[c + 1]; ++l) x += w[l];
    s += x * x;
  }
  return s;
}

TEST(UniformPartitionTest, EqualCountsRemainderSpreadEvenly) {
  for (int n = 1; n <= 40; ++n)
    for (int c = 1; c <= n; ++c) {
      const Partition p = UniformPartition(n, c);
      ASSERT_TRUE(ValidatePartition(p, n, c).ok()) << n << " " << c;
      int lo = n, hi = 0;
      for (int k = 0; k < c; ++k) lo = std::min(lo, p.LayersIn(k)), hi = std::max(hi, p.LayersIn(k));
      EXPECT_LE(hi - lo, 1);
    }
  // 10 layers in 4 chunks: floor(c * 10 / 4) = 0, 2, 5, 7, 10 -> 2, 3, 2, 3.
  EXPECT_EQ(UniformPartition(10, 4).bounds, (std::vector<int>{0, 2, 5, 7, 10}));
}

TEST(MinMaxPartitionTest, OptimalAgainstBruteForce) {
  Rng rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng.Below(10));
    const int c = 1 + static_cast<int>(rng.Below(std::min(n, 5)));
    std::vector<double> w(n);
    for (double& x : w) x = static_cast<double>(rng.Below(20));  // integers: exact sums, many ties
    const Partition got = MinMaxPartition(w, c);
    ASSERT_TRUE(ValidatePartition(got, n, c).ok());
    double best_max = std::numeric_limits<double>::infinity();
    ForEachPartition(n, c, [&](const Partition& p) { best_max = std::min(best_max, MaxChunkWeight(w, p)); });
    EXPECT_EQ(MaxChunkWeight(w, got), best_max) << "trial " << trial;
    // Tie-break: smallest sum of squares among the optimal ones.
    double best_sq = std::numeric_limits<double>::infinity();
    ForEachPartition(n, c, [&](const Partition& p) {
      if (MaxChunkWeight(w, p) == best_max) best_sq = std::min(best_sq, SumSquares(w, p));
    });
    EXPECT_EQ(SumSquares(w, got), best_sq) << "trial " << trial;
  }
}

TEST(MinMaxPartitionTest, RealValuedWeightsMatchBruteForce) {
  Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng.Below(9));
    const int c = 1 + static_cast<int>(rng.Below(std::min(n, 4)));
    std::vector<double> w(n);
    for (double& x : w) x = rng.Uniform(0.1, 5.0);
    double best = std::numeric_limits<double>::infinity();
    ForEachPartition(n, c, [&](const Partition& p) { best = std::min(best, MaxChunkWeight(w, p)); });
    EXPECT_NEAR(MaxChunkWeight(w, MinMaxPartition(w, c)), best, 1e-9 * best);
  }
}

TEST(PartitionPolicyTest, ProfileAndParamsAreExactMinMax) {
  const LayerProfile prof = VlmProfile(12, 10);
  PartitionContext ctx{prof, 4, 4, {}, {}};
  Result<Partition> profile = RunPartitionPolicy("profile", {}, ctx);
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->bounds, MinMaxPartition(prof.fwd_us, 4).bounds);
  Result<Partition> params = RunPartitionPolicy("params", {}, ctx);
  ASSERT_TRUE(params.ok());
  std::vector<double> pw(prof.params.begin(), prof.params.end());
  EXPECT_EQ(params->bounds, MinMaxPartition(pw, 4).bounds);
  // Profile balances time better than params or uniform on a heterogeneous model.
  PartitionReport rp, ru, rpa;
  ASSERT_TRUE(RunPartitionPolicy("profile", {}, ctx, &rp).ok());
  ASSERT_TRUE(RunPartitionPolicy("uniform", {}, ctx, &ru).ok());
  ASSERT_TRUE(RunPartitionPolicy("params", {}, ctx, &rpa).ok());
  EXPECT_LE(rp.max_fwd_us, ru.max_fwd_us);
  EXPECT_LE(rp.max_fwd_us, rpa.max_fwd_us);
  EXPECT_LE(rpa.var_params, rp.var_params + 1e-9);
  EXPECT_EQ(rp.policy, "profile");
}

// A model's flattened layers: a vision encoder (embedding + `vit` blocks), a projector, then the LLM (embedding +
// `llm` blocks + head), each layer with time 1.
LayerProfile LayeredProfile(int vit, int llm) {
  std::vector<Layer> layers;
  layers.push_back({0, LayerKind::kEmbedding, 0, 10, "vision.embed"});
  for (int i = 0; i < vit; ++i) layers.push_back({0, LayerKind::kTransformer, i, 10, "vision.block"});
  layers.push_back({1, LayerKind::kProjector, 0, 10, "projector"});
  layers.push_back({2, LayerKind::kEmbedding, 0, 10, "llm.embed"});
  for (int i = 0; i < llm; ++i) layers.push_back({2, LayerKind::kTransformer, i, 10, "llm.block"});
  layers.push_back({2, LayerKind::kHead, 0, 10, "llm.head"});
  LayerProfile p = MakeProfile(std::vector<double>(layers.size(), 1.0));
  p.layers = layers;
  return p;
}

TEST(PartitionPolicyTest, MegatronSplitsTheLlmBlocksEvenly) {
  // 3 vision layers + projector + LLM embedding = 5 layers before the LLM's 8 blocks; the head is layer 13.
  const LayerProfile prof = LayeredProfile(2, 8);
  PartitionContext ctx{prof, 4, 4, {}, {}};
  Result<Partition> p = RunPartitionPolicy("megatron", {}, ctx);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->bounds, (std::vector<int>{0, 7, 9, 11, 14}));  // 2 blocks each; the encoder on chunk 0
  // Megatron's first / last stage counts: 1 + 3 + 3 + 1.
  p = RunPartitionPolicy("megatron", {{"first_blocks", "1"}, {"last_blocks", "1"}}, ctx);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->bounds, (std::vector<int>{0, 6, 9, 12, 14}));
  // Only the first set: 2 + 2 + 2 + 2 (the others take the even share of the rest).
  p = RunPartitionPolicy("megatron", {{"first_blocks", "2"}}, ctx);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->bounds, (std::vector<int>{0, 7, 9, 11, 14}));
  // The uniform split of the same 14 layers puts 3 or 4 layers anywhere, blocks included.
  Result<Partition> u = RunPartitionPolicy("uniform", {}, ctx);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->bounds, (std::vector<int>{0, 3, 7, 10, 14}));
  // One chunk holds everything.
  ctx.chunks = ctx.pp = 1;
  p = RunPartitionPolicy("megatron", {}, ctx);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bounds, (std::vector<int>{0, 14}));
}

TEST(PartitionPolicyTest, MegatronRefusesWhatMegatronRefuses) {
  const LayerProfile prof = LayeredProfile(2, 8);
  PartitionContext ctx{prof, 3, 3, {}, {}};
  Result<Partition> p = RunPartitionPolicy("megatron", {}, ctx);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("8 LLM blocks do not divide evenly into 3 chunks"), std::string::npos)
      << p.error().message();
  p = RunPartitionPolicy("megatron", {{"first_blocks", "2"}}, ctx);  // 2 + 3 + 3
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->bounds, (std::vector<int>{0, 7, 10, 14}));
  ctx.chunks = ctx.pp = 4;
  EXPECT_FALSE(
      RunPartitionPolicy("megatron", {{"first_blocks", "5"}, {"last_blocks", "3"}}, ctx).ok());  // 0 left
  LayerProfile bare = prof;
  bare.layers.clear();
  ctx.profile = bare;
  p = RunPartitionPolicy("megatron", {}, ctx);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("no layer kinds"), std::string::npos);
}

TEST(PartitionPolicyTest, MegatronCountsEmbeddingAndLossAsBlocks) {
  // Llama 3 405B's split (arXiv 2407.21783 sec. 3.3.2: one block less on the first and the last stage, so the
  // first model chunk holds only the embedding and the last only the output and loss): 6 blocks + embedding +
  // loss = 8 = one per chunk over pp 2 x vpp 4. Layers: 0..3 vision + projector + LLM embedding, 4..9 blocks,
  // 10 the head.
  const LayerProfile prof = LayeredProfile(2, 6);
  PartitionContext ctx{prof, 8, 2, {}, {}};
  const std::map<std::string, std::string> both{{"account_for_embedding", "true"},
                                                {"account_for_loss", "true"}};
  Result<Partition> p = RunPartitionPolicy("megatron", both, ctx);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->bounds, (std::vector<int>{0, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(p->LayersIn(0), 5);  // the encoder and the LLM embedding, no block
  EXPECT_EQ(p->LayersIn(7), 1);  // the head alone
  // Only the embedding counted: 6 + 1 = 7 blocks do not divide into 8 chunks; into 7 they do (pp 7, vpp 1):
  // the first chunk holds no block, every other chunk one, the head rides on the last.
  EXPECT_FALSE(RunPartitionPolicy("megatron", {{"account_for_embedding", "true"}}, ctx).ok());
  ctx.chunks = ctx.pp = 7;
  p = RunPartitionPolicy("megatron", {{"account_for_embedding", "true"}}, ctx);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->bounds, (std::vector<int>{0, 5, 6, 7, 8, 9, 10, 12}));
  // Two blocks per chunk over 4 chunks (6 + 2 = 8): 1 + 2 + 2 + 1 blocks.
  ctx.chunks = ctx.pp = 4;
  p = RunPartitionPolicy("megatron", both, ctx);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->bounds, (std::vector<int>{0, 6, 8, 10, 12}));
  // Megatron refuses the combination with first / last counts; so does the policy, by name.
  p = RunPartitionPolicy("megatron", {{"account_for_loss", "true"}, {"first_blocks", "1"}}, ctx);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("cannot be combined"), std::string::npos) << p.error().message();
  // A model whose blocks start at layer 0 has nothing but blocks for the first chunk: an empty chunk is refused.
  LayerProfile bare = MakeProfile(std::vector<double>(7, 1.0));
  for (int i = 0; i < 6; ++i) bare.layers.push_back({0, LayerKind::kTransformer, i, 10, "block"});
  bare.layers.push_back({0, LayerKind::kHead, 0, 10, "head"});
  ctx.profile = bare;
  ctx.chunks = ctx.pp = 7;
  p = RunPartitionPolicy("megatron", {{"account_for_embedding", "true"}}, ctx);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("chunk 0 would hold no LLM block"), std::string::npos)
      << p.error().message();
}

TEST(PartitionPolicyTest, ErrorsNameTheProblem) {
  const LayerProfile prof = MakeProfile({1, 2, 3, 4});
  PartitionContext ctx{prof, 2, 2, {}, {}};
  Result<Partition> r = RunPartitionPolicy("greedy", {}, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "unknown partition policy 'greedy'; valid values are: uniform, megatron, params, profile, bmp");
  EXPECT_FALSE(RunPartitionPolicy("bmp", {{"radius", "x"}}, ctx).ok());
  EXPECT_FALSE(RunPartitionPolicy("bmp", {{"bogus", "1"}}, ctx).ok());
  ctx.chunks = 5;
  ctx.pp = 5;
  EXPECT_FALSE(RunPartitionPolicy("uniform", {}, ctx).ok());  // more chunks than layers
  ctx.chunks = 3;
  ctx.pp = 2;
  EXPECT_FALSE(RunPartitionPolicy("uniform", {}, ctx).ok());  // chunks not a multiple of pp
  ctx.chunks = 2;
  ctx.profile.act_bytes.pop_back();
  EXPECT_FALSE(RunPartitionPolicy("uniform", {}, ctx).ok());  // ragged profile
}

TEST(PartitionMetricsTest, HandChecked) {
  const LayerProfile prof = MakeProfile({1, 2, 3, 4}, {10, 20, 30, 0}, {1, 1, 1, 5});
  Partition p{{0, 2, 3, 4}};  // chunks: {1,2}=3, {3}=3, {4}=4
  PartitionReport r;
  PartitionMetrics(prof, p, r);
  EXPECT_DOUBLE_EQ(r.mean_fwd_us, 10.0 / 3);
  EXPECT_DOUBLE_EQ(r.max_fwd_us, 4);
  const double m = 10.0 / 3;
  EXPECT_NEAR(r.var_fwd_us2, ((3 - m) * (3 - m) * 2 + (4 - m) * (4 - m)) / 3, 1e-12);
  EXPECT_EQ(r.sum_comm_bytes, 20 + 30);  // boundaries of layers 1 and 2
  // params per chunk 2, 1, 5 -> mean 8/3.
  const double mp = 8.0 / 3;
  EXPECT_NEAR(r.var_params, ((2 - mp) * (2 - mp) + (1 - mp) * (1 - mp) + (5 - mp) * (5 - mp)) / 3, 1e-12);
  // layer counts 2, 1, 1 -> mean 4/3.
  EXPECT_NEAR(r.var_layers, ((2 - 4.0 / 3) * (2 - 4.0 / 3) + 2 * (1 - 4.0 / 3) * (1 - 4.0 / 3)) / 3, 1e-12);
  // Score: var / mean^2 + w * sum / ((C - 1) * max boundary over layers 0..2 = 30).
  EXPECT_NEAR(BmpScore(prof, p, 0.5), r.var_fwd_us2 / (m * m) + 0.5 * 50.0 / (2 * 30.0), 1e-12);
}

TEST(BmpTest, GreedyAnchorBalancesEqualLayers) {
  EXPECT_EQ(GreedyAnchorPartition(std::vector<double>(12, 1.0), 4).bounds,
            (std::vector<int>{0, 3, 6, 9, 12}));
  // One heavy layer: the anchor still leaves a layer for every chunk.
  const Partition p = GreedyAnchorPartition({100, 1, 1, 1}, 4);
  EXPECT_EQ(p.bounds, (std::vector<int>{0, 1, 2, 3, 4}));
}

// Every candidate around the anchor (brute force), for checking the lazy top-K.
std::vector<Partition> AllCandidates(const Partition& anchor, int radius, int layers) {
  std::vector<Partition> out;
  const int ncuts = anchor.chunks() - 1;
  std::vector<int> d(ncuts, -radius);
  while (true) {
    Partition p = anchor;
    bool ok = true;
    for (int k = 0; k < ncuts; ++k) {
      p.bounds[k + 1] = anchor.bounds[k + 1] + d[k];
      if (p.bounds[k + 1] < 1 || p.bounds[k + 1] > layers - 1 || p.bounds[k + 1] <= p.bounds[k]) ok = false;
    }
    if (ok) out.push_back(p);
    int k = ncuts - 1;
    while (k >= 0 && d[k] == radius) d[k--] = -radius;
    if (k < 0) break;
    ++d[k];
  }
  return out;
}

TEST(BmpTest, CandidateCountAndRankOnlyPicksBestScore) {
  const LayerProfile prof = VlmProfile(20, 20);
  PartitionContext ctx{prof, 4, 4, {}, {}};
  PartitionReport rep;
  Result<Partition> r = RunPartitionPolicy("bmp", {{"radius", "1"}}, ctx, &rep);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(rep.candidates, 27);  // 3^3, OmniBal's example (all valid on this model)
  EXPECT_TRUE(rep.evaluated.empty());
  double best = std::numeric_limits<double>::infinity();
  for (const Partition& p : AllCandidates(rep.anchor, 1, prof.size()))
    best = std::min(best, BmpScore(prof, p, 0.1));
  EXPECT_DOUBLE_EQ(BmpScore(prof, *r, 0.1), best);
  EXPECT_DOUBLE_EQ(rep.score, best);
}

TEST(BmpTest, NeverWorseThanAnchorAndEvaluatesTopK) {
  const LayerProfile prof = VlmProfile(25, 30);
  Rng rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    // A synthetic evaluator: max chunk time (pipeline bottleneck) + a per-partition pseudo-random term, so
    // the evaluator disagrees with the score ranking.
    const uint64_t salt = rng.Next();
    int calls = 0;
    PartitionContext ctx{prof, 4, 4, {}, [&](const Partition& p) -> Result<double> {
                           ++calls;
                           uint64_t h = salt;
                           for (int b : p.bounds) h = (h ^ static_cast<uint64_t>(b)) * 0x100000001b3ull;
                           return MaxChunkWeight(prof.fwd_us, p) + static_cast<double>(h % 1000) / 50.0;
                         }};
    PartitionReport rep;
    Result<Partition> r = RunPartitionPolicy("bmp", {{"radius", "2"}, {"top_k", "5"}}, ctx, &rep);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(calls, static_cast<int>(rep.evaluated.size()));
    EXPECT_GE(calls, 5);
    EXPECT_LE(calls, 6);  // top_k plus the anchor
    EXPECT_EQ(rep.evaluated.front().bounds, rep.anchor.bounds);
    EXPECT_LE(rep.chosen_time_us, rep.anchor_time_us);
    EXPECT_DOUBLE_EQ(rep.chosen_time_us,
                     *std::min_element(rep.evaluated_time_us.begin(), rep.evaluated_time_us.end()));
    // The chosen partition is the evaluated one with that time.
    Result<double> t = ctx.evaluate(*r);
    EXPECT_DOUBLE_EQ(*t, rep.chosen_time_us);
    // Evaluated (besides the anchor) = the 5 best-scored candidates.
    std::vector<double> scores;
    for (const Partition& p : AllCandidates(rep.anchor, 2, prof.size()))
      scores.push_back(BmpScore(prof, p, 0.1));
    std::sort(scores.begin(), scores.end());
    double worst_eval = 0;
    for (size_t i = 1; i < rep.evaluated.size(); ++i)
      worst_eval = std::max(worst_eval, BmpScore(prof, rep.evaluated[i], 0.1));
    EXPECT_LE(worst_eval, scores[4] + 1e-15);
  }
}

// Pruning by a lower bound: the same choice and chosen time as timing every candidate, fewer evaluator calls,
// every pruned candidate's bound >= the fastest time so far (so >= the chosen one); bounds of 0 prune nothing;
// prune=false ignores the bound; a bound's error propagates.
TEST(BmpTest, LowerBoundPrunesWithoutChangingTheChoice) {
  const LayerProfile prof = VlmProfile(25, 30);
  Rng rng(5);
  int pruned = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const uint64_t salt = rng.Next();
    const double slack = trial % 4 == 0 ? 0.0 : rng.Uniform(0.0, 0.05);  // how far below the time a bound is
    auto time = [&](const Partition& p) {
      uint64_t h = salt;
      for (int b : p.bounds) h = (h ^ static_cast<uint64_t>(b)) * 0x100000001b3ull;
      return MaxChunkWeight(prof.fwd_us, p) + static_cast<double>(h % 1000) / 50.0;
    };
    int calls = 0, bound_calls = 0;
    PartitionContext ctx{prof, 4, 4, {}, [&](const Partition& p) -> Result<double> {
                           ++calls;
                           return time(p);
                         }};
    PartitionReport all;
    const std::map<std::string, std::string> top = {{"radius", "2"}, {"top_k", "8"}};
    Result<Partition> want = RunPartitionPolicy("bmp", top, ctx, &all);
    ASSERT_TRUE(want.ok());
    const int all_calls = calls;
    calls = 0;
    ctx.lower_bound = [&](const Partition& p) -> Result<double> {
      ++bound_calls;
      return trial % 8 == 1 ? 0.0 : time(p) * (1 - slack);
    };
    PartitionReport rep;
    Result<Partition> got = RunPartitionPolicy("bmp", top, ctx, &rep);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->bounds, want->bounds) << "trial " << trial;
    EXPECT_EQ(rep.chosen_time_us, all.chosen_time_us);
    ASSERT_EQ(rep.evaluated.size(), all.evaluated.size());
    ASSERT_EQ(rep.evaluated_pruned.size(), rep.evaluated.size());
    EXPECT_EQ(calls + rep.pruned, all_calls);
    EXPECT_EQ(bound_calls, all_calls - 1);  // every candidate after the first
    if (trial % 8 == 1) {
      EXPECT_EQ(rep.pruned, 0);
    }
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < rep.evaluated.size(); ++i) {
      EXPECT_EQ(rep.evaluated[i].bounds, all.evaluated[i].bounds);
      if (rep.evaluated_pruned[i]) {
        EXPECT_GE(rep.evaluated_time_us[i], best) << "trial " << trial << " candidate " << i;
        EXPECT_GE(rep.evaluated_time_us[i], rep.chosen_time_us);
      } else {
        EXPECT_EQ(rep.evaluated_time_us[i], all.evaluated_time_us[i]);
        best = std::min(best, rep.evaluated_time_us[i]);
      }
    }
    pruned += static_cast<int>(rep.pruned);
    // prune=false: the bound is not called.
    bound_calls = 0;
    std::map<std::string, std::string> off = top;
    off["prune"] = "false";
    ASSERT_TRUE(RunPartitionPolicy("bmp", off, ctx, &rep).ok());
    EXPECT_EQ(bound_calls, 0);
    EXPECT_EQ(rep.pruned, 0);
  }
  EXPECT_GT(pruned, 40);
  const LayerProfile small = VlmProfile(8, 8);
  PartitionContext ctx{
      small, 2, 2, {}, [&](const Partition& p) -> Result<double> { return MaxChunkWeight(small.fwd_us, p); }};
  ctx.lower_bound = [](const Partition&) -> Result<double> { return Error("no bound"); };
  PartitionReport rep;
  Result<Partition> r = RunPartitionPolicy("bmp", {}, ctx, &rep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("no bound"), std::string::npos) << r.error().message();
}

TEST(BmpTest, MemoryCallbackDropsCandidates) {
  const LayerProfile prof = VlmProfile(20, 20);
  // "Fits" only when the first chunk is at least 2 layers shorter than the anchor's.
  const int limit = GreedyAnchorPartition(prof.fwd_us, 4).bounds[1] - 2;
  auto fits = [limit](const Partition& p) { return p.bounds[1] <= limit; };
  PartitionContext ctx{prof, 4, 4, fits,
                       [&](const Partition& p) -> Result<double> { return MaxChunkWeight(prof.fwd_us, p); }};
  PartitionReport rep;
  Result<Partition> r = RunPartitionPolicy("bmp", {{"radius", "3"}}, ctx, &rep);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(rep.memory_feasible);
  EXPECT_LE(r->bounds[1], limit);
  EXPECT_EQ(rep.anchor_time_us, -1);  // the anchor does not fit: not evaluated
  for (const Partition& p : rep.evaluated) EXPECT_LE(p.bounds[1], limit);
  EXPECT_GT(rep.memory_rejected, 0);
  // Nothing fits: the anchor comes back, flagged.
  ctx.fits_with_full_recompute = [](const Partition&) { return false; };
  Result<Partition> none = RunPartitionPolicy("bmp", {}, ctx, &rep);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(rep.memory_feasible);
  EXPECT_EQ(none->bounds, rep.anchor.bounds);
  EXPECT_TRUE(rep.evaluated.empty());
}

TEST(BmpTest, EvaluatorErrorPropagates) {
  const LayerProfile prof = VlmProfile(8, 8);
  PartitionContext ctx{prof, 2, 2, {}, [](const Partition&) -> Result<double> { return Error("boom"); }};
  Result<Partition> r = RunPartitionPolicy("bmp", {}, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("boom"), std::string::npos);
  EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidInput);
}

// A cancellation while BMP times its candidates (the planner's evaluate callback polls the cancel flag) comes back
// as the cancellation itself, on the first candidate or a later one, never as an error naming the candidate.
TEST(BmpTest, CancellationInsideTheSearchStaysACancellation) {
  const LayerProfile prof = VlmProfile(8, 8);
  for (int cancel_at : {0, 1, 3}) {
    int calls = 0;
    PartitionContext ctx{prof, 2, 2, {}, [&](const Partition&) -> Result<double> {
                           if (calls++ == cancel_at) return Error::Cancelled();
                           return 100.0 - calls;
                         }};
    Result<Partition> r = RunPartitionPolicy("bmp", {{"prune", "false"}}, ctx);
    ASSERT_FALSE(r.ok()) << cancel_at;
    EXPECT_TRUE(r.error().cancelled()) << r.error().message();
    EXPECT_EQ(r.error().message(), "cancelled");
    EXPECT_EQ(calls, cancel_at + 1);
  }
}

TEST(BmpTest, CommWeightPrefersCheapCuts) {
  // Equal layer times; a narrow boundary after layer 5 (like the projector after pixel shuffle).
  std::vector<int64_t> boundary(12, 1000);
  boundary[5] = 10;
  boundary[11] = 0;
  const LayerProfile prof = MakeProfile(std::vector<double>(12, 1.0), boundary);
  PartitionContext ctx{prof, 2, 2, {}, {}};
  Result<Partition> balanced = RunPartitionPolicy("bmp", {{"comm_weight", "0"}}, ctx);
  ASSERT_TRUE(balanced.ok());
  EXPECT_EQ(balanced->bounds[1], 6);  // exact balance
  Result<Partition> heavy_comm = RunPartitionPolicy("bmp", {{"comm_weight", "10"}}, ctx);
  ASSERT_TRUE(heavy_comm.ok());
  EXPECT_EQ(heavy_comm->bounds[1], 6);  // the cut after layer 5 is both balanced and cheap
  boundary[5] = 1000;
  boundary[3] = 10;  // now the cheap cut is 2 layers off balance
  const LayerProfile prof2 = MakeProfile(std::vector<double>(12, 1.0), boundary);
  PartitionContext ctx2{prof2, 2, 2, {}, {}};
  EXPECT_EQ(RunPartitionPolicy("bmp", {{"comm_weight", "0"}}, ctx2)->bounds[1], 6);
  EXPECT_EQ(RunPartitionPolicy("bmp", {{"comm_weight", "10"}}, ctx2)->bounds[1], 4);
}

TEST(BmpTest, SampledWhenSpaceIsHugeAndDeterministic) {
  const LayerProfile prof = VlmProfile(40, 60);
  PartitionContext ctx{prof, 16, 8, {}, {}};  // 15 cuts: 5^15 candidates
  PartitionReport a, b;
  Result<Partition> ra = RunPartitionPolicy("bmp", {{"max_candidates", "20000"}}, ctx, &a);
  Result<Partition> rb = RunPartitionPolicy("bmp", {{"max_candidates", "20000"}}, ctx, &b);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_TRUE(a.sampled);
  EXPECT_EQ(ra->bounds, rb->bounds);
  EXPECT_LE(a.score, BmpScore(prof, a.anchor, 0.1));  // the anchor is always a candidate
}

TEST(PartitionPolicyTest, AllPoliciesDeterministicAndValid) {
  const LayerProfile vlm = VlmProfile(45, 48),
                     layered = LayeredProfile(45, 48);  // megatron needs layer kinds
  for (const PartitionPolicyInfo& info : PartitionPolicies())
    for (int chunks : {1, 2, 4, 8}) {
      const LayerProfile& prof = info.name == "megatron" ? layered : vlm;
      PartitionContext ctx{prof, chunks, chunks == 8 ? 4 : chunks, {}, {}};
      Result<Partition> a = RunPartitionPolicy(info.name, {}, ctx);
      Result<Partition> b = RunPartitionPolicy(info.name, {}, ctx);
      ASSERT_TRUE(a.ok()) << info.name << ": " << a.error().message();
      EXPECT_TRUE(ValidatePartition(*a, prof.size(), chunks).ok());
      EXPECT_EQ(a->bounds, b->bounds) << info.name;
    }
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// The InternVL-1.5 6B+20B model priced by the analytic cost model for an ISF-like balanced micro-batch (about
// 9 tiles, 4K LLM tokens), TP 2, PP 4: OmniBal Table 4's comparison.
LayerProfile InternVlProfile() {
  Result<ModelSpec> m = LoadModel("internvl-1.5-6b-20b");
  Result<ClusterSpec> cl = LoadCluster("a100-4x200g");
  EXPECT_TRUE(m.ok() && cl.ok());
  std::vector<Sample> mb;
  for (int i = 0; i < 3; ++i) {
    Sample s;
    s.images = 1;
    s.image_tiles = 3;
    s.text_tokens = 600;
    mb.push_back(s);
  }
  AnalyticCostModel cost(cl->device, {.tp = 2});
  const std::vector<LayerWorkload> w = ModelWorkloads(*m, mb);
  const std::vector<Layer> layers = Layers(*m);
  std::vector<LayerCost> costs;
  for (const Layer& l : layers) costs.push_back(cost.Cost(*m, l, w[l.component]));
  return MakeLayerProfile(layers, costs);
}

TEST(PartitionRealModelTest, InternVl6b20bTable4Shape) {
  const LayerProfile prof = InternVlProfile();
  ASSERT_TRUE(ValidateLayerProfile(prof).ok());
  PartitionContext ctx{prof, 4, 4, {}, {}};
  std::map<std::string, PartitionReport> rep;
  for (const char* name : {"uniform", "params", "profile", "bmp"}) {
    Result<Partition> p = RunPartitionPolicy(name, {}, ctx, &rep[name]);
    ASSERT_TRUE(p.ok()) << name;
    std::string b;
    for (int x : p->bounds) b += std::to_string(x) + " ";
    std::printf(
        "%-8s bounds %s var_fwd %.4g max_fwd %.4g sum_comm %lld var_params %.4g var_layers %.4g score %.4g\n",
        name, b.c_str(), rep[name].var_fwd_us2, rep[name].max_fwd_us,
        static_cast<long long>(rep[name].sum_comm_bytes), rep[name].var_params, rep[name].var_layers,
        rep[name].score);
  }
  // Table 4's shape: params balances parameters, uniform layer counts, profile forward time; BMP trades a
  // little forward-time variance against communication.
  EXPECT_LE(rep["params"].var_params, rep["uniform"].var_params);
  EXPECT_LE(rep["uniform"].var_layers, rep["params"].var_layers);
  EXPECT_LE(rep["profile"].max_fwd_us, rep["uniform"].max_fwd_us);
  EXPECT_LE(rep["profile"].max_fwd_us, rep["params"].max_fwd_us);
  EXPECT_LE(rep["bmp"].score, rep["uniform"].score);
  EXPECT_LE(rep["bmp"].var_fwd_us2, rep["params"].var_fwd_us2);
}

}  // namespace
}  // namespace mmtwin

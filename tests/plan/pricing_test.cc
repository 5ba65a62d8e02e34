#include "core/plan/pricing.h"

#include <gtest/gtest.h>

#include <numeric>

namespace mmtwin {
namespace {

struct PricingFixture {
  ModelSpec model = *LoadModel("internvl-1.5-6b-20b");
  ClusterSpec cluster = *LoadCluster("a100-4x200g");
  std::vector<SampleTokens> mb;
  PricingFixture() {
    for (int i = 0; i < 4; ++i) {
      Sample s;
      s.images = 1;
      s.image_tiles = 1 + 2 * (i % 2);
      s.text_tokens = 100 * (i + 1);
      mb.push_back(TokensFor(model, s));
    }
  }
  Partition Even(int chunks) const {
    const int n = static_cast<int>(Layers(model).size());
    Partition p;
    for (int c = 0; c <= chunks; ++c) p.bounds.push_back(n * c / chunks);
    return p;
  }
};

TEST(PricerTest, ChunksSumTheirLayersAndRecomputeAddsForwardTime) {
  PricingFixture f;
  ParallelConfig par;
  par.pp = 4;
  AnalyticCostModel cost(f.cluster.device, {});
  Pricer pricer(f.model, cost, f.cluster, par);
  std::vector<LayerCost> lc;
  pricer.LayerCosts(f.mb, Packing::kVarlen, lc);
  const Partition part = f.Even(4);
  RecomputePlan none{std::vector<uint8_t>(lc.size(), 0)}, full{std::vector<uint8_t>(lc.size(), 1)};
  std::vector<ChunkCost> a(4), b(4);
  pricer.PriceMicroBatch(f.mb, Packing::kVarlen, part, none, a.data());
  pricer.PriceMicroBatch(f.mb, Packing::kVarlen, part, full, b.data());
  for (int c = 0; c < 4; ++c) {
    double fwd = 0, bwd = 0;
    int64_t act = 0, act_rc = 0;
    for (int i = part.bounds[c]; i < part.bounds[c + 1]; ++i) {
      fwd += lc[i].fwd_time_us;
      bwd += lc[i].bwd_time_us;
      act += lc[i].act_bytes;
      act_rc += lc[i].act_bytes_recompute;
    }
    EXPECT_NEAR(a[c].fwd_us, fwd, 1e-9 * fwd);
    EXPECT_NEAR(a[c].bwd_us, bwd, 1e-9 * bwd);
    EXPECT_EQ(a[c].recompute_us, 0);
    EXPECT_EQ(a[c].act_bytes, act);
    EXPECT_EQ(b[c].act_bytes, act_rc);
    EXPECT_LT(b[c].act_bytes, a[c].act_bytes);
    EXPECT_NEAR(b[c].recompute_us, fwd, 1e-9 * fwd);
    EXPECT_EQ(b[c].act_bytes_no_recompute, act);
    EXPECT_EQ(a[c].tp_fwd_us, 0);  // tp = 1
    if (c < 3) {
      EXPECT_EQ(a[c].send_bytes, lc[part.bounds[c + 1] - 1].boundary_bytes);
    } else {
      EXPECT_EQ(a[c].send_bytes, 0);
    }
  }
}

TEST(PricerTest, TensorParallelSplitsComputeAndAddsCollectives) {
  PricingFixture f;
  ParallelConfig p1, p4;
  p4.tp = 4;
  AnalyticCostModel c1(f.cluster.device, {1}), c4(f.cluster.device, {4});
  Pricer a(f.model, c1, f.cluster, p1), b(f.model, c4, f.cluster, p4);
  const Partition part = f.Even(1);
  RecomputePlan none{std::vector<uint8_t>(a.layers().size(), 0)};
  ChunkCost x, y;
  a.PriceMicroBatch(f.mb, Packing::kVarlen, part, none, &x);
  b.PriceMicroBatch(f.mb, Packing::kVarlen, part, none, &y);
  EXPECT_NEAR(y.fwd_us, x.fwd_us / 4, 0.01 * x.fwd_us);
  EXPECT_GT(y.tp_fwd_us, 0);
  EXPECT_DOUBLE_EQ(y.model_flops, x.model_flops);  // FLOPs are the whole model's
  // Hand check of one LLM block's collectives: 2 x ring all-reduce of tokens*hidden*2 bytes over NVLink.
  int64_t tokens = 0;
  for (auto& t : f.mb) tokens += t.llm_tokens;
  const double bytes = tokens * 6144.0 * 2;
  const double one = 2.0 * 3 / 4 * bytes / f.cluster.nvlink_bytes_per_s * 1e6 + f.cluster.nvlink_latency_us;
  EXPECT_NEAR(b.TpLayerForwardUs(tokens, 6144), 2 * one, 1e-9);
}

TEST(PricerTest, PaddingCostsTimeButNotModelFlops) {
  PricingFixture f;
  ParallelConfig par;
  AnalyticCostModel cost(f.cluster.device, {});
  Pricer pricer(f.model, cost, f.cluster, par);
  const Partition part = f.Even(1);
  RecomputePlan none{std::vector<uint8_t>(pricer.layers().size(), 0)};
  ChunkCost varlen, padded;
  pricer.PriceMicroBatch(f.mb, Packing::kVarlen, part, none, &varlen);
  pricer.PriceMicroBatch(f.mb, Packing::kPadded, part, none, &padded);
  EXPECT_GT(padded.fwd_us, varlen.fwd_us);  // the samples differ in length: padding costs time
  EXPECT_DOUBLE_EQ(padded.model_flops, varlen.model_flops);
}

TEST(PricerTest, StaticParamsAndCommLayout) {
  PricingFixture f;
  ParallelConfig par;
  par.pp = 2;
  par.dp = 4;
  par.tp = 2;
  AnalyticCostModel cost(f.cluster.device, {2});
  Pricer pricer(f.model, cost, f.cluster, par);
  auto st = pricer.Static(f.Even(2));
  EXPECT_EQ(st[0].params + st[1].params, TotalParams(f.model));
  EXPECT_EQ(st[0].grad_bytes_per_gpu, st[0].params * 2 / 2);
  const CommSpec in_node = pricer.Comm();  // tp*dp = 8 = one node: DP over NVLink
  EXPECT_EQ(in_node.dp_bytes_per_s, f.cluster.nvlink_bytes_per_s);
  EXPECT_LT(in_node.p2p_bytes_per_s, f.cluster.nvlink_bytes_per_s);  // stages on different nodes
  par.dp = 8;
  Pricer wide(f.model, cost, f.cluster, par);
  EXPECT_DOUBLE_EQ(wide.Comm().dp_bytes_per_s, f.cluster.node_nic_bytes_per_s() / f.cluster.gpus_per_node);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/plan/pricing.h"

#include <gtest/gtest.h>

#include "core/plan/collective.h"
#include "core/plan/memory.h"
#include "core/plan/schedule.h"

#include <algorithm>
#include <numeric>

#include "core/util/rng.h"

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
  // A quarter of the work, a little less efficiently (narrower GEMMs on the compute curve, the same launches).
  EXPECT_GT(y.fwd_us, x.fwd_us / 4);
  EXPECT_LT(y.fwd_us, 1.15 * x.fwd_us / 4);
  EXPECT_GT(y.tp_fwd_us, 0);
  EXPECT_DOUBLE_EQ(y.model_flops, x.model_flops);  // FLOPs are the whole model's
  // Hand check of one LLM block's collectives: two points, each (with sequence parallelism, the default) an
  // all-gather and a reduce-scatter of tokens*hidden*2 bytes inside the node as NCCL runs them on the A100
  // preset's "nccl" collectives; never faster than the flat ring at full NVLink speed that a "ring" cluster gets.
  int64_t tokens = 0;
  for (auto& t : f.mb) tokens += t.llm_tokens;
  const double bytes = tokens * 6144.0 * 2;
  ASSERT_EQ(f.cluster.collectives.model, "nccl");
  ASSERT_TRUE(p4.tp_sequence_parallel);
  const CollectiveLinks links = CollectiveLinksOf(f.cluster);
  const auto n = static_cast<int64_t>(bytes);
  const double nccl = NcclCollective(CollectiveOp::kAllGather, n, {4, 4}, links).us +
                      NcclCollective(CollectiveOp::kReduceScatter, n, {4, 4}, links).us;
  EXPECT_NEAR(b.TpLayerForwardUs(tokens, 6144), 2 * nccl, 1e-9);
  const double flat = 2.0 * 3 / 4 * bytes / f.cluster.nvlink_bytes_per_s * 1e6 + f.cluster.nvlink_latency_us;
  EXPECT_GT(nccl, flat);
  // Without sequence parallelism one all-reduce per point; a "ring" cluster keeps the flat ring.
  ParallelConfig p4n = p4;
  p4n.tp_sequence_parallel = false;
  const Pricer bn(f.model, c4, f.cluster, p4n);
  EXPECT_NEAR(bn.TpLayerForwardUs(tokens, 6144),
              2 * NcclCollective(CollectiveOp::kAllReduce, n, {4, 4}, links).us, 1e-9);
  ClusterSpec ring = f.cluster;
  ring.collectives.model = "ring";
  const Pricer br(f.model, c4, ring, p4);
  EXPECT_NEAR(br.TpLayerForwardUs(tokens, 6144), 2 * flat, 1e-9);
}

// parallel.tp_comm_overlap (Megatron-LM --tp-comm-overlap, Transformer Engine's userbuffers): each block's TP
// collectives hide under its weight GEMMs, at least an eighth of them exposed (the last of the reduce-scatters'
// 4 splits), and the hidden part slows the GEMMs by the device's overlap_slowdown. Closed forms, then the chunk
// sums: every block of a chunk adds its exposed time to tp_fwd_us, the same per backward (no recompute).
TEST(PricerTest, TpCommOverlapHidesCollectivesUnderTheGemms) {
  PricingFixture f;
  ParallelConfig p4, p4o;
  p4.tp = p4o.tp = 4;
  p4o.tp_comm_overlap = true;
  AnalyticCostModel c4(f.cluster.device, {4});
  const Pricer plain(f.model, c4, f.cluster, p4), over(f.model, c4, f.cluster, p4o);
  const double s = f.cluster.device.overlap_slowdown;
  ASSERT_GT(s, 0);
  // Closed forms: comm 100 us under 300 us of GEMMs: 12.5 exposed, 87.5 hidden; under 40 us: 60 exposed.
  EXPECT_DOUBLE_EQ(plain.TpExposedUs(100, 300), 100);
  EXPECT_DOUBLE_EQ(over.TpExposedUs(100, 300), 12.5 + s * 87.5);
  EXPECT_DOUBLE_EQ(over.TpExposedUs(100, 40), 60 + s * 40);
  EXPECT_DOUBLE_EQ(over.TpExposedUs(100, 0), 100);  // a frozen layer: no weight GEMMs to hide under
  EXPECT_DOUBLE_EQ(over.TpExposedUs(0, 300), 0);
  // Chunk sums over the model's blocks.
  const Partition part = f.Even(1);
  RecomputePlan none{std::vector<uint8_t>(plain.layers().size(), 0)};
  ChunkCost a, b;
  plain.PriceMicroBatch(f.mb, Packing::kVarlen, part, none, &a);
  over.PriceMicroBatch(f.mb, Packing::kVarlen, part, none, &b);
  std::vector<LayerCost> lc;
  plain.LayerCosts(f.mb, Packing::kVarlen, lc);
  double want = 0, raw = 0;
  for (size_t i = 0; i < lc.size(); ++i) {
    const Layer& l = plain.layers()[i];
    if (l.kind != LayerKind::kTransformer) continue;
    const double comm =
        plain.TpLayerForwardUs(ComponentWorkload(f.model, l.component, f.mb, Packing::kVarlen).tokens,
                               f.model.components[l.component].tf.hidden);
    raw += comm;
    want += std::max(comm - lc[i].bwd_weight_time_us, comm / 8) +
            s * (comm - std::max(comm - lc[i].bwd_weight_time_us, comm / 8));
  }
  EXPECT_NEAR(a.tp_fwd_us, raw, 1e-9 * raw);
  EXPECT_NEAR(b.tp_fwd_us, want, 1e-9 * want);
  EXPECT_NEAR(b.tp_bwd_us, want, 1e-9 * want);
  EXPECT_LT(b.tp_fwd_us, 0.5 * a.tp_fwd_us);  // A100 NVLink at TP 4: the GEMMs outlast the collectives
  EXPECT_DOUBLE_EQ(b.fwd_us, a.fwd_us);       // compute itself is unchanged
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

// Issue 8 oracle: one stage (pp 1) of L equal LLM blocks with full recompute keeps each block's input, and the
// backward rematerializes one block at a time, so the peak activation is everything held plus ONE block's
// extra activations (the whole stage's before the fix: full recompute then saved nothing at pp 1), less the
// head's, freed by its backward before the last block is rematerialized. uniform:2 keeps one input per pair
// and rematerializes a pair at a time.
TEST(PricerTest, RecomputeTransientIsOneCheckpointedUnit) {
  const ModelSpec model = *LoadModel("llama-3-8b");
  const ClusterSpec cluster = *LoadCluster("a100-4x200g");
  ParallelConfig par;
  par.micro_batches = 1;
  // No backward working memory (a coefficient table whose work columns are 0; the analytic model prices it,
  // cost_model.h), so the peak is the recompute units' alone.
  std::string table =
      "# mmtwin-cost-coefficients v1\n"
      "source,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us,work_c0_bytes,"
      "work_token_bytes,work_pair_bytes\n";
  for (const char* kind : {"embedding", "transformer", "projector", "head"})
    table += std::string("*,") + kind + ",1,0,0,2,0,0,0,0,0\n";
  Result<CoefficientCostModel> cost =
      CoefficientCostModel::Parse(table, "zero-work.csv", AnalyticCostModel(cluster.device, {}));
  ASSERT_TRUE(cost.ok()) << cost.error().message();
  Pricer pricer(model, *cost, cluster, par);
  Sample s;
  s.text_tokens = 4096;
  const std::vector<SampleTokens> mb = {TokensFor(model, s)};
  std::vector<LayerCost> lc;
  pricer.LayerCosts(mb, Packing::kVarlen, lc);
  const std::vector<Layer>& layers = pricer.layers();
  int blocks = 0;
  int64_t others = 0, after = 0;  // non-block layers; of them, those after the last block (the head)
  const LayerCost* block = nullptr;
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i].kind == LayerKind::kTransformer) {
      ++blocks;
      if (block) {  // the blocks are equal
        ASSERT_EQ(lc[i].act_bytes, block->act_bytes);
        ASSERT_EQ(lc[i].act_bytes_recompute, block->act_bytes_recompute);
      }
      block = &lc[i];
      after = 0;
    } else {
      others += lc[i].act_bytes;
      after += lc[i].act_bytes;
    }
  ASSERT_GT(after, 0);
  ASSERT_EQ(blocks, 32);
  ASSERT_GT(block->act_bytes, 2 * block->act_bytes_recompute);
  const Schedule sched = *BuildSchedule("1f1b", 1, 1, 1);
  const Partition part{{0, static_cast<int>(layers.size())}};
  auto peak = [&](auto flag_of_block) {
    RecomputePlan rc{std::vector<uint8_t>(layers.size(), 0)};
    int b = 0;
    for (size_t i = 0; i < layers.size(); ++i)
      if (layers[i].kind == LayerKind::kTransformer) rc.layers[i] = flag_of_block(b++);
    IterationCosts costs;
    costs.Resize(1, 1, 1);
    pricer.PriceMicroBatch(mb, Packing::kVarlen, part, rc, &costs.At(0, 0, 0));
    const std::vector<int64_t> params(layers.size(), 0);
    return ComputeMemory(par, part, params, sched, costs, int64_t{1} << 40)[0].peak_activation_bytes;
  };
  const int64_t act = block->act_bytes, kept = block->act_bytes_recompute;
  EXPECT_EQ(peak([](int) { return uint8_t{0}; }), others + blocks * act);
  // The last block is rematerialized after the layers behind it (the head) have run their backward and freed
  // their activations: its unit comes on top of everything stored but those.
  auto on_top = [&](int64_t unit) { return std::max<int64_t>(0, unit - after); };
  EXPECT_EQ(peak([](int) { return uint8_t{1}; }), others + blocks * kept + on_top(act - kept));
  EXPECT_EQ(peak([](int b) { return uint8_t(b % 2 == 0 ? 1 : 2); }),
            others + blocks / 2 * kept + on_top(act - kept + act));
  // Full recompute now saves memory at pp 1.
  EXPECT_LT(peak([](int) { return uint8_t{1}; }), peak([](int) { return uint8_t{0}; }) / 2);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// The seven timing fields of a chunk (ChunkCost, or the cache's packed ChunkTimes) equal, bit for bit.
template <class Times>
void ExpectSameTimes(const Times& a, const ChunkCost& b) {
  EXPECT_EQ(a.fwd_us, b.fwd_us);
  EXPECT_EQ(a.bwd_us, b.bwd_us);
  EXPECT_EQ(a.bwd_weight_us, b.bwd_weight_us);
  EXPECT_EQ(a.recompute_us, b.recompute_us);
  EXPECT_EQ(a.tp_fwd_us, b.tp_fwd_us);
  EXPECT_EQ(a.tp_bwd_us, b.tp_bwd_us);
  EXPECT_EQ(a.send_bytes, b.send_bytes);
}

TEST(IterationTimingCacheTest, TimesEqualPriceIterationBitForBitOnRandomPartitions) {
  // Oracle: the full pricing. For random partitions and recompute plans, TP 1 and 2, varlen and padded
  // micro-batches, every timing field and send_bytes must be equal (==, not near: BMP's choice must not move).
  const ModelSpec model = *LoadModel("internvl-1.5-6b-20b");
  const ClusterSpec cluster = *LoadCluster("a100-4x200g");
  const int L = static_cast<int>(Layers(model).size());
  Rng rng(5);
  std::vector<SampleTokens> tokens;
  for (int i = 0; i < 64; ++i) {
    Sample s;
    s.images = rng.Below(3) ? 1 : 0;
    s.image_tiles = s.images ? 1 + static_cast<uint32_t>(rng.Below(12)) : 0;
    s.text_tokens = 50 + static_cast<uint32_t>(rng.Below(2000));
    tokens.push_back(TokensFor(model, s));
  }
  // Two iterations, DP 3 x 5 micro-batches of 1..4 samples (15: three blocks of 4 micro-batches and a partial one).
  std::vector<IterationData> its(2);
  for (IterationData& it : its) {
    it.micro_batches.assign(3, std::vector<std::vector<uint32_t>>(5));
    for (auto& rank : it.micro_batches)
      for (auto& mb : rank)
        for (uint64_t k = 0, n = 1 + rng.Below(4); k < n; ++k)
          mb.push_back(static_cast<uint32_t>(rng.Below(64)));
  }
  int checked = 0, checked_replicas = 0;
  for (int tp : {1, 2}) {
    ParallelConfig pc;
    pc.dp = 3;
    pc.tp = tp;
    pc.pp = 4;
    AnalyticOptions ao;
    ao.tp = tp;
    const AnalyticCostModel cost(cluster.device, ao);
    const Pricer pricer(model, cost, cluster, pc);
    ASSERT_TRUE(IterationTimingCache::Supported(pricer));
    IterationCosts reused;
    std::vector<ChunkTimes> packed;
    for (Packing packing : {Packing::kVarlen, Packing::kPadded}) {
      const IterationTimingCache cache(pricer, its, tokens, packing);
      ASSERT_EQ(cache.size(), 2u);
      for (int trial = 0; trial < 20; ++trial) {
        // Random cuts into 4 chunks, random recompute flags (0, 1, 2).
        std::vector<int> cuts;
        while (cuts.size() < 3) {
          const int c = 1 + static_cast<int>(rng.Below(L - 1));
          if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
        }
        std::sort(cuts.begin(), cuts.end());
        Partition p;
        p.bounds = {0, cuts[0], cuts[1], cuts[2], L};
        RecomputePlan rc;
        rc.layers.resize(L);
        for (auto& f : rc.layers) f = static_cast<uint8_t>(rng.Below(3));
        for (size_t i = 0; i < its.size(); ++i) {
          const IterationCosts want = pricer.PriceIteration(its[i], tokens, packing, p, rc);
          const IterationCosts got = cache.Times(i, p, rc);
          cache.Times(i, p, rc, &reused);  // into a buffer of the previous trial's costs
          cache.PackedTimes(i, p, rc, &packed);
          ASSERT_EQ(packed.size(), want.costs.size());
          for (size_t k = 0; k < packed.size(); ++k) ExpectSameTimes(packed[k], want.costs[k]);
          // One replica's entries alone (replicas 1 and 2 start inside a block of 4 micro-batches).
          for (int r = 0; r < 3; ++r) {
            cache.PackedReplicaTimes(i, r, p, rc, &packed);
            ASSERT_EQ(packed.size(), 5u * 4);
            for (size_t k = 0; k < packed.size(); ++k) ExpectSameTimes(packed[k], want.costs[r * 5 * 4 + k]);
            checked_replicas += static_cast<int>(packed.size());
          }
          ASSERT_EQ(got.costs.size(), want.costs.size());
          ASSERT_EQ(reused.costs.size(), want.costs.size());
          for (size_t k = 0; k < 2 * want.costs.size(); ++k) {
            const size_t j = k % want.costs.size();
            const ChunkCost &a = k < want.costs.size() ? got.costs[j] : reused.costs[j], &b = want.costs[j];
            ExpectSameTimes(a, b);
            ASSERT_EQ(a.llm_tokens, b.llm_tokens);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 2 * 20 * 2 * 3 * 5 * 4 * 2);
  EXPECT_EQ(checked_replicas, 2 * 2 * 20 * 2 * 3 * 5 * 4);
}

}  // namespace
}  // namespace mmtwin

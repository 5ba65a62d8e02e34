// SPDX-License-Identifier: Apache-2.0
// Frozen components (issue 31, item 3; core/model/model.h LayerBackward): which backward each layer keeps, the cost
// model's terms removed exactly, the model states of frozen parameters per framework (closed forms), one stage's
// chunk costs against the sum of its layers, BMP moving layers onto a frozen encoder's stage, and a one-stage
// simulation against its closed form.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/cost/cost_model.h"
#include "core/model/model.h"
#include "core/plan/memory.h"
#include "core/plan/partition.h"
#include "core/plan/pricing.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

ModelSpec Frozen(const std::string& model, const std::vector<std::string>& names) {
  auto m = LoadModel(model);
  EXPECT_TRUE(m.ok()) << m.error().message();
  auto f = WithFrozen(*m, names);
  EXPECT_TRUE(f.ok()) << f.error().message();
  return *f;
}

std::string ComponentName(const ModelSpec& m, const Layer& l) { return m.components[l.component].name; }

TEST(FrozenModelTest, BackwardFollowsTheDataFlow) {
  // Vision frozen (LLaVA stage 2): nothing before the vision tower trains, so it has no backward at all.
  const ModelSpec v = Frozen("internvl-1.5-6b-20b", {"vision"});
  int none = 0;
  for (const Layer& l : Layers(v)) {
    const std::string c = ComponentName(v, l);
    EXPECT_EQ(l.backward, c == "vision" ? LayerBackward::kNone : LayerBackward::kFull) << l.label;
    EXPECT_EQ(l.frozen, c == "vision") << l.label;
    none += l.backward == LayerBackward::kNone;
  }
  EXPECT_EQ(none, v.components[0].tf.layers + 1);  // the blocks and the patch embedding
  EXPECT_EQ(v.name, "internvl-1.5-6b-20b-frozen-vision");
  EXPECT_EQ(FrozenParams(v), ComponentParams(v, 0));

  // Vision and LLM frozen (LLaVA stage 1): the LLM's blocks and head carry the gradient back to the projector
  // (input gradient only); its embedding takes token ids and has none.
  const ModelSpec s1 = Frozen("internvl-1.5-6b-20b", {"vision", "llm"});
  for (const Layer& l : Layers(s1)) {
    const std::string c = ComponentName(s1, l);
    LayerBackward want = LayerBackward::kFull;
    if (c == "vision" || (c == "llm" && l.kind == LayerKind::kEmbedding)) want = LayerBackward::kNone;
    if (c == "llm" && l.kind != LayerKind::kEmbedding) want = LayerBackward::kInputOnly;
    EXPECT_EQ(l.backward, want) << l.label;
  }
  // A frozen projector behind a trained encoder passes the gradient on; without one (both frozen) it has none.
  for (const Layer& l : Layers(Frozen("internvl-1.5-6b-20b", {"projector"})))
    if (l.kind == LayerKind::kProjector) {
      EXPECT_EQ(l.backward, LayerBackward::kInputOnly);
    }
  for (const Layer& l : Layers(Frozen("internvl-1.5-6b-20b", {"vision", "projector"})))
    if (l.kind == LayerKind::kProjector) {
      EXPECT_EQ(l.backward, LayerBackward::kNone);
    }
  // Nothing frozen: every layer trains.
  for (const Layer& l : Layers(*LoadModel("internvl-1.5-6b-20b")))
    EXPECT_EQ(l.backward, LayerBackward::kFull);
}

TEST(FrozenModelTest, BadListsAreErrors) {
  const ModelSpec m = *LoadModel("internvl-1.5-6b-20b");
  auto unknown = WithFrozen(m, {"vit"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("no component 'vit'"), std::string::npos)
      << unknown.error().message();
  EXPECT_NE(unknown.error().message().find("vision, projector, llm"), std::string::npos);
  auto twice = WithFrozen(m, {"vision", "vision"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("listed twice"), std::string::npos);
  auto all = WithFrozen(m, {"vision", "projector", "llm"});
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.error().message().find("nothing would train"), std::string::npos);
}

// The analytic model's terms for one layer of each mode against its full-backward cost (fixed efficiency and
// the device's compute curve).
TEST(FrozenCostTest, InputOnlyDropsTheWeightGradientAndNoneDropsTheBackward) {
  const ModelSpec m = Frozen("internvl-1.5-6b-20b", {"vision", "llm"});
  const ClusterSpec cluster = *LoadCluster("a100-4x200g");
  const std::vector<Layer> layers = Layers(m);
  const Layer* block = nullptr;
  const Layer* vit = nullptr;
  for (const Layer& l : layers) {
    if (!block && l.kind == LayerKind::kTransformer && l.backward == LayerBackward::kInputOnly) block = &l;
    if (!vit && l.kind == LayerKind::kTransformer && l.backward == LayerBackward::kNone) vit = &l;
  }
  ASSERT_TRUE(block && vit);
  const TransformerConfig& tf = m.components[block->component].tf;
  const LayerWorkload w{4096, 4096.0 * 1024, 4};
  for (double efficiency : {0.5, 0.0}) {  // 0: the device's compute curve
    const AnalyticCostModel cost(cluster.device, {.tp = 2, .efficiency = efficiency});
    const LayerCost full = cost.FullBackwardCost(m, *block, w), got = cost.Cost(m, *block, w);
    ASSERT_GT(full.bwd_weight_time_us, 0);
    EXPECT_DOUBLE_EQ(got.fwd_time_us, full.fwd_time_us);
    EXPECT_DOUBLE_EQ(got.bwd_time_us, full.bwd_time_us - full.bwd_weight_time_us);
    EXPECT_EQ(got.bwd_weight_time_us, 0);
    // wgrad FLOPs = the weight GEMMs' forward FLOPs: 2 x tokens x matmul parameters (whole layer).
    const double wgrad = 2.0 * w.tokens * static_cast<double>(BlockMatmulParams(tf));
    EXPECT_DOUBLE_EQ(full.bwd_weight_flops, wgrad);
    EXPECT_DOUBLE_EQ(got.bwd_flops, 2.0 * full.fwd_flops - wgrad);
    EXPECT_EQ(got.act_bytes,
              full.act_bytes);  // kept: the input gradient still needs norms' and GELU's inputs
    EXPECT_EQ(got.act_bytes_recompute, full.act_bytes_recompute);

    const LayerWorkload wv{1025 * 4, 1025.0 * 1025 * 4, 4};
    const LayerCost vfull = cost.FullBackwardCost(m, *vit, wv), vgot = cost.Cost(m, *vit, wv);
    ASSERT_GT(vfull.bwd_time_us, 0);
    ASSERT_GT(vfull.act_bytes, 0);
    EXPECT_DOUBLE_EQ(vgot.fwd_time_us, vfull.fwd_time_us);
    EXPECT_DOUBLE_EQ(vgot.fwd_flops, vfull.fwd_flops);
    EXPECT_EQ(vgot.bwd_time_us, 0);
    EXPECT_EQ(vgot.bwd_flops, 0);
    EXPECT_EQ(vgot.act_bytes, 0);
    EXPECT_EQ(vgot.act_bytes_recompute, 0);
    EXPECT_EQ(vgot.bwd_work_bytes, 0);
    EXPECT_EQ(vgot.boundary_bytes, vfull.boundary_bytes);
  }
}

// Model states per GPU of P parameters, F of them frozen, against the per-framework bytes of core/plan/memory.h.
TEST(FrozenMemoryTest, FrozenParametersKeepOnlyTheirWeights) {
  const int64_t P = 8'000'000'000, F = 2'400'000'000;
  ParallelConfig p;
  p.dp = 8;
  // Megatron, no ZeRO: trained 2 + 4 + 12 bytes, frozen 2.
  p.zero_stage = 0;
  EXPECT_EQ(ModelStateBytes(p, P, F), 18 * (P - F) + 2 * F);
  EXPECT_EQ(ModelStateBytes(p, P, 0), ModelStateBytes(p, P));
  // Megatron's distributed optimizer (ZeRO-1): master and moments sharded over 8.
  p.zero_stage = 1;
  EXPECT_EQ(ModelStateBytes(p, P, F), 6 * (P - F) + 12 * (P - F) / 8 + 2 * F);
  // DeepSpeed ZeRO-3: every buffer sharded, frozen bf16 weights too.
  p.zero_stage = 3;
  p.zero3_impl = "deepspeed";
  EXPECT_EQ(ModelStateBytes(p, P, F), 20 * (P - F) / 8 + 2 * F / 8);
  // FSDP FULL_SHARD: the fp32 flat parameter holds frozen parameters too (4 bytes, sharded).
  p.zero3_impl = "fsdp";
  EXPECT_EQ(ModelStateBytes(p, P, F), 16 * (P - F) / 8 + 4 * F / 8);
  // Everything frozen but nothing else: clamped to P.
  p.zero_stage = 0;
  p.zero3_impl = "simple";
  EXPECT_EQ(ModelStateBytes(p, P, 2 * P), 2 * P);
}

// One pipeline stage holding the whole model: its chunk cost is the sum of its layers' costs, the frozen ones'
// backward and activations removed, and its gradient bytes are the trained parameters'.
TEST(FrozenPricingTest, OneStageLosesTheFrozenLayersTermsExactly) {
  const ModelSpec full_model = *LoadModel("internvl-1.5-6b-20b");
  const ModelSpec frozen_model = Frozen("internvl-1.5-6b-20b", {"vision"});
  const ClusterSpec cluster = *LoadCluster("a100-4x200g");
  ParallelConfig par;
  par.tp = 2;
  const AnalyticCostModel cost(cluster.device, {.tp = 2});
  const Pricer full(full_model, cost, cluster, par), frozen(frozen_model, cost, cluster, par);
  std::vector<SampleTokens> mb;
  for (int i = 0; i < 4; ++i) {
    Sample s;
    s.images = 1;
    s.image_tiles = 1 + 2 * (i % 2);
    s.text_tokens = 100 * (i + 1);
    mb.push_back(TokensFor(full_model, s));
  }
  const int n = static_cast<int>(Layers(full_model).size());
  const Partition one{{0, n}};
  std::vector<LayerCost> lc;
  full.LayerCosts(mb, Packing::kVarlen, lc);
  double vision_bwd = 0, vision_fwd = 0;
  int64_t vision_act = 0, vision_params = 0;
  const std::vector<Layer>& layers = full.layers();
  for (int i = 0; i < n; ++i)
    if (full_model.components[layers[i].component].name == "vision") {
      vision_bwd += lc[i].bwd_time_us;
      vision_fwd += lc[i].fwd_time_us;
      vision_act += lc[i].act_bytes;
      vision_params += layers[i].params;
    }
  ASSERT_GT(vision_bwd, 0);
  for (uint8_t flag : {uint8_t{0}, kRecomputeKeepInput}) {
    const RecomputePlan rc{std::vector<uint8_t>(n, flag)};
    ChunkCost a, b;
    full.PriceMicroBatch(mb, Packing::kVarlen, one, rc, &a);
    frozen.PriceMicroBatch(mb, Packing::kVarlen, one, rc, &b);
    EXPECT_NEAR(b.fwd_us, a.fwd_us, 1e-9 * a.fwd_us);
    EXPECT_NEAR(b.bwd_us, a.bwd_us - vision_bwd, 1e-9 * a.bwd_us);
    // A frozen vision tower is never recomputed: nothing of it is kept for a backward.
    EXPECT_NEAR(b.recompute_us, flag ? a.recompute_us - vision_fwd : 0.0, 1e-9 * a.fwd_us);
    if (!flag) {
      EXPECT_EQ(b.act_bytes, a.act_bytes - vision_act);
    }
    EXPECT_LT(b.tp_bwd_us, a.tp_bwd_us);  // no backward TP collectives in the vision tower
  }
  const ChunkStatic sf = frozen.Static(one)[0], sa = full.Static(one)[0];
  EXPECT_EQ(sf.params, sa.params);
  EXPECT_EQ(sf.frozen_params, vision_params);
  EXPECT_EQ(sf.grad_bytes_per_gpu, (sa.params - vision_params) * 2 / 2);
  EXPECT_EQ(sf.weight_bytes_per_gpu(), sa.grad_bytes_per_gpu);
}

// BMP as OmniBal publishes it balances forward time; a frozen vision tower then gets the same layers as a trained
// one although it has no backward. balance: auto (the default) balances forward + backward instead and moves
// layers onto its stage; balance: forward keeps OmniBal's partition.
TEST(FrozenPartitionTest, BmpMovesLayersOntoTheFrozenEncodersStage) {
  const ClusterSpec cluster = *LoadCluster("a100-4x200g");
  ParallelConfig par;
  par.pp = 4;
  const AnalyticCostModel cost(cluster.device, {});
  std::vector<Sample> samples(8);
  for (int i = 0; i < 8; ++i) {
    samples[i].images = 1;
    samples[i].image_tiles = 1 + (i % 4);
    samples[i].text_tokens = 200 + 50 * i;
  }
  auto partition = [&](const ModelSpec& m, const std::string& balance) {
    const Pricer pricer(m, cost, cluster, par);
    std::vector<SampleTokens> mb;
    for (const Sample& s : samples) mb.push_back(TokensFor(m, s));
    std::vector<LayerCost> lc;
    pricer.LayerCosts(mb, Packing::kVarlen, lc);
    PartitionContext ctx;
    ctx.profile = MakeLayerProfile(pricer.layers(), lc);
    ctx.chunks = 4;
    ctx.pp = 4;
    PartitionReport report;
    auto p = RunPartitionPolicy("bmp", {{"balance", balance}}, ctx, &report);
    EXPECT_TRUE(p.ok()) << p.error().message();
    return *p;
  };
  const ModelSpec trained = *LoadModel("internvl-1.5-6b-20b");
  const ModelSpec frozen = Frozen("internvl-1.5-6b-20b", {"vision"});
  const Partition base = partition(trained, "auto");
  EXPECT_EQ(partition(frozen, "forward").bounds, base.bounds);
  const Partition moved = partition(frozen, "auto");
  EXPECT_GT(moved.bounds[1], base.bounds[1] + 10) << "stage 0 holds the backward-free vision tower";
  EXPECT_EQ(partition(frozen, "training").bounds, moved.bounds);
  // The balanced quantity: forward + backward per stage, whose spread auto narrows.
  const Pricer pricer(frozen, cost, cluster, par);
  std::vector<SampleTokens> mb;
  for (const Sample& s : samples) mb.push_back(TokensFor(frozen, s));
  std::vector<LayerCost> lc;
  pricer.LayerCosts(mb, Packing::kVarlen, lc);
  auto spread = [&](const Partition& p) {
    double lo = 1e300, hi = 0;
    for (int c = 0; c < 4; ++c) {
      double t = 0;
      for (int i = p.bounds[c]; i < p.bounds[c + 1]; ++i) t += lc[i].fwd_time_us + lc[i].bwd_time_us;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    return hi / lo;
  };
  EXPECT_LT(spread(moved), spread(base));
}

// One GPU, one stage: the iteration is its micro-batches' forward and backward plus the optimizer step of the
// trained parameters only (closed form from the run's own stage means); ZeRO-3 all-gathers frozen weights but
// reduce-scatters only trained gradients.
Scenario LlavaStage(const std::vector<std::string>& frozen, int dp, int zero_stage) {
  Scenario s;
  s.name = "frozen";
  s.trace.preset = "lcs-558k";
  s.trace.samples = 2000;
  s.model = "llava-1.5-7b";
  s.frozen = frozen;
  s.cluster = "a100-8x200g";
  s.parallel.dp = dp;
  s.parallel.micro_batches = 2;
  s.parallel.zero_stage = zero_stage;
  s.data = {"random", {{"batch_size", "4"}}};
  s.iterations = 3;
  return s;
}

TEST(FrozenSimulateTest, OneStageIterationIsItsComputePlusTheTrainedParametersStep) {
  for (const std::vector<std::string>& frozen :
       {std::vector<std::string>{}, std::vector<std::string>{"vision"},
        std::vector<std::string>{"vision", "llm"}}) {
    auto r = Simulate(LlavaStage(frozen, 1, 0), {});
    ASSERT_TRUE(r.ok()) << r.error().message();
    const ModelSpec m = frozen.empty() ? *LoadModel("llava-1.5-7b") : Frozen("llava-1.5-7b", frozen);
    const ClusterSpec cluster = *LoadCluster("a100-8x200g");
    const StageRecord& st = r->summary.stages.at(0);
    const double trained = static_cast<double>(TotalParams(m) - FrozenParams(m));
    const double step_us = AnalyticCostModel(cluster.device, {.tp = 1}).OptimizerStepUs(trained);
    const double want = 2 * (st.fwd_us_mean + st.bwd_us_mean) + step_us;
    EXPECT_NEAR(r->summary.iteration_time_us.mean, want, 1e-6 * want) << ::testing::PrintToString(frozen);
  }
  auto a = Simulate(LlavaStage({}, 1, 0), {}), b = Simulate(LlavaStage({"vision", "llm"}, 1, 0), {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(b->summary.stages[0].fwd_us_mean, a->summary.stages[0].fwd_us_mean,
              1e-9 * a->summary.stages[0].fwd_us_mean);
  EXPECT_LT(b->summary.stages[0].bwd_us_mean, 0.7 * a->summary.stages[0].bwd_us_mean);
  EXPECT_LT(b->summary.stages[0].model_state_bytes, a->summary.stages[0].model_state_bytes / 8);
}

TEST(FrozenSimulateTest, Zero3GathersFrozenWeightsAndReducesOnlyTrainedGradients) {
  const ModelSpec m = Frozen("llava-1.5-7b", {"vision"});
  auto r = Simulate(LlavaStage({"vision"}, 2, 3), {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  int64_t gathered = -1, reduced = 0;
  for (const OpRecord& op : r->ops) {
    if (op.device != 0) continue;
    if (op.kind == OpKind::kDpAllGather) gathered = op.bytes;
    if (op.kind == OpKind::kDpCollective) reduced += op.bytes;
  }
  EXPECT_EQ(gathered, TotalParams(m) * 2);
  EXPECT_EQ(reduced, (TotalParams(m) - FrozenParams(m)) * 2);
}

}  // namespace
}  // namespace mmtwin

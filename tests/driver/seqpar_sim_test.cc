// SPDX-License-Identifier: Apache-2.0
// Sequence parallelism end to end (Simulate, the planner, the op graph): SP degree 1 is no SP (the full run
// records are byte-identical), the op graph carries the Ulysses all-to-all bytes of the closed form, scenario
// errors name file, line and field, tokens and FLOPs are conserved across the SP ranks, and activations divide.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/graph/op_graph.h"
#include "core/plan/collective.h"
#include "core/plan/pricing.h"
#include "core/plan/seqpar.h"
#include "core/records/records_codec.h"
#include "core/scenario/scenario.h"
#include "driver/planner.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

// A trace of `n` text-only samples of `tokens` tokens each (a long-context sequence per micro-batch).
std::string SeqTrace(int n, int64_t tokens) {
  const std::string path = ::testing::TempDir() + "/seq-" + std::to_string(tokens) + ".csv";
  std::ofstream f(path);
  f << "# mmtwin-trace v1\nsample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,meta\n";
  for (int i = 0; i < n; ++i) f << "s" << i << ",long,0,0,0,0," << tokens << ",\n";
  return path;
}

Scenario Long(const std::string& policy, int sp, int64_t tokens, int nodes = 1) {
  Scenario s;
  s.name = "long";
  s.trace.file = SeqTrace(4, tokens);
  s.model = "longvila-8b";
  s.cluster = "h100-8x400g";
  s.nodes = nodes;
  s.parallel.dp = 1;
  s.parallel.sp = sp;
  s.parallel.zero_stage = 3;
  s.data = {"random", {{"batch_size", "1"}}};
  s.sp = {policy, {}};
  s.iterations = 2;
  return s;
}

TEST(SeqParSimTest, SpDegreeOneEqualsNoSpExactly) {
  Scenario base;
  base.name = "small";
  base.trace.preset = "internvl-1.2m";
  base.trace.samples = 3000;
  base.model = "internvl-1.5-6b-20b";
  base.cluster = "a100-4x200g";
  base.parallel.dp = 2;
  base.parallel.tp = 2;
  base.parallel.pp = 2;
  base.parallel.micro_batches = 4;
  base.parallel.zero_stage = 1;
  base.iterations = 3;
  auto a = Simulate(base, {});
  ASSERT_TRUE(a.ok()) << a.error().message();
  for (const char* policy : {"ring", "zigzag-ring", "ulysses", "2d", "megatron-cp"}) {
    Scenario s = base;
    s.parallel.sp = 1;
    s.sp = {policy, {}};
    auto b = Simulate(s, {});
    ASSERT_TRUE(b.ok()) << policy << ": " << b.error().message();
    EXPECT_EQ(SummaryToJson(a->summary), SummaryToJson(b->summary)) << policy;
    EXPECT_EQ(StagesCsv(a->summary.stages), StagesCsv(b->summary.stages)) << policy;
    EXPECT_EQ(OpsCsv(a->ops), OpsCsv(b->ops)) << policy;
    EXPECT_EQ(a->trace_json, b->trace_json) << policy;
  }
}

TEST(SeqParSimTest, OpGraphCarriesTheUlyssesAllToAllBytesOfTheClosedForm) {
  const int64_t tokens = 65536;
  const Scenario s = Long("ulysses", 8, tokens);
  auto run = BuildPlan(s, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->plan.parallel.sp_method, "ulysses");
  EXPECT_EQ(run->plan.parallel.sp_ulysses, 8);
  auto r = Simulate(s, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const TransformerConfig& tf = run->model.components.back().tf;
  const int64_t per_layer = UlyssesAllToAllBytes(tf, tokens / 8, 8, 1, false);
  EXPECT_EQ(per_layer, static_cast<int64_t>(7.0 / 8 * 8192 * (2.0 * 4096 + 2.0 * 1024) * 2));
  const ClusterSpec& c = run->cluster;
  const double layer_us = 4.0 * 7 * c.nvlink_latency_us + per_layer / c.nvlink_bytes_per_s * 1e6;
  int sp_ops = 0;
  for (const OpRecord& op : r->ops)
    if (op.kind == OpKind::kSpCollective) {
      ++sp_ops;
      EXPECT_EQ(op.bytes, 32 * per_layer);  // 32 LLM blocks, one chunk
      EXPECT_NEAR(op.duration_us, 32 * layer_us, 1e-6 * 32 * layer_us);
      EXPECT_GE(op.peer, 0);
    }
  EXPECT_EQ(sp_ops, 8 * 2);  // every SP rank: forward and backward
}

TEST(SeqParSimTest, ScenarioErrorsNameFileLineAndField) {
  const std::string trace = SeqTrace(4, 4096);
  const std::string text = "trace: {file: " + trace +
                           "}\nmodel: longvila-8b\ncluster: h100-8x400g\n"
                           "parallel:\n  dp: 1\n  sp: 12\npolicies:\n  sp: ulysses\n";
  auto s = ParseScenario(text, "x.yaml", ".");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.error().message().rfind("x.yaml:6: parallel.sp: Ulysses degree 12 does not divide the LLM's 32", 0),
      0u)
      << s.error().message();
  auto t = ParseScenario(
      "trace: {file: " + trace + "}\nmodel: longvila-8b\ncluster: h100-8x400g\nparallel: {dp: 1, sp: 4}\n",
      "y.yaml", ".");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message().rfind("y.yaml:4: parallel.sp: 4 needs a sequence-parallel policy", 0), 0u)
      << t.error().message();
  auto u = ParseScenario("trace: {file: " + trace +
                             "}\nmodel: longvila-8b\ncluster: h100-8x400g\nparallel: {dp: 1, sp: 4}\n"
                             "policies: {sp: ringo}\n",
                         "z.yaml", ".");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message().find("z.yaml:5: policies.sp: unknown sequence-parallel policy 'ringo'"),
            std::string::npos)
      << u.error().message();
}

TEST(SeqParSimTest, TokensAndFlopsAreConservedAndActivationsDivide) {
  const int64_t tokens = 32768;
  auto one = Simulate(Long("none", 1, tokens), {});
  ASSERT_TRUE(one.ok()) << one.error().message();
  for (const char* policy : {"ring", "zigzag-ring", "ulysses", "2d", "megatron-cp"}) {
    auto r = Simulate(Long(policy, 8, tokens), {});
    ASSERT_TRUE(r.ok()) << policy << ": " << r.error().message();
    const RunSummary &a = one->summary, &b = r->summary;
    // Per iteration: the same tokens (throughput x time) and model FLOPs (MFU x time x GPUs).
    EXPECT_NEAR(b.tokens_per_s * b.iteration_time_us.mean, a.tokens_per_s * a.iteration_time_us.mean,
                1e-6 * a.tokens_per_s * a.iteration_time_us.mean)
        << policy;
    EXPECT_NEAR(b.mfu * b.iteration_time_us.mean * 8, a.mfu * a.iteration_time_us.mean,
                1e-6 * a.mfu * a.iteration_time_us.mean)
        << policy;
    // Activations per GPU: 1/8 (the sequence is divisible: no padding).
    EXPECT_NEAR(static_cast<double>(b.stages[0].peak_activation_bytes),
                static_cast<double>(a.stages[0].peak_activation_bytes) / 8,
                0.01 * static_cast<double>(a.stages[0].peak_activation_bytes) / 8)
        << policy;
    EXPECT_LT(b.iteration_time_us.mean, a.iteration_time_us.mean) << policy;
  }
}

TEST(SeqParSimTest, ZigzagBalancesWhatTheRingLeavesImbalanced) {
  // Inside one node the KV transfers hide behind compute: the ring's slowest rank does (2S-1)/S of the mean
  // attention work, zigzag exactly the mean, so zigzag is faster.
  auto ring = Simulate(Long("ring", 8, 131072), {});
  auto zz = Simulate(Long("zigzag-ring", 8, 131072), {});
  ASSERT_TRUE(ring.ok() && zz.ok());
  EXPECT_LT(zz->summary.iteration_time_us.mean, ring->summary.iteration_time_us.mean);
  EXPECT_LT(zz->summary.stages[0].fwd_us_mean, ring->summary.stages[0].fwd_us_mean);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// Two-stage vs one-stage sharding (LongVILA §4.2) on a hand-made micro-batch: 2 videos of 4 frames (196 LLM
// tokens each) with texts of 1000 and 10 tokens on S = 2. One-stage: frames dealt 4 / 4, texts on ranks 0 and
// 1: loads 1784 and 794, f = 1784 / 1289; two-stage: even shards plus the vision embeddings' redistribution,
// (S-1)/S x 1568 / 2 vision tokens x 4096 x 2 bytes.
TEST(SeqParSimTest, TwoStageShardingBalancesTokensAndChargesTheRedistribution) {
  auto model = LoadModel("longvila-8b");
  auto cluster = LoadCluster("h100-8x400g", 1);
  ASSERT_TRUE(model.ok() && cluster.ok());
  const AnalyticCostModel cost(cluster->device, {});
  std::vector<Sample> samples(2);
  samples[0].video_frames = 4;
  samples[0].text_tokens = 1000;
  samples[1].video_frames = 4;
  samples[1].text_tokens = 10;
  std::vector<SampleTokens> mb;
  for (const Sample& x : samples) mb.push_back(TokensFor(*model, x));
  ASSERT_EQ(mb[0].llm_tokens, 4 * 196 + 1000);
  ParallelConfig pc;
  pc.sp = 2;
  pc.sp_method = "2d";
  Partition part{{0, static_cast<int>(Layers(*model).size())}};
  RecomputePlan rc;
  ChunkCost two, one;
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, rc, &two);
  pc.sp_one_stage = true;
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, rc, &one);
  EXPECT_GT(one.fwd_us, two.fwd_us);
  EXPECT_GT(one.bwd_us, two.bwd_us);
  // 2d on 2 GPUs of a node: Ulysses 2 x ring 1; samples padded to 2 (already even): 1289 tokens per rank.
  const TransformerConfig& tf = model->components.back().tf;
  const int64_t redistribution = static_cast<int64_t>(1568.0 / 2 * 4096 * 2 * 0.5);
  EXPECT_EQ(two.sp_bytes, 32 * UlyssesAllToAllBytes(tf, 1289, 2, 1, false) + redistribution);
  // One-stage: no redistribution, the busiest rank's all-to-alls carry its ceil(2578 / 2 x f) = 1784 tokens.
  EXPECT_EQ(one.sp_bytes, 32 * UlyssesAllToAllBytes(tf, 1784, 2, 1, false));
}

// Both shardings price the same tokens whatever the data policy's packing (issue 28 item 6): the SP group holds
// the micro-batch as one packed sequence, so a padded plan prices exactly what a packed one does. Before, two-stage
// padded every sample to the longest (2 x 1784 tokens) while one-stage kept the real 2578, so on this micro-batch
// two-stage came out slower than one-stage. Here two-stage is 1289 tokens per rank against one-stage's 1784 and
// wins in both passes.
TEST(SeqParSimTest, BothShardingsPriceThePackedTokensUnderAPaddedPlan) {
  auto model = LoadModel("longvila-8b");
  auto cluster = LoadCluster("h100-8x400g", 1);
  ASSERT_TRUE(model.ok() && cluster.ok());
  const AnalyticCostModel cost(cluster->device, {});
  std::vector<Sample> samples(2);
  samples[0].video_frames = 4;
  samples[0].text_tokens = 1000;
  samples[1].video_frames = 4;
  samples[1].text_tokens = 10;
  std::vector<SampleTokens> mb;
  for (const Sample& x : samples) mb.push_back(TokensFor(*model, x));
  ParallelConfig pc;
  pc.sp = 2;
  pc.sp_method = "2d";
  const Partition part{{0, static_cast<int>(Layers(*model).size())}};
  ChunkCost c[2][2];  // [one-stage][padded]
  for (int one = 0; one < 2; ++one) {
    pc.sp_one_stage = one == 1;
    const Pricer pricer(*model, cost, *cluster, pc);
    pricer.PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &c[one][0]);
    pricer.PriceMicroBatch(mb, Packing::kPadded, part, RecomputePlan{}, &c[one][1]);
    EXPECT_EQ(c[one][1].fwd_us, c[one][0].fwd_us) << one;
    EXPECT_EQ(c[one][1].bwd_us, c[one][0].bwd_us) << one;
    EXPECT_EQ(c[one][1].sp_bytes, c[one][0].sp_bytes) << one;
    EXPECT_EQ(c[one][1].model_flops, c[one][0].model_flops) << one;
  }
  EXPECT_LT(c[0][1].fwd_us + c[0][1].sp_fwd_us, c[1][1].fwd_us + c[1][1].sp_fwd_us);
  EXPECT_LT(c[0][1].bwd_us + c[0][1].sp_bwd_us, c[1][1].bwd_us + c[1][1].sp_bwd_us);
  // The same token count: on a balanced micro-batch (equal texts, f = 1) one-stage's busiest rank holds what
  // two-stage gives every rank, so the two differ by the redistribution alone.
  samples[1].text_tokens = 1000;
  mb = {TokensFor(*model, samples[0]), TokensFor(*model, samples[1])};
  ChunkCost two, one;
  pc.sp_one_stage = false;
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kPadded, part, RecomputePlan{}, &two);
  pc.sp_one_stage = true;
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kPadded, part, RecomputePlan{}, &one);
  EXPECT_EQ(two.fwd_us, one.fwd_us);
  EXPECT_EQ(two.bwd_us, one.bwd_us);
  const int64_t redistribution = static_cast<int64_t>(1568.0 / 2 * 4096 * 2 * 0.5);
  EXPECT_EQ(two.sp_bytes - one.sp_bytes, redistribution);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// LongVILA-8B on one 8-GPU H100 node, one causal 65,536-token text sequence over sp 8, its layers one chunk:
// the setting the context-parallel implementations are priced in below (each test sets pc.sp_method).
class SeqParOneNodeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(model.ok() && cluster.ok()); }
  static std::vector<SampleTokens> Sequence(const ModelSpec& m) {
    Sample x;
    x.text_tokens = 65536;
    return {TokensFor(m, x)};
  }
  static ParallelConfig Sp8() {
    ParallelConfig p;
    p.sp = 8;
    return p;
  }
  Result<ModelSpec> model = LoadModel("longvila-8b");
  Result<ClusterSpec> cluster = LoadCluster("h100-8x400g", 1);
  AnalyticCostModel cost{cluster.ok() ? cluster->device : DeviceSpec{}, {}};
  std::vector<SampleTokens> mb = model.ok() ? Sequence(*model) : std::vector<SampleTokens>{};
  Partition part{{0, model.ok() ? static_cast<int>(Layers(*model).size()) : 1}};
  ParallelConfig pc = Sp8();
};

// SP buffers per rank (SpAttentionBufferBytes): the forward's are the chunk's forward transient, the backward's
// add to its backward transient; Megatron CP's forward keeps every ring step's KV and partial output.
TEST_F(SeqParOneNodeTest, RingKvBuffersAreCountedPerRank) {
  pc.sp_method = "zigzag-ring";
  ChunkCost c, cp;
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &c);
  const TransformerConfig& tf = model->components.back().tf;
  SpLayout ring;
  ring.method = SpMethod::kZigzagRing;
  ring.sp = ring.ring = 8;
  const SpBufferBytes rb = SpAttentionBufferBytes(ring, tf, 65536 / 8, 1);
  EXPECT_EQ(c.forward_transient_bytes, rb.forward);
  EXPECT_EQ(c.sp_ring_fwd_bytes, 32 * 7 * RingStepKvBytes(tf, 65536 / 8, 1, 1, false));
  // ring-flash-attention's backward: KV on R - 1 steps, dK and dV in fp32 (twice the KV bytes) on all R.
  const int64_t kv = RingStepKvBytes(tf, 65536 / 8, 1, 1, false);
  EXPECT_EQ(c.sp_ring_bwd_bytes, 32 * (7 * kv + 8 * 2 * kv));
  pc.sp_method = "megatron-cp";  // TransformerEngine's P2P ring: bf16 dKV, other buffers
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &cp);
  SpLayout mcp = ring;
  mcp.method = SpMethod::kMegatronCp;
  const SpBufferBytes mb_ = SpAttentionBufferBytes(mcp, tf, 65536 / 8, 1);
  EXPECT_EQ(cp.forward_transient_bytes, mb_.forward);
  EXPECT_GT(cp.forward_transient_bytes, c.forward_transient_bytes);
  EXPECT_EQ(cp.backward_transient_bytes - c.backward_transient_bytes, mb_.backward - rb.backward);
  EXPECT_EQ(cp.sp_ring_bwd_bytes, 32 * 2 * 7 * kv);
  pc.sp_method =
      "ulysses";  // no ring: the all-to-alls' receive buffers only (4 divides 28 heads, 4 KV heads)
  pc.sp = 4;
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &c);
  SpLayout u;
  u.method = SpMethod::kUlysses;
  u.sp = u.ulysses = 4;
  EXPECT_EQ(c.forward_transient_bytes, SpAttentionBufferBytes(u, tf, 65536, 1).forward);
  EXPECT_EQ(c.sp_ring_fwd_bytes, 0);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// Megatron CP's all-gather variant (TransformerEngine AttnFuncWithCPAndKVAllGather) against the zigzag ring on
// one node: every layer all-gathers (R - 1) / R of the full KV (K and V: two collectives of R x kv / 2 bytes per
// rank, as NCCL runs them on the H100 preset's "nccl" collectives: no faster than the bytes at NVLink speed),
// exposed; the backward gathers again and reduce-scatters dK, dV. The attention pairs are the ring's, in two
// kernels instead of R steps.
TEST_F(SeqParOneNodeTest, MegatronCpAllGatherMovesTheGatheredKvExposed) {
  pc.sp_method = "megatron-cp-ag";
  ChunkCost ag, zz, cp;
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &ag);
  const TransformerConfig& tf = model->components.back().tf;
  const int R = 8;
  const int64_t kv = RingStepKvBytes(tf, 65536 / R, 1, 1, false);
  const int64_t full_kv = 65536LL * 2 * tf.kv_heads * tf.head_dim * 2;  // K and V of the whole sequence, bf16
  EXPECT_EQ(kv * R, full_kv);
  EXPECT_EQ(ag.sp_ring_fwd_bytes, 32 * (R - 1) * kv);  // (R - 1) / R of the full KV per layer
  EXPECT_EQ(ag.sp_ring_bwd_bytes, 2 * ag.sp_ring_fwd_bytes);
  ASSERT_EQ(cluster->collectives.model, "nccl");
  const CollectiveLinks links = CollectiveLinksOf(*cluster);
  const double ag_us = 2 * NcclCollective(CollectiveOp::kAllGather, R * kv / 2, {R, R}, links).us;
  const double rs_us = 2 * NcclCollective(CollectiveOp::kReduceScatter, R * kv / 2, {R, R}, links).us;
  EXPECT_NEAR(ag.sp_fwd_us, 32 * ag_us, 1e-6 * ag.sp_fwd_us);
  EXPECT_NEAR(ag.sp_bwd_us, 32 * (ag_us + rs_us), 1e-6 * ag.sp_bwd_us);
  // Each rank receives (R - 1) x kv per layer: never faster than that at NVLink speed, nor than the flat ring.
  const double ring_us = 2.0 * (R - 1) * cluster->nvlink_latency_us +
                         static_cast<double>((R - 1) * kv) / cluster->nvlink_bytes_per_s * 1e6;
  EXPECT_GT(ag_us, static_cast<double>((R - 1) * kv) / cluster->nvlink_bytes_per_s * 1e6);
  std::printf("megatron-cp-ag KV all-gather per layer: NCCL %.1f us, flat ring %.1f us\n", ag_us, ring_us);
  {
    // Across two nodes (sp 16) the gathers stay flat rings at the GPU's NIC share, as the SimGrid engine replays
    // them (one transfer to the ring successor).
    auto two = LoadCluster("h100-8x400g", 2);
    ASSERT_TRUE(two.ok()) << two.error().message();
    ParallelConfig p16 = pc;
    p16.sp = 16;
    ChunkCost ag16;
    Pricer(*model, cost, *two, p16).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &ag16);
    const int R16 = 16;
    const int64_t kv16 = RingStepKvBytes(tf, 65536 / R16, 1, 1, false);
    const double flat16 = 2.0 * (R16 - 1) * two->nic_latency_us +
                          static_cast<double>((R16 - 1) * kv16) / two->gpu_nic_bytes_per_s() * 1e6;
    EXPECT_NEAR(ag16.sp_fwd_us, 32 * flat16, 1e-6 * ag16.sp_fwd_us);
  }
  // The three implementations differ, and inside a node the rings hide their KV while the all-gather cannot.
  pc.sp_method = "zigzag-ring";
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &zz);
  pc.sp_method = "megatron-cp";
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &cp);
  EXPECT_NE(zz.fwd_us, cp.fwd_us);
  EXPECT_NE(zz.bwd_us + zz.sp_bwd_us, cp.bwd_us + cp.sp_bwd_us);
  EXPECT_GT(ag.sp_fwd_us, zz.sp_fwd_us);
  // ring-flash-attention's fp32 update per step costs more than TE's bf16 corrections after the loop.
  EXPECT_GT(zz.fwd_us, cp.fwd_us);
  // Its last dK, dV transfer (fp32) is exposed after the loop: at least its latency and bytes per layer.
  EXPECT_GE(zz.sp_bwd_us,
            32 * (cluster->nvlink_latency_us + 2.0 * kv / cluster->nvlink_bytes_per_s * 1e6) - 1e-6);
  EXPECT_EQ(cp.sp_bwd_us, 0);
}

// Cornstarch's CP (cornstarch-cp) on one node, one causal 65,536-token sequence over 8 ranks: every layer
// all-gathers (R - 1) / R of the KV repeated to all 32 query heads (repeat_kv: 4x the GQA KV Megatron gathers),
// per head group; the gathers are pipelined with the groups' attention, so at least the first group's gather is
// exposed and at most all of them; the backward gathers again and reduce-scatters dK, dV (twice the bytes).
// With bidirectional vision spans the makespan split keeps the ranks' attention within 1% of each other where
// the zigzag split's busiest rank grows.
TEST_F(SeqParOneNodeTest, CornstarchCpGathersTheRepeatedKvPerHeadGroupPipelined) {
  pc.sp_method = "cornstarch-cp";
  ChunkCost cs, ag;
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &cs);
  pc.sp_method = "megatron-cp-ag";
  Pricer(*model, cost, *cluster, pc).PriceMicroBatch(mb, Packing::kVarlen, part, RecomputePlan{}, &ag);
  const TransformerConfig& tf = model->components.back().tf;
  const int R = 8, layers = 32, groups = tf.heads;
  const double kv_rank = 2.0 * (65536 / R) * tf.heads * tf.head_dim * 2;  // K, V of all heads, bf16
  EXPECT_EQ(cs.sp_ring_fwd_bytes, static_cast<int64_t>(layers * (R - 1) * kv_rank));
  EXPECT_EQ(cs.sp_ring_bwd_bytes, 2 * cs.sp_ring_fwd_bytes);
  EXPECT_EQ(cs.sp_ring_fwd_bytes, ag.sp_ring_fwd_bytes * tf.heads / tf.kv_heads);
  const double gather_us = 2.0 * (R - 1) * cluster->nvlink_latency_us +
                           (R - 1) * kv_rank / groups / cluster->nvlink_bytes_per_s * 1e6;
  EXPECT_GE(cs.sp_fwd_us, layers * gather_us * (1 - 1e-9));
  EXPECT_LE(cs.sp_fwd_us, layers * groups * gather_us * (1 + 1e-9));
  EXPECT_GE(cs.sp_bwd_us, layers * groups * gather_us * (1 - 1e-9));  // the reduce-scatters at least
  // The same attention work as the all-gather variant on a causal sequence (both balance it).
  EXPECT_NEAR(cs.fwd_us, ag.fwd_us, 0.05 * ag.fwd_us);

  // A video sample: 120 frames (the LLM's vision span, 23,520 tokens) then as many text tokens, attended
  // bidirectionally over the frames: zigzag's first chunks hold the span's start, whose queries attend to the
  // whole span.
  Sample video;
  video.video_frames = 120;
  video.text_tokens = 23520;
  ModelSpec bidir = *model;
  bidir.bidirectional_vision = true;
  const std::vector<SampleTokens> vmb = {TokensFor(bidir, video)};
  ASSERT_GT(vmb[0].vision_llm_tokens, 8192);
  ChunkCost zz_causal, zz_bidir, cs_causal, cs_bidir;
  for (const char* method : {"zigzag-ring", "cornstarch-cp"})
    for (const ModelSpec* m : {&*model, &bidir}) {
      pc.sp_method = method;
      ChunkCost& out = std::string(method) == "zigzag-ring" ? (m == &bidir ? zz_bidir : zz_causal)
                                                            : (m == &bidir ? cs_bidir : cs_causal);
      Pricer(*m, cost, *cluster, pc).PriceMicroBatch(vmb, Packing::kVarlen, part, RecomputePlan{}, &out);
    }
  // The extra attention of the span lands on zigzag's busiest rank more than on cornstarch-cp's.
  const double zz_extra = zz_bidir.fwd_us - zz_causal.fwd_us, cs_extra = cs_bidir.fwd_us - cs_causal.fwd_us;
  std::printf("zigzag %.0f -> %.0f us, cornstarch-cp %.0f -> %.0f us\n", zz_causal.fwd_us, zz_bidir.fwd_us,
              cs_causal.fwd_us, cs_bidir.fwd_us);
  EXPECT_GT(zz_extra, 0);
  EXPECT_GT(cs_extra, 0);
  EXPECT_GT(zz_extra, 1.2 * cs_extra);
  // MM-SP's two-stage redistribution of the vision embeddings applies to cornstarch-cp too: its SP bytes are the
  // layers' KV gathers plus (S - 1) / S of the rank's share of the vision tokens x hidden x 2 bytes.
  const double vision = static_cast<double>(vmb[0].vision_llm_tokens), h = tf.hidden;
  const double redistribute = vision / R * h * 2.0 * (R - 1) / R;
  const double kv_video = 2.0 * (static_cast<double>(vmb[0].llm_tokens) / R) * tf.heads * tf.head_dim * 2;
  EXPECT_NEAR(static_cast<double>(cs_bidir.sp_bytes), layers * (R - 1) * kv_video + redistribute, 64.0);
}

}  // namespace
}  // namespace mmtwin

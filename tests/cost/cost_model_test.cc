// SPDX-License-Identifier: Apache-2.0
// Cost model: workloads from samples, analytic costs against hand computations, coefficient tables.
#include "core/cost/cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace mmtwin {
namespace {

ModelSpec Load(const std::string& name) {
  Result<ModelSpec> r = LoadModel(name);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : ModelSpec{};
}

DeviceSpec A100() { return DeviceSpec{"A100", 312e12, 80LL << 30, 2.039e12, 0.5}; }
DeviceSpec H100() { return DeviceSpec{"H100", 989e12, 80LL << 30, 3.35e12, 0.5}; }

Sample S(uint32_t tiles, uint32_t text, double audio = 0, uint32_t frames = 0) {
  Sample s;
  s.images = tiles ? 1 : 0;
  s.image_tiles = tiles;
  s.video_frames = frames;
  s.audio_seconds = audio;
  s.text_tokens = text;
  return s;
}

const Layer& FirstOf(const std::vector<Layer>& layers, int component, LayerKind kind) {
  for (const Layer& l : layers)
    if (l.component == component && l.kind == kind) return l;
  static Layer none;
  ADD_FAILURE() << "no such layer";
  return none;
}

TEST(WorkloadTest, VisionTilesAreSeparateSpans) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Sample> samples = {S(7, 100), S(1, 50), S(0, 30)};
  LayerWorkload v = ComponentWorkload(m, 0, samples);
  EXPECT_EQ(v.tokens, 8 * 1025);
  EXPECT_EQ(v.sequences, 8);
  EXPECT_DOUBLE_EQ(v.attn_pairs, 8.0 * 1025 * 1025);
  // Padding never applies to tiles.
  LayerWorkload vp = ComponentWorkload(m, 0, samples, Packing::kPadded);
  EXPECT_EQ(vp.tokens, v.tokens);
  EXPECT_DOUBLE_EQ(vp.attn_pairs, v.attn_pairs);
  // Projector sees the 256 downsampled tokens per tile, no attention.
  LayerWorkload p = ComponentWorkload(m, 1, samples);
  EXPECT_EQ(p.tokens, 8 * 256);
  EXPECT_EQ(p.attn_pairs, 0);
}

// An if_larger encoder (OrchMLLM MLLM-84B, patch 14, cap 896 px, merge 2): every image is a span as long as
// its size gives; varlen attention pairs are the sum of span^2 per image, never (sum of spans)^2 or the cap's.
TEST(WorkloadTest, IfLargerImagesAreSpansOfTheirOwnSize) {
  ModelSpec m = Load("orchmllm-84b");
  auto image = [](int px, uint32_t images = 1) {
    Sample s = S(1, 10);
    s.images = images;
    s.image_tiles = images;
    s.image_px = static_cast<uint16_t>(px);
    return s;
  };
  // 300 px -> 22^2 = 484; 1000 px -> the cap 64^2 = 4096; 2 x 140 px -> 10^2 = 100 each; unknown -> 4096.
  const std::vector<Sample> samples = {image(300), image(1000), image(140, 2), image(0), S(0, 30)};
  LayerWorkload v = ComponentWorkload(m, 0, samples);
  EXPECT_EQ(v.tokens, 484 + 4096 + 2 * 100 + 4096);
  EXPECT_EQ(v.sequences, 5);
  EXPECT_DOUBLE_EQ(v.attn_pairs, 484.0 * 484 + 4096.0 * 4096 + 2 * 100.0 * 100 + 4096.0 * 4096);
  // The projector carries each image's merged tokens: ceil(22/2)^2 + 32^2 + 2 x ceil(10/2)^2 + 32^2.
  LayerWorkload p = ComponentWorkload(m, 1, samples);
  EXPECT_EQ(p.tokens, 121 + 1024 + 2 * 25 + 1024);
  // The LLM sees the same image tokens plus text.
  LayerWorkload l = ComponentWorkload(m, static_cast<int>(m.components.size()) - 1, samples);
  EXPECT_EQ(l.tokens, p.tokens + 4 * 10 + 30);
}

TEST(WorkloadTest, LlmVarlenAndPadded) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Sample> samples = {S(7, 100), S(1, 50), S(0, 30)};
  const int64_t a = 100 + 7 * 256, b = 50 + 256, c = 30;
  LayerWorkload v = ComponentWorkload(m, 2, samples);
  EXPECT_EQ(v.tokens, a + b + c);
  EXPECT_EQ(v.sequences, 3);
  EXPECT_DOUBLE_EQ(v.attn_pairs, double(a * a + b * b + c * c));
  LayerWorkload p = ComponentWorkload(m, 2, samples, Packing::kPadded);
  EXPECT_EQ(p.tokens, 3 * a);
  EXPECT_DOUBLE_EQ(p.attn_pairs, 3.0 * a * a);
  // Property: padding never lowers the work, and ModelWorkloads agrees with ComponentWorkload.
  EXPECT_GE(p.tokens, v.tokens);
  EXPECT_GE(p.attn_pairs, v.attn_pairs);
  std::vector<LayerWorkload> all = ModelWorkloads(m, samples);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].tokens, v.tokens);
}

// Bidirectional vision spans (ModelSpec::bidirectional_vision): each sample's v vision tokens at its start
// attend to each other, adding v (v - 1) square pairs to the LLM's n^2 (varlen and padded alike); the encoders,
// the tokens and a text-only sample are unchanged; a sample cut at max_context keeps only the span's part inside
// it; and the analytic cost of an LLM block grows with the pairs.
TEST(WorkloadTest, BidirectionalVisionSpansAddTheirUpperTriangle) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  ModelSpec bi = m;
  bi.bidirectional_vision = true;
  const std::vector<Sample> samples = {S(7, 100), S(1, 50), S(0, 30)};
  const double a = 100 + 7 * 256, b = 50 + 256, c = 30, va = 7 * 256, vb = 256;
  const LayerWorkload causal = ComponentWorkload(m, 2, samples), bidir = ComponentWorkload(bi, 2, samples);
  EXPECT_EQ(bidir.tokens, causal.tokens);
  EXPECT_DOUBLE_EQ(bidir.attn_pairs, a * a + b * b + c * c + va * (va - 1) + vb * (vb - 1));
  const LayerWorkload padded = ComponentWorkload(bi, 2, samples, Packing::kPadded);
  EXPECT_DOUBLE_EQ(padded.attn_pairs, 3.0 * a * a + va * (va - 1) + vb * (vb - 1));
  EXPECT_DOUBLE_EQ(ComponentWorkload(bi, 0, samples).attn_pairs, ComponentWorkload(m, 0, samples).attn_pairs);
  // Truncation: max_context 1,000 keeps 1,000 of the 7-tile sample's 1,892 tokens, all of them vision.
  ModelSpec cut = bi;
  cut.max_context = 1000;
  EXPECT_DOUBLE_EQ(ComponentWorkload(cut, 2, {S(7, 100)}).attn_pairs, 1000.0 * 1000 + 1000.0 * 999);
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 2, LayerKind::kTransformer);
  const AnalyticCostModel cost(A100(), {});
  EXPECT_GT(cost.Cost(bi, block, bidir).fwd_time_us, cost.Cost(m, block, causal).fwd_time_us);
}

TEST(WorkloadTest, AudioWindowsAndProjectors) {
  ModelSpec m = Load("orchmllm-10b");  // vision, vision_projector, audio, audio_projector, llm
  ASSERT_EQ(m.components.size(), 5u);
  // 70 s of audio -> 3500 positions: windows of 1500, 1500, 500.
  const std::vector<Sample> samples = {S(0, 10, 70.0), S(1, 10, 0), S(0, 10, 4.0)};
  LayerWorkload a = ComponentWorkload(m, 2, samples);
  EXPECT_EQ(a.tokens, 3500 + 200);
  EXPECT_EQ(a.sequences, 3 + 1);
  EXPECT_DOUBLE_EQ(a.attn_pairs, 2.0 * 1500 * 1500 + 500.0 * 500 + 200.0 * 200);
  LayerWorkload ap = ComponentWorkload(m, 2, samples, Packing::kPadded);  // both audio samples padded to 3500
  EXPECT_EQ(ap.tokens, 7000);
  EXPECT_EQ(ap.sequences, 6);
  EXPECT_EQ(ComponentWorkload(m, 3, samples).tokens, 1750 + 100);  // audio projector, rate 2
  EXPECT_EQ(ComponentWorkload(m, 1, samples).tokens, 1024);        // vision projector, rate 1
  EXPECT_EQ(ComponentWorkload(m, 4, samples).tokens, 30 + 1750 + 100 + 1024);
}

TEST(AnalyticCostTest, InternVitBlockOnOneTile) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 0, LayerKind::kTransformer);
  LayerWorkload w = ComponentWorkload(m, 0, std::vector<Sample>{S(1, 0)});
  AnalyticCostModel cost(A100());
  LayerCost c = cost.Cost(m, block, w);
  // matmul params 4*3200^2 + 2*3200*12800 = 122,880,000; bidirectional attention over 1025 positions.
  const double fwd = 2.0 * 1025 * 122880000 + 4.0 * 3200 * 1025 * 1025;
  EXPECT_DOUBLE_EQ(c.fwd_flops, fwd);
  EXPECT_DOUBLE_EQ(c.bwd_flops, 2 * fwd);
  EXPECT_NEAR(c.fwd_time_us, fwd / (312e12 * 0.5) * 1e6, 1e-6);
  EXPECT_NEAR(c.fwd_time_us, 1700.97, 0.01);
  EXPECT_EQ(c.act_bytes, 34LL * 1025 * 3200);
  EXPECT_EQ(c.act_bytes_recompute, 2LL * 1025 * 3200);
  EXPECT_EQ(c.boundary_bytes, 2LL * 1025 * 3200);
  EXPECT_EQ(c.param_bytes, 2 * block.params);
  // Without flash attention the 5*a*s^2 score activations come back.
  AnalyticCostModel noflash(A100(), {.tp = 1, .flash_attention = false});
  EXPECT_EQ(noflash.Cost(m, block, w).act_bytes, 34LL * 1025 * 3200 + 5LL * 25 * 1025 * 1025);
}

TEST(AnalyticCostTest, InternLm2BlockOn4096TokensWithTp4) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 2, LayerKind::kTransformer);
  LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  AnalyticCostModel cost(H100(), {.tp = 4});
  LayerCost c = cost.Cost(m, block, w);
  // 2*6144^2 + 2*6144*1024 + 3*6144*16384 = 390,070,272 matmul params; causal attention halves 4*h*s^2.
  const double fwd = 2.0 * 4096 * 390070272 + 4.0 * 6144 * 4096 * 4096 / 2;
  EXPECT_DOUBLE_EQ(c.fwd_flops, 3401614098432.0);
  EXPECT_DOUBLE_EQ(c.fwd_flops, fwd);
  EXPECT_NEAR(c.fwd_time_us, fwd / 4 / (989e12 * 0.5) * 1e6, 1e-6);
  EXPECT_NEAR(c.bwd_time_us, 2 * c.fwd_time_us, 1e-9);
  EXPECT_EQ(c.act_bytes, 34LL * 4096 * 6144 / 4);
  EXPECT_EQ(c.act_bytes_recompute, 2LL * 4096 * 6144 / 4);
  // Korthikanti et al. Table 2 without sequence parallelism: sbh(10 + 24/t + 5as/(ht)); recompute keeps 2sbh.
  AnalyticCostModel no_sp(H100(), {.tp = 4, .sequence_parallel = false});
  EXPECT_EQ(no_sp.Cost(m, block, w).act_bytes, 10LL * 4096 * 6144 + 24LL * 4096 * 6144 / 4);
  EXPECT_EQ(no_sp.Cost(m, block, w).act_bytes_recompute, 2LL * 4096 * 6144);
  AnalyticCostModel no_sp_noflash(H100(), {.tp = 4, .flash_attention = false, .sequence_parallel = false});
  EXPECT_EQ(no_sp_noflash.Cost(m, block, w).act_bytes,
            10LL * 4096 * 6144 + (24LL * 4096 * 6144 + 5LL * 48 * 4096 * 4096) / 4);
  EXPECT_DOUBLE_EQ(no_sp.Cost(m, block, w).fwd_time_us, c.fwd_time_us);  // SP changes memory, not compute
  // At tp 1 there is nothing to split: both spellings agree.
  AnalyticCostModel tp1(H100(), {.tp = 1}), tp1_no_sp(H100(), {.tp = 1, .sequence_parallel = false});
  EXPECT_EQ(tp1.Cost(m, block, w).act_bytes, tp1_no_sp.Cost(m, block, w).act_bytes);
  EXPECT_EQ(c.boundary_bytes, 2LL * 4096 * 6144);
  EXPECT_EQ(c.param_bytes, 2 * block.params / 4);
}

TEST(AnalyticCostTest, PropertiesOverEveryLayer) {
  ModelSpec m = Load("orchmllm-18b");
  const std::vector<Sample> samples = {S(2, 300, 12.0), S(1, 800), S(0, 40, 31.0)};
  std::vector<LayerWorkload> w = ModelWorkloads(m, samples);
  AnalyticCostModel tp1(H100()), tp2(H100(), {.tp = 2}), eff(H100(), {.tp = 1, .efficiency = 0.25});
  for (const Layer& l : Layers(m)) {
    SCOPED_TRACE(l.label);
    LayerCost a = tp1.Cost(m, l, w[l.component]);
    LayerCost b = tp2.Cost(m, l, w[l.component]);
    EXPECT_GT(a.fwd_time_us, 0);
    EXPECT_DOUBLE_EQ(a.bwd_flops, 2 * a.fwd_flops);
    EXPECT_DOUBLE_EQ(a.fwd_flops, b.fwd_flops);  // FLOPs are the whole layer's
    EXPECT_NEAR(b.fwd_time_us, a.fwd_time_us / 2, 1e-9 * a.fwd_time_us);
    EXPECT_LE(a.act_bytes_recompute, a.act_bytes);
    // The LLM embedding lookup is memory-bound (HBM time) and keeps only token ids: exempt from the next two.
    if (!(l.kind == LayerKind::kEmbedding && m.components[l.component].kind == ComponentKind::kLlm)) {
      EXPECT_LE(b.act_bytes, a.act_bytes / 2 + 1);
      EXPECT_NEAR(eff.Cost(m, l, w[l.component]).fwd_time_us, 2 * a.fwd_time_us, 1e-9 * a.fwd_time_us);
    }
    // An empty workload costs nothing but keeps its weights.
    LayerCost z = tp1.Cost(m, l, LayerWorkload{});
    EXPECT_EQ(z.fwd_time_us, 0);
    EXPECT_EQ(z.act_bytes, 0);
    EXPECT_EQ(z.param_bytes, a.param_bytes);
  }
}

TEST(AnalyticCostTest, HeadAndProjectorAndEmbedding) {
  ModelSpec m = Load("llava-1.5-7b");
  const std::vector<Layer> layers = Layers(m);
  AnalyticCostModel cost(A100());
  LayerWorkload w{1000, 0, 1};
  LayerCost head = cost.Cost(m, layers.back(), w);
  EXPECT_DOUBLE_EQ(head.fwd_flops, 2.0 * 1000 * 4096 * 32000);
  EXPECT_EQ(head.act_bytes, 2LL * 1000 * 4096 * 2 + 4LL * 1000 * 32000);
  EXPECT_EQ(head.boundary_bytes, 0);
  LayerCost proj = cost.Cost(m, FirstOf(layers, 1, LayerKind::kProjector), LayerWorkload{576, 0, 0});
  EXPECT_DOUBLE_EQ(proj.fwd_flops, 2.0 * 576 * (1024.0 * 4096 + 4096.0 * 4096));
  EXPECT_EQ(proj.boundary_bytes, 2LL * 576 * 4096);
  LayerCost emb = cost.Cost(m, FirstOf(layers, 2, LayerKind::kEmbedding), w);
  EXPECT_EQ(emb.fwd_flops, 0);
  EXPECT_NEAR(emb.fwd_time_us, 2.0 * 1000 * 4096 * 2 / 2.039e12 * 1e6, 1e-9);
}

// Zero-bubble schedules split the backward: W (weight gradient) = the weight GEMMs once more, B = the rest.
TEST(AnalyticCostTest, WeightGradientIsTheWeightGemmsOfTheBackward) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  AnalyticCostModel cost(H100(), {.tp = 4});
  const LayerCost c = cost.Cost(m, FirstOf(layers, 2, LayerKind::kTransformer), w);
  // 390,070,272 matmul params (InternLm2BlockOn4096TokensWithTp4): W = 2 * tokens * params / tp FLOPs.
  EXPECT_NEAR(c.bwd_weight_time_us, 2.0 * 4096 * 390070272 / 4 / (989e12 * 0.5) * 1e6, 1e-6);
  // B keeps the attention core's backward twice and the input-gradient GEMMs once.
  const double attn_us = 4.0 * 6144 * 4096 * 4096 / 2 / 4 / (989e12 * 0.5) * 1e6;
  EXPECT_NEAR(c.bwd_time_us - c.bwd_weight_time_us, c.bwd_weight_time_us + 2 * attn_us, 1e-6);
  // Every layer: 0 <= W <= backward; the LM head and projectors are all GEMMs (W = forward time).
  ModelSpec o = Load("orchmllm-18b");
  const std::vector<Sample> samples = {S(2, 300, 12.0), S(1, 800), S(0, 40, 31.0)};
  const std::vector<LayerWorkload> ow = ModelWorkloads(o, samples);
  AnalyticCostModel tp1(H100());
  for (const Layer& l : Layers(o)) {
    SCOPED_TRACE(l.label);
    const LayerCost x = tp1.Cost(o, l, ow[l.component]);
    EXPECT_GT(x.bwd_weight_time_us, 0);
    EXPECT_LE(x.bwd_weight_time_us, x.bwd_time_us);
    if (l.kind == LayerKind::kHead || l.kind == LayerKind::kProjector) {
      EXPECT_NEAR(x.bwd_weight_time_us, x.fwd_time_us, 1e-9 * x.fwd_time_us);
    }
  }
}

// A fixed time per kernel (DeviceSpec::kernel_overhead_us) does not shrink with tp: small shards run below
// FLOPs / tp, and the smaller the workload the larger the loss.
TEST(AnalyticCostTest, KernelOverheadsMakeSmallTpShardsLessEfficient) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 2, LayerKind::kTransformer);
  DeviceSpec dev = H100();
  dev.kernel_overhead_us = 4;
  auto eff = [&](int64_t tokens) {  // time at tp 1 over tp x time at tp 4
    LayerWorkload w{tokens, static_cast<double>(tokens) * tokens, 1};
    return AnalyticCostModel(dev, {.tp = 1}).Cost(m, block, w).fwd_time_us /
           (4 * AnalyticCostModel(dev, {.tp = 4}).Cost(m, block, w).fwd_time_us);
  };
  LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  const LayerCost plain = AnalyticCostModel(H100(), {.tp = 4}).Cost(m, block, w);
  const LayerCost over = AnalyticCostModel(dev, {.tp = 4}).Cost(m, block, w);
  EXPECT_EQ(KernelsOf(m, block).fwd, 11);  // InternLM2: a causal decoder (rotary), no q/k norm
  EXPECT_NEAR(over.fwd_time_us, plain.fwd_time_us + 11 * 4.0, 1e-9);
  EXPECT_NEAR(over.bwd_time_us, plain.bwd_time_us + 22 * 4.0, 1e-9);
  EXPECT_NEAR(over.bwd_weight_time_us, plain.bwd_weight_time_us + 4 * 4.0, 1e-9);
  EXPECT_EQ(over.fwd_flops, plain.fwd_flops);  // MFU counts the model's FLOPs, not the overhead
  EXPECT_LT(eff(4096), 1.0);
  EXPECT_LT(eff(256), eff(4096));
  EXPECT_LT(eff(16), eff(256));
  // Without the term tp scales perfectly (the heads divide by 4); an empty workload launches nothing.
  EXPECT_NEAR(AnalyticCostModel(H100(), {.tp = 1}).Cost(m, block, w).fwd_time_us, 4 * plain.fwd_time_us,
              1e-6);
  EXPECT_EQ(AnalyticCostModel(dev, {.tp = 4}).Cost(m, block, LayerWorkload{}).fwd_time_us, 0);
  // Kernel counts per layer kind (cost_model.h).
  ModelSpec llava = Load("llava-1.5-7b");
  const std::vector<Layer> ll = Layers(llava);
  EXPECT_EQ(KernelsOf(llava, FirstOf(ll, 1, LayerKind::kProjector)).fwd, 4);  // two Linear layers
  EXPECT_EQ(KernelsOf(llava, ll.back()).bwd, 6);
  for (const char* n : {"a100-2x200g", "a100-4x200g", "a100-8x200g"})
    EXPECT_DOUBLE_EQ(LoadCluster(n)->device.kernel_overhead_us, 4) << n;
  // Hopper: fitted to the measured H200 kernel table (reports/kernels/h200).
  for (const char* n : {"h100-8x400g", "h200-8x400g"})
    EXPECT_DOUBLE_EQ(LoadCluster(n)->device.kernel_overhead_us, 5.4) << n;
  EXPECT_EQ(LoadCluster("cpu-2vcpu-gloo")->device.kernel_overhead_us, 0);
}

// ---- Compute curves (DeviceSpec::gemm_peak_fraction and the rest; cost_model.h) ----

DeviceSpec CurveH100() {
  DeviceSpec d = H100();
  d.gemm_peak_fraction = 0.8;
  d.gemm_half_dim = 100;
  d.attn_fwd_peak_fraction = 0.5;
  d.attn_bwd_peak_fraction = 0.4;
  d.attn_half_span = 128;
  d.attn_half_head_dim = 16;
  d.hbm_peak_fraction = 0.85;
  return d;
}
double Sat(double d, double half) { return d / (d + half); }

// A large GEMM runs at peak x gemm_peak_fraction (the saturation tends to 1); a small dimension slows it per
// FLOP by d / (d + gemm_half_dim); a skinny one is bound by its bytes at the achieved HBM bandwidth.
TEST(ComputeCurveTest, GemmRateFollowsTheSaturationCurveAndTheRoofline) {
  const AnalyticCostModel c(CurveH100());
  const double big = 32768;
  const double big_us = c.GemmUs(big, big, big);
  const double rate = 2 * big * big * big / (big_us * 1e-6);
  EXPECT_NEAR(rate, 989e12 * 0.8 * std::pow(Sat(big, 100), 3), 1e-6 * rate);
  EXPECT_GT(rate, 0.99 * 989e12 * 0.8);  // the fixed 0.5 of the old model could not pass 50%
  // m = 64: 64 / 164 of the rate of m = 8192 (n, k = 8192 both), per FLOP, on a device whose HBM keeps the
  // roofline out of the way (on the H100's it binds: 64 FLOPs per byte are below its ridge, next check).
  DeviceSpec fast_hbm = CurveH100();
  fast_hbm.hbm_bytes_per_s = 1e15;
  const AnalyticCostModel f(fast_hbm);
  const double small_us = f.GemmUs(64, 8192, 8192), ref_us = f.GemmUs(8192, 8192, 8192);
  const double per_flop_small = small_us / (2.0 * 64 * 8192 * 8192),
               per_flop_ref = ref_us / (2.0 * 8192 * 8192 * 8192);
  EXPECT_NEAR(per_flop_small / per_flop_ref, Sat(8192, 100) / Sat(64, 100), 1e-9);
  EXPECT_GT(per_flop_small, 2 * per_flop_ref);
  EXPECT_NEAR(c.GemmUs(64, 8192, 8192), 2.0 * (2 * 64 * 8192 + 8192.0 * 8192) / (3.35e12 * 0.85) * 1e6, 1e-9);
  // m = 1 (a matrix-vector product): the weight's bytes at the achieved HBM bandwidth.
  const double bytes = 2.0 * (1 * 8192 + 8192.0 * 8192 + 1 * 8192);
  EXPECT_NEAR(c.GemmUs(1, 8192, 8192), bytes / (3.35e12 * 0.85) * 1e6, 1e-9);
}

// The attention core's time per FLOP falls with the span as s / (s + attn_half_span); the backward, which
// recomputes the scores (2.5x the forward's FLOPs), takes more than twice the forward; causal halves the pairs.
TEST(ComputeCurveTest, AttentionGrowsWithSpanPerTheCurve) {
  const AnalyticCostModel c(CurveH100());
  const double heads = 32, hd = 128;
  auto fwd = [&](double s) { return c.AttentionFwdUs(heads, hd, s * s, s, false); };
  const double rate = 989e12 * 0.5 * Sat(hd, 16);
  EXPECT_NEAR(fwd(4096), 4 * heads * hd * 4096.0 * 4096.0 / (rate * Sat(4096, 128)) * 1e6, 1e-6);
  // Per pair, span 256 costs (1 + 128/256) / (1 + 128/4096) times span 4096.
  EXPECT_NEAR((fwd(256) / (256.0 * 256)) / (fwd(4096) / (4096.0 * 4096)), 1.5 / (1 + 128.0 / 4096), 1e-9);
  // Eight spans of 512 (packed, varlen): the sum over spans, exactly.
  EXPECT_NEAR(c.AttentionFwdUs(heads, hd, 8 * 512.0 * 512, 8 * 512, false), 8 * fwd(512), 1e-9);
  // Causal: half the pairs, but each query tile's fixed cost (the attn_half_span term: loading Q, the softmax
  // rescale, writing O, the masked diagonal tile) whole; at span 256 causal takes 2/3 of the full square, not 1/2.
  EXPECT_NEAR(c.AttentionFwdUs(heads, hd, 4096.0 * 4096, 4096, true),
              4 * heads * hd * (0.5 * 4096.0 * 4096 + 128 * 4096.0) / rate * 1e6, 1e-6);
  EXPECT_NEAR(c.AttentionFwdUs(heads, hd, 256.0 * 256, 256, true) / fwd(256), (0.5 + 0.5) / (1 + 0.5), 1e-9);
  const double bwd = c.AttentionBwdUs(heads, hd, 4096.0 * 4096, 4096, false);
  EXPECT_NEAR(bwd / fwd(4096), 2.5 * 0.5 / 0.4, 1e-9);
  EXPECT_GT(bwd, 2 * fwd(4096));
  // Head dim 64 runs slower per FLOP than 128.
  EXPECT_GT(c.AttentionFwdUs(2 * heads, 64, 4096.0 * 4096, 4096, false), fwd(4096));
  // In a layer: the LLM block's time grows with the span by exactly the attention core's.
  ModelSpec m = Load("llama-3-8b");
  const std::vector<Layer> layers = Layers(m);  // FirstOf returns a reference into it: keep it alive
  const Layer& block = FirstOf(layers, 0, LayerKind::kTransformer);
  const LayerCost a = c.Cost(m, block, LayerWorkload{8192, 8192.0 * 8192, 1});
  const LayerCost b = c.Cost(m, block, LayerWorkload{8192, 8.0 * 1024 * 1024, 8});
  EXPECT_NEAR(a.fwd_time_us - b.fwd_time_us,
              c.AttentionFwdUs(32, 128, 8192.0 * 8192, 8192, true) -
                  c.AttentionFwdUs(32, 128, 8.0 * 1024 * 1024, 8192, true),
              1e-6);
}

// Memory-bound kernels take their bytes over the achieved HBM bandwidth: the LLM embedding lookup, and the
// block's norms, residual adds, rotary and SwiGLU (the block minus its GEMMs and attention core).
TEST(ComputeCurveTest, MemoryBoundOpsTakeTheirBytesOverTheBandwidth) {
  const AnalyticCostModel c(CurveH100());
  const double hbm = 3.35e12 * 0.85;
  EXPECT_DOUBLE_EQ(c.MemoryUs(1e9), 1e9 / hbm * 1e6);
  ModelSpec m = Load("llama-3-8b");
  const std::vector<Layer> layers = Layers(m);
  const LayerWorkload w{8192, 8192.0 * 8192, 1};
  const LayerCost emb = c.Cost(m, FirstOf(layers, 0, LayerKind::kEmbedding), w);
  EXPECT_NEAR(emb.fwd_time_us, 2.0 * 2 * 8192 * 4096 / hbm * 1e6, 1e-9);
  EXPECT_NEAR(emb.bwd_time_us, 2 * emb.fwd_time_us, 1e-9);
  // Block, tp 1: (q, kv) = (32, 8) heads of 128, ffn 14336 (SwiGLU). Bytes per token (cost_model.h):
  // 2 norms x 4h + 2 residuals x 7h, rotary 4 (q + kv) d, SwiGLU 6 ffn.
  const double h = 4096, T = 8192, qk = (32 + 8) * 128.0, ffn = 14336;
  const double gemm_us = c.GemmUs(T, (32 + 16) * 128.0, h) + c.GemmUs(T, h, 32 * 128.0) +
                         c.GemmUs(T, 2 * ffn, h) + c.GemmUs(T, h, ffn);
  const double attn_us = c.AttentionFwdUs(32, 128, T * T, T, true);
  const double bytes = T * (2 * 4 * h + 2 * 7 * h + 4 * qk + 6 * ffn);
  const LayerCost blk = c.Cost(m, FirstOf(layers, 0, LayerKind::kTransformer), w);
  EXPECT_NEAR(blk.fwd_time_us, gemm_us + attn_us + bytes / hbm * 1e6, 1e-6);
  const double bwd_bytes = T * (2 * 6 * h + 2 * 5 * h + 4 * qk + 10 * ffn);
  EXPECT_NEAR(blk.bwd_time_us,
              2 * gemm_us + c.AttentionBwdUs(32, 128, T * T, T, true) + bwd_bytes / hbm * 1e6, 1e-6);
  EXPECT_NEAR(blk.bwd_weight_time_us, gemm_us, 1e-6);  // W: the four weight-gradient GEMMs
}

// PyTorch eager kernels (KernelImpl, model.kernels eager): the same block with each family's op-by-op bytes
// (cost_model.h: RMSNorm 36 / 92, rotary 20 / 30, SwiGLU 10 / 18, residual 6 / 6 per element) and q, k, v and
// gate, up as separate GEMMs; the head's fp32 loss 14 / 22 per logit. Each family alone changes only its term.
TEST(ComputeCurveTest, EagerKernelsPriceEachOpsBytesAndSplitProjections) {
  AnalyticOptions eager_options;
  eager_options.kernels = EagerKernels();
  const AnalyticCostModel fused(CurveH100()), eager(CurveH100(), eager_options);
  const double hbm = 3.35e12 * 0.85;
  ModelSpec m = Load("llama-3-8b");
  const std::vector<Layer> layers = Layers(m);
  const LayerWorkload w{8192, 8192.0 * 8192, 1};
  const double h = 4096, T = 8192, qk = (32 + 8) * 128.0, ffn = 14336;
  const double gemm_us = eager.GemmUs(T, 32 * 128.0, h) + 2 * eager.GemmUs(T, 8 * 128.0, h) +
                         eager.GemmUs(T, h, 32 * 128.0) + 2 * eager.GemmUs(T, ffn, h) +
                         eager.GemmUs(T, h, ffn);
  const double bytes = T * (2 * 36 * h + 2 * 6 * h + 20 * qk + 10 * ffn);
  const Layer& block = FirstOf(layers, 0, LayerKind::kTransformer);
  const LayerCost blk = eager.Cost(m, block, w);
  EXPECT_NEAR(blk.fwd_time_us, gemm_us + eager.AttentionFwdUs(32, 128, T * T, T, true) + bytes / hbm * 1e6,
              1e-6);
  const double bwd_bytes = T * (2 * 92 * h + 2 * 6 * h + 30 * qk + 18 * ffn);
  EXPECT_NEAR(blk.bwd_time_us,
              2 * gemm_us + eager.AttentionBwdUs(32, 128, T * T, T, true) + bwd_bytes / hbm * 1e6, 1e-6);
  EXPECT_NEAR(blk.bwd_weight_time_us, gemm_us, 1e-6);
  EXPECT_GT(blk.fwd_time_us, fused.Cost(m, block, w).fwd_time_us);
  // One family at a time: the RMSNorm alone adds 2 x (36 - 4) bytes per hidden element forward.
  AnalyticOptions norm_only;
  norm_only.kernels.eager_norm = true;
  const AnalyticCostModel norm_model(CurveH100(), norm_only);
  EXPECT_NEAR(norm_model.Cost(m, block, w).fwd_time_us - fused.Cost(m, block, w).fwd_time_us,
              T * 2 * (36 - 4) * h / hbm * 1e6, 1e-6);
  // A LayerNorm model (GPT) runs ATen's one layer_norm kernel either way: eager_norm changes nothing.
  ModelSpec gpt = Load("gpt-1.7b");
  const std::vector<Layer> gpt_layers = Layers(gpt);
  const Layer& gpt_block = FirstOf(gpt_layers, 0, LayerKind::kTransformer);
  EXPECT_DOUBLE_EQ(norm_model.Cost(gpt, gpt_block, w).fwd_time_us, fused.Cost(gpt, gpt_block, w).fwd_time_us);
  // Head: the final RMSNorm and the loss in eager form.
  const Layer& head = layers.back();
  ASSERT_EQ(head.kind, LayerKind::kHead);
  const double vocab = static_cast<double>(m.components.at(head.component).vocab);
  EXPECT_NEAR(eager.Cost(m, head, w).fwd_time_us - fused.Cost(m, head, w).fwd_time_us,
              T * ((36 - 4) * h + (14 - 8) * vocab) / hbm * 1e6, 1e-6);
  EXPECT_NEAR(eager.Cost(m, head, w).bwd_time_us - fused.Cost(m, head, w).bwd_time_us,
              T * ((92 - 6) * h + (22 - 6) * vocab) / hbm * 1e6, 1e-6);
}

// Kernel launches per layer, fused (Megatron-LM) and eager (KernelImpl; counts in cost_model.h).
TEST(AnalyticCostTest, EagerKernelsLaunchMoreKernels) {
  ModelSpec m = Load("llama-3-8b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 0, LayerKind::kTransformer);
  const KernelCounts fused = KernelsOf(m, block);
  EXPECT_EQ(fused.fwd, 11);
  EXPECT_EQ(fused.bwd, 22);
  EXPECT_EQ(fused.bwd_weight, 4);
  // Two RMSNorms of 8 (15 backward), q/k/v 3 + output 1 + gate/up 2 + down 1 GEMMs, attention 1, two residual adds, SwiGLU 2,
  // rotary 5 on q and on k (9 backward).
  const KernelCounts eager = KernelsOf(m, block, EagerKernels());
  EXPECT_EQ(eager.fwd, 2 * 8 + 7 + 1 + 2 + 2 + 10);
  EXPECT_EQ(eager.bwd, 2 * 15 + 2 * 7 + 2 + 4 + 3 + 18);
  EXPECT_EQ(eager.bwd_weight, 7);
  EXPECT_EQ(KernelsOf(m, layers.back(), EagerKernels()).fwd, 8 + 1 + 3);
  // The fused launches still price at the fixed per-kernel overhead.
  DeviceSpec dev = CurveH100();
  dev.kernel_overhead_us = 4;
  AnalyticOptions eager_options;
  eager_options.kernels = EagerKernels();
  const LayerWorkload w{16, 16.0 * 16, 1};
  const double d_fwd = AnalyticCostModel(dev, eager_options).Cost(m, block, w).fwd_time_us -
                       AnalyticCostModel(CurveH100(), eager_options).Cost(m, block, w).fwd_time_us;
  EXPECT_NEAR(d_fwd, eager.fwd * 4.0, 1e-9);
}

// The kernels as summaries name them.
TEST(AnalyticCostTest, KernelImplTextNamesTheEagerFamilies) {
  EXPECT_EQ(KernelImplText(KernelImpl{}), "fused");
  EXPECT_EQ(KernelImplText(EagerKernels()), "eager");
  KernelImpl megatron_deepspeed;  // OmniBal's scenarios
  megatron_deepspeed.eager_rotary = megatron_deepspeed.eager_activation = true;
  EXPECT_EQ(KernelImplText(megatron_deepspeed), "eager: rotary, activation");
  KernelImpl titan = EagerKernels();  // torchtitan with fused_rmsnorm
  titan.eager_norm = false;
  EXPECT_EQ(KernelImplText(titan), "eager: rotary, activation, residual, loss; split projections");
  KernelImpl split;
  split.split_projections = true;
  EXPECT_EQ(KernelImplText(split), "split projections");
  KernelImpl chunked;  // OrchMLLM's scenarios
  chunked.chunked_logits = true;
  EXPECT_EQ(KernelImplText(chunked), "chunked logits");
  chunked.eager_loss = true;
  EXPECT_EQ(KernelImplText(chunked), "eager: loss; chunked logits");
  EXPECT_FALSE(EagerKernels().chunked_logits);
}

// The optimizer step (mixed-precision Adam + gradient clipping, 34 bytes per parameter) at the achieved HBM
// bandwidth, over the parameters the rank updates: ZeRO-1 and above divide them by DP.
TEST(ComputeCurveTest, OptimizerStepIsItsBytesOverTheBandwidthShardedByZero) {
  const AnalyticCostModel c(CurveH100());
  const double params = 20e9 / 8 / 4;  // a 20B model's stage at pp 4, tp 8
  EXPECT_NEAR(c.OptimizerStepUs(params), 34 * params / (3.35e12 * 0.85) * 1e6, 1e-6);
  EXPECT_DOUBLE_EQ(OptimizerParamsPerGpu(20e9 / 4, 8, 16, 0), params);
  EXPECT_DOUBLE_EQ(OptimizerParamsPerGpu(20e9 / 4, 8, 16, 1), params / 16);
  EXPECT_NEAR(c.OptimizerStepUs(OptimizerParamsPerGpu(20e9 / 4, 8, 16, 2)), c.OptimizerStepUs(params) / 16,
              1e-9);
  EXPECT_EQ(AnalyticCostModel(H100()).OptimizerStepUs(params), 0);  // no curve: the old model had none
}

// TP 8 splits a small model's GEMMs into narrow ones: less efficient per FLOP than TP 1 (with no launch cost
// at all); the fixed-efficiency model scales perfectly.
TEST(ComputeCurveTest, Tp8OnASmallModelIsLessEfficientPerFlop) {
  ModelSpec m = Load("clip-vit-l-14-336");      // hidden 1024, 16 heads
  const std::vector<Layer> layers = Layers(m);  // FirstOf returns a reference into it: keep it alive
  const Layer& block = FirstOf(layers, 0, LayerKind::kTransformer);
  const LayerWorkload w{2048, 2048.0 * 2048, 1};
  const double t1 = AnalyticCostModel(CurveH100(), {.tp = 1}).Cost(m, block, w).fwd_time_us;
  const double t8 = AnalyticCostModel(CurveH100(), {.tp = 8}).Cost(m, block, w).fwd_time_us;
  EXPECT_GT(8 * t8, 1.1 * t1);  // per FLOP: (flops / 8) / t8 < flops / t1
  const double f1 = AnalyticCostModel(H100(), {.tp = 1}).Cost(m, block, w).fwd_time_us;
  const double f8 = AnalyticCostModel(H100(), {.tp = 8}).Cost(m, block, w).fwd_time_us;
  EXPECT_NEAR(8 * f8, f1, 1e-9 * f1);
}

// A device without a curve (the CPU preset) keeps the old fixed-efficiency times exactly: every FLOP at peak x
// efficiency, the LLM embedding at the raw HBM bandwidth; options.efficiency forces that model on a curve too.
TEST(ComputeCurveTest, DeviceWithoutCurveKeepsTheFixedEfficiencyTimes) {
  ModelSpec m = Load("orchmllm-18b");
  const std::vector<Sample> samples = {S(2, 300, 12.0), S(1, 800), S(0, 40, 31.0)};
  const std::vector<LayerWorkload> w = ModelWorkloads(m, samples);
  Result<ClusterSpec> cpu = LoadCluster("cpu-2vcpu-gloo");
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(cpu->device.has_compute_curve());
  const AnalyticCostModel old(cpu->device, {.tp = 2});
  DeviceSpec curved = CurveH100();
  const AnalyticCostModel forced(curved, {.tp = 2, .efficiency = 0.5}), plain(H100(), {.tp = 2});
  for (const Layer& l : Layers(m)) {
    SCOPED_TRACE(l.label);
    const LayerCost x = old.Cost(m, l, w[l.component]);
    const Component& c = m.components[l.component];
    if (l.kind == LayerKind::kEmbedding && c.kind == ComponentKind::kLlm) {
      EXPECT_DOUBLE_EQ(x.fwd_time_us, 2.0 * w[l.component].tokens * c.tf.hidden * 2.0 / 10e9 * 1e6 / 2);
    } else if (l.kind != LayerKind::kTransformer || (c.tf.heads % 2 == 0 && c.tf.kv_heads % 2 == 0)) {
      EXPECT_NEAR(x.fwd_time_us, x.fwd_flops / 2 / (83.2e9 * 0.5) * 1e6, 1e-9 * x.fwd_time_us);
      EXPECT_NEAR(x.bwd_time_us, 2 * x.fwd_time_us, 1e-9 * x.fwd_time_us);
    }
    const LayerCost f = forced.Cost(m, l, w[l.component]), p = plain.Cost(m, l, w[l.component]);
    EXPECT_EQ(f.fwd_time_us, p.fwd_time_us);
    EXPECT_EQ(f.bwd_time_us, p.bwd_time_us);
    EXPECT_EQ(f.bwd_weight_time_us, p.bwd_weight_time_us);
  }
}

// Every GPU preset has a curve; the presets price a large GEMM above the old cap of 50% of peak.
TEST(ComputeCurveTest, GpuPresetsHaveCurves) {
  for (const char* n : {"a100-2x200g", "a100-4x200g", "a100-8x200g", "h100-8x400g", "h200-8x400g"}) {
    SCOPED_TRACE(n);
    Result<ClusterSpec> c = LoadCluster(n);
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(c->device.has_compute_curve());
    const AnalyticCostModel cost(c->device);
    EXPECT_GT(2.0 * 8192 * 8192 * 8192 / (cost.GemmUs(8192, 8192, 8192) * 1e-6), 0.6 * c->device.peak_flops);
  }
}

// ---- Coefficient table ----

TEST(CoefficientCostTest, ParseCostFormatRoundTrip) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::string csv =
      "# mmtwin-cost-coefficients v1\n"
      "source,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us\n"
      "internlm2-20b,transformer,35,0.5,1e-6,70,1.0,2e-6\n"
      "*,embedding,1,0,0,2,0,0\n"
      "*,projector,3,0.01,0,6,0.02,0\n"
      "*,head,4,0.1,0,8,0.2,0\n";
  Result<CoefficientCostModel> r = CoefficientCostModel::Parse(csv, "c.csv", AnalyticCostModel(A100()));
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::vector<Layer> layers = Layers(m);
  LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  LayerCost c = r->Cost(m, FirstOf(layers, 2, LayerKind::kTransformer), w);
  EXPECT_DOUBLE_EQ(c.fwd_time_us, 35 + 0.5 * 4096 + 1e-6 * 4096.0 * 4096.0);
  EXPECT_DOUBLE_EQ(c.bwd_time_us, 70 + 1.0 * 4096 + 2e-6 * 4096.0 * 4096.0);
  // Bytes and FLOPs still analytic.
  LayerCost a = AnalyticCostModel(A100()).Cost(m, FirstOf(layers, 2, LayerKind::kTransformer), w);
  EXPECT_EQ(c.act_bytes, a.act_bytes);
  EXPECT_DOUBLE_EQ(c.fwd_flops, a.fwd_flops);
  // The ViT blocks have no row: Supports names the missing type; Cost gives NaN.
  Status s = r->Supports(m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("'internvit-6b-448px-v1-5,transformer'"), std::string::npos)
      << s.error().message();
  EXPECT_TRUE(std::isnan(r->Cost(m, FirstOf(layers, 0, LayerKind::kTransformer), w).fwd_time_us));
  CoefficientCostModel full = *r;
  full.Set("*", LayerKind::kTransformer, TimeCoefficients{1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(full.Supports(m).ok());
  // The exact source wins over the wildcard.
  EXPECT_DOUBLE_EQ(full.Find("internlm2-20b", LayerKind::kTransformer)->fwd_c0_us, 35);
  EXPECT_DOUBLE_EQ(full.Find("other", LayerKind::kTransformer)->fwd_c0_us, 1);
  // Format -> Parse gives the same table.
  Result<CoefficientCostModel> again =
      CoefficientCostModel::Parse(full.Format(), "f.csv", AnalyticCostModel(A100()));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->Format(), full.Format());
}

TEST(CoefficientCostTest, Errors) {
  auto err = [](const std::string& text) {
    Result<CoefficientCostModel> r = CoefficientCostModel::Parse(text, "c.csv", AnalyticCostModel(A100()));
    return r.ok() ? std::string("OK") : r.error().message();
  };
  const std::string header =
      "# mmtwin-cost-coefficients v1\n"
      "source,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us\n";
  EXPECT_EQ(err(header + "x,transformer,1,2,3,4,5,6\n"), "OK");
  EXPECT_EQ(err(header + "x,mlp,1,2,3,4,5,6\n"),
            "c.csv:3: layer_kind: unknown layer kind 'mlp'; valid values are: embedding, transformer, "
            "projector, head, optimizer");
  EXPECT_EQ(err(header + "x,head,1,2,abc,4,5,6\n"),
            "c.csv:3: fwd_pair_us: 'abc' is not a finite number >= 0");
  // Issue 34: what was accepted with exit 0 before. A negative coefficient, a second row for one layer type, a
  // row that costs nothing, another format version, no version line.
  EXPECT_EQ(err(header + "x,head,1,-2,0,4,5,6\n"), "c.csv:3: fwd_token_us: '-2' is not a finite number >= 0");
  EXPECT_EQ(err(header + "x,head,1,2,3,4,5,6\ny,head,1,2,3,4,5,6\nx,head,1,1,1,1,1,1\n"),
            "c.csv:5: source: a second row for x,head (the first is on line 3)");
  EXPECT_EQ(err(header + "x,head,0,0,0,0,0,0\n"),
            "c.csv:3: fwd_c0_us: every time coefficient of the row is 0: the layer would cost nothing");
  EXPECT_EQ(
      err("# mmtwin-cost-coefficients v9\n" + header.substr(header.find('\n') + 1) + "x,head,1,2,3,4,5,6\n"),
      "c.csv:1: cost-coefficient format v9 is not supported (this mmtwin reads v1)");
  EXPECT_EQ(
      err(header.substr(header.find('\n') + 1) + "x,head,1,2,3,4,5,6\n"),
      "c.csv:1: missing the version line '# mmtwin-cost-coefficients v1' above the header (mmtwin calibrate "
      "writes it)");
  EXPECT_NE(err("# mmtwin-cost-coefficients v1\nsource,layer_kind\n").find("fwd_c0_us: missing column"),
            std::string::npos);
  EXPECT_NE(err(header + "x,head,1,2\n").find("c.csv:3:"), std::string::npos);
}

// The optimizer row (a measured optimizer step): c0 + c x parameters per GPU, round trip, and its errors.
TEST(CoefficientCostTest, OptimizerRowPricesTheMeasuredStep) {
  const std::string header =
      "# mmtwin-cost-coefficients v1\n"
      "source,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us\n";
  auto parse = [](const std::string& text) {
    return CoefficientCostModel::Parse(text, "c.csv", AnalyticCostModel(A100()));
  };
  auto err = [&](const std::string& text) {
    auto r = parse(text);
    return r.ok() ? std::string("OK") : r.error().message();
  };
  auto t = parse(header + "x,head,1,2,3,4,5,6\n*,optimizer,40,2e-05,0,0,0,0\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_TRUE(t->MeasuredOptimizerStepUs(1e9).has_value());
  EXPECT_DOUBLE_EQ(*t->MeasuredOptimizerStepUs(1e9), 40 + 2e-5 * 1e9);
  EXPECT_FALSE(t->MeasuredOptimizerStepUs(0).has_value());
  Result<CoefficientCostModel> again = parse(t->Format());
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->Format(), t->Format());
  EXPECT_NE(t->Format().find("\n*,optimizer,40,"), std::string::npos) << t->Format();
  // Without the row the caller prices the step (nullopt), as the analytic model does.
  EXPECT_FALSE(parse(header + "x,head,1,2,3,4,5,6\n")->MeasuredOptimizerStepUs(1e9).has_value());
  EXPECT_FALSE(AnalyticCostModel(A100()).MeasuredOptimizerStepUs(1e9).has_value());
  EXPECT_EQ(err(header + "x,optimizer,1,2,0,0,0,0\n"),
            "c.csv:3: source: the optimizer row's source is *, not 'x'");
  EXPECT_EQ(err(header + "*,optimizer,1,2,0,0,0,0\n*,optimizer,1,2,0,0,0,0\n"),
            "c.csv:4: layer_kind: a second optimizer row (the first is on line 3)");
  EXPECT_EQ(err(header + "*,optimizer,1,2,3,0,0,0\n"),
            "c.csv:3: fwd_pair_us: the optimizer row has fwd_c0_us and fwd_token_us (per parameter) only");
  EXPECT_EQ(err(header + "*,optimizer,0,0,0,0,0,0\n"),
            "c.csv:3: fwd_c0_us: the optimizer row's coefficients are both 0: the step would cost nothing");
  EXPECT_EQ(err(header + "*,optimizer,1,-2,0,0,0,0\n"),
            "c.csv:3: fwd_token_us: '-2' is not a finite number >= 0");
}

// The coefficient table's parse error ("OK" when it parses), and a table reads back to the same text.
std::string ParseError(const std::string& text) {
  Result<CoefficientCostModel> e = CoefficientCostModel::Parse(text, "c.csv", AnalyticCostModel(A100()));
  return e.ok() ? std::string("OK") : e.error().message();
}
void ExpectRoundTrip(const CoefficientCostModel& table) {
  Result<CoefficientCostModel> again =
      CoefficientCostModel::Parse(table.Format(), "f.csv", AnalyticCostModel(A100()));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->Format(), table.Format());
}

TEST(CoefficientCostTest, MemoryColumnsPriceActivationsPerRow) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::string head =
      "# mmtwin-cost-coefficients v1\n"
      "source,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us,act_c0_bytes,"
      "act_token_bytes,act_pair_bytes,kept_token_bytes\n";
  Result<CoefficientCostModel> r = CoefficientCostModel::Parse(
      head + "internlm2-20b,transformer,1,0,0,2,0,0,1000,300,0.5,24\n*,transformer,1,0,0,2,0,0,,,,\n",
      "c.csv", AnalyticCostModel(A100()));
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::vector<Layer> layers = Layers(m);
  LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  const LayerCost llm = r->Cost(m, FirstOf(layers, 2, LayerKind::kTransformer), w);
  EXPECT_EQ(llm.act_bytes, 1000 + 300 * 4096 + 4096 * 4096 / 2);
  EXPECT_EQ(llm.act_bytes_recompute, 24 * 4096);
  // The measured backward (2 us) is split into B and W in the analytic model's proportion.
  const LayerCost analytic =
      AnalyticCostModel(A100()).Cost(m, FirstOf(layers, 2, LayerKind::kTransformer), w);
  EXPECT_DOUBLE_EQ(llm.bwd_time_us, 2.0);
  EXPECT_NEAR(llm.bwd_weight_time_us, 2.0 * analytic.bwd_weight_time_us / analytic.bwd_time_us, 1e-12);
  // The row with empty memory cells keeps the analytic bytes.
  const Layer& vit = FirstOf(layers, 0, LayerKind::kTransformer);
  EXPECT_EQ(r->Cost(m, vit, w).act_bytes, AnalyticCostModel(A100()).Cost(m, vit, w).act_bytes);
  // Round trip keeps both kinds of row.
  ExpectRoundTrip(*r);
  auto err = ParseError;
  EXPECT_EQ(err(head + "x,head,1,2,3,4,5,6,1,2,,4\n"),
            "c.csv:3: act_c0_bytes: a row's memory cells are all four filled or all four empty");
  EXPECT_EQ(err(head + "x,head,1,2,3,4,5,6,1,-2,0,4\n"),
            "c.csv:3: act_token_bytes: '-2' is not a finite number >= 0");
  EXPECT_NE(err("# mmtwin-cost-coefficients "
                "v1\nsource,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us,"
                "act_c0_bytes\n")
                .find("act_token_bytes: missing column: the memory columns come all four or none"),
            std::string::npos);
}

TEST(CoefficientCostTest, WorkColumnsPriceTheBackwardWorkingMemoryPerRow) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::string head =
      "# mmtwin-cost-coefficients v1\n"
      "source,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us,work_c0_bytes,"
      "work_token_bytes,work_pair_bytes\n";
  Result<CoefficientCostModel> r = CoefficientCostModel::Parse(
      head + "internlm2-20b,transformer,1,0,0,2,0,0,500,40,0.25\n*,transformer,1,0,0,2,0,0,,,\n", "c.csv",
      AnalyticCostModel(A100()));
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::vector<Layer> layers = Layers(m);
  LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  EXPECT_EQ(r->Cost(m, FirstOf(layers, 2, LayerKind::kTransformer), w).bwd_work_bytes,
            500 + 40 * 4096 + 4096 * 4096 / 4);
  // Empty cells: the analytic model's closed form (AnalyticBackwardWorkBytes).
  const Layer& vit = FirstOf(layers, 0, LayerKind::kTransformer);
  EXPECT_EQ(r->Cost(m, vit, w).bwd_work_bytes, AnalyticBackwardWorkBytes(m, vit, w, 1));
  EXPECT_GT(r->Cost(m, vit, w).bwd_work_bytes, 0);
  ExpectRoundTrip(*r);
  auto err = ParseError;
  EXPECT_EQ(err(head + "x,head,1,2,3,4,5,6,1,,0\n"),
            "c.csv:3: work_c0_bytes: a row's working-memory cells are all three filled or all three empty");
  EXPECT_EQ(err(head + "x,head,1,2,3,4,5,6,1,2,-1\n"),
            "c.csv:3: work_pair_bytes: '-1' is not a finite number >= 0");
  EXPECT_NE(err("# mmtwin-cost-coefficients "
                "v1\nsource,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us,"
                "work_c0_bytes\n")
                .find("work_token_bytes: missing column: the working-memory columns come all three or none"),
            std::string::npos);
}

// Backward working memory (cost_model.h AnalyticBackwardWorkBytes): the closed forms per layer kind.
TEST(AnalyticCostTest, BackwardWorkingMemoryClosedForms) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  AnalyticCostModel tp4(H100(), {.tp = 4});
  // InternLM2-20B block (SwiGLU, ffn 16384, 48 heads, 8 KV heads of 128): the MLP's gradients of FC1's output
  // (gate and up) and of FC2's input beat the attention's dQ, dK, dV and fp32 dQ; plus the whole output gradient.
  const int64_t mlp = 2LL * 4096 * (2 * 16384 + 16384) / 4;
  const int64_t attn = 2LL * 4096 * (48 + 2 * 8) * 128 / 4 + 4LL * 4096 * 48 * 128 / 4;
  ASSERT_GT(mlp, attn);
  EXPECT_EQ(tp4.Cost(m, FirstOf(layers, 2, LayerKind::kTransformer), w).bwd_work_bytes,
            mlp + 2LL * 4096 * 6144);
  // The LM head: the fp32 logits' gradient and its bf16 copy, vocabulary-parallel over TP (92553 of InternLM2).
  const Layer& head = layers.back();
  ASSERT_EQ(head.kind, LayerKind::kHead);
  const int64_t vocab = m.components[head.component].vocab;
  const LayerCost hc = tp4.Cost(m, head, w);
  EXPECT_EQ(hc.bwd_work_bytes, (4LL + 2LL) * 4096 * vocab / 4);
  // ... at least the fp32 logits the forward stores for the loss (act_bytes counts them).
  EXPECT_GE(hc.bwd_work_bytes, 4LL * 4096 * vocab / 4);
  // Projector (InternVL's MLP: widest Linear), embedding: their output's gradient.
  const Layer& proj = FirstOf(layers, 1, LayerKind::kProjector);
  const std::vector<int64_t>& d = m.components[1].projector_dims;
  int64_t widest = 0;
  for (size_t i = 0; i + 1 < d.size(); ++i) widest = std::max(widest, d[i] + d[i + 1]);
  EXPECT_EQ(tp4.Cost(m, proj, LayerWorkload{1000, 0, 0}).bwd_work_bytes, 2LL * 1000 * widest / 4);
  EXPECT_EQ(tp4.Cost(m, FirstOf(layers, 2, LayerKind::kEmbedding), w).bwd_work_bytes, 2LL * 4096 * 6144 / 4);
  EXPECT_EQ(tp4.Cost(m, head, LayerWorkload{}).bwd_work_bytes, 0);
}

// Chunked logits (Liger's fused linear cross-entropy): the head holds the norm's input, its input's gradient and
// its weight's gradient instead of the fp32 logits, and its transient is one chunk's bf16 logits.
TEST(AnalyticCostTest, ChunkedLogitsHoldOneChunkInsteadOfTheVocabulary) {
  // Liger's own example (fused_linear_cross_entropy.py): BT = 4096 x 4, V = 32000, H = 4096 -> 2048 tokens.
  EXPECT_EQ(ChunkedLogitsTokens(4096 * 4, 32000, 4096), 2048);
  EXPECT_EQ(ChunkedLogitsTokens(1000, 32000, 4096), 128);  // ceil(1000 / 8) = 125 -> the next power of 2
  EXPECT_EQ(ChunkedLogitsTokens(100, 1000, 4096), 100);    // one chunk, never more than the tokens
  EXPECT_EQ(ChunkedLogitsTokens(0, 32000, 4096), 0);
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& head = layers.back();
  ASSERT_EQ(head.kind, LayerKind::kHead);
  const int64_t vocab = m.components[head.component].vocab, h = 6144;  // InternLM2-20B: 92,553 x 6,144
  const LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  AnalyticOptions chunked_options{.tp = 4};
  chunked_options.kernels.chunked_logits = true;
  AnalyticCostModel whole(CurveH100(), {.tp = 4}), chunked(CurveH100(), chunked_options);
  const LayerCost a = whole.Cost(m, head, w), b = chunked.Cost(m, head, w);
  // ceil(92553 / 6144) = 16 -> chunks of ceil(4096 / 16) = 256 tokens.
  ASSERT_EQ(ChunkedLogitsTokens(4096, vocab, h), 256);
  EXPECT_EQ(b.bwd_work_bytes, 2LL * 256 * vocab / 4);
  EXPECT_EQ(a.act_bytes, (4LL * 4096 * h + 4LL * 4096 * vocab) / 4);
  EXPECT_EQ(b.act_bytes, (4LL * 4096 * h + 2LL * vocab * h) / 4);
  EXPECT_EQ(b.act_bytes_recompute, a.act_bytes_recompute);
  // The same FLOPs; the loss moves 4 bytes per logit in the forward instead of 8 + 6, at the achieved HBM rate.
  EXPECT_EQ(b.fwd_flops, a.fwd_flops);
  const double logits = 4096.0 * static_cast<double>(vocab) / 4, hbm = 3.35e12 * 0.85;
  EXPECT_NEAR(a.fwd_time_us - b.fwd_time_us, logits * (8 - 4) / hbm * 1e6, 1e-6);
  EXPECT_NEAR(a.bwd_time_us - b.bwd_time_us, logits * 6 / hbm * 1e6, 1e-6);
  // The loss is inside the fused kernel: eager_loss changes nothing then.
  chunked_options.kernels.eager_loss = true;
  const LayerCost c = AnalyticCostModel(CurveH100(), chunked_options).Cost(m, head, w);
  EXPECT_EQ(c.bwd_work_bytes, b.bwd_work_bytes);
  EXPECT_EQ(c.act_bytes, b.act_bytes);
  EXPECT_DOUBLE_EQ(c.fwd_time_us, b.fwd_time_us);
  EXPECT_DOUBLE_EQ(c.bwd_time_us, b.bwd_time_us);
}

TEST(AnalyticCostTest, TpThatDoesNotDivideTheHeadsPricesPaddedHeads) {
  // InternViT-6B: 25 heads of 128, hidden 3200, MLP 2*3200*12800. At tp 2 the busiest rank holds 13 query and 13
  // KV heads; the MLP splits evenly. The model's FLOPs (for MFU) stay unpadded.
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 0, LayerKind::kTransformer);
  LayerWorkload w = ComponentWorkload(m, 0, std::vector<Sample>{S(1, 0)});
  AnalyticCostModel tp2(A100(), {.tp = 2});
  const LayerCost c = tp2.Cost(m, block, w);
  const double attn_rank = 2.0 * 3200 * (13 + 13) * 128, mlp = 2.0 * 3200 * 12800;
  const double rank_flops = 2.0 * 1025 * (attn_rank + mlp / 2) + 4.0 * 13 * 128 * 1025 * 1025;
  EXPECT_DOUBLE_EQ(c.fwd_flops, 2.0 * 1025 * 122880000 + 4.0 * 3200 * 1025 * 1025);
  EXPECT_NEAR(c.fwd_time_us, rank_flops / (312e12 * 0.5) * 1e6, 1e-6);
  EXPECT_GT(c.fwd_time_us, c.fwd_flops / 2 / (312e12 * 0.5) * 1e6 * 1.01);  // padding costs >1%
  EXPECT_NEAR(c.bwd_time_us, 2 * c.fwd_time_us, 1e-9);
  const double other_params = static_cast<double>(block.params) - 4.0 * 3200 * 3200 - mlp;  // norms, biases
  EXPECT_EQ(c.param_bytes, static_cast<int64_t>(std::ceil(other_params + mlp + 2.0 * attn_rank)));
}

TEST(AnalyticCostTest, KvHeadsFewerThanTpAreReplicated) {
  // InternLM2-20B: 48 query heads, 8 KV heads of 128, hidden 6144. At tp 16 a rank holds 3 query heads and one
  // (replicated) KV head instead of half of one.
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 2, LayerKind::kTransformer);
  LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  AnalyticCostModel tp16(H100(), {.tp = 16});
  const LayerCost c = tp16.Cost(m, block, w);
  const double mlp = 3.0 * 6144 * 16384, attn_rank = 2.0 * 6144 * (3 + 1) * 128;
  const double rank_flops = 2.0 * 4096 * (attn_rank + mlp / 16) + 4.0 * 3 * 128 * 4096 * 4096 / 2;
  EXPECT_NEAR(c.fwd_time_us, rank_flops / (989e12 * 0.5) * 1e6, 1e-6);
  // tp 8 divides both: exactly 1/tp of the work, as before.
  AnalyticCostModel tp8(H100(), {.tp = 8});
  const LayerCost d = tp8.Cost(m, block, w);
  EXPECT_NEAR(d.fwd_time_us, d.fwd_flops / 8 / (989e12 * 0.5) * 1e6, 1e-6);
  EXPECT_EQ(d.param_bytes, 2 * block.params / 8);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// Selective recomputation (Korthikanti et al. 2022 §4.2, Table 2): with unfused attention the score activations
// (5·a·pairs bytes per layer, / tp) are not stored and the backward pays the attention core's forward once more
// (4·h·pairs, halved when causal, / tp); with flash attention nothing changes.
TEST(AnalyticCostTest, SelectiveRecomputeDropsTheScoresAndRecomputesTheAttentionCore) {
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 2, LayerKind::kTransformer);
  LayerWorkload w{4096, 4096.0 * 4096.0, 1};
  AnalyticCostModel unfused(H100(), {.tp = 4, .flash_attention = false});
  AnalyticCostModel selective(H100(), {.tp = 4, .flash_attention = false, .selective_recompute = true});
  const LayerCost u = unfused.Cost(m, block, w), s = selective.Cost(m, block, w);
  EXPECT_EQ(u.act_bytes - s.act_bytes, 5LL * 48 * 4096 * 4096 / 4);
  EXPECT_EQ(s.act_bytes, 34LL * 4096 * 6144 / 4);  // Table 2, TP + SP + selective: 34 sbh / t
  const double core_us = 4.0 * 6144 * 4096 * 4096 / 2 / 4 / unfused.achieved_flops() * 1e6;
  EXPECT_NEAR(s.bwd_time_us - u.bwd_time_us, core_us, 1e-6);
  EXPECT_DOUBLE_EQ(s.fwd_time_us, u.fwd_time_us);
  EXPECT_DOUBLE_EQ(s.bwd_weight_time_us, u.bwd_weight_time_us);
  // Flash attention stores no scores and already recomputes them: selective changes nothing.
  AnalyticCostModel flash(H100(), {.tp = 4}), flash_sel(H100(), {.tp = 4, .selective_recompute = true});
  const LayerCost f = flash.Cost(m, block, w), fs = flash_sel.Cost(m, block, w);
  EXPECT_EQ(f.act_bytes, fs.act_bytes);
  EXPECT_DOUBLE_EQ(f.bwd_time_us, fs.bwd_time_us);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// On a device with compute curves, selective recompute of unfused attention adds to the backward exactly the
// attention core's forward: the forward's time with the layer's attention pairs minus without them.
TEST(AnalyticCostTest, SelectiveRecomputeOnTheCurveAddsTheCoreForward) {
  auto cluster = LoadCluster("a100-8x200g");
  ASSERT_TRUE(cluster.ok()) << cluster.error().message();
  ModelSpec m = Load("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const Layer& block = FirstOf(layers, 2, LayerKind::kTransformer);
  const LayerWorkload w{8192, 2 * 4096.0 * 4096.0, 2}, no_pairs{8192, 0, 2};
  AnalyticCostModel unfused(cluster->device, {.tp = 8, .flash_attention = false});
  AnalyticCostModel sel(cluster->device, {.tp = 8, .flash_attention = false, .selective_recompute = true});
  const double core_fwd_us =
      unfused.Cost(m, block, w).fwd_time_us - unfused.Cost(m, block, no_pairs).fwd_time_us;
  EXPECT_GT(core_fwd_us, 0);
  EXPECT_NEAR(sel.Cost(m, block, w).bwd_time_us - unfused.Cost(m, block, w).bwd_time_us, core_fwd_us,
              1e-9 * core_fwd_us);
  // Twice the pairs at the same tokens (spans twice as long): the core costs well over 1.5x (2x the FLOPs and
  // score bytes, GEMMs a little more efficient).
  const LayerWorkload w2{8192, 4 * 4096.0 * 4096.0, 2};
  EXPECT_GT(unfused.Cost(m, block, w2).fwd_time_us - unfused.Cost(m, block, no_pairs).fwd_time_us,
            1.5 * core_fwd_us);
}

}  // namespace
}  // namespace mmtwin

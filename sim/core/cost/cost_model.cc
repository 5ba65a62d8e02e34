// SPDX-License-Identifier: Apache-2.0
// Layer workloads, the analytic cost model and the coefficient table (see cost_model.h for the contract).
#include "core/cost/cost_model.h"
#include "core/util/numeric.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/util/csv.h"
#include "core/util/text.h"

namespace mmtwin {

// ---------------------------------------------------------------------------------------------------------------
// Workloads.

namespace {

// Positions (or tokens) one sample contributes to a component; for audio also its attention spans.
int64_t SampleTokensFor(const ModelSpec& m, int component, const SampleTokens& t) {
  const Component& c = m.components[component];
  switch (c.kind) {
    case ComponentKind::kVision:
      return t.vit_tokens;
    case ComponentKind::kAudio:
      return t.audio_tokens;
    case ComponentKind::kLlm:
      return t.llm_tokens;
    case ComponentKind::kProjector: {
      const int e = EncoderOfProjector(m, component);
      if (e < 0) return 0;
      const Component& enc = m.components[e];
      if (enc.kind == ComponentKind::kVision) return t.vision_llm_tokens;
      if (enc.input.tokens_per_second <= 0) return 0;
      const double ratio = enc.input.llm_tokens_per_unit / enc.input.tokens_per_second;
      return static_cast<int64_t>(std::ceil(static_cast<double>(t.audio_tokens) * ratio - 1e-9));
    }
  }
  return 0;
}

// Sum of span^2 over the windows of an audio sequence of n positions (window w; w <= 0: one span).
double WindowPairs(int64_t n, int64_t w) {
  if (w <= 0 || n <= w) return static_cast<double>(n) * static_cast<double>(n);
  const int64_t full = n / w, rest = n % w;
  return static_cast<double>(full) * static_cast<double>(w) * static_cast<double>(w) +
         static_cast<double>(rest) * static_cast<double>(rest);
}
int64_t WindowCount(int64_t n, int64_t w) { return (w <= 0 || n <= w) ? 1 : (n + w - 1) / w; }

}  // namespace

LayerWorkload ComponentWorkload(const ModelSpec& m, int component, const std::vector<SampleTokens>& tokens,
                                Packing packing) {
  LayerWorkload w;
  if (component < 0 || component >= static_cast<int>(m.components.size())) return w;
  const Component& c = m.components[component];
  if (c.kind == ComponentKind::kVision) {
    // Tiles, images and frames attend within themselves (sum of span^2 per unit): padding never applies.
    for (const SampleTokens& t : tokens) {
      if (t.vit_tokens == 0) continue;
      w.tokens += t.vit_tokens;
      w.sequences += t.vision_units;
      w.attn_pairs += t.vit_attn_pairs;
    }
    return w;
  }
  if (c.kind == ComponentKind::kProjector) {
    for (const SampleTokens& t : tokens) w.tokens += SampleTokensFor(m, component, t);
    return w;
  }
  const int64_t window = c.kind == ComponentKind::kAudio ? PositionsPerUnit(c) : 0;
  int64_t longest = 0, count = 0;
  double bidirectional = 0;  // the vision spans' extra pairs (ModelSpec::bidirectional_vision)
  for (const SampleTokens& t : tokens) {
    const int64_t n = SampleTokensFor(m, component, t);
    if (n == 0) continue;
    ++count;
    longest = std::max(longest, n);
    w.tokens += n;
    w.sequences += WindowCount(n, window);
    w.attn_pairs += WindowPairs(n, window);
    if (c.kind == ComponentKind::kLlm && m.bidirectional_vision) {
      const double v = static_cast<double>(VisionSpanTokens(t));
      bidirectional += v * (v - 1);
    }
  }
  if (packing == Packing::kPadded && count > 0) {
    w.tokens = count * longest;
    w.sequences = count * WindowCount(longest, window);
    w.attn_pairs = static_cast<double>(count) * WindowPairs(longest, window);
  }
  w.attn_pairs += bidirectional;
  return w;
}

LayerWorkload ComponentWorkload(const ModelSpec& m, int component, const std::vector<Sample>& samples,
                                Packing packing) {
  std::vector<SampleTokens> tokens;
  tokens.reserve(samples.size());
  for (const Sample& s : samples) tokens.push_back(TokensFor(m, s));
  return ComponentWorkload(m, component, tokens, packing);
}

std::vector<LayerWorkload> ModelWorkloads(const ModelSpec& m, const std::vector<Sample>& samples,
                                          Packing packing) {
  std::vector<SampleTokens> tokens;
  tokens.reserve(samples.size());
  for (const Sample& s : samples) tokens.push_back(TokensFor(m, s));
  std::vector<LayerWorkload> out;
  for (int i = 0; i < static_cast<int>(m.components.size()); ++i)
    out.push_back(ComponentWorkload(m, i, tokens, packing));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Analytic model.

AnalyticCostModel::AnalyticCostModel(DeviceSpec device, AnalyticOptions options)
    : device_(std::move(device)), options_(options) {
  if (options_.tp < 1) options_.tp = 1;
}

double AnalyticCostModel::achieved_flops() const {
  const double eff = options_.efficiency > 0 ? options_.efficiency : device_.efficiency;
  return device_.peak_flops * (eff > 0 ? eff : 0.5);
}

double AnalyticCostModel::hbm_achieved_bytes_per_s() const {
  return device_.hbm_bytes_per_s * (device_.hbm_peak_fraction > 0 ? device_.hbm_peak_fraction : 1.0);
}

namespace {
// d / (d + half): the saturation curve of one size (1 when half is 0).
double Saturation(double d, double half) { return half > 0 ? d / (d + half) : 1.0; }
}  // namespace

double AnalyticCostModel::GemmUs(double m, double n, double k) const {
  if (!(m > 0 && n > 0 && k > 0)) return 0;
  const double h = device_.gemm_half_dim;
  const double rate = device_.peak_flops * device_.gemm_peak_fraction * Saturation(m, h) * Saturation(n, h) *
                      Saturation(k, h);
  const double compute_s = 2.0 * m * n * k / rate;
  const double memory_s = kBf16Bytes * (m * k + k * n + m * n) / hbm_achieved_bytes_per_s();
  return std::max(compute_s, memory_s) * 1e6;
}

double AnalyticCostModel::AttentionFwdUs(double heads, double head_dim, double pairs, double span_sum,
                                         bool causal) const {
  if (!(pairs > 0) || !(heads > 0)) return 0;
  const double rate =
      device_.peak_flops * device_.attn_fwd_peak_fraction * Saturation(head_dim, device_.attn_half_head_dim);
  return 4.0 * heads * head_dim * ((causal ? 0.5 : 1.0) * pairs + device_.attn_half_span * span_sum) / rate *
         1e6;
}

double AnalyticCostModel::AttentionBwdUs(double heads, double head_dim, double pairs, double span_sum,
                                         bool causal) const {
  if (!(pairs > 0) || !(heads > 0)) return 0;
  const double rate =
      device_.peak_flops * device_.attn_bwd_peak_fraction * Saturation(head_dim, device_.attn_half_head_dim);
  return kAttnBwdFlopsRatio * 4.0 * heads * head_dim *
         ((causal ? 0.5 : 1.0) * pairs + device_.attn_half_span * span_sum) / rate * 1e6;
}

double AnalyticCostModel::MemoryUs(double bytes) const {
  return bytes > 0 ? bytes / hbm_achieved_bytes_per_s() * 1e6 : 0.0;
}

double OptimizerStepBytes(double params) { return kOptimizerBytesPerParam * params; }

double OptimizerParamsPerGpu(double stage_params, int tp, int dp, int zero_stage) {
  return stage_params / std::max(1, tp) / (zero_stage >= 1 ? std::max(1, dp) : 1);
}

double AnalyticCostModel::OptimizerStepUs(double params_per_gpu) const {
  if (!device_.has_compute_curve() || !(params_per_gpu > 0)) return 0;
  return MemoryUs(OptimizerStepBytes(params_per_gpu));
}

const std::vector<KernelImplFamily>& KernelImplFamilies() {
  static const std::vector<KernelImplFamily> families = {
      {"norm", &KernelImpl::eager_norm, "eager"},
      {"rotary", &KernelImpl::eager_rotary, "eager"},
      {"activation", &KernelImpl::eager_activation, "eager"},
      {"residual", &KernelImpl::eager_residual, "eager"},
      {"loss", &KernelImpl::eager_loss, "eager"},
      {"projections", &KernelImpl::split_projections, "split"},
      {"logits", &KernelImpl::chunked_logits, "chunked", "whole", false}};
  return families;
}

KernelImpl EagerKernels() {
  KernelImpl k;
  for (const KernelImplFamily& f : KernelImplFamilies())
    if (f.eager) k.*f.flag = true;
  return k;
}

std::string KernelImplText(const KernelImpl& k) {
  if (!k.any()) return "fused";
  if (k == EagerKernels()) return "eager";
  std::string eager;
  for (const KernelImplFamily& f : KernelImplFamilies())
    if (k.*f.flag && f.eager && f.flag != &KernelImpl::split_projections)
      eager += (eager.empty() ? "" : ", ") + std::string(f.key);
  std::string out = eager.empty() ? "" : "eager: " + eager;
  if (k.split_projections) out += (out.empty() ? "" : "; ") + std::string("split projections");
  if (k.chunked_logits) out += (out.empty() ? "" : "; ") + std::string("chunked logits");
  return out;
}

KernelCounts KernelsOf(const ModelSpec& m, const Layer& layer, const KernelImpl& kernels) {
  switch (layer.kind) {
    case LayerKind::kTransformer: {
      // Two norms, QKV, attention, output projection, two residual adds, FC1, activation, FC2; rotary (causal
      // LLM decoders) and the q/k norm when present. Fused, the backward launches twice as many; W = the four
      // GEMMs. Eager families as cost_model.h lists them.
      const TransformerConfig& t = m.components.at(layer.component).tf;
      const bool rms_eager = kernels.eager_norm && t.norm == NormKind::kRmsNorm;
      const bool swiglu = t.mlp == MlpKind::kSwiGlu;
      const int qkv = kernels.split_projections ? 3 : 1;
      const int fc1 = kernels.split_projections && swiglu ? 2 : 1;
      const int gemms = qkv + 1 + fc1 + 1;
      const int norm_f = rms_eager ? 8 : 1, norm_b = rms_eager ? 15 : 2;
      const int act_f = kernels.eager_activation && swiglu ? 2 : 1;
      const int act_b = kernels.eager_activation && swiglu ? 3 : 2;
      const int rot_f = t.causal ? (kernels.eager_rotary ? 10 : 1) : 0;
      const int rot_b = t.causal ? (kernels.eager_rotary ? 18 : 2) : 0;
      // The q/k norm: one fused kernel for q and k (two backward), or an eager RMSNorm on each.
      const int qkn_f = t.qk_norm ? (rms_eager ? 2 * norm_f : 1) : 0;
      const int qkn_b = t.qk_norm ? (rms_eager ? 2 * norm_b : 2) : 0;
      const int fwd = 2 * norm_f + gemms + 1 + 2 + act_f + rot_f + qkn_f;
      const int bwd = 2 * norm_b + 2 * gemms + 2 + 4 + act_b + rot_b + qkn_b;
      return {fwd, bwd, gemms};
    }
    case LayerKind::kProjector: {
      const size_t dims = m.components.at(layer.component).projector_dims.size();
      const int n = dims > 1 ? static_cast<int>(dims - 1) : 0;
      return {2 * n, 4 * n, n};
    }
    case LayerKind::kEmbedding:
      return {1, 2, 1};
    case LayerKind::kHead: {
      const bool rms_eager =
          kernels.eager_norm && m.components.at(layer.component).tf.norm == NormKind::kRmsNorm;
      const int norm_f = rms_eager ? 8 : 1, norm_b = rms_eager ? 15 : 2;
      const bool eager_loss = kernels.eager_loss && !kernels.chunked_logits;
      return {norm_f + 1 + (eager_loss ? 3 : 1), norm_b + 2 + (eager_loss ? 3 : 2), 1};
    }
  }
  return {};
}

int64_t ChunkedLogitsTokens(int64_t tokens, int64_t vocab, int64_t hidden) {
  if (tokens <= 0) return 0;
  const int64_t inc = hidden > 0 ? std::max<int64_t>(1, (vocab + hidden - 1) / hidden) : 1;
  const int64_t want = (tokens + inc - 1) / inc;
  int64_t chunk = 1;
  while (chunk < want) chunk *= 2;
  return std::min(chunk, tokens);
}

int64_t AnalyticBackwardWorkBytes(const ModelSpec& m, const Layer& layer, const LayerWorkload& w, int tp_in,
                                  const KernelImpl& kernels) {
  if (w.tokens <= 0) return 0;
  const Component& c = m.components.at(layer.component);
  const double tp = std::max(1, tp_in);
  const double tokens = static_cast<double>(w.tokens);
  const double h = static_cast<double>(c.tf.hidden);
  double work = 0;
  switch (layer.kind) {
    case LayerKind::kTransformer: {
      const TransformerConfig& t = c.tf;
      const double f = static_cast<double>(t.ffn);
      const double f_in = t.mlp == MlpKind::kSwiGlu ? 2.0 * f : f;
      const double d = static_cast<double>(t.head_dim);
      const double mlp = 2.0 * tokens * (f_in + f) / tp;
      const double attn =
          2.0 * tokens * (t.heads + 2.0 * t.kv_heads) * d / tp + 4.0 * tokens * t.heads * d / tp;
      work = std::max(mlp, attn) + 2.0 * tokens * h;
      break;
    }
    case LayerKind::kHead:
      work = kernels.chunked_logits
                 ? 2.0 * static_cast<double>(ChunkedLogitsTokens(w.tokens, c.vocab, c.tf.hidden)) *
                       static_cast<double>(c.vocab) / tp
                 : 6.0 * tokens * static_cast<double>(c.vocab) / tp;
      break;
    case LayerKind::kProjector: {
      const std::vector<int64_t>& dims = c.projector_dims;
      double widest = 0;
      for (size_t i = 0; i + 1 < dims.size(); ++i)
        widest = std::max(widest, static_cast<double>(dims[i]) + static_cast<double>(dims[i + 1]));
      work = 2.0 * tokens * widest / tp;
      break;
    }
    case LayerKind::kEmbedding:
      work = 2.0 * tokens * h * (c.kind == ComponentKind::kAudio ? 2.0 : 1.0) / tp;
      break;
  }
  return BytesOf(work);
}

void ApplyBackward(LayerBackward backward, LayerCost& c) {
  switch (backward) {
    case LayerBackward::kFull:
      return;
    case LayerBackward::kInputOnly:
      c.bwd_time_us = std::max(0.0, c.bwd_time_us - c.bwd_weight_time_us);
      c.bwd_flops = std::max(0.0, c.bwd_flops - c.bwd_weight_flops);
      c.bwd_weight_time_us = 0;
      c.bwd_weight_flops = 0;
      return;
    case LayerBackward::kNone:
      c.bwd_time_us = c.bwd_weight_time_us = 0;
      c.bwd_flops = c.bwd_weight_flops = 0;
      c.act_bytes = c.act_bytes_recompute = 0;
      c.bwd_work_bytes = 0;
      return;
  }
}

LayerCost AnalyticCostModel::Cost(const ModelSpec& m, const Layer& layer, const LayerWorkload& w) const {
  LayerCost cost = FullBackwardCost(m, layer, w);
  ApplyBackward(layer.backward, cost);
  return cost;
}

LayerCost AnalyticCostModel::FullBackwardCost(const ModelSpec& m, const Layer& layer,
                                              const LayerWorkload& w) const {
  LayerCost cost;
  const Component& c = m.components.at(layer.component);
  const double tp = options_.tp;
  const double tokens = static_cast<double>(w.tokens);
  const double h = static_cast<double>(c.tf.hidden);
  cost.param_bytes = BytesOf(2.0 * static_cast<double>(layer.params) / tp);
  // Transformer blocks: the attention projections of ceil(heads / tp) + ceil(kv_heads / tp) heads per rank.
  const bool padded_heads = layer.kind == LayerKind::kTransformer &&
                            (c.tf.heads % options_.tp != 0 || c.tf.kv_heads % options_.tp != 0);
  if (padded_heads) {
    const TransformerConfig& t = c.tf;
    const double attn_params = 2.0 * h * (t.heads + t.kv_heads) * static_cast<double>(t.head_dim);
    const double attn_rank =
        2.0 * h * (std::ceil(t.heads / tp) + std::ceil(t.kv_heads / tp)) * static_cast<double>(t.head_dim);
    cost.param_bytes =
        BytesOf(2.0 * (static_cast<double>(layer.params) - attn_params) / tp + 2.0 * attn_rank);
  }
  if (w.tokens <= 0) return cost;

  double fwd_flops = 0;
  double rank_fwd_flops = -1;  // the busiest TP rank's share; -1 = fwd_flops / tp
  double act = 0, act_recompute = 0, boundary = 0;
  double fwd_memory_us = 0;    // memory-bound layers (the LLM embedding lookup)
  double selective_flops = 0;  // selective recompute: the attention core's forward FLOPs on the busiest rank
  double weight_flops =
      -1;  // forward FLOPs of the weight GEMMs on the busiest TP rank; -1 = all of the rank's
  switch (layer.kind) {
    case LayerKind::kTransformer: {
      const TransformerConfig& t = c.tf;
      const double attn_width = static_cast<double>(t.heads) * static_cast<double>(t.head_dim);
      fwd_flops = 2.0 * tokens * static_cast<double>(BlockMatmulParams(t)) +
                  4.0 * attn_width * w.attn_pairs * (t.causal ? 0.5 : 1.0);
      // Tensor parallelism shards attention by heads: a rank holds ceil(heads / tp) query heads and
      // ceil(kv_heads / tp) KV heads (at least one: fewer KV heads than ranks are replicated), the MLP 1/tp.
      // When tp does not divide the heads the busiest rank does more than 1/tp of the work and sets the time.
      const double hd = static_cast<double>(t.head_dim);
      const double q_rank = std::ceil(static_cast<double>(t.heads) / tp);
      const double kv_rank = std::ceil(static_cast<double>(t.kv_heads) / tp);
      const double attn_params = 2.0 * h * (t.heads + t.kv_heads) * hd;  // q, o and k, v projections
      const double mlp_params = static_cast<double>(BlockMatmulParams(t)) - attn_params;
      const double attn_params_rank = 2.0 * h * (q_rank + kv_rank) * hd;
      weight_flops = 2.0 * tokens * static_cast<double>(BlockMatmulParams(t)) / tp;
      if (padded_heads) {
        weight_flops = 2.0 * tokens * (attn_params_rank + mlp_params / tp);
        rank_fwd_flops = weight_flops + 4.0 * q_rank * hd * w.attn_pairs * (t.causal ? 0.5 : 1.0);
      }
      // Korthikanti et al. Table 2 (cost_model.h): without sequence parallelism the LayerNorm inputs and
      // dropout masks (10·s·b·h) are replicated on every TP rank.
      const bool store_scores = !options_.flash_attention && !options_.selective_recompute;
      const double scores = store_scores ? 5.0 * t.heads * w.attn_pairs : 0.0;
      // Selective recompute of unfused attention: the busiest rank's attention core forward once more in its
      // backward (q_rank heads: 1/tp of the heads when tp divides them).
      if (!options_.flash_attention && options_.selective_recompute)
        selective_flops = 4.0 * q_rank * hd * w.attn_pairs * (t.causal ? 0.5 : 1.0);
      const bool split = options_.sequence_parallel || tp == 1;
      act = split ? (34.0 * tokens * h + scores) / tp : 10.0 * tokens * h + (24.0 * tokens * h + scores) / tp;
      act_recompute = split ? 2.0 * tokens * h / tp : 2.0 * tokens * h;
      boundary = 2.0 * tokens * h;
      break;
    }
    case LayerKind::kEmbedding: {
      if (c.kind == ComponentKind::kVision) {
        const double p = c.input.patch_px;
        fwd_flops = 2.0 * tokens * 3.0 * p * p * h;  // patch convolution as a matmul
        act = 2.0 * tokens * 3.0 * p * p / tp;       // pixels kept for the weight gradient
      } else if (c.kind == ComponentKind::kAudio) {
        fwd_flops = 2.0 * tokens * static_cast<double>(c.conv_params);  // conv front end, ~1 MAC per weight
        act = 2.0 * tokens * h * 2.0 / tp;  // conv1 output (2x frames before stride)
      } else {
        fwd_memory_us = 2.0 * tokens * h * 2.0 / device_.hbm_bytes_per_s * 1e6 / tp;  // gather rows + write
        act = 8.0 * tokens;                                                           // token ids
      }
      act_recompute = act;
      boundary = 2.0 * tokens * h;
      break;
    }
    case LayerKind::kProjector: {
      const std::vector<int64_t>& d = c.projector_dims;
      double matmul = 0, stored = 0;
      for (size_t i = 0; i + 1 < d.size(); ++i) {
        matmul += static_cast<double>(d[i]) * static_cast<double>(d[i + 1]);
        stored += static_cast<double>(d[i]);             // input of each Linear
        if (i > 0) stored += static_cast<double>(d[i]);  // input of each GELU between Linears
      }
      if (c.projector_norm) stored += static_cast<double>(d[0]);  // LayerNorm input
      fwd_flops = 2.0 * tokens * matmul;
      act = 2.0 * tokens * stored / tp;
      act_recompute = 2.0 * tokens * static_cast<double>(d.empty() ? 0 : d[0]) / tp;
      boundary = 2.0 * tokens * static_cast<double>(d.empty() ? 0 : d.back());
      break;
    }
    case LayerKind::kHead: {
      const double vocab = static_cast<double>(c.vocab);
      fwd_flops = 2.0 * tokens * h * vocab;
      // Whole logits: norm + head inputs and the fp32 logits for the loss. Chunked (Liger): the norm's input,
      // the head input's gradient and the head weight's gradient (bf16), computed in the forward.
      act = options_.kernels.chunked_logits ? (2.0 * tokens * h * 2.0 + 2.0 * vocab * h) / tp
                                            : (2.0 * tokens * h * 2.0 + 4.0 * tokens * vocab) / tp;
      act_recompute = 2.0 * tokens * h / tp;
      boundary = 0;
      break;
    }
  }
  cost.fwd_flops = fwd_flops;  // the model's FLOPs (MFU counts these), not the padded ones
  cost.bwd_flops = 2.0 * fwd_flops;
  // Weight gradients: every weight GEMM's forward FLOPs again (a block's attention core has no weights; the
  // LLM embedding's lookup has no FLOPs).
  cost.bwd_weight_flops = layer.kind == LayerKind::kTransformer
                              ? 2.0 * tokens * static_cast<double>(BlockMatmulParams(c.tf))
                              : fwd_flops;
  if (uses_curve()) {
    const CurveTimes t = CurveTimesOf(m, layer, w);
    cost.fwd_time_us = t.fwd_us;
    cost.bwd_time_us = t.bwd_us;
    cost.bwd_weight_time_us = t.bwd_weight_us;
  } else if (rank_fwd_flops < 0) {
    const double per_gpu = achieved_flops() * tp;  // time = flops / tp / achieved
    cost.fwd_time_us = fwd_flops / per_gpu * 1e6 + fwd_memory_us;
    cost.bwd_time_us = cost.bwd_flops / per_gpu * 1e6 + 2.0 * fwd_memory_us;
  } else {
    cost.fwd_time_us = rank_fwd_flops / achieved_flops() * 1e6 + fwd_memory_us;
    cost.bwd_time_us = 2.0 * rank_fwd_flops / achieved_flops() * 1e6 + 2.0 * fwd_memory_us;
  }
  if (!uses_curve()) cost.bwd_time_us += selective_flops / achieved_flops() * 1e6;  // the curve's own below
  // W: the weight GEMMs' gradient (their forward FLOPs again); the LLM embedding's scatter-add into its table.
  if (!uses_curve()) {
    if (weight_flops < 0) weight_flops = (rank_fwd_flops < 0 ? fwd_flops / tp : rank_fwd_flops);
    cost.bwd_weight_time_us =
        std::min(cost.bwd_time_us, weight_flops / achieved_flops() * 1e6 + fwd_memory_us);
  }
  if (!uses_curve() && device_.kernel_overhead_us > 0) {
    const KernelCounts k = KernelsOf(m, layer, options_.kernels);
    cost.fwd_time_us += k.fwd * device_.kernel_overhead_us;
    cost.bwd_time_us += k.bwd * device_.kernel_overhead_us;
    cost.bwd_weight_time_us += k.bwd_weight * device_.kernel_overhead_us;
  }
  cost.act_bytes = BytesOf(act);
  cost.act_bytes_recompute = BytesOf(act_recompute);
  cost.boundary_bytes = BytesOf(boundary);
  cost.bwd_work_bytes = AnalyticBackwardWorkBytes(m, layer, w, options_.tp, options_.kernels);
  return cost;
}

AnalyticCostModel::CurveTimes AnalyticCostModel::CurveTimesOf(const ModelSpec& m, const Layer& layer,
                                                              const LayerWorkload& w) const {
  const Component& c = m.components.at(layer.component);
  const double tp = options_.tp;
  const double T = static_cast<double>(w.tokens);
  const double h = static_cast<double>(c.tf.hidden);
  // Each GEMM (m x k) . (k x n) on one TP rank: forward, input gradient (m x n) . (n x k) and weight gradient
  // (k x m) . (m x n); the product saturation is symmetric in m, n, k, so the three differ only if the roofline
  // floor binds (their bytes are the same too): listed anyway, so that a shape-dependent curve stays correct.
  CurveTimes t;
  auto gemm = [&](double gm, double gn, double gk, bool needs_input_grad = true) {
    t.fwd_us += GemmUs(gm, gn, gk);
    const double wgrad = GemmUs(gk, gn, gm);
    t.bwd_us += wgrad + (needs_input_grad ? GemmUs(gm, gk, gn) : 0.0);
    t.bwd_weight_us += wgrad;
  };
  // Memory-bound kernels: bf16 bytes per token, forward and backward (cost_model.h lists them).
  auto memory = [&](double tokens, double fwd_bytes_per_token, double bwd_bytes_per_token) {
    t.fwd_us += MemoryUs(tokens * fwd_bytes_per_token);
    t.bwd_us += MemoryUs(tokens * bwd_bytes_per_token);
  };
  switch (layer.kind) {
    case LayerKind::kTransformer: {
      const TransformerConfig& tf = c.tf;
      const double hd = static_cast<double>(tf.head_dim);
      const double q = std::ceil(static_cast<double>(tf.heads) / tp);
      const double kv = std::ceil(static_cast<double>(tf.kv_heads) / tp);
      const double ffn = static_cast<double>(tf.ffn) / tp;
      const KernelImpl& kern = options_.kernels;
      const bool swiglu = tf.mlp == MlpKind::kSwiGlu;
      if (kern.split_projections) {  // q, k, v and SwiGLU's gate and up: one nn.Linear each
        gemm(T, q * hd, h);
        gemm(T, kv * hd, h);
        gemm(T, kv * hd, h);
      } else {
        gemm(T, (q + 2.0 * kv) * hd, h);  // QKV (column parallel)
      }
      gemm(T, h, q * hd);  // output projection (row parallel)
      if (kern.split_projections && swiglu) {
        gemm(T, ffn, h);
        gemm(T, ffn, h);
      } else {
        gemm(T, (swiglu ? 2.0 : 1.0) * ffn, h);  // FC1 (and the SwiGLU gate, fused)
      }
      gemm(T, h, ffn);  // FC2
      if (options_.flash_attention) {
        t.fwd_us += AttentionFwdUs(q, hd, w.attn_pairs, T, tf.causal);
        t.bwd_us += AttentionBwdUs(q, hd, w.attn_pairs, T, tf.causal);
      } else if (w.attn_pairs > 0) {
        // Unfused: per head and span, scores = Q K^T (s x s x d) and out = P V (s x d x s) as batched GEMMs over
        // the full square (the causal mask does not skip work), the mean span s = pairs / tokens; plus the
        // scores' traffic: written, read and written by the softmax, read by P V (8 bytes per pair per head),
        // twice that in the backward.
        const double s = w.attn_pairs / T;
        const double batch = q * T / s;
        const double core_fwd_us = batch * (GemmUs(s, s, hd) + GemmUs(s, hd, s));
        t.fwd_us += core_fwd_us;
        t.bwd_us += 2.0 * core_fwd_us;
        t.fwd_us += MemoryUs(q * w.attn_pairs * kScoresFwdBytesPerPair);
        t.bwd_us += MemoryUs(q * w.attn_pairs * 2.0 * kScoresFwdBytesPerPair);
        // Selective recompute: the core's forward (GEMMs and score traffic) once more before its backward.
        if (options_.selective_recompute)
          t.bwd_us += core_fwd_us + MemoryUs(q * w.attn_pairs * kScoresFwdBytesPerPair);
      }
      // Norms, residual adds, dropout masks: on the rank's 1/tp of the tokens with sequence parallelism, all of
      // them without (replicated). Rotary (causal decoders), q/k norm and the activation: the rank's heads and
      // FFN columns of every token.
      const double norm_tokens = (options_.sequence_parallel || tp == 1) ? T / tp : T;
      const bool rms_eager = kern.eager_norm && tf.norm == NormKind::kRmsNorm;
      const double norm_f = rms_eager ? kEagerRmsNormFwdBytesPerElem : kNormFwdBytesPerElem;
      const double norm_b = rms_eager ? kEagerRmsNormBwdBytesPerElem : kNormBwdBytesPerElem;
      const double res_f = kern.eager_residual ? kEagerResidualFwdBytesPerElem : kResidualFwdBytesPerElem;
      const double res_b = kern.eager_residual ? kEagerResidualBwdBytesPerElem : kResidualBwdBytesPerElem;
      memory(norm_tokens, 2 * norm_f * h + 2 * res_f * h, 2 * norm_b * h + 2 * res_b * h);
      const double qk = (q + kv) * hd;
      if (tf.causal) {
        if (kern.eager_rotary)
          memory(T, kEagerRotaryFwdBytesPerElem * qk, kEagerRotaryBwdBytesPerElem * qk);
        else
          memory(T, kRotaryBytesPerElem * qk, kRotaryBytesPerElem * qk);
      }
      if (tf.qk_norm) memory(T, norm_f * qk, norm_b * qk);
      if (swiglu && kern.eager_activation)
        memory(T, kEagerSwiGluFwdBytesPerElem * ffn, kEagerSwiGluBwdBytesPerElem * ffn);
      else if (swiglu)
        memory(T, kSwiGluFwdBytesPerElem * ffn, kSwiGluBwdBytesPerElem * ffn);
      else
        memory(T, kGeluFwdBytesPerElem * ffn, kGeluBwdBytesPerElem * ffn);
      break;
    }
    case LayerKind::kEmbedding: {
      // Patch embedding / conv front end: one GEMM whose input (pixels, mel frames) needs no gradient.
      if (c.kind == ComponentKind::kVision) {
        const double p = c.input.patch_px;
        gemm(T, h / tp, 3.0 * p * p, false);
      } else if (c.kind == ComponentKind::kAudio) {
        gemm(T, h / tp, static_cast<double>(c.conv_params) / h, false);
      } else {
        // Lookup: gather the rows and write them (2 x tokens x h bf16); backward: the scatter-add into the table,
        // twice that, all of it the weight gradient.
        memory(T, 2.0 * kBf16Bytes * h / tp, 4.0 * kBf16Bytes * h / tp);
        t.bwd_weight_us = t.bwd_us;
      }
      break;
    }
    case LayerKind::kProjector: {
      // Linears alternately column and row parallel (Megatron's MLP), a LayerNorm on the input when present, a
      // GELU between Linears.
      const std::vector<int64_t>& d = c.projector_dims;
      if (c.projector_norm && !d.empty())
        memory(T, kNormFwdBytesPerElem * d[0] / tp, kNormBwdBytesPerElem * d[0] / tp);
      for (size_t i = 0; i + 1 < d.size(); ++i) {
        const double in = static_cast<double>(d[i]), out = static_cast<double>(d[i + 1]);
        if (i % 2 == 0)
          gemm(T, out / tp, in);
        else
          gemm(T, out, in / tp);
        if (i + 2 < d.size())
          memory(T, kGeluFwdBytesPerElem * (i % 2 == 0 ? out / tp : out),
                 kGeluBwdBytesPerElem * (i % 2 == 0 ? out / tp : out));
      }
      break;
    }
    case LayerKind::kHead: {
      // Final norm, the vocabulary-parallel GEMM, and the loss on fp32 logits: written and read by the softmax
      // cross-entropy (8 bytes per logit), its gradient read in fp32 and written in bf16 (6 bytes). Chunked
      // logits: Liger's kernel on each chunk's bf16 logits (4 bytes per logit; its GEMMs stay in their passes
      // here, where Liger runs the two gradient GEMMs in the forward: the same step time without pipelining).
      const double vocab = static_cast<double>(c.vocab) / tp;
      const double norm_tokens = (options_.sequence_parallel || tp == 1) ? T / tp : T;
      const bool rms_eager = options_.kernels.eager_norm && c.tf.norm == NormKind::kRmsNorm;
      memory(norm_tokens, rms_eager ? kEagerRmsNormFwdBytesPerElem * h : kNormFwdBytesPerElem * h,
             rms_eager ? kEagerRmsNormBwdBytesPerElem * h : kNormBwdBytesPerElem * h);
      gemm(T, vocab, h);
      if (options_.kernels.chunked_logits)
        memory(T, kChunkedLossFwdBytesPerLogit * vocab, 0);
      else if (options_.kernels.eager_loss)
        memory(T, kEagerLossFwdBytesPerLogit * vocab, kEagerLossBwdBytesPerLogit * vocab);
      else
        memory(T, kLossFwdBytesPerLogit * vocab, kLossBwdBytesPerLogit * vocab);
      break;
    }
  }
  if (device_.kernel_overhead_us > 0) {
    const KernelCounts k = KernelsOf(m, layer, options_.kernels);
    t.fwd_us += k.fwd * device_.kernel_overhead_us;
    t.bwd_us += k.bwd * device_.kernel_overhead_us;
    t.bwd_weight_us += k.bwd_weight * device_.kernel_overhead_us;
  }
  t.bwd_weight_us = std::min(t.bwd_weight_us, t.bwd_us);
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// Coefficient table.

namespace {
const char* const kCoefHeader[] = {"source",      "layer_kind", "fwd_c0_us",    "fwd_token_us",
                                   "fwd_pair_us", "bwd_c0_us",  "bwd_token_us", "bwd_pair_us"};
constexpr int kCoefColumns = 8;
const char* const kMemHeader[] = {"act_c0_bytes", "act_token_bytes", "act_pair_bytes", "kept_token_bytes"};
constexpr int kMemColumns = 4;
const char* const kWorkHeader[] = {"work_c0_bytes", "work_token_bytes", "work_pair_bytes"};
constexpr int kWorkColumns = 3;

std::string FormatDouble(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}
}  // namespace

CoefficientCostModel::CoefficientCostModel(AnalyticCostModel bytes_and_flops)
    : analytic_(std::move(bytes_and_flops)) {}

void CoefficientCostModel::Set(const std::string& source, LayerKind kind, const TimeCoefficients& c) {
  table_[{source, static_cast<int>(kind)}] = c;
}

const TimeCoefficients* CoefficientCostModel::Find(const std::string& source, LayerKind kind) const {
  auto it = table_.find({source, static_cast<int>(kind)});
  if (it == table_.end()) it = table_.find({"*", static_cast<int>(kind)});
  return it == table_.end() ? nullptr : &it->second;
}

Result<CoefficientCostModel> CoefficientCostModel::Parse(const std::string& csv_text, const std::string& name,
                                                         AnalyticCostModel bytes_and_flops) {
  CoefficientCostModel model(std::move(bytes_and_flops));
  CsvReader csv = CsvReader::FromString(csv_text, name);
  std::vector<std::string_view> row;
  if (!csv.Next(row)) {
    if (!csv.status().ok()) return csv.status().error();
    return Error::At(name, 0, "", "empty coefficient table (expected a header line)");
  }
  // The version line mmtwin calibrate writes (Format): required, so that a table of another format or version
  // is refused rather than read with today's meaning (issue 34).
  int version = 0;
  for (const auto& c : csv.comments()) {
    int v = 0;
    if (std::sscanf(c.c_str(), " mmtwin-cost-coefficients v%d", &v) == 1) version = v;
  }
  if (version == 0)
    return Error::At(
        name, 1, "",
        "missing the version line '# mmtwin-cost-coefficients v1' above the header (mmtwin calibrate "
        "writes it)");
  if (version != 1)
    return Error::At(
        name, 1, "",
        "cost-coefficient format v" + std::to_string(version) + " is not supported (this mmtwin reads v1)");
  const CsvHeader header(row);
  MMTWIN_RETURN_IF_ERROR(header.CheckUnique(csv));
  int col[kCoefColumns];
  for (int i = 0; i < kCoefColumns; ++i) {
    col[i] = header.Find(kCoefHeader[i]);
    if (col[i] < 0) return csv.ErrorAt(kCoefHeader[i], "missing column in the header");
  }
  int mem[kMemColumns], mem_found = 0;
  for (int i = 0; i < kMemColumns; ++i) mem_found += (mem[i] = header.Find(kMemHeader[i])) >= 0;
  if (mem_found != 0 && mem_found != kMemColumns)
    for (int i = 0; i < kMemColumns; ++i)
      if (mem[i] < 0)
        return csv.ErrorAt(kMemHeader[i], "missing column: the memory columns come all four or none");
  int work[kWorkColumns], work_found = 0;
  for (int i = 0; i < kWorkColumns; ++i) work_found += (work[i] = header.Find(kWorkHeader[i])) >= 0;
  if (work_found != 0 && work_found != kWorkColumns)
    for (int i = 0; i < kWorkColumns; ++i)
      if (work[i] < 0)
        return csv.ErrorAt(kWorkHeader[i],
                           "missing column: the working-memory columns come all three or none");
  std::map<std::pair<std::string, int>, int> first_line;  // (source, kind) -> the line of its row
  long optimizer_line = 0;
  while (csv.Next(row)) {
    if (row.size() != header.names().size())
      return csv.ErrorAt("", "expected " + std::to_string(header.names().size()) + " fields, got " +
                                 std::to_string(row.size()));
    const std::string source(row[col[0]]);
    if (source.empty()) return csv.ErrorAt("source", "empty");
    if (row[col[1]] == "optimizer") {
      if (source != "*")
        return csv.ErrorAt("source", "the optimizer row's source is *, not '" + source + "'");
      if (optimizer_line > 0)
        return csv.ErrorAt("layer_kind", "a second optimizer row (the first is on line " +
                                             std::to_string(optimizer_line) + ")");
      optimizer_line = csv.line();
      double v[6];
      for (int i = 0; i < 6; ++i)
        if (!ParseDouble(row[col[2 + i]], v[i]) || !std::isfinite(v[i]) || v[i] < 0)
          return csv.ErrorAt(kCoefHeader[2 + i], "'" + Abbreviate(std::string(row[col[2 + i]])) +
                                                     "' is not a finite number >= 0");
      if (v[2] != 0 || v[3] != 0 || v[4] != 0 || v[5] != 0)
        return csv.ErrorAt("fwd_pair_us",
                           "the optimizer row has fwd_c0_us and fwd_token_us (per parameter) only");
      if (v[0] == 0 && v[1] == 0)
        return csv.ErrorAt("fwd_c0_us",
                           "the optimizer row's coefficients are both 0: the step would cost nothing");
      for (int i = 0; i < kMemColumns && mem_found; ++i)
        if (!row[mem[i]].empty()) return csv.ErrorAt(kMemHeader[i], "the optimizer row has no memory cells");
      for (int i = 0; i < kWorkColumns && work_found; ++i)
        if (!row[work[i]].empty())
          return csv.ErrorAt(kWorkHeader[i], "the optimizer row has no memory cells");
      model.SetOptimizer(v[0], v[1]);
      continue;
    }
    LayerKind kind;
    if (!ParseLayerKind(std::string(row[col[1]]), kind))
      return csv.ErrorAt("layer_kind", "unknown layer kind '" + std::string(row[col[1]]) +
                                           "'; valid values are: embedding, transformer, projector, head, "
                                           "optimizer");
    if (const auto [it, fresh] =
            first_line.emplace(std::make_pair(source, static_cast<int>(kind)), csv.line());
        !fresh)
      return csv.ErrorAt("source", "a second row for " + source + "," + std::string(row[col[1]]) +
                                       " (the first is on line " + std::to_string(it->second) + ")");
    double v[6];
    for (int i = 0; i < 6; ++i) {
      if (!ParseDouble(row[col[2 + i]], v[i]) || !std::isfinite(v[i]) || v[i] < 0)
        return csv.ErrorAt(kCoefHeader[2 + i],
                           "'" + Abbreviate(std::string(row[col[2 + i]])) + "' is not a finite number >= 0");
    }
    if (v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0 && v[4] == 0 && v[5] == 0)
      return csv.ErrorAt("fwd_c0_us", "every time coefficient of the row is 0: the layer would cost nothing");
    TimeCoefficients c{v[0], v[1], v[2], v[3], v[4], v[5]};
    if (mem_found) {
      int empty = 0;
      for (int i = 0; i < kMemColumns; ++i) empty += row[mem[i]].empty();
      if (empty != 0 && empty != kMemColumns)
        return csv.ErrorAt("act_c0_bytes", "a row's memory cells are all four filled or all four empty");
      if (empty == 0) {
        c.has_memory = true;
        double* dst[] = {&c.act_c0_bytes, &c.act_token_bytes, &c.act_pair_bytes, &c.kept_token_bytes};
        for (int i = 0; i < kMemColumns; ++i)
          if (!ParseDouble(row[mem[i]], *dst[i]) || !std::isfinite(*dst[i]) || *dst[i] < 0)
            return csv.ErrorAt(kMemHeader[i],
                               "'" + Abbreviate(std::string(row[mem[i]])) + "' is not a finite number >= 0");
      }
    }
    if (work_found) {
      int empty = 0;
      for (int i = 0; i < kWorkColumns; ++i) empty += row[work[i]].empty();
      if (empty != 0 && empty != kWorkColumns)
        return csv.ErrorAt("work_c0_bytes",
                           "a row's working-memory cells are all three filled or all three empty");
      if (empty == 0) {
        c.has_work = true;
        double* dst[] = {&c.work_c0_bytes, &c.work_token_bytes, &c.work_pair_bytes};
        for (int i = 0; i < kWorkColumns; ++i)
          if (!ParseDouble(row[work[i]], *dst[i]) || !std::isfinite(*dst[i]) || *dst[i] < 0)
            return csv.ErrorAt(kWorkHeader[i],
                               "'" + Abbreviate(std::string(row[work[i]])) + "' is not a finite number >= 0");
      }
    }
    model.Set(source, kind, c);
    model.row_lines_[{source, static_cast<int>(kind)}] = csv.line();
  }
  if (!csv.status().ok()) return csv.status().error();
  model.table_name_ = name;
  return model;
}

Result<CoefficientCostModel> CoefficientCostModel::Load(const std::string& path,
                                                        AnalyticCostModel bytes_and_flops) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return Parse(text, path, std::move(bytes_and_flops));
}

std::string CoefficientCostModel::Format() const {
  std::string out = "# mmtwin-cost-coefficients v1\n";
  bool memory = false, work = false;
  for (const auto& [key, c] : table_) {
    memory = memory || c.has_memory;
    work = work || c.has_work;
  }
  for (int i = 0; i < kCoefColumns; ++i) out += std::string(i ? "," : "") + kCoefHeader[i];
  if (memory)
    for (const char* h : kMemHeader) out += std::string(",") + h;
  if (work)
    for (const char* h : kWorkHeader) out += std::string(",") + h;
  out += "\n";
  for (const auto& [key, c] : table_) {
    out += CsvQuote(key.first) + "," + LayerKindName(static_cast<LayerKind>(key.second));
    for (double v : {c.fwd_c0_us, c.fwd_token_us, c.fwd_pair_us, c.bwd_c0_us, c.bwd_token_us, c.bwd_pair_us})
      out += "," + FormatDouble(v);
    if (memory) {
      if (c.has_memory) {
        for (double v : {c.act_c0_bytes, c.act_token_bytes, c.act_pair_bytes, c.kept_token_bytes})
          out += "," + FormatDouble(v);
      } else {
        out += ",,,,";
      }
    }
    if (work) {
      if (c.has_work) {
        for (double v : {c.work_c0_bytes, c.work_token_bytes, c.work_pair_bytes})
          out += "," + FormatDouble(v);
      } else {
        out += ",,,";
      }
    }
    out += "\n";
  }
  if (optimizer_) {
    out += "*,optimizer," + FormatDouble(optimizer_->first) + "," + FormatDouble(optimizer_->second) +
           ",0,0,0,0";
    if (memory) out += ",,,,";
    if (work) out += ",,,";
    out += "\n";
  }
  return out;
}

void CoefficientCostModel::SetOptimizer(double c0_us, double param_us) { optimizer_ = {c0_us, param_us}; }

std::optional<double> CoefficientCostModel::MeasuredOptimizerStepUs(double params_per_gpu) const {
  if (!optimizer_ || !(params_per_gpu > 0)) return std::nullopt;
  return optimizer_->first + optimizer_->second * params_per_gpu;
}

Status CoefficientCostModel::Save(const std::string& path) const { return WriteFileAtomic(path, Format()); }

LayerCost CoefficientCostModel::Cost(const ModelSpec& m, const Layer& layer, const LayerWorkload& w) const {
  // The coefficients price a full backward (the backend measures no frozen components); the layer's backward
  // mode applies after them.
  LayerCost cost = analytic_.FullBackwardCost(m, layer, w);
  const LayerBackward backward = layer.backward;
  if (w.tokens <= 0) {
    ApplyBackward(backward, cost);
    return cost;
  }
  const TimeCoefficients* c = Find(m.components.at(layer.component).source, layer.kind);
  if (!c) {
    cost.fwd_time_us = cost.bwd_time_us = std::numeric_limits<double>::quiet_NaN();
    return cost;
  }
  const double tokens = static_cast<double>(w.tokens);
  cost.fwd_time_us = c->fwd_c0_us + c->fwd_token_us * tokens + c->fwd_pair_us * w.attn_pairs;
  // The measured backward is not split into B and W: W takes the analytic model's share of it.
  const double analytic_bwd_us = cost.bwd_time_us;
  const double w_share = analytic_bwd_us > 0 ? cost.bwd_weight_time_us / analytic_bwd_us : 0.0;
  cost.bwd_time_us = c->bwd_c0_us + c->bwd_token_us * tokens + c->bwd_pair_us * w.attn_pairs;
  cost.bwd_weight_time_us = w_share * cost.bwd_time_us;
  if (c->has_memory) {
    cost.act_bytes =
        BytesOf(c->act_c0_bytes + c->act_token_bytes * tokens + c->act_pair_bytes * w.attn_pairs);
    cost.act_bytes_recompute = std::min(cost.act_bytes, BytesOf(c->kept_token_bytes * tokens));
  }
  if (c->has_work)
    cost.bwd_work_bytes =
        BytesOf(c->work_c0_bytes + c->work_token_bytes * tokens + c->work_pair_bytes * w.attn_pairs);
  ApplyBackward(backward, cost);
  return cost;
}

Status CoefficientCostModel::Supports(const ModelSpec& m) const {
  for (const Layer& l : Layers(m)) {
    const std::string& source = m.components[l.component].source;
    if (!Find(source, l.kind)) {
      const std::string missing = "no cost coefficients for layer type '" + source + "," +
                                  LayerKindName(l.kind) + "' (layer " + l.label + " of " + m.name +
                                  "); add a row with source '" + source + "' or '*'";
      // A row of the table that prices no layer of the model is the likely typo: name it where it is.
      for (const auto& [key, line] : row_lines_) {
        bool used = key.first == "*";
        for (const Layer& k : Layers(m))
          used = used || (m.components[k.component].source == key.first && static_cast<int>(k.kind) == key.second);
        if (!used && !table_name_.empty())
          return Error::At(table_name_, line, "source",
                           "'" + key.first + "," + LayerKindName(static_cast<LayerKind>(key.second)) +
                               "' prices no layer of " + m.name + " (a typo?), and " + missing);
      }
      return Error(missing);
    }
  }
  return Status();
}

}  // namespace mmtwin

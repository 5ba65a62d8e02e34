// SPDX-License-Identifier: Apache-2.0
// Cost of one layer for one input: FLOPs, time, parameter and activation bytes (sim/docs/algorithms.md §4).
//
// One interface, two sources: AnalyticCostModel (GEMMs, attention and memory-bound kernels priced by shape on
// the device's compute curve, or FLOPs / (peak x efficiency) for a device without one; Korthikanti activation
// sizes) and CoefficientCostModel (time = c0 + c_token * tokens + c_pair * attention pairs per layer type,
// fitted to measurements by the calibration step; bytes and FLOPs still analytic).
//
// Contract and units:
// - LayerWorkload describes what a layer sees in one micro-batch: `tokens` positions in total, `attn_pairs` =
//   sum over attention spans of span^2 (the full square; the cost model halves it for causal layers),
//   `sequences` = number of spans. Build it with ComponentWorkload() (one per component; every layer of a
//   component sees the same workload).
// - LayerCost: fwd_flops / bwd_flops are the layer's whole FLOPs (all TP ranks together, for MFU); times
//   (microseconds) and bytes are per GPU (divided by TP; activations assume sequence parallelism).
//   boundary_bytes is the whole activation handed to the next layer (tokens * width * 2, bf16), not divided
//   by TP.
//
//   MMTWIN_ASSIGN_OR_RETURN(ModelSpec m, LoadModel("internvl-1.5-6b-20b"));
//   AnalyticCostModel cost(cluster.device, {.tp = 4});
//   std::vector<LayerWorkload> w = ModelWorkloads(m, samples);     // one per component
//   for (const Layer& l : Layers(m)) total_us += cost.Cost(m, l, w[l.component]).fwd_time_us;
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/model/model.h"
#include "core/trace/trace.h"
#include "core/util/status.h"

namespace mmtwin {

struct LayerWorkload {
  int64_t tokens = 0;     // positions processed (sum over the micro-batch)
  double attn_pairs = 0;  // sum over attention spans of span^2 (causal halving is done by the cost model)
  int64_t sequences = 0;  // attention spans (tiles, audio windows, samples)

  LayerWorkload& operator+=(const LayerWorkload& o) {
    tokens += o.tokens;
    attn_pairs += o.attn_pairs;
    sequences += o.sequences;
    return *this;
  }
};

// How sequences are batched: varlen packs them without padding (block-diagonal attention, one span per
// sample); padded pads every sample to the longest one in the set (tokens = count * max, pairs = count *
// max^2).
enum class Packing { kVarlen, kPadded };

// Workload of component `component` of `m` for a set of samples:
// - vision encoder: every tile / image / frame is its own span (SampleTokens::vit_attn_pairs: the sum of span^2;
//   an if_larger encoder's images are as long as their size gives), padding does not apply;
// - audio encoder: a sample's positions split into windows of window_seconds (one span per window, the last
//   partial); padded pads every audio sample to the longest;
// - projector: the LLM-side tokens of the encoder it serves (after downsampling; vision: vision_llm_tokens),
//   no attention;
// - LLM: llm_tokens per sample, one span per sample (varlen) or padded to the longest.
// Samples contributing nothing to the component are left out (they add no sequence and no padding).
LayerWorkload ComponentWorkload(const ModelSpec& m, int component, const std::vector<SampleTokens>& tokens,
                                Packing packing = Packing::kVarlen);
LayerWorkload ComponentWorkload(const ModelSpec& m, int component, const std::vector<Sample>& samples,
                                Packing packing = Packing::kVarlen);
// One workload per component (index = component index).
std::vector<LayerWorkload> ModelWorkloads(const ModelSpec& m, const std::vector<Sample>& samples,
                                          Packing packing = Packing::kVarlen);

struct LayerCost {
  double fwd_flops = 0;  // whole layer, all TP ranks
  double bwd_flops = 0;
  double fwd_time_us = 0;  // per GPU
  double bwd_time_us = 0;
  // Of bwd_time_us, the weight-gradient GEMMs (W of a split backward, zero-bubble schedules): the GEMMs of the
  // layer's weights (wgrad FLOPs = their forward FLOPs), none of the attention core (no weights); the input
  // gradient (B) is the rest. The LLM embedding's W is its gradient scatter (the lookup's memory time).
  double bwd_weight_time_us = 0;
  double bwd_weight_flops =
      0;  // of bwd_flops, the weight gradients' (whole layer: the weight GEMMs' forward)
  int64_t param_bytes = 0;          // bf16 weights per GPU (params * 2 / tp)
  int64_t act_bytes = 0;            // stored for backward without recomputation, per GPU
  int64_t act_bytes_recompute = 0;  // stored with full recomputation (the layer input), per GPU
  int64_t boundary_bytes = 0;       // activation handed to the next layer (whole, bf16); 0 for the LM head
  // Backward working memory, per GPU: the most the layer's backward allocates above what was live when it
  // started (gradients of its intermediates and of its input, before its saved activations are freed). A
  // calibrated profile measures it (the backend's counting allocator); the analytic model prices it by the
  // closed forms of AnalyticBackwardWorkBytes.
  int64_t bwd_work_bytes = 0;
};

// A layer's cost as its backward mode makes it (Layer::backward, model.h; both cost models apply it, so every client
// prices frozen components alike): kFull leaves `c` as it is; kInputOnly removes the weight gradient
// (bwd_time_us -= bwd_weight_time_us, bwd_flops -= bwd_weight_flops, both W fields 0), keeping the stored
// activations (an upper bound: a frozen Linear needs no saved input for its input gradient, but its norms and
// activation functions still do); kNone zeroes the backward's times, FLOPs, working memory and the stored
// activations (with and without recompute). Forward, parameter and boundary fields are never changed.
void ApplyBackward(LayerBackward backward, LayerCost& c);

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Cost of `layer` (from Layers(m)) on `w`. A workload with tokens == 0 costs no time and no activations.
  virtual LayerCost Cost(const ModelSpec& m, const Layer& layer, const LayerWorkload& w) const = 0;
  // OK when every layer of `m` can be priced; otherwise an error naming the first missing layer type.
  // Call it once before pricing: Cost() on an unsupported layer returns NaN times.
  virtual Status Supports(const ModelSpec& m) const = 0;
  virtual std::string name() const = 0;
  // The optimizer step of `params_per_gpu` parameters in microseconds, when this model measured it (a
  // calibrated profile's optimizer row); nullopt: the caller prices it (AnalyticCostModel::OptimizerStepUs).
  virtual std::optional<double> MeasuredOptimizerStepUs(double params_per_gpu) const {
    (void)params_per_gpu;
    return std::nullopt;
  }
};

// Which implementation each memory-bound kernel family runs (scenario `model.kernels`, sim/docs/algorithms.md §4).
// fused (every flag false, the default) is Megatron-LM's: one kernel per norm, rotary, activation and
// bias-dropout-add, fused QKV and SwiGLU gate/up GEMMs, the vocabulary-parallel cross entropy. eager is PyTorch
// eager mode as HF transformers (modeling_llama.py, v4.31-4.37: LlamaRMSNorm, apply_rotary_pos_emb, LlamaMLP) and
// torchtitan without torch.compile (torchtitan/models/{norms.py,llama/model.py} @ 3faaa1a0d) write these layers:
// each op of the Python expression is its own kernel that reads and writes HBM (the kEager* byte counts below).
struct KernelImpl {
  bool eager_norm = false;    // RMSNorm as x.float(), pow, mean, rsqrt, mul, type_as, mul weight (LayerNorm
                              // runs ATen's one fused kernel either way)
  bool eager_rotary = false;  // rotary as q*cos + rotate_half(q)*sin on q and k
  bool eager_activation = false;   // SwiGLU as silu(gate) * up (GELU is one ATen kernel either way)
  bool eager_residual = false;     // the residual add as its own kernel, no dropout (HF Llama, torchtitan)
  bool eager_loss = false;         // logits.float() then log_softmax / nll (PyTorch's cross entropy)
  bool split_projections = false;  // q, k, v and SwiGLU's gate and up as separate GEMMs (nn.Linear each)
  // The LM head and its loss as one fused linear cross-entropy over chunks of tokens (Liger Kernel's
  // FusedLinearCrossEntropy, linkedin/Liger-Kernel src/liger_kernel/ops/fused_linear_cross_entropy.py): no
  // token's full-vocabulary logits outlive its chunk; the gradients of the head's input and weight are computed
  // chunk by chunk and held until the backward. Overrides eager_loss (the loss is inside the fused kernel).
  bool chunked_logits = false;
  bool any() const {
    return eager_norm || eager_rotary || eager_activation || eager_residual || eager_loss ||
           split_projections || chunked_logits;
  }
  bool operator==(const KernelImpl&) const = default;
};
// The families of KernelImpl as a scenario names them (`model.kernels.KEY`): each family's key, its flag, the
// word that sets it and the word that clears it. The one table the scenario parser and writer and KernelImplText
// read.
struct KernelImplFamily {
  const char* key;
  bool KernelImpl::*flag;
  const char* on_word;             // "eager", "split" for projections, "chunked" for logits
  const char* off_word = "fused";  // "whole" for logits
  bool eager = true;               // set by `kernels: eager` (PyTorch eager mode); logits: no
};
const std::vector<KernelImplFamily>& KernelImplFamilies();
// Every family PyTorch eager mode changes (`kernels: eager`): all but the logits, which stay whole.
KernelImpl EagerKernels();
// "fused", "eager", or the eager families ("eager: rotary, activation"; split projections as "split
// projections", chunked logits as "chunked logits"), for summaries.
std::string KernelImplText(const KernelImpl& k);

struct AnalyticOptions {
  int tp = 1;                   // tensor-parallel degree: divides time, params and activations per GPU
  bool flash_attention = true;  // false adds the 5*a*s^2 attention-score activations (Korthikanti)
  // Megatron sequence parallelism inside the TP group (scenario parallel.tp_sequence_parallel): the LayerNorm and
  // dropout activations are split over the TP ranks too; without it they are replicated (below).
  bool sequence_parallel = true;
  double efficiency = 0;  // achieved fraction of peak; 0 uses DeviceSpec::efficiency
  // Megatron's selective recomputation (recompute policy `selective`, Korthikanti et al. 2022 §4.2): the
  // attention core (QK^T, softmax, its dropout, attention over V) is recomputed in the backward, so without flash
  // attention its 5·a·pairs score bytes are not stored, and the backward pays the core's forward FLOPs
  // (4·heads·head_dim·pairs, halved when causal) once more. With flash attention nothing changes: the kernel
  // never stores the scores and its backward already recomputes them.
  bool selective_recompute = false;
  KernelImpl kernels;  // fused (Megatron-LM) unless the scenario says otherwise
};

// FLOPs: 2 * tokens * matmul params + 4 * heads * head_dim * pairs (halved for causal); backward = 2 x
// forward. Time: the busiest rank's flops / (peak_flops * efficiency), which is flops / tp except for attention
// when tp does not divide the heads: a rank holds ceil(heads / tp) query and ceil(kv_heads / tp) KV heads (KV
// heads fewer than tp are replicated, as vLLM does), so its attention projections, scores and weights are
// priced for the padded head counts (e.g. InternViT-6B's 25 heads at tp 2: 13 heads on the busiest rank,
// attention 4% slower than 1/tp). Megatron-LM refuses such layouts (it asserts that tp divides both counts);
// mmtwin prices them instead so that what-ifs over tp stay comparable. The LLM embedding lookup is priced by HBM traffic
// instead. Activations per transformer layer (bf16; Korthikanti et al. 2022, Table 2; s·b = tokens, h = hidden,
// a = heads, t = tp; the 5·a·pairs attention-score term only without flash attention):
//   sequence parallel (or t = 1):  (34·tokens·h + 5·a·pairs) / t;   full recompute keeps 2·tokens·h / t
//   tensor parallel without SP:    10·tokens·h + (24·tokens·h + 5·a·pairs) / t;   recompute keeps 2·tokens·h
// (the 10·tokens·h are the two LayerNorms' inputs and the dropout masks, replicated on every TP rank). The TP
// collectives cost the same either way: SP replaces each all-reduce by a reduce-scatter plus an all-gather, the
// same ring bytes.
// Time with a compute curve (DeviceSpec::has_compute_curve(); the GPU presets), per TP rank, T = tokens, q / kv =
// the rank's query / KV heads, d = head dim, f = ffn / tp (sim/docs/algorithms.md §4):
//   GEMM (m x k).(k x n): max(2mnk / (peak x gemm_peak_fraction x S(m) S(n) S(k)), 2(mk + kn + mn) / hbm'), with
//     S(x) = x / (x + gemm_half_dim) and hbm' = hbm_bytes_per_s x hbm_peak_fraction; its input gradient
//     (m x n).(n x k) and weight gradient (k x m).(m x n) likewise.
//   transformer block: QKV (T, (q + 2kv) d, h), output projection (T, h, q d), FC1 (T, f or 2f SwiGLU, h), FC2
//     (T, h, f); attention core 4 q d (pairs (1/2 causal) + attn_half_span x T) / (peak x attn_fwd_peak_fraction
//     x d / (d + attn_half_head_dim)) (a span s at s / (s + attn_half_span) of the rate; the sum over spans is
//     exact), backward 2.5x those FLOPs at attn_bwd_peak_fraction; unfused (flash_attention = false): per head
//     and span (mean span pairs / T) the batched GEMMs Q K^T and P V over the full square, plus
//     kScoresFwdBytesPerPair per pair and head (twice in the backward); memory-bound kernels per token at hbm':
//     two norms and two bias-dropout-add residuals on h (on T / tp tokens with sequence parallelism, on T
//     without), rotary on (q + kv) d (causal decoders), the q/k norm when present, the activation on f.
//   projector: Linears alternately column (n / tp) and row (k / tp) parallel, the LayerNorm and GELUs by bytes;
//   LM head: the final norm, GEMM (T, vocab / tp, h), the fp32 loss by bytes; vision patch embedding / audio
//     conv: one GEMM (T, h / tp, 3 p^2 or conv_params / h) with a weight gradient only; LLM embedding: the
//     lookup's bytes (2 x T x h x 2 / tp, twice in the backward) at hbm'.
//   W (bwd_weight_time_us) = the weight-gradient GEMMs (+ the W kernels' overheads).
// The fixed-efficiency model above (a device without a curve, or AnalyticOptions::efficiency > 0) is unchanged.
// Kernel overheads (both models): each layer also pays DeviceSpec::kernel_overhead_us per kernel it launches on a GPU, the
// same at any tp (so a small TP shard runs below FLOPs / tp). Kernels per layer, forward / backward / of which
// weight-gradient GEMMs (KernelCounts), the kernels the curve prices: transformer block 10 + r + n / twice that
// / 4 (two norms, QKV, attention, output projection, two bias-dropout-add residuals, FC1, activation, FC2;
// r = 1 rotary for causal decoders, n = 1 q/k norm when present; W = the four weight GEMMs), projector 2n / 4n /
// n for n Linear layers, embedding 1 / 2 / 1, LM head 3 / 6 / 1.
// With eager kernels (KernelImpl) a transformer block launches instead: each RMSNorm 8 / 15 (eager_norm; the q/k
// norm 16 / 30 for q and k), rotary 10 / 18 for q and k (eager_rotary), SwiGLU 2 / 3 (eager_activation), QKV 3 and
// a SwiGLU FC1 2 GEMMs, each with two backward GEMMs and one W (split_projections); the LM head's loss 3 / 3
// instead of 1 / 2 (eager_loss).
struct KernelCounts {
  int fwd = 0, bwd = 0, bwd_weight = 0;
};
KernelCounts KernelsOf(const ModelSpec& m, const Layer& layer, const KernelImpl& kernels = {});

// Backward working memory of one layer (LayerCost::bwd_work_bytes of the analytic model), bf16 gradients of 2
// bytes, per GPU; T = tokens, h = hidden, t = tp, f = ffn, f_in = f (GELU) or 2 f (SwiGLU: gate and up), a / k
// = query / KV heads, d = head_dim:
//   transformer block  max(MLP, attention) + 2·T·h: the MLP's backward holds the gradients of FC1's output and
//                      of FC2's input, 2·T·(f_in + f) / t; the attention's holds dQ, dK, dV, 2·T·(a + 2k)·d / t,
//                      and flash attention's fp32 dQ accumulator, 4·T·a·d / t; both with the incoming gradient of
//                      the block's output, 2·T·h (whole: sequence parallelism all-gathers it before the
//                      row-parallel GEMMs' backward)
//   LM head            4·T·V / t + 2·T·V / t: the loss's gradient of the fp32 logits (PyTorch's log_softmax
//                      backward allocates it; Megatron's vocab-parallel cross entropy writes it into its saved
//                      softmax instead) and its bf16 copy for the head GEMM's backward, both live at the cast;
//                      with chunked logits (KernelImpl::chunked_logits) one chunk's bf16 logits, 2·C·V / t, C =
//                      min(T, next_pow2(ceil(T / ceil(V / h)))) tokens (Liger's chunk: about T·h elements; the
//                      transient of its forward, where the gradients are computed)
//   projector          2·T·(d_in + d_out) / t of its widest Linear (the gradients of its output and its input)
//   embedding          the gradient of its output, 2·T·h / t (vision, LLM; audio twice: conv1's output)
// 0 when the workload has no tokens.
int64_t AnalyticBackwardWorkBytes(const ModelSpec& m, const Layer& layer, const LayerWorkload& w, int tp,
                                  const KernelImpl& kernels = {});
// Liger's token chunk of the fused linear cross-entropy: min(T, next_pow2(ceil(T / ceil(V / h)))) (0 when T <= 0).
int64_t ChunkedLogitsTokens(int64_t tokens, int64_t vocab, int64_t hidden);
// Byte counts of the memory-bound kernels (bf16 = 2 bytes per element), forward / backward, per element of
// the tensor named; the backward reads what the forward saved and the output gradient and writes the input
// gradient. Bias adds are fused into the next elementwise kernel (Megatron-LM's bias-GeLU, bias-SwiGLU and
// bias-dropout-add fusions), so they move no bytes of their own.
inline constexpr double kBf16Bytes = 2;
inline constexpr double kNormFwdBytesPerElem = 4;  // read x, write y (LayerNorm / RMSNorm)
inline constexpr double kNormBwdBytesPerElem = 6;  // read x and dy, write dx
inline constexpr double kResidualFwdBytesPerElem =
    7;  // bias-dropout-add: read branch and residual, write the
        // sum, write the 1-byte dropout mask
inline constexpr double kResidualBwdBytesPerElem = 5;  // read dy and the mask, write the branch's gradient
inline constexpr double kRotaryBytesPerElem = 4;       // read and write q and k (either pass)
inline constexpr double kGeluFwdBytesPerElem = 4;      // per FFN column: read x, write gelu(x)
inline constexpr double kGeluBwdBytesPerElem = 6;      // read x and dy, write dx
inline constexpr double kSwiGluFwdBytesPerElem = 6;   // per FFN column: read gate and up, write their product
inline constexpr double kSwiGluBwdBytesPerElem = 10;  // read gate, up and dy, write dgate and dup
inline constexpr double kLossFwdBytesPerLogit = 8;   // fp32 logits written, read by the softmax cross-entropy
inline constexpr double kLossBwdBytesPerLogit = 6;   // their gradient: read in fp32, written in bf16
// Chunked logits (Liger's fused linear cross-entropy): its cross-entropy kernel reads a chunk's bf16 logits and
// writes their gradient in place (the softmax in registers, fp32): 4 bytes per logit, all in the forward; the
// backward only scales the stored gradients (nothing per logit).
inline constexpr double kChunkedLossFwdBytesPerLogit = 4;
inline constexpr double kScoresFwdBytesPerPair = 8;  // unfused attention, per head: scores written, softmax
                                                     // read + write, read by P V
// Eager kernels (KernelImpl), bytes per element the same way, counted op by op from the code KernelImpl names
// (bf16 activations, fp32 where the code casts; broadcast operands such as cos/sin, the norm weight and per-row
// statistics are small and not counted). The backward is autograd's: each op's backward kernels plus the adds
// that accumulate gradients of a tensor used twice.
//   RMSNorm: forward float() 2+4, pow 4+4, mean 4, x*rsqrt 4+4, type_as 4+2, *weight 2+2 = 36; backward
//     g*weight 2+2, weight grad (g*y, sum) 4+2+2, to fp32 2+4, g*rsqrt 4+4, d rsqrt (g*x, sum) 8+4+4, mean's
//     expand 4, pow's grad * (2 * x.pow(1)) as autograd's pow_backward runs it (the copy x.pow(1) 4+4, times 2
//     4+4, times grad 8+4), the two paths summed 8+4, to bf16 4+2 = 92 (15 kernels).
//   rotary (per element of q and of k): forward q*cos 2+2, neg of half 2, cat 2+2, *sin 2+2, add 4+2 = 20;
//     backward g*cos 2+2, g*sin 2+2, neg 2, the two halves' slice gradients (each a zeroed full tensor, 2, and
//     its half copied in, 1+1) 8, the three gradients of q summed (two adds) 8+4 = 30 (9 kernels; torchtitan's
//     complex form moves 20 and 20 in 3 kernels each: within these counts for its forward, 10 bytes fewer
//     backward).
//   SwiGLU (per FFN column): forward silu 2+2, * up 4+2 = 10; backward d up 4+2, d silu-out 4+2, silu's
//     backward 4+2 = 18.
//   residual add (per hidden element, twice a block): forward 4+2 = 6; backward, the two gradients of the
//     block input summed, 4+2 = 6.
//   loss (per logit): forward float() 2+4, log_softmax 4+4 = 14; backward nll's scatter 4, log_softmax's 8+4,
//     to bf16 4+2 = 22 (HF's shifted-logits copy, 8 / 12 more, not counted).
inline constexpr double kEagerRmsNormFwdBytesPerElem = 36;
inline constexpr double kEagerRmsNormBwdBytesPerElem = 92;
inline constexpr double kEagerRotaryFwdBytesPerElem = 20;
inline constexpr double kEagerRotaryBwdBytesPerElem = 30;
inline constexpr double kEagerSwiGluFwdBytesPerElem = 10;
inline constexpr double kEagerSwiGluBwdBytesPerElem = 18;
inline constexpr double kEagerResidualFwdBytesPerElem = 6;
inline constexpr double kEagerResidualBwdBytesPerElem = 6;
inline constexpr double kEagerLossFwdBytesPerLogit = 14;
inline constexpr double kEagerLossBwdBytesPerLogit = 22;
// FlashAttention-2's backward does 5 matmuls against the forward's 2 (it recomputes the scores): 2.5x the
// forward's FLOPs (Dao 2023, section 4.1: the FLOP count of its backward benchmarks).
inline constexpr double kAttnBwdFlopsRatio = 2.5;
// Mixed-precision Adam per parameter the rank updates: reads the bf16 gradient (2), fp32 master weight, m and
// v (12); writes master, m, v (12) and the bf16 weight (2): 28 bytes. Gradient-norm clipping: the norm reads
// the gradients (2), the scaling reads and writes them (4): 6 bytes. (Megatron-LM's DistributedOptimizer /
// apex FusedAdam with clip_grad; PyTorch's clip_grad_norm_ and fused AdamW move the same bytes.)
inline constexpr double kOptimizerBytesPerParam = 34;
// HBM bytes of the optimizer step (Adam + gradient clipping) for `params` parameters.
double OptimizerStepBytes(double params);
// Parameters whose optimizer step one GPU runs: its pipeline stage's `stage_params` over tp, and over dp with
// ZeRO stage 1 or more (each DP rank updates its shard of the optimizer states).
double OptimizerParamsPerGpu(double stage_params, int tp, int dp, int zero_stage);

class AnalyticCostModel : public CostModel {
 public:
  AnalyticCostModel(DeviceSpec device, AnalyticOptions options = {});
  // FullBackwardCost with the layer's backward mode applied (ApplyBackward(layer.backward, ...)).
  LayerCost Cost(const ModelSpec& m, const Layer& layer, const LayerWorkload& w) const override;
  // The layer as if it trained (a full backward whatever Component::frozen says).
  LayerCost FullBackwardCost(const ModelSpec& m, const Layer& layer, const LayerWorkload& w) const;
  Status Supports(const ModelSpec&) const override { return Status(); }
  std::string name() const override { return "analytic"; }
  const DeviceSpec& device() const { return device_; }
  const AnalyticOptions& options() const { return options_; }
  // FLOP/s the fixed-efficiency model assumes a GPU achieves (peak x efficiency; the curve model's asymptote
  // is peak x gemm_peak_fraction instead).
  double achieved_flops() const;
  // Whether times come from the device's curves (it has one and no options.efficiency forces the fixed one).
  bool uses_curve() const { return device_.has_compute_curve() && options_.efficiency <= 0; }
  // The curve model's pieces, microseconds on one GPU (the device's curve parameters; see above):
  // one GEMM (m x k) . (k x n);
  double GemmUs(double m, double n, double k) const;
  // the flash-attention core of `heads` heads of head_dim over spans with sum of span^2 `pairs` and sum of
  // spans `span_sum` (pairs halved when causal: the span term, each query tile's fixed cost, is not), forward
  // and backward;
  double AttentionFwdUs(double heads, double head_dim, double pairs, double span_sum, bool causal) const;
  double AttentionBwdUs(double heads, double head_dim, double pairs, double span_sum, bool causal) const;
  // `bytes` moved by a memory-bound kernel; the optimizer step of params_per_gpu parameters (0 without a curve:
  // the fixed-efficiency model has none).
  double MemoryUs(double bytes) const;
  double OptimizerStepUs(double params_per_gpu) const;
  // hbm_bytes_per_s x hbm_peak_fraction (x 1 when the device gives no fraction).
  double hbm_achieved_bytes_per_s() const;

 private:
  struct CurveTimes {
    double fwd_us = 0, bwd_us = 0, bwd_weight_us = 0;
  };
  CurveTimes CurveTimesOf(const ModelSpec& m, const Layer& layer, const LayerWorkload& w) const;
  DeviceSpec device_;
  AnalyticOptions options_;
};

// time_us = c0_us + token_us * tokens + pair_us * attn_pairs, forward and backward, per layer type. Optionally
// (has_memory) the layer's activation bytes too, per rank: act_bytes = act_c0_bytes + act_token_bytes * tokens
// + act_pair_bytes * attn_pairs stored for the backward, act_bytes_recompute = kept_token_bytes * tokens kept
// when it is recomputed; without them the analytic (Korthikanti) bytes apply. Optionally (has_work) the
// backward's working memory: bwd_work_bytes = work_c0_bytes + work_token_bytes * tokens + work_pair_bytes *
// attn_pairs; without them 0, as in the analytic model.
struct TimeCoefficients {
  double fwd_c0_us = 0, fwd_token_us = 0, fwd_pair_us = 0;
  double bwd_c0_us = 0, bwd_token_us = 0, bwd_pair_us = 0;
  bool has_memory = false;
  double act_c0_bytes = 0, act_token_bytes = 0, act_pair_bytes = 0, kept_token_bytes = 0;
  bool has_work = false;
  double work_c0_bytes = 0, work_token_bytes = 0, work_pair_bytes = 0;
};

// Per layer type (component source, e.g. "internlm2-20b", and layer kind) coefficients; a source of "*"
// matches any component. FLOPs and bytes come from the analytic model given at construction.
//
// CSV format (like the trace format of traces/README.md, '#' comment lines allowed):
//   # mmtwin-cost-coefficients v1
//   source,layer_kind,fwd_c0_us,fwd_token_us,fwd_pair_us,bwd_c0_us,bwd_token_us,bwd_pair_us
//   internlm2-20b,transformer,35.0,0.061,1.1e-06,70.0,0.122,2.2e-06
// layer_kind is one of embedding, transformer, projector, head, or `optimizer` (source `*`, at most one row):
// the optimizer step of the parameters one GPU updates, fwd_c0_us + fwd_token_us x parameters (its other time
// columns 0 and its memory cells empty; a calibrated profile fits it to the measured optimizer ops, the simulator
// then uses it in place of the analytic HBM time). Optional columns act_c0_bytes,
// act_token_bytes, act_pair_bytes, kept_token_bytes (all four, or none) give a row's memory; a row with all four
// cells empty keeps the analytic bytes. Optional columns work_c0_bytes, work_token_bytes, work_pair_bytes (all
// three, or none) give the backward's working memory; a row with the three cells empty has none (0).
class CoefficientCostModel : public CostModel {
 public:
  explicit CoefficientCostModel(AnalyticCostModel bytes_and_flops);
  static Result<CoefficientCostModel> Load(const std::string& path, AnalyticCostModel bytes_and_flops);
  static Result<CoefficientCostModel> Parse(const std::string& csv_text, const std::string& name,
                                            AnalyticCostModel bytes_and_flops);

  void Set(const std::string& source, LayerKind kind, const TimeCoefficients& c);
  // The coefficients for (source, kind), falling back to ("*", kind); nullptr if neither exists.
  const TimeCoefficients* Find(const std::string& source, LayerKind kind) const;
  // The optimizer row: c0_us + param_us x parameters per GPU.
  void SetOptimizer(double c0_us, double param_us);
  std::optional<double> MeasuredOptimizerStepUs(double params_per_gpu) const override;
  // CSV text in the format above (rows sorted), and an atomic write of it.
  std::string Format() const;
  Status Save(const std::string& path) const;

  LayerCost Cost(const ModelSpec& m, const Layer& layer, const LayerWorkload& w) const override;
  Status Supports(const ModelSpec& m) const override;
  std::string name() const override { return "coefficients"; }

 private:
  AnalyticCostModel analytic_;
  std::map<std::pair<std::string, int>, TimeCoefficients> table_;
  std::optional<std::pair<double, double>> optimizer_;  // (c0_us, param_us)
  // Where each row was read (Parse): Supports names a row that prices no layer of the model.
  std::string table_name_;
  std::map<std::pair<std::string, int>, long> row_lines_;
};

}  // namespace mmtwin

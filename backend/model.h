// SPDX-License-Identifier: Apache-2.0
// The backend's model in LibTorch (only backend/ includes Torch): one module per layer of Layers(spec), in the
// same order and of the same kinds, built from the (shrunk) ModelSpec the simulator prices.
//
//   vision.embed   patch embedding (a stride-p convolution written as a linear over flattened 3 x p x p patches),
//                  CLS tokens, learned positions
//   vision.block.i pre-norm ViT block: norm (LayerNorm or RMSNorm), attention over each tile / frame as its own
//                  span (bidirectional; optional QK norm), norm, MLP (GELU or SwiGLU), residuals
//   projector      drop CLS, pixel shuffle (groups of DownsampleFactor consecutive positions concatenated),
//                  optional LayerNorm, Linear / GELU / ... / Linear into the LLM's width
//   audio.embed    two Conv1d (k 3, the second stride 2) over synthetic mel frames (100 / s), GELU, positions
//   audio.block.i  as the ViT block, attention within each window (window_seconds)
//   llm.embed      token embedding of the text, then each sample's sequence = its vision tokens, audio tokens,
//                  text (packed: samples concatenated, attention never crosses a sample)
//   llm.block.i    pre-norm decoder block: RMSNorm, GQA attention (kv heads repeated), causal within each
//                  sample, SwiGLU (or GELU) MLP
//   llm.head       final norm, LM head, cross entropy against synthetic labels; the loss of a micro-batch is
//                  sum(CE) / (LLM tokens of the whole iteration over every DP rank), so that the gradients of
//                  any layout sum to those of one process running every micro-batch (the reference)
//
// Parameters of layer l are drawn from a generator seeded with (seed, l) whatever rank builds them; the
// synthetic inputs of a sample from (seed, sample index). Rotary position embeddings are left out (they do not
// change the work measured beyond a few element-wise ops). Everything is fp32.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cost/cost_model.h"
#include "core/model/model.h"
#include "core/trace/trace.h"

namespace mmtwin::backend {

// Shapes of one sample under the model (from TokensFor and the spec).
struct SampleShape {
  uint32_t index = 0;     // trace sample index
  int64_t units = 0;      // vision tiles + frames
  int64_t audio_pos = 0;  // audio encoder positions (after the stride-2 convolution)
  int64_t vision_llm = 0, audio_llm = 0, text = 0;
  int64_t llm_tokens = 0;  // TokensFor(...).llm_tokens: vision_llm + audio_llm + text, unless the model's
      // max_context cut into the encoder tokens (LlmEmbed keeps the first llm_tokens rows)
  int64_t pad = 0;  // padded plans: pad tokens after the sample, up to the micro-batch's longest (no loss)
  // Padded plans: pad positions after the sample's audio, up to the longest audio of the micro-batch's audio
  // samples (Whisper-style batching; silence frames, attended within the windows, dropped before the
  // projector), as the simulator prices padded audio (ComponentWorkload).
  int64_t audio_pad = 0;
};

// A micro-batch: its samples in plan order.
struct MicroBatch {
  std::vector<SampleShape> samples;
  int64_t llm_tokens = 0;
  int64_t vit_tokens = 0;  // vision encoder positions
  int64_t audio_pos = 0;
  double attention_pairs = 0;  // causal LLM pairs: sum n (n + 1) / 2 over samples
  uint64_t seed = 1;           // synthetic inputs: drawn from (seed, sample index)
  int64_t loss_tokens = 1;     // LLM tokens of the whole iteration (all DP ranks): the loss divisor
  // Per component, the workload as the simulator prices it (core/cost ComponentWorkload: tokens, spans, the
  // full-square attention pairs): the features of the per-layer profile (layers.csv) that calibration fits.
  std::vector<LayerWorkload> workloads;
};

// `packed` false (a padded plan, Plan::packed): every sample's LLM sequence is padded to the micro-batch's
// longest, as the simulator prices it (the pads come after the sample's tokens, so causal attention keeps them
// out of the real tokens' results, and they carry no loss: gradients equal the packed run's).
MicroBatch MakeMicroBatch(const ModelSpec& m, const Trace& trace, const std::vector<uint32_t>& samples,
                          uint64_t seed, int64_t loss_tokens, bool packed = true);

// What flows between layers (and between pipeline ranks): the outputs of the encoders already projected into
// the LLM's width (in component order), and the current hidden state (undefined between a projector and the
// next embedding). A loss is set by the head.
struct State {
  std::vector<at::Tensor> done;
  at::Tensor x;
  at::Tensor loss;
  // The tensors that cross a boundary, in a fixed order: done..., then x when defined.
  std::vector<at::Tensor> Parts() const;
  static State FromParts(std::vector<at::Tensor> parts, bool has_x);
};

// Tensor parallelism (Megatron-LM): this rank's place in its TP group and the group's in-place sum all-reduce
// (rank.cc supplies it over c10d). Transformer blocks shard Q/K/V and the MLP's up (and gate) projections by rows
// (column-parallel, heads and FFN split) and the attention output and MLP down projections by columns
// (row-parallel); their input goes through "copy to TP" (identity forward, all-reduce of the gradient backward),
// their output through "reduce from TP" (all-reduce forward, identity backward). Everything else is replicated,
// and its gradients agree on every TP rank without communication.
struct TpGroup {
  int size = 1, rank = 0;
  std::function<void(at::Tensor&)> all_reduce;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual State Forward(State in, const MicroBatch& mb) = 0;
  // Named parameters ("vision.block.3.attn.q.weight"), in a fixed order.
  std::vector<std::pair<std::string, at::Tensor>>& params() { return params_; }
  // Per parameter: the dimension it is split along over the TP group (-1: replicated).
  const std::vector<int>& shard_dims() const { return shard_dims_; }
  const std::string& label() const { return label_; }
  LayerKind kind() const { return kind_; }

 protected:
  // Drawn whole from `gen` (so every layout draws the same numbers), then, when `shard_dim` >= 0 and `tp` has
  // more than one rank, this rank's slice along `shard_dim`.
  at::Tensor Param(const std::string& name, at::IntArrayRef shape, at::Generator& gen, double scale,
                   int shard_dim = -1, const TpGroup* tp = nullptr);
  at::Tensor Ones(const std::string& name, int64_t n);
  at::Tensor Zeros(const std::string& name, int64_t n, int shard_dim = -1, const TpGroup* tp = nullptr);
  at::Tensor Keep(const std::string& name, at::Tensor t, int shard_dim, const TpGroup* tp);
  std::vector<std::pair<std::string, at::Tensor>> params_;
  std::vector<int> shard_dims_;
  std::string label_;
  LayerKind kind_ = LayerKind::kTransformer;
};

// The layer `index` of Layers(model), with its parameters drawn from (seed, index); transformer blocks split
// over `tp` when it has more than one rank (heads, KV heads and FFN must divide by it; no QK norm).
std::unique_ptr<Layer> MakeLayer(const ModelSpec& m, int index, uint64_t seed, const TpGroup* tp = nullptr);

}  // namespace mmtwin::backend

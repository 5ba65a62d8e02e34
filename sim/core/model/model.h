// SPDX-License-Identifier: Apache-2.0
// Model specs: an ordered, typed list of components (vision encoder, projector, audio encoder, LLM), each with
// enough architecture to count parameters and price a layer for a given input.
//
// Specs are data files under traces/models/ (YAML; traces/models/README.md documents the keys). Composite models
// reference encoder and LLM files by name and add projectors. Multi-encoder models (OrchMLLM) list several
// encoders; every encoder feeds the LLM.
//
//   MMTWIN_ASSIGN_OR_RETURN(ModelSpec m, LoadModel("internvl-1.5-6b-20b"));
//   SampleTokens tok = TokensFor(m, sample);   // ViT tokens, LLM tokens, ... of one trace sample
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace mmtwin {

enum class ComponentKind { kVision, kAudio, kProjector, kLlm };
const char* ComponentKindName(ComponentKind k);

enum class MlpKind { kGelu, kSwiGlu };  // 2 matrices, or 3 (gate, up, down)
enum class NormKind { kLayerNorm, kRmsNorm };

// A stack of identical transformer blocks plus the component's embeddings/head.
struct TransformerConfig {
  int layers = 0;
  int64_t hidden = 0;
  int64_t ffn = 0;
  int heads = 0;
  int kv_heads = 0;      // = heads for MHA
  int64_t head_dim = 0;  // hidden / heads unless given
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  bool qkv_bias = false;
  bool out_bias = false;  // attention output and MLP biases
  bool qk_norm = false;
  bool causal = false;  // LLM decoders; encoders attend bidirectionally
};

// How a vision encoder turns a sample's images into encoder positions and LLM tokens (the `input.resize` key;
// traces/models/README.md). Video frames are always fed at image_px.
//   kTiles    every tile of the trace's image_tiles at image_px (InternVL dynamic tiling, LLaVA-1.6 AnyRes; the
//             trace's tiles include the thumbnail). The default, and what mmtwin priced before the key existed.
//   kFixed    every image resized to image_px, whatever its size: `images` units (LLaVA-1.5 at 336 px).
//   kIfLarger native resolution up to a cap (OrchMLLM's ViTs, Qwen2-VL-style encoders): an image larger than
//             image_px is resized down to it, a smaller one keeps its size. With n = min(ceil(side / patch_px),
//             floor(image_px / patch_px)) patches per side, side = the trace's Sample::image_px: positions per
//             image n^2 + cls_tokens, LLM tokens ceil(n / token_merge)^2 (token_merge required). A sample whose
//             size is not known (image_px 0) is priced at the cap: an upper bound (SampleTokens::unsized_images).
enum class ImageResize { kTiles, kFixed, kIfLarger };
const char* ImageResizeName(ImageResize r);  // "tiles", "fixed", "if_larger"

// How a component consumes a sample.
struct EncoderInput {
  // Vision: a tile/image of `image_px` pixels with patch `patch_px` gives (image_px/patch_px)^2 patches (+cls).
  // For ImageResize::kIfLarger image_px is the cap (the upper bound of the resolution).
  int image_px = 0;
  int patch_px = 0;
  int cls_tokens = 0;
  // Audio: positions per second of audio after the front-end convolutions (Whisper: 50/s), window in seconds.
  double tokens_per_second = 0;
  double window_seconds = 0;  // audio is processed in windows of this length (0 = no windowing)
  int mel_bins = 0;
  // Tokens handed to the LLM per tile / frame / second after downsampling (pixel shuffle, pooling, projector).
  double llm_tokens_per_unit = 0;
  // Vision: encoder positions merged per side into one LLM token (1: none, LLaVA; 2: InternVL's pixel shuffle 0.5,
  // VILA's 2x2 mlp_downsample). Given (> 0), llm_tokens_per_unit = ceil(side / token_merge)^2 with
  // side = floor(image_px / patch_px), derived when not written and checked when written, and re-derived when a
  // composite or a scenario changes image_px. 0 = not given: llm_tokens_per_unit is taken as written.
  int token_merge = 0;
  ImageResize resize = ImageResize::kTiles;  // vision only
};

struct Component {
  std::string name;    // e.g. "vision", "projector", "llm", "audio"
  std::string source;  // spec it came from, e.g. "internvit-6b-448px-v1-5"
  ComponentKind kind = ComponentKind::kLlm;
  TransformerConfig tf;  // empty (layers == 0) for an MLP projector
  EncoderInput input;    // encoders only
  int64_t vocab = 0;     // LLM only
  bool tied_embeddings = false;
  // Projector: sequence of linear widths, e.g. {12800, 6144, 6144} = Linear(12800->6144), Linear(6144->6144);
  // `projector_norm` adds a LayerNorm on the input width.
  std::vector<int64_t> projector_dims;
  bool projector_norm = false;
  int64_t conv_params = 0;  // front-end convolutions (Whisper) counted as parameters only
  // Frozen in training (a scenario's `model: {frozen: [NAME, ...]}`, WithFrozen): its parameters get no
  // gradients, no optimizer states and no gradient communication; its backward computes at most the input
  // gradient (BackwardOf).
  bool frozen = false;
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::vector<Component> components;  // encoders and projectors first, the LLM last
  // The LLM tokens per sample the training recipe keeps (spec key `max_context`; 0 = no limit). A longer sample
  // is cut to it after its image and audio tokens are inserted, as LLaVA does (llava/model/llava_arch.py
  // `prepare_inputs_labels_for_multimodal`: the embeddings cut at `tokenizer_model_max_length`); the encoders
  // still see every image and frame. TokensFor applies it; the run summary counts the samples cut. Set on an llm
  // spec, it carries into a composite that uses it, unless the composite sets its own; an encoder spec has none.
  int64_t max_context = 0;
  // How the LLM attends within a sample's vision tokens (a scenario's `model: {image_attention: ...}`):
  // false = causal like the text (LLaVA, InternVL, Qwen2-VL); true = every vision token of a sample attends to
  // all of the sample's vision tokens, which sit at its start (one bidirectional span, v = vision_llm_tokens
  // capped at llm_tokens), the text after them causal (Gemma 3, PaliGemma's prefix; Cornstarch's multimodal
  // masks). The LLM's attention then covers n^2 + v (v - 1) square pairs per sample instead of n^2
  // (ComponentWorkload, core/cost/cost_model.h), and sequence parallelism splits that work (core/plan/seqpar.h).
  bool bidirectional_vision = false;

  const Component* Find(ComponentKind k) const;
  const Component& llm() const;  // the LLM component (a valid spec has exactly one)
};

// Kind of one layer in the flattened, ordered layer list used by partitioning and the cost model.
enum class LayerKind { kEmbedding, kTransformer, kProjector, kHead };

// What a layer's backward computes, by what trains (Component::frozen) along the data flow: an encoder's layers
// feed its later layers, a projector's its encoder's, the LLM's blocks and head take the LLM embedding and every
// encoder and projector (through the merged sequence), the LLM embedding takes token ids (nothing).
//   kFull       a trained layer: input gradient (B) and weight gradient (W);
//   kInputOnly  a frozen layer that something upstream of it trains: the input gradient only (no W: its
//               weight-gradient GEMMs, their FLOPs and, in a split backward, the W op are gone);
//   kNone       a frozen layer with nothing trained upstream: no backward at all, and it stores no activations
//               for one (PyTorch records no graph when no input and no parameter requires a gradient).
// Without frozen components every layer is kFull.
enum class LayerBackward { kFull, kInputOnly, kNone };

struct Layer {
  int component = 0;  // index into ModelSpec::components
  LayerKind kind = LayerKind::kTransformer;
  int index = 0;  // index within its component (block number)
  int64_t params = 0;
  std::string label;  // e.g. "vision.block.12", "llm.embed"
  bool frozen = false;  // its component is frozen (Component::frozen): params get no gradient
  LayerBackward backward = LayerBackward::kFull;  // BackwardOf, set by Layers()
};

const char* LayerBackwardName(LayerBackward b);  // "full", "input_only", "none"
// The rule above for a layer of `m` (its component and kind; Layers() stores it in Layer::backward).
LayerBackward BackwardOf(const ModelSpec& m, const Layer& layer);
// The model with the named components frozen (a scenario's `model: {frozen: [...]}`): Component::frozen set,
// the name suffixed "-frozen-NAME" per component (in the spec's order). Errors: an unknown component name
// (listing the valid ones), a name given twice, every component frozen (nothing would train).
Result<ModelSpec> WithFrozen(const ModelSpec& m, const std::vector<std::string>& components);
// Parameters of the model's frozen components (0 without any).
int64_t FrozenParams(const ModelSpec& m);
// Per layer of `layers`, its parameters when it is frozen, else 0 (the memory model's `layer_frozen_params`).
std::vector<int64_t> FrozenLayerParams(const std::vector<Layer>& layers);

// Loads a spec by name from the model zoo (traces/models/NAME.yaml) or by path (anything containing '/' or
// ending in .yaml). An unknown name is an error listing the valid ones.
Result<ModelSpec> LoadModel(const std::string& name_or_path);
// Parses YAML text (`name` for messages; `resolve_dir` is where referenced component specs are looked up first,
// then the model zoo).
Result<ModelSpec> ParseModel(const std::string& yaml_text, const std::string& name,
                             const std::string& resolve_dir);
// Names of every spec in the zoo, sorted.
std::vector<std::string> ListModels();
// Directory of the zoo: DataDir()/models (core/util/data_dir.h: $MMTWIN_DATA_DIR, an installed share/mmtwin, or
// the source tree's traces/).
std::string ModelZooDir();

// Flattened layers in execution order: per encoder embedding + blocks, projector, LLM embedding + blocks + head.
std::vector<Layer> Layers(const ModelSpec& m);
int64_t ComponentParams(const ModelSpec& m, int component);
int64_t TotalParams(const ModelSpec& m);
// Whether tensor parallelism of degree `tp` divides the stack's attention heads and KV heads (kv_heads 0 = heads),
// as Megatron-LM asserts; mmtwin prices a TP degree that does not as padded heads (core/cost) and says so.
bool TpDividesHeads(const TransformerConfig& t, int tp);

// Token counts of one sample under a model (the first vision encoder and the first audio encoder of the spec).
// Vision units are the sample's tiles (resize tiles) or images (fixed, if_larger), plus its video frames; each
// unit is its own attention span (units attend only within themselves).
struct SampleTokens {
  int64_t vit_tokens = 0;         // vision encoder positions: sum over units of the unit's positions
  int64_t vision_units = 0;       // vision units: tiles or images, + frames (ISF's "images")
  int64_t audio_tokens = 0;       // audio encoder positions
  int64_t llm_tokens = 0;         // text + vision_llm_tokens + downsampled audio tokens
  int64_t vit_span_tokens = 0;    // positions of one image unit (of one frame when the sample has no image)
  int64_t vision_llm_tokens = 0;  // LLM tokens from the vision encoder (what its projector carries)
  double vit_attn_pairs = 0;      // sum over the units of span^2 (bidirectional attention within each unit)
  int32_t if_larger_images = 0;   // images an if_larger encoder priced by their size
  int32_t unsized_images = 0;     // of those, priced at the cap because the trace has no size (upper bound)
  bool truncated = false;         // llm_tokens was cut to the model's max_context
};
SampleTokens TokensFor(const ModelSpec& m, const Sample& s);
// The LLM tokens of a sample's bidirectional vision span (ModelSpec::bidirectional_vision): its vision tokens,
// at most its LLM tokens (a truncated sample keeps the span's start).
inline int64_t VisionSpanTokens(const SampleTokens& t) {
  return t.vision_llm_tokens < t.llm_tokens ? t.vision_llm_tokens : t.llm_tokens;
}

// One image under an if_larger encoder (ImageResize::kIfLarger): positions n^2 + cls_tokens and LLM tokens
// ceil(n / token_merge)^2 with n = min(ceil(side_px / patch_px), floor(image_px / patch_px)); side_px 0 (not
// known) gives the cap's n. E.g. patch 14, cap 896, merge 2: a 300 px image has n = 22, 484 positions, 121 LLM
// tokens; a 1000 px one is capped at n = 64, 4096 positions, 1024 LLM tokens.
struct ImageTokens {
  int64_t positions = 0;
  int64_t llm_tokens = 0;
};
ImageTokens IfLargerImageTokens(const EncoderInput& in, int side_px);

// Architecture arithmetic, shared with the cost model (core/cost/cost_model.h).
//
// Parameters of one transformer block (attention, MLP, norms, biases), and the part of them held in weight
// matrices (q, k, v, o and the MLP matrices): what `2 * tokens * matmul params` FLOP counts use.
int64_t BlockParams(const TransformerConfig& tf);
int64_t BlockMatmulParams(const TransformerConfig& tf);
// Vision: encoder positions of one tile, floor(image_px / patch_px)^2 + cls_tokens. Audio: positions of one window
// (window_seconds * tokens_per_second, 0 without windowing). Other kinds: 0.
int64_t PositionsPerUnit(const Component& c);
// Vision: ceil(floor(image_px / patch_px) / token_merge)^2, the LLM tokens of one tile (0 without token_merge).
int64_t MergedTokensPerTile(const EncoderInput& in);
// The model with every vision encoder fed `image_px` tiles (a scenario's `model: {image_px: N}`): encoder
// positions per tile follow (floor(image_px / patch_px)^2 + cls) and so do LLM tokens per tile (token_merge);
// the position embedding is counted at the new size (interpolated, as InternVL and LLaVA do). The name gets the
// suffix "-Npx". Errors: no vision encoder; image_px outside [patch_px, 65536]; an encoder without token_merge.
Result<ModelSpec> WithImagePx(const ModelSpec& m, int image_px);
// The model with every vision encoder merging `token_merge` positions per side into one LLM token (a scenario's
// `model: {token_merge: N}`): LLM tokens per tile re-derived as ceil(floor(image_px / patch_px) / N)^2; the
// projector's input width is not changed (its FLOPs are priced per LLM token). The name gets the suffix
// "-mergeN". Errors: no vision encoder; N outside [1, 64].
Result<ModelSpec> WithTokenMerge(const ModelSpec& m, int token_merge);
// Index of the encoder a projector feeds from (the nearest encoder before it in the list), or -1.
int EncoderOfProjector(const ModelSpec& m, int component);
// "embedding", "transformer", "projector", "head"; and the inverse (false for an unknown name).
const char* LayerKindName(LayerKind k);
bool ParseLayerKind(const std::string& name, LayerKind& out);

// The shrunk model the real backend runs (shrink.cc).
//
// How the backend shrinks a zoo model so that it runs on CPUs: every width divided by `width_divisor` and, per
// component (by its name in the spec: "vision", "llm", ...), a number of blocks. Heads and KV heads are divided
// too (at least 1; heads stay a multiple of KV heads), the head dimension is kept: one attention score costs
// what it costs in the full model. Token counts (tiles, frames, audio windows, text) are not changed: the backend
// feeds the traced shapes.
struct ModelShrink {
  int width_divisor = 1;              // 1 = widths as in the spec
  std::map<std::string, int> layers;  // component name -> blocks (absent: as in the spec)
  bool active() const { return width_divisor > 1 || !layers.empty(); }
  bool operator==(const ModelShrink&) const = default;
};

// The derived spec both sides use: the simulator prices it and the backend builds it. Widths: hidden, ffn,
// vocab, heads and KV heads become max(1, w / d); a projector's widths are re-derived so that its input is the
// encoder's shrunk hidden times the downsample factor (pixel shuffle: 4 for InternVL) and its output the LLM's
// shrunk hidden. The name gets the suffix "-wD" (and "-lN" per changed component count). Errors: a divisor < 1,
// a layer count < 1, a component name the spec lacks (listing the valid ones).
Result<ModelSpec> ShrinkModel(const ModelSpec& m, const ModelShrink& shrink);

// The downsample factor of a projector between an encoder and the LLM: encoder positions per LLM token
// ((positions per unit - cls) / llm_tokens_per_unit for vision, tokens_per_second / llm_tokens_per_unit for
// audio), or 0 when it is not a positive integer (the backend cannot run such a model).
int DownsampleFactor(const Component& encoder);

}  // namespace mmtwin

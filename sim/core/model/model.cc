// SPDX-License-Identifier: Apache-2.0
// Model zoo: YAML parsing (yaml-cpp, every exception turned into an Error naming file:line and key),
// parameter counting from architecture numbers, and per-sample token counts. Keys are documented in
// traces/models/README.md.
#include "core/model/model.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "core/util/csv.h"
#include "core/util/data_dir.h"
#include "core/util/text.h"
#include "core/util/yaml_error.h"

namespace mmtwin {

const char* ComponentKindName(ComponentKind k) {
  switch (k) {
    case ComponentKind::kVision:
      return "vision";
    case ComponentKind::kAudio:
      return "audio";
    case ComponentKind::kProjector:
      return "projector";
    case ComponentKind::kLlm:
      return "llm";
  }
  return "?";
}

const char* ImageResizeName(ImageResize r) {
  switch (r) {
    case ImageResize::kTiles:
      return "tiles";
    case ImageResize::kFixed:
      return "fixed";
    case ImageResize::kIfLarger:
      return "if_larger";
  }
  return "?";
}

const char* LayerKindName(LayerKind k) {
  switch (k) {
    case LayerKind::kEmbedding:
      return "embedding";
    case LayerKind::kTransformer:
      return "transformer";
    case LayerKind::kProjector:
      return "projector";
    case LayerKind::kHead:
      return "head";
  }
  return "?";
}

bool ParseLayerKind(const std::string& name, LayerKind& out) {
  for (LayerKind k :
       {LayerKind::kEmbedding, LayerKind::kTransformer, LayerKind::kProjector, LayerKind::kHead}) {
    if (name == LayerKindName(k)) {
      out = k;
      return true;
    }
  }
  return false;
}

const Component* ModelSpec::Find(ComponentKind k) const {
  for (const Component& c : components)
    if (c.kind == k) return &c;
  return nullptr;
}

const Component& ModelSpec::llm() const {
  static const Component kNone{};
  const Component* c = Find(ComponentKind::kLlm);
  return c ? *c : kNone;
}

// ---------------------------------------------------------------------------------------------------------------
// Parameter arithmetic.

namespace {

int64_t NormParams(NormKind k, int64_t width) { return k == NormKind::kLayerNorm ? 2 * width : width; }

int64_t ProjectorParams(const Component& c) {
  int64_t p = 0;
  if (c.projector_norm && !c.projector_dims.empty()) p += 2 * c.projector_dims[0];  // LayerNorm(in)
  for (size_t i = 0; i + 1 < c.projector_dims.size(); ++i)
    p += c.projector_dims[i] * c.projector_dims[i + 1] + c.projector_dims[i + 1];
  return p;
}

// Whisper-style front end: Conv1d(mel -> h, k=3) and Conv1d(h -> h, k=3, stride 2), with biases.
int64_t WhisperConvParams(int64_t mel_bins, int64_t hidden) {
  return mel_bins * hidden * 3 + hidden + hidden * hidden * 3 + hidden;
}

int64_t EmbeddingParams(const Component& c) {
  const TransformerConfig& t = c.tf;
  switch (c.kind) {
    case ComponentKind::kVision: {
      const int64_t p = c.input.patch_px;
      const int64_t patch_embed = 3 * p * p * t.hidden + t.hidden;  // Conv2d(3 -> h, p x p) with bias
      return patch_embed + PositionsPerUnit(c) * t.hidden + c.input.cls_tokens * t.hidden;
    }
    case ComponentKind::kAudio:
      return c.conv_params + PositionsPerUnit(c) * t.hidden;
    case ComponentKind::kLlm:
      return c.vocab * t.hidden;
    case ComponentKind::kProjector:
      return 0;
  }
  return 0;
}

int64_t HeadParams(const Component& c) {
  return NormParams(c.tf.norm, c.tf.hidden) + (c.tied_embeddings ? 0 : c.vocab * c.tf.hidden);
}

}  // namespace

int64_t BlockMatmulParams(const TransformerConfig& t) {
  const int64_t q = t.hidden * t.heads * t.head_dim;
  const int64_t kv = 2 * t.hidden * t.kv_heads * t.head_dim;
  const int64_t o = int64_t{t.heads} * t.head_dim * t.hidden;
  const int64_t mlp = (t.mlp == MlpKind::kGelu ? 2 : 3) * t.hidden * t.ffn;
  return q + kv + o + mlp;
}

int64_t BlockParams(const TransformerConfig& t) {
  int64_t p = BlockMatmulParams(t);
  if (t.qkv_bias) p += int64_t{t.heads} * t.head_dim + 2 * int64_t{t.kv_heads} * t.head_dim;
  if (t.out_bias)
    p += t.hidden + (t.mlp == MlpKind::kGelu ? t.ffn : 2 * t.ffn) + t.hidden;  // o, MLP in, MLP out
  p += 2 * NormParams(t.norm, t.hidden);                                       // pre-attn, pre-MLP
  if (t.qk_norm)
    p += NormParams(t.norm, int64_t{t.heads} * t.head_dim) +
         NormParams(t.norm, int64_t{t.kv_heads} * t.head_dim);
  return p;
}

int64_t MergedTokensPerTile(const EncoderInput& in) {
  if (in.patch_px <= 0 || in.token_merge <= 0) return 0;
  const int64_t side = in.image_px / in.patch_px;
  const int64_t merged = (side + in.token_merge - 1) / in.token_merge;
  return merged * merged;
}

Result<ModelSpec> WithImagePx(const ModelSpec& m, int image_px) {
  ModelSpec out = m;
  bool any = false;
  for (Component& c : out.components) {
    if (c.kind != ComponentKind::kVision) continue;
    any = true;
    if (image_px < c.input.patch_px || image_px > (1 << 16))
      return Error("image_px " + std::to_string(image_px) + " is outside [patch_px " +
                   std::to_string(c.input.patch_px) + ", 65536] for encoder '" + c.name + "' of model '" +
                   m.name + "'");
    if (c.input.token_merge <= 0)
      return Error("encoder '" + c.name + "' of model '" + m.name +
                   "' gives llm_tokens_per_unit without input.token_merge, so its LLM tokens at another "
                   "resolution are unknown; add token_merge to its spec");
    c.input.image_px = image_px;
    c.input.llm_tokens_per_unit = static_cast<double>(MergedTokensPerTile(c.input));
  }
  if (!any)
    return Error("model '" + m.name + "' has no vision encoder to feed " + std::to_string(image_px) + " px");
  out.name += "-" + std::to_string(image_px) + "px";
  return out;
}

Result<ModelSpec> WithTokenMerge(const ModelSpec& m, int token_merge) {
  if (token_merge < 1 || token_merge > 64)
    return Error("token_merge " + std::to_string(token_merge) + " is outside [1, 64]");
  ModelSpec out = m;
  bool any = false;
  for (int ci = 0; ci < static_cast<int>(out.components.size()); ++ci) {
    Component& c = out.components[ci];
    if (c.kind != ComponentKind::kVision) continue;
    any = true;
    const int old = c.input.token_merge > 0 ? c.input.token_merge : 1;
    c.input.token_merge = token_merge;
    c.input.llm_tokens_per_unit = static_cast<double>(MergedTokensPerTile(c.input));
    // The projector after it takes merge^2 encoder positions as channels (pixel shuffle, 2x2 downsample): its
    // input width follows when it was written that way (every zoo composite).
    for (int pi = ci + 1; pi < static_cast<int>(out.components.size()); ++pi) {
      Component& p = out.components[pi];
      if (p.kind != ComponentKind::kProjector || EncoderOfProjector(out, pi) != ci) continue;
      if (!p.projector_dims.empty() && p.projector_dims[0] == int64_t{old} * old * c.tf.hidden)
        p.projector_dims[0] = int64_t{token_merge} * token_merge * c.tf.hidden;
    }
  }
  if (!any) return Error("model '" + m.name + "' has no vision encoder to merge tokens of");
  out.name += "-merge" + std::to_string(token_merge);
  return out;
}

ImageTokens IfLargerImageTokens(const EncoderInput& in, int side_px) {
  ImageTokens t;
  if (in.patch_px <= 0) return t;
  const int64_t cap = in.image_px / in.patch_px;
  int64_t n = cap;
  if (side_px > 0) n = std::min<int64_t>(cap, (int64_t{side_px} + in.patch_px - 1) / in.patch_px);
  t.positions = n * n + in.cls_tokens;
  const int64_t merge = std::max(1, in.token_merge);
  const int64_t merged = (n + merge - 1) / merge;
  t.llm_tokens = merged * merged;
  return t;
}

int64_t PositionsPerUnit(const Component& c) {
  if (c.kind == ComponentKind::kVision) {
    if (c.input.patch_px <= 0) return 0;
    const int64_t side = c.input.image_px / c.input.patch_px;
    return side * side + c.input.cls_tokens;
  }
  if (c.kind == ComponentKind::kAudio)
    return std::llround(c.input.window_seconds * c.input.tokens_per_second);
  return 0;
}

int EncoderOfProjector(const ModelSpec& m, int component) {
  for (int i = component - 1; i >= 0; --i) {
    ComponentKind k = m.components[i].kind;
    if (k == ComponentKind::kVision || k == ComponentKind::kAudio) return i;
  }
  return -1;
}

std::vector<Layer> Layers(const ModelSpec& m) {
  std::vector<Layer> out;
  for (int ci = 0; ci < static_cast<int>(m.components.size()); ++ci) {
    const Component& c = m.components[ci];
    auto add = [&](LayerKind kind, int index, int64_t params, const std::string& suffix) {
      out.push_back(Layer{ci, kind, index, params, c.name + "." + suffix, c.frozen});
      out.back().backward = BackwardOf(m, out.back());
    };
    if (c.kind == ComponentKind::kProjector) {
      add(LayerKind::kProjector, 0, ProjectorParams(c), "mlp");
      continue;
    }
    add(LayerKind::kEmbedding, 0, EmbeddingParams(c), "embed");
    const int64_t block = BlockParams(c.tf);
    for (int i = 0; i < c.tf.layers; ++i)
      add(LayerKind::kTransformer, i, block, "block." + std::to_string(i));
    if (c.kind == ComponentKind::kLlm) add(LayerKind::kHead, 0, HeadParams(c), "head");
  }
  return out;
}

int64_t ComponentParams(const ModelSpec& m, int component) {
  const Component& c = m.components.at(component);
  if (c.kind == ComponentKind::kProjector) return ProjectorParams(c);
  int64_t p = EmbeddingParams(c) + c.tf.layers * BlockParams(c.tf);
  if (c.kind == ComponentKind::kLlm) p += HeadParams(c);
  return p;
}

bool TpDividesHeads(const TransformerConfig& t, int tp) {
  if (tp <= 1 || t.heads <= 0) return true;
  const int kv = t.kv_heads > 0 ? t.kv_heads : t.heads;
  return t.heads % tp == 0 && kv % tp == 0;
}

const char* LayerBackwardName(LayerBackward b) {
  switch (b) {
    case LayerBackward::kFull:
      return "full";
    case LayerBackward::kInputOnly:
      return "input_only";
    case LayerBackward::kNone:
      return "none";
  }
  return "?";
}

LayerBackward BackwardOf(const ModelSpec& m, const Layer& layer) {
  const Component& c = m.components.at(layer.component);
  if (!c.frozen) return LayerBackward::kFull;
  // Upstream components (whole: a component is frozen or trained as a unit, so its own earlier layers train
  // iff it does, and it is frozen here).
  bool upstream_trains = false;
  if (c.kind == ComponentKind::kProjector) {
    const int e = EncoderOfProjector(m, layer.component);
    upstream_trains = e >= 0 && !m.components[e].frozen;
  } else if (c.kind == ComponentKind::kLlm && layer.kind != LayerKind::kEmbedding) {
    for (const Component& o : m.components)
      if (&o != &c && !o.frozen) upstream_trains = true;
  }
  return upstream_trains ? LayerBackward::kInputOnly : LayerBackward::kNone;
}

Result<ModelSpec> WithFrozen(const ModelSpec& m, const std::vector<std::string>& components) {
  ModelSpec out = m;
  std::string valid;
  for (const Component& c : m.components) valid += (valid.empty() ? "" : ", ") + c.name;
  for (size_t i = 0; i < components.size(); ++i) {
    const std::string& name = components[i];
    for (size_t j = 0; j < i; ++j)
      if (components[j] == name) return Error("component '" + name + "' is listed twice");
    bool found = false;
    for (Component& c : out.components)
      if (c.name == name) {
        c.frozen = true;
        found = true;
      }
    if (!found)
      return Error("model '" + m.name + "' has no component '" + name + "'; its components are: " + valid);
  }
  bool trains = false;
  for (const Component& c : out.components) trains = trains || !c.frozen;
  if (!trains) return Error("every component of '" + m.name + "' is frozen: nothing would train");
  for (const Component& c : out.components)
    if (c.frozen && !components.empty()) out.name += "-frozen-" + c.name;
  return out;
}

int64_t FrozenParams(const ModelSpec& m) {
  int64_t p = 0;
  for (int i = 0; i < static_cast<int>(m.components.size()); ++i)
    if (m.components[i].frozen) p += ComponentParams(m, i);
  return p;
}

std::vector<int64_t> FrozenLayerParams(const std::vector<Layer>& layers) {
  std::vector<int64_t> out;
  out.reserve(layers.size());
  for (const Layer& l : layers) out.push_back(l.frozen ? l.params : 0);
  return out;
}

int64_t TotalParams(const ModelSpec& m) {
  int64_t p = 0;
  for (int i = 0; i < static_cast<int>(m.components.size()); ++i) p += ComponentParams(m, i);
  return p;
}

// ---------------------------------------------------------------------------------------------------------------
// Tokens.

SampleTokens TokensFor(const ModelSpec& m, const Sample& s) {
  SampleTokens t;
  const Component* vision = m.Find(ComponentKind::kVision);
  const Component* audio = m.Find(ComponentKind::kAudio);
  const Component* llm = m.Find(ComponentKind::kLlm);
  int64_t llm_tokens = s.text_tokens;
  if (vision) {
    const EncoderInput& in = vision->input;
    const int64_t frames = s.video_frames;
    const int64_t unit_span = PositionsPerUnit(*vision);  // a tile or frame at image_px
    int64_t units = s.image_tiles, span = unit_span;
    if (in.resize != ImageResize::kTiles) units = s.images;
    if (in.resize == ImageResize::kIfLarger && units > 0) {
      const ImageTokens img = IfLargerImageTokens(in, s.image_px);
      span = img.positions;
      t.vision_llm_tokens =
          units * img.llm_tokens + std::llround(static_cast<double>(frames) * in.llm_tokens_per_unit);
      t.if_larger_images =
          static_cast<int32_t>(std::min<int64_t>(units, std::numeric_limits<int32_t>::max()));
      if (s.image_px == 0) t.unsized_images = t.if_larger_images;
    } else {
      t.vision_llm_tokens = std::llround(static_cast<double>(units + frames) * in.llm_tokens_per_unit);
    }
    t.vision_units = units + frames;
    t.vit_span_tokens = units > 0 ? span : unit_span;
    t.vit_tokens = units * span + frames * unit_span;
    t.vit_attn_pairs =
        static_cast<double>(units) * static_cast<double>(span) * static_cast<double>(span) +
        static_cast<double>(frames) * static_cast<double>(unit_span) * static_cast<double>(unit_span);
    llm_tokens += t.vision_llm_tokens;
  }
  if (audio && s.audio_seconds > 0 && audio->input.tokens_per_second > 0) {
    // The small epsilon keeps exact products (10 s * 50/s) from rounding up through floating-point noise.
    t.audio_tokens = static_cast<int64_t>(std::ceil(s.audio_seconds * audio->input.tokens_per_second - 1e-9));
    const double ratio = audio->input.llm_tokens_per_unit / audio->input.tokens_per_second;
    llm_tokens += static_cast<int64_t>(std::ceil(static_cast<double>(t.audio_tokens) * ratio - 1e-9));
  }
  if (m.max_context > 0 && llm_tokens > m.max_context) {
    llm_tokens = m.max_context;
    t.truncated = true;
  }
  t.llm_tokens = llm ? llm_tokens : 0;
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// YAML parsing.

namespace {

struct Ctx {
  std::string file;  // for messages
};

Error ErrAt(const Ctx& ctx, const YAML::Node& n, const std::string& key, const std::string& reason) {
  return Error::At(ctx.file, LineOf(n), key, reason);
}

template <class T>
const char* TypeName() {
  if constexpr (std::is_same_v<T, bool>) return "a boolean (true/false)";
  if constexpr (std::is_integral_v<T>) return "an integer";
  if constexpr (std::is_floating_point_v<T>) return "a number";
  return "a string";
}

// Reads map[key] into out if present. `present` (optional) tells whether it was there.
template <class T>
Status Get(const Ctx& ctx, const YAML::Node& map, const std::string& where, const std::string& key, T& out,
           bool* present = nullptr) {
  const YAML::Node n = map[key];
  if (present) *present = n.IsDefined();
  if (!n.IsDefined()) return Status();
  const std::string field = where.empty() ? key : where + "." + key;
  if (!n.IsScalar()) return ErrAt(ctx, n, field, std::string("expected ") + TypeName<T>());
  try {
    out = n.as<T>();
  } catch (const YAML::Exception&) {
    return ErrAt(ctx, n, field, std::string("'") + n.Scalar() + "' is not " + TypeName<T>());
  }
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    if (!(out >= 0)) return ErrAt(ctx, n, field, "must be non-negative");
  }
  return Status();
}

Status ParseTransformer(const Ctx& ctx, const YAML::Node& n, TransformerConfig& t) {
  const std::string w = "transformer";
  MMTWIN_RETURN_IF_ERROR(CheckKeys(n, ctx.file, w,
                                   {"layers", "hidden", "ffn", "heads", "kv_heads", "head_dim", "mlp", "norm",
                                    "qkv_bias", "out_bias", "qk_norm", "causal"}));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "layers", t.layers));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "hidden", t.hidden));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "ffn", t.ffn));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "heads", t.heads));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "kv_heads", t.kv_heads));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "head_dim", t.head_dim));
  std::string s;
  bool has = false;
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "mlp", s, &has));
  if (has) {
    if (s == "gelu")
      t.mlp = MlpKind::kGelu;
    else if (s == "swiglu")
      t.mlp = MlpKind::kSwiGlu;
    else
      return ErrAt(ctx, n["mlp"], w + ".mlp", "unknown mlp '" + s + "'; valid values are: gelu, swiglu");
  }
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "norm", s, &has));
  if (has) {
    if (s == "layernorm")
      t.norm = NormKind::kLayerNorm;
    else if (s == "rmsnorm")
      t.norm = NormKind::kRmsNorm;
    else
      return ErrAt(ctx, n["norm"], w + ".norm",
                   "unknown norm '" + s + "'; valid values are: layernorm, rmsnorm");
  }
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "qkv_bias", t.qkv_bias));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "out_bias", t.out_bias));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "qk_norm", t.qk_norm));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "causal", t.causal));
  return Status();
}

Status ParseInput(const Ctx& ctx, const YAML::Node& n, EncoderInput& in) {
  const std::string w = "input";
  MMTWIN_RETURN_IF_ERROR(
      CheckKeys(n, ctx.file, w,
                {"image_px", "patch_px", "cls_tokens", "tokens_per_second", "window_seconds", "mel_bins",
                 "llm_tokens_per_unit", "token_merge", "resize"}));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "image_px", in.image_px));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "patch_px", in.patch_px));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "cls_tokens", in.cls_tokens));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "tokens_per_second", in.tokens_per_second));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "window_seconds", in.window_seconds));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "mel_bins", in.mel_bins));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "llm_tokens_per_unit", in.llm_tokens_per_unit));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "token_merge", in.token_merge));
  std::string resize;
  bool has_resize = false;
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, w, "resize", resize, &has_resize));
  if (has_resize) {
    bool known = false;
    for (ImageResize r : {ImageResize::kTiles, ImageResize::kFixed, ImageResize::kIfLarger})
      if (resize == ImageResizeName(r)) {
        in.resize = r;
        known = true;
      }
    if (!known)
      return ErrAt(ctx, n["resize"], w + ".resize",
                   "unknown resize '" + resize + "'; valid values are: fixed, if_larger, tiles");
  }
  // A changed tile geometry (e.g. a composite's `input: {image_px: 336}` over a zoo encoder) re-derives the LLM
  // tokens per tile from token_merge unless they are written here too.
  const bool geometry =
      n["image_px"].IsDefined() || n["patch_px"].IsDefined() || n["token_merge"].IsDefined();
  if (geometry && !n["llm_tokens_per_unit"].IsDefined() && in.token_merge > 0) in.llm_tokens_per_unit = 0;
  return Status();
}

const std::vector<std::string> kComponentKeys = {"kind",           "transformer",     "input",
                                                 "vocab",          "tied_embeddings", "projector_dims",
                                                 "projector_norm", "conv_params"};

// Fills `c` from the component keys present in `n` (fields absent stay as they are: overrides a `use`d spec).
Status ParseComponentFields(const Ctx& ctx, const YAML::Node& n, const std::string& where, Component& c) {
  std::string kind;
  bool has = false;
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, where, "kind", kind, &has));
  if (has) {
    if (kind == "vision")
      c.kind = ComponentKind::kVision;
    else if (kind == "audio")
      c.kind = ComponentKind::kAudio;
    else if (kind == "projector")
      c.kind = ComponentKind::kProjector;
    else if (kind == "llm")
      c.kind = ComponentKind::kLlm;
    else
      return ErrAt(ctx, n["kind"], where.empty() ? "kind" : where + ".kind",
                   "unknown kind '" + kind + "'; valid values are: vision, audio, projector, llm");
  }
  if (n["transformer"].IsDefined()) MMTWIN_RETURN_IF_ERROR(ParseTransformer(ctx, n["transformer"], c.tf));
  if (n["input"].IsDefined()) MMTWIN_RETURN_IF_ERROR(ParseInput(ctx, n["input"], c.input));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, where, "vocab", c.vocab));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, where, "tied_embeddings", c.tied_embeddings));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, where, "projector_norm", c.projector_norm));
  MMTWIN_RETURN_IF_ERROR(Get(ctx, n, where, "conv_params", c.conv_params));
  const YAML::Node dims = n["projector_dims"];
  if (dims.IsDefined()) {
    const std::string f = where.empty() ? "projector_dims" : where + ".projector_dims";
    if (!dims.IsSequence()) return ErrAt(ctx, dims, f, "expected a list of widths, e.g. [12800, 6144, 6144]");
    c.projector_dims.clear();
    for (const YAML::Node& d : dims) {
      int64_t v = 0;
      try {
        v = d.as<int64_t>();
      } catch (const YAML::Exception&) {
        return ErrAt(
            ctx, d, f,
            "'" + Abbreviate((d.IsScalar() ? d.Scalar() : std::string("?"))) + "' is not an integer");
      }
      if (v <= 0) return ErrAt(ctx, d, f, "widths must be positive");
      c.projector_dims.push_back(v);
    }
  }
  return Status();
}

// Fills defaults (kv_heads, head_dim, conv_params) and checks a component's invariants.
// The node of a dotted key under `n` ("transformer.heads"), or `n` itself when the key is not written there
// (a default, or a value from a referenced zoo component): errors point at the key's own line.
YAML::Node KeyNode(const YAML::Node& n, const std::string& dotted) {
  YAML::Node cur = n;
  size_t start = 0;
  try {
    while (start <= dotted.size()) {
      const size_t dot = dotted.find('.', start);
      const std::string part =
          dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!cur.IsMap() || !cur[part]) return n;
      cur = cur[part];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  } catch (const YAML::Exception&) {
    return n;
  }
  return cur;
}

std::string ShortNumber(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

Status FinishComponent(const Ctx& ctx, const YAML::Node& n, const std::string& where, Component& c) {
  auto fail = [&](const std::string& field, const std::string& reason) {
    return ErrAt(ctx, KeyNode(n, field), where.empty() ? field : where + "." + field, reason);
  };
  if (c.kind == ComponentKind::kProjector) {
    if (c.projector_dims.size() > 64) return fail("projector_dims", "implausibly many layers (max 64)");
    for (int64_t d : c.projector_dims)
      if (d > (1 << 22)) return fail("projector_dims", "implausibly large width");
    if (c.projector_dims.size() < 2) return fail("projector_dims", "a projector needs at least two widths");
    return Status();
  }
  TransformerConfig& t = c.tf;
  if (t.layers <= 0) return fail("transformer.layers", "must be positive");
  if (t.hidden <= 0) return fail("transformer.hidden", "must be positive");
  if (t.ffn <= 0) return fail("transformer.ffn", "must be positive");
  if (t.heads <= 0) return fail("transformer.heads", "must be positive");
  // Sanity bounds keep parameter arithmetic far from int64 overflow and layer lists small.
  if (t.layers > 10000) return fail("transformer.layers", "implausibly large (max 10000)");
  if (t.hidden > (1 << 20) || t.ffn > (1 << 22)) return fail("transformer.hidden", "implausibly large width");
  if (t.heads > 4096 || t.kv_heads > 4096 || t.head_dim > 65536)
    return fail("transformer.heads", "implausibly large");
  if (c.vocab > (1 << 24)) return fail("vocab", "implausibly large (max 16777216)");
  if (c.input.image_px > (1 << 16) || c.input.cls_tokens > 1024 || c.input.window_seconds > 3600 ||
      c.input.tokens_per_second > 1e5 || c.input.mel_bins > 4096)
    return fail("input", "implausibly large value");
  if (t.kv_heads == 0) t.kv_heads = t.heads;
  if (t.heads % t.kv_heads != 0) return fail("transformer.kv_heads", "must divide heads");
  if (t.head_dim == 0) {
    if (t.hidden % t.heads != 0)
      return fail("transformer.head_dim", "hidden is not a multiple of heads; give head_dim");
    t.head_dim = t.hidden / t.heads;
  }
  switch (c.kind) {
    case ComponentKind::kVision:
      if (c.input.patch_px <= 0)
        return fail("input.patch_px", "a vision encoder needs a positive patch size");
      // Like a stride-p convolution, a partial patch at the border is dropped (SigLIP: 384 / 14 -> 27 per
      // side).
      if (c.input.image_px < c.input.patch_px) return fail("input.image_px", "must be at least patch_px");
      if (c.input.token_merge < 0 || c.input.token_merge > 64)
        return fail("input.token_merge", "must be in [1, 64] (positions merged per side), or absent");
      if (c.input.token_merge > 0) {
        const int64_t merged = MergedTokensPerTile(c.input);
        if (c.input.llm_tokens_per_unit == 0) {
          c.input.llm_tokens_per_unit = static_cast<double>(merged);
        } else if (c.input.llm_tokens_per_unit != static_cast<double>(merged)) {
          return fail("input.llm_tokens_per_unit",
                      "is " + ShortNumber(c.input.llm_tokens_per_unit) + " but token_merge " +
                          std::to_string(c.input.token_merge) + " gives ceil(" +
                          std::to_string(c.input.image_px / c.input.patch_px) + " / " +
                          std::to_string(c.input.token_merge) + ")^2 = " + std::to_string(merged) +
                          "; drop one of them");
        }
      }
      if (c.input.resize == ImageResize::kIfLarger && c.input.token_merge <= 0)
        return fail("input.resize",
                    "if_larger derives each image's LLM tokens from its size, which needs input.token_merge");
      break;
    case ComponentKind::kAudio:
      if (c.input.resize != ImageResize::kTiles)
        return fail("input.resize", "applies to vision encoders only");
      if (c.input.tokens_per_second <= 0)
        return fail("input.tokens_per_second", "an audio encoder needs it > 0");
      if (c.conv_params == 0 && c.input.mel_bins > 0)
        c.conv_params = WhisperConvParams(c.input.mel_bins, t.hidden);
      break;
    case ComponentKind::kLlm:
      if (c.vocab <= 0) return fail("vocab", "an LLM needs a positive vocabulary size");
      break;
    case ComponentKind::kProjector:
      break;
  }
  return Status();
}

Result<YAML::Node> LoadYaml(const std::string& text, const std::string& name) {
  try {
    MMTWIN_ASSIGN_OR_RETURN(YAML::Node root, LoadStrictYaml(text, name));
    if (!root.IsMap()) return Error::At(name, LineOf(root), "", "expected a YAML mapping at the top level");
    return root;
  } catch (const YAML::Exception& e) {
    return YamlError(name, e);
  }
}

std::string DefaultComponentName(ComponentKind k) { return ComponentKindName(k); }

Result<ModelSpec> ParseModelImpl(const std::string& yaml_text, const std::string& name,
                                 const std::string& resolve_dir, int depth);

// The files a LoadModel call read (path, text), when a cache entry is being made.
thread_local std::vector<std::pair<std::string, std::string>>* g_model_reads = nullptr;

Result<ModelSpec> LoadModelImpl(const std::string& name_or_path, int depth) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".yaml");
  std::string path;
  if (is_path) {
    path = name_or_path;
  } else {
    path = ModelZooDir() + "/" + name_or_path + ".yaml";
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return Error("unknown model '" + name_or_path + "'; valid values are: " + Join(ListModels()));
    }
  }
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  if (g_model_reads) g_model_reads->push_back({path, text});
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ParseModelImpl(text, path, dir.empty() ? "." : dir, depth);
}

Result<ModelSpec> ParseModelImpl(const std::string& yaml_text, const std::string& name,
                                 const std::string& resolve_dir, int depth) {
  const Ctx ctx{name};
  MMTWIN_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(yaml_text, name));
  ModelSpec m;
  try {
    std::vector<std::string> keys = {"name", "description", "reference", "components", "max_context"};
    keys.insert(keys.end(), kComponentKeys.begin(), kComponentKeys.end());
    MMTWIN_RETURN_IF_ERROR(CheckKeys(root, ctx.file, "", keys));
    MMTWIN_RETURN_IF_ERROR(Get(ctx, root, "", "name", m.name));
    MMTWIN_RETURN_IF_ERROR(Get(ctx, root, "", "description", m.description));
    std::string reference;
    MMTWIN_RETURN_IF_ERROR(Get(ctx, root, "", "reference", reference));
    if (m.name.empty()) return Error::At(name, LineOf(root), "name", "missing (every spec needs a name)");
    bool has_context = false;
    MMTWIN_RETURN_IF_ERROR(Get(ctx, root, "", "max_context", m.max_context, &has_context));
    if (has_context && (m.max_context < 1 || m.max_context > (int64_t{1} << 40)))
      return ErrAt(ctx, root["max_context"], "max_context",
                   "must be a positive number of LLM tokens per sample (the recipe's maximum length)");
    const YAML::Node comps = root["components"];
    if (!comps.IsDefined()) {
      // A one-component spec: the component keys sit at the top level.
      if (!root["kind"].IsDefined())
        return Error::At(name, LineOf(root), "kind", "missing (or give `components`)");
      Component c;
      c.source = m.name;
      MMTWIN_RETURN_IF_ERROR(ParseComponentFields(ctx, root, "", c));
      c.name = DefaultComponentName(c.kind);
      MMTWIN_RETURN_IF_ERROR(FinishComponent(ctx, root, "", c));
      if (has_context && c.kind != ComponentKind::kLlm)
        return ErrAt(ctx, root["max_context"], "max_context",
                     "only an llm spec (or a composite model) has a context; this spec is a " +
                         std::string(ComponentKindName(c.kind)));
      m.components.push_back(std::move(c));
      return m;
    }
    if (depth > 0)
      return ErrAt(ctx, comps, "components", "a spec referenced with `use` must be a one-component spec");
    for (const std::string& k : kComponentKeys) {
      if (root[k].IsDefined())
        return ErrAt(ctx, root[k], k,
                     "a composite spec (with `components`) takes component keys per component");
    }
    if (!comps.IsSequence() || comps.size() == 0)
      return ErrAt(ctx, comps, "components", "expected a non-empty list of components");
    std::set<std::string> names;
    for (size_t i = 0; i < comps.size(); ++i) {
      const YAML::Node cn = comps[i];
      const std::string where = "components[" + std::to_string(i) + "]";
      std::vector<std::string> ckeys = {"name", "use"};
      ckeys.insert(ckeys.end(), kComponentKeys.begin(), kComponentKeys.end());
      MMTWIN_RETURN_IF_ERROR(CheckKeys(cn, ctx.file, where, ckeys));
      Component c;
      std::string use;
      bool has_use = false;
      MMTWIN_RETURN_IF_ERROR(Get(ctx, cn, where, "use", use, &has_use));
      if (has_use) {
        // The spec's own folder first (a user's components next to their model), then the model zoo, so a
        // custom model file anywhere can reuse zoo components.
        std::string ref = resolve_dir + "/" + use + ".yaml";
        std::error_code ec;
        if (!std::filesystem::exists(ref, ec)) {
          const std::string zoo = ModelZooDir() + "/" + use + ".yaml";
          if (!std::filesystem::exists(zoo, ec))
            return ErrAt(ctx, cn["use"], where + ".use",
                         "unknown component spec '" + Abbreviate(use) + "' (not in " + resolve_dir +
                             " nor in the model zoo " + ModelZooDir() + ")");
          ref = zoo;
        }
        Result<ModelSpec> sub = LoadModelImpl(ref, depth + 1);
        if (!sub) return sub.error().Wrap(Error::At(name, LineOf(cn["use"]), where + ".use", use).message());
        if (sub->components.size() != 1)
          return ErrAt(ctx, cn["use"], where + ".use",
                       "'" + Abbreviate(use) + "' is not a one-component spec");
        c = sub->components[0];
        // The LLM spec's own context carries into the composite unless the composite sets one (the recipe's
        // length wins over the model's).
        if (!has_context && sub->max_context > 0) m.max_context = sub->max_context;
      } else if (!cn["kind"].IsDefined()) {
        return ErrAt(ctx, cn, where, "needs `use` (a component spec name) or `kind`");
      } else {
        c.source = m.name;
      }
      MMTWIN_RETURN_IF_ERROR(ParseComponentFields(ctx, cn, where, c));
      c.name = DefaultComponentName(c.kind);
      MMTWIN_RETURN_IF_ERROR(Get(ctx, cn, where, "name", c.name));
      if (!names.insert(c.name).second)
        return ErrAt(ctx, cn, where + ".name", "duplicate component name '" + c.name + "'");
      MMTWIN_RETURN_IF_ERROR(FinishComponent(ctx, cn, where, c));
      m.components.push_back(std::move(c));
    }
    // Structure: at most one LLM, and it comes last; a projector's output width matches the LLM's hidden
    // size.
    int llms = 0;
    for (const Component& c : m.components) llms += c.kind == ComponentKind::kLlm;
    {
      if (llms != 1 || m.components.back().kind != ComponentKind::kLlm)
        return ErrAt(ctx, comps, "components",
                     "a composite model needs exactly one llm component, listed last");
      const int64_t h = m.components.back().tf.hidden;
      for (size_t i = 0; i < m.components.size(); ++i) {
        const Component& c = m.components[i];
        if (c.kind == ComponentKind::kProjector && c.projector_dims.back() != h) {
          return ErrAt(ctx, comps[i], "components[" + std::to_string(i) + "].projector_dims",
                       "output width " + std::to_string(c.projector_dims.back()) +
                           " differs from the llm hidden " + std::to_string(h));
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return YamlError(name, e);
  }
  return m;
}

}  // namespace

std::string ModelZooDir() { return DataDir() + "/models"; }

std::vector<std::string> ListModels() {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(ModelZooDir(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::filesystem::path& p = it->path();
    if (p.extension() == ".yaml") names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelSpec> ParseModel(const std::string& yaml_text, const std::string& name,
                             const std::string& resolve_dir) {
  return ParseModelImpl(yaml_text, name, resolve_dir, 0);
}

// Parsed models, per name or path, with every file the parse read and its text: an entry is used only while
// each of those files still reads the same (a model file and the component files it names), so an edited file
// is parsed again. A sweep parses each model once in its parent (its forked workers inherit the cache); the
// parse, not the read, is what costs (yaml-cpp).
Result<ModelSpec> LoadModel(const std::string& name_or_path) {
  struct Entry {
    std::vector<std::pair<std::string, std::string>> files;
    ModelSpec spec;
  };
  static std::mutex mu;
  static std::map<std::string, Entry> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(name_or_path);
    if (it != cache.end()) {
      bool same = true;
      for (const auto& [path, text] : it->second.files) {
        auto now = ReadFile(path);
        same = same && now.ok() && *now == text;
      }
      if (same) return it->second.spec;
      cache.erase(it);
    }
  }
  std::vector<std::pair<std::string, std::string>> reads;
  g_model_reads = &reads;
  Result<ModelSpec> spec = LoadModelImpl(name_or_path, 0);
  g_model_reads = nullptr;
  if (spec.ok()) {
    std::lock_guard<std::mutex> lock(mu);
    if (cache.size() > 256) cache.clear();  // bounded
    cache[name_or_path] = Entry{std::move(reads), *spec};
  }
  return spec;
}

}  // namespace mmtwin

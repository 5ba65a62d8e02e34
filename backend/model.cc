// SPDX-License-Identifier: Apache-2.0
// The backend's model in LibTorch (model.h).
#include "backend/model.h"

#include "backend/device.h"

#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <utility>

namespace mmtwin::backend {
namespace {

// Generators: one stream per (seed, a, b), so that a layer's parameters or a sample's inputs are the same
// whichever rank draws them. splitmix64 mixes the parts.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
at::Generator Gen(uint64_t seed, uint64_t a, uint64_t b) {
  return MakeGenerator(Mix(Mix(Mix(seed) ^ a) ^ (b * 0x51ed27f3ull)));
}
enum Stream : uint64_t { kParams = 1, kPatches = 2, kMel = 3, kText = 4, kLabels = 5 };

// fp32 on the rank's device (device.h).
at::TensorOptions F32() { return FloatOptions(); }

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& w) {
  return x * at::rsqrt(x.pow(2).mean({-1}, /*keepdim=*/true) + 1e-6) * w;
}

// A norm of width n: LayerNorm (weight, bias) or RMSNorm (weight).
struct Norm {
  NormKind kind = NormKind::kLayerNorm;
  at::Tensor w, b;
  int64_t n = 0;
  at::Tensor operator()(const at::Tensor& x) const {
    if (kind == NormKind::kRmsNorm) return RmsNorm(x, w);
    return at::layer_norm(x, {n}, w, b, 1e-5);
  }
};

// Attention spans of a packed sequence: [start, start + len) rows attend only among themselves.
struct Span {
  int64_t start = 0, len = 0;
};

}  // namespace

at::Tensor Layer::Keep(const std::string& name, at::Tensor t, int shard_dim, const TpGroup* tp) {
  const bool split = shard_dim >= 0 && tp && tp->size > 1;
  if (split) t = t.chunk(tp->size, shard_dim)[tp->rank].contiguous();
  t.set_requires_grad(true);
  params_.emplace_back(label_ + "." + name, t);
  shard_dims_.push_back(split ? shard_dim : -1);
  return t;
}
at::Tensor Layer::Param(const std::string& name, at::IntArrayRef shape, at::Generator& gen, double scale,
                        int shard_dim, const TpGroup* tp) {
  return Keep(name, at::randn(shape, gen, F32()).mul_(scale), shard_dim, tp);
}
at::Tensor Layer::Ones(const std::string& name, int64_t n) {
  return Keep(name, at::ones({n}, F32()), -1, nullptr);
}
at::Tensor Layer::Zeros(const std::string& name, int64_t n, int shard_dim, const TpGroup* tp) {
  return Keep(name, at::zeros({n}, F32()), shard_dim, tp);
}

std::vector<at::Tensor> State::Parts() const {
  std::vector<at::Tensor> p = done;
  if (x.defined()) p.push_back(x);
  return p;
}

State State::FromParts(std::vector<at::Tensor> parts, bool has_x) {
  State s;
  if (has_x && !parts.empty()) {
    s.x = parts.back();
    parts.pop_back();
  }
  s.done = std::move(parts);
  return s;
}

MicroBatch MakeMicroBatch(const ModelSpec& m, const Trace& trace, const std::vector<uint32_t>& samples,
                          uint64_t seed, int64_t loss_tokens, bool packed) {
  MicroBatch mb;
  mb.seed = seed;
  mb.loss_tokens = std::max<int64_t>(1, loss_tokens);
  const Component* vision = m.Find(ComponentKind::kVision);
  const Component* audio = m.Find(ComponentKind::kAudio);
  std::vector<Sample> picked;
  for (uint32_t i : samples) picked.push_back(trace.samples.at(i));
  mb.workloads = ModelWorkloads(m, picked, packed ? Packing::kVarlen : Packing::kPadded);
  for (uint32_t i : samples) {
    const Sample& s = trace.samples.at(i);
    const SampleTokens t = TokensFor(m, s);
    SampleShape sh;
    sh.index = i;
    sh.units = vision ? t.vision_units : 0;
    sh.vision_llm =
        vision ? std::llround(static_cast<double>(sh.units) * vision->input.llm_tokens_per_unit) : 0;
    sh.audio_pos = audio ? t.audio_tokens : 0;
    if (audio && sh.audio_pos > 0) {
      const int g = std::max(1, DownsampleFactor(*audio));
      sh.audio_llm = (sh.audio_pos + g - 1) / g;
    }
    sh.llm_tokens = t.llm_tokens;
    // The model's max_context may cut the sample (core/model/model.h), into its encoder tokens too: LlmEmbed
    // keeps the first llm_tokens rows of [encoder outputs, text].
    sh.text = std::max<int64_t>(0, sh.llm_tokens - sh.vision_llm - sh.audio_llm);
    mb.llm_tokens += sh.llm_tokens;
    mb.vit_tokens += t.vit_tokens;
    mb.audio_pos += sh.audio_pos;
    mb.attention_pairs += 0.5 * static_cast<double>(sh.llm_tokens) * static_cast<double>(sh.llm_tokens + 1);
    mb.samples.push_back(sh);
  }
  if (!packed) {
    int64_t longest = 0, longest_audio = 0;
    for (const SampleShape& sh : mb.samples) {
      longest = std::max(longest, sh.llm_tokens);
      longest_audio = std::max(longest_audio, sh.audio_pos);
    }
    for (SampleShape& sh : mb.samples) {
      sh.pad = longest - sh.llm_tokens;
      if (sh.audio_pos > 0) sh.audio_pad = longest_audio - sh.audio_pos;
    }
  }
  return mb;
}

namespace {

constexpr int64_t kIgnoreLabel = -100;  // pad positions: no loss

// ---- Tensor-parallel conjugate operators (Megatron's f and g) ----

// f: identity forward; the gradient is summed over the TP group (each rank saw only its heads / FFN slice).
struct CopyToTp : public torch::autograd::Function<CopyToTp> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    return x.clone();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto* tp = reinterpret_cast<const TpGroup*>(ctx->saved_data["group"].toInt());
    at::Tensor g = grads[0].contiguous().clone();
    tp->all_reduce(g);
    return {g, at::Tensor()};
  }
};
// g: the partial outputs summed over the TP group forward; identity backward.
struct ReduceFromTp : public torch::autograd::Function<ReduceFromTp> {
  static at::Tensor forward(torch::autograd::AutogradContext*, const at::Tensor& x, int64_t group) {
    const auto* tp = reinterpret_cast<const TpGroup*>(group);
    at::Tensor y = x.contiguous().clone();
    tp->all_reduce(y);
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    return {grads[0], at::Tensor()};
  }
};

// ---- Transformer block (encoders and the LLM) ----

class Block : public Layer {
 public:
  Block(const Component& c, const std::string& label, at::Generator& gen, const TpGroup* tp)
      : tf_(c.tf), comp_(c.kind) {
    label_ = label;
    kind_ = LayerKind::kTransformer;
    if (tp && tp->size > 1) {
      if (tf_.heads % tp->size || tf_.kv_heads % tp->size || tf_.ffn % tp->size || tf_.qk_norm)
        throw std::invalid_argument(label + ": cannot split over tp " + std::to_string(tp->size));
      tp_ = tp;
    }
    const int parts = tp_ ? tp_->size : 1;
    heads_ = tf_.heads / parts;
    kv_heads_ = tf_.kv_heads / parts;
    const int64_t h = tf_.hidden, q = tf_.heads * tf_.head_dim, kv = tf_.kv_heads * tf_.head_dim;
    const double s = 0.02;
    n1_ = MakeNorm("norm1", h);
    wq_ = Param("attn.q.weight", {q, h}, gen, s, 0, tp_);
    wk_ = Param("attn.k.weight", {kv, h}, gen, s, 0, tp_);
    wv_ = Param("attn.v.weight", {kv, h}, gen, s, 0, tp_);
    if (tf_.qkv_bias) {
      bq_ = Zeros("attn.q.bias", q, 0, tp_);
      bk_ = Zeros("attn.k.bias", kv, 0, tp_);
      bv_ = Zeros("attn.v.bias", kv, 0, tp_);
    }
    if (tf_.qk_norm) {
      qn_ = MakeNorm("attn.q_norm", q);
      kn_ = MakeNorm("attn.k_norm", kv);
    }
    wo_ = Param("attn.o.weight", {h, q}, gen, s, 1, tp_);
    if (tf_.out_bias) bo_ = Zeros("attn.o.bias", h);
    n2_ = MakeNorm("norm2", h);
    if (tf_.mlp == MlpKind::kSwiGlu) wg_ = Param("mlp.gate.weight", {tf_.ffn, h}, gen, s, 0, tp_);
    wu_ = Param("mlp.up.weight", {tf_.ffn, h}, gen, s, 0, tp_);
    if (tf_.out_bias) bu_ = Zeros("mlp.up.bias", tf_.ffn, 0, tp_);
    wd_ = Param("mlp.down.weight", {h, tf_.ffn}, gen, s, 1, tp_);
    if (tf_.out_bias) bd_ = Zeros("mlp.down.bias", h);
  }

  State Forward(State in, const MicroBatch& mb) override {
    const at::Tensor& x = in.x;
    const at::Tensor a = Attention(ToTp(n1_(x)), mb);
    at::Tensor y = x + a;
    const at::Tensor hn = ToTp(n2_(y));
    at::Tensor up = at::linear(hn, wu_, bu_);
    up = tf_.mlp == MlpKind::kSwiGlu ? at::silu(at::linear(hn, wg_)) * up : at::gelu(up);
    in.x = y + RowParallel(up, wd_, bd_);
    return in;
  }

 private:
  Norm MakeNorm(const std::string& name, int64_t n) {
    Norm nm;
    nm.kind = tf_.norm;
    nm.n = n;
    nm.w = Ones(name + ".weight", n);
    if (tf_.norm == NormKind::kLayerNorm) nm.b = Zeros(name + ".bias", n);
    return nm;
  }

  at::Tensor ToTp(const at::Tensor& x) const {
    return tp_ ? CopyToTp::apply(x, reinterpret_cast<int64_t>(tp_)) : x;
  }
  // A row-parallel linear: the partial products summed over the TP group, then the (replicated) bias.
  at::Tensor RowParallel(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const {
    if (!tp_) return at::linear(x, w, b);
    at::Tensor y = ReduceFromTp::apply(at::linear(x, w), reinterpret_cast<int64_t>(tp_));
    return b.defined() ? y + b : y;
  }

  std::vector<Span> Spans(const MicroBatch& mb) const {
    std::vector<Span> spans;
    int64_t at = 0;
    if (comp_ == ComponentKind::kVision) {
      return {};  // uniform spans: handled by the batched path
    }
    for (const SampleShape& s : mb.samples) {
      if (comp_ == ComponentKind::kLlm) {
        spans.push_back({at, s.llm_tokens + s.pad});
        at += s.llm_tokens + s.pad;
      } else {                                        // audio: windows of window positions
        const int64_t n = s.audio_pos + s.audio_pad;  // windows over the padded sequence, as Whisper
        const int64_t w = window_ > 0 ? window_ : n;
        for (int64_t k = 0; k < n; k += w) spans.push_back({at + k, std::min(w, n - k)});
        at += n;
      }
    }
    return spans;
  }

  at::Tensor Attention(const at::Tensor& xn, const MicroBatch& mb) {
    const int64_t heads = heads_, kvh = kv_heads_, hd = tf_.head_dim;
    at::Tensor q = at::linear(xn, wq_, bq_), k = at::linear(xn, wk_, bk_), v = at::linear(xn, wv_, bv_);
    if (tf_.qk_norm) {
      q = qn_(q);
      k = kn_(k);
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    at::Tensor out;
    if (comp_ == ComponentKind::kVision) {
      // Every tile / frame is a span of the same length: one batched attention.
      const int64_t n = xn.size(0);
      const int64_t span = span_len_;
      const int64_t units = span > 0 ? n / span : 0;
      auto heads_first = [&](const at::Tensor& t, int64_t nh) {
        return t.view({units, span, nh, hd}).permute({0, 2, 1, 3});
      };
      at::Tensor qh = heads_first(q, heads), kh = heads_first(k, kvh), vh = heads_first(v, kvh);
      if (kvh != heads) {
        kh = kh.repeat_interleave(heads / kvh, 1);
        vh = vh.repeat_interleave(heads / kvh, 1);
      }
      at::Tensor p = at::softmax(at::matmul(qh, kh.transpose(-1, -2)) * scale, -1);
      out = at::matmul(p, vh).permute({0, 2, 1, 3}).reshape({n, heads * hd});
    } else {
      std::vector<at::Tensor> pieces;
      for (const Span& s : Spans(mb)) {
        if (s.len <= 0) continue;
        at::Tensor qh = q.narrow(0, s.start, s.len).view({s.len, heads, hd}).transpose(0, 1);
        at::Tensor kh = k.narrow(0, s.start, s.len).view({s.len, kvh, hd}).transpose(0, 1);
        at::Tensor vh = v.narrow(0, s.start, s.len).view({s.len, kvh, hd}).transpose(0, 1);
        if (kvh != heads) {
          kh = kh.repeat_interleave(heads / kvh, 0);
          vh = vh.repeat_interleave(heads / kvh, 0);
        }
        at::Tensor sc = at::matmul(qh, kh.transpose(-1, -2)) * scale;
        if (tf_.causal) {
          const at::Tensor mask = at::ones({s.len, s.len}, BoolOptions()).triu(1);
          sc = sc.masked_fill(mask, -std::numeric_limits<float>::infinity());
        }
        pieces.push_back(at::matmul(at::softmax(sc, -1), vh).transpose(0, 1).reshape({s.len, heads * hd}));
      }
      out = pieces.empty() ? at::zeros({0, heads * hd}, F32()) : at::cat(pieces, 0);
    }
    return RowParallel(out, wo_, bo_);
  }

 public:
  int64_t span_len_ = 0;  // vision: positions per tile
  int64_t window_ = 0;    // audio: positions per window (0: the whole sample)

 private:
  TransformerConfig tf_;
  ComponentKind comp_;
  const TpGroup* tp_ = nullptr;       // set when split over more than one rank
  int64_t heads_ = 0, kv_heads_ = 0;  // this rank's
  Norm n1_, n2_, qn_, kn_;
  at::Tensor wq_, wk_, wv_, bq_, bk_, bv_, wo_, bo_, wg_, wu_, bu_, wd_, bd_;
};

// ---- Embeddings ----

class VisionEmbed : public Layer {
 public:
  VisionEmbed(const Component& c, const std::string& label, at::Generator& gen) {
    label_ = label;
    kind_ = LayerKind::kEmbedding;
    h_ = c.tf.hidden;
    patch_in_ = 3 * int64_t{c.input.patch_px} * c.input.patch_px;
    positions_ = PositionsPerUnit(c);
    cls_ = c.input.cls_tokens;
    w_ = Param("patch.weight", {h_, patch_in_}, gen, 0.02);
    b_ = Zeros("patch.bias", h_);
    pos_ = Param("pos", {positions_, h_}, gen, 0.02);
    if (cls_ > 0) cls_tok_ = Param("cls", {cls_, h_}, gen, 0.02);
  }
  State Forward(State in, const MicroBatch& mb) override {
    std::vector<at::Tensor> per_sample;
    for (const SampleShape& s : mb.samples) {
      if (s.units == 0) continue;
      at::Generator g = Gen(mb.seed, s.index, kPatches);
      per_sample.push_back(at::randn({s.units, positions_ - cls_, patch_in_}, g, F32()));
    }
    const int64_t units = [&] {
      int64_t u = 0;
      for (const SampleShape& s : mb.samples) u += s.units;
      return u;
    }();
    at::Tensor e = units == 0 ? at::zeros({0, positions_ - cls_, h_}, F32())
                              : at::linear(at::cat(per_sample, 0), w_, b_);
    if (cls_ > 0) e = at::cat({cls_tok_.unsqueeze(0).expand({units, cls_, h_}), e}, 1);
    in.x = (e + pos_.unsqueeze(0)).reshape({units * positions_, h_});
    return in;
  }

 private:
  int64_t h_ = 0, patch_in_ = 0, positions_ = 0, cls_ = 0;
  at::Tensor w_, b_, pos_, cls_tok_;
};

class AudioEmbed : public Layer {
 public:
  AudioEmbed(const Component& c, const std::string& label, at::Generator& gen) {
    label_ = label;
    kind_ = LayerKind::kEmbedding;
    h_ = c.tf.hidden;
    mel_ = c.input.mel_bins > 0 ? c.input.mel_bins : 80;
    window_ = std::max<int64_t>(1, PositionsPerUnit(c));
    c1_ = Param("conv1.weight", {h_, mel_, 3}, gen, 0.02);
    c1b_ = Zeros("conv1.bias", h_);
    c2_ = Param("conv2.weight", {h_, h_, 3}, gen, 0.02);
    c2b_ = Zeros("conv2.bias", h_);
    pos_ = Param("pos", {window_, h_}, gen, 0.02);
  }
  State Forward(State in, const MicroBatch& mb) override {
    std::vector<at::Tensor> pieces;
    for (const SampleShape& s : mb.samples) {
      if (s.audio_pos == 0) continue;
      at::Generator g = Gen(mb.seed, s.index, kMel);
      at::Tensor mel = at::randn({1, mel_, 2 * s.audio_pos}, g, F32());
      if (s.audio_pad > 0) mel = at::cat({mel, at::zeros({1, mel_, 2 * s.audio_pad}, F32())}, 2);  // silence
      const int64_t n = s.audio_pos + s.audio_pad;
      at::Tensor y = at::gelu(at::conv1d(mel, c1_, c1b_, 1, 1));
      y = at::gelu(at::conv1d(y, c2_, c2b_, 2, 1));  // [1, h, n]
      y = y.squeeze(0).transpose(0, 1);              // [n, h]
      const at::Tensor idx = at::arange(n, LongOptions()).remainder(window_);
      pieces.push_back(y + pos_.index_select(0, idx));
    }
    in.x = pieces.empty() ? at::zeros({0, h_}, F32()) : at::cat(pieces, 0);
    return in;
  }

 private:
  int64_t h_ = 0, mel_ = 0, window_ = 1;
  at::Tensor c1_, c1b_, c2_, c2b_, pos_;
};

class LlmEmbed : public Layer {
 public:
  LlmEmbed(const ModelSpec& m, const Component& c, const std::string& label, at::Generator& gen) {
    label_ = label;
    kind_ = LayerKind::kEmbedding;
    h_ = c.tf.hidden;
    vocab_ = c.vocab;
    for (const Component& x : m.components)
      if (x.kind == ComponentKind::kVision || x.kind == ComponentKind::kAudio) encoders_.push_back(x.kind);
    w_ = Param("tokens.weight", {vocab_, h_}, gen, 0.02);
  }
  State Forward(State in, const MicroBatch& mb) override {
    // Cursor into each finished encoder's output (one row per LLM token it contributes).
    std::vector<int64_t> at(in.done.size(), 0);
    std::vector<at::Tensor> seq;
    for (const SampleShape& s : mb.samples) {
      int64_t left = s.llm_tokens;  // a sample cut by the model's context keeps its first llm_tokens rows
      for (size_t e = 0; e < in.done.size() && e < encoders_.size(); ++e) {
        const int64_t n = encoders_[e] == ComponentKind::kVision ? s.vision_llm : s.audio_llm;
        const int64_t keep = std::min(n, left);
        if (keep > 0) seq.push_back(in.done[e].narrow(0, at[e], keep));
        at[e] += n;
        left -= std::max<int64_t>(0, keep);
      }
      if (s.text > 0) {
        at::Generator g = Gen(mb.seed, s.index, kText);
        const at::Tensor ids = at::randint(vocab_, {s.text}, g, LongOptions());
        seq.push_back(at::embedding(w_, ids));
      }
      if (s.pad > 0)  // pad id 0
        seq.push_back(at::embedding(w_, at::zeros({s.pad}, LongOptions())));
    }
    in.done.clear();
    in.x = seq.empty() ? at::zeros({0, h_}, F32()) : at::cat(seq, 0);
    return in;
  }

 private:
  int64_t h_ = 0, vocab_ = 0;
  std::vector<ComponentKind> encoders_;
  at::Tensor w_;
};

// ---- Projector (pixel shuffle / pooling + MLP) and head ----

class Projector : public Layer {
 public:
  Projector(const ModelSpec& m, int component, const std::string& label, at::Generator& gen) {
    label_ = label;
    kind_ = LayerKind::kProjector;
    const Component& c = m.components[component];
    const int enc = EncoderOfProjector(m, component);
    if (enc >= 0) {
      const Component& e = m.components[enc];
      encoder_ = e.kind;
      group_ = std::max(1, DownsampleFactor(e));
      positions_ = PositionsPerUnit(e);
      cls_ = e.input.cls_tokens;
      enc_hidden_ = e.tf.hidden;
    }
    const std::vector<int64_t>& d = c.projector_dims;
    if (c.projector_norm) {
      norm_.n = d[0];
      norm_.w = Ones("norm.weight", d[0]);
      norm_.b = Zeros("norm.bias", d[0]);
      has_norm_ = true;
    }
    for (size_t i = 0; i + 1 < d.size(); ++i) {
      w_.push_back(Param("fc" + std::to_string(i) + ".weight", {d[i + 1], d[i]}, gen, 0.02));
      b_.push_back(Zeros("fc" + std::to_string(i) + ".bias", d[i + 1]));
    }
    in_width_ = d[0];
  }
  State Forward(State in, const MicroBatch& mb) override {
    at::Tensor x = in.x;
    at::Tensor grouped;
    if (encoder_ == ComponentKind::kVision) {
      const int64_t units = positions_ > 0 ? x.size(0) / positions_ : 0;
      at::Tensor t = x.view({units, positions_, enc_hidden_});
      if (cls_ > 0) t = t.narrow(1, cls_, positions_ - cls_);
      grouped = t.reshape({units * ((positions_ - cls_) / group_), group_ * enc_hidden_});
    } else {  // audio: per sample, pad to a multiple of the group, then concatenate group rows
      std::vector<at::Tensor> pieces;
      int64_t at = 0;
      for (const SampleShape& s : mb.samples) {
        if (s.audio_pos == 0) continue;
        at::Tensor t = x.narrow(0, at, s.audio_pos);  // the pads (audio_pad rows) end here
        at += s.audio_pos + s.audio_pad;
        const int64_t pad = s.audio_llm * group_ - s.audio_pos;
        if (pad > 0) t = at::cat({t, at::zeros({pad, enc_hidden_}, F32())}, 0);
        pieces.push_back(t.reshape({s.audio_llm, group_ * enc_hidden_}));
      }
      grouped = pieces.empty() ? at::zeros({0, group_ * enc_hidden_}, F32()) : at::cat(pieces, 0);
    }
    at::Tensor y = has_norm_ ? at::layer_norm(grouped, {in_width_}, norm_.w, norm_.b, 1e-5) : grouped;
    for (size_t i = 0; i < w_.size(); ++i) {
      y = at::linear(y, w_[i], b_[i]);
      if (i + 1 < w_.size()) y = at::gelu(y);
    }
    in.done.push_back(y);
    in.x = at::Tensor();
    return in;
  }

 private:
  ComponentKind encoder_ = ComponentKind::kVision;
  int group_ = 1;
  int64_t positions_ = 0, cls_ = 0, enc_hidden_ = 0, in_width_ = 0;
  bool has_norm_ = false;
  Norm norm_;
  std::vector<at::Tensor> w_, b_;
};

class Head : public Layer {
 public:
  Head(const Component& c, const std::string& label, at::Generator& gen) {
    label_ = label;
    kind_ = LayerKind::kHead;
    h_ = c.tf.hidden;
    vocab_ = c.vocab;
    norm_.kind = c.tf.norm;
    norm_.n = h_;
    norm_.w = Ones("norm.weight", h_);
    if (c.tf.norm == NormKind::kLayerNorm) norm_.b = Zeros("norm.bias", h_);
    w_ = Param("lm_head.weight", {vocab_, h_}, gen, 0.02);
  }
  State Forward(State in, const MicroBatch& mb) override {
    const at::Tensor logits = at::linear(norm_(in.x), w_);
    std::vector<at::Tensor> labels;
    for (const SampleShape& s : mb.samples) {
      at::Generator g = Gen(mb.seed, s.index, kLabels);
      labels.push_back(at::randint(vocab_, {s.llm_tokens}, g, LongOptions()));
      if (s.pad > 0) labels.push_back(at::full({s.pad}, kIgnoreLabel, LongOptions()));
    }
    const at::Tensor target = at::cat(labels, 0);
    in.loss = at::cross_entropy_loss(logits, target, {}, at::Reduction::Sum, kIgnoreLabel) /
              static_cast<double>(mb.loss_tokens);
    in.x = at::Tensor();
    return in;
  }

 private:
  int64_t h_ = 0, vocab_ = 0;
  Norm norm_;
  at::Tensor w_;
};

}  // namespace

std::unique_ptr<Layer> MakeLayer(const ModelSpec& m, int index, uint64_t seed, const TpGroup* tp) {
  const std::vector<mmtwin::Layer> layers = Layers(m);
  const mmtwin::Layer& l = layers.at(index);
  const Component& c = m.components[l.component];
  at::Generator gen = Gen(seed, static_cast<uint64_t>(index), kParams);
  switch (l.kind) {
    case LayerKind::kEmbedding:
      if (c.kind == ComponentKind::kVision) return std::make_unique<VisionEmbed>(c, l.label, gen);
      if (c.kind == ComponentKind::kAudio) return std::make_unique<AudioEmbed>(c, l.label, gen);
      return std::make_unique<LlmEmbed>(m, c, l.label, gen);
    case LayerKind::kTransformer: {
      auto b = std::make_unique<Block>(c, l.label, gen, tp);
      if (c.kind == ComponentKind::kVision) b->span_len_ = PositionsPerUnit(c);
      if (c.kind == ComponentKind::kAudio) b->window_ = PositionsPerUnit(c);
      return b;
    }
    case LayerKind::kProjector:
      return std::make_unique<Projector>(m, l.component, l.label, gen);
    case LayerKind::kHead:
      return std::make_unique<Head>(c, l.label, gen);
  }
  return nullptr;
}

}  // namespace mmtwin::backend

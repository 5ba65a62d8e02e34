// SPDX-License-Identifier: Apache-2.0
// The shrunk model of the real backend (model.h: ShrinkModel).
#include <algorithm>
#include <cmath>
#include <set>

#include "core/model/model.h"
#include "core/util/text.h"

namespace mmtwin {

int DownsampleFactor(const Component& e) {
  double ratio = 0;
  if (e.kind == ComponentKind::kVision) {
    const int64_t positions = PositionsPerUnit(e) - e.input.cls_tokens;
    if (e.input.llm_tokens_per_unit <= 0) return 0;
    ratio = static_cast<double>(positions) / e.input.llm_tokens_per_unit;
  } else if (e.kind == ComponentKind::kAudio) {
    if (e.input.llm_tokens_per_unit <= 0) return 0;
    ratio = e.input.tokens_per_second / e.input.llm_tokens_per_unit;
  } else {
    return 0;
  }
  const double r = std::round(ratio);
  if (r < 1 || std::abs(r - ratio) > 1e-9 || r > 1024) return 0;
  return static_cast<int>(r);
}

Result<ModelSpec> ShrinkModel(const ModelSpec& m, const ModelShrink& shrink) {
  if (shrink.width_divisor < 1)
    return Error("width_divisor: " + std::to_string(shrink.width_divisor) + " is below 1");
  std::set<std::string> names;
  for (const Component& c : m.components) names.insert(c.name);
  for (const auto& [name, n] : shrink.layers) {
    if (!names.count(name))
      return Error("layers." + name + ": model '" + m.name + "' has no component '" + name +
                   "'; valid names are: " + Join(std::vector<std::string>(names.begin(), names.end())));
    const Component* c = nullptr;
    for (const Component& x : m.components)
      if (x.name == name) c = &x;
    if (c->kind == ComponentKind::kProjector)
      return Error("layers." + name + ": '" + name + "' is a projector (an MLP, no blocks)");
    if (n < 1) return Error("layers." + name + ": " + std::to_string(n) + " is below 1");
  }
  const int64_t d = shrink.width_divisor;
  // A divisor past a width would clamp it to 1 and plan a model of (almost) no parameters: refused, naming the
  // narrowest width and the largest divisor it allows (issue 34: 65536 simulated a 0.00B model with exit 0).
  for (const Component& c : m.components) {
    if (c.kind == ComponentKind::kProjector) continue;
    for (const auto& [what, w] : {std::pair<const char*, int64_t>{"hidden", c.tf.hidden}, {"ffn", c.tf.ffn}})
      if (w > 0 && w / d < 1)
        return Error("width_divisor: " + std::to_string(d) + " is larger than " + c.name + "'s " + what +
                     " width " + std::to_string(w) + " (it would shrink to 0; at most " + std::to_string(w) +
                     ")");
  }
  auto div = [d](int64_t w) { return std::max<int64_t>(1, w / d); };
  ModelSpec out = m;
  std::string suffix = d > 1 ? "-w" + std::to_string(d) : "";
  for (Component& c : out.components) {
    if (c.kind == ComponentKind::kProjector) continue;
    TransformerConfig& t = c.tf;
    if (auto it = shrink.layers.find(c.name); it != shrink.layers.end() && it->second != t.layers) {
      t.layers = it->second;
      suffix += "-" + c.name + std::to_string(t.layers);
    }
    t.hidden = div(t.hidden);
    t.ffn = div(t.ffn);
    // Heads, not the head dimension, shrink: an attention score costs what it costs in the full model, and the
    // score matrices (heads x n^2, the memory-bound part on CPUs) shrink with the widths.
    const int kv_ratio = t.kv_heads > 0 ? std::max(1, t.heads / t.kv_heads) : 1;
    t.kv_heads = std::max(1, static_cast<int>(t.kv_heads / d));
    t.heads = std::max(t.kv_heads, static_cast<int>(t.heads / d));
    if (t.heads % t.kv_heads != 0) t.heads = t.kv_heads * std::max(1, t.heads / t.kv_heads);
    (void)kv_ratio;
    if (c.vocab > 0) c.vocab = std::max<int64_t>(2, c.vocab / d);
    // Whisper's front-end convolutions scale with the width (mel_bins * hidden): re-derive them by the ratio.
    if (c.conv_params > 0) c.conv_params = std::max<int64_t>(1, c.conv_params / d);
  }
  // Projectors: input = the encoder's shrunk hidden x its downsample factor, hidden widths divided, output = the
  // LLM's shrunk hidden.
  const int64_t llm_hidden = out.llm().tf.hidden;
  for (size_t i = 0; i < out.components.size(); ++i) {
    Component& c = out.components[i];
    if (c.kind != ComponentKind::kProjector || c.projector_dims.empty()) continue;
    const int enc = EncoderOfProjector(out, static_cast<int>(i));
    const int64_t orig_in = c.projector_dims.front();
    for (int64_t& w : c.projector_dims) w = div(w);
    if (enc >= 0) {
      const Component& e = out.components[enc];
      const Component& e_orig = m.components[enc];
      // The factor by which the original projector's input widens the encoder's hidden (pixel shuffle).
      if (e_orig.tf.hidden > 0 && orig_in % e_orig.tf.hidden == 0)
        c.projector_dims.front() = orig_in / e_orig.tf.hidden * e.tf.hidden;
    }
    c.projector_dims.back() = llm_hidden;
  }
  out.name = m.name + suffix;
  if (!suffix.empty())
    out.description = m.description + " [shrunk for the backend: widths / " + std::to_string(d) + "]";
  return out;
}

}  // namespace mmtwin

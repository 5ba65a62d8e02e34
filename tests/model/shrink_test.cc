// SPDX-License-Identifier: Apache-2.0
// The backend's shrunk model (ShrinkModel, core/model/model.h): widths divided, heads (not the head dimension)
// divided, projectors re-derived from their encoder and the LLM, layer counts per component, errors.
#include <gtest/gtest.h>

#include "core/model/model.h"
#include "core/scenario/scenario.h"

namespace mmtwin {
namespace {

ModelSpec Load(const std::string& name) {
  Result<ModelSpec> r = LoadModel(name);
  EXPECT_TRUE(r.ok()) << name;
  return r.ok() ? *r : ModelSpec{};
}

const Component& Named(const ModelSpec& m, const std::string& name) {
  for (const Component& c : m.components)
    if (c.name == name) return c;
  ADD_FAILURE() << "no component " << name;
  return m.components.front();
}

TEST(ShrinkModelTest, LlavaWidthsOver32) {
  const ModelSpec full = Load("llava-1.5-7b");
  auto s = ShrinkModel(full, {32, {}});
  ASSERT_TRUE(s.ok()) << s.error().message();
  const Component& llm = Named(*s, "llm");
  EXPECT_EQ(llm.tf.hidden, 4096 / 32);
  EXPECT_EQ(llm.tf.ffn, 11008 / 32);
  EXPECT_EQ(llm.tf.heads, 1);
  EXPECT_EQ(llm.tf.kv_heads, 1);
  EXPECT_EQ(llm.tf.head_dim, 128);  // kept: one attention score costs what it costs in the full model
  EXPECT_EQ(llm.tf.layers, 32);
  EXPECT_EQ(llm.vocab, 32000 / 32);
  const Component& vit = Named(*s, "vision");
  EXPECT_EQ(vit.tf.hidden, 1024 / 32);
  EXPECT_EQ(vit.tf.heads, 1);  // 16 / 32 rounds to 0: at least one head
  // LLaVA's MLP projector takes the ViT's hidden (no pixel shuffle) and gives the LLM's.
  const Component& proj = Named(*s, "projector");
  EXPECT_EQ(proj.projector_dims.front(), 1024 / 32);
  EXPECT_EQ(proj.projector_dims.back(), 4096 / 32);
  EXPECT_EQ(s->name, "llava-1.5-7b-w32");
  // Token counts are not touched: the same sample has the same tokens.
  Sample x;
  x.image_tiles = 1;
  x.text_tokens = 100;
  EXPECT_EQ(TokensFor(*s, x).llm_tokens, TokensFor(full, x).llm_tokens);
  EXPECT_EQ(TokensFor(*s, x).vit_tokens, TokensFor(full, x).vit_tokens);
  EXPECT_LT(TotalParams(*s), TotalParams(full) / 500);
}

TEST(ShrinkModelTest, GqaPixelShuffleAndLayerCounts) {
  const ModelSpec full = Load("orchmllm-84b");
  auto s = ShrinkModel(full, {8, {{"llm", 2}, {"vision", 3}}});
  ASSERT_TRUE(s.ok()) << s.error().message();
  const Component& llm = Named(*s, "llm");
  EXPECT_EQ(llm.tf.kv_heads, 1);  // 8 / 8
  EXPECT_EQ(llm.tf.heads, 8);     // 64 / 8, a multiple of the KV heads
  EXPECT_EQ(llm.tf.layers, 2);
  const Component& vit = Named(*s, "vision");
  EXPECT_EQ(vit.tf.layers, 3);
  EXPECT_EQ(Named(*s, "audio").tf.layers, 48);
  // The vision projector's input is 4 ViT positions (pixel shuffle) of the shrunk ViT width.
  ASSERT_EQ(DownsampleFactor(Named(full, "vision")), 4);
  EXPECT_EQ(Named(*s, "vision_projector").projector_dims.front(), 4 * (3200 / 8));
  EXPECT_EQ(Named(*s, "vision_projector").projector_dims.back(), 8192 / 8);
  EXPECT_EQ(Named(*s, "audio_projector").projector_dims.front(), 4 * (3072 / 8));
  // Layers(): 3 ViT blocks, 48 audio blocks, 2 LLM blocks, plus embeddings, projectors and the head.
  int llm_blocks = 0, vit_blocks = 0;
  for (const Layer& l : Layers(*s)) {
    const Component& c = s->components[l.component];
    if (l.kind != LayerKind::kTransformer) continue;
    if (c.name == "llm") ++llm_blocks;
    if (c.name == "vision") ++vit_blocks;
  }
  EXPECT_EQ(llm_blocks, 2);
  EXPECT_EQ(vit_blocks, 3);
  EXPECT_NE(s->name.find("-llm2"), std::string::npos) << s->name;
}

TEST(ShrinkModelTest, IdentityAndErrors) {
  const ModelSpec full = Load("llava-1.5-7b");
  auto same = ShrinkModel(full, {1, {}});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(TotalParams(*same), TotalParams(full));
  EXPECT_EQ(same->name, full.name);
  auto bad = ShrinkModel(full, {0, {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("width_divisor"), std::string::npos);
  bad = ShrinkModel(full, {1, {{"audio", 2}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("valid names are: llm, projector, vision"), std::string::npos)
      << bad.error().message();
  bad = ShrinkModel(full, {1, {{"projector", 2}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("projector"), std::string::npos);
  // A divisor past the narrowest width (CLIP ViT-L's hidden 1024) would plan a model of no parameters (issue
  // 34): refused, naming the width; the narrowest width itself still shrinks it to 1.
  bad = ShrinkModel(full, {1025, {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.error().message(),
      "width_divisor: 1025 is larger than vision's hidden width 1024 (it would shrink to 0; at most 1024)");
  EXPECT_TRUE(ShrinkModel(full, {1024, {}}).ok());
}

// The `backend:` section: parsed with file:line errors, applied by LoadScenarioModel, written by FormatScenario
// only when set (so that the run keys of scenarios without it do not change).
TEST(ShrinkModelTest, ScenarioBackendSection) {
  const std::string base =
      "name: t\ndescription: d\ntrace: {preset: llava-665k, samples: 200}\n"
      "model: llava-1.5-7b\ncluster: {preset: a100-4x200g}\n"
      "parallel: {dp: 1, tp: 1, pp: 2, micro_batches: 2}\n";
  auto plain = ParseScenario(base, "t.yaml", "/");
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  EXPECT_EQ(FormatScenario(*plain).find("backend"), std::string::npos);
  auto s =
      ParseScenario(base + "backend: {width_divisor: 16, layers: {llm: 3}, timeout_s: 30}\n", "t.yaml", "/");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->backend.shrink.width_divisor, 16);
  EXPECT_EQ(s->backend.timeout_s, 30);
  auto m = LoadScenarioModel(*s);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(Named(*m, "llm").tf.hidden, 4096 / 16);
  EXPECT_EQ(Named(*m, "llm").tf.layers, 3);
  auto back = ParseScenario(FormatScenario(*s), "t.yaml", "/");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(*back == *s);
  auto err = ParseScenario(base + "backend:\n  layers: {audio: 2}\n", "t.yaml", "/");
  ASSERT_FALSE(err.ok());
  EXPECT_NE(
      err.error().message().find("t.yaml:8: backend.layers.audio: model 'llava-1.5-7b' has no component"),
      std::string::npos)
      << err.error().message();
  err = ParseScenario(base + "backend:\n  width_divisor: 0\n", "t.yaml", "/");
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message().find("t.yaml:8: backend.width_divisor"), std::string::npos)
      << err.error().message();
  err = ParseScenario(base + "backend:\n  threads: 2\n  bogus: 1\n", "t.yaml", "/");
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message().find("bogus"), std::string::npos) << err.error().message();
}

}  // namespace
}  // namespace mmtwin

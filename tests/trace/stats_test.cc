// SPDX-License-Identifier: Apache-2.0
// Trace statistics against hand computation and brute force.
#include "core/trace/stats.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/model/model.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

TEST(StatsTest, HandComputedSmallColumn) {
  const ModalityStats m = ComputeModalityStats("x", {4, 1, 3, 2, 0}, 4);
  EXPECT_EQ(m.name, "x");
  EXPECT_EQ(m.count, 5);
  EXPECT_EQ(m.nonzero, 4);
  EXPECT_DOUBLE_EQ(m.sum, 10);
  EXPECT_DOUBLE_EQ(m.mean, 2);
  EXPECT_DOUBLE_EQ(m.std, std::sqrt(2.0));  // population: (4+1+1+0+4)/5 = 2
  EXPECT_DOUBLE_EQ(m.min, 0);
  EXPECT_DOUBLE_EQ(m.max, 4);
  EXPECT_DOUBLE_EQ(m.p50, 2);
  EXPECT_DOUBLE_EQ(m.p90, 3.6);   // rank 0.9 * 4 = 3.6 -> 3 + 0.6 * (4 - 3)
  EXPECT_DOUBLE_EQ(m.p99, 3.96);  // rank 3.96
  // 4 bins of width 1 over [0, 4]: {0}, {1}, {2}, {3, 4} (the last bin includes the maximum).
  EXPECT_DOUBLE_EQ(m.histogram.lo, 0);
  EXPECT_DOUBLE_EQ(m.histogram.hi, 4);
  EXPECT_EQ(m.histogram.counts, (std::vector<int64_t>{1, 1, 1, 2}));
}

TEST(StatsTest, EvenCountMedianInterpolates) {
  const ModalityStats m = ComputeModalityStats("x", {1, 2, 3, 4}, 3);
  EXPECT_DOUBLE_EQ(m.p50, 2.5);
  EXPECT_DOUBLE_EQ(m.p90, 3.7);
  EXPECT_DOUBLE_EQ(m.std, std::sqrt(1.25));
  EXPECT_EQ(m.histogram.counts, (std::vector<int64_t>{1, 1, 2}));
}

TEST(StatsTest, EmptyAndConstantColumns) {
  const ModalityStats e = ComputeModalityStats("e", {}, 5);
  EXPECT_EQ(e.count, 0);
  EXPECT_EQ(e.mean, 0);
  EXPECT_EQ(e.histogram.counts, std::vector<int64_t>(5, 0));
  const ModalityStats c = ComputeModalityStats("c", std::vector<double>(7, 3.5), 4);
  EXPECT_DOUBLE_EQ(c.mean, 3.5);
  EXPECT_DOUBLE_EQ(c.std, 0);
  EXPECT_DOUBLE_EQ(c.p99, 3.5);
  EXPECT_EQ(c.histogram.counts, (std::vector<int64_t>{7, 0, 0, 0}));
  EXPECT_EQ(ComputeModalityStats("b", {1, 2}, 0).histogram.counts.size(), 1u);  // bins clamped to >= 1
}

TEST(StatsTest, RandomColumnsMatchBruteForce) {
  Rng rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 1 + static_cast<int>(rng.Below(300));
    std::vector<double> v(n);
    for (double& x : v) x = rng.Below(4) == 0 ? 0.0 : std::floor(rng.LogNormal(50, 1));
    const int bins = 1 + static_cast<int>(rng.Below(30));
    const ModalityStats m = ComputeModalityStats("v", v, bins);
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    EXPECT_NEAR(m.mean, mean, 1e-9 * std::max(1.0, mean));
    EXPECT_NEAR(m.std, std::sqrt(ss / n), 1e-9 * std::max(1.0, mean));
    EXPECT_EQ(m.min, s.front());
    EXPECT_EQ(m.max, s.back());
    EXPECT_EQ(m.nonzero, std::count_if(v.begin(), v.end(), [](double x) { return x != 0; }));
    EXPECT_LE(m.min, m.p50);
    EXPECT_LE(m.p50, m.p90);
    EXPECT_LE(m.p90, m.p99);
    EXPECT_LE(m.p99, m.max);
    // At least half the values are <= p50 and at least half are >= p50.
    EXPECT_GE(2 * std::count_if(v.begin(), v.end(), [&](double x) { return x <= m.p50; }), n);
    EXPECT_GE(2 * std::count_if(v.begin(), v.end(), [&](double x) { return x >= m.p50; }), n);
    ASSERT_EQ(static_cast<int>(m.histogram.counts.size()), bins);
    EXPECT_EQ(std::accumulate(m.histogram.counts.begin(), m.histogram.counts.end(), int64_t{0}), n);
    // Every value falls in its bin: recount by bin edges.
    const double w = (m.max - m.min) / bins;
    if (w > 0) {
      for (int b = 0; b < bins; ++b) {
        const int64_t expect = std::count_if(v.begin(), v.end(), [&](double x) {
          const int bx = std::clamp(static_cast<int>((x - m.min) / w), 0, bins - 1);
          return bx == b;
        });
        EXPECT_EQ(m.histogram.counts[b], expect);
      }
    }
  }
}

Trace SmallTrace() {
  Trace t;
  const uint16_t a = t.SubsetIndex("coco");
  const uint16_t b = t.SubsetIndex("text-only");
  t.SubsetIndex("empty");
  auto add = [&](uint16_t sub, uint32_t img, uint32_t tiles, uint32_t frames, double audio, uint32_t text) {
    Sample s;
    s.subset = sub;
    s.images = img;
    s.image_tiles = tiles;
    s.video_frames = frames;
    s.audio_seconds = audio;
    s.text_tokens = text;
    t.Add(s, std::to_string(t.samples.size()));
  };
  add(a, 1, 5, 0, 0, 100);
  add(a, 2, 10, 0, 0, 300);
  add(b, 0, 0, 0, 1.5, 50);
  add(a, 1, 5, 8, 0, 150);
  return t;
}

TEST(StatsTest, TraceColumnsAndSubsets) {
  const Trace t = SmallTrace();
  const TraceStats st = ComputeStats(t, 10);
  EXPECT_EQ(st.samples, 4);
  ASSERT_EQ(st.modalities.size(), 5u);
  EXPECT_EQ(st.modalities[0].name, "images");
  EXPECT_EQ(st.modalities[1].name, "image_tiles");
  EXPECT_EQ(st.modalities[2].name, "video_frames");
  EXPECT_EQ(st.modalities[3].name, "audio_seconds");
  EXPECT_EQ(st.modalities[4].name, "text_tokens");
  EXPECT_DOUBLE_EQ(st.modalities[0].mean, 1.0);
  EXPECT_EQ(st.modalities[0].nonzero, 3);
  EXPECT_DOUBLE_EQ(st.modalities[1].sum, 20);
  EXPECT_EQ(st.modalities[2].nonzero, 1);
  EXPECT_DOUBLE_EQ(st.modalities[3].max, 1.5);
  EXPECT_DOUBLE_EQ(st.modalities[4].mean, 150);
  EXPECT_DOUBLE_EQ(st.modalities[4].p50, 125);
  ASSERT_EQ(st.subsets.size(), 3u);
  EXPECT_EQ(st.subsets[0].name, "coco");
  EXPECT_EQ(st.subsets[0].samples, 3);
  EXPECT_EQ(st.subsets[1].samples, 1);
  EXPECT_EQ(st.subsets[2].samples, 0);
}

TEST(StatsTest, SubsetsAreListedLargestFirst) {
  // They were listed in first-seen order, so the mix of a trace had to be read off an unordered list.
  Trace t;
  const char* order[] = {"small", "big", "mid", "big", "mid", "big", "tie-b", "tie-a"};
  for (int i = 0; i < 8; ++i) {
    Sample s;
    s.subset = t.SubsetIndex(order[i]);
    s.text_tokens = 1;
    t.Add(s, std::to_string(i));
  }
  const TraceStats st = ComputeStats(t, 4);
  std::vector<std::string> names;
  for (const auto& c : st.subsets) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"big", "mid", "small", "tie-a", "tie-b"}));
  const std::string text = FormatStatsText(st);
  EXPECT_LT(text.find("big"), text.find("mid"));
}

TEST(StatsTest, JsonAndText) {
  const TraceStats st = ComputeStats(SmallTrace(), 4);
  const nlohmann::json j = nlohmann::json::parse(StatsToJson(st));
  EXPECT_EQ(j.at("samples").get<int64_t>(), 4);
  EXPECT_DOUBLE_EQ(j.at("modalities").at("text_tokens").at("mean").get<double>(), 150);
  EXPECT_DOUBLE_EQ(j.at("modalities").at("image_tiles").at("p50").get<double>(), 5);
  EXPECT_EQ(j.at("modalities").at("images").at("histogram").at("counts").size(), 4u);
  EXPECT_EQ(j.at("subsets").at(0).at("name").get<std::string>(), "coco");
  EXPECT_EQ(j.at("subsets").at(0).at("samples").get<int64_t>(), 3);
  EXPECT_FALSE(j.contains("model"));
  const std::string text = FormatStatsText(st);
  EXPECT_NE(text.find("4 samples, 3 subsets"), std::string::npos) << text;
  for (const char* name :
       {"images", "image_tiles", "video_frames", "audio_seconds", "text_tokens", "coco", "75.00%"})
    EXPECT_NE(text.find(name), std::string::npos) << name << "\n" << text;
}

TEST(StatsTest, ModelTokensMatchTokensFor) {
  const std::vector<std::string> models = ListModels();
  if (std::find(models.begin(), models.end(), "llava-1.5-7b") == models.end())
    GTEST_SKIP() << "no llava-1.5-7b";
  Result<ModelSpec> m = LoadModel("llava-1.5-7b");
  if (!m.ok()) GTEST_SKIP() << m.error().message();
  const Trace t = SmallTrace();
  TraceStats st = ComputeStats(t);
  AddModelStats(st, t, *m);
  ASSERT_EQ(st.modalities.size(), 7u);
  EXPECT_EQ(st.modalities[5].name, "vit_tokens");
  EXPECT_EQ(st.modalities[6].name, "llm_tokens");
  EXPECT_EQ(st.model, m->name);
  // The llm_tokens column is the data's own lengths, before the model's context cuts them (LLaVA-1.5: 2,048).
  ModelSpec uncut = *m;
  uncut.max_context = 0;
  double vit = 0, llm = 0;
  for (const Sample& s : t.samples) {
    vit += static_cast<double>(TokensFor(*m, s).vit_tokens);
    llm += static_cast<double>(TokensFor(uncut, s).llm_tokens);
  }
  EXPECT_DOUBLE_EQ(st.modalities[5].sum, vit);
  EXPECT_DOUBLE_EQ(st.modalities[6].sum, llm);
  EXPECT_GE(st.modalities[6].min, 50);  // at least the text tokens of the smallest sample
  EXPECT_GT(st.modalities[5].max, 0);   // images have ViT tokens
  EXPECT_EQ(nlohmann::json::parse(StatsToJson(st)).at("model").get<std::string>(), m->name);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// layers.csv (core/records/layer_timings.h): round trip, and strict errors naming file:line: field.
#include "core/records/layer_timings.h"

#include <gtest/gtest.h>

namespace mmtwin {
namespace {

std::vector<Layer> TwoLayers() {
  Layer a, b;
  a.label = "llm.embed";
  a.kind = LayerKind::kEmbedding;
  b.label = "llm.block.0";
  b.kind = LayerKind::kTransformer;
  return {a, b};
}

TEST(LayerTimings, RoundTrip) {
  LayerTiming t;
  t.iteration = 7;
  t.device = 3;
  t.micro_batch = 2;
  t.layer = 1;
  t.tokens = 4096;
  t.spans = 5;
  t.attention_pairs = 3.5e6;
  t.fwd_us = 812.25;
  t.bwd_us = 1601.5;
  t.recompute_us = 790.125;
  t.act_bytes = 123456789012;
  t.out_bytes = 65536;
  t.bwd_work_bytes = 4321;
  const std::string csv = LayerTimingsCsv({t}, TwoLayers());
  auto back = ParseLayerTimingsCsv(csv, "layers.csv");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 1u);
  const LayerTiming& r = (*back)[0];
  EXPECT_EQ(r.iteration, 7);
  EXPECT_EQ(r.device, 3);
  EXPECT_EQ(r.micro_batch, 2);
  EXPECT_EQ(r.layer, 1);
  EXPECT_EQ(r.label, "llm.block.0");
  EXPECT_EQ(r.kind, LayerKind::kTransformer);
  EXPECT_EQ(r.tokens, 4096);
  EXPECT_EQ(r.spans, 5);
  EXPECT_DOUBLE_EQ(r.attention_pairs, 3.5e6);
  EXPECT_DOUBLE_EQ(r.fwd_us, 812.25);
  EXPECT_DOUBLE_EQ(r.bwd_us, 1601.5);
  EXPECT_DOUBLE_EQ(r.recompute_us, 790.125);
  EXPECT_EQ(r.act_bytes, 123456789012);
  EXPECT_EQ(r.out_bytes, 65536);
  EXPECT_EQ(r.bwd_work_bytes, 4321);
  EXPECT_EQ(r.line, 3);
  EXPECT_EQ(csv.rfind("# mmtwin-layers v3\n", 0), 0u);
}

TEST(LayerTimings, VersionTwoReadsWithoutWorkingMemory) {
  const std::string v2 =
      "# mmtwin-layers v2\n"
      "iteration,device,micro_batch,layer,label,kind,tokens,spans,attention_pairs,fwd_us,bwd_us,recompute_"
      "us,act_bytes,out_bytes\n"
      "0,0,0,1,llm.block.0,transformer,10,1,100,5,10,0,640,160\n";
  auto r = ParseLayerTimingsCsv(v2, "old/layers.csv");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].act_bytes, 640);
  EXPECT_EQ((*r)[0].bwd_work_bytes, -1);  // not measured
  // A v2 version line over a v3 header is an error naming the header it expected.
  auto bad = ParseLayerTimingsCsv(
      "# mmtwin-layers v2\n"
      "iteration,device,micro_batch,layer,label,kind,tokens,spans,attention_pairs,fwd_us,bwd_us,recompute_"
      "us,act_bytes,out_bytes,bwd_work_bytes\n",
      "old/layers.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("old/layers.csv:2: expected the header"), std::string::npos);
}

TEST(LayerTimings, ErrorsNameFileLineAndField) {
  const std::string head =
      "# mmtwin-layers v3\n"
      "iteration,device,micro_batch,layer,label,kind,tokens,spans,attention_pairs,fwd_us,bwd_us,recompute_"
      "us,act_bytes,out_bytes,bwd_work_bytes\n";
  auto err = [](const std::string& text) {
    auto r = ParseLayerTimingsCsv(text, "run/layers.csv");
    return r.ok() ? std::string("ok") : r.error().message();
  };
  EXPECT_EQ(err(head + "0,0,0,1,llm.block.0,transformer,10,1,100,5,10,0,640,160,80\n"), "ok");
  EXPECT_NE(err(head + "0,0,0,1,llm.block.0,transformer,10,1,100,-5,10,0,0,0,0\n")
                .find("run/layers.csv:3: fwd_us: '-5'"),
            std::string::npos);
  // Issue 34: a finite but absurd time made a layer type's fit NaN downstream; refused at the row.
  EXPECT_EQ(err(head + "0,0,0,1,llm.block.0,transformer,10,1,100,1e308,10,0,0,0,0\n"),
            "run/layers.csv:3: fwd_us: '1e308' is more than 1e+12 us; not a measured layer time");
  EXPECT_EQ(err(head + "0,0,0,1,llm.block.0,transformer,10,1,1e30,5,10,0,0,0,0\n"),
            "run/layers.csv:3: attention_pairs: '1e30' is more than 1e+19 pairs");
  EXPECT_NE(err(head + "0,0,0,1,x,conv,10,1,100,5,10,0,0,0,0\n")
                .find("run/layers.csv:3: kind: unknown layer kind 'conv'"),
            std::string::npos);
  EXPECT_NE(err(head + "0,0,0,1,x\n").find("run/layers.csv:3: expected 15 fields, got 5"), std::string::npos);
  EXPECT_NE(err("iteration,device\n").find("run/layers.csv:1: not a per-layer timings file"),
            std::string::npos);
  EXPECT_NE(err("# mmtwin-layers v9\n").find("unsupported version 'mmtwin-layers v9'"), std::string::npos);
  EXPECT_NE(err("# mmtwin-layers v3\niteration,device\n").find("run/layers.csv:2: expected the header"),
            std::string::npos);
  EXPECT_NE(err(head + "0,0,0,1,llm.block.0,transformer,10,1,100,5,10,0,-1,0,0\n")
                .find("run/layers.csv:3: act_bytes: '-1'"),
            std::string::npos);
  EXPECT_NE(err(head + "0,0,0,1,llm.block.0,transformer,10,1,100,5,10,0,1,0,-3\n")
                .find("run/layers.csv:3: bwd_work_bytes: '-3'"),
            std::string::npos);
  // A v1 file (before the memory columns) is refused with the version it has and the one this reads.
  EXPECT_NE(err("# mmtwin-layers v1\n")
                .find("unsupported version 'mmtwin-layers v1' (this mmtwin reads "
                      "'mmtwin-layers v3' and 'mmtwin-layers v2')"),
            std::string::npos);
}

}  // namespace
}  // namespace mmtwin

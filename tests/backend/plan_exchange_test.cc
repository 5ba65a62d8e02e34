// SPDX-License-Identifier: Apache-2.0
// The plan's sample shapes as rank 0 hands them to every rank (backend/plan_exchange.h, no Torch): the samples
// the plan uses come back exactly (audio seconds to the bit), the others empty; bad text is refused.
#include <gtest/gtest.h>

#include <string>

#include "backend/plan_exchange.h"

namespace mmtwin::backend {
namespace {

TEST(PlanExchange, TheSamplesThePlanUsesComeBackExactly) {
  Trace t;
  t.samples.resize(5);
  for (size_t i = 0; i < t.samples.size(); ++i) {
    Sample& s = t.samples[i];
    s.image_tiles = static_cast<uint32_t>(i + 1);
    s.video_frames = static_cast<uint32_t>(10 * i);
    s.audio_seconds = 0.1 * static_cast<double>(i) + 1.0 / 3.0;
    s.text_tokens = static_cast<uint32_t>(100 + i);
  }
  Plan plan;
  IterationData it;
  it.micro_batches = {{{4, 1}}, {{3}}};  // DP rank 0: micro-batch {4, 1}; DP rank 1: {3}
  plan.iterations.push_back(it);
  auto back = TraceFromText(SamplesText(t, plan));
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const Sample& s = back->samples[i];
    if (i == 1 || i == 3 || i == 4) {
      EXPECT_EQ(s.image_tiles, t.samples[i].image_tiles);
      EXPECT_EQ(s.video_frames, t.samples[i].video_frames);
      EXPECT_EQ(s.audio_seconds, t.samples[i].audio_seconds);  // bit-exact
      EXPECT_EQ(s.text_tokens, t.samples[i].text_tokens);
    } else {
      EXPECT_EQ(s.image_tiles, 0u) << i;
      EXPECT_EQ(s.text_tokens, 0u) << i;
    }
  }
}

TEST(PlanExchange, BadTextIsRefused) {
  EXPECT_EQ(TraceFromText("").error().message(), "plan samples: empty");
  EXPECT_EQ(TraceFromText("x\n").error().message(), "plan samples: bad size");
  EXPECT_EQ(TraceFromText("2\n2,1,0,0,5\n").error().message(), "plan samples: bad line '2,1,0,0,5'");
  EXPECT_EQ(TraceFromText("2\n0,1,0,0\n").error().message(), "plan samples: bad line '0,1,0,0'");
}

}  // namespace
}  // namespace mmtwin::backend

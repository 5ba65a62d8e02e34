// SPDX-License-Identifier: Apache-2.0
// The data-policy tests' synthetic epoch (dynapipe_test, wlb_test): n samples of LLaVA-1.5-7B, three in four with
// one image (577 ViT tokens, 576 LLM tokens), text log-normal around 200 tokens, each sample's LLM tokens capped at
// `max_llm_tokens`; the trace holds the samples, `sizes` what the policies look at.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/balance/data_plan.h"
#include "core/model/model.h"
#include "core/util/rng.h"

namespace mmtwin::fixtures {

struct SyntheticSizes {
  Trace trace;
  SampleSizes sizes;
  ModelSpec model;
  SyntheticSizes(size_t n, int64_t max_llm_tokens) {
    Rng rng(5);
    auto m = LoadModel("llava-1.5-7b");
    EXPECT_TRUE(m.ok());
    model = *m;
    for (size_t i = 0; i < n; ++i) {
      Sample smp;
      smp.subset = trace.SubsetIndex("a");
      trace.Add(smp, std::to_string(i));
      const int64_t images = rng.Below(4) == 0 ? 0 : 1;
      sizes.vision_units.push_back(images);
      sizes.vit_tokens.push_back(images * 577);
      sizes.audio_tokens.push_back(0);
      sizes.text_tokens.push_back(20 + static_cast<int64_t>(rng.LogNormal(200, 1.0)));
      sizes.llm_tokens.push_back(std::min<int64_t>(max_llm_tokens, sizes.text_tokens.back() + 576 * images));
    }
  }
};

}  // namespace mmtwin::fixtures

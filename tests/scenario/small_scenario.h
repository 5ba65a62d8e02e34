// SPDX-License-Identifier: Apache-2.0
// The small scenario the planner, simulate and scenario-check tests share: 6,000 InternVL-1.2M samples (the
// preset's generator, default seed), InternVL-1.5 6B+20B on a100-4x200g, DP2 x TP2 x PP4 with 8 micro-batches and
// ZeRO-1. Policies, seeds and iterations are each test's own.
#pragma once

#include "core/scenario/scenario.h"

namespace mmtwin {

inline Scenario SmallScenario() {
  Scenario s;
  s.name = "small";
  s.trace.preset = "internvl-1.2m";
  s.trace.samples = 6000;
  s.model = "internvl-1.5-6b-20b";
  s.cluster = "a100-4x200g";
  s.parallel.dp = 2;
  s.parallel.tp = 2;
  s.parallel.pp = 4;
  s.parallel.micro_batches = 8;
  s.parallel.zero_stage = 1;
  return s;
}

// The planner's and the scenario check's variant: valid, every policy with parameters to check (post-balance with
// all-to-all dispatch, so plans carry dispatch lists; BMP; adaptive recompute), seed 7, 5 iterations.
inline Scenario SmallPlannedScenario() {
  Scenario s = SmallScenario();
  s.trace.seed = 7;
  s.data = {"post-balance", {{"batch_size", "4"}, {"dispatch", "all-to-all"}}};
  s.partition = {"bmp", {}};
  s.recompute = {"adaptive", {}};
  s.iterations = 5;
  return s;
}

}  // namespace mmtwin

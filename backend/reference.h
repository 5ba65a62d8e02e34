// SPDX-License-Identifier: Apache-2.0
// What the single-process reference (train.h: RunReference, reference.cc) and the ranks share: the loss divisor
// and the grads file the tests compare.
//
// Grads file (train.h: TrainOptions::dump_grads, grads.rankR.bin / params.rankR.bin / grads.ref.bin): "MMTG",
// then records of (name length u32, name, element count u64, that many f32), the first "__loss__" with one
// element, then each parameter in order: its gradient (zeros when it has none), or with `values` its value.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model.h"
#include "core/plan/plan.h"
#include "core/trace/trace.h"

namespace mmtwin::backend {

void WriteGrads(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& named,
                double loss, bool values = false);

// LLM tokens of the whole iteration over every DP rank: every micro-batch's loss is sum(CE) / this, so the
// gradients of any layout sum to the reference's.
int64_t LossTokens(const ModelSpec& m, const Trace& t, const IterationData& it);

}  // namespace mmtwin::backend

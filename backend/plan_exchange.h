// SPDX-License-Identifier: Apache-2.0
// What rank 0 hands every rank besides the plan (no Torch): the shapes of the plan's samples, as text for the
// c10d store, so that the trace is read once (by rank 0's planner) and no rank re-plans (rank.cc: SharePlan).
//
//   line 1        the trace's sample count N
//   then, per sample the plan's iterations use, ascending: index,image_tiles,video_frames,audio_seconds,text_tokens
//                 (audio seconds with 17 significant digits: read back exactly)
//
// TraceFromText gives a trace of N samples whose listed samples have those fields (the others are empty) and
// numbered ids (the backend needs none).
#pragma once

#include <string>

#include "core/plan/plan.h"
#include "core/trace/trace.h"
#include "core/util/status.h"

namespace mmtwin::backend {

std::string SamplesText(const Trace& trace, const Plan& plan);
// Errors: "plan samples: ..." (an empty text, a bad size, a bad line quoted).
Result<Trace> TraceFromText(const std::string& text);

}  // namespace mmtwin::backend

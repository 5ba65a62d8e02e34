// SPDX-License-Identifier: Apache-2.0
// The data half of a plan: which samples every DP rank holds at every step (after data policies and
// post-balancing), and the per-sample sizes those policies looked at.
//
// A step is one global mini-batch: `ranks[r]` is DP rank r's mini-batch. A mini-batch is either packed (samples
// concatenated into one varlen sequence, no padding: ISF, post-balancing) or padded (every sample padded to the
// longest LLM length in the mini-batch: the random / length-group / device-group baselines).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/plan/dispatch.h"
#include "core/trace/trace.h"

namespace mmtwin {

// Model-dependent sizes of every trace sample, computed once (TokensFor) and shared by all policies. 32-bit
// (20 bytes a sample: 400 MB for 20M samples); a size above 2^31 - 1 is held there (no model takes such a
// sample, and every policy treats it as oversize).
using SampleSize = int32_t;
struct SampleSizes {
  std::vector<SampleSize> vision_units;  // tiles + frames
  std::vector<SampleSize> vit_tokens;
  std::vector<SampleSize> audio_tokens;
  std::vector<SampleSize> llm_tokens;
  std::vector<SampleSize> text_tokens;  // the trace's text tokens alone
  size_t size() const { return llm_tokens.size(); }
};
SampleSizes ComputeSizes(const ModelSpec& model, const Trace& trace);
// The same from the samples' tokens when they are at hand (tokens[i] = TokensFor(model, trace.samples[i]);
// equal sizes, without pricing every sample again). Requires tokens.size() == trace.size().
SampleSizes ComputeSizes(const std::vector<SampleTokens>& tokens, const Trace& trace);

struct MiniBatch {
  std::vector<uint32_t> samples;  // indices into the trace
};

struct DataStep {
  std::vector<MiniBatch> ranks;  // one per DP rank
  // The dispatch all-to-all that brings this step's samples to their ranks (post-balance, orchestrator;
  // empty = nothing moves, e.g. the ranks keep what they drew). Aggregated per (src, dst) DP-rank pair.
  std::vector<DispatchTransfer> dispatch;
  // The backward all-to-all (orchestrator): the gradients of the encoder outputs that `dispatch` moved, going
  // back the same way reversed. Aggregated likewise; empty = none (raw inputs need no gradient).
  std::vector<DispatchTransfer> dispatch_backward;
  // The dispatcher's own work before `dispatch` (length all-gather, host time; core/plan/dispatch.h).
  DispatchOverhead dispatch_overhead;
};

struct DataPlan {
  std::string policy;
  std::map<std::string, std::string> params;  // resolved parameters
  int dp = 0;
  bool packed = false;
  std::vector<DataStep> steps;
  // Samples left out: no mini-batch can hold them (alone above an ISF bound), or lost as OmniBal's public code
  // loses them (isf variant omnibal-public).
  std::vector<uint32_t> skipped;
  int64_t dropped_remainder = 0;          // samples left over for an incomplete last step (drop_last)
  std::map<std::string, double> metrics;  // policy-specific scalar results (units in the names)
  std::string details_json;  // policy-specific structured report as JSON text (e.g. per-phase orchestration);
                             // "" = none

  int64_t SamplesPlaced() const;
};

// Checks a plan against its trace: every placed sample appears exactly once, placed + skipped + dropped = all,
// every step has `dp` mini-batches. Used by tests and by the CLI in debug runs.
Status CheckPlan(const DataPlan& plan, size_t num_samples);

}  // namespace mmtwin

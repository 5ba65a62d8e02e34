// SPDX-License-Identifier: Apache-2.0
#include "core/balance/data_plan.h"

#include <algorithm>
#include <limits>

#include "core/util/memory_limit.h"

namespace mmtwin {
namespace {

SampleSize Held(int64_t v) {
  return static_cast<SampleSize>(std::clamp<int64_t>(v, 0, std::numeric_limits<SampleSize>::max()));
}

// Reserved and advised before the first touch: policies and metrics read these at random (huge pages: fewer
// TLB misses on a 20M-sample trace).
SampleSizes Reserved(size_t n) {
  SampleSizes s;
  for (auto* v : {&s.vision_units, &s.vit_tokens, &s.audio_tokens, &s.llm_tokens, &s.text_tokens}) {
    v->reserve(n);
    AdviseHugePages(v->data(), n * sizeof(SampleSize));
  }
  return s;
}

void Append(SampleSizes& s, const SampleTokens& t, const Sample& x) {
  s.vision_units.push_back(Held(t.vision_units));
  s.vit_tokens.push_back(Held(t.vit_tokens));
  s.audio_tokens.push_back(Held(t.audio_tokens));
  s.llm_tokens.push_back(Held(t.llm_tokens));
  s.text_tokens.push_back(Held(x.text_tokens));
}

}  // namespace

SampleSizes ComputeSizes(const ModelSpec& model, const Trace& trace) {
  const size_t n = trace.samples.size();
  SampleSizes s = Reserved(n);
  for (size_t i = 0; i < n; ++i) Append(s, TokensFor(model, trace.samples[i]), trace.samples[i]);
  return s;
}

SampleSizes ComputeSizes(const std::vector<SampleTokens>& tokens, const Trace& trace) {
  const size_t n = std::min(tokens.size(), trace.samples.size());
  SampleSizes s = Reserved(n);
  for (size_t i = 0; i < n; ++i) Append(s, tokens[i], trace.samples[i]);
  return s;
}

int64_t DataPlan::SamplesPlaced() const {
  int64_t n = 0;
  for (const auto& st : steps)
    for (const auto& mb : st.ranks) n += static_cast<int64_t>(mb.samples.size());
  return n;
}

Status CheckPlan(const DataPlan& plan, size_t num_samples) {
  std::vector<uint8_t> seen(num_samples, 0);
  auto mark = [&](uint32_t i, const char* where) -> Status {
    if (i >= num_samples) return Error(std::string("plan: sample index out of range in ") + where);
    if (seen[i]) return Error("plan: sample " + std::to_string(i) + " placed twice (" + where + ")");
    seen[i] = 1;
    return Status();
  };
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    if (static_cast<int>(plan.steps[k].ranks.size()) != plan.dp)
      return Error("plan: step " + std::to_string(k) + " has " + std::to_string(plan.steps[k].ranks.size()) +
                   " mini-batches for dp " + std::to_string(plan.dp));
    for (const auto& mb : plan.steps[k].ranks)
      for (uint32_t i : mb.samples) MMTWIN_RETURN_IF_ERROR(mark(i, "steps"));
  }
  for (uint32_t i : plan.skipped) MMTWIN_RETURN_IF_ERROR(mark(i, "skipped"));
  int64_t unseen = 0;
  for (uint8_t b : seen) unseen += !b;
  if (unseen != plan.dropped_remainder)
    return Error("plan: " + std::to_string(unseen) +
                 " samples neither placed nor skipped, but dropped_remainder is " +
                 std::to_string(plan.dropped_remainder));
  return Status();
}

}  // namespace mmtwin

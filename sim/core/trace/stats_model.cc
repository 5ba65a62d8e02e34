// SPDX-License-Identifier: Apache-2.0
// Model-dependent trace statistics (kept apart from stats.cc so that users of ComputeStats do not link the
// model).
#include <vector>

#include "core/model/model.h"
#include "core/trace/stats.h"

namespace mmtwin {

void AddModelStats(TraceStats& stats, const Trace& trace, const ModelSpec& model, int bins) {
  const size_t n = trace.samples.size();
  std::vector<double> vit(n), llm(n);
  ModelSpec uncut = model;  // the data's own lengths; samples past the context are counted apart
  uncut.max_context = 0;
  stats.max_context = model.max_context;
  for (size_t i = 0; i < n; ++i) {
    const SampleTokens tok = TokensFor(uncut, trace.samples[i]);
    vit[i] = static_cast<double>(tok.vit_tokens);
    llm[i] = static_cast<double>(tok.llm_tokens);
    stats.over_context += model.max_context > 0 && tok.llm_tokens > model.max_context ? 1 : 0;
  }
  stats.modalities.push_back(ComputeModalityStats("vit_tokens", std::move(vit), bins));
  stats.modalities.push_back(ComputeModalityStats("llm_tokens", std::move(llm), bins));
  stats.model = model.name;
}

}  // namespace mmtwin

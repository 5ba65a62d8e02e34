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
  for (size_t i = 0; i < n; ++i) {
    const SampleTokens tok = TokensFor(model, trace.samples[i]);
    vit[i] = static_cast<double>(tok.vit_tokens);
    llm[i] = static_cast<double>(tok.llm_tokens);
  }
  stats.modalities.push_back(ComputeModalityStats("vit_tokens", std::move(vit), bins));
  stats.modalities.push_back(ComputeModalityStats("llm_tokens", std::move(llm), bins));
  stats.model = model.name;
}

}  // namespace mmtwin

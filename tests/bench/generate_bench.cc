// SPDX-License-Identifier: Apache-2.0
// Trace generation speed: the full InternVL-1.2M trace (1,267,819 samples) must take <= 3 s on one core; the
// other presets at their default sizes for comparison.
#include <benchmark/benchmark.h>

#include "core/trace/generate.h"

namespace mmtwin {
namespace {

void BM_Generate(benchmark::State& state, const std::string& preset, int64_t samples) {
  uint64_t seed = 1;
  for (auto _ : state) {
    Result<Trace> t = GenerateTrace(preset, samples, seed++);
    if (!t.ok()) {
      state.SkipWithError(t.error().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(t->samples.data());
  }
  state.SetItemsProcessed(state.iterations() * samples);
}

BENCHMARK_CAPTURE(BM_Generate, internvl_1_2m_full, std::string("internvl-1.2m"), 1267819)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, llava_665k_full, std::string("llava-665k"), 665298)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, lcs_558k_full, std::string("lcs-558k"), 558128)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, asr_sqa_mix_40k, std::string("asr-sqa-mix"), 40000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, long_video_15k, std::string("long-video"), 15292)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mmtwin

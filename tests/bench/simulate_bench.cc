// End-to-end simulation of shipped scenarios (scenario load, trace generation, data policy, planning, replay).
// Target: scenarios/omnibal/internvl-6b-20b-epoch-512.yaml (whole epoch of 1,267,819 samples on 512 GPUs) <= 30 s.
#include <benchmark/benchmark.h>

#include "core/scenario/scenario.h"
#include "core/sim/simulate.h"

namespace mmtwin {
namespace {

void BM_Simulate(benchmark::State& state, const char* file) {
  auto s = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/" + file);
  if (!s) {
    state.SkipWithError(s.error().message().c_str());
    return;
  }
  double iterations = 0;
  for (auto _ : state) {
    auto r = Simulate(*s, {});
    if (!r) {
      state.SkipWithError(r.error().message().c_str());
      return;
    }
    iterations = r->summary["iterations_replayed"].get<double>();
    benchmark::DoNotOptimize(r->summary.size());
  }
  state.counters["iterations"] = iterations;
}

BENCHMARK_CAPTURE(BM_Simulate, default_yaml, "scenarios/default.yaml")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, omnibal_6b_20b, "scenarios/omnibal/internvl-6b-20b-omnibal.yaml")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, epoch_512, "scenarios/omnibal/internvl-6b-20b-epoch-512.yaml")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace mmtwin

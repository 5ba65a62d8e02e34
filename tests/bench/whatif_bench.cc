// SPDX-License-Identifier: Apache-2.0
// What `mmtwin replay` (sim/whatif/whatif.h) costs on one core: BM_Replay128Ranks replays a simulated run folder
// of 128 ranks (DP 32 x PP 4 op-graph devices, 168 micro-batches: about 100,000 ops in ops.csv) with the four
// what-ifs: reading the folder, planning the scenario again, matching, and the five evaluations. The folder is
// simulated once before the timing loop.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/records/run_folder.h"
#include "driver/simulate.h"
#include "whatif/whatif.h"

namespace mmtwin {
namespace {

void BM_Replay128Ranks(benchmark::State& state) {
  Scenario s;
  s.name = "replay-128";
  s.trace.preset = "internvl-1.2m";
  s.trace.samples = 200000;
  s.model = "internvl-1.5-6b-20b";
  s.cluster = "a100-4x200g";
  s.parallel.dp = 32;
  s.parallel.tp = 1;
  s.parallel.pp = 4;
  s.parallel.micro_batches = 168;
  s.parallel.zero_stage = 1;
  s.data = {"random", {{"batch_size", "1"}}};
  s.recompute = {"full", {}};
  s.iterations = 1;
  auto r = Simulate(s, {});
  if (!r.ok()) {
    state.SkipWithError(r.error().message().c_str());
    return;
  }
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("whatif_bench_" + std::to_string(getpid()))).string();
  const Status st =
      RunFolderWriter().AddOps(r->ops).AddScenario(r->resolved_yaml).AddPlan(r->plan).Write(dir);
  if (!st.ok()) {
    state.SkipWithError(st.error().message().c_str());
    return;
  }
  double ideal = 0;
  for (auto _ : state) {
    auto rep = ReplayRunFolder(dir, {});
    if (!rep.ok()) {
      state.SkipWithError(rep.error().message().c_str());
      break;
    }
    ideal = rep->mean.ideal_us;
    benchmark::DoNotOptimize(ideal);
  }
  state.counters["ops"] = static_cast<double>(r->ops.size());
  state.counters["ranks"] = 128;
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_Replay128Ranks)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// What `mmtwin replay` (sim/whatif/whatif.h) costs on one core: BM_Replay128Ranks replays a simulated run folder
// of 128 ranks (DP 32 x PP 4 op-graph devices, 168 micro-batches: about 100,000 ops in ops.csv) with the four
// what-ifs: reading the folder, planning the scenario again, matching, and the five evaluations. The folder is
// simulated once before the timing loop. BM_ImportKineto128Ranks imports the same run's ops as 128 ranks' PyTorch
// profiler traces (whatif/kineto_traces.h: a range and two kernels per op; written before the timing loop):
// parsing, attribution and the op records.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/records/run_folder.h"
#include "driver/simulate.h"
#include "whatif/kineto_import.h"
#include "whatif/kineto_traces.h"
#include "whatif/whatif.h"

namespace mmtwin {
namespace {

Scenario Replay128() {
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
  return s;
}

void BM_Replay128Ranks(benchmark::State& state) {
  auto r = Simulate(Replay128(), {});
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

void BM_ImportKineto128Ranks(benchmark::State& state) {
  auto r = Simulate(Replay128(), {});
  if (!r.ok()) {
    state.SkipWithError(r.error().message().c_str());
    return;
  }
  const std::vector<KinetoTrace> traces =
      testing::TracesOf(testing::AsFrameworkOps(r->ops), r->plan.parallel);
  size_t bytes = 0;
  for (const KinetoTrace& t : traces) bytes += t.text.size();
  ImportOptions o;
  o.step_iterations = {r->plan.iterations.front().epoch_index};
  int64_t ops = 0;
  for (auto _ : state) {
    auto t = ImportKineto(traces, r->plan.parallel, o);
    if (!t.ok()) {
      state.SkipWithError(t.error().message().c_str());
      break;
    }
    ops = static_cast<int64_t>(t->ops.size());
    benchmark::DoNotOptimize(ops);
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["MiB"] = static_cast<double>(bytes) / (1 << 20);
}
BENCHMARK(BM_ImportKineto128Ranks)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace mmtwin

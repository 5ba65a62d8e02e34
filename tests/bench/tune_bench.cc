// SPDX-License-Identifier: Apache-2.0
// What `mmtwin tune` (sim/tune/tune.h) costs before and per simulation, on one core:
//   BM_EnumerateOmnibalSpace: the candidates of scenarios/tune/omnibal-6b-20b-5760.yaml, 5,760 combinations over
//     OmniBal's 6B+20B recipe on 128 A100s (tp x pp x micro-batches x ZeRO stage x recompute x partition x data x
//     schedule): each candidate's scenario checked and its memory lower bound computed, nothing planned or
//     simulated;
//   BM_TuneDefault16: scenarios/tune/default-16gpu.yaml end to end in this process (enumeration, then each of the 90
//     candidates left simulated with the sweep's RunScenario, then ranked), as `mmtwin tune --jobs 1` does minus
//     the worker processes and the database.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "sweep/runner.h"
#include "tune/tune.h"

namespace mmtwin {
namespace {

void BM_EnumerateOmnibalSpace(benchmark::State& state) {
  auto space = LoadTuneSpace(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/tune/omnibal-6b-20b-5760.yaml");
  if (!space.ok()) {
    state.SkipWithError(space.error().message().c_str());
    return;
  }
  size_t evaluate = 0, pruned = 0;
  int64_t combinations = 0, rejected = 0;
  for (auto _ : state) {
    auto e = EnumerateTune(*space, true);
    if (!e.ok()) {
      state.SkipWithError(e.error().message().c_str());
      return;
    }
    evaluate = e->evaluate.size();
    pruned = e->pruned.size();
    combinations = e->combinations;
    rejected = 0;
    for (const auto& [reason, n] : e->rejected) rejected += n;
    benchmark::DoNotOptimize(e->evaluate.data());
  }
  state.counters["combinations"] = static_cast<double>(combinations);
  state.counters["rejected"] = static_cast<double>(rejected);
  state.counters["to_evaluate"] = static_cast<double>(evaluate);
  state.counters["pruned"] = static_cast<double>(pruned);
}
BENCHMARK(BM_EnumerateOmnibalSpace)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_TuneDefault16(benchmark::State& state) {
  auto space = LoadTuneSpace(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/tune/default-16gpu.yaml");
  if (!space.ok()) {
    state.SkipWithError(space.error().message().c_str());
    return;
  }
  size_t fit = 0, runs = 0;
  for (auto _ : state) {
    auto e = EnumerateTune(*space, true);
    if (!e.ok()) {
      state.SkipWithError(e.error().message().c_str());
      return;
    }
    const SweepSpec sweep = EvaluationSweep(*space, *e);
    std::vector<RunRecord> records;
    for (int64_t i = 0; i < SweepSize(sweep); ++i) {
      const SweepRun run = ExpandRun(sweep, i);
      auto s = RunScenario(run.scenario);
      if (!s.ok()) continue;
      RunRecord r;
      r.run_key = run.key;
      r.summary = std::move(*s);
      records.push_back(std::move(r));
    }
    runs = records.size();
    fit = RankTune(*space, *e, records).ranked.size();
  }
  state.counters["simulated"] = static_cast<double>(runs);
  state.counters["fit"] = static_cast<double>(fit);
}
BENCHMARK(BM_TuneDefault16)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace mmtwin

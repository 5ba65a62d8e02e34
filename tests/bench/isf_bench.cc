// SPDX-License-Identifier: Apache-2.0
// ISF over the full InternVL-1.2M trace (1,267,819 samples), 10 iterations, dp 16 (target <= 2 s on one core),
// the three baselines for comparison in the same run, and DynaPipe's micro-batching and WLB-LLM's packing for a
// 4-stage pipeline.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>

#include "core/balance/data_policy.h"
#include "core/trace/generate.h"

namespace mmtwin {
namespace {

struct Data {
  Trace trace;
  ModelSpec model;
  SampleSizes sizes;
};

const Data& Get() {
  static const Data* d = [] {
    auto* x = new Data;
    auto t = GenerateTrace("internvl-1.2m", 1267819, 1);
    auto m = LoadModel("internvl-1.5-6b-20b");
    if (!t || !m) {
      std::cerr << "setup failed: " << (t ? m.error().message() : t.error().message()) << "\n";
      std::exit(1);
    }
    x->trace = std::move(*t);
    x->model = std::move(*m);
    x->sizes = ComputeSizes(x->model, x->trace);
    return x;
  }();
  return *d;
}

void BM_DataPolicy(benchmark::State& state, const char* policy, std::map<std::string, std::string> params) {
  const Data& d = Get();
  DataPolicyContext ctx{&d.trace, &d.model, &d.sizes, 16, 8, 1};
  for (auto _ : state) {
    auto plan = RunDataPolicy(policy, params, ctx);
    if (!plan) state.SkipWithError(plan.error().message().c_str());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["samples"] = static_cast<double>(d.trace.size());
}

BENCHMARK_CAPTURE(BM_DataPolicy, isf_10_iterations, "isf", {{"iterations", "10"}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DataPolicy, random, "random", {})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DataPolicy, length_group, "length-group", {})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DataPolicy, device_group, "device-group", {})->Unit(benchmark::kMillisecond);

// DynaPipe's micro-batching for a 4-stage pipeline with 8 micro-batches per rank: 2,476 iterations of 512 samples,
// each cut into 128 padded micro-batches by the DP and dealt by Karmarkar-Karp.
void BM_Dynapipe(benchmark::State& state) {
  const Data& d = Get();
  DataPolicyContext ctx{&d.trace, &d.model, &d.sizes, 16, 8, 1, /*pp=*/4, /*micro_batches=*/8};
  for (auto _ : state) {
    auto plan = RunDataPolicy("dynapipe", {}, ctx);
    if (!plan) state.SkipWithError(plan.error().message().c_str());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["samples"] = static_cast<double>(d.trace.size());
}
BENCHMARK(BM_Dynapipe)->Unit(benchmark::kMillisecond)->Iterations(1);

// WLB-LLM's packing with outlier delay, the same iterations: 2,476 draws of 512 samples, each packed into 128
// micro-batches least-loaded first (two outlier queues), then dealt by Karmarkar-Karp.
void BM_Wlb(benchmark::State& state) {
  const Data& d = Get();
  DataPolicyContext ctx{&d.trace, &d.model, &d.sizes, 16, 8, 1, /*pp=*/4, /*micro_batches=*/8};
  for (auto _ : state) {
    auto plan = RunDataPolicy("wlb-llm", {}, ctx);
    if (!plan) state.SkipWithError(plan.error().message().c_str());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["samples"] = static_cast<double>(d.trace.size());
}
BENCHMARK(BM_Wlb)->Unit(benchmark::kMillisecond);

void BM_ComputeSizes(benchmark::State& state) {
  const Data& d = Get();
  for (auto _ : state) benchmark::DoNotOptimize(ComputeSizes(d.model, d.trace));
}
BENCHMARK(BM_ComputeSizes)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mmtwin

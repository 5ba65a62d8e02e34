// SPDX-License-Identifier: Apache-2.0
// Speed of the model/cost layer: token counting and workload building over a micro-batch, and pricing every
// layer of a model (what the analytic evaluator does per micro-batch and stage).
#include <benchmark/benchmark.h>

#include "core/cost/cost_model.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

std::vector<Sample> Samples(size_t n) {
  Rng rng(1);
  std::vector<Sample> out(n);
  for (Sample& s : out) {
    s.image_tiles = static_cast<uint32_t>(rng.Below(13));
    s.images = s.image_tiles ? 1 : 0;
    s.text_tokens = static_cast<uint32_t>(20 + rng.Below(2000));
    s.audio_seconds = rng.Below(4) == 0 ? rng.Uniform(1, 60) : 0;
  }
  return out;
}

void BM_ModelWorkloads(benchmark::State& state) {
  const ModelSpec m = *LoadModel("orchmllm-18b");
  const std::vector<Sample> samples = Samples(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ModelWorkloads(m, samples, Packing::kVarlen));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ModelWorkloads)->Arg(64)->Arg(4096);

void BM_CostAllLayers(benchmark::State& state) {
  const ModelSpec m = *LoadModel("internvl-1.5-6b-20b");
  const std::vector<Layer> layers = Layers(m);
  const std::vector<LayerWorkload> w = ModelWorkloads(m, Samples(64));
  const AnalyticCostModel cost(DeviceSpec{"H100", 989e12, 80LL << 30, 3.35e12, 0.5}, {.tp = 4});
  for (auto _ : state) {
    double us = 0;
    for (const Layer& l : layers) us += cost.Cost(m, l, w[l.component]).fwd_time_us;
    benchmark::DoNotOptimize(us);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(layers.size()));
}
BENCHMARK(BM_CostAllLayers);

void BM_LoadModel(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(LoadModel("orchmllm-84b"));
}
BENCHMARK(BM_LoadModel);

}  // namespace
}  // namespace mmtwin

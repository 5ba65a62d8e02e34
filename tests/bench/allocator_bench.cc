// SPDX-License-Identifier: Apache-2.0
// The caching allocator model (core/plan/caching_allocator.h) and the walk's replay through it
// (ReplayActivationExcessBytes, core/plan/memory.h): what device.allocator_model replay costs per replay.
//
// BM_ReplayActivationExcess: one pipeline rank's 1F1B pass order (pp 4, stage 0: 3 warm-up forwards, 16
// micro-batches) over a 24-layer chunk, micro-batch activations spread 1x-4x (a seeded draw), each layer's twelve
// Korthikanti tensors allocated in the forward and freed in the backward: one replay of the walk (about 9,600
// allocations and as many frees), fresh and on an allocator carried from the previous replay.
// BM_AllocateFree: the model's raw event rate on a random stream of sizes (256 B .. 64 MiB, log-uniform) with at
// most 256 blocks live.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/plan/caching_allocator.h"
#include "core/plan/memory.h"

namespace mmtwin {
namespace {

struct ReplayInput {
  std::vector<PipeOp> ops;
  IterationCosts costs;
  Partition partition;
};

ReplayInput OneRank1F1B() {
  ReplayInput in;
  const int m = 16, warmup = 3;
  in.costs.Resize(1, m, 1);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> spread(1.0, 4.0);
  for (int k = 0; k < m; ++k) {
    ChunkCost& c = in.costs.At(0, k, 0);
    c.act_bytes = static_cast<int64_t>(2.5e9 * spread(rng));
    c.backward_transient_bytes = c.act_bytes / 10;
  }
  for (int j = 0; j < warmup; ++j) in.ops.push_back({PassKind::kForward, j, 0});
  for (int j = warmup; j < m; ++j) {
    in.ops.push_back({PassKind::kForward, j, 0});
    in.ops.push_back({PassKind::kBackward, j - warmup, 0});
  }
  for (int j = m - warmup; j < m; ++j) in.ops.push_back({PassKind::kBackward, j, 0});
  in.partition = Partition{{0, 24}};
  return in;
}

void BM_ReplayActivationExcess(benchmark::State& state) {
  const ReplayInput in = OneRank1F1B();
  const bool carried = state.range(0) != 0;
  CachingAllocatorModel allocator;
  int64_t excess = 0;
  for (auto _ : state) {
    excess = carried ? ReplayActivationExcessBytes(in.ops, in.costs, 0, in.partition, {}, &allocator)
                     : ReplayActivationExcessBytes(in.ops, in.costs, 0, in.partition, {});
    benchmark::DoNotOptimize(excess);
  }
  state.counters["excess_MiB"] = static_cast<double>(excess) / (1 << 20);
}
BENCHMARK(BM_ReplayActivationExcess)->Arg(0)->Arg(1)->ArgName("carried")->Unit(benchmark::kMicrosecond);

void BM_AllocateFree(benchmark::State& state) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> log_size(std::log(256.0), std::log(64.0 * (1 << 20)));
  std::vector<int64_t> sizes(1 << 16);
  for (int64_t& s : sizes) s = static_cast<int64_t>(std::exp(log_size(rng)));
  CachingAllocatorModel a;
  std::vector<int64_t> live;
  size_t i = 0;
  for (auto _ : state) {
    if (live.size() < 256 && (live.empty() || (rng() & 1))) {
      live.push_back(a.Allocate(sizes[i++ & (sizes.size() - 1)]));
    } else {
      const size_t k = rng() % live.size();
      benchmark::DoNotOptimize(a.Free(live[k]));
      live[k] = live.back();
      live.pop_back();
    }
  }
  state.counters["reserved_MiB"] = static_cast<double>(a.peak_reserved_bytes()) / (1 << 20);
}
BENCHMARK(BM_AllocateFree);

}  // namespace
}  // namespace mmtwin

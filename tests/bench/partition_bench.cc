// SPDX-License-Identifier: Apache-2.0
// Partition policies on a 125-layer VLM profile with pp = 8 (issue 3 target: BMP with r = 2 <= 2 s, i.e.
// 5^7 = 78,125 candidates scored plus K = 10 evaluator calls). The evaluator is a cheap stand-in (the 1F1B
// closed form (M + pp - 1) x slowest stage + P2P time of the cuts) so the figure measures the search itself;
// with the real analytic evaluator add K + 1 simulated iterations.
//
// Profile: ViT embedding + 44 ViT blocks + projector + LLM embedding + 77 LLM blocks + head = 125 layers,
// InternVL-like shapes (ViT blocks cheaper with wider boundaries, a narrow projector output).
#include <benchmark/benchmark.h>

#include "core/plan/partition.h"
#include "core/plan/recompute.h"

namespace mmtwin {
namespace {

LayerProfile Profile125() {
  LayerProfile p;
  auto add = [&](double fwd, int64_t params, int64_t boundary, int64_t act, int64_t act_rc) {
    p.fwd_us.push_back(fwd);
    p.bwd_us.push_back(2 * fwd);
    p.params.push_back(params);
    p.boundary_bytes.push_back(boundary);
    p.act_bytes.push_back(act);
    p.act_bytes_recompute.push_back(act_rc);
  };
  add(300, 2'000'000, 58'000'000, 20'000'000, 20'000'000);
  for (int i = 0; i < 44; ++i) add(2100, 125'000'000, 58'000'000, 980'000'000, 58'000'000);
  add(400, 140'000'000, 25'000'000, 120'000'000, 60'000'000);
  add(50, 570'000'000, 25'000'000, 32'000, 32'000);
  for (int i = 0; i < 77; ++i) add(4300, 400'000'000, 25'000'000, 420'000'000, 25'000'000);
  add(3000, 570'000'000, 0, 900'000'000, 25'000'000);
  return p;
}

double StandInIterationUs(const LayerProfile& prof, const Partition& p) {
  double slowest = 0, p2p = 0;
  for (int c = 0; c < p.chunks(); ++c) {
    double t = 0;
    for (int l = p.bounds[c]; l < p.bounds[c + 1]; ++l) t += prof.fwd_us[l] + prof.bwd_us[l];
    slowest = std::max(slowest, t);
    if (c + 1 < p.chunks()) p2p += 2.0 * static_cast<double>(prof.boundary_bytes[p.bounds[c + 1] - 1]) / 25e3;
  }
  return (16 + p.chunks() - 1) * slowest + p2p;
}

void BM_Bmp125Pp8(benchmark::State& state) {
  const LayerProfile prof = Profile125();
  PartitionContext ctx;
  ctx.profile = prof;
  ctx.chunks = 8;
  ctx.pp = 8;
  ctx.evaluate = [&](const Partition& p) -> Result<double> { return StandInIterationUs(prof, p); };
  if (state.range(0))
    ctx.fits_with_full_recompute = [&](const Partition& p) {
      for (int c = 0; c < p.chunks(); ++c)
        if (p.LayersIn(c) > 24) return false;  // rejects some candidates near the anchor
      return true;
    };
  PartitionReport rep;
  for (auto _ : state) {
    Result<Partition> r = RunPartitionPolicy("bmp", {{"radius", "2"}, {"top_k", "10"}}, ctx, &rep);
    benchmark::DoNotOptimize(r);
  }
  state.counters["candidates"] = static_cast<double>(rep.candidates);
  state.counters["evaluated"] = static_cast<double>(rep.evaluated.size());
  state.counters["memory_checks"] = static_cast<double>(rep.memory_checks);
  state.counters["anchor_fits"] = rep.anchor_time_us >= 0;
  if (rep.anchor_time_us >= 0) state.counters["speedup_vs_anchor"] = rep.anchor_time_us / rep.chosen_time_us;
}
BENCHMARK(BM_Bmp125Pp8)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_Policy125Pp8(benchmark::State& state, const char* policy) {
  PartitionContext ctx;
  ctx.profile = Profile125();
  ctx.chunks = 8;
  ctx.pp = 8;
  for (auto _ : state) {
    Result<Partition> r = RunPartitionPolicy(policy, {}, ctx);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK_CAPTURE(BM_Policy125Pp8, uniform, "uniform")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Policy125Pp8, params, "params")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Policy125Pp8, profile, "profile")->Unit(benchmark::kMicrosecond);

void BM_Adaptive125Pp8(benchmark::State& state) {
  RecomputeContext ctx;
  ctx.profile = Profile125();
  ctx.partition = MinMaxPartition(ctx.profile.fwd_us, 8);
  ctx.parallel.pp = 8;
  for (int r = 0; r < 8; ++r) ctx.in_flight.push_back(8 - r), ctx.model_state_bytes.push_back(20ll << 30);
  ctx.capacity_bytes = 80ll << 30;
  RecomputeReport rep;
  for (auto _ : state) {
    Result<RecomputePlan> r = RunRecomputePolicy("adaptive", {}, ctx, &rep);
    benchmark::DoNotOptimize(r);
  }
  int n = 0;
  for (int x : rep.recomputed_layers) n += x;
  state.counters["recomputed_layers"] = n;
}
BENCHMARK(BM_Adaptive125Pp8)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mmtwin

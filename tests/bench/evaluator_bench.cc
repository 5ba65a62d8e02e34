// SPDX-License-Identifier: Apache-2.0
// Speed of the op graph and the analytic evaluator on a realistic iteration: dp 64, pp 8, M 32 (1F1B, and
// interleaved with vpp 2), TP collectives, recompute on half the chunks, P2P sends, ZeRO-1 gradient buckets
// of 40 MiB over 2.5 GB per chunk. items/s = ops/s (target: >= 5 M ops/s for the evaluator on one core).
#include <benchmark/benchmark.h>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/schedule.h"
#include "core/records/perfetto.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

struct Setup {
  ParallelConfig pc;
  Schedule schedule;
  IterationCosts costs;
  std::vector<ChunkStatic> statics;
  CommSpec comm;
};

IterationCosts Costs(const ParallelConfig& pc, uint64_t seed) {
  Rng rng(seed);
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (int d = 0; d < pc.dp; ++d)
    for (int m = 0; m < pc.micro_batches; ++m)
      for (int ch = 0; ch < pc.chunks(); ++ch) {
        ChunkCost& k = c.At(d, m, ch);
        k.fwd_us = rng.Uniform(5000, 20000);
        k.bwd_us = 2 * k.fwd_us;
        k.recompute_us = ch % 2 ? k.fwd_us : 0;
        k.tp_fwd_us = 0.1 * k.fwd_us;
        k.tp_bwd_us = 0.1 * k.bwd_us;
        k.act_bytes = 1 << 30;
        k.send_bytes = ch + 1 < pc.chunks() ? 32 << 20 : 0;
      }
  return c;
}

Setup Make(int dp, int pp, int vpp, int m) {
  Setup s;
  s.pc.dp = dp;
  s.pc.tp = 2;
  s.pc.pp = pp;
  s.pc.vpp = vpp;
  s.pc.micro_batches = m;
  s.pc.zero_stage = 1;
  s.schedule = *BuildSchedule(vpp > 1 ? "interleaved-1f1b" : "1f1b", pp, vpp, m);
  s.costs = Costs(s.pc, 1);
  s.statics.assign(s.pc.chunks(), ChunkStatic{});
  for (auto& st : s.statics) st.grad_bytes_per_gpu = 2500ll << 20;
  s.comm.p2p_bytes_per_s = 25e9;
  s.comm.p2p_latency_us = 10;
  s.comm.dp_bytes_per_s = 25e9;
  s.comm.dp_latency_us = 30;
  return s;
}

void BM_EvaluateAnalytic(benchmark::State& state) {
  const Setup s = Make(64, 8, static_cast<int>(state.range(0)), 32);
  const OpGraph g = *BuildIterationGraph(s.pc, s.schedule, s.costs, s.statics, s.comm);
  IterationTiming t;
  EvaluateAnalytic(g, &t);
  for (auto _ : state) {
    EvaluateAnalytic(g, &t);
    benchmark::DoNotOptimize(t.finish_us.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * g.num_ops());
  state.counters["ops"] = g.num_ops();
  state.counters["bubble_pct"] = 100 * Totals(t).bubble_ratio;
}
BENCHMARK(BM_EvaluateAnalytic)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_BuildIterationGraph(benchmark::State& state) {
  const Setup s = Make(64, 8, static_cast<int>(state.range(0)), 32);
  int64_t ops = 0;
  for (auto _ : state) {
    OpGraph g = *BuildIterationGraph(s.pc, s.schedule, s.costs, s.statics, s.comm);
    ops = g.num_ops();
    benchmark::DoNotOptimize(g.ops.data());
  }
  state.SetItemsProcessed(state.iterations() * ops);
}
BENCHMARK(BM_BuildIterationGraph)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// Re-pricing the same graph for another iteration's costs (what an epoch replay does per iteration).
void BM_RepriceAndEvaluate(benchmark::State& state) {
  const Setup s = Make(64, 8, 1, 32);
  OpGraph g = *BuildIterationGraph(s.pc, s.schedule, s.costs, s.statics, s.comm);
  const IterationCosts other[2] = {Costs(s.pc, 2), Costs(s.pc, 3)};
  IterationTiming t;
  int i = 0;
  for (auto _ : state) {
    (void)RepriceIterationGraph(&g, s.schedule, other[i++ & 1]);
    EvaluateAnalytic(g, &t);
    benchmark::DoNotOptimize(t.finish_us.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * g.num_ops());
}
BENCHMARK(BM_RepriceAndEvaluate)->Unit(benchmark::kMillisecond);

void BM_PerfettoTrace(benchmark::State& state) {
  const Setup s = Make(8, 8, 1, 32);
  const OpGraph g = *BuildIterationGraph(s.pc, s.schedule, s.costs, s.statics, s.comm);
  const IterationTiming t = EvaluateAnalytic(g);
  for (auto _ : state) benchmark::DoNotOptimize(PerfettoTrace(OpRecordsOf(g, t, s.costs, 0), s.pc).size());
  state.SetItemsProcessed(state.iterations() * g.num_ops());
}
BENCHMARK(BM_PerfettoTrace)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mmtwin

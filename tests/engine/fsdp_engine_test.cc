// SPDX-License-Identifier: Apache-2.0
// FSDP per-unit all-gathers and reduce-scatters (parallel.zero3_impl fsdp, op_graph.h) in the SimGrid engine:
// without contention it replays every unit's ring and agrees with the analytic evaluator (pipelines,
// recompute, a split backward, DP rings across nodes, bucket merging); with shared links it is never faster.
#include "engine/simgrid_engine.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/pricing.h"
#include "core/util/rng.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

using fixtures::Cluster;
using fixtures::MustBuild;
using fixtures::Pc;

IterationCosts Random(const ParallelConfig& pc, uint64_t seed, bool recompute) {
  Rng rng(seed);
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (auto& k : c.costs) {
    k.fwd_us = rng.Uniform(500, 1500);
    k.bwd_us = k.fwd_us * rng.Uniform(1.5, 2.5);
    k.bwd_weight_us = k.bwd_us * rng.Uniform(0.2, 0.5);
    k.recompute_us = recompute ? k.fwd_us : 0;
    k.send_bytes = static_cast<int64_t>(rng.Below(4 << 20));
  }
  return c;
}

// Chunks of `layers` layers of unequal sizes (an embedding-sized first layer), `bytes` of weights per GPU.
std::vector<ChunkStatic> Chunks(int chunks, int layers, int64_t bytes) {
  std::vector<ChunkStatic> v(chunks);
  for (ChunkStatic& s : v) {
    s.layer_params.assign(layers, 100);
    s.layer_params[0] = 400;
    s.params = 100 * (layers - 1) + 400;
    s.grad_bytes_per_gpu = bytes;
  }
  return v;
}

struct Case {
  const char* schedule;
  int dp, pp, m, gpn, layers;  // vpp 2 for interleaved-1f1b, else 1
  int64_t bytes;
  bool recompute;
};

TEST(FsdpEngineTest, AgreesWithAnalyticWithoutContention) {
  const Case cases[] = {
      {"1f1b", 4, 1, 1, 2, 6, 64 << 20, false},  // DP ring across nodes, gathers longer than some units
      {"1f1b", 2, 2, 4, 8, 4, 16 << 20, true},   // pipeline inside a node, recompute per unit
      {"gpipe", 3, 2, 3, 1, 5, 24 << 20, false},
      {"zb-h1", 2, 2, 4, 2, 3, 8 << 20, false},  // split backward: the last W releases the reduce-scatters
      {"interleaved-1f1b", 2, 2, 4, 4, 3, 12 << 20, true},  // two chunks per rank (vpp 2)
  };
  for (const Case& c : cases) {
    const int vpp = std::string(c.schedule) == "interleaved-1f1b" ? 2 : 1;
    ParallelConfig pc = Pc(c.dp, c.pp, vpp, c.m, /*zero=*/3);
    pc.zero3_impl = "fsdp";
    const ClusterSpec cluster = Cluster((pc.world_size() + c.gpn - 1) / c.gpn, c.gpn);
    CommSpec comm = PlatformComm(cluster, pc);
    comm.dp_bucket_bytes = 4 << 20;  // FSDP units ignore it (one collective per unit)
    const OpGraph g = MustBuild(pc, c.schedule, Random(pc, c.dp * 7 + c.pp, c.recompute),
                                Chunks(pc.chunks(), c.layers, c.bytes), comm);
    int gathers = 0;
    for (const Op& op : g.ops) gathers += op.kind == OpKind::kDpAllGather;
    EXPECT_EQ(gathers, c.dp * c.m * 2 * pc.chunks() * c.layers);
    const std::string what =
        std::string(c.schedule) + " dp " + std::to_string(c.dp) + " pp " + std::to_string(c.pp);
    const IterationTiming a = EvaluateAnalytic(g);
    for (const int max_transfers : {0, 1}) {  // 1: merge buckets (gradient rings; unit gathers stay whole)
      SimGridOptions o;
      o.contention = false;
      o.max_ring_transfers = max_transfers;
      IterationTiming s;
      const Status st = EvaluateWithSimGrid(cluster, o, g, &s);
      ASSERT_TRUE(st.ok()) << st.error().message();
      EXPECT_NEAR(s.iteration_time_us, a.iteration_time_us, 1e-6 * a.iteration_time_us) << what;
    }
    SimGridOptions shared;
    shared.contention = true;
    IterationTiming s;
    ASSERT_TRUE(EvaluateWithSimGrid(cluster, shared, g, &s).ok());
    EXPECT_GE(s.iteration_time_us, a.iteration_time_us - 1e-3) << what;  // SimGrid's precision: 1e-9 s
  }
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/eval/analytic.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "core/graph/op_graph.h"
#include "core/plan/schedule.h"
#include "core/util/rng.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

using fixtures::MustBuild;
using fixtures::Pc;
using fixtures::Statics;

// Every ChunkCost: fwd, bwd; replica `slow` scaled by `factor`.
IterationCosts Uniform(const ParallelConfig& pc, double fwd, double bwd, int slow = -1, double factor = 1) {
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (int d = 0; d < pc.dp; ++d)
    for (int m = 0; m < pc.micro_batches; ++m)
      for (int ch = 0; ch < pc.chunks(); ++ch) {
        ChunkCost& k = c.At(d, m, ch);
        const double f = d == slow ? factor : 1.0;
        k.fwd_us = fwd * f;
        k.bwd_us = bwd * f;
      }
  return c;
}

IterationCosts Random(const ParallelConfig& pc, uint64_t seed) {
  Rng rng(seed);
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (auto& k : c.costs) {
    k.fwd_us = rng.Uniform(1, 10);
    k.bwd_us = k.fwd_us * rng.Uniform(1.5, 2.5);
    k.bwd_weight_us = k.bwd_us * rng.Uniform(0.2, 0.5);  // W of zero-bubble schedules (others ignore it)
    k.recompute_us = rng.Uniform() < 0.5 ? k.fwd_us : 0;
    k.tp_fwd_us = rng.Uniform(0, 0.5);
    k.tp_bwd_us = rng.Uniform(0, 0.5);
    k.send_bytes = static_cast<int64_t>(rng.Below(1 << 20));
  }
  return c;
}

CommSpec Comm(double dp_bytes_per_s = 1e9) {
  CommSpec s;
  s.p2p_bytes_per_s = 1e11;
  s.p2p_latency_us = 1;
  s.dp_bytes_per_s = dp_bytes_per_s;
  s.dp_latency_us = 2;
  s.dp_bucket_bytes = 1 << 20;
  return s;
}

void ExpectPartition(const IterationTiming& t) {
  for (size_t d = 0; d < t.devices.size(); ++d) {
    const DeviceTiming& x = t.devices[d];
    EXPECT_NEAR(x.busy_us + x.bubble_us + x.exposed_comm_us + x.idle_us, t.iteration_time_us,
                1e-9 * t.iteration_time_us)
        << "device " << d;
    EXPECT_GE(x.bubble_us, -1e-9 * t.iteration_time_us) << d;
    EXPECT_GE(x.exposed_comm_us, 0) << d;
    EXPECT_GE(x.idle_us, 0) << d;
    EXPECT_LE(x.recompute_us + x.tp_us, x.busy_us + 1e-9) << d;
  }
}

// Oracle: uniform costs, no communication, dp 1: bubble fraction (P-1)/(M+P-1) exactly on every device.
TEST(AnalyticTest, UniformBubbleGpipeAnd1f1b) {
  for (const char* name : {"gpipe", "1f1b"})
    for (int P : {1, 2, 3, 4, 8})
      for (int M : {1, 2, 3, 4, 7, 8, 16, 32}) {
        const ParallelConfig pc = Pc(1, P, 1, M);
        const OpGraph g = MustBuild(pc, name, Uniform(pc, 1, 2), {}, CommSpec{});
        const IterationTiming t = EvaluateAnalytic(g);
        const double expect = static_cast<double>(P - 1) / (M + P - 1);
        EXPECT_DOUBLE_EQ(t.iteration_time_us, 3.0 * (M + P - 1)) << name << " P " << P << " M " << M;
        for (const DeviceTiming& d : t.devices) {
          EXPECT_EQ(d.busy_us, 3.0 * M);
          EXPECT_NEAR((t.iteration_time_us - d.busy_us) / t.iteration_time_us, expect, 1e-9);
          EXPECT_NEAR(d.bubble_us / t.iteration_time_us, expect, 1e-9);
          EXPECT_EQ(d.idle_us, 0);
          EXPECT_EQ(d.exposed_comm_us, 0);
        }
        EXPECT_NEAR(Totals(t).bubble_ratio, expect, 1e-9);
        ExpectPartition(t);
      }
}

// Interleaved: "about" (P-1)/(v*M+P-1) in general; with every chunk costing fwd = 1, bwd = 2 (a chunk is 1/v
// of a stage) and M a multiple of P, Megatron's order meets the formula exactly (tolerance 1e-9), below
// 1F1B's.
TEST(AnalyticTest, UniformBubbleInterleaved) {
  for (int P : {2, 4, 8})
    for (int v : {2, 3, 4})
      for (int M : {P, 2 * P, 4 * P}) {
        const ParallelConfig pc = Pc(1, P, v, M);
        const OpGraph g = MustBuild(pc, "interleaved-1f1b", Uniform(pc, 1, 2), {}, CommSpec{});
        const IterationTiming t = EvaluateAnalytic(g);
        const double expect = static_cast<double>(P - 1) / (v * M + P - 1);
        const double one_f_one_b = static_cast<double>(P - 1) / (M + P - 1);
        for (const DeviceTiming& d : t.devices) {
          EXPECT_EQ(d.busy_us, 3.0 * M * v);
          const double bubble = (t.iteration_time_us - d.busy_us) / t.iteration_time_us;
          EXPECT_NEAR(bubble, expect, 1e-9) << "P " << P << " v " << v << " M " << M;
          EXPECT_LT(bubble, one_f_one_b);
        }
        ExpectPartition(t);
      }
}

// dp > 1 with one slow replica: the fast replicas wait (idle), their bubble is what they would have alone.
TEST(AnalyticTest, SlowReplicaMakesOthersIdleNotBubbly) {
  const int P = 4, M = 8;
  const ParallelConfig pc = Pc(3, P, 1, M);
  const IterationCosts costs = Uniform(pc, 1, 2, /*slow=*/1, /*factor=*/1.5);
  const OpGraph g = MustBuild(pc, "1f1b", costs, Statics(P, 1 << 20), Comm());
  const IterationTiming t = EvaluateAnalytic(g);
  ExpectPartition(t);
  // Reference: replica 0 alone (dp 1, same costs, no DP comm) has the textbook bubble.
  const OpGraph alone = MustBuild(Pc(1, P, 1, M), "1f1b", Uniform(Pc(1, P, 1, M), 1, 2), {}, Comm());
  const IterationTiming ta = EvaluateAnalytic(alone);
  for (int d : {0, 2})
    for (int r = 0; r < P; ++r) {
      const DeviceTiming& x = t.devices[d * P + r];
      EXPECT_GT(x.idle_us, 0.3 * ta.iteration_time_us) << "replica " << d << " stage " << r;
      EXPECT_DOUBLE_EQ(x.bubble_us, ta.devices[r].bubble_us) << "replica " << d << " stage " << r;
      EXPECT_EQ(x.busy_us, ta.devices[r].busy_us);
    }
  for (int r = 0; r < P; ++r) EXPECT_EQ(t.devices[1 * P + r].idle_us, 0) << r;
  EXPECT_DOUBLE_EQ(t.replica_time_us[0], t.replica_time_us[2]);
  EXPECT_GT(t.replica_time_us[1], t.replica_time_us[0]);
}

// ZeRO-3 with a slow replica: the fast replica's compute is delayed behind barrier-bound collectives on its
// DP lane; all of that is idle, and its bubble and exposed communication equal those of a run where every
// replica is as fast as it is.
TEST(AnalyticTest, BarrierDelaysAreIdle) {
  // One pipeline rank, two chunks, one micro-batch: chunk 1's reduce-scatter (after the barrier) sits on the
  // DP lane before chunk 0's backward all-gather, which chunk 0's backward needs.
  const int P = 1, M = 1;
  const ParallelConfig pc = Pc(2, P, 2, M, 3);
  CommSpec comm = Comm(1e6);
  comm.dp_bucket_bytes = 1 << 30;
  const auto statics = Statics(2, 4);
  const OpGraph mixed =
      MustBuild(pc, "interleaved-1f1b", Uniform(pc, 1, 2, /*slow=*/1, /*factor=*/3), statics, comm);
  const OpGraph fast = MustBuild(pc, "interleaved-1f1b", Uniform(pc, 1, 2), statics, comm);
  const IterationTiming tm = EvaluateAnalytic(mixed), tf = EvaluateAnalytic(fast);
  ExpectPartition(tm);
  ExpectPartition(tf);
  for (int r = 0; r < P; ++r) {
    EXPECT_GT(tm.devices[r].idle_us, 0);
    EXPECT_DOUBLE_EQ(tm.devices[r].bubble_us, tf.devices[r].bubble_us) << r;
    EXPECT_DOUBLE_EQ(tm.devices[r].exposed_comm_us, tf.devices[r].exposed_comm_us) << r;
    EXPECT_DOUBLE_EQ(tm.devices[r].local_time_us, tf.iteration_time_us) << r;
    EXPECT_EQ(tm.devices[P + r].idle_us, 0) << r;
  }
  // Some compute op of the fast replica starts later than when it is alone (delayed behind a barrier).
  bool delayed = false;
  for (int i = 0; i < mixed.num_ops(); ++i)
    if (mixed.ops[i].device >= 0 && mixed.ops[i].device < P && mixed.ops[i].lane == Lane::kCompute)
      delayed = delayed || tm.finish_us[i] > tm.local_finish_us[i];
  EXPECT_TRUE(delayed);
}

// The DP gradient collective of the last stage overlaps the first stage's remaining backwards.
TEST(AnalyticTest, DpCollectiveOverlapsBackward) {
  for (const char* name : {"gpipe", "1f1b"}) {
    const int P = 2, M = 4;
    const ParallelConfig pc = Pc(2, P, 1, M);
    CommSpec comm;
    comm.dp_bytes_per_s = 1e6;  // 1 byte/us; ring all-reduce over 2 replicas: 2 * 1/2 * bytes + 2 latencies
    comm.dp_latency_us = 0.5;
    comm.dp_bucket_bytes = 1 << 30;
    const OpGraph g = MustBuild(pc, name, Uniform(pc, 1, 2), Statics(P, 1), comm);  // 2 us per chunk
    const IterationTiming t = EvaluateAnalytic(g);
    const double compute = 3.0 * (M + P - 1), ar = 2.0;
    double sum_dp = 0;
    for (int i = 0; i < g.num_ops(); ++i)
      if (g.ops[i].kind == OpKind::kDpCollective && g.ops[i].device / P == 0) sum_dp += g.duration_us[i];
    EXPECT_DOUBLE_EQ(sum_dp, 2 * ar);
    EXPECT_DOUBLE_EQ(t.iteration_time_us, compute + ar) << name;  // stage 1's all-reduce is hidden
    EXPECT_LT(t.iteration_time_us, compute + sum_dp);
    ExpectPartition(t);
    // Stage 0 exposes its own all-reduce; equal replicas -> no idle.
    EXPECT_DOUBLE_EQ(t.devices[0].exposed_comm_us, ar);
    EXPECT_EQ(t.devices[0].idle_us, 0);
  }
  // Interleaved on one pipeline rank: chunk 1's all-reduce overlaps chunk 0's backwards.
  const ParallelConfig pc = Pc(2, 1, 2, 4);
  CommSpec comm;
  comm.dp_bytes_per_s = 1e6;
  comm.dp_latency_us = 0.5;
  const OpGraph g = MustBuild(pc, "interleaved-1f1b", Uniform(pc, 1, 2), Statics(2, 1), comm);
  const IterationTiming t = EvaluateAnalytic(g);
  EXPECT_DOUBLE_EQ(t.iteration_time_us, 3.0 * 4 * 2 + 2.0);
}

// ZeRO-3: the first weight all-gather delays the first forward: exposed communication, not bubble.
TEST(AnalyticTest, Zero3AllGatherIsExposedComm) {
  const ParallelConfig pc = Pc(2, 1, 1, 2, 3);
  CommSpec comm;
  comm.dp_bytes_per_s = 1e6;
  comm.dp_latency_us = 1;
  comm.dp_bucket_bytes = 1 << 30;
  const OpGraph g = MustBuild(pc, "1f1b", Uniform(pc, 1, 2), Statics(1, 4), comm);
  const IterationTiming t = EvaluateAnalytic(g);
  // all-gather fwd [0,3] (1 + 4/2), F0 [3,4], all-gather bwd [3,6], B0 needs it: [6,8], F1 [8,9], B1 [9,11],
  // reduce-scatter [11,14].
  EXPECT_DOUBLE_EQ(t.iteration_time_us, 14);
  for (const DeviceTiming& d : t.devices) {
    EXPECT_DOUBLE_EQ(d.busy_us, 6);
    EXPECT_DOUBLE_EQ(d.exposed_comm_us, 3 + 2 + 3);
    EXPECT_DOUBLE_EQ(d.bubble_us, 0);
    EXPECT_DOUBLE_EQ(d.idle_us, 0);
  }
}

// Longest path equals a brute-force fixed point (relax every op until nothing changes), on random graphs.
TEST(AnalyticTest, MatchesFixedPointRelaxation) {
  Rng rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const int pp = 1 + static_cast<int>(rng.Below(4));
    const int dp = 1 + static_cast<int>(rng.Below(3));
    const char* names[] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2"};
    const char* name = names[rng.Below(5)];
    const int vpp = std::string(name) == "interleaved-1f1b" ? 2 + static_cast<int>(rng.Below(2)) : 1;
    const int m = pp * (1 + static_cast<int>(rng.Below(3)));
    const ParallelConfig pc = Pc(dp, pp, vpp, m, static_cast<int>(rng.Below(4)));
    const OpGraph g = MustBuild(pc, name, Random(pc, trial), Statics(pc.chunks(), 3 << 20), Comm());
    const IterationTiming t = EvaluateAnalytic(g);
    ExpectPartition(t);
    const int n = g.num_ops();
    std::vector<double> fin(n, 0.0);
    for (bool changed = true; changed;) {
      changed = false;
      for (int i = n - 1; i >= 0; --i) {
        double s = g.lane_prev[i] >= 0 ? fin[g.lane_prev[i]] : 0.0;
        for (int32_t d : g.Deps(i)) s = std::max(s, fin[d]);
        if (s + g.duration_us[i] != fin[i]) {
          fin[i] = s + g.duration_us[i];
          changed = true;
        }
      }
    }
    ASSERT_EQ(fin, t.finish_us) << "trial " << trial;
    for (int i = 0; i < n; ++i)
      EXPECT_NEAR(t.finish_us[i] - t.start_us[i], g.duration_us[i], 1e-12 * t.iteration_time_us);
    if (dp > 1) {
      for (int i = 0; i < n; ++i) EXPECT_LE(t.local_finish_us[i], t.finish_us[i] + 1e-9);
    }
  }
}

// Oracle: the T-only evaluation (what bmp's candidates use) equals EvaluateAnalytic's T bit for bit, on random
// graphs of every schedule, DP and ZeRO stage, with its scratch reused across graphs of different sizes.
TEST(AnalyticTest, IterationTimeAloneMatchesFullEvaluation) {
  Rng rng(29);
  std::vector<double> scratch;
  for (int trial = 0; trial < 60; ++trial) {
    const int pp = 1 + static_cast<int>(rng.Below(4));
    const int dp = 1 + static_cast<int>(rng.Below(4));
    const char* names[] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2"};
    const char* name = names[rng.Below(5)];
    const int vpp = std::string(name) == "interleaved-1f1b" ? 2 + static_cast<int>(rng.Below(2)) : 1;
    const int m = pp * (1 + static_cast<int>(rng.Below(3)));
    const ParallelConfig pc = Pc(dp, pp, vpp, m, static_cast<int>(rng.Below(4)));
    const OpGraph g = MustBuild(pc, name, Random(pc, 100 + trial), Statics(pc.chunks(), 3 << 20),
                                Comm(rng.Uniform(1e8, 1e10)));
    EXPECT_EQ(AnalyticIterationTimeUs(g, &scratch), EvaluateAnalytic(g).iteration_time_us)
        << "trial " << trial;
  }
}

TEST(AnalyticTest, DeterministicAndReusable) {
  const ParallelConfig pc = Pc(3, 4, 1, 8, 1);
  const OpGraph g = MustBuild(pc, "1f1b", Random(pc, 3), Statics(4, 5 << 20), Comm());
  const IterationTiming a = EvaluateAnalytic(g);
  IterationTiming b;
  EvaluateAnalytic(g, &b);
  EvaluateAnalytic(g, &b);  // reuse
  EXPECT_EQ(a.finish_us, b.finish_us);
  EXPECT_EQ(a.start_us, b.start_us);
  EXPECT_EQ(a.iteration_time_us, b.iteration_time_us);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t d = 0; d < a.devices.size(); ++d) {
    EXPECT_EQ(a.devices[d].bubble_us, b.devices[d].bubble_us);
    EXPECT_EQ(a.devices[d].idle_us, b.devices[d].idle_us);
  }
  const TimingTotals tt = Totals(a);
  EXPECT_NEAR(tt.busy_ratio + tt.bubble_ratio + tt.idle_ratio + tt.exposed_comm_ratio, 1.0, 1e-9);
  EXPECT_GT(tt.recompute_ratio, 0);
}

// A dispatch all-to-all before micro-batch 0 delays the first forward, and so the whole iteration, by exactly
// its duration; the stage-0 devices count the wait as exposed communication. Later micro-batches' dispatch
// hides behind compute (prefetch).
TEST(AnalyticTest, DispatchDelaysTheFirstForwardByItsDuration) {
  const ParallelConfig pc = Pc(2, 2, 1, 4);
  CommSpec comm = Comm();
  comm.gpus_per_node = 1;  // every replica on its own node
  comm.nic_bytes_per_s = 1e9;
  comm.nic_latency_us = 3;
  IterationCosts costs = Uniform(pc, 10, 20);
  const OpGraph base = MustBuild(pc, "1f1b", costs, Statics(2, 1 << 20), comm);
  costs.dispatch = {{{0, 1, 500000}, {1, 0, 200000}}, {{1, 0, 1000}}};
  const OpGraph g = MustBuild(pc, "1f1b", costs, Statics(2, 1 << 20), comm);
  const double dispatch_us = 3 + 500000 / 1e9 * 1e6;  // 503 us, far above the compute
  const IterationTiming a = EvaluateAnalytic(base), t = EvaluateAnalytic(g);
  EXPECT_NEAR(t.iteration_time_us, a.iteration_time_us + dispatch_us, 1e-9 * t.iteration_time_us);
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.ops[i].kind == OpKind::kForward && g.ops[i].micro_batch == 0 && g.ops[i].chunk == 0) {
      EXPECT_DOUBLE_EQ(t.start_us[i], dispatch_us);
    }
  for (int dev = 0; dev < g.num_devices; ++dev) {
    const DeviceTiming& d = t.devices[dev];
    EXPECT_NEAR(d.busy_us + d.bubble_us + d.exposed_comm_us + d.idle_us, t.iteration_time_us, 1e-6);
    if (dev % 2 == 0) {
      EXPECT_GE(d.exposed_comm_us, dispatch_us - 1e-9);
    }
  }
}

}  // namespace
}  // namespace mmtwin

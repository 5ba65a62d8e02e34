// SPDX-License-Identifier: Apache-2.0
#include "core/graph/op_graph.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "core/eval/analytic.h"
#include "core/plan/mesh.h"
#include "core/plan/schedule.h"
#include "core/util/rng.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

using fixtures::Pc;
using fixtures::Statics;

IterationCosts Uniform(const ParallelConfig& pc, double fwd, double bwd) {
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (auto& k : c.costs) {
    k.fwd_us = fwd;
    k.bwd_us = bwd;
  }
  return c;
}

IterationCosts Random(const ParallelConfig& pc, uint64_t seed, bool tp, bool recompute, bool send) {
  Rng rng(seed);
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (int d = 0; d < pc.dp; ++d)
    for (int m = 0; m < pc.micro_batches; ++m)
      for (int ch = 0; ch < pc.chunks(); ++ch) {
        ChunkCost& k = c.At(d, m, ch);
        k.fwd_us = rng.Uniform(1, 10);
        k.bwd_us = 2 * k.fwd_us;
        if (recompute) k.recompute_us = k.fwd_us * 0.5;
        if (tp) {
          k.tp_fwd_us = rng.Uniform(0, 1);
          k.tp_bwd_us = rng.Uniform(0, 1);
        }
        k.act_bytes = 1000 + static_cast<int64_t>(rng.Below(1000));
        if (send && ch + 1 < pc.chunks()) k.send_bytes = 1 << 20;
      }
  return c;
}

CommSpec Comm() {
  CommSpec s;
  s.p2p_bytes_per_s = 1e11;
  s.p2p_latency_us = 2;
  s.dp_bytes_per_s = 1e11;
  s.dp_latency_us = 5;
  s.dp_bucket_bytes = 40;
  return s;
}

Result<OpGraph> Build(const ParallelConfig& pc, const std::string& sched, const IterationCosts& costs,
                      const std::vector<ChunkStatic>& statics, const CommSpec& comm) {
  MMTWIN_ASSIGN_OR_RETURN(Schedule s, BuildSchedule(sched, pc.pp, pc.vpp, pc.micro_batches));
  return BuildIterationGraph(pc, s, costs, statics, comm);
}

std::map<OpKind, int> CountKinds(const OpGraph& g) {
  std::map<OpKind, int> n;
  for (const Op& op : g.ops) ++n[op.kind];
  return n;
}

TEST(OpGraphTest, OpCountsAndTopologicalOrder) {
  const ParallelConfig pc = Pc(2, 3, 1, 4);
  auto g = Build(pc, "1f1b", Random(pc, 1, true, true, true), Statics(3, 100), Comm());
  ASSERT_TRUE(g.ok()) << g.error().message();
  const int per = pc.dp * pc.micro_batches * pc.chunks();  // 24
  auto n = CountKinds(*g);
  EXPECT_EQ(n[OpKind::kForward], per);
  // Each chunk's last backward on each replica is split into 3 pieces (3 buckets) so buckets become ready as it
  // runs: 2 extra backward ops per (replica, chunk).
  EXPECT_EQ(n[OpKind::kBackward], per + pc.dp * pc.chunks() * 2);
  EXPECT_EQ(n[OpKind::kRecompute], per);
  EXPECT_EQ(n[OpKind::kTpCollective], 2 * per);
  EXPECT_EQ(n[OpKind::kP2pSendActivation], pc.dp * pc.micro_batches * (pc.chunks() - 1));
  EXPECT_EQ(n[OpKind::kP2pSendGradient], pc.dp * pc.micro_batches * (pc.chunks() - 1));
  // 100 bytes in buckets of 40: 40, 40, 20 bytes from the chunk's end complete at 0.4, 0.8 and 1.0 of its last
  // backward: after pieces 1, 2 and 2 of 3. One barrier and one op per device per piece: piece 0's op is empty,
  // piece 1's holds bucket 0, piece 2's buckets 1 and 2.
  EXPECT_EQ(n[OpKind::kDpCollective], pc.dp * pc.chunks() * 3);
  EXPECT_EQ(n[OpKind::kBarrier], 3 * pc.chunks());
  EXPECT_EQ(n[OpKind::kDpAllGather], 0);
  for (int i = 0; i < g->num_ops(); ++i) {
    for (int32_t d : g->Deps(i)) EXPECT_LT(d, i);
    EXPECT_LT(g->lane_prev[i], i);
    if (g->lane_prev[i] >= 0) {
      EXPECT_EQ(g->ops[g->lane_prev[i]].device, g->ops[i].device);
      EXPECT_EQ(g->ops[g->lane_prev[i]].lane, g->ops[i].lane);
    }
    EXPECT_EQ(g->duration_us[i], g->ops[i].duration_us);
    const Op& op = g->ops[i];
    if (op.kind == OpKind::kBarrier) {
      EXPECT_EQ(op.device, -1);
      EXPECT_EQ(static_cast<int>(g->Deps(i).size()), pc.dp);
    }
    if (op.kind == OpKind::kDpCollective) {
      const int piece = g->ops[g->Deps(i)[0]].bucket;
      EXPECT_EQ(op.bytes, piece == 0 ? 0 : piece == 1 ? 40 : 60);
      EXPECT_EQ(op.buckets, piece == 0 ? 0 : piece == 1 ? 1 : 2);
      EXPECT_EQ(op.bucket, piece == 0 ? 0 : piece == 1 ? 0 : 1);
      if (op.buckets == 0) {
        EXPECT_EQ(op.duration_us, 0);
      }
      ASSERT_EQ(g->Deps(i).size(), 1u);
      EXPECT_EQ(g->ops[g->Deps(i)[0]].kind, OpKind::kBarrier);
      // The replica-alone dependency is this replica's last backward group of the chunk.
      const Op& local = g->ops[g->local_deps[g->dep_begin[i]]];
      EXPECT_EQ(local.device, op.device);
      EXPECT_EQ(local.chunk, op.chunk);
    }
  }
}

// The compute lane of every device runs the schedule's passes in order.
TEST(OpGraphTest, ComputeLaneFollowsSchedule) {
  for (const char* name : {"gpipe", "1f1b", "interleaved-1f1b"}) {
    const ParallelConfig pc = Pc(2, 2, std::string(name) == "interleaved-1f1b" ? 2 : 1, 4);
    auto s = BuildSchedule(name, pc.pp, pc.vpp, pc.micro_batches);
    ASSERT_TRUE(s.ok());
    auto g = BuildIterationGraph(pc, *s, Random(pc, 2, true, true, true), Statics(pc.chunks(), 100), Comm());
    ASSERT_TRUE(g.ok()) << g.error().message();
    std::vector<std::vector<PipeOp>> seen(g->num_devices);
    for (int i = 0; i < g->num_ops(); ++i) {
      const Op& op = g->ops[i];
      if (op.kind == OpKind::kForward)
        seen[op.device].push_back({PassKind::kForward, op.micro_batch, op.chunk});
      if (op.kind == OpKind::kBackward && op.bucket == op.pieces - 1)  // a split backward's last piece
        seen[op.device].push_back({PassKind::kBackward, op.micro_batch, op.chunk});
    }
    // Topological index order need not be lane order: order each device's passes by following lane_prev.
    for (int dev = 0; dev < g->num_devices; ++dev) {
      int last = -1;
      for (int i = 0; i < g->num_ops(); ++i)
        if (g->ops[i].device == dev && g->ops[i].lane == Lane::kCompute) last = i;
      std::vector<PipeOp> chain;
      for (int i = last; i >= 0; i = g->lane_prev[i]) {
        const Op& op = g->ops[i];
        if (op.kind == OpKind::kForward || (op.kind == OpKind::kBackward && op.bucket == op.pieces - 1))
          chain.insert(chain.begin(),
                       PipeOp{op.kind == OpKind::kForward ? PassKind::kForward : PassKind::kBackward,
                              op.micro_batch, op.chunk});
      }
      EXPECT_EQ(chain, s->per_rank[dev % pc.pp]) << name << " device " << dev;
      EXPECT_EQ(seen[dev].size(), chain.size());
    }
  }
}

// Random per-layer parameters cut into chunks at random: what BMP's candidates are (the same layers, other cuts).
std::vector<ChunkStatic> RandomStatics(Rng& rng, int chunks, int layers_per_chunk, int64_t bucket_bytes) {
  std::vector<ChunkStatic> v(chunks);
  for (ChunkStatic& st : v) {
    const int layers = 1 + static_cast<int>(rng.Below(layers_per_chunk));
    for (int l = 0; l < layers; ++l) {
      // Every other chunk gets few enough bytes for fewer than 16 buckets (then the piece count changes).
      const int64_t p = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(6 * bucket_bytes))) + 1;
      st.layer_params.push_back(p);
      st.params += p;
    }
    st.grad_bytes_per_gpu = st.params * 2;
  }
  return v;
}

TEST(OpGraphTest, RepricingWithOtherStaticsEqualsABuild) {
  // Oracle: a graph built for the new statics and costs. Re-pricing the old graph in place (when the pieces per
  // chunk agree) or rebuilding it must give the same times for every op that the run records keep, the same
  // iteration time, and the same DP bytes per (device, chunk).
  Rng rng(11);
  int in_place = 0, rebuilt = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int zero = static_cast<int>(rng.Below(4));
    const ParallelConfig pc =
        Pc(2 + static_cast<int>(rng.Below(3)), 1 + static_cast<int>(rng.Below(3)), 1, 4, zero);
    CommSpec comm = Comm();
    comm.dp_bytes_per_s = 1e6;
    comm.dp_latency_us = 1;
    comm.dp_bucket_bytes = 100;
    auto s = BuildSchedule("1f1b", pc.pp, pc.vpp, pc.micro_batches);
    ASSERT_TRUE(s.ok());
    const std::vector<ChunkStatic> a = RandomStatics(rng, pc.chunks(), 30, comm.dp_bucket_bytes);
    const std::vector<ChunkStatic> b = RandomStatics(rng, pc.chunks(), 30, comm.dp_bucket_bytes);
    const IterationCosts ca = Random(pc, 100 + trial, true, trial % 2 == 0, true);
    const IterationCosts cb = Random(pc, 200 + trial, true, trial % 2 == 0, true);
    OpGraph g = fixtures::MustBuild(pc, "1f1b", ca, a, comm);
    const int ops_before = g.num_ops();
    ASSERT_TRUE(RepriceIterationGraph(&g, *s, cb, &b).ok());
    const OpGraph want = fixtures::MustBuild(pc, "1f1b", cb, b, comm);
    bool same_shape = true;
    for (int c = 0; c < pc.chunks(); ++c) {
      auto pieces = [&](const ChunkStatic& st) {
        const int64_t nb = (st.grad_bytes_per_gpu + 99) / 100;
        return std::min<int64_t>(nb, 16);
      };
      same_shape = same_shape && pieces(a[c]) == pieces(b[c]);
    }
    (same_shape ? in_place : rebuilt)++;
    if (same_shape) {
      EXPECT_EQ(g.num_ops(), ops_before) << "trial " << trial;
    }
    ASSERT_EQ(g.num_ops(), want.num_ops()) << "trial " << trial;
    const IterationTiming tg = EvaluateAnalytic(g), tw = EvaluateAnalytic(want);
    EXPECT_NEAR(tg.iteration_time_us, tw.iteration_time_us, 1e-9 * tw.iteration_time_us) << "trial " << trial;
    for (int i = 0; i < g.num_ops(); ++i) {
      ASSERT_EQ(g.ops[i].kind, want.ops[i].kind) << "trial " << trial << " op " << i;
      EXPECT_EQ(g.ops[i].bytes, want.ops[i].bytes) << g.Describe(i);
      EXPECT_EQ(g.ops[i].buckets, want.ops[i].buckets) << g.Describe(i);
      EXPECT_NEAR(g.duration_us[i], want.duration_us[i], 1e-9 * (1 + want.duration_us[i])) << g.Describe(i);
      EXPECT_NEAR(tg.start_us[i], tw.start_us[i], 1e-9 * (1 + tw.start_us[i])) << g.Describe(i);
    }
  }
  EXPECT_GT(in_place, 5);
  EXPECT_GT(rebuilt, 5);
}

// A random layout for the re-pricing oracles: schedule (split backwards, interleaved), 1..max_dp replicas, 1..4
// stages, ZeRO 0-3 (FSDP half the time at 3), slow DP links with small buckets, 1..4 GPUs per node (some
// pipeline hops in a node, some not).
struct RandomLayout {
  std::string schedule;
  ParallelConfig pc;
  CommSpec comm;
};
RandomLayout DrawLayout(Rng& rng, int max_dp) {
  RandomLayout l;
  const char* names[] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2"};
  l.schedule = names[rng.Below(5)];
  const int pp = 1 + static_cast<int>(rng.Below(4));
  const int vpp = l.schedule == "interleaved-1f1b" ? 2 : 1;
  l.pc = Pc(1 + static_cast<int>(rng.Below(max_dp)), pp, vpp, pp * (1 + static_cast<int>(rng.Below(2))),
            static_cast<int>(rng.Below(4)));
  if (l.pc.zero_stage == 3 && rng.Below(2) == 0) l.pc.zero3_impl = "fsdp";
  l.comm = Comm();
  l.comm.dp_bytes_per_s = 1e6;
  l.comm.dp_latency_us = 1;
  l.comm.dp_bucket_bytes = 100;
  l.comm.gpus_per_node = 1 + static_cast<int>(rng.Below(4));
  l.comm.nvlink_bytes_per_s = 1e11;
  l.comm.nvlink_latency_us = 1;
  l.comm.nic_bytes_per_s = 1e10;
  l.comm.nic_latency_us = 4;
  return l;
}

// Oracle: RepriceMode::kDurationsOnly and RepriceDurations from packed times (bmp's candidates) give the same
// duration_us, bit for bit, as kFull, and so the same T: random schedules (split backwards, interleaved), ZeRO
// stages (FSDP takes the full path), TP, recompute, sends over NVLink and over NICs, other statics (in place or
// rebuilt), then another iteration's costs.
TEST(OpGraphTest, RepricingDurationsOnlyEqualsFull) {
  Rng rng(23);
  std::vector<double> scratch;
  int packed_taken = 0;
  for (int trial = 0; trial < 80; ++trial) {
    const RandomLayout layout = DrawLayout(rng, 3);
    const std::string& name = layout.schedule;
    const ParallelConfig& pc = layout.pc;
    const CommSpec& comm = layout.comm;
    auto s = BuildSchedule(name, pc.pp, pc.vpp, pc.micro_batches);
    ASSERT_TRUE(s.ok()) << name;
    auto costs = [&](uint64_t seed) {
      IterationCosts c = Random(pc, seed, rng.Below(2) == 0, rng.Below(2) == 0, true);
      for (ChunkCost& k : c.costs) k.bwd_weight_us = k.bwd_us * rng.Uniform(0.1, 0.6);
      return c;
    };
    const std::vector<ChunkStatic> a = RandomStatics(rng, pc.chunks(), 20, comm.dp_bucket_bytes);
    const std::vector<ChunkStatic> b = RandomStatics(rng, pc.chunks(), 20, comm.dp_bucket_bytes);
    OpGraph full = fixtures::MustBuild(pc, name, costs(300 + trial), a, comm);
    OpGraph fast = full, packed = full;
    for (int step = 0; step < 3; ++step) {
      const IterationCosts next = costs(400 + 10 * trial + step);
      const std::vector<ChunkStatic>* st = step == 1 ? &b : nullptr;
      ASSERT_TRUE(RepriceIterationGraph(&full, *s, next, st).ok());
      ASSERT_TRUE(RepriceIterationGraph(&fast, *s, next, st, RepriceMode::kDurationsOnly).ok());
      ASSERT_EQ(fast.num_ops(), full.num_ops()) << "trial " << trial;
      EXPECT_EQ(fast.duration_us, full.duration_us) << "trial " << trial << " step " << step;
      EXPECT_EQ(AnalyticIterationTimeUs(fast, &scratch), EvaluateAnalytic(full).iteration_time_us)
          << "trial " << trial << " step " << step;
      // The packed path (RepriceDurations), falling back to the costs where it declines, as bmp does.
      std::vector<ChunkTimes> times;
      for (const ChunkCost& k : next.costs)
        times.push_back(
            {k.fwd_us, k.bwd_us, k.bwd_weight_us, k.recompute_us, k.tp_fwd_us, k.tp_bwd_us, k.send_bytes});
      if (RepriceDurations(&packed, times, st))
        ++packed_taken;
      else
        ASSERT_TRUE(RepriceIterationGraph(&packed, *s, next, st, RepriceMode::kDurationsOnly).ok());
      ASSERT_EQ(packed.num_ops(), full.num_ops()) << "trial " << trial;
      EXPECT_EQ(packed.duration_us, full.duration_us) << "trial " << trial << " step " << step;
    }
  }
  EXPECT_GT(packed_taken, 100);
  // Errors are the same: a negative cost.
  const ParallelConfig pc = Pc(2, 2, 1, 2);
  OpGraph g = fixtures::MustBuild(pc, "1f1b", Random(pc, 1, true, true, true), Statics(2, 300), Comm());
  IterationCosts bad = Random(pc, 2, true, true, true);
  bad.costs[3].bwd_us = -1;
  const Status full = RepriceIterationGraph(&g, *BuildSchedule("1f1b", 2, 1, 2), bad);
  const Status fast =
      RepriceIterationGraph(&g, *BuildSchedule("1f1b", 2, 1, 2), bad, nullptr, RepriceMode::kDurationsOnly);
  ASSERT_FALSE(full.ok());
  ASSERT_FALSE(fast.ok());
  EXPECT_EQ(full.error().message(), fast.error().message());
}

// Oracle for bmp's candidate bound: ReplicaAloneTimeUs on the old graph, from one replica's packed times and the
// new statics, equals bit for bit replica_time_us of EvaluateAnalytic on the graph re-priced in full
// (RepriceIterationGraph kFull, which rebuilds where needed) for every replica's costs, is never above its
// iteration time, and leaves the old graph as it was. Random schedules, ZeRO stages (FSDP: no bound), TP,
// recompute and sends in some replicas only (categories the old graph lacks: no bound, or a bound where the
// replica's own times fit), other statics (in place or rebuilt: no bound). ReplicaComputeEndUs against a brute
// force over the compute-lane ops.
TEST(OpGraphTest, ReplicaAloneTimeEqualsTheRepricedGraphsAloneTime) {
  Rng rng(29);
  std::vector<double> finish, ends;
  int bounded = 0, declined = 0;
  for (int trial = 0; trial < 80; ++trial) {
    const RandomLayout layout = DrawLayout(rng, 4);
    const std::string& name = layout.schedule;
    const ParallelConfig& pc = layout.pc;
    const CommSpec& comm = layout.comm;
    auto s = BuildSchedule(name, pc.pp, pc.vpp, pc.micro_batches);
    ASSERT_TRUE(s.ok()) << name;
    // TP, recompute and sends drawn per replica, so that a replica may use a category the graph lacks.
    auto costs = [&](uint64_t seed, bool all) {
      IterationCosts c = Random(pc, seed, true, true, true);
      std::vector<uint8_t> tp(pc.dp), rc(pc.dp);
      for (int d = 0; d < pc.dp; ++d) {
        tp[d] = all || rng.Below(2) == 0;
        rc[d] = all || rng.Below(2) == 0;
      }
      for (int d = 0; d < pc.dp; ++d)
        for (int m = 0; m < pc.micro_batches; ++m)
          for (int ch = 0; ch < pc.chunks(); ++ch) {
            ChunkCost& k = c.At(d, m, ch);
            k.bwd_weight_us = k.bwd_us * rng.Uniform(0.1, 0.6);
            if (!tp[d]) k.tp_fwd_us = k.tp_bwd_us = 0;
            if (!rc[d]) k.recompute_us = 0;
          }
      return c;
    };
    const std::vector<ChunkStatic> a = RandomStatics(rng, pc.chunks(), 20, comm.dp_bucket_bytes);
    const std::vector<ChunkStatic> b =
        rng.Below(2) == 0 ? a : RandomStatics(rng, pc.chunks(), 20, comm.dp_bucket_bytes);
    const OpGraph old = fixtures::MustBuild(pc, name, costs(500 + trial, rng.Below(3) == 0), a, comm);
    const IterationCosts next = costs(600 + trial, false);
    OpGraph repriced = old;
    ASSERT_TRUE(RepriceIterationGraph(&repriced, *s, next, &b).ok());
    const IterationTiming want = EvaluateAnalytic(repriced);
    OpGraph g = old;
    const int C = pc.chunks(), M = pc.micro_batches;
    for (int r = 0; r < pc.dp; ++r) {
      std::vector<ChunkTimes> times;
      for (int m = 0; m < M; ++m)
        for (int ch = 0; ch < C; ++ch) {
          const ChunkCost& k = next.At(r, m, ch);
          times.push_back(
              {k.fwd_us, k.bwd_us, k.bwd_weight_us, k.recompute_us, k.tp_fwd_us, k.tp_bwd_us, k.send_bytes});
        }
      const std::optional<double> t = ReplicaAloneTimeUs(&g, r, times, b, &finish);
      if (!t) {
        ++declined;
        continue;
      }
      ++bounded;
      EXPECT_FALSE(pc.zero_stage == 3 && pc.zero3_impl == "fsdp" && pc.dp > 1) << "trial " << trial;
      EXPECT_EQ(*t, want.replica_time_us[r]) << "trial " << trial << " replica " << r;
      EXPECT_LE(*t, want.iteration_time_us) << "trial " << trial << " replica " << r;
    }
    EXPECT_EQ(g.duration_us, old.duration_us) << "trial " << trial;
    EXPECT_EQ(g.num_ops(), old.num_ops());
    // ReplicaComputeEndUs: brute force over the compute ops of the re-priced graph's sweep.
    std::vector<double> brute(pc.dp, 0.0);
    const DeviceMesh mesh(repriced.parallel);
    for (int i = 0; i < repriced.num_ops(); ++i)
      if (repriced.ops[i].device >= 0 && repriced.ops[i].lane == Lane::kCompute) {
        double& e = brute[mesh.DpOfDevice(repriced.ops[i].device)];
        e = std::max(e, want.finish_us[i]);
      }
    ReplicaComputeEndUs(&repriced, want.finish_us, &ends);
    EXPECT_EQ(ends, brute) << "trial " << trial;
  }
  EXPECT_GT(bounded, 60);
  EXPECT_GT(declined, 10);
  // Out of range and mismatched sizes: no bound.
  const ParallelConfig pc = Pc(2, 2, 1, 2);
  OpGraph g = fixtures::MustBuild(pc, "1f1b", Random(pc, 1, true, true, true), Statics(2, 300), Comm());
  std::vector<ChunkTimes> times(pc.micro_batches * pc.chunks());
  EXPECT_FALSE(ReplicaAloneTimeUs(&g, 2, times, Statics(2, 300), &finish));
  EXPECT_FALSE(ReplicaAloneTimeUs(&g, -1, times, Statics(2, 300), &finish));
  times.pop_back();
  EXPECT_FALSE(ReplicaAloneTimeUs(&g, 0, times, Statics(2, 300), &finish));
}

TEST(OpGraphTest, DpCollectiveDurationsPerZeroStage) {
  CommSpec comm = Comm();
  comm.dp_bytes_per_s = 1e6;  // 1 byte per us
  comm.dp_latency_us = 3;
  for (int zero : {0, 1, 2, 3}) {
    const ParallelConfig pc = Pc(4, 1, 1, 2, zero);
    auto g = Build(pc, "1f1b", Uniform(pc, 1, 2), Statics(1, 100), comm);
    ASSERT_TRUE(g.ok()) << g.error().message();
    const double frac = 3.0 / 4.0;
    int ag = 0;
    for (const Op& op : g->ops) {
      if (op.kind == OpKind::kDpCollective) {
        const double v = frac * op.bytes;
        // Ring latencies: d - 1 = 3 steps of 3 us per reduce-scatter or all-gather pass, per bucket of the op.
        const double lat = 9.0 * op.buckets;
        const double expect = zero == 0 ? 2 * v + 2 * lat : zero < 3 ? 2 * (v + lat) : v + lat;
        EXPECT_DOUBLE_EQ(op.duration_us, expect) << "zero " << zero;
      }
      if (op.kind == OpKind::kDpAllGather) {
        ++ag;
        EXPECT_DOUBLE_EQ(op.duration_us, 3 * 3 * 3 + frac * 100);  // 3 buckets x 3 ring steps x 3 us
      }
    }
    EXPECT_EQ(ag, zero == 3 ? 2 * pc.dp : 0);
  }
}

TEST(OpGraphTest, NoDpOpsWithOneReplicaAndNoSendsWithoutBytes) {
  const ParallelConfig pc = Pc(1, 4, 1, 4, 3);
  auto g = Build(pc, "1f1b", Uniform(pc, 1, 2), Statics(4, 1000), CommSpec{});
  ASSERT_TRUE(g.ok()) << g.error().message();
  auto n = CountKinds(*g);
  EXPECT_EQ(n.size(), 2u);  // forwards and backwards only
  EXPECT_EQ(g->num_ops(), 2 * 4 * 4);
}

TEST(OpGraphTest, P2pSendDurationAndBytes) {
  const ParallelConfig pc = Pc(1, 2, 1, 2);
  IterationCosts c = Uniform(pc, 1, 2);
  for (int m = 0; m < 2; ++m) c.At(0, m, 0).send_bytes = 1000;
  CommSpec comm;
  comm.p2p_bytes_per_s = 1e8;  // 1000 bytes = 10 us
  comm.p2p_latency_us = 1;
  auto g = Build(pc, "gpipe", c, {}, comm);
  ASSERT_TRUE(g.ok()) << g.error().message();
  int sends = 0;
  for (const Op& op : g->ops)
    if (op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient) {
      ++sends;
      EXPECT_EQ(op.bytes, 1000);
      EXPECT_DOUBLE_EQ(op.duration_us, 11);
      EXPECT_EQ(op.device % 2, op.kind == OpKind::kP2pSendActivation ? 0 : 1);
    }
  EXPECT_EQ(sends, 4);
  // GPipe, P = 2, M = 2 with 11 us transfers, serialized on the sender's lane: activations land at 12 and 23,
  // rank 1 runs F0 [12,13], F1 [23,24], B0 [24,26], B1 [26,28]; gradients land at 37 and 48; rank 0 ends
  // at 50.
  IterationTiming t = EvaluateAnalytic(*g);
  EXPECT_DOUBLE_EQ(t.iteration_time_us, 50);
}

// Issue 8: each pipeline boundary is priced on its own link. DP2 x TP2 x PP4 on 8-GPU nodes (Megatron order: TP,
// then DP, then PP): stages 0-1 fill node 0 and 2-3 node 1, so only the 1 <-> 2 hop crosses nodes (the old rule
// priced every hop as NVLink because 2 * tp * dp <= 8).
TEST(OpGraphTest, EachPipelineBoundaryOnItsOwnLink) {
  const ParallelConfig pc = Pc(2, 4, 1, 4, 0, 2);
  IterationCosts c = Uniform(pc, 1, 2);
  for (auto& k : c.costs) k.send_bytes = 1'000'000;
  for (int d = 0; d < 2; ++d)
    for (int m = 0; m < 4; ++m) c.At(d, m, 3).send_bytes = 0;
  CommSpec comm;
  comm.gpus_per_node = 8;
  comm.nvlink_bytes_per_s = 1e11;  // 1 MB: 10 us
  comm.nvlink_latency_us = 1;
  comm.nic_bytes_per_s = 1e9;  // 1 MB: 1000 us
  comm.nic_latency_us = 5;
  comm.p2p_bytes_per_s = 1e11;  // the layout's single link: what every hop used to cost
  comm.p2p_latency_us = 1;
  comm.dp_bytes_per_s = 1e11;
  auto g = Build(pc, "1f1b", c, Statics(4, 1000), comm);
  ASSERT_TRUE(g.ok()) << g.error().message();
  int nic = 0, nvlink = 0;
  for (const Op& op : g->ops) {
    if (op.kind != OpKind::kP2pSendActivation && op.kind != OpKind::kP2pSendGradient) continue;
    const int from = op.chunk, to = op.kind == OpKind::kP2pSendActivation ? op.chunk + 1 : op.chunk - 1;
    const bool crosses = std::min(from, to) == 1;
    EXPECT_DOUBLE_EQ(op.duration_us, crosses ? 1005 : 11) << g->Describe(static_cast<int>(&op - &g->ops[0]));
    ++(crosses ? nic : nvlink);
  }
  EXPECT_EQ(nic, 2 * 2 * 4);         // 2 replicas x 2 directions x 4 micro-batches over the 1-2 boundary
  EXPECT_EQ(nvlink, 2 * 2 * 2 * 4);  // boundaries 0-1 and 2-3
  // A slower NIC slows the iteration (before, it changed nothing).
  CommSpec slow = comm;
  slow.nic_bytes_per_s = 1e8;
  auto h = Build(pc, "1f1b", c, Statics(4, 1000), slow);
  ASSERT_TRUE(h.ok());
  EXPECT_GT(EvaluateAnalytic(*h).iteration_time_us, EvaluateAnalytic(*g).iteration_time_us + 8000);
}

TEST(OpGraphTest, InputErrors) {
  const ParallelConfig pc = Pc(2, 2, 1, 2);
  auto s = BuildSchedule("1f1b", 2, 1, 2);
  ASSERT_TRUE(s.ok());
  IterationCosts c = Uniform(pc, 1, 2);
  auto r = BuildIterationGraph(pc, *s, Uniform(Pc(2, 2, 1, 3), 1, 2), Statics(2, 10), Comm());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("iteration costs are"), std::string::npos);
  c.At(1, 1, 0).bwd_us = -1;
  r = BuildIterationGraph(pc, *s, c, Statics(2, 10), Comm());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("dp 1 micro-batch 1 chunk 0: bwd_us"), std::string::npos);
  c = Uniform(pc, 1, 2);
  EXPECT_FALSE(BuildIterationGraph(pc, *s, c, Statics(1, 10), Comm()).ok());  // statics size
  CommSpec bad = Comm();
  bad.dp_bytes_per_s = 0;
  EXPECT_FALSE(BuildIterationGraph(pc, *s, c, Statics(2, 10), bad).ok());
  auto s3 = BuildSchedule("1f1b", 3, 1, 2);
  EXPECT_FALSE(BuildIterationGraph(pc, *s3, c, Statics(2, 10), Comm()).ok());  // schedule for another pp
}

TEST(OpGraphTest, CycleNamesTheOps) {
  // Rank 0 runs B0 before F1, rank 1 runs F1 before B0: rank 0's B0 waits for rank 1's B0, which waits (lane
  // order) for rank 1's F1, which waits for rank 0's F1, which comes after rank 0's B0.
  Schedule s;
  s.name = "bad";
  s.pp = 2;
  s.micro_batches = 2;
  s.per_rank = {{{PassKind::kForward, 0, 0},
                 {PassKind::kBackward, 0, 0},
                 {PassKind::kForward, 1, 0},
                 {PassKind::kBackward, 1, 0}},
                {{PassKind::kForward, 0, 1},
                 {PassKind::kForward, 1, 1},
                 {PassKind::kBackward, 0, 1},
                 {PassKind::kBackward, 1, 1}}};
  ASSERT_TRUE(ValidateSchedule(s).ok());
  const ParallelConfig pc = Pc(1, 2, 1, 2);
  auto g = BuildIterationGraph(pc, s, Uniform(pc, 1, 2), {}, CommSpec{});
  ASSERT_FALSE(g.ok());
  const std::string& msg = g.error().message();
  EXPECT_NE(msg.find("dependency cycle"), std::string::npos) << msg;
  EXPECT_NE(msg.find("backward mb 0 chunk 0 on device 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("forward mb 1 chunk 1 on device 1"), std::string::npos) << msg;
}

// Every built-in schedule yields an acyclic graph.
TEST(OpGraphTest, BuiltInSchedulesAreAcyclic) {
  for (int pp : {1, 2, 3, 4})
    for (int m : {1, 2, 4, 8, 12})
      for (const char* name : {"gpipe", "1f1b", "interleaved-1f1b"})
        for (int vpp : {1, 2, 3}) {
          const bool inter = std::string(name) == "interleaved-1f1b";
          if (inter != (vpp > 1) || (inter && m % pp != 0)) continue;
          const ParallelConfig pc = Pc(2, pp, vpp, m);
          auto g = Build(pc, name, Random(pc, 3, false, false, true), Statics(pc.chunks(), 100), Comm());
          EXPECT_TRUE(g.ok()) << name << " pp " << pp << " vpp " << vpp << " M " << m << ": "
                              << g.error().message();
        }
}

TEST(OpGraphTest, RepriceMatchesRebuild) {
  const ParallelConfig pc = Pc(2, 4, 1, 8, 1);
  auto s = BuildSchedule("1f1b", pc.pp, pc.vpp, pc.micro_batches);
  ASSERT_TRUE(s.ok());
  auto g = BuildIterationGraph(pc, *s, Random(pc, 1, true, false, true), Statics(4, 100), Comm());
  ASSERT_TRUE(g.ok());
  const int n0 = g->num_ops();
  // Same shape: durations change in place.
  IterationCosts next = Random(pc, 7, true, false, true);
  ASSERT_TRUE(RepriceIterationGraph(&*g, *s, next).ok());
  EXPECT_EQ(g->num_ops(), n0);
  auto fresh = BuildIterationGraph(pc, *s, next, Statics(4, 100), Comm());
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(EvaluateAnalytic(*g).finish_us, EvaluateAnalytic(*fresh).finish_us);
  // Recompute appears: the graph is rebuilt with recompute ops.
  next = Random(pc, 8, true, true, true);
  ASSERT_TRUE(RepriceIterationGraph(&*g, *s, next).ok());
  EXPECT_EQ(CountKinds(*g)[OpKind::kRecompute], pc.dp * pc.micro_batches * pc.chunks());
  fresh = BuildIterationGraph(pc, *s, next, Statics(4, 100), Comm());
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(EvaluateAnalytic(*g).finish_us, EvaluateAnalytic(*fresh).finish_us);
  // Recompute disappears: the ops stay with zero duration, the timing still matches a fresh build.
  next = Random(pc, 9, true, false, true);
  ASSERT_TRUE(RepriceIterationGraph(&*g, *s, next).ok());
  fresh = BuildIterationGraph(pc, *s, next, Statics(4, 100), Comm());
  ASSERT_TRUE(fresh.ok());
  EXPECT_DOUBLE_EQ(EvaluateAnalytic(*g).iteration_time_us, EvaluateAnalytic(*fresh).iteration_time_us);
}

TEST(OpGraphTest, Deterministic) {
  const ParallelConfig pc = Pc(3, 2, 2, 4, 3);
  auto a = Build(pc, "interleaved-1f1b", Random(pc, 5, true, true, true), Statics(4, 100), Comm());
  auto b = Build(pc, "interleaved-1f1b", Random(pc, 5, true, true, true), Statics(4, 100), Comm());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->deps, b->deps);
  EXPECT_EQ(a->lane_prev, b->lane_prev);
  EXPECT_EQ(a->duration_us, b->duration_us);
  ASSERT_EQ(a->num_ops(), b->num_ops());
  for (int i = 0; i < a->num_ops(); ++i) EXPECT_EQ(a->Describe(i), b->Describe(i));
}

// Dispatch: replicas 0 and 1 share node 0, replica 2 is on node 1 (tp 1, 2 GPUs per node).
CommSpec DispatchComm() {
  CommSpec s = Comm();
  s.gpus_per_node = 2;
  s.nvlink_bytes_per_s = 1e11;
  s.nvlink_latency_us = 2;
  s.nic_bytes_per_s = 1e10;
  s.nic_latency_us = 5;
  return s;
}

int FindOp(const OpGraph& g, OpKind kind, int device, int m, int chunk = 0) {
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.ops[i].kind == kind && g.ops[i].device == device && g.ops[i].micro_batch == m &&
        g.ops[i].chunk == chunk)
      return i;
  return -1;
}

TEST(OpGraphTest, DispatchOpsGateTheFirstForward) {
  const ParallelConfig pc = Pc(3, 2, 1, 3);
  IterationCosts costs = Random(pc, 9, false, false, true);
  // No dispatch lists: no dispatch ops (plans of the other data policies).
  auto plain = Build(pc, "1f1b", costs, Statics(2, 100), DispatchComm());
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  EXPECT_EQ(CountKinds(*plain)[OpKind::kDispatch], 0);
  EXPECT_TRUE(plain->dispatch_begin.empty());
  // m 0: 0 -> 1 over NVLink, 2 -> 0 over a NIC (twice: aggregated); m 1: nothing; m 2: 1 -> 2 over a NIC.
  costs.dispatch = {{{0, 1, 1000}, {2, 0, 1000}, {2, 0, 2000}, {1, 1, 99}}, {}, {{1, 2, 500}}};
  auto g = Build(pc, "1f1b", costs, Statics(2, 100), DispatchComm());
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(CountKinds(*g)[OpKind::kDispatch], 6);  // micro-batches 0 and 2, three replicas
  const double m0 = std::max(2 + 1000 / 1e11 * 1e6, 5 + 3000 / 1e10 * 1e6);  // 5.3 us
  const double m2 = 5 + 500 / 1e10 * 1e6;
  ASSERT_EQ(g->DispatchTransfers(0).size(), 2u);
  EXPECT_EQ(g->DispatchTransfers(0)[1].src_device, 4);  // replica 2, stage 0
  EXPECT_EQ(g->DispatchTransfers(0)[1].bytes, 3000);
  EXPECT_TRUE(g->DispatchTransfers(1).empty());
  for (int d = 0; d < 3; ++d) {
    const int dev = d * 2;
    EXPECT_EQ(FindOp(*g, OpKind::kDispatch, dev, 1), -1);
    EXPECT_EQ(FindOp(*g, OpKind::kDispatch, dev + 1, 0), -1);  // stage 1 has none
    for (int m : {0, 2}) {
      const int i = FindOp(*g, OpKind::kDispatch, dev, m);
      ASSERT_GE(i, 0);
      EXPECT_EQ(g->ops[i].lane, Lane::kDispatch);
      EXPECT_DOUBLE_EQ(g->ops[i].duration_us, m == 0 ? m0 : m2);
      const int f = FindOp(*g, OpKind::kForward, dev, m);
      ASSERT_GE(f, 0);
      auto deps = g->Deps(f);
      EXPECT_NE(std::find(deps.begin(), deps.end(), i), deps.end()) << g->Describe(f);
      EXPECT_NE(g->Describe(i).find("dispatch mb"), std::string::npos) << g->Describe(i);
    }
    // Lane order: micro-batch order.
    EXPECT_EQ(g->lane_prev[FindOp(*g, OpKind::kDispatch, dev, 2)], FindOp(*g, OpKind::kDispatch, dev, 0));
  }
  EXPECT_EQ(g->ops[FindOp(*g, OpKind::kDispatch, 0, 0)].bytes, 1000);
  EXPECT_EQ(g->ops[FindOp(*g, OpKind::kDispatch, 4, 0)].bytes, 3000);
  // Re-pricing: new transfers on the same micro-batches keep the graph, with new durations.
  IterationCosts next = costs;
  next.dispatch = {{{0, 2, 10000}}, {}, {}};
  OpGraph r = *g;
  ASSERT_TRUE(RepriceIterationGraph(&r, *BuildSchedule("1f1b", 2, 1, 3), next).ok());
  EXPECT_EQ(r.num_ops(), g->num_ops());
  EXPECT_DOUBLE_EQ(r.duration_us[FindOp(r, OpKind::kDispatch, 0, 0)], 5 + 10000 / 1e10 * 1e6);
  EXPECT_DOUBLE_EQ(r.duration_us[FindOp(r, OpKind::kDispatch, 2, 2)], 0.0);
  auto fresh = Build(pc, "1f1b", next, Statics(2, 100), DispatchComm());
  ASSERT_TRUE(fresh.ok());
  EXPECT_DOUBLE_EQ(EvaluateAnalytic(r).iteration_time_us, EvaluateAnalytic(*fresh).iteration_time_us);
  // A micro-batch that had no dispatch gets one: rebuilt, same as a fresh graph.
  next.dispatch = {{}, {{2, 1, 4000}}, {}};
  ASSERT_TRUE(RepriceIterationGraph(&r, *BuildSchedule("1f1b", 2, 1, 3), next).ok());
  EXPECT_GE(FindOp(r, OpKind::kDispatch, 4, 1), 0);
  fresh = Build(pc, "1f1b", next, Statics(2, 100), DispatchComm());
  ASSERT_TRUE(fresh.ok());
  EXPECT_DOUBLE_EQ(EvaluateAnalytic(r).iteration_time_us, EvaluateAnalytic(*fresh).iteration_time_us);
  // Errors: a rank outside [0, dp), a transfer over a NIC of speed 0.
  IterationCosts bad = costs;
  bad.dispatch = {{{0, 3, 10}}};
  EXPECT_FALSE(Build(pc, "1f1b", bad, Statics(2, 100), DispatchComm()).ok());
  CommSpec slow = DispatchComm();
  slow.nic_bytes_per_s = 0;
  auto e = Build(pc, "1f1b", costs, Statics(2, 100), slow);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("nic_bytes_per_s"), std::string::npos) << e.error().message();
}

// Incast and NIC sharing (issue 28): a device's transfers on one link run one after the other, sends and
// receives alike, so the all-to-all lasts the longest per-device chain. Closed forms on dp 4 x pp 1, b bytes per
// transfer: one device sending to 3 peers on other nodes takes 3 (5 + b / 1e10), not 5 + b / 1e10; three devices
// sending to one likewise (incast); in-node and cross-node sends run on their own links side by side. The
// dispatcher's own work (length all-gather over the DP ring, host time) precedes the forward all-to-all only.
TEST(OpGraphTest, DispatchAllToAllSharesEachDevicesLinks) {
  const ParallelConfig pc = Pc(4, 1, 1, 2);
  IterationCosts costs = Random(pc, 4, false, false, true);
  const int64_t b = 1 << 20;
  const double nic_us = 5 + b / 1e10 * 1e6, nvlink_us = 2 + b / 1e11 * 1e6;
  auto duration = [&](const CommSpec& comm, int m) {
    auto g = Build(pc, "1f1b", costs, Statics(1, 100), comm);
    EXPECT_TRUE(g.ok()) << g.error().message();
    if (!g.ok()) return -1.0;
    const int i = FindOp(*g, OpKind::kDispatch, 0, m);
    return i < 0 ? -1.0 : g->ops[i].duration_us;
  };
  CommSpec apart = DispatchComm();
  apart.gpus_per_node = 1;  // every replica on its own node
  costs.dispatch = {{{0, 1, b}, {0, 2, b}, {0, 3, b}}, {{1, 0, b}, {2, 0, b}, {3, 0, b}}};
  EXPECT_NEAR(duration(apart, 0), 3 * nic_us, 1e-9);  // one sender, three NIC flows
  EXPECT_NEAR(duration(apart, 1), 3 * nic_us, 1e-9);  // incast: three flows into one NIC
  // Two GPUs per node: 0 -> 1 over NVLink beside 0 -> 2, 0 -> 3 over its NIC.
  EXPECT_NEAR(duration(DispatchComm(), 0), std::max(nvlink_us, 2 * nic_us), 1e-9);
  // A permutation (every device sends once and receives once): one transfer's time.
  costs.dispatch = {{{0, 1, b}, {1, 2, b}, {2, 3, b}, {3, 0, b}}};
  EXPECT_NEAR(duration(apart, 0), nic_us, 1e-9);
  // The dispatcher's own work on micro-batch 0: the all-gather of 4000 bytes over the DP ring of 4 (Comm():
  // 5 us per step, 1e11 B/s) and 100 us of host time; micro-batch 1 has none.
  costs.dispatch = {{{0, 1, b}}, {{0, 1, b}}};
  costs.dispatch_overhead = {{4000, 100}};
  const double gather_us = 3 * 5 + 0.75 * 4000 / 1e11 * 1e6;
  EXPECT_NEAR(duration(apart, 0), gather_us + 100 + nic_us, 1e-9);
  EXPECT_NEAR(duration(apart, 1), nic_us, 1e-9);
  auto g = Build(pc, "1f1b", costs, Statics(1, 100), apart);
  ASSERT_TRUE(g.ok());
  EXPECT_NEAR(g->dispatch_overhead_us[0], gather_us + 100, 1e-9);
  EXPECT_EQ(g->dispatch_overhead_us[1], 0.0);
}

// The backward all-to-all (encoder-output gradients going back, IterationCosts::dispatch_backward): one
// dispatch op with pass backward per replica and micro-batch, on the stage-0 device, after the gradient reaches
// chunk 0 and before chunk 0's backward. By hand on dp 2 x pp 1 (uniform costs, no DP bytes): forward 10,
// all-to-all 5 + 3000 B / 1e10 B/s = 5.3 us, backward 20: 35.3 us; without it 30.
TEST(OpGraphTest, BackwardAllToAllGatesChunkZerosBackward) {
  const ParallelConfig pc = Pc(2, 1, 1, 1);
  IterationCosts costs;
  costs.Resize(2, 1, 1);
  for (ChunkCost& k : costs.costs) {
    k.fwd_us = 10;
    k.bwd_us = 20;
  }
  CommSpec comm = DispatchComm();
  comm.gpus_per_node = 1;  // every replica on its own node: NIC
  auto plain = Build(pc, "1f1b", costs, Statics(1, 0), comm);
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  EXPECT_DOUBLE_EQ(EvaluateAnalytic(*plain).iteration_time_us, 30);
  costs.dispatch_backward = {{{1, 0, 3000}}};
  auto g = Build(pc, "1f1b", costs, Statics(1, 0), comm);
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(CountKinds(*g)[OpKind::kDispatch], 2);
  const IterationTiming t = EvaluateAnalytic(*g);
  EXPECT_NEAR(t.iteration_time_us, 35.3, 1e-9);
  for (int d = 0; d < 2; ++d) {
    const int i = FindOp(*g, OpKind::kDispatch, d, 0);
    ASSERT_GE(i, 0);
    EXPECT_EQ(g->ops[i].pass, PassKind::kBackward);
    EXPECT_EQ(g->DispatchSlot(g->ops[i]), 1);  // slot M + m
    EXPECT_NEAR(t.start_us[i], 10, 1e-9);      // after the forward (pp 1)
    EXPECT_NEAR(t.start_us[FindOp(*g, OpKind::kBackward, d, 0)], 15.3, 1e-9);
  }
  EXPECT_EQ(g->ops[FindOp(*g, OpKind::kDispatch, 1, 0)].bytes, 3000);  // replica 1 sends
  EXPECT_EQ(g->ops[FindOp(*g, OpKind::kDispatch, 0, 0)].bytes, 0);
  // pp 2: it waits for the gradient sent back by chunk 1, and the forward dispatch keeps slot m.
  const ParallelConfig pc2 = Pc(2, 2, 1, 2);
  IterationCosts c2 = Random(pc2, 4, false, false, true);
  c2.dispatch = {{{0, 1, 1000}}, {}};
  c2.dispatch_backward = {{}, {{1, 0, 2000}}};
  auto g2 = Build(pc2, "1f1b", c2, Statics(2, 0), DispatchComm());
  ASSERT_TRUE(g2.ok()) << g2.error().message();
  const IterationTiming t2 = EvaluateAnalytic(*g2);
  for (int d = 0; d < 2; ++d) {
    const int dev = d * 2;
    const int x = FindOp(*g2, OpKind::kDispatch, dev, 1);
    ASSERT_GE(x, 0);
    EXPECT_EQ(g2->ops[x].pass, PassKind::kBackward);
    const int send = FindOp(*g2, OpKind::kP2pSendGradient, dev + 1, 1, 1);
    ASSERT_GE(send, 0);
    EXPECT_GE(t2.start_us[x], t2.finish_us[send] - 1e-9);
    EXPECT_GE(t2.start_us[FindOp(*g2, OpKind::kBackward, dev, 1)], t2.finish_us[x] - 1e-9);
    EXPECT_EQ(g2->ops[FindOp(*g2, OpKind::kDispatch, dev, 0)].pass, PassKind::kForward);
  }
  // Re-pricing with no backward transfers keeps the ops at zero duration; bad ranks are errors.
  IterationCosts none = c2;
  none.dispatch_backward.clear();
  OpGraph r = *g2;
  ASSERT_TRUE(RepriceIterationGraph(&r, *BuildSchedule("1f1b", 2, 1, 2), none).ok());
  EXPECT_DOUBLE_EQ(r.duration_us[FindOp(r, OpKind::kDispatch, 0, 1)], 0.0);
  IterationCosts bad = c2;
  bad.dispatch_backward = {{{0, 5, 10}}};
  auto e = Build(pc2, "1f1b", bad, Statics(2, 0), DispatchComm());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("backward dispatch transfer"), std::string::npos) << e.error().message();
}

}  // namespace
}  // namespace mmtwin

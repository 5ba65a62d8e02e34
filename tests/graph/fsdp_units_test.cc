// SPDX-License-Identifier: Apache-2.0
// FSDP per-unit unshard / reshard with prefetch in the op graph (parallel.zero3_impl fsdp, op_graph.h).
// Oracles: the closed form of a uniform chain of units (first gather exposed, then max(compute, gather) per
// unit), the iteration of a DP2 chunk timed by hand, unit sizes from the layers' parameters, re-pricing equal to
// a rebuild, and the other ZeRO-3 implementations keeping the whole-chunk gather.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

using fixtures::MustBuild;
using fixtures::Pc;

ParallelConfig Fsdp(int dp, int pp, int m, const std::string& impl = "fsdp") {
  ParallelConfig pc = Pc(dp, pp, /*vpp=*/1, m, /*zero=*/3);
  pc.zero3_impl = impl;
  return pc;
}

// `layers` layers of equal parameters, `unit_bytes` of bf16 weights each per GPU.
ChunkStatic Uniform(int layers, int64_t unit_bytes) {
  ChunkStatic s;
  s.layer_params.assign(layers, 1000);
  s.params = 1000 * layers;
  s.grad_bytes_per_gpu = unit_bytes * layers;
  return s;
}

// DP 2 without latency: a ring all-gather (or reduce-scatter) of b bytes takes (d-1)/d * b / bw = b / 2 / bw.
CommSpec Comm() {
  CommSpec comm;
  comm.dp_bytes_per_s = 1e6;  // 1 byte per us
  comm.dp_latency_us = 0;
  comm.dp_bucket_bytes = 1 << 30;
  return comm;
}

IterationCosts Costs(const ParallelConfig& pc, double fwd_us, double bwd_us) {
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (ChunkCost& k : c.costs) {
    k.fwd_us = fwd_us;
    k.bwd_us = bwd_us;
  }
  return c;
}

// End of the forward's last unit on device 0 (micro-batch 0).
double ForwardEnd(const OpGraph& g, const IterationTiming& t) {
  double end = 0;
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.ops[i].kind == OpKind::kForward && g.ops[i].device == 0) end = std::max(end, t.finish_us[i]);
  return end;
}

// Uniform chain of U units, per-unit forward c and all-gather a: the forward ends at a + c + (U-1) max(a, c)
// (the first gather exposed; then gathers hidden behind compute, or compute waiting for each gather).
TEST(FsdpUnitsTest, UniformChainClosedForm) {
  const int U = 6;
  for (const double a : {2.0, 5.0, 10.0, 17.0}) {  // unit bytes 2a (DP 2: half the bytes cross the ring)
    for (const double c : {5.0, 10.0}) {
      SCOPED_TRACE("a " + std::to_string(a) + " c " + std::to_string(c));
      const ParallelConfig pc = Fsdp(2, 1, 1);
      const OpGraph g = MustBuild(pc, "1f1b", Costs(pc, U * c, 2 * U * c),
                                  {Uniform(U, static_cast<int64_t>(2 * a))}, Comm());
      const IterationTiming t = EvaluateAnalytic(g);
      EXPECT_NEAR(ForwardEnd(g, t), a + c + (U - 1) * std::max(a, c), 1e-9);
      int gathers = 0;
      for (const Op& op : g.ops)
        if (op.kind == OpKind::kDpAllGather && op.device == 0) {
          ++gathers;
          EXPECT_EQ(op.buckets, 1);
          EXPECT_NEAR(op.duration_us, a, 1e-9);
        }
      EXPECT_EQ(gathers, 2 * U);  // every unit before its forward and before its backward
    }
  }
}

// DP 2, one micro-batch, U = 4 units: gather and reduce-scatter a = 2 us per unit, forward 10 us and backward
// 20 us per unit. Only the first gather is exposed: the backward's gathers are prefetched (the first while the
// forward's last unit runs, each later one behind the previous unit's reduce-scatter), each reduce-scatter runs
// behind the next unit's backward, the last one after the backward: T = a + U (10 + 20) + a = 124 us.
// The whole-chunk gather of zero3_impl simple exposes U a = 8 us before the forward (its backward gather is
// prefetched) and reduce-scatters the chunk's 16 bytes of gradients (one bucket, 8 us) after the backward:
// 8 + 120 + 8 = 136 us; deepspeed's graph is the same.
TEST(FsdpUnitsTest, IterationByHand) {
  const int U = 4;
  const ChunkStatic chunk = Uniform(U, 4);
  for (const char* impl : {"fsdp", "simple", "deepspeed"}) {
    SCOPED_TRACE(impl);
    const ParallelConfig pc = Fsdp(2, 1, 1, impl);
    const OpGraph g = MustBuild(pc, "1f1b", Costs(pc, U * 10.0, U * 20.0), {chunk}, Comm());
    const IterationTiming t = EvaluateAnalytic(g);
    const bool fsdp = std::string(impl) == "fsdp";
    EXPECT_NEAR(t.iteration_time_us, fsdp ? 124.0 : 136.0, 1e-9);
    int fwd = 0, bwd = 0, gathers = 0, reduce = 0;
    for (const Op& op : g.ops) {
      if (op.device != 0) continue;
      fwd += op.kind == OpKind::kForward;
      bwd += op.kind == OpKind::kBackward;
      gathers += op.kind == OpKind::kDpAllGather;
      reduce += op.kind == OpKind::kDpCollective && op.buckets > 0;
    }
    EXPECT_EQ(fwd, fsdp ? U : 1);
    EXPECT_EQ(bwd, fsdp ? U : 1);
    EXPECT_EQ(gathers, fsdp ? 2 * U : 2);
    EXPECT_EQ(reduce, fsdp ? U : 1);
  }
}

// Units follow the layers' parameters: their weight bytes sum to the chunk's and each unit's compute is its
// share of the pass; layers without parameters are no unit; more than 128 layers are grouped.
TEST(FsdpUnitsTest, UnitsFromLayerParameters) {
  ChunkStatic s;
  s.layer_params = {100, 0, 100, 200, 0};
  s.params = 400;
  s.grad_bytes_per_gpu = 801;  // not divisible: the last unit takes the remainder
  const ParallelConfig pc = Fsdp(2, 1, 1);
  const OpGraph g = MustBuild(pc, "1f1b", Costs(pc, 40, 80), {s}, Comm());
  std::vector<int64_t> gather_bytes;
  std::vector<double> fwd_us, bwd_us;
  for (const Op& op : g.ops) {
    if (op.device != 0) continue;
    if (op.kind == OpKind::kDpAllGather && op.pass == PassKind::kForward) gather_bytes.push_back(op.bytes);
    if (op.kind == OpKind::kForward) fwd_us.push_back(op.duration_us);
    if (op.kind == OpKind::kBackward) bwd_us.push_back(op.duration_us);
  }
  EXPECT_EQ(gather_bytes, (std::vector<int64_t>{200, 200, 401}));
  ASSERT_EQ(fwd_us.size(), 3u);
  EXPECT_NEAR(fwd_us[0], 10, 1e-12);
  EXPECT_NEAR(fwd_us[2], 20, 1e-12);
  ASSERT_EQ(bwd_us.size(), 3u);
  EXPECT_NEAR(bwd_us[0], 40, 1e-12);  // the backward runs the units last to first
  EXPECT_NEAR(bwd_us[2], 20, 1e-12);

  ChunkStatic many;
  many.layer_params.assign(300, 10);
  many.params = 3000;
  many.grad_bytes_per_gpu = 6000;
  const OpGraph h = MustBuild(pc, "1f1b", Costs(pc, 40, 80), {many}, Comm());
  int units = 0;
  int64_t bytes = 0;
  for (const Op& op : h.ops)
    if (op.device == 0 && op.kind == OpKind::kDpAllGather && op.pass == PassKind::kForward) {
      ++units;
      bytes += op.bytes;
    }
  EXPECT_EQ(units, 100);  // 300 layers in runs of ceil(300 / 128) = 3
  EXPECT_EQ(bytes, 6000);
}

// Pipeline, several micro-batches, recompute: every pass gathers its units; re-pricing (other costs, other
// statics) gives what a rebuild gives.
TEST(FsdpUnitsTest, RepriceEqualsRebuild) {
  const ParallelConfig pc = Fsdp(2, 2, 4);
  IterationCosts c = Costs(pc, 40, 80);
  for (size_t i = 0; i < c.costs.size(); ++i) {
    c.costs[i].recompute_us = i % 3 == 0 ? 30 : 0;
    c.costs[i].fwd_us += static_cast<double>(i);
  }
  CommSpec comm = Comm();
  comm.p2p_bytes_per_s = 1e6;
  std::vector<ChunkStatic> statics = {Uniform(3, 30), Uniform(5, 20)};
  const OpGraph g = MustBuild(pc, "1f1b", c, statics, comm);
  int gathers = 0;
  for (const Op& op : g.ops) gathers += op.kind == OpKind::kDpAllGather;
  EXPECT_EQ(gathers, 2 /*replicas*/ * 4 /*micro-batches*/ * 2 /*passes*/ * (3 + 5));
  auto s = BuildSchedule("1f1b", 2, 1, 4);
  ASSERT_TRUE(s.ok());
  IterationCosts c2 = c;
  for (ChunkCost& k : c2.costs) k.bwd_us *= 1.5;
  std::vector<ChunkStatic> statics2 = {Uniform(4, 25), Uniform(4, 25)};
  OpGraph h = g;
  ASSERT_TRUE(RepriceIterationGraph(&h, *s, c2).ok());
  EXPECT_NEAR(EvaluateAnalytic(h).iteration_time_us,
              EvaluateAnalytic(MustBuild(pc, "1f1b", c2, statics, comm)).iteration_time_us, 1e-9);
  ASSERT_TRUE(RepriceIterationGraph(&h, *s, c2, &statics2).ok());
  const OpGraph r = MustBuild(pc, "1f1b", c2, statics2, comm);
  ASSERT_EQ(h.num_ops(), r.num_ops());
  for (int i = 0; i < h.num_ops(); ++i)
    EXPECT_NEAR(h.duration_us[i], r.duration_us[i], 1e-12) << h.Describe(i);
  EXPECT_NEAR(EvaluateAnalytic(h).iteration_time_us, EvaluateAnalytic(r).iteration_time_us, 1e-9);
}

// A split backward (zero-bubble): B in units after their gathers, the chunk's last W in units releasing their
// reduce-scatters; the graph builds (no cycle) and every unit's gradients are reduced once.
TEST(FsdpUnitsTest, SplitBackward) {
  const ParallelConfig pc = Fsdp(2, 2, 4);
  IterationCosts c = Costs(pc, 40, 80);
  for (ChunkCost& k : c.costs) k.bwd_weight_us = 30;
  CommSpec comm = Comm();
  comm.p2p_bytes_per_s = 1e6;
  const OpGraph g = MustBuild(pc, "zb-h1", c, {Uniform(3, 30), Uniform(2, 20)}, comm);
  int reduce = 0;
  for (const Op& op : g.ops) reduce += op.kind == OpKind::kDpCollective && op.buckets > 0;
  EXPECT_EQ(reduce, 2 * (3 + 2));
  EXPECT_GT(EvaluateAnalytic(g).iteration_time_us, 0);
}

}  // namespace
}  // namespace mmtwin

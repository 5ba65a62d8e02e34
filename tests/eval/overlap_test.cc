// SPDX-License-Identifier: Apache-2.0
// Compute slowed by overlapped collectives (core/eval/overlap.h): the overlap against a brute-force union of
// intervals, the stretch as its fixed point, and what it leaves alone.
#include "core/eval/overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/util/rng.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

using fixtures::MustBuild;
using fixtures::Pc;
using fixtures::Statics;

IterationCosts Random(const ParallelConfig& pc, uint64_t seed) {
  Rng rng(seed);
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (auto& k : c.costs) {
    k.fwd_us = rng.Uniform(5, 20);
    k.bwd_us = k.fwd_us * rng.Uniform(1.5, 2.5);
    k.tp_fwd_us = pc.tp > 1 ? rng.Uniform(0.5, 2) : 0;  // TP collectives on the compute lane: never stretched
    k.tp_bwd_us = pc.tp > 1 ? rng.Uniform(0.5, 2) : 0;
    k.send_bytes = static_cast<int64_t>(rng.Below(1 << 16));
  }
  return c;
}

CommSpec SlowDp() {
  CommSpec comm;
  comm.dp_bytes_per_s = 1e6;  // 1 byte/us: collectives of the order of the compute
  comm.dp_latency_us = 1;
  comm.dp_bucket_bytes = 8;
  comm.p2p_bytes_per_s = 1e9;
  return comm;
}

// Brute force: the measure of [a, b] covered by any of the device's DP / dispatch ops, from all endpoints.
double BruteOverlap(const OpGraph& g, const IterationTiming& t, int i) {
  const double a = t.start_us[i], b = t.finish_us[i];
  std::vector<double> pts = {a, b};
  std::vector<std::pair<double, double>> iv;
  for (int j = 0; j < g.num_ops(); ++j)
    if (g.ops[j].device == g.ops[i].device &&
        (g.ops[j].lane == Lane::kDp || g.ops[j].lane == Lane::kDispatch)) {
      iv.push_back({t.start_us[j], t.finish_us[j]});
      pts.push_back(std::clamp(t.start_us[j], a, b));
      pts.push_back(std::clamp(t.finish_us[j], a, b));
    }
  std::sort(pts.begin(), pts.end());
  double o = 0;
  for (size_t k = 0; k + 1 < pts.size(); ++k) {
    const double mid = (pts[k] + pts[k + 1]) / 2;
    for (const auto& [s, e] : iv)
      if (s < mid && mid < e) {
        o += pts[k + 1] - pts[k];
        break;
      }
  }
  return o;
}

TEST(OverlapTest, OverlapIsTheMeasureOfTheUnionOfTheDevicesCollectives) {
  for (int zero : {0, 2, 3})
    for (const char* sched : {"gpipe", "1f1b"}) {
      const ParallelConfig pc = Pc(2, 2, 1, 4, zero, /*tp=*/2);
      const OpGraph g = MustBuild(pc, sched, Random(pc, 7 + zero), Statics(2, 64), SlowDp());
      const IterationTiming t = EvaluateAnalytic(g);
      const std::vector<double> o = CollectiveOverlapUs(g, t);
      double total = 0;
      for (int i = 0; i < g.num_ops(); ++i) {
        if (g.ops[i].lane != Lane::kCompute || g.ops[i].kind == OpKind::kTpCollective) {
          EXPECT_EQ(o[i], 0);
          continue;
        }
        EXPECT_NEAR(o[i], BruteOverlap(g, t, i), 1e-9) << sched << " zero " << zero << ": " << g.Describe(i);
        total += o[i];
      }
      EXPECT_GT(total, 0) << sched << " zero " << zero << ": the collectives overlap some compute";
    }
}

TEST(OverlapTest, StretchIsTheFixedPointAndGrowsWithTheSlowdown) {
  const ParallelConfig pc = Pc(2, 2, 1, 4, 3, /*tp=*/2);
  const OpGraph g0 = MustBuild(pc, "1f1b", Random(pc, 3), Statics(2, 64), SlowDp());
  int tp_ops = 0;
  for (const Op& op : g0.ops) tp_ops += op.kind == OpKind::kTpCollective;
  ASSERT_GT(tp_ops, 0);
  const double t0 = EvaluateAnalytic(g0).iteration_time_us;
  double prev = t0;
  for (double s : {0.1, 0.189, 0.5}) {
    OpGraph g = g0;
    IterationTiming scratch;
    const double added = ApplyOverlapSlowdown(g, s, &scratch, /*passes=*/12);
    EXPECT_GT(added, 0);
    // Fixed point: every compute op lasts its base plus s / (1 + s) of its overlap under its own timing.
    const IterationTiming t = EvaluateAnalytic(g);
    const std::vector<double> o = CollectiveOverlapUs(g, t);
    for (int i = 0; i < g.num_ops(); ++i) {
      if (g.ops[i].lane != Lane::kCompute || g.ops[i].kind == OpKind::kTpCollective) {
        EXPECT_EQ(g.duration_us[i], g0.duration_us[i]);  // communication keeps its time
        continue;
      }
      EXPECT_NEAR(g.duration_us[i], g0.duration_us[i] + o[i] * s / (1 + s), 1e-6 * t.iteration_time_us)
          << g.Describe(i);
      EXPECT_EQ(g.ops[i].duration_us, g.duration_us[i]);
    }
    EXPECT_GE(t.iteration_time_us, prev);
    prev = t.iteration_time_us;
    // Two passes (the driver's default) land within 1% of the fixed point's iteration time here.
    OpGraph g2 = g0;
    ApplyOverlapSlowdown(g2, s, &scratch);
    EXPECT_NEAR(EvaluateAnalytic(g2).iteration_time_us, t.iteration_time_us, 0.01 * t.iteration_time_us) << s;
  }
  EXPECT_GT(prev, t0);
}

TEST(OverlapTest, NothingToSlowWithoutCollectivesOrSlowdown) {
  const ParallelConfig one = Pc(1, 2, 1, 4);  // no DP: no collectives
  OpGraph g = MustBuild(one, "1f1b", Random(one, 1), Statics(2, 64), SlowDp());
  const std::vector<double> before = g.duration_us;
  IterationTiming scratch;
  EXPECT_EQ(ApplyOverlapSlowdown(g, 0.189, &scratch), 0);
  EXPECT_EQ(g.duration_us, before);
  const ParallelConfig pc = Pc(2, 2, 1, 4, 3);
  OpGraph h = MustBuild(pc, "1f1b", Random(pc, 1), Statics(2, 64), SlowDp());
  const std::vector<double> hb = h.duration_us;
  EXPECT_EQ(ApplyOverlapSlowdown(h, 0, &scratch), 0);
  EXPECT_EQ(h.duration_us, hb);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// A split backward (zero-bubble schedules: B = input gradient, W = weight gradient, PassKind::kBackwardInput /
// kBackwardWeight) is expressible in the plan and the op graph. Oracle: a hand-written ZB-H1-style order on
// pp = 2, M = 2, timed by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/schedule.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

using fixtures::Pc;
using fixtures::Statics;

PipeOp F(int m, int c) { return {PassKind::kForward, m, c}; }
PipeOp B(int m, int c) { return {PassKind::kBackwardInput, m, c}; }
PipeOp W(int m, int c) { return {PassKind::kBackwardWeight, m, c}; }
PipeOp Full(int m, int c) { return {PassKind::kBackward, m, c}; }

Schedule Hand(std::vector<std::vector<PipeOp>> per_rank) {
  Schedule s;
  s.name = "zb-hand";
  s.pp = static_cast<int>(per_rank.size());
  s.vpp = 1;
  s.micro_batches = 2;
  s.per_rank = std::move(per_rank);
  return s;
}

IterationCosts Costs(const ParallelConfig& pc) {
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (ChunkCost& k : c.costs) {
    k.fwd_us = 10;
    k.bwd_us = 20;
    k.bwd_weight_us = 8;  // B = 12, W = 8
    k.act_bytes = 100;
  }
  return c;
}

TEST(ZeroBubbleTest, SplitBackwardTimesByHand) {
  const ParallelConfig pc = Pc(/*dp=*/1, /*pp=*/2, /*vpp=*/1, /*m=*/2);
  // rank 0 (chunk 0): F0 F1 B0 W0 B1 W1; rank 1 (chunk 1): F0 B0 F1 B1 W0 W1 (weight gradients deferred).
  const Schedule zb = Hand({{F(0, 0), F(1, 0), B(0, 0), W(0, 0), B(1, 0), W(1, 0)},
                            {F(0, 1), B(0, 1), F(1, 1), B(1, 1), W(0, 1), W(1, 1)}});
  ASSERT_TRUE(ValidateSchedule(zb).ok()) << ValidateSchedule(zb).error().message();
  CommSpec comm;  // no link costs: no P2P ops, dp = 1: no DP ops
  auto g = BuildIterationGraph(pc, zb, Costs(pc), Statics(2, 0), comm);
  ASSERT_TRUE(g.ok()) << g.error().message();
  int weights = 0;
  for (const Op& op : g->ops) weights += op.kind == OpKind::kBackwardWeight;
  EXPECT_EQ(weights, 4);
  // By hand: rank 1 runs F0 10-20, B0 20-32, F1 32-42, B1 42-54, W0 54-62, W1 62-70; rank 0 runs F0 0-10,
  // F1 10-20, B0 32-44 (after rank 1's B0), W0 44-52, B1 54-66 (after rank 1's B1), W1 66-74.
  const IterationTiming t = EvaluateAnalytic(*g);
  EXPECT_DOUBLE_EQ(t.iteration_time_us, 74);
  // The same order with whole backwards (1F1B-like) is slower: rank 0's B1 ends at 90.
  const Schedule whole =
      Hand({{F(0, 0), F(1, 0), Full(0, 0), Full(1, 0)}, {F(0, 1), Full(0, 1), F(1, 1), Full(1, 1)}});
  auto g2 = BuildIterationGraph(pc, whole, Costs(pc), Statics(2, 0), comm);
  ASSERT_TRUE(g2.ok()) << g2.error().message();
  EXPECT_DOUBLE_EQ(EvaluateAnalytic(*g2).iteration_time_us, 90);
  // Activations stay until W: rank 1 holds both micro-batches after F1 (B0 ran, W0 not yet).
  EXPECT_EQ(MaxInFlight(zb), (std::vector<int>{2, 2}));
  EXPECT_EQ(MaxInFlight(whole), (std::vector<int>{2, 1}));
}

TEST(ZeroBubbleTest, DpGradientsWaitForTheLastWeightGradient) {
  const ParallelConfig pc = Pc(/*dp=*/2, /*pp=*/2, /*vpp=*/1, /*m=*/2, /*zero=*/0);
  const Schedule zb = Hand({{F(0, 0), F(1, 0), B(0, 0), W(0, 0), B(1, 0), W(1, 0)},
                            {F(0, 1), B(0, 1), F(1, 1), B(1, 1), W(0, 1), W(1, 1)}});
  CommSpec comm;
  comm.dp_bytes_per_s = 1e9;
  comm.dp_latency_us = 1;
  auto g = BuildIterationGraph(pc, zb, Costs(pc), Statics(2, 1 << 20), comm);
  ASSERT_TRUE(g.ok()) << g.error().message();
  const IterationTiming t = EvaluateAnalytic(*g);
  // Every gradient bucket of a chunk starts after that chunk's last W on every replica.
  for (int i = 0; i < g->num_ops(); ++i) {
    if (g->ops[i].kind != OpKind::kDpCollective) continue;
    for (int j = 0; j < g->num_ops(); ++j)
      if (g->ops[j].kind == OpKind::kBackwardWeight && g->ops[j].chunk == g->ops[i].chunk) {
        EXPECT_GE(t.start_us[i], t.finish_us[j] - 1e-9) << g->Describe(i) << " vs " << g->Describe(j);
      }
  }
}

// Every rank's idle time inside [0, makespan] and inside [its first start, its last finish] when each chunk
// costs F forward, B input gradient and W weight gradient on free links.
struct Idle {
  double makespan_us = 0;
  std::vector<double> bubble_us;       // makespan - busy, per rank
  std::vector<double> span_bubble_us;  // (last finish - first start) - busy, per rank
};
Idle TimeUniform(const std::string& name, int pp, int m, double f, double b, double w) {
  const ParallelConfig pc = Pc(/*dp=*/1, pp, /*vpp=*/1, m);
  IterationCosts c;
  c.Resize(1, m, pp);
  for (ChunkCost& k : c.costs) {
    k.fwd_us = f;
    k.bwd_us = b + w;
    k.bwd_weight_us = w;
  }
  const OpGraph g = fixtures::MustBuild(pc, name, c, Statics(pp, 0), CommSpec{});
  const IterationTiming t = EvaluateAnalytic(g);
  Idle out;
  out.makespan_us = t.iteration_time_us;
  for (int r = 0; r < pp; ++r) {
    double first = 1e300, last = 0, busy = 0;
    for (int i = 0; i < g.num_ops(); ++i) {
      if (g.ops[i].device != r) continue;
      first = std::min(first, t.start_us[i]);
      last = std::max(last, t.finish_us[i]);
      busy += t.finish_us[i] - t.start_us[i];
    }
    EXPECT_NEAR(busy, m * (f + b + w), 1e-9);
    out.bubble_us.push_back(t.iteration_time_us - busy);
    out.span_bubble_us.push_back(last - first - busy);
  }
  return out;
}

// Qi et al. 2024, Table 2: 1F1B's bubble (p-1)(F+B+W), ZB-H1's (p-1)(F+B-W), on every rank; ZB-H1 holds at
// most p micro-batches (1F1B's peak), every rank.
TEST(ZeroBubbleTest, ZbH1BubbleIsItsClosedForm) {
  for (int pp : {2, 3, 4, 8})
    for (int m : {pp, 2 * pp, 3 * pp + 1})
      for (double w : {10.0, 5.0, 2.5, 0.0}) {
        SCOPED_TRACE("pp " + std::to_string(pp) + " M " + std::to_string(m) + " W " + std::to_string(w));
        const double f = 10, b = 10;
        const Idle zb = TimeUniform("zb-h1", pp, m, f, b, w);
        const Idle ref = TimeUniform("1f1b", pp, m, f, b + w, 0);
        for (int r = 0; r < pp; ++r) {
          EXPECT_NEAR(zb.bubble_us[r], (pp - 1) * (f + b - w), 1e-9) << "rank " << r;
          EXPECT_NEAR(ref.bubble_us[r], (pp - 1) * (f + b + w), 1e-9) << "rank " << r;
        }
        auto s = BuildSchedule("zb-h1", pp, 1, m);
        ASSERT_TRUE(s.ok());
        EXPECT_TRUE(ValidateSchedule(*s).ok());
        EXPECT_EQ(MaxInFlight(*s), std::vector<int>(pp, std::min(pp, m)));
      }
}

// ZB-H2: with M >= 2p-1 rank 0 idles (p-1)(F+B-2W) between its first and last op (zero when F+B = 2W), the
// other ranks no more; it holds at most 2p-1 micro-batches (rank 0 exactly); it never does worse than ZB-H1's makespan.
TEST(ZeroBubbleTest, ZbH2IdleInsideEachRankIsItsClosedForm) {
  for (int pp : {2, 3, 4, 8})
    for (int m : {2 * pp - 1, 2 * pp, 4 * pp})
      for (double w : {10.0, 7.5, 5.0}) {
        SCOPED_TRACE("pp " + std::to_string(pp) + " M " + std::to_string(m) + " W " + std::to_string(w));
        const double f = 10, b = 10;
        const Idle zb = TimeUniform("zb-h2", pp, m, f, b, w);
        // Rank 0's span is the longest (the period of back-to-back iterations with post-validation).
        EXPECT_NEAR(zb.span_bubble_us[0], (pp - 1) * (f + b - 2 * w), 1e-9);
        for (int r = 1; r < pp; ++r) EXPECT_LE(zb.span_bubble_us[r], zb.span_bubble_us[0] + 1e-9) << r;
        EXPECT_LE(zb.makespan_us, TimeUniform("zb-h1", pp, m, f, b, w).makespan_us + 1e-9);
        auto s = BuildSchedule("zb-h2", pp, 1, m);
        ASSERT_TRUE(s.ok());
        EXPECT_TRUE(ValidateSchedule(*s).ok());
        const std::vector<int> held = MaxInFlight(*s);
        EXPECT_EQ(held[0], 2 * pp - 1);
        for (int h : held) EXPECT_LE(h, 2 * pp - 1);
      }
  // Fewer micro-batches still give valid schedules.
  for (int m = 1; m < 8; ++m) {
    auto s = BuildSchedule("zb-h2", 4, 1, m);
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(ValidateSchedule(*s).ok()) << m;
  }
  auto bad = BuildSchedule("zb-h1", 4, 2, 8);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("vpp must be 1"), std::string::npos);
}

TEST(ZeroBubbleTest, InvalidSplitsAreRejected) {
  auto msg = [](const Schedule& s) {
    const Status st = ValidateSchedule(s);
    return st.ok() ? std::string("ok") : st.error().message();
  };
  EXPECT_NE(msg(Hand({{F(0, 0), F(1, 0), W(0, 0), B(0, 0), B(1, 0), W(1, 0)}}))
                .find("weight gradient before its input"),
            std::string::npos);
  EXPECT_NE(
      msg(Hand({{F(0, 0), F(1, 0), B(0, 0), B(1, 0), W(1, 0)}})).find("missing its weight-gradient backward"),
      std::string::npos);
  EXPECT_NE(msg(Hand({{F(0, 0), F(1, 0), Full(0, 0), W(0, 0), Full(1, 0)}})).find("duplicate backward"),
            std::string::npos);
}

}  // namespace
}  // namespace mmtwin

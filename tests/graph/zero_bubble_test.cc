// A split backward (zero-bubble schedules: B = input gradient, W = weight gradient, PassKind::kBackwardInput /
// kBackwardWeight) is expressible in the plan and the op graph. Oracle: a hand-written ZB-H1-style order on
// pp = 2, M = 2, timed by hand.
#include <gtest/gtest.h>

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

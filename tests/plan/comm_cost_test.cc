// SPDX-License-Identifier: Apache-2.0
// The communication-cost interface (core/plan/comm_cost.h): the analytic model's closed forms, a measured table
// that reproduces them exactly when it holds the layout's own links, and a table that changes one kind of
// collective changing exactly those ops.
#include "core/plan/comm_cost.h"

#include <gtest/gtest.h>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

CommSpec Links() {
  CommSpec c;
  c.p2p_bytes_per_s = 50e9;
  c.p2p_latency_us = 3;
  c.dp_bytes_per_s = 25e9;
  c.dp_latency_us = 7;
  c.gpus_per_node = 8;
  c.nvlink_bytes_per_s = 200e9;
  c.nvlink_latency_us = 2;
  c.nic_bytes_per_s = 12.5e9;
  c.nic_latency_us = 9;
  return c;
}

TEST(CommCostTest, AnalyticClosedForms) {
  const AnalyticCommCost a(Links());
  const int64_t b = 100'000'000;
  // A pipeline hop on its own link: NVLink inside a node, the NIC across (the layout is known: gpus_per_node).
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kP2p, b, 2, true}), 2 + b / 200e9 * 1e6);
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kP2p, b, 2, false}), 9 + b / 12.5e9 * 1e6);
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kP2p, 0, 2, true}), 2);
  // Without the layout, the one pipeline link of the CommSpec (p2p_*).
  CommSpec no_layout = Links();
  no_layout.gpus_per_node = 0;
  EXPECT_DOUBLE_EQ(AnalyticCommCost(no_layout).Us({CommKind::kP2p, b}), 3 + b / 50e9 * 1e6);
  EXPECT_DOUBLE_EQ(AnalyticCommCost(no_layout).Us({CommKind::kP2p, 0}), 3);
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kDispatch, b, 2, true}), 2 + b / 200e9 * 1e6);
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kDispatch, b, 2, false}), 9 + b / 12.5e9 * 1e6);
  // Rings over d = 4: frac 3/4.
  const double vol = 0.75 * b / 25e9 * 1e6;
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kAllReduce, b, 4}), 2 * vol + 2 * 3 * 7);
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kReduceScatterAllGather, b, 4}), 2 * (vol + 3 * 7));
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kReduceScatter, b, 4}), vol + 3 * 7);
  EXPECT_DOUBLE_EQ(a.Us({CommKind::kWeightAllGather, b, 4, true, 5}), 5 * 3 * 7 + vol);
}

// Gradients reduced in fp32 (parallel.grad_reduce_dtype fp32: CommSpec::grad_reduce_bytes_scale 2): the
// reducing collectives move twice the bytes, ZeRO-1/2's all-gather of the updated weights and ZeRO-3's weight
// all-gathers do not; the latency terms are unchanged. Ring closed forms, the NCCL model (a reduce-scatter of
// 2b plus an all-gather of b), and a measured table row, which scales the same way.
TEST(CommCostTest, Fp32GradientReductionDoublesOnlyTheReducingBytes) {
  CommSpec fp32 = Links();
  fp32.grad_reduce_bytes_scale = 2.0;
  const AnalyticCommCost a(Links()), f(fp32);
  const int64_t b = 100'000'000;
  const double vol = 0.75 * b / 25e9 * 1e6;
  EXPECT_DOUBLE_EQ(f.Us({CommKind::kAllReduce, b, 4}), 2 * 2 * vol + 2 * 3 * 7);
  EXPECT_DOUBLE_EQ(f.Us({CommKind::kReduceScatter, b, 4}), 2 * vol + 3 * 7);
  EXPECT_DOUBLE_EQ(f.Us({CommKind::kReduceScatterAllGather, b, 4}), 2 * vol + vol + 2 * 3 * 7);
  EXPECT_DOUBLE_EQ(f.Us({CommKind::kWeightAllGather, b, 4, true, 5}),
                   a.Us({CommKind::kWeightAllGather, b, 4, true, 5}));
  EXPECT_DOUBLE_EQ(f.Us({CommKind::kP2p, b, 2, false}), a.Us({CommKind::kP2p, b, 2, false}));
  const CommTime split = f.Time({CommKind::kReduceScatterAllGather, b, 4});
  EXPECT_EQ(split.steps, 2 * 3);
  EXPECT_DOUBLE_EQ(split.volume_us, 3 * vol);
  // NCCL's model: the scaled call is the unscaled model's reduce-scatter of 2b plus its all-gather of b.
  CommSpec nccl = Links();
  nccl.collectives.model = "nccl";
  CommSpec nccl32 = nccl;
  nccl32.grad_reduce_bytes_scale = 2.0;
  const AnalyticCommCost n(nccl), n32(nccl32);
  EXPECT_NEAR(
      n32.Us({CommKind::kReduceScatterAllGather, b, 16, false}),
      n.Us({CommKind::kReduceScatter, 2 * b, 16, false}) + n.Us({CommKind::kWeightAllGather, b, 16, false}),
      1e-6);
  EXPECT_NEAR(n32.Us({CommKind::kAllReduce, b, 16, false}), n.Us({CommKind::kAllReduce, 2 * b, 16, false}),
              1e-6);
  EXPECT_GT(n32.Us({CommKind::kAllReduce, b, 16, false}), n.Us({CommKind::kAllReduce, b, 16, false}));
  // A table row is scaled like the analytic shapes.
  auto t = TableCommCost::Parse("kind,link,latency_us,bytes_per_s\nreduce_scatter_all_gather,nvlink,5,1e10\n",
                                "t.csv", f);
  ASSERT_TRUE(t.ok()) << t.error().message();
  const double tvol = 0.75 * b / 1e10 * 1e6;
  EXPECT_DOUBLE_EQ(t->Us({CommKind::kReduceScatterAllGather, b, 4, true}), 3 * tvol + 2 * 3 * 5);
}

TEST(CommCostTest, TableParsesFormatsAndNamesErrors) {
  auto t = TableCommCost::Parse(
      "# mmtwin-comm-costs "
      "v1\nkind,link,latency_us,bytes_per_s\nall_reduce,nic,12,1.8e10\np2p,nvlink,1.5,3e11\n",
      "t.csv", AnalyticCommCost(Links()));
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_NE(t->Find(CommKind::kAllReduce, false), nullptr);
  EXPECT_EQ(t->Find(CommKind::kAllReduce, true), nullptr);
  auto back = TableCommCost::Parse(t->Format(), "t2.csv", AnalyticCommCost(Links()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->Format(), t->Format());
  // Rows that are absent fall back to the analytic model.
  EXPECT_DOUBLE_EQ(t->Us({CommKind::kReduceScatter, 1000, 4}),
                   AnalyticCommCost(Links()).Us({CommKind::kReduceScatter, 1000, 4}));
  EXPECT_DOUBLE_EQ(t->Us({CommKind::kAllReduce, 1000, 2, false}), 2 * (0.5 * 1000 / 1.8e10 * 1e6) + 2 * 12);
  const std::pair<std::string, std::string> bad[] = {
      {"kind,link,latency_us,bytes_per_s\nbroadcast,nic,1,1e9\n", "t.csv:2: kind: 'broadcast' is not one of"},
      {"kind,link,latency_us,bytes_per_s\np2p,pcie,1,1e9\n", "t.csv:2: link: 'pcie' is not nvlink or nic"},
      {"kind,link,latency_us,bytes_per_s\np2p,nic,-1,1e9\n",
       "t.csv:2: latency_us: '-1' is not a number >= 0"},
      {"kind,link,latency_us,bytes_per_s\np2p,nic,1,0\n", "t.csv:2: bytes_per_s: '0' is not a number > 0"},
      {"kind,link,latency_us,bytes_per_s\np2p,nic,1,1e9\np2p,nic,2,1e9\n",
       "t.csv:3: duplicate row for p2p,nic"},
      {"a,b\n", "t.csv:1: expected the header"},
  };
  for (const auto& [text, want] : bad) {
    auto r = TableCommCost::Parse(text, "t.csv", AnalyticCommCost(Links()));
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.error().message().find(want), std::string::npos) << r.error().message();
  }
}

// A graph with P2P sends, ZeRO-1 gradient rings across 3 replicas (NIC: tp * dp > gpus_per_node) and 2 stages.
OpGraph Build(std::shared_ptr<const CommCostModel> model) {
  ParallelConfig pc = fixtures::Pc(/*dp=*/3, /*pp=*/2, /*vpp=*/1, /*m=*/4, /*zero=*/1, /*tp=*/4);
  IterationCosts costs;
  costs.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (ChunkCost& k : costs.costs) {
    k.fwd_us = 100;
    k.bwd_us = 200;
    k.send_bytes = 8 << 20;
  }
  return fixtures::MustBuild(pc, "1f1b", costs, fixtures::Statics(2, 96 << 20), Links(), std::move(model));
}

TEST(CommCostTest, TableWithTheLayoutsLinksReproducesTheAnalyticGraph) {
  const OpGraph base = Build(nullptr);
  auto same = std::make_shared<TableCommCost>(AnalyticCommCost(Links()));
  for (CommKind k : {CommKind::kAllReduce, CommKind::kReduceScatterAllGather, CommKind::kReduceScatter})
    same->Set(k, false, {Links().dp_latency_us, Links().dp_bytes_per_s});
  same->Set(CommKind::kP2p, true, {Links().p2p_latency_us, Links().p2p_bytes_per_s});
  const OpGraph g = Build(same);
  ASSERT_EQ(g.num_ops(), base.num_ops());
  for (int i = 0; i < g.num_ops(); ++i)
    EXPECT_DOUBLE_EQ(g.duration_us[i], base.duration_us[i]) << g.Describe(i);
  EXPECT_DOUBLE_EQ(EvaluateAnalytic(g).iteration_time_us, EvaluateAnalytic(base).iteration_time_us);
}

TEST(CommCostTest, AMeasuredCollectiveChangesExactlyItsOps) {
  const OpGraph base = Build(nullptr);
  auto slow = std::make_shared<TableCommCost>(AnalyticCommCost(Links()));
  slow->Set(CommKind::kReduceScatterAllGather, false, {50.0, 5e9});  // ZeRO-1 buckets over the NIC
  const OpGraph g = Build(slow);
  int changed = 0;
  for (int i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.ops[i];
    if (op.kind == OpKind::kDpCollective) {
      ++changed;
      // The op's buckets, each priced by the table: the bytes' time and 2 ring latencies per bucket and pass.
      const double expect = 2 * (2.0 / 3 * op.bytes / 5e9 * 1e6 + 2 * 50.0 * op.buckets);
      EXPECT_NEAR(g.duration_us[i], expect, 1e-9 * expect) << g.Describe(i);
    } else {
      EXPECT_DOUBLE_EQ(g.duration_us[i], base.duration_us[i]) << g.Describe(i);
    }
  }
  EXPECT_GT(changed, 0);
  EXPECT_GT(EvaluateAnalytic(g).iteration_time_us, EvaluateAnalytic(base).iteration_time_us);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The encoders outside the pipeline (policies.encoder bubbles; core/plan/encoder.h, core/graph/op_graph.h): the op
// graph of a hand-placed schedule against a timeline worked by hand, the encoder replicas' gradient
// synchronization against the ring's closed form, the schedule's and the graph's checks, and the bubble
// scheduler on uniform costs: the closed forms (with bubbles, only the first micro-batch's encoder forward and
// the last one's backward are exposed: T = T_llm + e_f + e_b; without a pipeline, all of it:
// T = M (F + B + e_f + e_b)), the best of a brute force over every placement of a small pipeline, a plan the op
// graph never ends after (also for replicas with different data), and its coarse variant never planning shorter.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/comm_cost.h"
#include "core/plan/encoder.h"
#include "core/plan/mesh.h"
#include "core/plan/schedule.h"
#include "core/util/rng.h"
#include "driver/encoder_timeline.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

using fixtures::Pc;

// Every chunk F forward, B backward; every micro-batch's encoder ef forward, eb backward; no bytes sent.
IterationCosts Uniform(const ParallelConfig& pc, double f, double b, double ef, double eb) {
  IterationCosts c;
  c.Resize(pc.dp, pc.micro_batches, pc.chunks());
  for (auto& k : c.costs) {
    k.fwd_us = f;
    k.bwd_us = b;
  }
  c.encoder.assign(static_cast<size_t>(pc.dp) * pc.micro_batches, ChunkCost{});
  for (auto& e : c.encoder) {
    e.fwd_us = ef;
    e.bwd_us = eb;
  }
  return c;
}

CommSpec Comm() {
  CommSpec s;
  s.p2p_bytes_per_s = 1e11;
  s.p2p_latency_us = 0;
  s.dp_bytes_per_s = 1e10;
  s.dp_latency_us = 5;
  s.dp_bucket_bytes = 1 << 20;
  return s;
}

Schedule Sched(const ParallelConfig& pc) {
  auto s = BuildSchedule("1f1b", pc.pp, pc.vpp, pc.micro_batches);
  EXPECT_TRUE(s.ok());
  return *s;
}

int FindOp(const OpGraph& g, OpKind kind, int device, int m) {
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.ops[i].kind == kind && g.ops[i].device == device && g.ops[i].micro_batch == m) return i;
  return -1;
}

// pp 2, M 2, 1F1B, F = B = 10 per chunk; rank 1 runs both encoder forwards (3 each) before its LLM work and
// both backwards (4 each) after it. By hand: EF0 [0,3), EF1 [3,6) on rank 1; rank 0 F0 [3,13), F1 [13,23);
// rank 1 F0 [13,23), B0 [23,33), F1 [33,43), B1 [43,53); rank 0 B0 [33,43), B1 [53,63); EB0 waits for B0 on
// rank 0 (43) and rank 1's lane (53): [53,57); EB1 after B1 on rank 0: [63,67). T = 67 = T_llm 60 + 3 + 4.
TEST(EncoderGraphTest, HandPlacedPassesGiveTheHandTimeline) {
  const ParallelConfig pc = Pc(1, 2, 1, 2);
  Schedule s = Sched(pc);
  s.encoder = {{},
               {{PassKind::kForward, 0, 0},
                {PassKind::kForward, 1, 0},
                {PassKind::kBackward, 0, 4},
                {PassKind::kBackward, 1, 4}}};
  ASSERT_TRUE(ValidateSchedule(s).ok());
  auto g = BuildIterationGraph(pc, s, Uniform(pc, 10, 10, 3, 4), {}, Comm());
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_TRUE(g->encoder);
  const IterationTiming t = EvaluateAnalytic(*g);
  EXPECT_DOUBLE_EQ(t.iteration_time_us, 67);
  const auto start = [&](OpKind k, int dev, int m) {
    const int i = FindOp(*g, k, dev, m);
    EXPECT_GE(i, 0);
    return i < 0 ? -1.0 : t.start_us[i];
  };
  EXPECT_DOUBLE_EQ(start(OpKind::kEncoderForward, 1, 0), 0);
  EXPECT_DOUBLE_EQ(start(OpKind::kEncoderForward, 1, 1), 3);
  EXPECT_DOUBLE_EQ(start(OpKind::kForward, 0, 0), 3);
  EXPECT_DOUBLE_EQ(start(OpKind::kForward, 0, 1), 13);
  EXPECT_DOUBLE_EQ(start(OpKind::kBackward, 0, 0), 33);
  EXPECT_DOUBLE_EQ(start(OpKind::kEncoderBackward, 1, 0), 53);
  EXPECT_DOUBLE_EQ(start(OpKind::kEncoderBackward, 1, 1), 63);
  // The output's send from rank 1 to rank 0 and the gradient's back, each once per micro-batch.
  int sends = 0;
  for (const Op& op : g->ops)
    if ((op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient) && op.chunk < 0) {
      ++sends;
      EXPECT_EQ(op.peer, op.kind == OpKind::kP2pSendActivation ? 0 : 1);
    }
  EXPECT_EQ(sends, 4);
  // A recomputing encoder: its recompute (2) as a recompute op just before each encoder backward, which follows
  // it: R0 [53,55), EB0 [55,59); R1 after B1 on rank 0 (63): [63,65), EB1 [65,69). T = 69.
  IterationCosts rc = Uniform(pc, 10, 10, 3, 4);
  for (ChunkCost& e : rc.encoder) e.recompute_us = 2;
  auto gr = BuildIterationGraph(pc, s, rc, {}, Comm());
  ASSERT_TRUE(gr.ok()) << gr.error().message();
  const IterationTiming tr = EvaluateAnalytic(*gr);
  EXPECT_DOUBLE_EQ(tr.iteration_time_us, 69);
  int recomputes = 0;
  for (int i = 0; i < gr->num_ops(); ++i)
    if (gr->ops[i].kind == OpKind::kRecompute && gr->ops[i].chunk < 0) {
      ++recomputes;
      EXPECT_DOUBLE_EQ(tr.start_us[i], gr->ops[i].micro_batch == 0 ? 53 : 63);
    }
  EXPECT_EQ(recomputes, 2);
  EXPECT_DOUBLE_EQ(tr.devices[1].recompute_us, 4);  // counted as recompute on the encoder's device
  // On rank 0 the encoder needs no send: F0 follows EF0 directly.
  Schedule s0 = Sched(pc);
  s0.encoder = {{{PassKind::kForward, 0, 0},
                 {PassKind::kForward, 1, 0},
                 {PassKind::kBackward, 0, 4},
                 {PassKind::kBackward, 1, 4}},
                {}};
  auto g0 = BuildIterationGraph(pc, s0, Uniform(pc, 10, 10, 3, 4), {}, Comm());
  ASSERT_TRUE(g0.ok()) << g0.error().message();
  for (const Op& op : g0->ops) EXPECT_FALSE(op.chunk < 0 && op.lane != Lane::kCompute) << OpKindName(op.kind);
}

TEST(EncoderGraphTest, TheScheduleChecksItsEncoderPasses) {
  const ParallelConfig pc = Pc(1, 2, 1, 2);
  const Schedule base = Sched(pc);
  auto expect_error = [&](std::vector<std::vector<EncoderPass>> passes, const std::string& what) {
    Schedule s = base;
    s.encoder = std::move(passes);
    const Status st = ValidateSchedule(s);
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_NE(st.error().message().find(what), std::string::npos) << st.error().message();
  };
  const EncoderPass f0{PassKind::kForward, 0, 0}, f1{PassKind::kForward, 1, 0}, b0{PassKind::kBackward, 0, 4},
      b1{PassKind::kBackward, 1, 4};
  expect_error({{f0, f1}}, "expected pp = 2");
  expect_error({{f0, f0, f1}, {}}, "duplicate encoder forward");
  expect_error({{f0}, {}}, "micro-batch 1 has no encoder forward");
  expect_error({{f0, f1, b0}, {}}, "micro-batch 1 has no encoder backward");
  expect_error({{f0, b1}, {f1}}, "not after its forward on the same rank");
  expect_error({{f0, f1, {PassKind::kBackward, 0, 5}, b1}, {}}, "position 5 is not in [0, 4]");
  expect_error({{f0, b0, {PassKind::kForward, 1, 2}}, {}}, "position 2 is not in [4, 4]");
  expect_error({{{PassKind::kBackwardWeight, 0, 0}}, {f1}}, "neither a forward nor a whole backward");
  Schedule ok = base;
  ok.encoder = {{f0, f1}, {}};  // forwards only: an encoder without backward
  EXPECT_TRUE(ValidateSchedule(ok).ok());
}

TEST(EncoderGraphTest, TheGraphRefusesWhatItDoesNotModel) {
  const ParallelConfig pc = Pc(2, 2, 1, 2);
  Schedule s = Sched(pc);
  s.encoder = {{{PassKind::kForward, 0, 0}, {PassKind::kForward, 1, 0}}, {}};
  IterationCosts c = Uniform(pc, 10, 10, 3, 4);
  std::vector<ChunkStatic> statics(3);
  IterationCosts none = c;
  none.encoder.clear();
  EXPECT_FALSE(BuildIterationGraph(pc, s, none, statics, Comm()).ok());
  EXPECT_FALSE(BuildIterationGraph(pc, s, c, std::vector<ChunkStatic>(2), Comm()).ok());  // no encoder static
  ParallelConfig z3 = pc;
  z3.zero_stage = 3;
  EXPECT_FALSE(BuildIterationGraph(z3, s, c, statics, Comm()).ok());
  IterationCosts dispatch = c;
  dispatch.dispatch = {{{0, 1, 100}}};
  EXPECT_FALSE(BuildIterationGraph(pc, s, dispatch, statics, Comm()).ok());
  ParallelConfig sp = Pc(1, 2, 1, 2);
  sp.sp = 2;
  EXPECT_FALSE(BuildIterationGraph(sp, s, c, statics, Comm()).ok());
  EXPECT_TRUE(BuildIterationGraph(pc, s, c, statics, Comm()).ok());
}

// Every device (dp 2 x pp 2) holds an encoder replica: one encoder_grad_sync per device after a barrier of every
// device's last encoder backward, priced as ZeRO-0's ring all-reduce of each 1 MiB bucket over the 4 devices:
// 2 (n - 1) / n * b / bw + 2 (n - 1) lat per bucket.
TEST(EncoderGraphTest, TheEncoderReplicasSynchronizeOverEveryDevice) {
  const ParallelConfig pc = Pc(2, 2, 1, 2);
  Schedule s = Sched(pc);
  s.encoder = {{{PassKind::kForward, 0, 0}, {PassKind::kBackward, 0, 4}},
               {{PassKind::kForward, 1, 0}, {PassKind::kBackward, 1, 4}}};
  std::vector<ChunkStatic> statics(3);
  const int64_t bytes = (5 << 20) / 2;  // 2.5 MiB: two full buckets and a half one
  statics[2].grad_bytes_per_gpu = bytes;
  auto g = BuildIterationGraph(pc, s, Uniform(pc, 10, 10, 3, 4), statics, Comm());
  ASSERT_TRUE(g.ok()) << g.error().message();
  const CommSpec comm = Comm();
  auto ring = [&](double b) {
    return 2.0 * 3 / 4 * b / comm.dp_bytes_per_s * 1e6 + 2.0 * 3 * comm.dp_latency_us;
  };
  const double want = 2 * ring(1 << 20) + ring(bytes - (2 << 20));
  int syncs = 0;
  const IterationTiming t = EvaluateAnalytic(*g);
  double last_encoder_backward = 0;
  for (int i = 0; i < g->num_ops(); ++i)
    if (g->ops[i].kind == OpKind::kEncoderBackward)
      last_encoder_backward = std::max(last_encoder_backward, t.finish_us[i]);
  for (int i = 0; i < g->num_ops(); ++i) {
    const Op& op = g->ops[i];
    if (op.kind != OpKind::kEncoderGradSync) continue;
    ++syncs;
    EXPECT_NEAR(op.duration_us, want, 1e-9);
    EXPECT_EQ(op.bytes, bytes);
    EXPECT_EQ(op.buckets, 3);
    EXPECT_EQ(op.lane, Lane::kDp);
    EXPECT_GE(t.start_us[i], last_encoder_backward - 1e-9);  // the barrier waits for every device
  }
  EXPECT_EQ(syncs, 4);
  // A frozen encoder has no gradients: no synchronization.
  statics[2].grad_bytes_per_gpu = 0;
  auto frozen = BuildIterationGraph(pc, s, Uniform(pc, 10, 10, 3, 4), statics, Comm());
  ASSERT_TRUE(frozen.ok());
  for (const Op& op : frozen->ops) EXPECT_NE(op.kind, OpKind::kEncoderGradSync);
}

// The bubble scheduler on a uniform pipeline, end to end: the LLM-only graph timed, the passes placed, the graph
// with them timed.
struct Placed {
  double llm_us = 0, us = 0;
  EncoderPlacementReport report;
  Schedule schedule;
};
Placed PlaceAndTime(const ParallelConfig& pc, double f, double b, double ef, double eb, bool fine) {
  const IterationCosts costs = Uniform(pc, f, b, ef, eb);
  Placed out;
  out.schedule = Sched(pc);
  auto llm = BuildIterationGraph(pc, out.schedule, costs, {}, Comm());
  EXPECT_TRUE(llm.ok());
  const IterationTiming t = EvaluateAnalytic(*llm);
  out.llm_us = t.iteration_time_us;
  const AnalyticCommCost comm(Comm());
  const EncoderTimeline tl = EncoderTimelineOf(*llm, t, out.schedule, costs, comm, /*backward=*/true);
  EncoderPlacementOptions o;
  o.fine = fine;
  auto passes = PlaceEncoderPasses(out.schedule, tl, o, &out.report);
  EXPECT_TRUE(passes.ok()) << passes.error().message();
  out.schedule.encoder = *passes;
  EXPECT_TRUE(ValidateSchedule(out.schedule).ok());
  auto g = BuildIterationGraph(pc, out.schedule, costs, {}, Comm());
  EXPECT_TRUE(g.ok()) << g.error().message();
  out.us = EvaluateAnalytic(*g).iteration_time_us;
  return out;
}

// While the bubbles hold them, only what no bubble can hold is exposed: the first micro-batch's forward (every
// rank waits for it) and the last one's backward (it follows the pipeline's last op).
TEST(EncoderPlacementTest, UniformPipelineExposesOnlyTheFirstForwardAndTheLastBackward) {
  struct Case {
    int pp, m;
    double ef, eb;
  };
  for (const Case& c : {Case{2, 4, 1, 1}, Case{4, 8, 2, 3}, Case{4, 16, 2, 2}, Case{8, 16, 1.5, 2.5}}) {
    const ParallelConfig pc = Pc(1, c.pp, 1, c.m);
    const double F = 10, B = 20;
    const Placed p = PlaceAndTime(pc, F, B, c.ef, c.eb, /*fine=*/true);
    EXPECT_DOUBLE_EQ(p.llm_us, (c.m + c.pp - 1) * (F + B));  // the 1F1B closed form
    EXPECT_NEAR(p.us, p.llm_us + c.ef + c.eb, 1e-9) << "pp " << c.pp << " M " << c.m;
    EXPECT_NEAR(p.report.shift_us, c.ef, 1e-9);
    // The passes are spread over the ranks (the later ranks have the longer warm-up bubbles).
    std::vector<int> per_rank(c.pp, 0);
    for (int r : p.report.rank_of_micro_batch) ++per_rank[r];
    EXPECT_GT(*std::min_element(per_rank.begin() + 1, per_rank.end()), 0);
    // The coarse fill (warm-up and cool-down bubbles only) holds less: never faster.
    const Placed coarse = PlaceAndTime(pc, F, B, c.ef, c.eb, /*fine=*/false);
    EXPECT_GE(coarse.us, p.us - 1e-9);
  }
}

// Without pipeline bubbles nothing hides: every pass is exposed.
TEST(EncoderPlacementTest, WithoutAPipelineEveryPassIsExposed) {
  for (int m : {1, 3, 8}) {
    const ParallelConfig pc = Pc(1, 1, 1, m);
    const Placed p = PlaceAndTime(pc, 10, 20, 4, 6, /*fine=*/true);
    EXPECT_NEAR(p.us, m * (10 + 20 + 4 + 6), 1e-9) << m;
  }
}

// Brute force over every placement of a small pipeline (pp 2, M 2: each micro-batch's rank, the positions of its
// forward and backward among the rank's four ops and their order): the scheduler finds the best, from encoder
// passes that the bubbles hold to ones longer than the LLM's passes.
TEST(EncoderPlacementTest, FindsTheBestPlacementOfASmallPipeline) {
  const ParallelConfig pc = Pc(1, 2, 1, 2);
  const Schedule base = Sched(pc);
  for (const auto& [ef, eb] : {std::pair{2.0, 3.0}, std::pair{6.0, 9.0}, std::pair{15.0, 25.0}}) {
    const IterationCosts costs = Uniform(pc, 10, 20, ef, eb);
    double best = std::numeric_limits<double>::infinity();
    const int n = 4;  // ops per rank
    // For each micro-batch: rank, forward position, backward position (>= forward's).
    for (int r0 = 0; r0 < 2; ++r0)
      for (int r1 = 0; r1 < 2; ++r1)
        for (int f0 = 0; f0 <= n; ++f0)
          for (int b0 = f0; b0 <= n; ++b0)
            for (int f1 = 0; f1 <= n; ++f1)
              for (int b1 = f1; b1 <= n; ++b1)
                for (int swap = 0; swap < 2; ++swap) {  // the order of passes at one position
                  Schedule s = base;
                  s.encoder.assign(2, {});
                  std::vector<std::pair<int, EncoderPass>> v[2];
                  v[r0].push_back({0, {PassKind::kForward, 0, f0}});
                  v[r0].push_back({0, {PassKind::kBackward, 0, b0}});
                  v[r1].push_back({1, {PassKind::kForward, 1, f1}});
                  v[r1].push_back({1, {PassKind::kBackward, 1, b1}});
                  for (int r = 0; r < 2; ++r) {
                    std::stable_sort(v[r].begin(), v[r].end(), [&](const auto& a, const auto& b) {
                      if (a.second.before != b.second.before) return a.second.before < b.second.before;
                      if (a.first != b.first) return swap ? a.first > b.first : a.first < b.first;
                      return a.second.kind == PassKind::kForward && b.second.kind != PassKind::kForward;
                    });
                    for (const auto& x : v[r]) s.encoder[r].push_back(x.second);
                  }
                  if (!ValidateSchedule(s).ok()) continue;
                  auto g = BuildIterationGraph(pc, s, costs, {}, Comm());
                  if (!g.ok()) continue;  // a cycle: the order contradicts the data flow
                  best = std::min(best, EvaluateAnalytic(*g).iteration_time_us);
                }
    const Placed fine = PlaceAndTime(pc, 10, 20, ef, eb, true);
    const Placed coarse = PlaceAndTime(pc, 10, 20, ef, eb, false);
    EXPECT_NEAR(fine.us, best, 1e-9) << "ef " << ef;  // 95, 105, 130 (LLM alone: 90)
    EXPECT_LE(fine.us, coarse.us + 1e-9) << "ef " << ef;
  }
}

// Encoder passes longer than the bubbles (F 10, B 20 per stage, 4 stages): the fine fill never plans worse than the
// coarse one, and the op graph of any placement never ends after its plan (the plan is one timing of that order,
// the graph's ops start as early as the order allows).
TEST(EncoderPlacementTest, FineIsNeverWorseThanCoarseAndTheGraphKeepsThePlan) {
  for (double ef : {4.0, 8.0, 12.0, 20.0})
    for (int m : {8, 16}) {
      const ParallelConfig pc = Pc(1, 4, 1, m);
      const Placed fine = PlaceAndTime(pc, 10, 20, ef, 1.5 * ef, true);
      const Placed coarse = PlaceAndTime(pc, 10, 20, ef, 1.5 * ef, false);
      EXPECT_LE(fine.report.planned_us, coarse.report.planned_us + 1e-9) << ef << " " << m;
      EXPECT_LE(fine.us, fine.report.planned_us + 1e-9) << ef << " " << m;
      EXPECT_LE(coarse.us, coarse.report.planned_us + 1e-9) << ef << " " << m;
      EXPECT_GE(fine.us, fine.llm_us + ef + 1.5 * ef - 1e-9);  // the structural exposure at least
    }
}

// Random costs on two DP replicas (every chunk, micro-batch and replica its own times; one schedule serves both
// replicas, placed on the union of their busy intervals with each pass's longest time): the graph still never
// ends after the plan.
TEST(EncoderPlacementTest, OneScheduleForReplicasWithDifferentData) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    const ParallelConfig pc = Pc(2, 4, 1, 8);
    IterationCosts costs = Uniform(pc, 0, 0, 0, 0);
    for (auto& k : costs.costs) {
      k.fwd_us = rng.Uniform(5, 15);
      k.bwd_us = 2 * k.fwd_us;
    }
    for (auto& e : costs.encoder) {
      e.fwd_us = rng.Uniform(0, 12);
      e.bwd_us = 1.5 * e.fwd_us;
    }
    for (bool fine : {true, false}) {
      Schedule s = Sched(pc);
      const std::vector<ChunkStatic> chunk_statics(pc.chunks()), all_statics(pc.chunks() + 1);
      auto llm = BuildIterationGraph(pc, s, costs, chunk_statics, Comm());
      ASSERT_TRUE(llm.ok()) << llm.error().message();
      const IterationTiming t = EvaluateAnalytic(*llm);
      const EncoderTimeline tl = EncoderTimelineOf(*llm, t, s, costs, AnalyticCommCost(Comm()), true);
      EncoderPlacementOptions o;
      o.fine = fine;
      EncoderPlacementReport report;
      auto passes = PlaceEncoderPasses(s, tl, o, &report);
      ASSERT_TRUE(passes.ok()) << passes.error().message();
      s.encoder = *passes;
      ASSERT_TRUE(ValidateSchedule(s).ok());
      auto g = BuildIterationGraph(pc, s, costs, all_statics, Comm());
      ASSERT_TRUE(g.ok()) << g.error().message();
      EXPECT_LE(EvaluateAnalytic(*g).iteration_time_us, report.planned_us + 1e-6) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// End-to-end: scenarios built in code through Simulate() and the public planner (BuildPlan).
#include "driver/simulate.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <sstream>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/records/plan_codec.h"
#include "core/records/records_codec.h"
#include "core/trace/generate.h"
#include "driver/planner.h"
#include "scenario/small_scenario.h"

namespace mmtwin {
namespace {

Scenario Small(const std::string& data, const std::string& partition, const std::string& recompute) {
  Scenario s = SmallScenario();
  s.data = {data, {}};
  s.partition = {partition, {}};
  s.recompute = {recompute, {}};
  s.schedule = {"1f1b", {}};
  s.iterations = 6;
  return s;
}

TEST(SimulateTest, SummaryIsConsistentAndDeterministic) {
  const Scenario s = Small("isf", "bmp", "adaptive");
  auto a = Simulate(s, {});
  ASSERT_TRUE(a.ok()) << a.error().message();
  const RunSummary& j = a->summary;
  EXPECT_EQ(j.iterations_replayed, 6);
  EXPECT_EQ(j.source, RecordSource::kSimulated);
  EXPECT_NEAR(j.busy_ratio + j.bubble_ratio + j.idle_ratio + j.exposed_comm_ratio, 1.0, 1e-6);
  EXPECT_GT(j.mfu, 0.05);
  EXPECT_LT(j.mfu, 0.6);  // below the assumed 0.5 matmul efficiency plus slack
  EXPECT_LE(j.iteration_time_us.p50, j.iteration_time_us.p99);
  EXPECT_GT(j.gpu_days, 0);
  ASSERT_EQ(j.stages.size(), 4u);
  EXPECT_EQ(j.stages[0].first_layer, 0);
  auto b = Simulate(s, {});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(SummaryToJson(a->summary), SummaryToJson(b->summary));
  EXPECT_EQ(StagesCsv(a->summary.stages), StagesCsv(b->summary.stages));
  EXPECT_NE(a->trace_json.find("traceEvents"), std::string::npos);
  // The summary codec round-trips.
  auto back = SummaryFromJson(SummaryToJson(j), "summary.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(SummaryToJson(*back), SummaryToJson(j));
  RunSummary overlapped = j;  // parallel.tp_comm_overlap: written only when on, and read back
  EXPECT_EQ(SummaryToJson(j).find("tp_comm_overlap"), std::string::npos);
  overlapped.parallel.tp_comm_overlap = true;
  auto back2 = SummaryFromJson(SummaryToJson(overlapped), "summary.json");
  ASSERT_TRUE(back2.ok()) << back2.error().message();
  EXPECT_TRUE(back2->parallel.tp_comm_overlap);
  // The traced iteration's op records: one per op, with the workload of compute ops.
  ASSERT_FALSE(a->ops.empty());
  int64_t forwards = 0;
  for (const OpRecord& op : a->ops) {
    EXPECT_GE(op.duration_us, 0);
    if (op.kind != OpKind::kForward) continue;
    ++forwards;
    EXPECT_GT(op.tokens, 0);
    EXPECT_GT(op.spans, 0);
    EXPECT_GE(op.attention_pairs, static_cast<double>(op.tokens));  // sum t(t+1)/2 >= sum t
  }
  EXPECT_EQ(forwards, 2 * 8 * 4);  // dp x micro-batches x chunks
  auto ops_back = ParseOpsCsv(OpsCsv(a->ops), "ops.csv");
  ASSERT_TRUE(ops_back.ok()) << ops_back.error().message();
  EXPECT_EQ(OpsCsv(*ops_back), OpsCsv(a->ops));
  const std::string csv = OpsCsv(a->ops);
  ASSERT_EQ(csv.rfind("# mmtwin-ops v2\n", 0), 0u);
  auto newer = ParseOpsCsv("# mmtwin-ops v3\n" + csv.substr(csv.find('\n') + 1), "ops.csv");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().message(),
            "ops.csv:1: unsupported version 'mmtwin-ops v3' (this mmtwin reads v1 and v2)");
  // v1 (no pass column) still reads: every op's pass follows from its kind.
  std::string v1 = "# mmtwin-ops v1\n";
  std::istringstream rows(csv);
  std::string row;
  std::getline(rows, row);  // version
  while (std::getline(rows, row)) v1 += row.substr(0, row.rfind(',')) + "\n";
  auto old = ParseOpsCsv(v1, "ops.csv");
  ASSERT_TRUE(old.ok()) << old.error().message();
  ASSERT_EQ(old->size(), a->ops.size());
  for (size_t i = 0; i < old->size(); ++i) {
    EXPECT_EQ((*old)[i].start_us, a->ops[i].start_us);
    if (a->ops[i].kind == OpKind::kBackward || a->ops[i].kind == OpKind::kForward) {
      EXPECT_EQ((*old)[i].pass, a->ops[i].pass) << i;
    }
  }
  // A bad pass names its field.
  std::string bad = csv;
  bad.replace(bad.find(",forward\n"), 9, ",sideways\n");
  auto e = ParseOpsCsv(bad, "ops.csv");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("pass: 'sideways' is not valid"), std::string::npos)
      << e.error().message();
}

TEST(SimulateTest, OmniBalBeatsTheBaseline) {
  auto base = Simulate(Small("random", "params", "full"), {});
  auto omni = Simulate(Small("isf", "bmp", "adaptive"), {});
  ASSERT_TRUE(base.ok() && omni.ok());
  EXPECT_LT(omni->summary.epoch_time_s, base->summary.epoch_time_s);
  EXPECT_LT(omni->summary.recompute_ratio, base->summary.recompute_ratio);
}

TEST(SimulateTest, PlanReportsMemoryPerStage) {
  auto p = BuildPlan(Small("isf", "uniform", "none"), {});
  ASSERT_TRUE(p.ok()) << p.error().message();
  const std::vector<PlanStage> stages = PlanStages(*p);
  ASSERT_EQ(stages.size(), 4u);
  for (const PlanStage& st : stages) {
    EXPECT_GT(st.memory.model_state_bytes, 0);
    EXPECT_EQ(st.memory.fits, st.memory.peak_bytes <= st.memory.capacity_bytes);
  }
}

TEST(SimulateTest, ImpossibleConfigurationsAreErrors) {
  Scenario s = Small("isf", "uniform", "none");
  s.parallel.tp = 16;
  auto r = Simulate(s, {});
  ASSERT_FALSE(r.ok());
  // The planner checks with CheckScenario: the message a scenario file gets for the same value.
  EXPECT_EQ(r.error().message(),
            "scenario small: parallel.tp: tensor parallelism stays inside a node: tp 16 > 8 GPUs per node of "
            "cluster 'a100-4x200g'");
  s = Small("isf", "nope", "none");
  r = Simulate(s, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("unknown partition policy 'nope'"), std::string::npos)
      << r.error().message();
  s = Small("isf", "uniform", "none");
  s.parallel.micro_batches = 100000;
  r = Simulate(s, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("fewer than the 100000 micro-batches"), std::string::npos);
}

// The post-balancing dispatch is charged: a post-balance run takes at least as long as the same plan without
// dispatch (micro-batch 0's all-to-all delays the first forward), and the all-gather strawman at least as
// long as the all-to-all. DP 4 x TP 2 x PP 2 on nodes of 4 GPUs: replicas 0-1 and 2-3 share a node.
TEST(SimulateTest, DispatchIsCharged) {
  auto run = [](const std::string& policy, const std::string& dispatch) {
    Scenario s = Small(policy, "params", "full");
    s.parallel.dp = 4;
    s.parallel.pp = 2;
    s.parallel.micro_batches = 4;
    s.iterations = 3;
    s.data.params = {{"batch_size", "4"}, {"dispatch", dispatch}};
    auto r = Simulate(s, {});
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? r->summary.iteration_time_us.mean : 0.0;
  };
  const double none = run("post-balance", "none"), a2a = run("post-balance", "all-to-all"),
               ag = run("post-balance", "all-gather");
  EXPECT_GT(a2a, none);
  EXPECT_GE(ag, a2a);
  const double orch = run("orchestrator", "all-to-all"), orch_none = run("orchestrator", "none"),
               orch_ag = run("orchestrator", "all-gather");
  EXPECT_GT(orch, orch_none);
  EXPECT_GE(orch_ag, orch);
}

// The orchestrator's encoder outputs move to their LLM ranks, so their gradients come back: the plan carries a
// backward all-to-all per micro-batch (the reversed encoder-output moves), the op graph charges it before chunk
// 0's backward, the plan's JSON keeps it, and the iteration is slower than the same plan without it.
TEST(SimulateTest, OrchestratorChargesTheBackwardAllToAll) {
  Scenario s = Small("orchestrator", "params", "full");
  s.parallel.dp = 4;
  s.parallel.pp = 2;
  s.parallel.micro_batches = 4;
  s.iterations = 2;
  s.data.params = {{"batch_size", "4"}, {"dispatch", "all-to-all"}};
  auto r = Simulate(s, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const IterationData& it = r->plan.iterations[0];
  ASSERT_EQ(it.dispatch_backward.size(), 4u);
  int64_t back_bytes = 0;
  for (const auto& list : it.dispatch_backward)
    for (const DispatchTransfer& t : list) back_bytes += t.bytes;
  EXPECT_GT(back_bytes, 0);
  int backward_ops = 0;
  for (const OpRecord& op : r->ops)
    backward_ops += op.kind == OpKind::kDispatch && op.pass == PassKind::kBackward;
  EXPECT_EQ(backward_ops, 4 * 4);  // every micro-batch on every replica
  auto back = PlanFromJson(PlanToJson(r->plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->iterations[0].dispatch_backward, it.dispatch_backward);
  // The same plan without the backward all-to-all is faster.
  auto run = BuildPlan(s, {});
  ASSERT_TRUE(run.ok());
  const Pricer pricer = run->MakePricer();
  IterationCosts with =
      pricer.PriceIteration(it, *run->tokens, run->packing(), r->plan.partition, r->plan.recompute);
  IterationCosts without = with;
  without.dispatch_backward.clear();
  const std::vector<ChunkStatic> statics = pricer.Static(r->plan.partition);
  auto g1 = BuildIterationGraph(r->plan.parallel, r->plan.schedule, with, statics, run->Comm());
  auto g2 = BuildIterationGraph(r->plan.parallel, r->plan.schedule, without, statics, run->Comm());
  ASSERT_TRUE(g1.ok() && g2.ok());
  EXPECT_GT(EvaluateAnalytic(*g1).iteration_time_us, EvaluateAnalytic(*g2).iteration_time_us);
}

// The dispatch's time is reported (summary.json and stages.csv): the mean all-to-all per micro-batch equals the
// mean of the traced iteration's dispatch ops when one iteration is replayed, only stage 0 has it, and the
// exposed share is part of exposed_comm_ratio. Without a dispatch both are 0.
TEST(SimulateTest, DispatchTimeIsReported) {
  Scenario s = Small("post-balance", "params", "full");
  s.parallel.dp = 4;
  s.parallel.pp = 2;
  s.parallel.micro_batches = 4;
  s.iterations = 1;
  s.data.params = {{"batch_size", "4"}, {"dispatch", "all-to-all"}};
  auto r = Simulate(s, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  double sum = 0;
  int n = 0;
  for (const OpRecord& op : r->ops)
    if (op.kind == OpKind::kDispatch) {
      sum += op.duration_us;
      ++n;
    }
  ASSERT_GT(n, 0);
  const RunSummary& j = r->summary;
  EXPECT_NEAR(j.dispatch_us_mean, sum / n, 1e-9 * sum);
  EXPECT_GT(j.exposed_dispatch_ratio, 0);
  EXPECT_LE(j.exposed_dispatch_ratio, j.exposed_comm_ratio + 1e-12);
  ASSERT_EQ(j.stages.size(), 2u);
  EXPECT_NEAR(j.stages[0].dispatch_us_mean, sum / n, 1e-9 * sum);
  EXPECT_EQ(j.stages[1].dispatch_us_mean, 0);
  EXPECT_EQ(j.stages[1].exposed_dispatch_ratio, 0);
  // The stage's exposed share over its own devices is pp times the run's (only stage 0 waits).
  EXPECT_NEAR(j.stages[0].exposed_dispatch_ratio, 2 * j.exposed_dispatch_ratio, 1e-12);
  // Round trip through summary.json, and the CSV columns.
  auto back = SummaryFromJson(SummaryToJson(j), "s.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_DOUBLE_EQ(back->dispatch_us_mean, j.dispatch_us_mean);
  EXPECT_DOUBLE_EQ(back->stages[0].exposed_dispatch_ratio, j.stages[0].exposed_dispatch_ratio);
  EXPECT_NE(StagesCsv(j.stages).find(",dispatch_us_mean,exposed_dispatch_ratio\n"), std::string::npos);
  s.data.params["dispatch"] = "none";
  auto none = Simulate(s, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->summary.dispatch_us_mean, 0);
  EXPECT_EQ(none->summary.exposed_dispatch_ratio, 0);
}

// The summary says whether an if_larger encoder (OrchMLLM) knew the images' sizes: the generated orchmllm-mix
// trace carries them (known, 0 at the upper bound); the same trace without sizes prices every image at the cap
// (upper_bound, all its images counted) and costs more ViT time; half of them sized is mixed. A tiles model
// (InternVL) never reports it, and its summary.json has no such key.
TEST(SimulateTest, SummarySaysWhereImagesWerePricedAtTheUpperBound) {
  Scenario s;
  s.name = "images";
  s.model = "orchmllm-84b";
  s.cluster = "h100-8x400g";
  s.parallel.dp = 8;
  s.parallel.zero_stage = 3;
  s.data = {"random", {{"batch_size", "4"}}};
  s.partition = {"uniform", {}};
  s.recompute = {"full", {}};
  s.schedule = {"1f1b", {}};
  s.iterations = 2;
  Result<Trace> trace = GenerateTrace("orchmllm-mix", 640, 3);
  ASSERT_TRUE(trace.ok()) << trace.error().message();
  int64_t images = 0;
  for (const Sample& x : trace->samples) images += x.images;
  ASSERT_GT(images, 500);
  const std::string dir = ::testing::TempDir() + "images_" + std::to_string(::getpid());
  auto simulate = [&](const Trace& t, const std::string& file) {
    s.trace = {};
    s.trace.file = dir + file;
    EXPECT_TRUE(WriteTrace(t, s.trace.file).ok());
    Result<SimulationResult> r = Simulate(s, {});
    std::remove(s.trace.file.c_str());
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? r->summary : RunSummary{};
  };
  const RunSummary known = simulate(*trace, "known.csv");
  EXPECT_EQ(known.image_sizes, ImageSizes::kKnown);
  EXPECT_EQ(known.images_at_upper_bound, 0);
  Trace unsized = *trace, half = *trace;
  for (Sample& x : unsized.samples) x.image_px = 0;
  int64_t zeroed = 0;
  for (size_t i = 0; i < half.size(); i += 2) {
    zeroed += half.samples[i].images;
    half.samples[i].image_px = 0;
  }
  const RunSummary bound = simulate(unsized, "unsized.csv");
  EXPECT_EQ(bound.image_sizes, ImageSizes::kUpperBound);
  EXPECT_EQ(bound.images_at_upper_bound, images);
  EXPECT_GT(bound.iteration_time_us.mean, known.iteration_time_us.mean);  // COCO-sized images < 896 px
  const RunSummary mixed = simulate(half, "half.csv");
  EXPECT_EQ(mixed.image_sizes, ImageSizes::kMixed);
  EXPECT_EQ(mixed.images_at_upper_bound, zeroed);
  // summary.json carries both fields and reads them back.
  const std::string json = SummaryToJson(mixed);
  EXPECT_NE(json.find("\"image_sizes\": \"mixed\""), std::string::npos);
  auto back = SummaryFromJson(json, "s.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->image_sizes, ImageSizes::kMixed);
  EXPECT_EQ(back->images_at_upper_bound, zeroed);
  // A tiles model: nothing to report, no key written.
  auto ivl = Simulate(Small("isf", "uniform", "none"), {});
  ASSERT_TRUE(ivl.ok()) << ivl.error().message();
  EXPECT_EQ(ivl->summary.image_sizes, ImageSizes::kUnused);
  EXPECT_EQ(SummaryToJson(ivl->summary).find("image_sizes"), std::string::npos);
  EXPECT_EQ(ImageSizesOf(0, 0), ImageSizes::kUnused);
  EXPECT_EQ(ImageSizesOf(5, 5), ImageSizes::kUpperBound);
}

}  // namespace
}  // namespace mmtwin

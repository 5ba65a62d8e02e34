// SPDX-License-Identifier: Apache-2.0
// The public planner (driver/planner.h), the plan's JSON codec (core/records/plan_codec.h), the `cost:`
// scenario key with a CoefficientCostModel from a file, cancellation and CheckScenario (the planner's checker).
#include "driver/planner.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "core/records/plan_codec.h"
#include "core/trace/generate.h"
#include "core/util/csv.h"
#include "driver/simulate.h"
#include "scenario/small_scenario.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

Scenario Small() { return SmallPlannedScenario(); }

TEST(PlannerTest, PlanIsSelfDescribing) {
  const Scenario s = Small();
  auto run = BuildPlan(s, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  const Plan& p = run->plan;
  EXPECT_EQ(p.schema_version, kPlanSchemaVersion);
  EXPECT_EQ(p.scenario, "small");
  EXPECT_EQ(p.model, "internvl-1.5-6b-20b");
  EXPECT_EQ(p.nodes, 2);  // 16 GPUs on 8-GPU nodes
  EXPECT_EQ(p.trace.preset, "internvl-1.2m");
  EXPECT_EQ(p.trace.seed, 7u);
  EXPECT_EQ(p.trace.samples, 6000);
  auto trace = GenerateTrace("internvl-1.2m", 6000, 7);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(p.trace.digest, TraceDigest(*trace));
  auto other = GenerateTrace("internvl-1.2m", 6000, 8);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(p.trace.digest, TraceDigest(*other));
  // Sampled iterations: distinct epoch indices, ascending, inside the epoch.
  ASSERT_EQ(p.iterations.size(), 5u);
  for (size_t i = 0; i < p.iterations.size(); ++i) {
    EXPECT_GE(p.iterations[i].epoch_index, 0);
    EXPECT_LT(p.iterations[i].epoch_index, p.iterations_in_epoch);
    if (i) {
      EXPECT_LT(p.iterations[i - 1].epoch_index, p.iterations[i].epoch_index);
    }
  }
  EXPECT_EQ(p.dp_bucket_bytes, 40ll << 20);
  EXPECT_EQ(run->Comm().dp_bucket_bytes, p.dp_bucket_bytes);
  // The planner is pure: the same scenario gives the same plan; Simulate replays exactly this plan.
  auto again = BuildPlan(s, {});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->plan == p);
  auto sim = Simulate(s, {});
  ASSERT_TRUE(sim.ok()) << sim.error().message();
  EXPECT_TRUE(sim->plan == p);
}

// bmp's pruning (QuickBound: the slowest replicas of the last timing, alone) changes no plan: prune on and off
// give the same plan JSON and the same times for the candidates both time, over data policies, schedules,
// ZeRO stages and seeds; pruning happens on most, and never with dispatch (no bound there).
TEST(PlannerTest, BmpPruningKeepsThePlan) {
  int pruned = 0, runs = 0;
  struct Variant {
    const char* data;
    const char* schedule;
    int vpp, zero, micro_batches;
  };
  const Variant variants[] = {{"isf", "1f1b", 1, 1, 8},
                              {"isf", "interleaved-1f1b", 2, 0, 8},
                              {"isf", "zb-h1", 1, 3, 8},
                              {"random", "1f1b", 1, 2, 16},
                              {"post-balance", "1f1b", 1, 1, 8}};
  for (const Variant& v : variants)
    for (uint64_t seed : {1, 2}) {
      Scenario s = Small();
      s.trace.samples = 12000;
      s.seed = seed;
      s.parallel.dp = 8;
      s.parallel.vpp = v.vpp;
      s.parallel.zero_stage = v.zero;
      s.parallel.micro_batches = v.micro_batches;
      s.schedule = {v.schedule, {}};
      if (std::string(v.data) != "post-balance") s.data = {v.data, {}};
      s.iterations = 4;
      Scenario off = s;
      off.partition = {"bmp", {{"prune", "false"}}};
      auto a = BuildPlan(s, {}), b = BuildPlan(off, {});
      ASSERT_TRUE(a.ok()) << a.error().message();
      ASSERT_TRUE(b.ok()) << b.error().message();
      const std::string what = std::string(v.data) + " " + v.schedule + " seed " + std::to_string(seed);
      EXPECT_EQ(PlanToJson(a->plan), PlanToJson(b->plan)) << what;
      const PartitionReport &pa = a->partition_report, &pb = b->partition_report;
      EXPECT_EQ(pb.pruned, 0);
      EXPECT_EQ(pa.chosen_time_us, pb.chosen_time_us) << what;
      ASSERT_EQ(pa.evaluated.size(), pb.evaluated.size()) << what;
      for (size_t i = 0; i < pa.evaluated.size(); ++i) {
        if (pa.evaluated_pruned[i]) {  // a bound: >= the chosen time, <= the candidate's time
          EXPECT_GE(pa.evaluated_time_us[i], pa.chosen_time_us) << what << " candidate " << i;
          EXPECT_LE(pa.evaluated_time_us[i], pb.evaluated_time_us[i]) << what << " candidate " << i;
        } else {
          EXPECT_EQ(pa.evaluated_time_us[i], pb.evaluated_time_us[i]) << what << " candidate " << i;
        }
      }
      if (std::string(v.data) == "post-balance") {
        EXPECT_EQ(pa.pruned, 0) << what;  // dispatch transfers: no bound
      }
      pruned += static_cast<int>(pa.pruned);
      ++runs;
    }
  EXPECT_EQ(runs, 10);
  EXPECT_GT(pruned, 20);
}

// The dispatcher's own work per micro-batch (issue 28) reaches the plan and survives its JSON: post-balance on
// 8 ranks drawing 6 samples each, micro-batch by micro-batch: the lengths all-gather is 8 ranks x 6 samples x
// 1 phase x 8 bytes, the host time 0.315 us (the default) x 48 samples.
TEST(PlannerTest, DispatchOverheadReachesThePlanAndItsJson) {
  Scenario s = Small();
  s.parallel.dp = 8;
  s.parallel.micro_batches = 2;
  s.data = {"post-balance", {{"batch_size", "6"}}};
  auto run = BuildPlan(s, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  ASSERT_FALSE(run->plan.iterations.empty());
  for (const IterationData& it : run->plan.iterations) {
    ASSERT_EQ(it.dispatch_overhead.size(), 2u);
    for (const DispatchOverhead& o : it.dispatch_overhead) {
      EXPECT_EQ(o.length_gather_bytes, 8 * 6 * 8);
      EXPECT_NEAR(o.host_us, 0.315 * 48, 1e-9);
    }
  }
  auto back = PlanFromJson(PlanToJson(run->plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->iterations, run->plan.iterations);
}

// A sweep's shared preparation (PrepareData) gives the same plan and run as planning from scratch; its key
// ignores what only the later steps read and tells apart what the trace or data policy read.
TEST(PlannerTest, DroppingTheTraceKeepsThePlan) {
  const Scenario s = Small();
  PlanOptions drop;
  drop.keep_trace = false;
  auto a = BuildPlan(s, {}), b = BuildPlan(s, drop);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_NE(a->trace, nullptr);
  EXPECT_EQ(b->trace, nullptr);
  EXPECT_EQ(a->trace_samples, static_cast<int64_t>(a->trace->size()));
  EXPECT_EQ(b->trace_samples, a->trace_samples);
  EXPECT_EQ(PlanToJson(a->plan), PlanToJson(b->plan));
  ASSERT_EQ(a->memory.size(), b->memory.size());
  for (size_t r = 0; r < a->memory.size(); ++r) EXPECT_EQ(a->memory[r].peak_bytes, b->memory[r].peak_bytes);
}

TEST(PlannerTest, APreparedTraceAloneGivesTheSamePlan) {
  // Scenarios that differ in the data plan (the seed, the data policy, the model) but share the trace source use
  // the prepared trace and plan their own data: the plan equals the one built from scratch.
  const Scenario s = Small();
  auto prepared = PrepareData(s);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message();
  PlanOptions with;
  with.prepared = *prepared;
  for (auto change :
       std::vector<std::function<void(Scenario&)>>{[](Scenario& x) { x.seed = 2; },
                                                   [](Scenario& x) {
                                                     x.data = {"isf", {}};
                                                   },
                                                   [](Scenario& x) { x.model = "internvl-1.5-6b-34b"; }}) {
    Scenario x = s;
    change(x);
    ASSERT_NE(PreparedDataKey(x), PreparedDataKey(s));
    ASSERT_EQ(PreparedTraceKey(x), PreparedTraceKey(s));
    auto a = BuildPlan(x, {}), b = BuildPlan(x, with);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(PlanToJson(a->plan), PlanToJson(b->plan));
    EXPECT_EQ(b->trace.get(), (*prepared)->trace.get());  // shared, not copied
    // The tokens too, for the same model (a sweep's runs do not copy the epoch's table).
    EXPECT_EQ(b->tokens.get() == (*prepared)->tokens.get(), x.model == s.model);
    EXPECT_EQ(b->token_counts.truncated_samples, a->token_counts.truncated_samples);
    EXPECT_EQ(b->token_counts.if_larger_images, a->token_counts.if_larger_images);
    ASSERT_EQ(a->tokens->size(), b->tokens->size());
    for (size_t i = 0; i < a->tokens->size(); ++i)
      ASSERT_EQ((*a->tokens)[i].llm_tokens, (*b->tokens)[i].llm_tokens);
    EXPECT_EQ(a->data_metrics.pad_ratio, b->data_metrics.pad_ratio);
  }
  Scenario other = s;
  other.trace.seed = 8;
  EXPECT_NE(PreparedTraceKey(other), PreparedTraceKey(s));
  auto c = BuildPlan(other, with);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->trace.get(), (*prepared)->trace.get());
}

// PrepareData reusing another preparation of the same trace (a sweep's next group of runs with a new data
// plan) makes the same data plan as preparing from scratch, on the shared trace and tokens; a preparation of
// another trace is not reused.
TEST(PlannerTest, PrepareDataReusesTheTraceAndTokensOfAnotherPlan) {
  const Scenario s = Small();
  auto first = PrepareData(s);
  ASSERT_TRUE(first.ok()) << first.error().message();
  Scenario x = s;
  x.data = {"isf", {}};
  ASSERT_NE(PreparedDataKey(x), PreparedDataKey(s));
  auto scratch = PrepareData(x), reused = PrepareData(x, nullptr, first->get());
  ASSERT_TRUE(scratch.ok() && reused.ok());
  const PreparedData &a = **scratch, &b = **reused;
  EXPECT_EQ(b.key, a.key);
  EXPECT_EQ(b.trace.get(), (*first)->trace.get());
  EXPECT_EQ(b.tokens.get(), (*first)->tokens.get());
  EXPECT_NE(a.trace.get(), (*first)->trace.get());
  ASSERT_EQ(a.data.steps.size(), b.data.steps.size());
  for (size_t k = 0; k < a.data.steps.size(); ++k)
    for (size_t r = 0; r < a.data.steps[k].ranks.size(); ++r)
      ASSERT_EQ(a.data.steps[k].ranks[r].samples, b.data.steps[k].ranks[r].samples) << k << " " << r;
  EXPECT_EQ(a.data_metrics.pad_ratio, b.data_metrics.pad_ratio);
  EXPECT_EQ(a.data_metrics.dist_ratio_llm, b.data_metrics.dist_ratio_llm);
  EXPECT_EQ(a.identity.digest, b.identity.digest);
  Scenario other = x;
  other.trace.seed = 8;
  auto fresh = PrepareData(other, nullptr, first->get());
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE((*fresh)->trace.get(), (*first)->trace.get());
  EXPECT_NE((*fresh)->identity.digest, (*first)->identity.digest);
}

TEST(PlannerTest, PreparedDataGivesTheSamePlan) {
  const Scenario s = Small();
  auto prepared = PrepareData(s);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message();
  PlanOptions with;
  with.prepared = *prepared;
  auto a = BuildPlan(s, {}), b = BuildPlan(s, with);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(PlanToJson(a->plan), PlanToJson(b->plan));
  SimulateOptions so;
  so.prepared = *prepared;
  auto ra = Simulate(s, {}), rb = Simulate(s, so);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->summary.iteration_time_us.p50, rb->summary.iteration_time_us.p50);
  EXPECT_EQ(ra->summary.data.pad_ratio, rb->summary.data.pad_ratio);
  // The key: later steps' fields do not change it, the trace's and the data policy's do.
  Scenario later = s;
  later.name = "other";
  later.partition = {"uniform", {}};
  later.recompute = {"full", {}};
  later.parallel.pp = 2;
  later.parallel.micro_batches = 4;
  later.iterations = 3;
  EXPECT_EQ(PreparedDataKey(later), PreparedDataKey(s));
  // ... but a policy that shapes micro-batches for the pipeline (dynapipe) keys on pp and micro_batches.
  Scenario dyn = s, dyn_pp = s, dyn_m = s;
  dyn.data = dyn_pp.data = dyn_m.data = {"dynapipe", {}};
  dyn_pp.parallel.pp = s.parallel.pp * 2;
  dyn_m.parallel.micro_batches = s.parallel.micro_batches + 1;
  EXPECT_NE(PreparedDataKey(dyn_pp), PreparedDataKey(dyn));
  EXPECT_NE(PreparedDataKey(dyn_m), PreparedDataKey(dyn));
  for (auto change : std::vector<std::function<void(Scenario&)>>{
           [](Scenario& x) { x.trace.seed = 8; },
           [](Scenario& x) {
             x.data = {"isf", {}};
           },
           [](Scenario& x) { x.parallel.dp = 4; }, [](Scenario& x) { x.parallel.tp = 1; },
           [](Scenario& x) { x.seed = 2; }, [](Scenario& x) { x.model = "internvl-1.5-6b-34b"; }}) {
    Scenario x = s;
    change(x);
    EXPECT_NE(PreparedDataKey(x), PreparedDataKey(s));
  }
  // A prepared data of another key is ignored: the plan is the other scenario's own.
  Scenario other = s;
  other.trace.seed = 8;
  auto c = BuildPlan(other, with), d = BuildPlan(other, {});
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_EQ(PlanToJson(c->plan), PlanToJson(d->plan));
  EXPECT_NE(c->plan.trace.digest, a->plan.trace.digest);
}

TEST(PlannerTest, PlanJsonRoundTrips) {
  auto run = BuildPlan(Small(), {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  const Plan& p = run->plan;
  bool any_dispatch = false;
  for (const IterationData& it : p.iterations)
    for (const auto& m : it.dispatch) any_dispatch = any_dispatch || !m.empty();
  ASSERT_TRUE(any_dispatch);  // the codec carries transfers too
  const std::string text = PlanToJson(p);
  const fs::path file = fs::path(::testing::TempDir()) / "plan.json";
  ASSERT_TRUE(WriteFileAtomic(file.string(), text).ok());
  auto read = ReadFile(file.string());
  ASSERT_TRUE(read.ok());
  auto back = PlanFromJson(*read, "plan.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(*back == p);
  EXPECT_EQ(PlanToJson(*back), text);
  // parallel.tp_comm_overlap: not written when off (plans read as before), kept when on.
  EXPECT_EQ(text.find("tp_comm_overlap"), std::string::npos);
  Plan q = p;
  q.parallel.tp_comm_overlap = true;
  auto again = PlanFromJson(PlanToJson(q), "plan.json");
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_TRUE(again->parallel.tp_comm_overlap);
  EXPECT_TRUE(*again == q);
}

TEST(PlannerTest, MalformedPlansNameTheField) {
  auto run = BuildPlan(Small(), {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  auto expect_error = [](const Plan& p, const std::string& want) {
    auto r = PlanFromJson(PlanToJson(p), "plan.json");
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.error().message().find(want), std::string::npos) << r.error().message();
  };
  Plan p = run->plan;
  p.iterations[1].micro_batches.pop_back();
  expect_error(p, "plan.json: iterations[1].micro_batches: expected dp = 2 ranks");
  p = run->plan;
  p.iterations[0].micro_batches[0][0].push_back(999999);
  expect_error(p, "sample 999999 is outside the trace's 6000 samples");
  p = run->plan;
  p.schema_version = 99;
  expect_error(p, "plan.json: schema_version: 99 is not supported");
  p = run->plan;
  p.recompute.layers.pop_back();
  expect_error(p, "plan.json: recompute: expected one entry per layer");
  p = run->plan;
  std::swap(p.schedule.per_rank[0][0], p.schedule.per_rank[0][1]);  // backward before its forward... or not
  p.schedule.per_rank[0].push_back(p.schedule.per_rank[0][0]);      // a duplicate op: never valid
  expect_error(p, "plan.json: schedule:");
  auto r = PlanFromJson("[1, 2]", "plan.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "plan.json: not a plan (JSON object expected)");
}

// A CoefficientCostModel loaded through the scenario's `cost:` key prices the run end to end. Oracle: an
// LLM-only model on one GPU (dp = tp = pp = 1: no TP, P2P or DP communication) with constant per-layer times
// c_f and c_b runs M micro-batches back to back, so T = M * L * (c_f + c_b) and each forward is L * c_f.
TEST(PlannerTest, CostKeyLoadsCoefficientsFromAFile) {
  auto model = LoadModel("qwen2-1.5b");
  ASSERT_TRUE(model.ok()) << model.error().message();
  auto cluster = LoadCluster("a100-4x200g", 1);
  ASSERT_TRUE(cluster.ok());
  const double c_f = 100, c_b = 250;
  CoefficientCostModel coeffs{AnalyticCostModel(cluster->device)};
  for (LayerKind k :
       {LayerKind::kEmbedding, LayerKind::kTransformer, LayerKind::kProjector, LayerKind::kHead})
    coeffs.Set("*", k, TimeCoefficients{c_f, 0, 0, c_b, 0, 0});
  const fs::path dir = fs::path(::testing::TempDir()) / "cost_key";
  fs::create_directories(dir);
  ASSERT_TRUE(coeffs.Save((dir / "profile.csv").string()).ok());
  // Through a scenario file: the path resolves against the scenario's folder.
  const std::string yaml =
      "name: coeff\n"
      "trace: {preset: internvl-1.2m, samples: 2000}\n"
      "model: qwen2-1.5b\n"
      "parallel: {dp: 1, tp: 1, pp: 1, micro_batches: 4}\n"
      "policies: {data: {name: random, params: {batch_size: 2}}}\n"
      "iterations: 3\n"
      "cost: profile.csv\n";
  auto s = ParseScenario(yaml, "coeff.yaml", dir.string());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(fs::path(s->cost), dir / "profile.csv");
  auto sim = Simulate(*s, {});
  ASSERT_TRUE(sim.ok()) << sim.error().message();
  const double layers = static_cast<double>(Layers(*model).size());
  // Plus the optimizer step (the preset has a compute curve): every parameter's 34 bytes at dp 1, tp 1, pp 1.
  double params = 0;
  for (const Layer& l : Layers(*model)) params += static_cast<double>(l.params);
  const double step_us = AnalyticCostModel(cluster->device).OptimizerStepUs(params);
  EXPECT_NEAR(step_us, 34 * params / (2.039e12 * 0.85) * 1e6, 1e-6);
  EXPECT_NEAR(sim->summary.iteration_time_us.mean, 4 * layers * (c_f + c_b) + step_us, 1e-6);
  EXPECT_NEAR(sim->summary.iteration_time_us.p99, 4 * layers * (c_f + c_b) + step_us, 1e-6);
  ASSERT_EQ(sim->summary.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(sim->summary.stages[0].fwd_us_mean, layers * c_f);
  EXPECT_DOUBLE_EQ(sim->summary.stages[0].bwd_us_mean, layers * c_b);
  // The analytic model gives another time, so the key did change the pricing.
  Scenario analytic = *s;
  analytic.cost = "analytic";
  auto a = Simulate(analytic, {});
  ASSERT_TRUE(a.ok());
  EXPECT_NE(a->summary.iteration_time_us.mean, sim->summary.iteration_time_us.mean);
  // A cost model handed in directly wins over the key.
  SimulateOptions o;
  o.cost = std::make_shared<AnalyticCostModel>(cluster->device, AnalyticOptions{1});
  auto direct = Simulate(*s, o);
  ASSERT_TRUE(direct.ok());
  EXPECT_DOUBLE_EQ(direct->summary.iteration_time_us.mean, a->summary.iteration_time_us.mean);
  // The resolved scenario keeps the key.
  EXPECT_NE(sim->resolved_yaml.find("cost: " + (dir / "profile.csv").string()), std::string::npos);
  // A profile with a measured optimizer step (an optimizer row: c0 + c x parameters) replaces the HBM estimate.
  const double step_c0_us = 40, step_param_us = 2e-5;
  coeffs.SetOptimizer(step_c0_us, step_param_us);
  ASSERT_TRUE(coeffs.Save((dir / "profile.csv").string()).ok());
  auto measured = Simulate(*s, {});
  ASSERT_TRUE(measured.ok()) << measured.error().message();
  EXPECT_NEAR(measured->summary.iteration_time_us.mean,
              4 * layers * (c_f + c_b) + step_c0_us + step_param_us * params, 1e-6);
}

TEST(PlannerTest, CostFileErrorsNameTheFile) {
  const fs::path dir = fs::path(::testing::TempDir()) / "cost_bad";
  fs::create_directories(dir);
  auto cluster = LoadCluster("a100-4x200g", 1);
  ASSERT_TRUE(cluster.ok());
  CoefficientCostModel only_transformers{AnalyticCostModel(cluster->device)};
  only_transformers.Set("*", LayerKind::kTransformer, TimeCoefficients{1, 0, 0, 2, 0, 0});
  ASSERT_TRUE(only_transformers.Save((dir / "partial.csv").string()).ok());
  Scenario s = Small();
  s.cost = (dir / "partial.csv").string();
  auto r = BuildPlan(s, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("no cost coefficients for layer type"), std::string::npos)
      << r.error().message();
  s.cost = (dir / "missing.csv").string();
  r = BuildPlan(s, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("missing.csv"), std::string::npos) << r.error().message();
}

TEST(PlannerTest, CancellationStopsPlanningAndReplay) {
  std::atomic<bool> cancel{true};
  PlanOptions po;
  po.cancel = &cancel;
  auto r = BuildPlan(Small(), po);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "cancelled");
  SimulateOptions so;
  so.cancel = &cancel;
  auto s = Simulate(Small(), so);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "cancelled");
  // Cancelling from the progress callback stops the replay after the current iteration.
  std::atomic<bool> later{false};
  so.cancel = &later;
  int calls = 0;
  so.progress = [&](double) {
    ++calls;
    later = true;
  };
  s = Simulate(Small(), so);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "cancelled");
  EXPECT_EQ(calls, 1);
}

// parallel.tp_sequence_parallel reaches the cost model: without Megatron SP the LayerNorm and dropout activations
// are replicated over the TP group, so every stage holds more activations, and the norms and residual adds run
// on every token on every TP rank (the compute curve prices their bytes), so no stage is faster. The partition
// is fixed (uniform) so that both plans hold the same layers.
TEST(PlannerTest, TpSequenceParallelChangesActivationMemoryOnly) {
  Scenario sp = Small();
  sp.recompute = {"none", {}};
  sp.partition = {"uniform", {}};
  sp.iterations = 2;
  Scenario no_sp = sp;
  no_sp.parallel.tp_sequence_parallel = false;
  PlanOptions po;
  po.memory_report = true;
  auto a = BuildPlan(sp, po), b = BuildPlan(no_sp, po);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->memory.size(), b->memory.size());
  for (size_t st = 0; st < a->memory.size(); ++st) {
    EXPECT_GT(b->memory[st].peak_activation_bytes, a->memory[st].peak_activation_bytes) << "stage " << st;
    EXPECT_EQ(b->memory[st].model_state_bytes, a->memory[st].model_state_bytes) << "stage " << st;
  }
  ASSERT_EQ(a->stage_fwd_us_mean.size(), b->stage_fwd_us_mean.size());
  for (size_t st = 0; st < a->stage_fwd_us_mean.size(); ++st)
    EXPECT_GT(b->stage_fwd_us_mean[st], a->stage_fwd_us_mean[st]) << "stage " << st;
}

// Every memory check of the plan accounts for the runtime (core/plan/memory.h): the stages' capacity is the
// device's memory and their peak carries the CUDA context, NCCL buffers, workspaces and fragmentation; adaptive
// recompute plans against PlanUsableMemoryBytes (at least as many recomputed layers as with none of the terms).
TEST(PlannerTest, MemoryChecksUseTheUsableDeviceMemory) {
  const std::string preset = std::string(MMTWIN_SOURCE_DIR) + "/traces/clusters/a100-4x200g.yaml";
  std::ifstream in(preset);
  std::stringstream text;
  text << in.rdbuf();
  std::string all_usable;
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);)
    if (line.find("reserved_bytes") == std::string::npos &&
        line.find("workspace_bytes") == std::string::npos &&
        line.find("fragmentation") == std::string::npos && line.find("cuda_context") == std::string::npos &&
        line.find("nccl_") == std::string::npos)
      all_usable += line + "\n";
  const std::string path = ::testing::TempDir() + "/a100-all-usable.yaml";
  std::ofstream(path) << all_usable;
  Scenario tight = Small(), loose = Small();
  loose.cluster = path;
  tight.iterations = loose.iterations = 2;
  PlanOptions po;
  po.memory_report = true;
  auto a = BuildPlan(tight, po), b = BuildPlan(loose, po);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_LT(PlanUsableMemoryBytes(a->cluster.device, a->plan.parallel), 80LL << 30);
  EXPECT_EQ(PlanUsableMemoryBytes(b->cluster.device, b->plan.parallel), 80LL << 30);
  ASSERT_FALSE(a->memory.empty());
  for (const StageMemory& m : a->memory) {
    EXPECT_EQ(m.capacity_bytes, 80LL << 30);
    EXPECT_EQ(m.cuda_context_bytes, a->cluster.device.cuda_context_bytes);
    EXPECT_EQ(m.nccl_bytes, NcclBufferBytes(a->cluster.device, a->plan.parallel));
    EXPECT_GT(m.fragmentation_bytes, 0);
    EXPECT_EQ(m.peak_bytes, m.allocated_peak_bytes + m.fragmentation_bytes + m.cuda_context_bytes +
                                m.nccl_bytes + m.other_bytes);
  }
  for (const StageMemory& m : b->memory) {
    EXPECT_EQ(m.capacity_bytes, 80LL << 30);
    EXPECT_EQ(m.peak_bytes, m.model_state_bytes + m.peak_activation_bytes + m.boundary_bytes);
  }
  int recomputed_a = 0, recomputed_b = 0;
  for (uint8_t f : a->plan.recompute.layers) recomputed_a += f != 0;
  for (uint8_t f : b->plan.recompute.layers) recomputed_b += f != 0;
  EXPECT_GE(recomputed_a, recomputed_b);
}

TEST(PlannerTest, CheckScenarioNamesFields) {
  Scenario s = Small();
  EXPECT_TRUE(CheckScenario(s).ok()) << CheckScenario(s).error().message();
  s.parallel.tp = 16;
  Status st = CheckScenario(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("small: parallel.tp: "), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("tp 16 > 8 GPUs per node"), std::string::npos) << st.error().message();
  s = Small();
  s.partition.params["bogus"] = "7";
  st = CheckScenario(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("small: policies.partition.params"), std::string::npos)
      << st.error().message();
  EXPECT_NE(st.error().message().find("bogus"), std::string::npos) << st.error().message();
  s = Small();
  s.data.name = "nope";
  st = CheckScenario(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("nope"), std::string::npos) << st.error().message();
  s = Small();
  s.parallel.pp = 400;  // more chunks than layers
  st = CheckScenario(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("pipeline chunks"), std::string::npos) << st.error().message();
  // The ':N' shorthand of uniform / block is a valid name (it was refused as an unknown policy).
  s = Small();
  s.recompute.name = "uniform:2";
  EXPECT_TRUE(CheckScenario(s).ok()) << CheckScenario(s).error().message();
  s.recompute.name = "nope:2";
  EXPECT_FALSE(CheckScenario(s).ok());
  // BuildPlan checks with the same checker, before it reads the trace: the same message.
  s = Small();
  s.parallel.tp = 16;
  auto plan = BuildPlan(s, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message(), CheckScenario(s).error().message());
}

// With device.allocator_model replay the planner keeps the replayed excess free (ReplayReserveBytes) instead of
// the spread term, so that what adaptive recompute makes fit still fits in the walk's replay: default.yaml on
// its preset with replay read stage 1 at 88.1 GiB of 80 when the planner reserved the spread term.
// A copy of the a100-4x200g preset that says `allocator_model: replay`, written as `name` in the test's temporary
// folder; its path ("" when the preset has no fragmentation_spread key to put it before).
std::string A100ReplayPreset(const std::string& name) {
  std::ifstream in(std::string(MMTWIN_SOURCE_DIR) + "/traces/clusters/a100-4x200g.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string replay = text.str();
  const size_t at = replay.find("  fragmentation_spread:");
  if (at == std::string::npos) return "";
  replay.insert(at, "  allocator_model: replay\n");
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << replay;
  return path;
}

TEST(PlannerTest, AdaptiveRecomputeKeepsTheReplayedExcessFree) {
  const std::string path = A100ReplayPreset("a100-replay.yaml");
  ASSERT_FALSE(path.empty());
  auto s = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message();
  s->cluster = path;
  s->iterations = 4;
  PlanOptions po;
  po.memory_report = true;
  auto run = BuildPlan(*s, po);
  ASSERT_TRUE(run.ok()) << run.error().message();
  ASSERT_EQ(run->cluster.device.allocator_model, "replay");
  ASSERT_FALSE(run->memory.empty());
  bool replayed = false;
  for (const StageMemory& m : run->memory) {
    EXPECT_TRUE(m.fits) << "stage " << m.stage << ": " << m.peak_bytes << " of " << m.capacity_bytes;
    replayed = replayed || m.replay_excess_bytes > 0;
  }
  EXPECT_TRUE(replayed);
}

// A scenario's `cluster.device.allocator_model` is the cluster file's key: default.yaml with the override plans the
// same memory, stage by stage and term by term, as with a copy of its preset that says `allocator_model: replay`,
// and not the spread term's.
TEST(PlannerTest, ScenarioAllocatorModelEqualsTheClusterFileKey) {
  const std::string path = A100ReplayPreset("a100-replay-file.yaml");
  ASSERT_FALSE(path.empty());
  auto s = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message();
  s->iterations = 2;
  Scenario by_file = *s, by_key = *s;
  by_file.cluster = path;
  ASSERT_TRUE(ApplyOverride(by_key, "cluster.device.allocator_model", "replay").ok());
  PlanOptions po;
  po.memory_report = true;
  auto a = BuildPlan(by_file, po), b = BuildPlan(by_key, po), spread = BuildPlan(*s, po);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(b.ok()) << b.error().message();
  ASSERT_TRUE(spread.ok()) << spread.error().message();
  EXPECT_EQ(b->cluster.device.allocator_model, "replay");
  ASSERT_EQ(a->memory.size(), b->memory.size());
  bool differs_from_spread = false;
  for (size_t r = 0; r < a->memory.size(); ++r) {
    EXPECT_EQ(a->memory[r].peak_bytes, b->memory[r].peak_bytes) << "stage " << r;
    EXPECT_EQ(a->memory[r].fragmentation_bytes, b->memory[r].fragmentation_bytes) << "stage " << r;
    EXPECT_EQ(a->memory[r].replay_excess_bytes, b->memory[r].replay_excess_bytes) << "stage " << r;
    differs_from_spread =
        differs_from_spread || b->memory[r].fragmentation_bytes != spread->memory[r].fragmentation_bytes;
  }
  EXPECT_TRUE(differs_from_spread);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// The allocator's spread term is the memory walk's; the planner keeps the sampled micro-batches' spread free when
// adaptive recompute plans, so a plan it makes fit fits in the walk too. The shipped default scenario at dp 1
// (no ZeRO-1 sharding: the tight case) needed recompute that the plan without the reserve left out (stage 0 was
// 0.5 GiB short in the walk).
TEST(PlannerTest, AdaptiveRecomputeKeepsTheAllocatorSpreadFree) {
  auto s = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(ApplyOverride(*s, "parallel.dp", "1").ok());
  ASSERT_TRUE(ApplyOverride(*s, "iterations", "2").ok());
  auto r = Simulate(*s, SimulateOptions{});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(r->summary.oom);
  int recomputed = 0;
  for (const StageRecord& st : r->summary.stages) {
    EXPECT_LE(st.peak_memory_bytes, st.memory_capacity_bytes);
    recomputed += st.recomputed_layers;
  }
  EXPECT_GT(recomputed, 0);
}

}  // namespace
}  // namespace mmtwin

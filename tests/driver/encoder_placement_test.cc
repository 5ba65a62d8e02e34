// SPDX-License-Identifier: Apache-2.0
// policies.encoder through the planner and the simulator (core/plan/encoder.h): the partition starts after the
// encoders, every micro-batch's passes are placed, the plan's JSON keeps them, the model FLOPs are those of the
// pipeline placement (the same work, elsewhere), every rank holds the encoders' model states (the closed form),
// a frozen encoder with nothing trained before it has no backward and no gradient synchronization, the engines
// agree, and the scenario checker refuses what is not modelled.
#include <gtest/gtest.h>

#include <numeric>

#include "core/plan/encoder.h"
#include "core/plan/memory.h"
#include "core/plan/schedule.h"
#include "core/records/plan_codec.h"
#include "driver/planner.h"
#include "driver/simulate.h"
#include "scenario/small_scenario.h"

namespace mmtwin {
namespace {

// InternVL-1.5 6B+20B, DP2 x TP2 x PP4, 8 micro-batches, ZeRO-1: random mini-batches, the parameter-balanced
// partition, full recomputation (OmniBal's baseline), the encoders in the pipeline or in its bubbles.
Scenario Bubbles(const std::string& placement, const std::string& fill = "fine") {
  Scenario s = SmallScenario();
  s.trace.seed = 3;
  s.data = {"random", {{"batch_size", "2"}}};
  s.partition = {"params", {}};
  s.recompute = {"full", {}};
  s.iterations = 2;
  s.encoder = placement == "pipeline" ? PolicyRef{"pipeline", {}} : PolicyRef{placement, {{"fill", fill}}};
  return s;
}

int EncoderLayers(const PlannedRun& run) { return EncoderLayerCount(run.model, Layers(run.model)); }

TEST(EncoderPlacementPlanTest, ThePipelineHoldsTheLlmAndEveryPassIsPlaced) {
  auto run = BuildPlan(Bubbles("bubbles"), {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  const Plan& p = run->plan;
  const int e = EncoderLayers(*run);
  ASSERT_GT(e, 0);
  EXPECT_EQ(p.partition.EncoderLayers(), e);  // InternViT-6B's 45 blocks and the MLP projector
  EXPECT_TRUE(ValidateSchedule(p.schedule).ok());
  ASSERT_EQ(static_cast<int>(p.schedule.encoder.size()), p.parallel.pp);
  int forwards = 0, backwards = 0;
  for (const auto& rank : p.schedule.encoder)
    for (const EncoderPass& x : rank) (x.kind == PassKind::kForward ? forwards : backwards)++;
  EXPECT_EQ(forwards, p.parallel.micro_batches);
  EXPECT_EQ(backwards, p.parallel.micro_batches);  // the encoder trains
  // Every worker reads the same plan back.
  auto back = PlanFromJson(PlanToJson(p), "plan.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(*back == p);
  // A plan whose partition starts after the encoders but places none of their passes is refused.
  Plan broken = p;
  broken.schedule.encoder.clear();
  EXPECT_FALSE(PlanFromJson(PlanToJson(broken), "plan.json").ok());
  // The pipeline placement keeps the encoders in the chunks.
  auto in_pipeline = BuildPlan(Bubbles("pipeline"), {});
  ASSERT_TRUE(in_pipeline.ok());
  EXPECT_EQ(in_pipeline->plan.partition.EncoderLayers(), 0);
  EXPECT_FALSE(in_pipeline->plan.schedule.HasEncoderPasses());
}

// The same micro-batches cost the same model FLOPs wherever the encoders run: the MFU numerators agree; the
// placements differ in time only.
TEST(EncoderPlacementPlanTest, TheSameWorkElsewhere) {
  SimulateOptions o;
  auto pipeline = Simulate(Bubbles("pipeline"), o);
  auto bubbles = Simulate(Bubbles("bubbles"), o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().message();
  ASSERT_TRUE(bubbles.ok()) << bubbles.error().message();
  const RunSummary& a = pipeline->summary;
  const RunSummary& b = bubbles->summary;
  const double flops_a = a.mfu * a.iteration_time_us.mean, flops_b = b.mfu * b.iteration_time_us.mean;
  EXPECT_NEAR(flops_b / flops_a, 1.0, 1e-9);
  EXPECT_NEAR(a.tokens_per_s * a.iteration_time_us.mean, b.tokens_per_s * b.iteration_time_us.mean,
              1e-6 * a.tokens_per_s * a.iteration_time_us.mean);
  EXPECT_NE(a.iteration_time_us.mean, b.iteration_time_us.mean);
  // The encoder passes are in the run's ops, on every rank that runs one, and each replica synchronizes them.
  int fwd = 0, bwd = 0, sync = 0;
  for (const OpRecord& r : bubbles->ops) {
    fwd += r.kind == OpKind::kEncoderForward;
    bwd += r.kind == OpKind::kEncoderBackward;
    sync += r.kind == OpKind::kEncoderGradSync;
  }
  const ParallelConfig& par = Bubbles("bubbles").parallel;
  EXPECT_EQ(fwd, par.dp * par.micro_batches);
  EXPECT_EQ(bwd, par.dp * par.micro_batches);
  EXPECT_EQ(sync, par.dp * par.pp);
}

// Model states: every rank holds the encoders too, sharded over the dp x pp replicas (ZeRO-1: the fp32 master and
// Adam moments), on top of its LLM chunks' states.
TEST(EncoderPlacementPlanTest, EveryRankHoldsTheEncodersStates) {
  auto run = BuildPlan(Bubbles("bubbles"), {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  const std::vector<Layer> layers = Layers(run->model);
  std::vector<int64_t> params;
  for (const Layer& l : layers) params.push_back(l.params);
  const int e = run->plan.partition.EncoderLayers();
  const int64_t encoder_params = std::accumulate(params.begin(), params.begin() + e, int64_t{0});
  ParallelConfig replicas = run->plan.parallel;
  replicas.dp *= replicas.pp;
  replicas.pp = 1;
  const int64_t encoder_states = ModelStatesOf(replicas, encoder_params).Total();
  const std::vector<int64_t> rank_params = RankParams(run->plan.parallel, run->plan.partition, params);
  ASSERT_EQ(run->memory.size(), rank_params.size());
  const std::vector<int64_t> planned =
      RankModelStateBytes(run->plan.parallel, run->plan.partition, params, FrozenLayerParams(layers));
  for (size_t r = 0; r < rank_params.size(); ++r) {
    const int64_t llm = ModelStatesOf(run->plan.parallel, rank_params[r]).Total();
    EXPECT_EQ(run->memory[r].model_state_bytes, llm + encoder_states) << "rank " << r;
    EXPECT_EQ(planned[r], llm + encoder_states) << "rank " << r;  // what the recompute policies plan with
  }
}

// Frozen vision encoder and projector (nothing trained before the LLM): no encoder backward, no gradient sync.
TEST(EncoderPlacementPlanTest, AFrozenEncoderHasNoBackward) {
  Scenario s = Bubbles("bubbles");
  s.frozen = {"vision", "projector"};
  auto run = BuildPlan(s, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  for (const auto& rank : run->plan.schedule.encoder)
    for (const EncoderPass& x : rank) EXPECT_EQ(x.kind, PassKind::kForward);
  auto sim = Simulate(s, {});
  ASSERT_TRUE(sim.ok()) << sim.error().message();
  for (const OpRecord& r : sim->ops) {
    EXPECT_NE(r.kind, OpKind::kEncoderBackward);
    EXPECT_NE(r.kind, OpKind::kEncoderGradSync);
  }
}

TEST(EncoderPlacementPlanTest, BothEnginesAgreeWithoutContention) {
  Scenario s = Bubbles("bubbles");
  s.iterations = 1;
  auto a = Simulate(s, {});
  s.engine = "simgrid";
  SimulateOptions o;
  o.engine.contention = false;
  auto b = Simulate(s, o);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_NEAR(b->summary.iteration_time_us.mean, a->summary.iteration_time_us.mean,
              1e-6 * a->summary.iteration_time_us.mean);
}

TEST(EncoderPlacementPlanTest, TheCheckerRefusesWhatIsNotModelled) {
  auto refused = [](Scenario s, const std::string& what) {
    const Status st = CheckScenario(s);
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_NE(st.error().message().find(what), std::string::npos) << st.error().message();
  };
  Scenario s = Bubbles("bubbles");
  EXPECT_TRUE(CheckScenario(s).ok());
  Scenario unknown = s;
  unknown.encoder = {"elsewhere", {}};
  refused(unknown, "unknown encoder placement 'elsewhere'; valid values are: pipeline, bubbles");
  Scenario bad_fill = s;
  bad_fill.encoder = {"bubbles", {{"fill", "some"}}};
  refused(bad_fill, "policies.encoder.params");
  Scenario zero3 = s;
  zero3.parallel.zero_stage = 3;
  refused(zero3, "not modelled with ZeRO-3");
  Scenario dispatch = s;
  dispatch.data = {"post-balance", {{"batch_size", "2"}}};
  refused(dispatch, "data dispatch");
  dispatch.data.params["dispatch"] = "none";
  EXPECT_TRUE(CheckScenario(dispatch).ok());
  Scenario text_only = s;
  text_only.model = "llama-3-8b";
  refused(text_only, "has none");
  // The key is written back only when it is not the default.
  EXPECT_NE(FormatScenario(s).find("encoder:"), std::string::npos);
  EXPECT_EQ(FormatScenario(Bubbles("pipeline")).find("encoder:"), std::string::npos);
  auto parsed = ParseScenario(FormatScenario(s), "roundtrip.yaml", ".");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->encoder, s.encoder);
}

}  // namespace
}  // namespace mmtwin

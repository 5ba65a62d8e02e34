// SPDX-License-Identifier: Apache-2.0
// The post-balance and orchestrator data policies end to end: generated traces, zoo models, plan invariants.
#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/balance/data_policy.h"
#include "core/balance/metrics.h"
#include "core/trace/generate.h"

namespace mmtwin {
namespace {

struct Scenario {
  Trace trace;
  ModelSpec model;
  SampleSizes sizes;
  Scenario(const std::string& preset, int64_t n, const std::string& model_name) {
    trace = *GenerateTrace(preset, n, 5);
    auto m = LoadModel(model_name);
    EXPECT_TRUE(m.ok()) << m.error().message();
    model = *m;
    sizes = ComputeSizes(model, trace);
  }
  DataPolicyContext Ctx(int dp) { return {&trace, &model, &sizes, dp, 8, 11}; }
};

class PostBalanceAlgorithmTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PostBalanceAlgorithmTest, BalancesEveryStepAndPlacesEachSampleOnce) {
  Scenario s("internvl-1.2m", 6000, "internvl-1.5-6b-20b");
  auto plan = RunDataPolicy("post-balance", {{"algorithm", GetParam()}}, s.Ctx(16));
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  ASSERT_TRUE(CheckPlan(*plan, s.trace.size()).ok());
  const auto& m = plan->metrics;
  EXPECT_GE(m.at("max_load_over_lower_bound"), 1.0 - 1e-9);
  EXPECT_LE(m.at("max_load_over_lower_bound"), m.at("max_load_over_lower_bound_before") + 1e-9);
  EXPECT_LE(m.at("max_load_over_lower_bound_worst"), 4.0 / 3.0 + 1e-9);
  EXPECT_LE(m.at("max_rank_inter_node_bytes"), m.at("max_rank_inter_node_bytes_identity_placement"));
  EXPECT_LE(m.at("all_to_all_bytes"), m.at("all_gather_bytes"));
  auto again = RunDataPolicy("post-balance", {{"algorithm", GetParam()}}, s.Ctx(16));
  ASSERT_TRUE(again.ok());
  for (size_t k = 0; k < plan->steps.size(); ++k)
    for (int r = 0; r < 16; ++r) EXPECT_EQ(plan->steps[k].ranks[r].samples, again->steps[k].ranks[r].samples);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, PostBalanceAlgorithmTest,
                         ::testing::Values("lpt", "padded", "quadratic", "conv", "kk"));

TEST(PostBalancePolicyTest, BalancesLlmTokensFarBetterThanRandom) {
  Scenario s("internvl-1.2m", 8000, "internvl-1.5-6b-20b");
  auto pb = RunDataPolicy("post-balance", {{"algorithm", "kk"}}, s.Ctx(16));
  auto rnd = RunDataPolicy("random", {{"batch_size", "16"}}, s.Ctx(16));
  ASSERT_TRUE(pb.ok() && rnd.ok());
  const DataMetrics a = ComputeDataMetrics(*pb, s.sizes), b = ComputeDataMetrics(*rnd, s.sizes);
  EXPECT_LT(a.dist_ratio_llm, b.dist_ratio_llm / 5);
  EXPECT_EQ(a.pad_ratio, 0);
  EXPECT_LT(pb->metrics.at("max_load_over_lower_bound"), 1.01);
}

TEST(PostBalancePolicyTest, NodeWisePlacementCutsInterNodeBytes) {
  Scenario s("internvl-1.2m", 8000, "internvl-1.5-6b-20b");
  auto on = RunDataPolicy("post-balance", {{"node_wise", "true"}}, s.Ctx(32));
  auto off = RunDataPolicy("post-balance", {{"node_wise", "false"}}, s.Ctx(32));
  ASSERT_TRUE(on.ok() && off.ok());
  EXPECT_LT(on->metrics.at("max_rank_inter_node_bytes"), off->metrics.at("max_rank_inter_node_bytes"));
  EXPECT_DOUBLE_EQ(off->metrics.at("inter_node_bytes"),
                   off->metrics.at("inter_node_bytes_identity_placement"));
  // Same bins, only permuted: balance is unchanged.
  EXPECT_DOUBLE_EQ(on->metrics.at("max_load_over_lower_bound"), off->metrics.at("max_load_over_lower_bound"));
}

TEST(OrchestratorPolicyTest, AudioVisionMixConservesSamplesAndBeatsAllGather) {
  Scenario s("asr-sqa-mix", 6000, "orchmllm-10b");
  auto composed = RunDataPolicy("orchestrator", {}, s.Ctx(32));
  ASSERT_TRUE(composed.ok()) << composed.error().message();
  ASSERT_TRUE(CheckPlan(*composed, s.trace.size()).ok());
  auto two_step = RunDataPolicy("orchestrator", {{"compose", "false"}}, s.Ctx(32));
  ASSERT_TRUE(two_step.ok());
  EXPECT_LT(composed->metrics.at("all_to_all_ops"), two_step->metrics.at("all_to_all_ops"));
  EXPECT_LE(composed->metrics.at("all_to_all_bytes"), two_step->metrics.at("all_to_all_bytes"));
  EXPECT_LT(composed->metrics.at("max_rank_all_to_all_bytes"),
            composed->metrics.at("all_gather_bytes_per_rank"));
  EXPECT_LT(composed->metrics.at("max_load_over_lower_bound"), 1.05);
  const nlohmann::json details = nlohmann::json::parse(composed->details_json);
  ASSERT_TRUE(details.contains("phases"));
  EXPECT_EQ(details["phases"].back()["phase"], "llm");
}

TEST(OrchestratorPolicyTest, RejectsUnknownAlgorithm) {
  Scenario s("asr-sqa-mix", 500, "orchmllm-10b");
  auto r = RunDataPolicy("orchestrator", {{"audio_algorithm", "fast"}}, s.Ctx(4));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.error().message().find("'fast' is not valid; valid values are: lpt, padded, quadratic, conv, kk"),
      std::string::npos)
      << r.error().message();
}

// The dispatch lists: aggregated per pair (sorted, no self transfers), their bytes are the all-to-all bytes
// the policy reports (per step), the all-gather strawman moves more, and `none` moves nothing.
double MeanStepBytes(const DataPlan& plan) {
  double sum = 0;
  for (const DataStep& st : plan.steps) {
    for (size_t i = 0; i < st.dispatch.size(); ++i) {
      const DispatchTransfer& t = st.dispatch[i];
      EXPECT_NE(t.src_rank, t.dst_rank);
      EXPECT_GT(t.bytes, 0);
      EXPECT_TRUE(t.src_rank >= 0 && t.src_rank < plan.dp && t.dst_rank >= 0 && t.dst_rank < plan.dp);
      if (i > 0) {
        const DispatchTransfer& p = st.dispatch[i - 1];
        EXPECT_TRUE(p.src_rank < t.src_rank || (p.src_rank == t.src_rank && p.dst_rank < t.dst_rank));
      }
      sum += static_cast<double>(t.bytes);
    }
  }
  return sum / std::max<size_t>(1, plan.steps.size());
}

TEST(PostBalancePolicyTest, DispatchTransfersMatchTheReportedBytes) {
  Scenario s("internvl-1.2m", 3000, "internvl-1.5-6b-20b");
  auto a2a = RunDataPolicy("post-balance", {}, s.Ctx(16));
  auto ag = RunDataPolicy("post-balance", {{"dispatch", "all-gather"}}, s.Ctx(16));
  auto none = RunDataPolicy("post-balance", {{"dispatch", "none"}}, s.Ctx(16));
  ASSERT_TRUE(a2a.ok() && ag.ok() && none.ok());
  EXPECT_NEAR(MeanStepBytes(*a2a), a2a->metrics.at("all_to_all_bytes"),
              1e-6 * a2a->metrics.at("all_to_all_bytes"));
  EXPECT_GT(MeanStepBytes(*a2a), 0);
  EXPECT_NEAR(MeanStepBytes(*ag), a2a->metrics.at("all_gather_bytes"),
              1e-6 * a2a->metrics.at("all_gather_bytes"));
  EXPECT_EQ(MeanStepBytes(*none), 0);
  // The dispatch does not change where samples go.
  for (size_t k = 0; k < a2a->steps.size(); ++k)
    for (int r = 0; r < 16; ++r) EXPECT_EQ(a2a->steps[k].ranks[r].samples, none->steps[k].ranks[r].samples);
  // Other policies move nothing.
  auto rnd = RunDataPolicy("random", {}, s.Ctx(16));
  ASSERT_TRUE(rnd.ok());
  EXPECT_EQ(MeanStepBytes(*rnd), 0);
}

TEST(OrchestratorPolicyTest, DispatchTransfersMatchTheReportedBytes) {
  Scenario s("asr-sqa-mix", 3000, "orchmllm-10b");
  for (const char* compose : {"true", "false"}) {
    auto a2a = RunDataPolicy("orchestrator", {{"compose", compose}}, s.Ctx(16));
    auto ag = RunDataPolicy("orchestrator", {{"compose", compose}, {"dispatch", "all-gather"}}, s.Ctx(16));
    ASSERT_TRUE(a2a.ok() && ag.ok());
    const double bytes = a2a->metrics.at("all_to_all_bytes");
    EXPECT_GT(bytes, 0);
    EXPECT_NEAR(MeanStepBytes(*a2a), bytes, 1e-6 * bytes) << compose;
    EXPECT_GT(MeanStepBytes(*ag), MeanStepBytes(*a2a)) << compose;
  }
  auto bad = RunDataPolicy("orchestrator", {{"dispatch", "broadcast"}}, s.Ctx(4));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("all-to-all, all-gather, none"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace mmtwin

// End-to-end: scenarios built in code through Simulate() and PlanScenario().
#include "core/sim/simulate.h"

#include <gtest/gtest.h>

namespace mmtwin {
namespace {

Scenario Small(const std::string& data, const std::string& partition, const std::string& recompute) {
  Scenario s;
  s.name = "small";
  s.trace.preset = "internvl-1.2m";
  s.trace.samples = 6000;
  s.model = "internvl-1.5-6b-20b";
  s.cluster = "a100-4x200g";
  s.parallel.dp = 2;
  s.parallel.tp = 2;
  s.parallel.pp = 4;
  s.parallel.micro_batches = 8;
  s.parallel.zero_stage = 1;
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
  const auto& j = a->summary;
  EXPECT_EQ(j["iterations_replayed"], 6);
  const double busy = j["busy_ratio"], bubble = j["bubble_ratio"], idle = j["idle_ratio"],
               comm = j["exposed_comm_ratio"];
  EXPECT_NEAR(busy + bubble + idle + comm, 1.0, 1e-6);
  EXPECT_GT(j["mfu"].get<double>(), 0.05);
  EXPECT_LT(j["mfu"].get<double>(), 0.6);  // below the assumed 0.5 matmul efficiency plus slack
  EXPECT_LE(j["iteration_time_us"]["p50"].get<double>(), j["iteration_time_us"]["p99"].get<double>());
  EXPECT_GT(j["gpu_days"].get<double>(), 0);
  ASSERT_EQ(j["stages"].size(), 4u);
  EXPECT_EQ(j["stages"][0]["first_layer"], 0);
  auto b = Simulate(s, {});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->summary.dump(), b->summary.dump());
  EXPECT_EQ(a->stages_csv, b->stages_csv);
  EXPECT_TRUE(a->trace.contains("traceEvents"));
}

TEST(SimulateTest, OmniBalBeatsTheBaseline) {
  auto base = Simulate(Small("random", "params", "full"), {});
  auto omni = Simulate(Small("isf", "bmp", "adaptive"), {});
  ASSERT_TRUE(base.ok() && omni.ok());
  const double tb = base->summary["epoch_time_s"], to = omni->summary["epoch_time_s"];
  EXPECT_LT(to, tb);
  EXPECT_LT(omni->summary["recompute_ratio"].get<double>(), base->summary["recompute_ratio"].get<double>());
}

TEST(SimulateTest, PlanReportsMemoryPerStage) {
  auto p = PlanScenario(Small("isf", "uniform", "none"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ((*p)["stages"].size(), 4u);
  for (const auto& st : (*p)["stages"]) {
    EXPECT_GT(st["model_state_bytes"].get<int64_t>(), 0);
    EXPECT_EQ(st["fits"].get<bool>(),
              st["peak_memory_bytes"].get<int64_t>() <= st["memory_capacity_bytes"].get<int64_t>());
  }
}

TEST(SimulateTest, ImpossibleConfigurationsAreErrors) {
  Scenario s = Small("isf", "uniform", "none");
  s.parallel.tp = 16;
  auto r = Simulate(s, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("tp 16 exceeds"), std::string::npos) << r.error().message();
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
    return r.ok() ? r->summary["iteration_time_us"]["mean"].get<double>() : 0.0;
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

}  // namespace
}  // namespace mmtwin

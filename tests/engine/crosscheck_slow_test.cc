// SPDX-License-Identifier: Apache-2.0
// Acceptance (label slow, ~25 s): without contention the SimGrid engine and the analytic evaluator agree
// within 0.5% on the mean iteration time of every shipped scenario (scenarios/*.yaml,
// scenarios/omnibal/*.yaml, scenarios/longvila/*.yaml: sequence parallelism, scenarios/schedules/*.yaml: zero-bubble
// schedules and the encoders in the bubbles). Each scenario replays a couple of
// sampled iterations (Scenario::iterations) to
// keep the test quick.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "driver/simulate.h"
#include "core/scenario/scenario.h"
#include "engine/simgrid_engine.h"

namespace mmtwin {
namespace {

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> out;
  for (const char* dir : {"scenarios", "scenarios/omnibal", "scenarios/longvila", "scenarios/schedules"}) {
    const std::filesystem::path p = std::filesystem::path(MMTWIN_SOURCE_DIR) / dir;
    for (const auto& e : std::filesystem::directory_iterator(p))
      if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The whole run with the SimGrid engine, made by the driver (MakeEvaluator) from the scenario's engine name.
Result<SimulationResult> WithSimGrid(Scenario s, bool contention) {
  s.engine = "simgrid";
  SimulateOptions o;
  o.engine.contention = contention;
  return Simulate(s, o);
}

TEST(CrosscheckTest, EnginesAgreeWithoutContention) {
  const std::vector<std::string> files = ScenarioFiles();
  ASSERT_GE(files.size(), 6u);
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    auto loaded = LoadScenario(file);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    Scenario s = *loaded;
    s.epoch = false;
    s.iterations = 2;
    s.engine = "analytic";
    auto analytic = Simulate(s, {});
    ASSERT_TRUE(analytic.ok()) << analytic.error().message();
    auto simgrid = WithSimGrid(s, false);
    ASSERT_TRUE(simgrid.ok()) << simgrid.error().message();
    const double a = analytic->summary.iteration_time_us.mean;
    const double g = simgrid->summary.iteration_time_us.mean;
    EXPECT_EQ(simgrid->summary.engine, "simgrid");
    EXPECT_NEAR(g, a, 0.005 * a) << "analytic " << a << " us, simgrid " << g << " us";
    // The breakdown adds up the same way.
    const RunSummary& j = simgrid->summary;
    EXPECT_NEAR(j.busy_ratio + j.bubble_ratio + j.idle_ratio + j.exposed_comm_ratio, 1.0, 1e-6);
    std::printf("%-60s analytic %.1f us  simgrid %.1f us  (%+.4f%%)\n", file.c_str(), a, g,
                100 * (g - a) / a);
  }
}

// With links shared, transfers can only take longer, and the op graph's start times only grow with durations
// (fixed lane orders, max-plus): the SimGrid engine is never faster than the analytic evaluator.
TEST(CrosscheckTest, ContentionNeverFaster) {
  for (const char* name : {"scenarios/default.yaml", "scenarios/omnibal/internvl-6b-20b-omnibal.yaml"}) {
    SCOPED_TRACE(name);
    auto loaded = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/" + name);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    Scenario s = *loaded;
    s.epoch = false;
    s.iterations = 1;
    auto analytic = Simulate(s, {});
    ASSERT_TRUE(analytic.ok()) << analytic.error().message();
    auto simgrid = WithSimGrid(s, true);
    ASSERT_TRUE(simgrid.ok()) << simgrid.error().message();
    const double a = analytic->summary.iteration_time_us.mean;
    const double g = simgrid->summary.iteration_time_us.mean;
    EXPECT_GE(g, a * (1 - 1e-9));
    std::printf("%-50s contention on: analytic %.1f us  simgrid %.1f us  (%+.4f%%)\n", name, a, g,
                100 * (g - a) / a);
  }
}

// Post-balancing data dispatch (all-to-all and all-gather, post-balance and orchestrator) on default.yaml's
// model with DP 4 (replicas on two nodes): without contention the engines agree; with contention SimGrid is
// never faster.
TEST(CrosscheckTest, DispatchAgreesWithoutContention) {
  auto loaded = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const std::pair<const char*, const char*> variants[] = {
      {"post-balance", "all-to-all"}, {"post-balance", "all-gather"}, {"orchestrator", "all-to-all"}};
  for (const auto& [policy, dispatch] : variants) {
    SCOPED_TRACE(std::string(policy) + " " + dispatch);
    Scenario s = *loaded;
    s.epoch = false;
    s.iterations = 2;
    s.parallel.dp = 4;
    s.nodes = 0;
    s.data = {policy, {{"batch_size", "4"}, {"dispatch", dispatch}}};
    auto analytic = Simulate(s, {});
    ASSERT_TRUE(analytic.ok()) << analytic.error().message();
    auto off = WithSimGrid(s, false);
    ASSERT_TRUE(off.ok()) << off.error().message();
    auto on = WithSimGrid(s, true);
    ASSERT_TRUE(on.ok()) << on.error().message();
    const double a = analytic->summary.iteration_time_us.mean;
    const double g = off->summary.iteration_time_us.mean;
    const double c = on->summary.iteration_time_us.mean;
    EXPECT_NEAR(g, a, 0.005 * a);
    EXPECT_GE(c, a * (1 - 1e-9));
    std::printf(
        "default.yaml dp 4 %s %s: analytic %.1f us  simgrid off %.1f us (%+.4f%%)  on %.1f us (%+.4f%%)\n",
        policy, dispatch, a, g, 100 * (g - a) / a, c, 100 * (c - a) / a);
  }
}

}  // namespace
}  // namespace mmtwin

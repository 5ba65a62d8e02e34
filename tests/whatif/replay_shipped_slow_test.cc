// SPDX-License-Identifier: Apache-2.0
// Issue 32, acceptance 1: every shipped scenario (tests/scenario/shipped_scenarios.h, the goldens' list) simulated
// for one iteration, its run folder replayed (`mmtwin replay`, sim/whatif/whatif.h): the replay gives the simulated
// step back. The analytic engine only: a scenario that runs on SimGrid (network contention) is simulated with the
// analytic engine here, since the replay evaluates its graph analytically.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/records/run_folder.h"
#include "driver/simulate.h"
#include "scenario/shipped_scenarios.h"
#include "whatif/whatif.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

class ReplayShippedTest : public ::testing::TestWithParam<fs::path> {};

TEST_P(ReplayShippedTest, TheReplayGivesTheSimulatedStepBack) {
  auto s = LoadScenario(GetParam().string());
  ASSERT_TRUE(s.ok()) << s.error().message();
  s->iterations = 1;
  s->epoch = false;
  s->engine = "analytic";
  auto r = Simulate(*s, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("replay_" + std::to_string(::getpid()) + "_" + GetParam().stem().string());
  ASSERT_TRUE(
      RunFolderWriter().AddOps(r->ops).AddScenario(r->resolved_yaml).AddPlan(r->plan).Write(dir).ok());
  auto replay = ReplayRunFolder(dir.string(), {});
  ASSERT_TRUE(replay.ok()) << replay.error().message();
  const double step = r->summary.iteration_time_us.mean;
  EXPECT_NEAR(replay->iterations.at(0).replayed_us, step, 1e-9 * step);
  EXPECT_EQ(replay->iterations.at(0).unmatched, 0);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Shipped, ReplayShippedTest, ::testing::ValuesIn(testing::ShippedScenarios()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
                           std::string name =
                               fs::relative(info.param, fs::path(MMTWIN_SOURCE_DIR) / "scenarios").string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// `mmtwin calibrate` and `mmtwin simulate --cost` as a user runs them: the profile is written, printed and used;
// bad input exits 2 with a message naming the run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "calibrate/synthetic_runs.h"
#include "cli/cli_runner.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using testing::Mmtwin;

std::string Dir(const std::string& name) {
  return (fs::path(::testing::TempDir()) / ("cli_calibrate_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(CliCalibrate, WritesAProfileThatSimulateUses) {
  testing::SyntheticRun run{Dir("run")};
  ASSERT_EQ(testing::WriteSyntheticRun(run), "");
  const std::string profile = Dir("profile.csv");
  auto r = Mmtwin("calibrate " + run.dir + " -o " + profile);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("vicuna-7b-v1.5,transformer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + profile + " (6 layer types, tp 1, from 1 run)"), std::string::npos)
      << r.out;
  ASSERT_TRUE(fs::exists(profile));

  // Simulate the same scenario with the analytic model and with the profile: the profile's times show up.
  const std::string scenario = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml";
  auto analytic = Mmtwin("simulate " + scenario + " -o " + Dir("sim_analytic"), false);
  ASSERT_EQ(analytic.code, 0) << analytic.out;
  auto calibrated = Mmtwin("simulate " + scenario + " --cost " + profile + " -o " + Dir("sim_cal"), false);
  ASSERT_EQ(calibrated.code, 0) << calibrated.out;
  auto a = LoadSummary(Dir("sim_analytic"));
  auto c = LoadSummary(Dir("sim_cal"));
  ASSERT_TRUE(a.ok() && c.ok());
  // The synthetic coefficients price a layer at tens to thousands of µs; the analytic model prices the shrunk
  // model on an H100-class device far below that.
  EXPECT_GT(c->iteration_time_us.mean, 3 * a->iteration_time_us.mean)
      << c->iteration_time_us.mean << " vs " << a->iteration_time_us.mean;
  auto back = Mmtwin("simulate " + scenario + " --cost analytic -o " + Dir("sim_back"), false);
  ASSERT_EQ(back.code, 0);
  EXPECT_DOUBLE_EQ(LoadSummary(Dir("sim_back"))->iteration_time_us.mean, a->iteration_time_us.mean);
}

// Issue 33, item 5: a fit the data cannot determine (one run at one sequence length: one token count per layer)
// is warned about, naming the layer type and what to measure; well-spread token counts give no warning.
TEST(CliCalibrate, WarnsWhenTheTokenCountsCannotDetermineTheFit) {
  testing::SyntheticRun one{Dir("one-length")};
  one.fixed_tokens = 1024;
  ASSERT_EQ(testing::WriteSyntheticRun(one), "");
  auto r = Mmtwin("calibrate " + one.dir + " -o " + Dir("one.csv"));
  ASSERT_EQ(r.code, 0) << r.out;  // still written: a warning, not a refusal
  EXPECT_NE(r.out.find("mmtwin calibrate: warning: layer type 'vicuna-7b-v1.5,transformer': its "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 distinct token count, so the per-token cost is not determined"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("measure at least 3 different token counts per layer type"), std::string::npos)
      << r.out;
  auto j = Mmtwin("calibrate " + one.dir + " -o " + Dir("one.csv") + " --json", false);
  EXPECT_NE(j.out.find("\"warnings\": ["), std::string::npos) << j.out;

  testing::SyntheticRun spread{Dir("spread")};
  ASSERT_EQ(testing::WriteSyntheticRun(spread), "");
  auto ok = Mmtwin("calibrate " + spread.dir + " -o " + Dir("spread.csv"));
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(ok.out.find("warning"), std::string::npos) << ok.out;
}

TEST(CliCalibrate, BadInputExitsTwo) {
  testing::SyntheticRun sim{Dir("simulated")};
  sim.simulated = true;
  ASSERT_EQ(testing::WriteSyntheticRun(sim), "");
  auto r = Mmtwin("calibrate " + sim.dir + " -o " + Dir("p.csv"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("mmtwin calibrate: " + sim.dir + "/summary.json: source: a simulated run"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(Dir("p.csv")));
  r = Mmtwin("calibrate " + sim.dir + " -o " + Dir("p.csv") + " --min-samples 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--min-samples: '1' is not an integer in [3, 1e9]"), std::string::npos) << r.out;
  r = Mmtwin("simulate " + std::string(MMTWIN_SOURCE_DIR) +
             "/scenarios/backend/small.yaml --cost /nonexistent.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--cost: '/nonexistent.csv' is neither 'analytic' nor a readable file"),
            std::string::npos)
      << r.out;
  // --cluster-out needs the runs' ops.csv; nothing is written when it is missing.
  {
    testing::SyntheticRun run{Dir("no_ops")};
    ASSERT_EQ(testing::WriteSyntheticRun(run), "");
    auto r = Mmtwin("calibrate " + run.dir + " -o " + Dir("no_ops.csv") + " --cluster-out " + Dir("c.yaml"));
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("mmtwin calibrate: --cluster-out: " + run.dir + "/ops.csv"), std::string::npos)
        << r.out;
    EXPECT_FALSE(fs::exists(Dir("no_ops.csv")));
    EXPECT_FALSE(fs::exists(Dir("c.yaml")));
  }
}

}  // namespace
}  // namespace mmtwin

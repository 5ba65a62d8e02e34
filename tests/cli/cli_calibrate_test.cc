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

// Issue 33, items 1 and 5: a run whose host was busy with other work is named; the same run on an idle host is
// not. `compare` names where each side ran and says when a GPU prediction meets a CPU measurement.
TEST(CliCalibrate, WarnsAboutALoadedHostAndCompareNamesTheMachines) {
  MachineRecord idle;
  idle.host = "ci";
  idle.cpu = "AMD EPYC";
  idle.cores = 2;
  idle.ranks = 4;
  idle.threads_per_rank = 1;
  idle.load_avg_1m_start = 0.3;
  idle.load_avg_1m_end = 4.2;  // its own 4 rank threads
  MachineRecord busy = idle;
  busy.load_avg_1m_start = 3.1;  // busy before the ranks started
  testing::SyntheticRun quiet{Dir("quiet")};
  quiet.machine = idle;
  ASSERT_EQ(testing::WriteSyntheticRun(quiet), "");
  testing::SyntheticRun loaded{Dir("loaded")};
  loaded.machine = busy;
  ASSERT_EQ(testing::WriteSyntheticRun(loaded), "");
  auto q = Mmtwin("calibrate " + quiet.dir + " -o " + Dir("q.csv"));
  ASSERT_EQ(q.code, 0) << q.out;
  EXPECT_EQ(q.out.find("warning"), std::string::npos) << q.out;
  auto l = Mmtwin("calibrate " + loaded.dir + " -o " + Dir("l.csv"));
  ASSERT_EQ(l.code, 0) << l.out;
  EXPECT_NE(
      l.out.find("warning: " + loaded.dir + ": other work kept the host busy while it ran (load average 3.1"),
      std::string::npos)
      << l.out;

  // compare: a prediction for the scenario's A100 cluster against this CPU measurement.
  const std::string scenario = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml";
  ASSERT_EQ(Mmtwin("simulate " + scenario + " -o " + Dir("sim_a100"), false).code, 0);
  auto c = Mmtwin("compare " + Dir("sim_a100") + " " + quiet.dir);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("predicted for a100-4x200g (1 node of A100-80GB-SXM4)"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("measured on ci: AMD EPYC, 2 cores, 4 ranks x 1 threads"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("note: one side is a prediction for GPUs, the other a measurement on CPUs"),
            std::string::npos)
      << c.out;
  auto cj = Mmtwin("compare " + Dir("sim_a100") + " " + quiet.dir + " --json", false);
  EXPECT_NE(cj.out.find("\"different_hardware\": true"), std::string::npos) << cj.out;
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

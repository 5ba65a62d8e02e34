// SPDX-License-Identifier: Apache-2.0
// SIGINT / SIGTERM to the real `mmtwin plan`, `mmtwin simulate` and `mmtwin sweep` (core/util/interrupt.h): plan
// stops planning and prints only the interruption; simulate abandons the
// run, exits 128 + signal and leaves the run folder as it was (absent, or the previous complete run byte for
// byte); sweep stops its workers, keeps the finished runs, records no error for the killed ones, exits 128 +
// signal, and the same command resumes without redoing them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli_runner.h"
#include "sweep/results_db.h"

namespace {

namespace fs = std::filesystem;
using mmtwin::testing::CliRun;
using mmtwin::testing::Shell;

// The analytic engine over the whole epoch of 1.5M samples (~2 s on one core, more under sanitizers), so a
// signal after 0.5 s lands mid-run.
const char* kLong = R"(name: long
trace: {preset: internvl-1.2m, samples: 1500000, seed: 1}
model: internvl-1.5-6b-20b
cluster: {preset: a100-4x200g, nodes: 2}
parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 8, zero_stage: 1}
policies: {data: isf, partition: bmp, recompute: adaptive, schedule: 1f1b}
iterations: epoch
seed: 1
)";

// The SimGrid engine over 1,000 iterations (~7 s; the trace holds 2,905 iterations, so `iterations` is not
// capped by the epoch): the work runs in a child process (sim/engine/isolate.h).
const char* kLongSimgrid = R"(name: long-simgrid
trace: {preset: internvl-1.2m, samples: 200000, seed: 1}
model: internvl-1.5-6b-20b
cluster: {preset: a100-4x200g, nodes: 2}
parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 8, zero_stage: 1}
policies: {data: isf, partition: bmp, recompute: adaptive, schedule: 1f1b}
iterations: 1000
seed: 1
engine: simgrid
)";

// Planning dominated by BMP's candidate timing (radius 8, up to 1,000 candidates timed, none pruned, 256
// micro-batches on PP 8): ~1.7 s of BMP in a Release build against ~0.2 s for the rest, so a signal after 0.3 s or
// more lands inside the search.
const char* kBmp = R"(name: bmp-long
trace: {preset: internvl-1.2m, samples: 200000, seed: 1}
model: internvl-1.5-6b-20b
cluster: {preset: a100-4x200g, nodes: 4}
parallel: {dp: 2, tp: 2, pp: 8, micro_batches: 256, zero_stage: 1}
policies: {data: isf, partition: {name: bmp, params: {prune: false, top_k: 1000, radius: 8}}, recompute: adaptive, schedule: 1f1b}
iterations: 32
seed: 1
)";

const char* kShort = R"(name: short
trace: {preset: internvl-1.2m, samples: 2000, seed: 1}
model: internvl-1.5-6b-20b
cluster: {preset: a100-4x200g, nodes: 2}
parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 4, zero_stage: 1}
policies: {data: isf, partition: uniform, recompute: full, schedule: 1f1b}
iterations: 2
seed: 1
)";

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliInterruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("cli_interrupt_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "long.yaml") << kLong;
    std::ofstream(dir_ / "short.yaml") << kShort;
    std::ofstream(dir_ / "long-simgrid.yaml") << kLongSimgrid;
    std::ofstream(dir_ / "bmp.yaml") << kBmp;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // `mmtwin ARGS` sent SIGNAL after delay_s (GNU timeout; --preserve-status gives mmtwin's own exit code; a
  // process that ignored the signal is killed 20 s later and shows 137).
  CliRun Signalled(const std::string& signal, double delay_s, const std::string& args) const {
    return Shell("cd " + dir_.string() + " && timeout --preserve-status -k 20 -s " + signal + " " +
                 std::to_string(delay_s) + " " + MMTWIN_CLI + " " + args + " 2>&1");
  }
  void ExpectNoStaging() const {
    for (const auto& e : fs::directory_iterator(dir_))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  fs::path dir_;
};

TEST_F(CliInterruptTest, SimulateSigintLeavesNoFolder) {
  CliRun r = Signalled("INT", 0.5, "simulate long.yaml -o run --json");
  EXPECT_EQ(r.code, 130) << r.out;
  EXPECT_NE(r.out.find("interrupted (SIGINT)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "run"));
  ExpectNoStaging();
}

// Ctrl-C while BMP times its candidates (in `plan` and in `simulate`) prints the interruption, never an error at
// the scenario's policies.partition line (which is what a cancellation inside BMP used to become).
TEST_F(CliInterruptTest, SigintDuringBmpIsAnInterruptionNotAnError) {
  for (double delay_s : {0.3, 0.6}) {
    CliRun plan = Signalled("INT", delay_s, "plan bmp.yaml");
    EXPECT_EQ(plan.code, 130) << plan.out;
    EXPECT_NE(plan.out.find("mmtwin plan: interrupted (SIGINT) while planning; nothing was printed"),
              std::string::npos)
        << plan.out;
    EXPECT_EQ(plan.out.find("bmp.yaml:"), std::string::npos) << plan.out;
    EXPECT_EQ(plan.out.find("partition policy"), std::string::npos) << plan.out;

    CliRun sim = Signalled("INT", delay_s, "simulate bmp.yaml -o run");
    EXPECT_EQ(sim.code, 130) << sim.out;
    EXPECT_NE(sim.out.find("mmtwin simulate: interrupted (SIGINT); nothing was written"), std::string::npos)
        << sim.out;
    EXPECT_EQ(sim.out.find("bmp.yaml:"), std::string::npos) << sim.out;
    EXPECT_FALSE(fs::exists(dir_ / "run"));
  }
  ExpectNoStaging();
}

TEST_F(CliInterruptTest, SimulateSigtermKeepsThePreviousRunAsItWas) {
  CliRun first =
      Shell("cd " + dir_.string() + " && " + MMTWIN_CLI + " simulate short.yaml -o run --json 2>&1");
  ASSERT_EQ(first.code, 0) << first.out;
  const std::string summary = Read(dir_ / "run/summary.json"), scenario = Read(dir_ / "run/scenario.yaml");
  CliRun r = Signalled("TERM", 0.5, "simulate long.yaml -o run --json");
  EXPECT_EQ(r.code, 143) << r.out;
  EXPECT_NE(r.out.find("interrupted (SIGTERM)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is as it was"), std::string::npos) << r.out;
  EXPECT_EQ(Read(dir_ / "run/summary.json"), summary);
  EXPECT_EQ(Read(dir_ / "run/scenario.yaml"), scenario);
  ExpectNoStaging();
}

TEST_F(CliInterruptTest, SimulateSimgridEngineStopsItsChild) {
  CliRun r = Signalled("INT", 1.0, "simulate long-simgrid.yaml -o run --json");
  if (r.out.find("not built") != std::string::npos) GTEST_SKIP() << "no SimGrid engine in this build";
  EXPECT_EQ(r.code, 130) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "run"));
}

TEST_F(CliInterruptTest, SweepSigtermKeepsFinishedRunsAndResumes) {
  // Twenty SimGrid runs of ~0.3 s each on one worker (longer under sanitizers): the signal lands mid-sweep.
  std::string seeds;
  for (int i = 1; i <= 20; ++i) seeds += (i > 1 ? ", " : "") + std::to_string(i);
  std::ofstream(dir_ / "s.yaml")
      << "name: isweep\nbase: long-simgrid.yaml\nmode: zip\niterations: 40\naxes:\n"
         "  - {key: seed, values: [" +
             seeds + "]}\n";
  CliRun r = Signalled("TERM", 1.0, "sweep s.yaml --jobs 1");
  EXPECT_EQ(r.code, 143) << r.out;
  EXPECT_NE(r.out.find("interrupted (SIGTERM)"), std::string::npos) << r.out;
  size_t kept = 0;
  {
    auto db = mmtwin::ResultsDb::Open((dir_ / "isweep.sqlite").string());
    ASSERT_TRUE(db.ok()) << db.error().message();
    auto rows = (*db)->Runs();
    ASSERT_TRUE(rows.ok());
    for (const auto& row : *rows) EXPECT_EQ(row.status, "ok") << row.error;  // no error for the killed run
    kept = rows->size();
    EXPECT_LT(kept, 20u) << "the sweep finished before the signal; make its runs longer";
  }
  // The same command resumes after the kept runs (stopped again after one more run to keep the test short).
  CliRun again = Shell("cd " + dir_.string() + " && MMTWIN_SWEEP_STOP_AFTER=1 " + MMTWIN_CLI +
                       " sweep s.yaml --jobs 1 2>&1");
  EXPECT_EQ(again.code, 3) << again.out;
  EXPECT_NE(again.out.find("ran 1 of"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find(std::to_string(kept) + " already done"), std::string::npos) << again.out;
}

}  // namespace

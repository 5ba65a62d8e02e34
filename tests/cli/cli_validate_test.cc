// SPDX-License-Identifier: Apache-2.0
// `mmtwin validate` through the real binary, without a backend: a training program that never returns is stopped
// by the --run-timeout watchdog (issue 34: validate waited forever), and validate fails naming the run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_runner.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using mmtwin::testing::CliRun;
using mmtwin::testing::Mmtwin;

TEST(CliValidateTest, ATrainingProgramThatNeverReturnsIsStopped) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("cli_validate_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path train = dir / "hang-train";
  std::ofstream(train) << "#!/bin/sh\nexec sleep 600\n";
  ::chmod(train.c_str(), 0755);
  const std::string suite = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/validation/cpu-ws2.suite.yaml";
  const auto t0 = std::chrono::steady_clock::now();
  CliRun r = Mmtwin("validate " + suite + " -o " + (dir / "out").string() + " --runs " +
                    (dir / "runs").string() + " --train " + train.string() + " --run-timeout 2");
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("did not finish within 2 s (--run-timeout) and was stopped"), std::string::npos)
      << r.out;
  EXPECT_LT(took_s, 60) << "the watchdog did not stop the run";  // bound only: the run would sleep 600 s
  CliRun bad = Mmtwin("validate " + suite + " -o " + (dir / "out").string() + " --run-timeout 0");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--run-timeout"), std::string::npos) << bad.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mmtwin

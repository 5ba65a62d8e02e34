// SPDX-License-Identifier: Apache-2.0
// `mmtwin validate` through the real binary, without a backend: a training program that never returns is stopped
// by the --run-timeout watchdog (issue 34: validate waited forever), and validate fails naming the run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
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

// Issue 34: a suite mixing TP degrees, or with a held-out model the calibration scenarios do not cover, was
// measured first and refused at the fit. Now it is refused before anything runs (exit 2, naming the scenario);
// the training program here would fail the test if it were started.
TEST(CliValidateTest, ASuiteOneProfileCannotFitIsRefusedBeforeMeasuring) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("cli_validate_mix_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path train = dir / "must-not-run";
  std::ofstream(train) << "#!/bin/sh\ntouch " << (dir / "started").string() << "\nexit 1\n";
  ::chmod(train.c_str(), 0755);
  const std::string cal = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/validation/cpu-ws2/cal-pp2-b2.yaml";
  std::ifstream in(cal);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto write = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find("name: cal-pp2-b2"), 16, "name: " + name);
    if (!from.empty()) t.replace(t.find(from), from.size(), to);
    std::ofstream(dir / (name + ".yaml")) << t;
  };
  write("cal", "", "");
  write("tp2", "tp: 1, pp: 2", "tp: 2, pp: 1");
  write("other-model", "model: llava-1.5-7b", "model: llava-1.5-13b");
  std::ofstream(dir / "tp.suite.yaml") << "name: tp\ncalibration: [cal.yaml]\nheld_out: [tp2.yaml]\n";
  std::ofstream(dir / "model.suite.yaml")
      << "name: model\ncalibration: [cal.yaml]\nheld_out: [other-model.yaml]\n";
  CliRun tp = Mmtwin("validate " + (dir / "tp.suite.yaml").string() + " -o " + (dir / "o1").string() +
                     " --train " + train.string());
  EXPECT_EQ(tp.code, 2) << tp.out;
  EXPECT_NE(tp.out.find("tp2.yaml: parallel.tp: 2, but"), std::string::npos) << tp.out;
  CliRun model = Mmtwin("validate " + (dir / "model.suite.yaml").string() + " -o " + (dir / "o2").string() +
                        " --train " + train.string());
  EXPECT_EQ(model.code, 2) << model.out;
  EXPECT_NE(model.out.find("other-model.yaml: model: layer type"), std::string::npos) << model.out;
  EXPECT_NE(model.out.find("is in no calibration scenario"), std::string::npos) << model.out;
  EXPECT_FALSE(fs::exists(dir / "started"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mmtwin

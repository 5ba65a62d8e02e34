// SPDX-License-Identifier: Apache-2.0
// `mmtwin simulate -o DIR` killed (SIGKILL) at moments spread over its run, alternating two scenarios into the same
// folder: DIR is always either absent or a complete run folder whose summary.json and scenario.yaml belong to the
// same run (never the new summary next to the old scenario), and the next run cleans the killed runs' staging.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using mmtwin::testing::Shell;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CliKillTest, RunFolderIsAlwaysWhole) {
  const fs::path dir = fs::path(::testing::TempDir()) / "cli_kill";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string base = Read(fs::path(MMTWIN_SOURCE_DIR) / "scenarios/default.yaml");
  for (const char* name : {"alpha", "beta"}) {
    std::string text = base;
    const size_t at = text.find("name: ");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, text.find('\n', at) - at, std::string("name: ") + name);
    std::ofstream(dir / (std::string(name) + ".yaml")) << text;
  }
  const fs::path run = dir / "run";
  int complete = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const std::string scenario = (dir / (trial % 2 ? "beta.yaml" : "alpha.yaml")).string();
    const double delay_s = 0.02 + 0.03 * trial;  // 0.02 .. 0.71 s, across the whole run and its writes
    Shell("timeout -s KILL " + std::to_string(delay_s) + " " + MMTWIN_CLI + " simulate " + scenario + " -o " +
          run.string() + " --json > /dev/null 2>&1");
    if (!fs::exists(run)) continue;
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(run)) names.insert(e.path().filename().string());
    EXPECT_EQ(names,
              (std::set<std::string>{"summary.json", "stages.csv", "ops.csv", "trace.json", "scenario.yaml"}))
        << "trial " << trial;
    const auto summary = nlohmann::json::parse(Read(run / "summary.json"), nullptr, false);
    ASSERT_FALSE(summary.is_discarded()) << "trial " << trial;
    const std::string yaml = Read(run / "scenario.yaml");
    EXPECT_NE(yaml.find("name: " + summary.value("scenario", std::string("?"))), std::string::npos)
        << "trial " << trial << ": summary of " << summary.value("scenario", std::string("?"))
        << " next to another scenario";
    ++complete;
  }
  EXPECT_GT(complete, 0);  // the later trials finish
  // A finished run removes the staging folders its killed predecessors left.
  ASSERT_EQ(Shell(std::string(MMTWIN_CLI) + " simulate " + (dir / "alpha.yaml").string() + " -o " +
                  run.string() + " --json > /dev/null 2>&1")
                .code,
            0);
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find("run.tmp-"), std::string::npos) << e.path();
  fs::remove_all(dir);
}

}  // namespace

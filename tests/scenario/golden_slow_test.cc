// SPDX-License-Identifier: Apache-2.0
// Goldens of the shipped scenarios: every scenario file under scenarios/ (except sweeps/, tune/, goldens/ and the
// validation suites *.suite.yaml) is run
// through the real CLI (`mmtwin simulate --json -o DIR`, `mmtwin plan --json`) and its summary.json, stages.csv
// and plan JSON must equal, byte for byte, the files checked in under scenarios/goldens/<path without .yaml>/.
// A change to any simulated figure fails here; `bash tests/update_goldens.sh` regenerates the goldens so the
// change is reviewed as a diff.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "scenario/shipped_scenarios.h"

namespace {

namespace fs = std::filesystem;
using mmtwin::testing::Shell;
using mmtwin::testing::ShippedScenarios;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "line N: expected 'x', got 'y'" for the first differing line, or "" when equal.
std::string FirstDifference(const std::string& want, const std::string& got) {
  if (want == got) return "";
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "the files differ only in their final newline";
    if (!ha || !hb || la != lb)
      return "line " + std::to_string(line) + ": expected '" + (ha ? la : "<end>") + "', got '" +
             (hb ? lb : "<end>") + "'";
  }
}

class GoldenTest : public ::testing::TestWithParam<fs::path> {};

TEST_P(GoldenTest, SummaryStagesAndPlanEqualTheGoldens) {
  const fs::path scenario = GetParam();
  const fs::path root = fs::path(MMTWIN_SOURCE_DIR) / "scenarios";
  const fs::path rel = fs::relative(scenario, root).replace_extension("");
  const fs::path golden = root / "goldens" / rel;
  ASSERT_TRUE(fs::exists(golden / "summary.json"))
      << golden << " has no golden: run bash tests/update_goldens.sh and commit scenarios/goldens";
  const fs::path out = fs::path(::testing::TempDir()) / ("golden_" + rel.string());
  fs::remove_all(out);
  const auto sim = Shell(std::string(MMTWIN_CLI) + " simulate " + scenario.string() + " --json -o " +
                         out.string() + " 2>&1");
  ASSERT_LE(sim.code, 1) << sim.out;  // 1 = a stage does not fit: still written
  const auto plan = Shell(std::string(MMTWIN_CLI) + " plan " + scenario.string() + " --json 2>/dev/null");
  ASSERT_LE(plan.code, 1) << plan.out;
  const std::string hint = " (if the change is intended: bash tests/update_goldens.sh, then review git diff)";
  for (const char* file : {"summary.json", "stages.csv"}) {
    const std::string diff = FirstDifference(ReadFile(golden / file), ReadFile(out / file));
    EXPECT_EQ(diff, "") << rel.string() << "/" << file << ": " << diff << hint;
  }
  const std::string diff = FirstDifference(ReadFile(golden / "plan.json"), plan.out);
  EXPECT_EQ(diff, "") << rel.string() << "/plan.json: " << diff << hint;
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(
    Shipped, GoldenTest, ::testing::ValuesIn(ShippedScenarios()),
    [](const ::testing::TestParamInfo<fs::path>& info) {
      std::string n =
          fs::relative(info.param, fs::path(MMTWIN_SOURCE_DIR) / "scenarios").replace_extension("").string();
      for (char& c : n)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

TEST(GoldenTest, EveryShippedScenarioIsCovered) { EXPECT_GE(ShippedScenarios().size(), 7u); }

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// A validation suite's write-up (report/validation_suite.h): the README's figures follow from the summaries (closed
// forms: 50% and 4% off), the charts hold each held-out scenario's times in ms and each stage's fractions, and
// WriteValidationReport leaves README.md and the two SVGs in the folder.
#include "report/validation_suite.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mmtwin::report {
namespace {

namespace fs = std::filesystem;

StageRecord Stage(int64_t peak, double busy, double bubble) {
  StageRecord s;
  s.peak_memory_bytes = peak;
  s.busy_ratio = busy;
  s.bubble_ratio = bubble;
  return s;
}

ValidationReport Report() {
  ValidationReport r;
  r.suite.name = "t";
  r.suite.path = "t.suite.yaml";
  r.machine = "m";
  r.command = "mmtwin validate t.suite.yaml -o out";
  for (double m : {100.0, 200.0}) {
    ScenarioValidation v;
    v.name = "s" + std::to_string(static_cast<int>(m));
    v.measured.iteration_time_us.p50 = m * 1000;
    v.analytic.iteration_time_us.p50 = m * 500;     // 50% off
    v.calibrated.iteration_time_us.p50 = m * 1040;  // 4% off
    v.measured.stages = {Stage(1000, 0.6, 0.3)};
    v.calibrated.stages = {Stage(0, 0.62, 0.27)};
    v.calibrated_peak_bytes = {1050};
    r.held_out.push_back(v);
  }
  return r;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ValidationWriteUp, ReadmeFiguresFollowFromTheSummaries) {
  const std::string md = ValidationMarkdown(Report());
  EXPECT_EQ(
      md.rfind("# Validation: t\n\nMachine: m  \nCommand: `mmtwin validate t.suite.yaml -o out`  \n", 0), 0u);
  EXPECT_NE(md.find("| iteration time p50, MAPE over 2 scenarios | 50.0% | 4.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("worst per-stage busy error (points) | – | 2.0"), std::string::npos) << md;
  EXPECT_NE(md.find("worst per-stage bubble error (points) | – | 3.0"), std::string::npos) << md;
  EXPECT_NE(md.find("worst per-stage peak memory error | – | 5.0%"), std::string::npos) << md;
  EXPECT_NE(md.find("on every held-out scenario's iteration time: yes"), std::string::npos);
  EXPECT_NE(md.find("| s100 | 1×1×1 | 100.0 | 50.0 (-50.0%) | 104.0 (+4.0%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| s200 | 0 | 0.600 | 0.620 (+2.0) | 0.300 | 0.270 (-3.0) |"), std::string::npos) << md;
  EXPECT_NE(md.find("](scatter.svg)"), std::string::npos);
  EXPECT_NE(md.find("](stages.svg)"), std::string::npos);
}

TEST(ValidationWriteUp, ChartsHoldTheTimesAndFractions) {
  const ValidationReport r = Report();
  const ChartSpec scatter = ScatterChart(r);
  EXPECT_EQ(scatter.kind, ChartSpec::Kind::kPoints);
  ASSERT_EQ(scatter.series.size(), 2u);
  EXPECT_EQ(scatter.series[0].name, "analytic (50.0% MAPE)");
  EXPECT_EQ(scatter.series[1].name, "calibrated (4.0% MAPE)");
  EXPECT_EQ(scatter.series[1].xs, (std::vector<double>{100, 200}));
  EXPECT_EQ(scatter.series[0].values, (std::vector<double>{50, 100}));
  EXPECT_EQ(scatter.series[1].values, (std::vector<double>{104, 208}));
  EXPECT_EQ(scatter.diagonal_label, "predicted = measured");
  const ChartSpec stages = StageChart(r);
  EXPECT_EQ(stages.categories, (std::vector<std::string>{"s100 s0", "s200 s0"}));
  EXPECT_EQ(stages.stacks.size(), 2u);
  ASSERT_EQ(stages.series.size(), 3u);
  EXPECT_EQ(stages.series[0].values,
            (std::vector<double>{0.6, 0.62, 0.6, 0.62}));  // busy: measured, calibrated
  EXPECT_EQ(stages.series[1].values, (std::vector<double>{0.3, 0.27, 0.3, 0.27}));
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(stages.series[0].values[i] + stages.series[1].values[i] + stages.series[2].values[i], 1,
                1e-12);
  EXPECT_EQ(StageChartHeightPx(stages), 110 + 2 * 30);
}

TEST(ValidationWriteUp, WritesTheReadmeAndTwoSvgs) {
  const fs::path dir = fs::path(::testing::TempDir()) / "validation_write_up";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(WriteValidationReport(Report(), dir.string()).ok());
  EXPECT_EQ(Read(dir / "README.md"), ValidationMarkdown(Report()));
  const std::string scatter = Read(dir / "scatter.svg"), stages = Read(dir / "stages.svg");
  EXPECT_EQ(scatter.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640.0\" height=\"520.0\"", 0),
            0u);
  EXPECT_NE(scatter.find(">calibrated (4.0% MAPE)</text>"), std::string::npos);
  EXPECT_NE(scatter.find(">measured (ms)</text>"), std::string::npos);
  EXPECT_NE(stages.find(">s100 s0</text>"), std::string::npos);
  EXPECT_NE(stages.find("height=\"170.0\""), std::string::npos);
  EXPECT_FALSE(WriteValidationReport(Report(), (dir / "no" / "such").string()).ok());
}

}  // namespace
}  // namespace mmtwin::report

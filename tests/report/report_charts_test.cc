// SPDX-License-Identifier: Apache-2.0
// Readers' traps in the reports (issue 33, item 8): the OrchMLLM scaling chart marks the paper's 2,560-GPU
// MLLM-84B point and says mmtwin's gap to it in its legend; the OmniBal ablation is Table 3 in the report, its chart
// and the sweep that runs it alike (the sweep's description said Table 7, the table of its steps' memory).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "report/common.h"

namespace mmtwin::report::internal {
namespace {

TEST(ReportCharts, OrchmllmScalingMarksThePaperPointAndTheGap) {
  ReportTable full, scale;
  full.rows.push_back({"MLLM-84B", "MFU (%), OrchMLLM", "41.6", 34.9, 1, "orchmllm-scale#14"});
  const std::vector<std::string> gpus = {"64", "128", "256", "512", "1024", "2560"};
  for (size_t i = 0; i < gpus.size(); ++i) {
    scale.rows.push_back({gpus[i], "MFU (%), OrchMLLM", "", 40.0 - i, 1, ""});
    scale.rows.push_back({gpus[i], "MFU (%), w/o balance", "", 30.0 - i, 1, ""});
  }
  const ChartSpec c = OrchmllmScalingChart(full, scale);
  EXPECT_EQ(c.categories, gpus);
  ASSERT_EQ(c.series.size(), 4u);
  EXPECT_EQ(c.series[0].values[0], 40.0);
  EXPECT_EQ(c.series[1].values[5], 25.0);
  EXPECT_EQ(c.series[2].name, "paper MLLM-84B (§8.1): 41.6");
  EXPECT_EQ(c.series[3].name, "mmtwin MLLM-84B: 34.9 (-6.7 pts)");
  for (size_t i = 0; i + 1 < gpus.size(); ++i) {
    EXPECT_TRUE(std::isnan(c.series[2].values[i])) << i;  // only the measured scale has a paper point
    EXPECT_TRUE(std::isnan(c.series[3].values[i])) << i;
  }
  EXPECT_EQ(c.series[2].values.back(), 41.6);
  EXPECT_EQ(c.series[3].values.back(), 34.9);
  full.rows[0].mmtwin = 43.0;
  EXPECT_EQ(OrchmllmScalingChart(full, scale).series[3].name, "mmtwin MLLM-84B: 43.0 (+1.4 pts)");
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(ReportCharts, TheOmnibalAblationIsTable3InTheReportAndItsSweep) {
  const std::string src = MMTWIN_SOURCE_DIR;
  const std::string tmpl = Read(src + "/sim/report/data/omnibal/template.md");
  const std::string sweep = Read(src + "/scenarios/sweeps/omnibal-ablation.yaml");
  ASSERT_FALSE(tmpl.empty());
  ASSERT_FALSE(sweep.empty());
  EXPECT_NE(tmpl.find("### Ablation: data, model and memory balance (Table 3)"), std::string::npos);
  // Every table number the sweep names next to "ablation" is 3 (Table 7 holds the steps' remaining memory).
  const std::regex ablation("Table ([0-9]+)[^\\n]{0,12}ablation|ablation[^\\n]{0,12}Table ([0-9]+)");
  int named = 0;
  for (std::sregex_iterator it(sweep.begin(), sweep.end(), ablation), end; it != end; ++it, ++named) {
    const std::string n = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
    EXPECT_EQ(n, "3") << it->str();
  }
  EXPECT_GE(named, 2);  // the header comment and the description
}

}  // namespace
}  // namespace mmtwin::report::internal

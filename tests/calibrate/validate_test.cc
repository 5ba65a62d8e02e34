// SPDX-License-Identifier: Apache-2.0
// Validation suites and scoring (calibrate/validate.h): suite errors name file:line: key; the memory fit
// recovers known terms; MAPE, the headline and validation.csv follow from the summaries (closed forms).
#include "calibrate/validate.h"

#include "calibrate/published.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/scenario/scenario.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

std::string Write(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(::testing::TempDir()) / "validate_test";
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

TEST(ValidationSuite, LoadsAndResolvesPathsAgainstTheSuite) {
  Write("a.yaml", "name: a\n");
  Write("b.yaml", "name: b\n");
  const std::string path = Write("s.suite.yaml", "name: s\ncalibration: [a.yaml]\nheld_out:\n  - b.yaml\n");
  auto s = LoadValidationSuite(path);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->name, "s");
  ASSERT_EQ(s->calibration.size(), 1u);
  EXPECT_EQ(s->calibration[0], (fs::path(path).parent_path() / "a.yaml").string());
  ASSERT_EQ(s->held_out.size(), 1u);
}

TEST(ValidationSuite, ErrorsNameFileLineAndKey) {
  Write("a.yaml", "name: a\n");
  auto err = [](const std::string& text) {
    const std::string path = Write("bad.suite.yaml", text);
    auto s = LoadValidationSuite(path);
    return s.ok() ? std::string("ok") : s.error().message();
  };
  EXPECT_NE(err("calibration: [a.yaml]\nheld_out: [missing.yaml]\n")
                .find("bad.suite.yaml:2: held_out[0]: 'missing.yaml': no such file"),
            std::string::npos)
      << err("calibration: [a.yaml]\nheld_out: [missing.yaml]\n");
  EXPECT_NE(err("calibration: [a.yaml]\n").find("held_out: expected a non-empty list"), std::string::npos);
  EXPECT_NE(err("calibration: [a.yaml]\nheld_out: [a.yaml]\n").find("is also a calibration scenario"),
            std::string::npos);
  EXPECT_NE(err("calibration: [a.yaml]\nheld_out: [a.yaml]\nscored: 1\n")
                .find("bad.suite.yaml:3: scored: unknown key"),
            std::string::npos);
}

StageRecord Stage(int64_t state, int64_t act, int64_t peak, double busy = 0.5, double bubble = 0.3) {
  StageRecord s;
  s.model_state_bytes = state;
  s.peak_activation_bytes = act;
  s.peak_memory_bytes = peak;
  s.busy_ratio = busy;
  s.bubble_ratio = bubble;
  return s;
}

TEST(MemoryFit, RecoversStateActivationAndFixedTerms) {
  // measured = 2.5 x state + 4 x activations + 30 MiB, over 6 stages.
  std::vector<std::pair<RunSummary, RunSummary>> pairs;
  const int64_t fixed = 30 << 20;
  for (int r = 0; r < 3; ++r) {
    RunSummary m, s;
    for (int st = 0; st < 2; ++st) {
      const int64_t state = (r + 1) * 1000000 + st * 3000000, act = (st + 1) * 2000000 + r * 700000;
      s.stages.push_back(Stage(state, act, 0));
      m.stages.push_back(Stage(0, 0, static_cast<int64_t>(2.5 * state + 4 * act) + fixed));
    }
    pairs.push_back({m, s});
  }
  auto f = FitMemory(pairs);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_NEAR(f->fit.coefficients[0], 2.5, 1e-6);
  EXPECT_NEAR(f->fit.coefficients[1], 4, 1e-6);
  EXPECT_NEAR(f->fit.coefficients[2], fixed, 1);
  EXPECT_NEAR(f->Predict(Stage(5000000, 1000000, 0)), 2.5 * 5e6 + 4e6 + fixed, 2);
  // Too few stages.
  pairs.resize(1);
  pairs[0].first.stages.resize(1);
  EXPECT_NE(FitMemory(pairs).error().message().find("needs at least 3"), std::string::npos);
}

TEST(ValidationReport, MapeAndReportFollowFromTheSummaries) {
  ValidationReport r;
  r.suite.name = "t";
  for (double m : {100.0, 200.0}) {
    ScenarioValidation v;
    v.name = "s" + std::to_string(static_cast<int>(m));
    v.measured.iteration_time_us.p50 = m;
    v.analytic.iteration_time_us.p50 = m * 0.5;     // 50% off
    v.calibrated.iteration_time_us.p50 = m * 1.04;  // 4% off
    v.measured.stages = {Stage(0, 0, 1000, 0.6, 0.3)};
    v.calibrated.stages = {Stage(0, 0, 0, 0.62, 0.27)};
    v.calibrated_peak_bytes = {1050};
    r.held_out.push_back(v);
  }
  EXPECT_NEAR(IterationMape(r, false), 0.5, 1e-12);
  EXPECT_NEAR(IterationMape(r, true), 0.04, 1e-12);
  const ValidationHeadline h = Headline(r);
  EXPECT_NEAR(h.mape_analytic, 0.5, 1e-12);
  EXPECT_NEAR(h.mape_calibrated, 0.04, 1e-12);
  EXPECT_NEAR(h.worst_busy, 0.02, 1e-12);
  EXPECT_NEAR(h.worst_bubble, 0.03, 1e-12);
  EXPECT_NEAR(h.worst_peak_memory, 0.05, 1e-12);
  EXPECT_TRUE(h.calibrated_beats_analytic);
  const std::string csv = ValidationCsv(r);
  EXPECT_NE(csv.find("s100,iteration_p50_us,,calibrated,100,104,0.04"), std::string::npos) << csv;
  // The write-up (README.md and its charts) is the report library's: tests/report/validation_suite_test.cc.
}

// The shipped suites are documentation: each loads, its scenarios load, it holds out enough scenarios (8 for the
// ViT + LLM suites), and
// every scenario shares the calibration's model and tensor-parallel degree (what Calibrate requires), while
// the held-out set varies what the fit never saw.
TEST(ValidationSuite, ShippedSuitesLoadAndHoldOutEnough) {
  const fs::path root = fs::path(MMTWIN_SOURCE_DIR) / "scenarios" / "validation";
  int suites = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    if (!e.path().filename().string().ends_with(".suite.yaml")) continue;
    if (IsPublishedSuite(e.path().string())) continue;  // published runs: published_test.cc
    ++suites;
    auto suite = LoadValidationSuite(e.path().string());
    ASSERT_TRUE(suite.ok()) << suite.error().message();
    const bool full = suite->held_out.size() >= 8;  // the ViT + LLM suites; cpu-audio holds out 4
    EXPECT_GE(suite->held_out.size(), 4u) << e.path();
    if (suite->name == "cpu-ws2" || suite->name == "cpu-ws4") {
      EXPECT_TRUE(full) << e.path();
    }
    EXPECT_GE(suite->calibration.size(), 1u) << e.path();
    std::set<std::string> models, schedules, recomputes, data;
    std::set<int> dps, tps;
    int max_world = 1;
    for (const std::vector<std::string>* list : {&suite->calibration, &suite->held_out})
      for (const std::string& path : *list) {
        auto s = LoadScenario(path);
        ASSERT_TRUE(s.ok()) << s.error().message();
        models.insert(s->model);
        tps.insert(s->parallel.tp);
        max_world = std::max(max_world, s->parallel.world_size());
        if (list == &suite->held_out) {
          schedules.insert(s->schedule.name);
          recomputes.insert(s->recompute.name);
          data.insert(s->data.name);
          dps.insert(s->parallel.dp);
        }
      }
    EXPECT_EQ(models.size(), 1u) << e.path();
    EXPECT_EQ(tps.size(), 1u) << e.path();
    EXPECT_GE(data.size(), 2u) << e.path();
    if (max_world == 1) {  // one GPU (the gpu-* suites): no schedule or DP to vary; recompute and data do
      EXPECT_GE(recomputes.size(), 2u) << e.path();
      continue;
    }
    EXPECT_GE(schedules.size(), 2u) << e.path();
    if (full) {
      EXPECT_GE(recomputes.size(), 2u) << e.path();
    }
    EXPECT_GE(dps.size(), 2u) << e.path();
  }
  EXPECT_GE(suites, 3);
}

}  // namespace
}  // namespace mmtwin

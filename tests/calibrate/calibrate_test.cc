// SPDX-License-Identifier: Apache-2.0
// Calibration from measured runs (calibrate/calibrate.h): coefficients recovered from synthetic
// measurements made with known ones plus noise; every bad input an error naming where it is.
#include "calibrate/calibrate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "calibrate/synthetic_runs.h"
#include "core/cost/cost_model.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using testing::SyntheticRun;
using testing::TrueCoefficients;
using testing::WriteSyntheticRun;

std::string Dir(const std::string& name) {
  return (fs::path(::testing::TempDir()) / ("calibrate_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(Calibrate, RecoversKnownCoefficientsFromNoisyRuns) {
  SyntheticRun a{Dir("a")}, b{Dir("b")};
  b.seed = 2;
  ASSERT_EQ(WriteSyntheticRun(a), "");
  ASSERT_EQ(WriteSyntheticRun(b), "");
  auto cal = Calibrate({a.dir, b.dir});
  ASSERT_TRUE(cal.ok()) << cal.error().message();
  EXPECT_EQ(cal->tp, 1);
  ASSERT_EQ(cal->models.size(), 1u);
  // llava-1.5-7b shrunk: vision (embedding, transformer), projector, LLM (embedding, transformer, head).
  ASSERT_EQ(cal->fits.size(), 6u);
  for (const LayerTypeFit& f : cal->fits) {
    const TimeCoefficients want = TrueCoefficients(f.source, f.kind);
    const std::string what = f.source + "," + LayerKindName(f.kind);
    for (const auto& [fit, c0, tok, pair] :
         {std::tuple{&f.fwd, want.fwd_c0_us, want.fwd_token_us, want.fwd_pair_us},
          std::tuple{&f.bwd, want.bwd_c0_us, want.bwd_token_us, want.bwd_pair_us}}) {
      // Tolerances: 2% noise over 80+ rows. The intercept is judged against a typical time (1500 tokens).
      const double typical = c0 + tok * 1500 + pair * 1500.0 * 1500 / 3;
      EXPECT_NEAR(fit->coefficients[0], c0, 0.03 * typical) << what;
      EXPECT_NEAR(fit->coefficients[1], tok, 0.05 * tok) << what;
      EXPECT_NEAR(fit->coefficients[2] * 1500.0 * 1500 / 3, pair * 1500.0 * 1500 / 3, 0.03 * typical) << what;
      EXPECT_GT(fit->r2, 0.95) << what;
      EXPECT_LT(fit->rel_residual_p50, 0.03) << what;
    }
  }
  // Memory: the stored bytes per token and pair, and the output bytes per token kept by a recomputed layer.
  for (const LayerTypeFit& f : cal->fits) {
    const TimeCoefficients want = TrueCoefficients(f.source, f.kind);
    const std::string what = f.source + "," + LayerKindName(f.kind);
    ASSERT_TRUE(f.has_memory) << what;
    EXPECT_EQ(f.act.samples * 4, f.bwd.samples * 3) << what;  // 3 of every 4 rows were not recomputed
    const double typical = want.act_c0_bytes + want.act_token_bytes * 1500 + want.act_pair_bytes * 1500 * 500;
    EXPECT_NEAR(f.act.coefficients[0], want.act_c0_bytes, 0.05 * typical) << what;
    EXPECT_NEAR(f.act.coefficients[1] * 1500, want.act_token_bytes * 1500, 0.03 * typical) << what;
    EXPECT_NEAR(f.act.coefficients[2] * 1500 * 500, want.act_pair_bytes * 1500 * 500, 0.05 * typical) << what;
    EXPECT_NEAR(f.kept.coefficients[0], want.kept_token_bytes, 0.01) << what;
    // The backward's working memory, from every row (recomputed ones too).
    ASSERT_TRUE(f.has_work) << what;
    EXPECT_EQ(f.work.samples, f.bwd.samples) << what;
    const double work = want.work_c0_bytes + want.work_token_bytes * 1500 + want.work_pair_bytes * 1500 * 500;
    EXPECT_NEAR(f.work.coefficients[0], want.work_c0_bytes, 0.05 * work) << what;
    EXPECT_NEAR(f.work.coefficients[1] * 1500, want.work_token_bytes * 1500, 0.03 * work) << what;
    EXPECT_NEAR(f.work.coefficients[2] * 1500 * 500, want.work_pair_bytes * 1500 * 500, 0.05 * work) << what;
  }
  // The profile round-trips through the cost model's own reader and prices every layer of the model, its
  // memory from the fitted bytes.
  auto table = CoefficientCostModel::Parse(FormatProfile(*cal), "profile", AnalyticCostModel(DeviceSpec{}));
  ASSERT_TRUE(table.ok()) << table.error().message();
  auto model = LoadScenarioModel(a.scenario);
  ASSERT_TRUE(model.ok());
  EXPECT_TRUE(table->Supports(*model).ok());
  const std::vector<Layer> layers = Layers(*model);
  for (const Layer& l : layers) {
    if (l.kind != LayerKind::kTransformer) continue;
    const TimeCoefficients want = TrueCoefficients(model->components[l.component].source, l.kind);
    LayerWorkload w;
    w.tokens = 2000;
    w.attn_pairs = 2000.0 * 500;
    w.sequences = 4;
    const LayerCost cost = table->Cost(*model, l, w);
    const double act = want.act_c0_bytes + want.act_token_bytes * 2000 + want.act_pair_bytes * w.attn_pairs;
    EXPECT_NEAR(static_cast<double>(cost.act_bytes), act, 0.03 * act) << l.label;
    EXPECT_NEAR(static_cast<double>(cost.act_bytes_recompute), 16.0 * 2000, 20) << l.label;
    const double work =
        want.work_c0_bytes + want.work_token_bytes * 2000 + want.work_pair_bytes * w.attn_pairs;
    EXPECT_NEAR(static_cast<double>(cost.bwd_work_bytes), work, 0.03 * work) << l.label;
  }
  // Runs without the working memory (v2 files, or an allocator that was not counted) fit no work row, and the
  // profile prices the analytic model's (cost_model.h AnalyticBackwardWorkBytes).
  SyntheticRun c{Dir("c")};
  c.no_work = true;
  ASSERT_EQ(WriteSyntheticRun(c), "");
  auto nowork = Calibrate({c.dir});
  ASSERT_TRUE(nowork.ok()) << nowork.error().message();
  for (const LayerTypeFit& f : nowork->fits) EXPECT_FALSE(f.has_work);
  auto plain = CoefficientCostModel::Parse(FormatProfile(*nowork), "p", AnalyticCostModel(DeviceSpec{}));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->Format().find("work_"), std::string::npos);
  for (const Layer& l : layers) {
    LayerWorkload w;
    w.tokens = 2000;
    w.attn_pairs = 2000.0 * 500;
    EXPECT_EQ(plain->Cost(*model, l, w).bwd_work_bytes, AnalyticBackwardWorkBytes(*model, l, w, 1))
        << l.label;
  }
}

// The optimizer step from the runs' measured optimizer ops: microseconds per parameter the GPU updates (at
// dp 1: every parameter of the stage), into the profile's optimizer row; runs without ops.csv give no row.
TEST(Calibrate, FitsTheOptimizerStepFromTheMeasuredOps) {
  SyntheticRun a{Dir("opt_a")}, b{Dir("opt_b")};
  a.optimizer_param_us = b.optimizer_param_us = 2.5e-5;
  a.stage_params = 1000000000;
  b.stage_params = 2000000000;  // another parameter count: one coefficient fits both
  b.seed = 3;
  ASSERT_EQ(WriteSyntheticRun(a), "");
  ASSERT_EQ(WriteSyntheticRun(b), "");
  auto cal = Calibrate({a.dir, b.dir});
  ASSERT_TRUE(cal.ok()) << cal.error().message();
  EXPECT_EQ(cal->optimizer_samples, 2 * a.rows_per_layer);
  EXPECT_NEAR(cal->optimizer_param_us, 2.5e-5, 0.01 * 2.5e-5);  // 2% noise over 80 steps
  EXPECT_GT(cal->optimizer_rel_spread, 0);
  EXPECT_LT(cal->optimizer_rel_spread, 0.1);
  auto table = CoefficientCostModel::Parse(FormatProfile(*cal), "profile", AnalyticCostModel(DeviceSpec{}));
  ASSERT_TRUE(table.ok()) << table.error().message();
  ASSERT_TRUE(table->MeasuredOptimizerStepUs(4e9).has_value());
  EXPECT_NEAR(*table->MeasuredOptimizerStepUs(4e9), 2.5e-5 * 4e9, 0.01 * 2.5e-5 * 4e9);
  EXPECT_NE(FormatCalibrationTable(*cal).find("optimizer step"), std::string::npos);
  SyntheticRun none{Dir("opt_none")};
  ASSERT_EQ(WriteSyntheticRun(none), "");
  auto plain = Calibrate({none.dir});
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  EXPECT_EQ(plain->optimizer_samples, 0);
  EXPECT_EQ(FormatProfile(*plain).find("optimizer"), std::string::npos);
}

TEST(Calibrate, ProfileWithoutALayerTypeIsAnErrorNamingIt) {
  SyntheticRun a{Dir("missing")};
  ASSERT_EQ(WriteSyntheticRun(a), "");
  auto cal = Calibrate({a.dir});
  ASSERT_TRUE(cal.ok()) << cal.error().message();
  std::erase_if(cal->fits, [](const LayerTypeFit& f) { return f.kind == LayerKind::kHead; });
  auto table = CoefficientCostModel::Parse(FormatProfile(*cal), "profile", AnalyticCostModel(DeviceSpec{}));
  ASSERT_TRUE(table.ok());
  auto model = LoadScenarioModel(a.scenario);
  ASSERT_TRUE(model.ok());
  const Status st = table->Supports(*model);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("vicuna-7b-v1.5,head"), std::string::npos) << st.error().message();
}

TEST(Calibrate, BadInputsAreErrorsNamingTheRun) {
  auto expect_error = [](const std::vector<std::string>& dirs, const std::vector<std::string>& parts) {
    auto cal = Calibrate(dirs);
    ASSERT_FALSE(cal.ok());
    for (const std::string& p : parts)
      EXPECT_NE(cal.error().message().find(p), std::string::npos) << cal.error().message();
  };
  // A simulated run.
  SyntheticRun sim{Dir("sim")};
  sim.simulated = true;
  ASSERT_EQ(WriteSyntheticRun(sim), "");
  expect_error({sim.dir}, {sim.dir + "/summary.json", "simulated run"});
  // A layers.csv of another model.
  auto other = LoadModel("internvl-1.5-6b-20b");
  ASSERT_TRUE(other.ok());
  SyntheticRun foreign{Dir("foreign")};
  foreign.labels_from = &*other;
  ASSERT_EQ(WriteSyntheticRun(foreign), "");
  expect_error({foreign.dir}, {foreign.dir + "/layers.csv:6: label: 'vision.block.2'", "from another model"});
  // Another schema version.
  SyntheticRun v2{Dir("v2")};
  v2.version_line = "# mmtwin-layers v4";
  ASSERT_EQ(WriteSyntheticRun(v2), "");
  expect_error({v2.dir}, {v2.dir + "/layers.csv:1", "unsupported version 'mmtwin-layers v4'"});
  // Too few samples to fit.
  SyntheticRun few{Dir("few")};
  few.rows_per_layer = 3;
  ASSERT_EQ(WriteSyntheticRun(few), "");
  expect_error({few.dir}, {"layer type 'clip-vit-l-14-336,embedding': 3 measured rows, at least 8"});
  // Runs of different tp.
  SyntheticRun tp1{Dir("tp1")}, tp2{Dir("tp2")};
  tp2.scenario.parallel.tp = 2;
  tp2.scenario.parallel.dp = 1;
  ASSERT_EQ(WriteSyntheticRun(tp1), "");
  ASSERT_EQ(WriteSyntheticRun(tp2), "");
  expect_error({tp1.dir, tp2.dir},
               {tp2.dir + "/scenario.yaml: parallel.tp: 2", "calibrate each tp separately"});
  // A folder with no run.
  expect_error({Dir("nothing")}, {"nothing"});
  expect_error({}, {"no run folders"});
}

}  // namespace
}  // namespace mmtwin

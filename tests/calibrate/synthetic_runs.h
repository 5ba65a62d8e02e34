// SPDX-License-Identifier: Apache-2.0
// Measured run folders made from known per-layer coefficients, for calibration tests: summary.json (source
// measured), scenario.yaml (scenarios/backend/small.yaml, resolved) and layers.csv whose times are
// c0 + c_token · tokens + c_pair · pairs (backward twice the forward's coefficients) times (1 + noise · N(0, 1)),
// and whose memory columns follow TrueCoefficients' bytes the same way (every fourth row recomputed: no bytes).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/cost/cost_model.h"
#include "core/records/layer_timings.h"
#include "core/records/records_codec.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"

namespace mmtwin::testing {

// The true forward coefficients of each layer type of the small backend model (component source, kind).
inline TimeCoefficients TrueCoefficients(const std::string& source, LayerKind kind) {
  TimeCoefficients c;
  const double scale = source.find("clip") != std::string::npos ? 1.5 : 1.0;
  switch (kind) {
    case LayerKind::kTransformer:
      c = {40 * scale, 0.8 * scale, 3e-4 * scale, 0, 0, 0};
      break;
    case LayerKind::kEmbedding:
      c = {15 * scale, 0.1 * scale, 0, 0, 0, 0};
      break;
    case LayerKind::kProjector:
      c = {25, 0.3, 0, 0, 0, 0};
      break;
    case LayerKind::kHead:
      c = {60, 1.2, 0, 0, 0, 0};
      break;
  }
  c.bwd_c0_us = 2 * c.fwd_c0_us;
  c.bwd_token_us = 2 * c.fwd_token_us;
  c.bwd_pair_us = 2 * c.fwd_pair_us;
  // Memory: stored bytes c0 + per token (+ per attention pair for blocks); the output 16 bytes per token.
  c.has_memory = true;
  c.act_c0_bytes = 4096 * scale;
  c.act_token_bytes = (kind == LayerKind::kTransformer ? 160 : 48) * scale;
  c.act_pair_bytes = kind == LayerKind::kTransformer ? 4 * scale : 0;
  c.kept_token_bytes = 16;
  // The backward's working memory: c0 + per token (+ per pair for blocks).
  c.has_work = true;
  c.work_c0_bytes = 1024 * scale;
  c.work_token_bytes = (kind == LayerKind::kTransformer ? 40 : 12) * scale;
  c.work_pair_bytes = kind == LayerKind::kTransformer ? 1 * scale : 0;
  return c;
}

inline Scenario SmallBackendScenario() {
  auto s = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml");
  return s.ok() ? *s : Scenario{};
}

struct SyntheticRun {
  std::string dir;
  Scenario scenario = SmallBackendScenario();
  int rows_per_layer = 40;
  double noise = 0.02;
  uint64_t seed = 1;
  bool simulated = false;                  // write source "simulated"
  std::string version_line;                // replaces "# mmtwin-layers v3" when set
  bool no_work = false;                    // write bwd_work_bytes 0 (not counted)
  const ModelSpec* labels_from = nullptr;  // write another model's labels (a layers.csv of another model)
  // > 0: ops.csv holds rows_per_layer optimizer steps of optimizer_param_us x the stage's parameters (noisy),
  // and the summary's one stage holds stage_params parameters.
  double optimizer_param_us = 0;
  int64_t stage_params = 0;
  // > 0: every row has these tokens (one sequence length: the per-token cost cannot be told from the fixed one).
  int64_t fixed_tokens = 0;
  std::optional<MachineRecord> machine;  // written into the summary when set
};

// Writes the run folder; returns an error message or "".
inline std::string WriteSyntheticRun(const SyntheticRun& r) {
  std::filesystem::remove_all(r.dir);
  std::filesystem::create_directories(r.dir);
  auto model = LoadScenarioModel(r.scenario);
  if (!model.ok()) return model.error().message();
  RunSummary s;
  s.source = r.simulated ? RecordSource::kSimulated : RecordSource::kMeasured;
  s.scenario = r.scenario.name;
  s.model = model->name;
  s.parallel = r.scenario.parallel;
  s.machine = r.machine;
  if (r.optimizer_param_us > 0) {
    StageRecord st;
    st.params = r.stage_params;
    s.stages.push_back(st);
  }
  if (!WriteFileAtomic(r.dir + "/summary.json", SummaryToJson(s) + "\n").ok()) return "summary";
  if (!WriteFileAtomic(r.dir + "/scenario.yaml", FormatScenario(r.scenario)).ok()) return "scenario";
  const std::vector<Layer> layers = Layers(*model);
  std::mt19937_64 rng(r.seed);
  std::uniform_int_distribution<int64_t> tok(100, 3000);
  std::uniform_int_distribution<int> spans(1, 6);
  std::normal_distribution<double> gauss(0, 1);
  std::vector<LayerTiming> rows;
  for (int k = 0; k < r.rows_per_layer; ++k)
    for (size_t l = 0; l < layers.size(); ++l) {
      LayerTiming t;
      t.iteration = k;
      t.layer = static_cast<int32_t>(l);
      t.micro_batch = 0;
      t.tokens = tok(rng);
      if (r.fixed_tokens > 0) t.tokens = r.fixed_tokens;
      t.spans = spans(rng);
      t.attention_pairs = static_cast<double>(t.tokens) * static_cast<double>(t.tokens) / t.spans;
      const TimeCoefficients c = TrueCoefficients(
          model->components[static_cast<size_t>(layers[l].component)].source, layers[l].kind);
      const double x = static_cast<double>(t.tokens);
      t.fwd_us =
          (c.fwd_c0_us + c.fwd_token_us * x + c.fwd_pair_us * t.attention_pairs) * (1 + r.noise * gauss(rng));
      t.bwd_us =
          (c.bwd_c0_us + c.bwd_token_us * x + c.bwd_pair_us * t.attention_pairs) * (1 + r.noise * gauss(rng));
      if (k % 4 == 3) {
        t.recompute_us = t.fwd_us;  // a recomputed run: no memory counted
      } else {
        t.act_bytes = static_cast<int64_t>(
            (c.act_c0_bytes + c.act_token_bytes * x + c.act_pair_bytes * t.attention_pairs) *
            (1 + r.noise * gauss(rng)));
        t.out_bytes = static_cast<int64_t>(c.kept_token_bytes * x);
      }
      if (!r.no_work)  // every row, recomputed ones too
        t.bwd_work_bytes = static_cast<int64_t>(
            (c.work_c0_bytes + c.work_token_bytes * x + c.work_pair_bytes * t.attention_pairs) *
            (1 + r.noise * gauss(rng)));
      rows.push_back(t);
    }
  if (r.optimizer_param_us > 0) {
    std::vector<OpRecord> ops;
    for (int k = 0; k < r.rows_per_layer; ++k) {
      OpRecord o;
      o.source = RecordSource::kMeasured;
      o.iteration = k;
      o.kind = OpKind::kOptimizer;
      o.lane = Lane::kCompute;
      o.device = 0;
      o.duration_us = r.optimizer_param_us * static_cast<double>(r.stage_params) * (1 + r.noise * gauss(rng));
      ops.push_back(o);
    }
    if (!WriteFileAtomic(r.dir + "/ops.csv", OpsCsv(ops)).ok()) return "ops";
  }
  std::vector<Layer> named = layers;
  if (r.labels_from) named = Layers(*r.labels_from);
  std::string csv = LayerTimingsCsv(rows, named);
  if (!r.version_line.empty()) csv = r.version_line + csv.substr(csv.find('\n'));
  if (!WriteFileAtomic(r.dir + "/layers.csv", csv).ok()) return "layers";
  return "";
}

}  // namespace mmtwin::testing

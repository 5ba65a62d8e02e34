// SPDX-License-Identifier: Apache-2.0
// Calibration: the per-layer time model (CoefficientCostModel, core/cost/cost_model.h) fitted to measured runs.
//
// Input: backend RUNDIRs (mmtwin-train, backend/README.md), each with summary.json (source "measured"),
// scenario.yaml (the resolved scenario: it names the model, the backend's shrink and the parallel layout) and
// layers.csv (core/records/layer_timings.h). For every layer type (component source, layer kind) and pass:
//   forward:  fwd_us and recompute_us (a recompute is the same forward again)  = c0 + c_token · tokens + c_pair · pairs
//   backward: bwd_us                                                           = c0 + c_token · tokens + c_pair · pairs
// fitted with robust non-negative least squares (calibrate/fit.h). Rows of layers whose workload is empty
// (tokens 0) are left out. Layer types whose attention pairs are all 0 (embedding, projector, head) get no pair
// term. Memory, from the rows of layers that were not recomputed and whose bytes were counted (act_bytes > 0):
//   activations stored: act_bytes = c0 + c_token · tokens + c_pair · pairs
//   kept when recomputed (the layer's input = the previous layer's output): out_bytes = c_token · tokens
// (fitted when at least `min_samples` such rows exist; the profile then prices memory with them too).
// The optimizer step, from the runs' measured optimizer ops (ops.csv, when the folder has it): microseconds per
// parameter the GPU updates (its stage's parameters over tp, and over dp with ZeRO >= 1), the ratio of the ops'
// summed durations to their summed parameters (one model's runs update one parameter count: no intercept can
// be told apart); the profile's optimizer row, which the simulator uses in place of its HBM estimate.
//
// Contract: the runs share one tensor-parallel degree (a coefficient is the time on one rank of a TP group) and
// every run's model spec agrees on each layer's label and kind with its layers.csv. Errors name the run folder,
// file and line: a simulated run, a layers.csv of another model, a different tp, another schema version, a layer
// type with fewer than `min_samples` rows, a `require` type that no run measured.
//
//   MMTWIN_ASSIGN_OR_RETURN(Calibration c, Calibrate({"runs/cal-a", "runs/cal-b"}));
//   WriteFileAtomic("profiles/cpu.csv", FormatProfile(c));   // a `cost:` file for scenarios / --cost
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "core/model/model.h"
#include "core/util/status.h"

namespace mmtwin {

struct CalibrationOptions {
  int64_t min_samples = 8;  // rows per layer type and pass below which the fit is refused
};

// One fitted row of the profile: a layer type, both passes.
struct LayerTypeFit {
  std::string source;  // component source (e.g. "qwen2-7b"); the profile's `source` column
  LayerKind kind = LayerKind::kTransformer;
  LinearFit fwd, bwd;  // coefficients: c0_us, token_us, pair_us
  bool has_memory = false;
  LinearFit act;   // coefficients: c0_bytes, token_bytes, pair_bytes
  LinearFit kept;  // coefficients: token_bytes
  bool has_work = false;
  LinearFit
      work;  // the backward's working memory (layers.csv bwd_work_bytes): c0_bytes, token_bytes, pair_bytes
};

struct Calibration {
  std::vector<std::string> runs;    // the run folders, as given
  std::vector<std::string> models;  // the (derived) model names seen, sorted, unique
  int tp = 1;
  std::vector<LayerTypeFit> fits;   // sorted by (source, kind)
  int64_t optimizer_samples = 0;    // measured optimizer ops (0: no optimizer row)
  double optimizer_param_us = 0;    // microseconds per parameter updated on one GPU
  double optimizer_rel_spread = 0;  // the largest |op / fit - 1| over those ops
  // Fits the data cannot support, one line each (layer type, pass, why, what to measure): fewer than
  // kMinDistinctTokenCounts distinct token counts (the per-token cost is then not separable from the fixed one),
  // or a time fit that explains little (R² below kMinR2). `mmtwin calibrate` prints them as warnings; the
  // profile is still written.
  std::vector<std::string> warnings;
};
inline constexpr int kMinDistinctTokenCounts = 3;
inline constexpr double kMinR2 = 0.8;

Result<Calibration> Calibrate(const std::vector<std::string>& rundirs,
                              const CalibrationOptions& options = {});

// The profile: CoefficientCostModel's CSV (`# mmtwin-cost-coefficients v1`), preceded by comment lines that say
// where it came from and, per row, the fit's sample count, R², relative residual percentiles and outliers.
std::string FormatProfile(const Calibration& c);
// A human-readable table of the fits (what `mmtwin calibrate` prints).
std::string FormatCalibrationTable(const Calibration& c);
// The same fits as one JSON object (`mmtwin calibrate --json`): runs, models, tp, per layer type (source, kind)
// every fitted pass (fwd, bwd in us; act, kept, work in bytes) with its coefficients by column name, which were
// identified, samples, R², relative residual percentiles and outliers; the optimizer row when fitted.
std::string CalibrationJson(const Calibration& c);

}  // namespace mmtwin

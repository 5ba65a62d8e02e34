// SPDX-License-Identifier: Apache-2.0
// Validation: how far the simulator's predictions are from measurements, before and after calibration.
//
// A suite (YAML, scenarios/validation/README.md) names calibration scenarios (profiling runs: the fit uses only
// these) and held-out scenarios (scored, never fitted on):
//   name: cpu-ws2
//   description: ...
//   notes: ...                                          # optional: shown in the report's summary
//   calibration: [cal-pp2.yaml, cal-dp2.yaml]           # paths relative to the suite file
//   held_out: [gpipe.yaml, recompute-full.yaml, ...]
// `mmtwin validate` (cli/validate_cmd.cc) measures every scenario with the backend (or reuses its run), fits the
// profile (Calibrate) and the memory terms (FitMemory) on the calibration runs, simulates each held-out scenario
// with the analytic model and with the profile, and scores it here; the write-up (README.md and its charts) is
// the report library's (report/validation_suite.h), which this layer does not include.
//
// Metrics scored per held-out scenario (relative errors are (predicted - measured) / measured):
//   iteration time p50, p99 and mean; tokens/s;               relative
//   per stage: busy and bubble fractions                       absolute, in points (0.05 = 5 points)
//   per stage: peak memory                                     relative
#pragma once

#include <string>
#include <vector>

#include "calibrate/calibrate.h"
#include "calibrate/fit.h"
#include "core/records/records.h"
#include "core/util/status.h"

namespace mmtwin {

// The signed relative error every validation figure uses: (predicted - measured) / measured; 0 where nothing
// was measured (measured == 0).
double RelativeError(double predicted, double measured);

struct ValidationSuite {
  std::string name, description, path;
  std::string notes;  // optional: what a reader must know to read the figures (shown under the summary)
  // optional: where the suite's kept runs were measured, when not on the machine that regenerates the reports
  // (the GPU suites, measured on the GPU machine: mmtwin-report validation names this for their reused runs)
  std::string machine;
  std::vector<std::string> calibration, held_out;  // scenario paths (resolved against the suite's folder)
};
Result<ValidationSuite> LoadValidationSuite(const std::string& path);

// Measured peak memory of a stage = c_state · planned model-state bytes + c_act · planned peak activation bytes
// + c_fixed (the runtime's own), fitted (non-negative) on the calibration runs' stages: the backend keeps fp32
// weights, gradients and Adam moments and unfused attention scores where the planner assumes bf16 and flash
// attention, and its allocator counts everything the process allocates.
struct MemoryFit {
  LinearFit fit;  // coefficients: c_state, c_act, c_fixed_bytes
  double Predict(const StageRecord& planned) const;
};
// `pairs`: (measured, simulated) summaries of the calibration runs.
Result<MemoryFit> FitMemory(const std::vector<std::pair<RunSummary, RunSummary>>& pairs);

struct ScenarioValidation {
  std::string name, path;
  RunSummary measured, analytic, calibrated;
  std::vector<double> calibrated_peak_bytes;  // per stage: MemoryFit applied to the calibrated prediction
};

struct ValidationReport {
  ValidationSuite suite;
  Calibration calibration;
  MemoryFit memory;
  std::string machine;  // where it was measured (free text)
  std::string command;  // the command line that produced it
  std::vector<ScenarioValidation> calibration_runs, held_out;
};

// Iteration-time MAPE (p50) over the held-out scenarios, analytic or calibrated.
double IterationMape(const ValidationReport& r, bool calibrated);

// The summary of a report's held-out scenarios (its README's summary table): iteration time p50 MAPE of both
// models, and of the calibrated model the worst per-stage busy and bubble errors (absolute, as fractions: 0.05 =
// 5 points) and the worst per-stage peak memory error (relative, after MemoryFit); whether the calibrated model
// beats the analytic one on every held-out scenario's p50.
struct ValidationHeadline {
  double mape_analytic = 0, mape_calibrated = 0;
  double worst_busy = 0, worst_bubble = 0, worst_peak_memory = 0;
  bool calibrated_beats_analytic = true;
};
ValidationHeadline Headline(const ValidationReport& r);

// validation.csv: one row per held-out scenario, metric and model (analytic / calibrated): measured,
// predicted, error.
std::string ValidationCsv(const ValidationReport& r);

}  // namespace mmtwin

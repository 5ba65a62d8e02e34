// SPDX-License-Identifier: Apache-2.0
// Running a validation suite end to end (the driver behind `mmtwin validate` and `mmtwin-report validation`):
// measure every scenario of the suite with the real backend (`mmtwin-train launch`, one process per rank) or reuse
// its kept run, fit the profile (Calibrate) and the memory terms (FitMemory) on the calibration runs only,
// simulate every scenario with the analytic model and with the profile, and write the results into the report
// folder (profile.csv and validation.csv, validate.h; the backend logs under logs/). The write-up (README.md,
// scatter.svg, stages.svg) is the caller's, through the report library (report/validation_suite.h: the CLI's
// `mmtwin validate` and mmtwin-report write it), which this layer does not include.
//
//   ValidateSuiteOptions o;
//   o.suite = "scenarios/validation/cpu-ws2.suite.yaml";
//   o.output = "reports/validation/cpu-ws2";
//   o.runs = "reports/validation/cpu-ws2/runs";
//   o.reuse = true;                                   // kept runs of the same plan are not measured again
//   MMTWIN_ASSIGN_OR_RETURN(SuiteValidation v, ValidateSuite(o));
//   double mape = IterationMape(v.report, /*calibrated=*/true);
//   MMTWIN_RETURN_IF_ERROR(report::WriteValidationReport(v.report, o.output));   // report/validation_suite.h
//
// Reuse: a kept run stands in for measuring a scenario again when it is a measured run of the same scenario (the
// pricing-only keys aside: WithoutPricingKeys, core/scenario/scenario.h) and,
// when it kept its plan.json, of the same plan this mmtwin builds for it now (parallel layout, partition,
// recompute, schedule, iterations). Runs measured here are made portable (the scenario's and plan's file paths
// relative to the run folder), so a run folder committed to a repository reads the same in any checkout.
#pragma once

#include <functional>
#include <string>

#include "calibrate/validate.h"
#include "core/util/status.h"

namespace mmtwin {

struct ValidateSuiteOptions {
  std::string suite;    // the suite file (validate.h)
  std::string output;   // the report folder (created when missing)
  std::string runs;     // where measured runs are kept, one folder per scenario name; "" = OUTPUT/runs
  std::string train;    // the mmtwin-train executable; "" = FindTrain's search
  std::string machine;  // where the runs were measured, free text ("" = "(not given: --machine)")
  bool reuse = false;   // reuse kept runs of the same plan (see above)
  // A backend run that has not finished after this many seconds is stopped (SIGTERM, then SIGKILL 10 s later)
  // and the validation fails naming it: a training program that never returns does not hang validate.
  double run_timeout_s = 3600;
  std::string
      command;  // the command line shown in the README ("" = the equivalent `mmtwin validate` command)
  // The progress text, as a terminal shows it: "[i/n] held-out NAME (R ranks): " then "reusing DIR\n", or the
  // measurement's "S s\n" once it finished (so a piece may end without a newline). May be empty.
  std::function<void(const std::string&)> progress;
};

// Why ValidateSuite failed: bad input (a suite, scenario or option that does not load; the CLI's exit 2), a
// backend run that failed (exit 1), or an interrupt (SIGINT / SIGTERM with the CLI's handlers installed).
enum class ValidateFailure { kNone, kBadInput, kBackend, kInterrupted };

struct SuiteValidation {
  ValidationReport report;
  int measured = 0, reused = 0;  // scenarios measured now, and reused from kept runs
};

// Runs the suite and writes its results into the report folder (see above). Errors name the file, scenario or option; `failure`,
// when given, says which kind (kNone on success).
Result<SuiteValidation> ValidateSuite(const ValidateSuiteOptions& options,
                                      ValidateFailure* failure = nullptr);

// The mmtwin-train to launch: `given` when not empty, else $MMTWIN_TRAIN, next to the running executable
// (installed), the build tree's backend/ beside its folder, then PATH; "" when none is found.
std::string FindTrain(const std::string& given);

}  // namespace mmtwin

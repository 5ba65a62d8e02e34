// SPDX-License-Identifier: Apache-2.0
// The write-up of one validation suite (what `mmtwin validate` and `mmtwin-report validation` leave in the suite's
// folder beside calibrate's validation.csv and profile.csv): README.md (per-scenario and per-stage tables of the
// held-out scenarios, MAPE, the calibration fit) and two SVG charts drawn by the reports' one chart writer
// (chart.h): predicted against measured iteration time per held-out scenario (both models, the y = x line) and the
// per-stage time split, measured above calibrated.
//
//   MMTWIN_ASSIGN_OR_RETURN(SuiteValidation v, ValidateSuite(options));     // calibrate: measure, fit, score
//   MMTWIN_RETURN_IF_ERROR(WriteValidationReport(v.report, options.output)); // here: the write-up
#pragma once

#include <string>

#include "calibrate/validate.h"
#include "core/util/status.h"
#include "report/chart.h"

namespace mmtwin::report {

// README.md of the suite's folder; it links scatter.svg and stages.svg.
std::string ValidationMarkdown(const ValidationReport& r);
// The charts: iteration time p50 predicted (analytic, calibrated) against measured per held-out scenario, in ms;
// per held-out scenario and stage the busy / bubble / rest fractions, measured and calibrated.
ChartSpec ScatterChart(const ValidationReport& r);
ChartSpec StageChart(const ValidationReport& r);
// The charts' sizes in px (the stage chart grows with the number of stages).
inline constexpr int kScatterWidthPx = 640, kScatterHeightPx = 520;
int StageChartHeightPx(const ChartSpec& stages);

// Writes README.md, scatter.svg and stages.svg into `dir` (each atomically). Errors: a file could not be written.
Status WriteValidationReport(const ValidationReport& r, const std::string& dir);

}  // namespace mmtwin::report

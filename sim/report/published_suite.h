// SPDX-License-Identifier: Apache-2.0
// The write-up of a published-runs validation suite (calibrate/published.h), what `mmtwin validate` leaves in the
// report folder beside validation.csv and fitted.csv: README.md (the headline: held-out time MAPE before and after
// the fit, fits statements predicted the same way, memory errors; per-entry tables by split; the fitted parameters
// with the entries each saw) and scatter.svg (predicted against published, one point per time or memory entry,
// on log10 axes because the entries' units differ).
//
//   MMTWIN_ASSIGN_OR_RETURN(PublishedReport r, ValidatePublished(options));   // calibrate: predict, fit
//   MMTWIN_RETURN_IF_ERROR(report::WritePublishedReport(r, dir));            // here: the write-up
#pragma once

#include <string>

#include "calibrate/published.h"
#include "core/util/status.h"
#include "report/chart.h"

namespace mmtwin::report {

std::string PublishedMarkdown(const PublishedReport& r);
// log10(predicted) against log10(published) per time and memory entry, one series per split (fitted model), the
// y = x line.
ChartSpec PublishedScatter(const PublishedReport& r);

// Writes README.md, validation.csv, fitted.csv and scatter.svg into `dir` (created when missing; each file
// atomically). Errors: a file could not be written.
Status WritePublishedReport(const PublishedReport& r, const std::string& dir);

}  // namespace mmtwin::report

// SPDX-License-Identifier: Apache-2.0
// mmtwin validate SUITE.yaml -o OUTDIR [--runs DIR] [--train PATH] [--reuse] [--machine TEXT]: measure every
// scenario of a validation suite with the real backend (mmtwin-train launch, or reuse its run), fit the profile on
// the calibration runs only, simulate each held-out scenario with the analytic model and with the profile
// (calibrate/validate_suite.h: OUTDIR/validation.csv, profile.csv), and write the report (report/validation_suite.h:
// OUTDIR/README.md, scatter.svg, stages.svg). A published-runs suite (`entries:`, calibrate/published.h) runs no
// backend: its entries are simulated, its parameters fitted on the calibration entries, and the report
// (report/published_suite.h: README.md, validation.csv, fitted.csv, scatter.svg) written as one folder. Exit 0, 1
// when a backend run fails, 2 on bad input.
#include <ostream>
#include <string>

#include "calibrate/published.h"
#include "calibrate/validate_suite.h"
#include "cli/commands.h"
#include "core/util/interrupt.h"
#include "report/published_suite.h"
#include "report/validation_suite.h"

namespace mmtwin::cli {

// The suite runs in the library (calibrate/validate_suite.h, shared with mmtwin-report validation) and is written
// up by the report library (report/validation_suite.h); this maps its progress to stdout and its failures to exit
// codes.
namespace {

int RunPublished(const ValidateArgs& a, std::ostream& out, std::ostream& err) {
  for (const auto& [given, name] : {std::pair<bool, const char*>{!a.runs.empty(), "--runs"},
                                    {!a.train.empty(), "--train"},
                                    {a.reuse, "--reuse"}})
    if (given) {
      err << "mmtwin validate: " << name << ": a published-runs suite runs no backend (" << a.suite << ")\n";
      return 2;
    }
  PublishedOptions o;
  o.suite = a.suite;
  o.command = "mmtwin validate " + a.suite + " -o " + a.output;
  o.progress = [&](const std::string& text) { out << text << std::flush; };
  auto r = ValidatePublished(o);
  if (!r) {
    err << "mmtwin validate: " << r.error().message() << "\n";
    return 2;
  }
  if (const Status st = report::WritePublishedReport(*r, a.output); !st.ok()) {
    err << "mmtwin validate: " << st.error().Wrap("-o").message() << "\n";
    return 2;
  }
  const auto [same, all] = FitsAgreement(*r, true);
  out << "held-out time / throughput MAPE: presets " << 100 * PublishedMape(*r, true, false) << "%, fitted "
      << 100 * PublishedMape(*r, true, true) << "%; fits statements predicted the same way: " << same
      << " of " << all << "\nwrote " << a.output
      << "/README.md (and validation.csv, fitted.csv, scatter.svg)\n";
  return 0;
}

}  // namespace

int RunValidate(const ValidateArgs& a, std::ostream& out, std::ostream& err) {
  InstallInterruptHandlers();
  if (IsPublishedSuite(a.suite)) return RunPublished(a, out, err);
  ValidateSuiteOptions o;
  o.suite = a.suite;
  o.output = a.output;
  o.runs = a.runs;
  o.train = a.train;
  o.run_timeout_s = a.run_timeout_s;
  o.machine = a.machine;
  o.reuse = a.reuse;
  o.progress = [&](const std::string& text) { out << text << std::flush; };
  ValidateFailure failure = ValidateFailure::kNone;
  auto v = ValidateSuite(o, &failure);
  if (!v) {
    err << "mmtwin validate: " << v.error().message() << "\n";
    switch (failure) {
      case ValidateFailure::kInterrupted:
        return 128 + InterruptSignal();
      case ValidateFailure::kBackend:
        return 1;
      default:
        return 2;
    }
  }
  const ValidationReport& report = v->report;
  if (const Status st = report::WriteValidationReport(report, a.output); !st.ok()) {
    err << "mmtwin validate: " << st.error().Wrap("-o").message() << "\n";
    return 2;
  }
  out << "iteration time p50, MAPE over " << report.held_out.size() << " held-out scenarios: analytic "
      << 100 * IterationMape(report, false) << "%, calibrated " << 100 * IterationMape(report, true) << "%\n"
      << "wrote " << a.output << "/README.md (and validation.csv, scatter.svg, stages.svg, profile.csv)\n";
  return 0;
}

}  // namespace mmtwin::cli

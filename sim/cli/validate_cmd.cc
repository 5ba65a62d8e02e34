// SPDX-License-Identifier: Apache-2.0
// mmtwin validate SUITE.yaml -o OUTDIR [--runs DIR] [--train PATH] [--reuse] [--machine TEXT]: measure every
// scenario of a validation suite with the real backend (mmtwin-train launch, or reuse its run), fit the profile on
// the calibration runs only, simulate each held-out scenario with the analytic model and with the profile
// (calibrate/validate_suite.h: OUTDIR/validation.csv, profile.csv), and write the report (report/validation_suite.h:
// OUTDIR/README.md, scatter.svg, stages.svg). A published-runs suite (`entries:`, calibrate/published.h) runs no
// backend: its entries are simulated, its parameters fitted on the calibration entries, and the report
// (report/published_suite.h: README.md, validation.csv, fitted.csv, scatter.svg) written as one folder. Exit 0, 1
// when a backend run fails, 2 on bad input.
#include <cmath>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

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
  // With --json the progress goes to stderr and stdout holds only the JSON.
  std::ostream& text_out = a.json ? err : out;
  o.progress = [&](const std::string& text) { text_out << text << std::flush; };
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
  if (a.json) {
    // One row per entry as validation.csv has it (numbers as numbers; a fits entry's figures are 1 = fits, 0 =
    // out of memory), the MAPEs and the fits agreement of the summary, the fitted parameters.
    auto number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
    nlohmann::json entries = nlohmann::json::array();
    for (const PublishedResult& e : r->results)
      entries.push_back({{"name", e.entry.name},
                         {"split", e.entry.held_out ? "held_out" : "calibration"},
                         {"metric", PublishedMetricName(e.entry.metric)},
                         {"source", e.entry.source},
                         {"device", e.device},
                         {"measured", number(e.entry.measured)},
                         {"predicted", number(e.fitted)},
                         {"error", number(PublishedError(e, true))},
                         {"predicted_prior", number(e.prior)},
                         {"error_prior", number(PublishedError(e, false))}});
    nlohmann::json fitted = nlohmann::json::array();
    for (const FittedParam& f : r->fitted)
      fitted.push_back({{"key", f.param.key},
                        {"device", f.param.device},
                        {"prior", f.prior},
                        {"value", f.value},
                        {"identifiable", f.identifiable},
                        {"fitted_on", f.fitted_on}});
    out << nlohmann::json{{"suite", a.suite},
                          {"output", a.output},
                          {"held_out_mape_prior", PublishedMape(*r, true, false)},
                          {"held_out_mape_fitted", PublishedMape(*r, true, true)},
                          {"calibration_mape_fitted", PublishedMape(*r, false, true)},
                          {"fits_same", same},
                          {"fits_statements", all},
                          {"fitted", fitted},
                          {"entries", entries}}
               .dump(2)
        << "\n";
    return 0;
  }
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
  std::ostream& text_out = a.json ? err : out;  // --json: stdout holds only the JSON
  o.progress = [&](const std::string& text) { text_out << text << std::flush; };
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
  if (a.json) {
    const ValidationHeadline h = Headline(report);
    nlohmann::json held_out = nlohmann::json::array();
    for (const ScenarioValidation& v : report.held_out)
      held_out.push_back({{"name", v.name},
                          {"measured_p50_us", v.measured.iteration_time_us.p50},
                          {"analytic_p50_us", v.analytic.iteration_time_us.p50},
                          {"calibrated_p50_us", v.calibrated.iteration_time_us.p50}});
    out << nlohmann::json{{"suite", a.suite},
                          {"output", a.output},
                          {"mape_analytic", h.mape_analytic},
                          {"mape_calibrated", h.mape_calibrated},
                          {"worst_busy", h.worst_busy},
                          {"worst_bubble", h.worst_bubble},
                          {"worst_peak_memory", h.worst_peak_memory},
                          {"calibrated_beats_analytic", h.calibrated_beats_analytic},
                          {"calibration_runs", report.calibration_runs.size()},
                          {"held_out", held_out}}
               .dump(2)
        << "\n";
    return 0;
  }
  out << "iteration time p50, MAPE over " << report.held_out.size() << " held-out scenarios: analytic "
      << 100 * IterationMape(report, false) << "%, calibrated " << 100 * IterationMape(report, true) << "%\n"
      << "wrote " << a.output << "/README.md (and validation.csv, scatter.svg, stages.svg, profile.csv)\n";
  return 0;
}

}  // namespace mmtwin::cli

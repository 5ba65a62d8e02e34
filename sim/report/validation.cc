// SPDX-License-Identifier: Apache-2.0
// The validation report (`mmtwin-report validation`): every suite of scenarios/validation/ run through the same
// driver as `mmtwin validate` (calibrate/validate_suite.h) with its kept runs reused, each suite's write-up
// (validation_suite.h), and the index README over them (data/validation/template.md): a summary table computed from
// the suites' results and a headline chart.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "calibrate/published.h"
#include "calibrate/validate_suite.h"
#include "report/common.h"
#include "report/validation_suite.h"

namespace mmtwin::report::internal {
namespace {

namespace fs = std::filesystem;

std::string Pct(double v, int decimals = 1) { return Fixed(100 * v, decimals) + "%"; }
std::string SignedPct(double v) { return (v >= 0 ? "+" : "−") + Fixed(100 * std::abs(v), 1) + "%"; }

// What the index says about one suite, all from its ValidationReport.
struct SuiteResult {
  std::string name;
  SuiteValidation v;
  ValidationHeadline h;
};

std::string Ranks(const ValidationReport& r) {
  std::set<int> ranks;
  for (const auto* list : {&r.calibration_runs, &r.held_out})
    for (const ScenarioValidation& v : *list) ranks.insert(v.measured.parallel.world_size());
  std::string s;
  for (const int n : ranks) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s;
}

std::string Models(const ValidationReport& r) {
  std::set<std::string> models;
  for (const auto* list : {&r.calibration_runs, &r.held_out})
    for (const ScenarioValidation& v : *list) models.insert(v.measured.model);
  std::string s;
  for (const std::string& m : models) s += (s.empty() ? "" : ", ") + m;
  return s;
}

// Mean over the held-out scenarios of the p50 iteration time in s: measured, analytic or calibrated.
double MeanP50(const ValidationReport& r, int which) {
  if (r.held_out.empty()) return kNaN;
  double sum = 0;
  for (const ScenarioValidation& v : r.held_out)
    sum += (which == 0 ? v.measured : which == 1 ? v.analytic : v.calibrated).iteration_time_us.p50;
  return sum / static_cast<double>(r.held_out.size()) / 1e6;
}

// The held-out scenario with the largest calibrated p50 error, as "−6.5%, isf".
std::string WorstCalibrated(const ValidationReport& r) {
  const ScenarioValidation* worst = nullptr;
  double err = 0;
  for (const ScenarioValidation& v : r.held_out) {
    const double m = v.measured.iteration_time_us.p50;
    const double e = (v.calibrated.iteration_time_us.p50 - m) / m;
    if (!worst || std::abs(e) > std::abs(err)) {
      worst = &v;
      err = e;
    }
  }
  return worst ? SignedPct(err) + ", " + worst->name : "–";
}

// Whether the analytic model predicts a longer p50 than measured on every held-out scenario.
bool AnalyticSlowOnAll(const ValidationReport& r) {
  for (const ScenarioValidation& v : r.held_out)
    if (v.analytic.iteration_time_us.p50 <= v.measured.iteration_time_us.p50) return false;
  return !r.held_out.empty();
}

std::string MemoryModel(const ValidationReport& r) {
  const LinearFit& f = r.memory.fit;
  if (f.coefficients.size() != 3) return "–";
  return "`" + Fixed(f.coefficients[0], 3) + " × states + " + Fixed(f.coefficients[1], 3) +
         " × activations + " + Fixed(f.coefficients[2] / 1048576.0, 1) + " MiB`";
}

// The index table (no trailing newline).
std::string SummaryTable(const std::vector<SuiteResult>& suites) {
  std::string md =
      "| suite | model (shrunk for CPUs) | ranks | held out | iteration p50 MAPE, analytic → calibrated | "
      "worst "
      "stage busy / bubble error (points) | worst stage peak memory error | report |\n"
      "|---|---|---:|---:|---|---|---:|---|";
  for (const SuiteResult& s : suites)
    md += "\n| `" + s.name + "` | " + Models(s.v.report) + " | " + Ranks(s.v.report) + " | " +
          std::to_string(s.v.report.held_out.size()) + " | " + Pct(s.h.mape_analytic) + " → " +
          Pct(s.h.mape_calibrated) + " | " + Fixed(100 * s.h.worst_busy, 1) + " / " +
          Fixed(100 * s.h.worst_bubble, 1) + " | " + Pct(s.h.worst_peak_memory) + " | [" + s.name + "](" +
          s.name + "/README.md) |";
  return md;
}

ChartSpec HeadlineChart(const std::vector<SuiteResult>& suites) {
  ChartSpec c;
  c.title = "Iteration time p50, mean over each suite's held-out scenarios: measured vs predicted";
  c.y_label = "iteration time p50 (s)";
  c.x_label = "validation suite (held-out scenarios, never fitted on)";
  c.value_decimals = 2;
  std::vector<double> measured, analytic, calibrated;
  for (const SuiteResult& s : suites) {
    c.categories.push_back(s.name);
    measured.push_back(MeanP50(s.v.report, 0));
    analytic.push_back(MeanP50(s.v.report, 1));
    calibrated.push_back(MeanP50(s.v.report, 2));
  }
  c.series = {{"measured (mmtwin-train)", measured},
              {"analytic prediction", analytic},
              {"calibrated prediction", calibrated}};
  return c;
}

// Per suite SUITE: the flag suite.SUITE and the values SUITE.* the template's prose reads. A suite the template
// names but scenarios/validation/ does not hold gets the flag false and "–" for each value.
void BindSuites(const Template& tmpl, const std::vector<SuiteResult>& suites, Bindings& b) {
  std::set<std::string> named;
  for (const std::string& f : NamesOf(tmpl).flags)
    if (f.rfind("suite.", 0) == 0) named.insert(f.substr(6));
  for (const SuiteResult& s : suites) named.insert(s.name);
  for (const std::string& name : named) {
    const SuiteResult* s = nullptr;
    for (const SuiteResult& x : suites)
      if (x.name == name) s = &x;
    b.SetFlag("suite." + name, s != nullptr);
    const ValidationReport* r = s ? &s->v.report : nullptr;
    auto value = [&](const std::string& key, auto compute) {
      b.SetValue(name + "." + key, s ? compute() : "–");
    };
    value("mape_analytic", [&] { return Pct(s->h.mape_analytic); });
    value("mape_calibrated", [&] { return Pct(s->h.mape_calibrated); });
    value("worst_calibrated", [&] { return WorstCalibrated(*r); });
    value("held_out", [&] { return std::to_string(r->held_out.size()); });
    value("worst_stage_points", [&] { return Fixed(100 * std::max(s->h.worst_busy, s->h.worst_bubble), 1); });
    value("worst_peak_memory", [&] { return Pct(s->h.worst_peak_memory); });
    b.SetFlag(name + ".analytic_slow_on_all", r && AnalyticSlowOnAll(*r));
    b.SetFlag(name + ".calibrated_beats_analytic", s && s->h.calibrated_beats_analytic);
  }
  std::string models;
  for (const SuiteResult& s : suites)
    models += std::string(models.empty() ? "" : "\n") + "- `" + s.name + "`: " + MemoryModel(s.v.report);
  b.SetValue("memory_models", models);
  b.SetValue("summary_table", SummaryTable(suites));
}

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The suite files of SCENARIOS/validation, in name order.
Result<std::vector<std::string>> SuiteFiles(const std::string& scenarios) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(scenarios + "/validation", ec)) {
    const std::string f = e.path().filename().string();
    // Published-runs suites run no backend and have their own report (`mmtwin validate`, published_suite.h).
    if (f.size() > 11 && f.substr(f.size() - 11) == ".suite.yaml" && !IsPublishedSuite(e.path().string()))
      files.push_back(e.path().string());
  }
  if (ec) return Error(scenarios + "/validation: " + ec.message());
  if (files.empty()) return Error(scenarios + "/validation: no *.suite.yaml");
  std::sort(files.begin(), files.end());
  return files;
}

// Runs one suite into OUT/SUITE (its kept runs reused) and writes its report; a suite whose runs were measured
// again here names this machine for them.
Result<SuiteResult> RunSuite(const ReportOptions& o, const std::string& file,
                             const std::string& kept_machine) {
  MMTWIN_ASSIGN_OR_RETURN(ValidationSuite suite, LoadValidationSuite(file));
  ValidateSuiteOptions vo;
  vo.suite = file;
  vo.output = o.out_dir + "/" + suite.name;
  vo.runs = (o.runs_dir.empty() ? o.out_dir : o.runs_dir) + "/" + suite.name + "/runs";
  vo.reuse = true;
  vo.machine = suite.machine.empty() ? kept_machine : suite.machine;
  std::string pending;
  vo.progress = [&](const std::string& text) {
    pending += text;
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
      if (o.progress) o.progress(suite.name + " " + pending.substr(0, nl));
  };
  vo.command = o.command + "` — suite " + suite.name + ", alone: `mmtwin validate " + vo.suite + " -o " +
               vo.output + " --runs " + vo.runs + " --reuse --machine " + ShellQuote(vo.machine);
  if (o.progress) o.progress("validation suite " + file);
  MMTWIN_ASSIGN_OR_RETURN(SuiteValidation v, ValidateSuite(vo));
  if (v.measured > 0) {  // the suite's README names where its runs were measured
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    v.report.machine = std::string("this machine (") + host + ": " + std::to_string(v.measured) +
                       " runs measured again by mmtwin-report); the " + std::to_string(v.reused) +
                       " kept runs: " + vo.machine;
  }
  MMTWIN_RETURN_IF_ERROR(WriteValidationReport(v.report, vo.output));
  SuiteResult out{suite.name, std::move(v), {}};
  out.h = Headline(out.v.report);
  return out;
}

}  // namespace

Status GenerateValidation(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                          ReportFiles& files) {
  MMTWIN_ASSIGN_OR_RETURN(ReportData data, LoadReportData(o, "validation", "runs.yaml"));
  MMTWIN_ASSIGN_OR_RETURN(std::string kept_machine, data.paper.Fact("kept_runs_machine"));
  MMTWIN_ASSIGN_OR_RETURN(std::vector<std::string> suite_files, SuiteFiles(scenarios));
  std::vector<SuiteResult> suites;
  int measured = 0, reused = 0;
  for (const std::string& file : suite_files) {
    MMTWIN_ASSIGN_OR_RETURN(SuiteResult s, RunSuite(o, file, kept_machine));
    measured += s.v.measured;
    reused += s.v.reused;
    suites.push_back(std::move(s));
  }
  Bindings b;
  ReportFiles images;
  MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "iteration", HeadlineChart(suites), images, b));
  b.SetValue("header", Header(o, false));
  b.SetValue("reused", std::to_string(reused));
  b.SetValue("measured", std::to_string(measured));
  BindSuites(data.tmpl, suites, b);
  MMTWIN_ASSIGN_OR_RETURN(std::string md, Render(data.tmpl, b));
  files.emplace_back("README.md", std::move(md));
  for (auto& f : images) files.push_back(std::move(f));
  return Status();
}

}  // namespace mmtwin::report::internal

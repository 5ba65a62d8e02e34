// SPDX-License-Identifier: Apache-2.0
// A validation suite's write-up (validation_suite.h).
#include "report/validation_suite.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/util/csv.h"
#include "report/plotter.h"

namespace mmtwin::report {
namespace {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string Pct(double rel) { return Fmt("%+.1f%%", 100 * rel); }

std::string Pts(double diff) { return Fmt("%+.1f", 100 * diff); }

const StageRecord* StageOf(const RunSummary& s, size_t i) {
  return i < s.stages.size() ? &s.stages[i] : nullptr;
}

void ScenarioTable(std::string& md, const std::vector<ScenarioValidation>& runs) {
  md +=
      "| scenario | dp×tp×pp | measured p50 (ms) | analytic p50 (error) | calibrated p50 (error) | measured "
      "p99 (ms) | "
      "calibrated p99 (error) | tokens/s measured | calibrated (error) |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  for (const ScenarioValidation& v : runs) {
    const ParallelConfig& p = v.measured.parallel;
    const double m50 = v.measured.iteration_time_us.p50, m99 = v.measured.iteration_time_us.p99;
    md += "| " + v.name + " | " + std::to_string(p.dp) + "×" + std::to_string(p.tp) + "×" +
          std::to_string(p.pp) + " | " + Fmt("%.1f", m50 / 1e3) + " | " +
          Fmt("%.1f", v.analytic.iteration_time_us.p50 / 1e3) + " (" +
          Pct(RelativeError(v.analytic.iteration_time_us.p50, m50)) + ") | " +
          Fmt("%.1f", v.calibrated.iteration_time_us.p50 / 1e3) + " (" +
          Pct(RelativeError(v.calibrated.iteration_time_us.p50, m50)) + ") | " + Fmt("%.1f", m99 / 1e3) +
          " | " + Fmt("%.1f", v.calibrated.iteration_time_us.p99 / 1e3) + " (" +
          Pct(RelativeError(v.calibrated.iteration_time_us.p99, m99)) + ") | " +
          Fmt("%.0f", v.measured.tokens_per_s) + " | " + Fmt("%.0f", v.calibrated.tokens_per_s) + " (" +
          Pct(RelativeError(v.calibrated.tokens_per_s, v.measured.tokens_per_s)) + ") |\n";
  }
}

void StageTable(std::string& md, const std::vector<ScenarioValidation>& runs) {
  md +=
      "| scenario | stage | busy measured | calibrated (Δ points) | bubble measured | calibrated (Δ points) "
      "| "
      "peak memory measured (MiB) | calibrated (error) |\n";
  md += "|---|---|---|---|---|---|---|---|\n";
  for (const ScenarioValidation& v : runs)
    for (size_t s = 0; s < v.measured.stages.size(); ++s) {
      const StageRecord& m = v.measured.stages[s];
      const StageRecord* c = StageOf(v.calibrated, s);
      if (!c) continue;
      const double peak = s < v.calibrated_peak_bytes.size() ? v.calibrated_peak_bytes[s] : 0;
      md += "| " + v.name + " | " + std::to_string(s) + " | " + Fmt("%.3f", m.busy_ratio) + " | " +
            Fmt("%.3f", c->busy_ratio) + " (" + Pts(c->busy_ratio - m.busy_ratio) + ") | " +
            Fmt("%.3f", m.bubble_ratio) + " | " + Fmt("%.3f", c->bubble_ratio) + " (" +
            Pts(c->bubble_ratio - m.bubble_ratio) + ") | " +
            Fmt("%.1f", static_cast<double>(m.peak_memory_bytes) / 1048576.0) + " | " +
            Fmt("%.1f", peak / 1048576.0) + " (" +
            Pct(RelativeError(peak, static_cast<double>(m.peak_memory_bytes))) + ") |\n";
    }
}

// The summary of the held-out scenarios: both models' MAPE, the calibrated model's worst stage errors.
void Summary(std::string& md, const ValidationReport& r) {
  const ValidationHeadline h = Headline(r);
  md += "## Summary (held-out scenarios: never used by the fit)\n\n";
  md += "| figure | analytic | calibrated |\n|---|---|---|\n";
  md += "| iteration time p50, MAPE over " + std::to_string(r.held_out.size()) + " scenarios | " +
        Fmt("%.1f%%", 100 * h.mape_analytic) + " | " + Fmt("%.1f%%", 100 * h.mape_calibrated) + " |\n";
  md += "| worst per-stage busy error (points) | – | " + Fmt("%.1f", 100 * h.worst_busy) + " |\n";
  md += "| worst per-stage bubble error (points) | – | " + Fmt("%.1f", 100 * h.worst_bubble) + " |\n";
  md += "| worst per-stage peak memory error | – | " + Fmt("%.1f%%", 100 * h.worst_peak_memory) + " |\n\n";
  md += std::string("Calibrated beats analytic on every held-out scenario's iteration time: ") +
        (h.calibrated_beats_analytic ? "yes"
         : r.suite.notes.empty()     ? "**no** (see the table)"
                                     : "**no** (see the notes)") +
        ".\n\n";
  if (!r.suite.notes.empty()) md += "**Notes.** " + r.suite.notes + "\n\n";
}

}  // namespace

std::string ValidationMarkdown(const ValidationReport& r) {
  std::string md = "# Validation: " + r.suite.name + "\n\n";
  if (!r.suite.description.empty()) md += r.suite.description + "\n\n";
  md += "Machine: " + r.machine + "  \nCommand: `" + r.command + "`  \nSuite: `" + r.suite.path + "`\n\n";
  Summary(md, r);
  md += "![predicted against measured iteration time](scatter.svg)\n\n";
  md += "## Held-out scenarios\n\n";
  ScenarioTable(md, r.held_out);
  md += "\n![per-stage busy and bubble, measured and calibrated](stages.svg)\n\n";
  StageTable(md, r.held_out);
  md += "\n## Calibration runs (in-sample, for reference)\n\n";
  ScenarioTable(md, r.calibration_runs);
  md +=
      "\n## The fit\n\nPer-layer time and activation-byte coefficients (`profile.csv`), from the calibration "
      "runs only:\n\n```\n" +
      FormatCalibrationTable(r.calibration) + "```\n\n";
  const LinearFit& mf = r.memory.fit;
  if (mf.coefficients.size() == 3)
    md += "Memory: measured stage peak = " + Fmt("%.3f", mf.coefficients[0]) + " × planned model state + " +
          Fmt("%.3f", mf.coefficients[1]) + " × planned peak activations + " +
          Fmt("%.1f MiB", mf.coefficients[2] / 1048576.0) + " (" + std::to_string(mf.samples) +
          " calibration stages, R² " + Fmt("%.4f", mf.r2) + ").\n";
  return md;
}

ChartSpec ScatterChart(const ValidationReport& r) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kPoints;
  c.title = "Predicted vs measured iteration time (p50), held-out scenarios";
  c.x_label = "measured (ms)";
  c.y_label = "predicted (ms)";
  c.value_decimals = -1;
  c.diagonal_label = "predicted = measured";
  ChartSeries analytic{"analytic (" + Fmt("%.1f%%", 100 * IterationMape(r, false)) + " MAPE)"};
  ChartSeries calibrated{"calibrated (" + Fmt("%.1f%%", 100 * IterationMape(r, true)) + " MAPE)"};
  for (const ScenarioValidation& v : r.held_out) {
    const double m = v.measured.iteration_time_us.p50 / 1e3;
    analytic.xs.push_back(m);
    analytic.values.push_back(v.analytic.iteration_time_us.p50 / 1e3);
    calibrated.xs.push_back(m);
    calibrated.values.push_back(v.calibrated.iteration_time_us.p50 / 1e3);
  }
  c.series = {analytic, calibrated};
  return c;
}

ChartSpec StageChart(const ValidationReport& r) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kStackedBars;
  c.title = "Per-stage time split: measured (upper bar) vs calibrated prediction (lower bar)";
  c.x_label = "share of the iteration (lighter bar: calibrated prediction)";
  c.stacks = {"measured", "calibrated"};
  c.series = {{"busy"}, {"bubble"}, {"idle + exposed comm"}};
  for (const ScenarioValidation& v : r.held_out)
    for (size_t s = 0; s < v.measured.stages.size() && s < v.calibrated.stages.size(); ++s) {
      c.categories.push_back(v.name + " s" + std::to_string(s));
      for (const StageRecord* st : {&v.measured.stages[s], &v.calibrated.stages[s]}) {
        c.series[0].values.push_back(st->busy_ratio);
        c.series[1].values.push_back(st->bubble_ratio);
        c.series[2].values.push_back(std::max(0.0, 1 - st->busy_ratio - st->bubble_ratio));
      }
    }
  return c;
}

int StageChartHeightPx(const ChartSpec& stages) {
  return 110 + 30 * static_cast<int>(stages.categories.size());
}

Status WriteValidationReport(const ValidationReport& r, const std::string& dir) {
  SvgPlotter plotter;
  const ChartSpec stages = StageChart(r);
  MMTWIN_ASSIGN_OR_RETURN(std::string scatter,
                          plotter.Chart(ScatterChart(r), kScatterWidthPx, kScatterHeightPx));
  MMTWIN_ASSIGN_OR_RETURN(std::string bars, plotter.Chart(stages, 900, StageChartHeightPx(stages)));
  const std::string md = report::ValidationMarkdown(r);
  for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"README.md", &md},
                                   {"scatter.svg", &scatter},
                                   {"stages.svg", &bars}})
    MMTWIN_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + name, *text));
  return Status();
}

}  // namespace mmtwin::report

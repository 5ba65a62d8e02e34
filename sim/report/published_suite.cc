// SPDX-License-Identifier: Apache-2.0
// A published-runs suite's write-up (published_suite.h).
#include "report/published_suite.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/util/atomic_dir.h"
#include "report/plotter.h"

namespace mmtwin::report {
namespace {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A figure in its metric's own unit, as the tables show it.
std::string Figure(PublishedMetric m, double v) {
  if (std::isnan(v)) return "n/a";
  switch (m) {
    case PublishedMetric::kFits:
      return v > 0.5 ? "fits" : "OOM";
    case PublishedMetric::kMfu:
      return Fmt("%.1f%%", 100 * v);
    case PublishedMetric::kIterationTimeS:
      return Fmt("%.3g s", v);
    case PublishedMetric::kTflopsPerGpu:
      return Fmt("%.1f", v);
    case PublishedMetric::kTokensPerSPerGpu:
      return Fmt("%.0f", v);
    case PublishedMetric::kGpuDays:
      return Fmt("%.1f", v);
    case PublishedMetric::kPeakMemoryGib:
    case PublishedMetric::kRemainingMemoryGib:
      return Fmt("%.1f GiB", v);
  }
  return Fmt("%g", v);
}

std::string ErrorText(const PublishedResult& x, bool fitted) {
  const double e = PublishedError(x, fitted);
  if (x.entry.metric == PublishedMetric::kFits) return e == 0 ? "same" : "**differs**";
  if (x.entry.metric == PublishedMetric::kRemainingMemoryGib) {
    const double d = (fitted ? x.fitted : x.prior) - x.entry.measured;
    return Fmt("%+.1f GiB", d);
  }
  return Fmt("%+.1f%%", 100 * e);
}

std::string Escape(std::string s) {
  for (char& c : s)
    if (c == '|' || c == '\n') c = ' ';
  return s;
}

void EntryTable(std::string& md, const PublishedReport& r, bool held_out) {
  md +=
      "| entry | metric | published | predicted (fitted) | error | prior (presets) | error | device | source "
      "|\n";
  md += "|---|---|---:|---:|---:|---:|---:|---|---|\n";
  for (const PublishedResult& x : r.results) {
    if (x.entry.held_out != held_out) continue;
    const PublishedEntry& e = x.entry;
    std::string metric = PublishedMetricName(e.metric);
    if (e.stage >= 0) metric += " (stage " + std::to_string(e.stage) + ")";
    if (e.flops != "mmtwin") metric += ", " + e.flops + " FLOPs";
    if (e.mfu_peak_flops > 0) metric += Fmt(", of %g TFLOP/s", e.mfu_peak_flops / 1e12);
    md += "| " + e.name + " | " + metric + " | " + Figure(e.metric, e.measured) + " | " +
          Figure(e.metric, x.fitted) + " | " + ErrorText(x, true) + " | " + Figure(e.metric, x.prior) +
          " | " + ErrorText(x, false) + " | " + x.device + " | " + Escape(e.source) + " |\n";
  }
}

// Per source (the text of `source` up to its first comma) and split: time MAPE, fitted and prior.
void SourceTable(std::string& md, const PublishedReport& r) {
  struct Acc {
    int n = 0;
    double fitted = 0, prior = 0;
  };
  std::vector<std::pair<std::string, Acc>> rows;
  for (const PublishedResult& x : r.results) {
    if (FamilyOf(x.entry.metric) != MetricFamily::kTime) continue;
    const std::string src = x.entry.source.substr(0, x.entry.source.find(',')) +
                            (x.entry.held_out ? " (held out)" : " (calibration)");
    auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& p) { return p.first == src; });
    if (it == rows.end()) it = rows.insert(rows.end(), {src, Acc{}});
    ++it->second.n;
    it->second.fitted += std::fabs(PublishedError(x, true));
    it->second.prior += std::fabs(PublishedError(x, false));
  }
  md += "| source (split) | time entries | MAPE fitted | MAPE prior |\n|---|---:|---:|---:|\n";
  for (const auto& [src, a] : rows)
    md += "| " + Escape(src) + " | " + std::to_string(a.n) + " | " + Fmt("%.1f%%", 100 * a.fitted / a.n) +
          " | " + Fmt("%.1f%%", 100 * a.prior / a.n) + " |\n";
}

// Memory entries within 25% (peak) or 5 GiB of the published figure (fitted model).
std::pair<int, int> MemoryWithin(const PublishedReport& r, bool held_out) {
  int ok = 0, all = 0;
  for (const PublishedResult& x : r.results) {
    if (x.entry.held_out != held_out || FamilyOf(x.entry.metric) != MetricFamily::kMemory) continue;
    ++all;
    const double d = std::fabs(x.fitted - x.entry.measured);
    ok += d <= 5.0 || d <= 0.25 * std::fabs(x.entry.measured);
  }
  return {ok, all};
}

}  // namespace

std::string PublishedMarkdown(const PublishedReport& r) {
  std::string md = "# Validation against published runs: " + r.suite.name + "\n\n";
  if (!r.suite.description.empty()) md += r.suite.description + "\n\n";
  md +=
      "Command: `" + r.command + "`  \nSuite: `" + r.suite.path +
      "`  \nNo backend runs: every measured figure is the published one, from the suite file (its `source` "
      "names the paper, table and row). Each entry is predicted with the cluster presets as they are "
      "(\"prior\") and with the parameters fitted on the calibration entries (\"fitted\"); held-out entries "
      "never enter a fit.\n\n";
  int n_cal = 0, n_held = 0;
  for (const PublishedResult& x : r.results) (x.entry.held_out ? n_held : n_cal)++;
  const auto [fits_same, fits_all] = FitsAgreement(r, true);
  const auto [fits_same_prior, fits_all_prior] = FitsAgreement(r, false);
  const auto [mem_ok, mem_all] = MemoryWithin(r, true);
  md += "## Summary\n\n";
  md += "| figure | prior (presets) | fitted |\n|---|---:|---:|\n";
  md += "| held-out time / throughput MAPE | " + Fmt("%.1f%%", 100 * PublishedMape(r, true, false)) + " | " +
        Fmt("%.1f%%", 100 * PublishedMape(r, true, true)) + " |\n";
  md += "| calibration time / throughput MAPE (in-sample) | " +
        Fmt("%.1f%%", 100 * PublishedMape(r, false, false)) + " | " +
        Fmt("%.1f%%", 100 * PublishedMape(r, false, true)) + " |\n";
  md += "| fits / out-of-memory statements predicted the same way | " + std::to_string(fits_same_prior) +
        " of " + std::to_string(fits_all_prior) + " | " + std::to_string(fits_same) + " of " +
        std::to_string(fits_all) + " |\n";
  md += "| held-out memory figures within 25% or 5 GiB | – | " + std::to_string(mem_ok) + " of " +
        std::to_string(mem_all) + " |\n\n";
  md += std::to_string(r.results.size()) + " entries: " + std::to_string(n_cal) + " calibration, " +
        std::to_string(n_held) + " held out.\n\n";
  if (!r.suite.notes.empty()) md += "**Notes.** " + r.suite.notes + "\n\n";
  md += "![predicted against published, log10 axes](scatter.svg)\n\n";
  md += "### By source (time and throughput entries)\n\n";
  SourceTable(md, r);
  md += "\n## Fitted parameters\n\n";
  if (r.fitted.empty()) {
    md += "None: the suite fits nothing (`fit:`); prior and fitted predictions are the same.\n";
  } else {
    md +=
        "Each fitted on the calibration entries listed (its `device`, its metric family) only; loss = mean "
        "squared log ratio predicted / published over those entries.\n\n";
    md +=
        "| device key | device | family | preset value | fitted value | loss before | loss after | fitted on "
        "|\n";
    md += "|---|---|---|---:|---:|---:|---:|---|\n";
    for (const FittedParam& f : r.fitted) {
      std::string on;
      for (const std::string& n : f.fitted_on) on += (on.empty() ? "" : ", ") + n;
      md += "| `" + f.param.key + "` | " + (f.param.device.empty() ? "any" : f.param.device) + " | " +
            FamilyName(f.param.on) + " | " + Fmt("%.4g", f.prior) + " | " +
            (f.identifiable ? Fmt("%.4g", f.value) : "not identifiable: kept") + " | " +
            Fmt("%.4f", f.loss_prior) + " | " + Fmt("%.4f", f.loss_fitted) + " | " + on + " |\n";
    }
  }
  md += "\n## Held-out entries\n\n";
  EntryTable(md, r, true);
  md += "\n## Calibration entries (in-sample)\n\n";
  EntryTable(md, r, false);
  md += "\n## Notes per entry\n\n";
  for (const PublishedResult& x : r.results)
    if (!x.entry.note.empty()) md += "- **" + x.entry.name + "**: " + Escape(x.entry.note) + "\n";
  return md;
}

ChartSpec PublishedScatter(const PublishedReport& r) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kPoints;
  c.title = "Predicted (fitted) against published, time and memory entries";
  c.x_label = "published, log10 (s as ms, MFU in %, GiB, TFLOP/s, tokens/s, GPU-days; < 1 drawn at 1)";
  c.y_label = "predicted, log10";
  c.value_decimals = -1;
  c.diagonal_label = "predicted = published";
  ChartSeries held{"held out (" + Fmt("%.1f%%", 100 * PublishedMape(r, true, true)) + " time MAPE)"};
  ChartSeries cal{"calibration"};
  for (const PublishedResult& x : r.results) {
    if (x.entry.metric == PublishedMetric::kFits) continue;
    if (!(x.entry.measured > 0) || !(x.fitted > 0)) continue;
    // Units that keep every figure at 1 or more, so that the axes (from 0) hold every point.
    const double scale = x.entry.metric == PublishedMetric::kIterationTimeS ? 1e3
                         : x.entry.metric == PublishedMetric::kMfu          ? 100.0
                                                                            : 1.0;
    ChartSeries& s = x.entry.held_out ? held : cal;
    s.xs.push_back(std::log10(std::max(1.0, x.entry.measured * scale)));
    s.values.push_back(std::log10(std::max(1.0, x.fitted * scale)));
    s.show_values = false;
  }
  c.series = {held, cal};
  return c;
}

Status WritePublishedReport(const PublishedReport& r, const std::string& dir) {
  SvgPlotter plotter;
  MMTWIN_ASSIGN_OR_RETURN(const std::string scatter, plotter.Chart(PublishedScatter(r), 640, 520));
  const std::string md = PublishedMarkdown(r), csv = PublishedCsv(r), fitted = FittedCsv(r);
  return WriteFolderAtomic(
      dir, {{"README.md", md}, {"validation.csv", csv}, {"fitted.csv", fitted}, {"scatter.svg", scatter}});
}

}  // namespace mmtwin::report

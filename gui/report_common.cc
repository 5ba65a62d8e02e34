// SPDX-License-Identifier: Apache-2.0
// Helpers the reports share (report_internal.h).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>

#include "core/scenario/scenario.h"
#include "sweep/runner.h"
#include "sweep/sweep.h"
#include "git_describe.h"  // generated at build time: MMTWIN_GIT_DESCRIBE
#include "report_internal.h"

namespace mmtwin::gui::internal {

namespace fs = std::filesystem;

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// ---- runs ----

std::string LabelsOf(const std::vector<std::pair<std::string, std::string>>& axes) {
  std::string s;
  for (const auto& [k, v] : axes) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s;
}

Result<std::unique_ptr<ResultsDb>> OpenReportDb(const ReportOptions& o) {
  const std::string db_path = ReportDbPath(o);
  const std::filesystem::path parent = std::filesystem::path(db_path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  return ResultsDb::Open(db_path);
}

Result<SweepRows> RunReportSweep(const std::string& file, const ReportOptions& o, ResultsDb& db,
                                 const std::vector<int>& reduced_runs) {
  MMTWIN_ASSIGN_OR_RETURN(SweepSpec spec, LoadSweep(file));
  if (o.reduced) {
    spec.name += "-reduced";
    if (!reduced_runs.empty()) {
      // The kept runs as a zip sweep: run i's value on each axis (a cartesian sweep's index is mixed radix, the
      // last axis fastest, as ExpandRun reads it). The runs keep their scenarios, so their run keys.
      const int64_t size = SweepSize(spec);
      std::vector<SweepAxis> kept = spec.axes;
      for (SweepAxis& axis : kept) {
        axis.values.clear();
        axis.labels.clear();
      }
      for (const int i : reduced_runs) {
        if (i < 0 || i >= size)
          return Error(file + ": the reduced report's run " + std::to_string(i) + " is not in the sweep");
        int64_t rest = i;
        for (size_t a = spec.axes.size(); a-- > 0;) {
          const SweepAxis& axis = spec.axes[a];
          const int64_t len = static_cast<int64_t>(axis.values.size());
          const size_t pick = static_cast<size_t>(spec.zip ? i : rest % len);
          if (!spec.zip) rest /= len;
          if (axis.labels.size() != axis.values.size()) return Error(file + ": an axis without labels");
          kept[a].values.push_back(axis.values[pick]);
          kept[a].labels.push_back(axis.labels[pick]);
        }
      }
      spec.axes = std::move(kept);
      spec.zip = true;
    }
    spec.iterations = std::to_string(kReducedIterations);
    // A trace file holds its own samples (trace.samples is for generated traces): such runs keep the file.
    bool file_trace = false;
    for (const SweepAxis& axis : spec.axes) file_trace = file_trace || axis.key == "trace.file";
    if (auto base = ParseScenario(spec.base_text, spec.base_name, spec.base_dir); base.ok())
      file_trace = file_trace || !base->trace.file.empty();
    SweepAxis samples;
    samples.key = "trace.samples";
    samples.name = "samples";
    const size_t n = spec.zip && !spec.axes.empty() ? spec.axes.front().values.size() : 1;
    samples.values.assign(n, std::to_string(kReducedSamples));
    samples.labels = samples.values;
    if (!file_trace) spec.axes.push_back(samples);
  }
  SweepRunOptions ro;
  ro.jobs = std::max(1, o.jobs);
  const std::string sweep_name = spec.name;
  ro.progress = [&](const SweepProgress& p) {
    if (!o.progress) return;
    std::string line = "[" + sweep_name + " " + std::to_string(p.done) + "/" + std::to_string(p.total) +
                       "] " + LabelsOf(p.run->axes) + ": ";
    if (p.record->status == "ok" && p.record->summary)
      line += Fixed(p.record->summary->gpu_days, 2) + " GPU-days";
    else
      line += "error: " + p.record->error;
    line += " (" + Fixed(p.record->wall_seconds, 1) + " s)";
    o.progress(line);
  };
  if (o.progress) o.progress("sweep " + file + " (" + std::to_string(SweepSize(spec)) + " runs)");
  MMTWIN_ASSIGN_OR_RETURN(SweepOutcome outcome, RunSweep(spec, db, ro));
  if (outcome.interrupted) return Error("interrupted");
  // Every sweep's rows: a run whose scenario another sweep already ran (the same run key) is that sweep's row.
  MMTWIN_ASSIGN_OR_RETURN(std::vector<RunRecord> all, db.Runs());
  std::map<std::string, RunRecord> by_key;
  for (RunRecord& r : all) by_key[r.run_key] = std::move(r);
  SweepRows out;
  out.name = spec.name;
  for (int64_t i = 0; i < SweepSize(spec); ++i) {
    const SweepRun run = ExpandRun(spec, i);
    if (!run.error.empty()) return Error(file + ": run " + std::to_string(i) + ": " + run.error);
    auto it = by_key.find(run.key);
    if (it == by_key.end() || it->second.status != "ok" || !it->second.summary)
      return Error(file + ": run " + std::to_string(i) + " (" + LabelsOf(run.axes) + ") did not finish" +
                   (it != by_key.end() ? ": " + it->second.error : std::string()));
    RunRecord r = it->second;
    r.axes = run.axes;  // this sweep's axis names and labels (the row may be another sweep's)
    out.rows.push_back(std::move(r));
  }
  return out;
}

Status RunReportSweeps(const ReportOptions& o, const std::string& scenarios,
                       const std::vector<ReportSweep>& sweeps) {
  MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<ResultsDb> db, OpenReportDb(o));
  for (const ReportSweep& s : sweeps) {
    MMTWIN_ASSIGN_OR_RETURN(
        *s.rows, RunReportSweep(scenarios + "/sweeps/" + s.name + ".yaml", o, *db, s.reduced_runs));
  }
  return Status();
}

Result<const RunRecord*> Find(const SweepRows& s,
                              const std::vector<std::pair<std::string, std::string>>& want) {
  for (const RunRecord& r : s.rows) {
    bool all = true;
    for (const auto& w : want) {
      bool found = false;
      for (const auto& a : r.axes) found = found || a == w;
      all = all && found;
    }
    if (all) return &r;
  }
  return Error("sweep " + s.name + ": no run with " + LabelsOf(want));
}

// ---- tables ----

std::string RunRef(const RunRecord& r) { return r.sweep + "#" + std::to_string(r.run_index); }

std::string MarkdownTable(const Table& t) {
  std::string md = "### " + t.heading + "\n\n";
  if (!t.intro.empty()) md += t.intro + "\n\n";
  md += "| " + t.row_header + " | figure | paper (" + t.paper_ref + ") | mmtwin | mmtwin / paper | run |\n";
  md += "|---|---|---:|---:|---:|---|\n";
  for (const Figure& f : t.rows) {
    const double paper = PaperValue(f.paper);
    std::string ratio = "n/a";
    if (std::isfinite(paper) && paper != 0) ratio = Fixed(f.mmtwin / paper, 2);
    md += "| " + f.row + " | " + f.figure + " | " + (f.paper.empty() ? "n/a" : f.paper) + " | " +
          Fixed(f.mmtwin, f.decimals) + " | " + ratio + " | " + f.run + " |\n";
  }
  return md + "\n";
}

double PaperValue(const std::string& s) {
  if (s.empty()) return kNaN;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' ? v : kNaN;
}

std::vector<double> Column(const Table& t, const std::string& figure, const std::vector<std::string>& rows,
                           bool paper) {
  std::vector<double> v;
  for (const std::string& row : rows) {
    double x = kNaN;
    for (const Figure& f : t.rows)
      if (f.row == row && f.figure == figure) x = paper ? PaperValue(f.paper) : f.mmtwin;
    v.push_back(x);
  }
  return v;
}

Status AddChart(std::vector<Png>& pngs, const std::string& name, const ChartSpec& c) {
  MMTWIN_ASSIGN_OR_RETURN(std::string png, RenderChartPng(c, kPlotWidthPx, kPlotHeightPx));
  pngs.push_back({name, std::move(png)});
  return Status();
}

std::string TablesWithPlots(const std::vector<Table>& tables,
                            const std::map<std::string, std::string>& plot_after) {
  std::string md;
  for (const Table& t : tables) {
    md += MarkdownTable(t);
    for (const auto& [key, png] : plot_after)
      if (t.heading.find(key) != std::string::npos) md += "![" + t.heading + "](" + png + ")\n\n";
  }
  return md;
}

void AddReportFiles(std::string md, std::vector<Png>& pngs,
                    std::vector<std::pair<std::string, std::string>>& files) {
  files.emplace_back("README.md", std::move(md));
  for (Png& p : pngs) files.emplace_back(p.name, std::move(p.content));
  pngs.clear();
}

// ---- header ----

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string Header(const std::string& title, const ReportOptions& o, bool sweeps) {
  std::string md = "# " + title + "\n\n";
  md += "Generated by `mmtwin-report` (gui/report.h); do not edit by hand.\n\n";
  md += "- command: `" + o.command + "`\n";
  const std::string commit = MMTWIN_GIT_DESCRIBE;
  md += "- mmtwin commit: " + (commit.empty() ? std::string("unknown") : "`" + commit + "`") + "\n";
  md += "- date: " + UtcNow() + "\n";
  if (o.reduced)
    md += "- **reduced**: every run on " + std::to_string(kReducedSamples) + " samples of its trace, " +
          std::to_string(kReducedIterations) +
          " sampled iterations (runs on a trace file keep its samples; a test's report, not the paper's "
          "scale)\n";
  if (!sweeps) return md + "\n";
  md +=
      "- engine: analytic; every mmtwin figure comes from the run named in the `run` column (`sweep#index`: "
      "the sweep file scenarios/sweeps/SWEEP.yaml, its run index; `mmtwin sweep` prints the same rows; a run "
      "two sweeps share, the same scenario, is named by the sweep that ran it first)\n\n";
  return md;
}
std::string DefaultScenariosDir() {
  std::error_code ec;
  if (fs::is_directory("scenarios/sweeps", ec)) return "scenarios";
  return MMTWIN_SOURCE_SCENARIOS_DIR;
}

}  // namespace mmtwin::gui::internal

// SPDX-License-Identifier: Apache-2.0
// Helpers the reports share (common.h).
#include "report/common.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>

#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "core/util/data_dir.h"
#include "core/util/version.h"
#include "sweep/runner.h"
#include "sweep/sweep.h"

namespace mmtwin::report::internal {

namespace fs = std::filesystem;

// ---- runs ----

std::string LabelsOf(const std::vector<std::pair<std::string, std::string>>& axes) {
  std::string s;
  for (const auto& [k, v] : axes) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s;
}

std::string ReportStamp(const std::string& scenarios_dir) {
  uint64_t h = 1469598103934665603ULL;  // 64-bit FNV-1a
  const auto mix = [&h](std::string_view bytes) {
    for (const unsigned char c : bytes) {
      h ^= c;
      h *= 1099511628211ULL;
    }
  };
  if (auto exe = ReadFile("/proc/self/exe"); exe.ok()) mix(*exe);
  std::error_code ec;
  for (const auto& [root, skip] :
       {std::pair<std::string, std::string>{DataDir(), ""}, {scenarios_dir, "goldens"}}) {
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      if (!skip.empty() && it->is_directory(ec) && it->path().filename() == skip) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      mix(fs::relative(f, root, ec).generic_string());
      if (auto text = ReadFile(f.string()); text.ok()) mix(*text);
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

Result<std::unique_ptr<ResultsDb>> OpenReportDb(const ReportOptions& o) {
  const std::string db_path = ReportDbPath(o);
  const fs::path parent = fs::path(db_path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  const std::string stamp_path = db_path + ".stamp";
  const std::string stamp = ReportStamp(o.scenarios_dir.empty() ? DefaultScenariosDir() : o.scenarios_dir);
  if (auto old = ReadFile(stamp_path); old.ok() && *old != stamp && fs::exists(db_path, ec)) {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const std::string from = db_path + suffix, to = db_path + ".stale" + suffix;
      fs::remove(to, ec);
      if (fs::exists(from, ec)) {
        fs::rename(from, to, ec);
        if (ec) return Error(from + ": cannot move the stale results database aside: " + ec.message());
      }
    }
    if (o.progress)
      o.progress(db_path + ": made by another build or other data files (stamp " + *old + ", now " + stamp +
                 "): moved to " + db_path + ".stale; every run runs again");
  }
  MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<ResultsDb> db, ResultsDb::Open(db_path));
  MMTWIN_RETURN_IF_ERROR(WriteFileAtomic(stamp_path, stamp));
  return db;
}

namespace {

// The kept runs of a reduced report as a zip sweep: run i's value on each axis (a cartesian sweep's index is mixed
// radix, the last axis fastest, as ExpandRun reads it). The runs keep their scenarios, so their run keys.
Status KeepRuns(const std::string& file, const std::vector<int>& runs, SweepSpec& spec) {
  const int64_t size = SweepSize(spec);
  std::vector<SweepAxis> kept = spec.axes;
  for (SweepAxis& axis : kept) {
    axis.values.clear();
    axis.labels.clear();
  }
  for (const int i : runs) {
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
  return Status();
}

// A reduced report's sweep: named NAME-reduced, the kept runs only, kReducedIterations on kReducedSamples samples.
Status Reduce(const std::string& file, const std::vector<int>& reduced_runs, SweepSpec& spec) {
  spec.name += "-reduced";
  if (!reduced_runs.empty()) MMTWIN_RETURN_IF_ERROR(KeepRuns(file, reduced_runs, spec));
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
  return Status();
}

}  // namespace

Result<SweepRows> RunReportSweep(const std::string& file, const ReportOptions& o, ResultsDb& db,
                                 const std::vector<int>& reduced_runs) {
  MMTWIN_ASSIGN_OR_RETURN(SweepSpec spec, LoadSweep(file));
  if (o.reduced) MMTWIN_RETURN_IF_ERROR(Reduce(file, reduced_runs, spec));
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
    // This sweep's axis names and labels (the row may be another sweep's). A row of this sweep takes its place
    // in the file as it is now: the database keeps the index it was recorded at, which an older order of the
    // file (a label inserted before it) makes stale. A row another sweep recorded keeps that sweep's reference.
    r.axes = run.axes;
    if (r.sweep == spec.name) r.run_index = i;
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

std::string RunRef(const RunRecord& r) { return r.sweep + "#" + std::to_string(r.run_index); }

std::string Iterations(const SweepRows& s) {
  const int64_t n = s.rows.empty() ? 0 : s.rows.front().summary->iterations_replayed;
  return std::to_string(n) + " sampled iteration" + (n == 1 ? "" : "s") + " per run";
}

// ---- data, pictures, header ----

Result<ReportData> LoadReportData(const ReportOptions& o, const std::string& name,
                                  const std::string& values_file) {
  ReportData d;
  d.dir = (o.data_dir.empty() ? ReportDataDir() : o.data_dir) + "/" + name;
  MMTWIN_ASSIGN_OR_RETURN(d.paper, LoadPaper(d.dir + "/" + values_file));
  MMTWIN_ASSIGN_OR_RETURN(d.tmpl, LoadTemplate(d.dir + "/template.md"));
  return d;
}

Status AddChart(Plotter& plotter, const std::string& name, const ChartSpec& c, ReportFiles& files,
                Bindings& b) {
  MMTWIN_ASSIGN_OR_RETURN(std::string image, plotter.Chart(c, kPlotWidthPx, kPlotHeightPx));
  const std::string file = name + "." + plotter.Extension();
  files.emplace_back(file, std::move(image));
  b.SetFigure(name, file);
  return Status();
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string Header(const ReportOptions& o, bool sweeps) {
  // The note cites gui/report.h, mmtwin-report's Qt side, which points here.
  std::string md = "Generated by `mmtwin-report` (gui/report.h); do not edit by hand.\n\n";
  md += "- command: `" + o.command + "`\n";
  const std::string commit(MmtwinCommit());
  md += "- mmtwin commit: " + (commit.empty() ? std::string("unknown") : "`" + commit + "`") + "\n";
  md += "- date: " + UtcNow();
  if (o.reduced)
    md += "\n- **reduced**: every run on " + std::to_string(kReducedSamples) + " samples of its trace, " +
          std::to_string(kReducedIterations) +
          " sampled iterations (runs on a trace file keep its samples; a test's report, not the paper's "
          "scale)";
  if (!sweeps) return md;
  return md +
         "\n- engine: analytic; every mmtwin figure comes from the run named in the `run` column "
         "(`sweep#index`: "
         "the sweep file scenarios/sweeps/SWEEP.yaml, its run index; `mmtwin sweep` prints the same rows; a "
         "run "
         "two sweeps share, the same scenario, is named by the sweep that ran it first)";
}

}  // namespace mmtwin::report::internal

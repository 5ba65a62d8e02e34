// SPDX-License-Identifier: Apache-2.0
// What the reports of report.h share (not a public API: omnibal.cc, orchmllm.cc, longvila.cc, validation.cc):
// running a shipped sweep into the results database, finding its rows, a report's data folder (paper.yaml and
// template.md), its pictures, the README header.
//
//   MMTWIN_ASSIGN_OR_RETURN(ReportData data, LoadReportData(o, "orchmllm"));
//   MMTWIN_ASSIGN_OR_RETURN(const RunRecord* r, Find(rows, {{"model", "orchmllm-10b"}, {"data", "orch"}}));
//   MMTWIN_ASSIGN_OR_RETURN(ReportTable t, NewTable(data.paper, "full"));
//   t.Add("MLLM-84B", "MFU (%), OrchMLLM", 100 * r->summary->mfu, 1, RunRef(*r));
//   bindings.SetTable("full", &t);
//   MMTWIN_ASSIGN_OR_RETURN(std::string md, Render(data.tmpl, bindings));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/util/status.h"
#include "report/paper.h"
#include "report/plotter.h"
#include "report/report.h"
#include "report/tables.h"
#include "report/template.h"
#include "sweep/results_db.h"

namespace mmtwin::report::internal {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A sweep's ok rows of the current definition (its runs' keys), in run order.
struct SweepRows {
  std::string name;  // the sweep name in the database (with -reduced)
  std::vector<RunRecord> rows;
};

// "k=v, k=v".
std::string LabelsOf(const std::vector<std::pair<std::string, std::string>>& axes);

// What a report's runs are computed with, as 16 hex digits: a digest of the running executable and of every file
// under the data folder (DataDir(): cluster presets, the model zoo, derived traces) and under `scenarios_dir`
// (its goldens/ excepted), paths and contents in path order. The results database keys a run by its scenario's
// text only (sweep/sweep.h PortableRunKey), so without this a preset or code change would reuse stale runs.
std::string ReportStamp(const std::string& scenarios_dir);

// The report's results database (ReportDbPath), its folder created if missing. Its stamp sits beside it
// (PATH.stamp, ReportStamp of the report's scenarios folder): when the file records another stamp, the database
// (with its -wal / -shm files) is moved to PATH.stale, replacing an older one, `o.progress` says so, and every run
// runs again; a database without a stamp file (made by `mmtwin sweep`, or before stamps) is kept and stamped.
Result<std::unique_ptr<ResultsDb>> OpenReportDb(const ReportOptions& o);

// Runs (or reuses) the sweep file's runs in `db` and returns its rows. Reduced (options.reduced): the sweep is
// named NAME-reduced, every run replays kReducedIterations on kReducedSamples samples (a run on a trace file keeps
// the file's samples), and the sweep keeps only the runs `reduced_runs` lists (all when empty; indices into the
// full sweep, zip or cartesian; the kept runs become a zip sweep). Errors: the file does not load, a run failed
// or did not finish (naming it and its axes), an interrupt.
Result<SweepRows> RunReportSweep(const std::string& file, const ReportOptions& o, ResultsDb& db,
                                 const std::vector<int>& reduced_runs = {});

// A report's sweep: scenarios/sweeps/NAME.yaml, where its rows go, and the runs a reduced report keeps
// (RunReportSweep's reduced_runs).
struct ReportSweep {
  std::string name;
  SweepRows* rows;
  std::vector<int> reduced_runs = {};
};

// The report's prologue: opens its results database (OpenReportDb) and runs or reuses every sweep of `sweeps` in
// order (RunReportSweep on SCENARIOS/sweeps/NAME.yaml), filling each one's rows. Errors: RunReportSweep's.
Status RunReportSweeps(const ReportOptions& o, const std::string& scenarios,
                       const std::vector<ReportSweep>& sweeps);

// The row whose axes include every (name, label) of `want`; an error naming the sweep and `want` when none.
Result<const RunRecord*> Find(const SweepRows& s,
                              const std::vector<std::pair<std::string, std::string>>& want);

// "sweep#index".
std::string RunRef(const RunRecord& r);
// "N sampled iterations per run" of a sweep's runs (the first run's; a sweep overrides every run's count).
std::string Iterations(const SweepRows& s);

// A report's data folder: DATA/NAME/template.md and its values file (paper.h's format: paper.yaml, the paper's
// published values; the validation index's runs.yaml holds facts only).
struct ReportData {
  std::string dir;
  Paper paper;
  Template tmpl;
};
Result<ReportData> LoadReportData(const ReportOptions& o, const std::string& name,
                                  const std::string& values_file = "paper.yaml");

// A report's folder contents: README.md first, then its pictures.
using ReportFiles = std::vector<std::pair<std::string, std::string>>;

// Draws `c` at the plot size (kPlotWidthPx x kPlotHeightPx), appends it to `files` as NAME.EXT and binds the
// figure NAME to that file name.
Status AddChart(Plotter& plotter, const std::string& name, const ChartSpec& c, ReportFiles& files,
                Bindings& b);

// The generated-by note, the command, the mmtwin commit, the date, the reduced note and (`sweeps`) the engine and
// the run column's naming, as Markdown lines (no trailing newline): what the templates show as {{header}}.
std::string Header(const ReportOptions& o, bool sweeps = true);
std::string UtcNow();

// The reports: each runs its sweeps, renders its template and appends README.md (first) and its pictures to
// `files`.
Status GenerateOmnibal(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                       ReportFiles& files);
// The OrchMLLM report's scaling chart (scaling.png): the MLLM-10B lines from `scale` (rows "64" ... "2560") and
// the 2,560-GPU MLLM-84B points of `full`, paper and mmtwin, mmtwin's legend entry naming its gap to the paper
// in MFU points (issue 33, item 8).
ChartSpec OrchmllmScalingChart(const ReportTable& full, const ReportTable& scale);
Status GenerateOrchmllm(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                        ReportFiles& files);
Status GenerateLongvila(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                        ReportFiles& files);
// The tune report: each seed setting's tune space (scenarios/tune/) searched, the paper's layout beside the best.
Status GenerateTune(const ReportOptions& o, const std::string& scenarios, Plotter& plotter, ReportFiles& files);
// The policies league table (policies_report.cc): every policy on shared workloads at two scales, ranked.
Status GeneratePolicies(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                        ReportFiles& files);
// The validation index: runs every suite into o.out_dir/SUITE itself (the suite folders and their kept runs
// stay, each with its report), and appends the index README.md and its chart.
Status GenerateValidation(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                          ReportFiles& files);

}  // namespace mmtwin::report::internal

// SPDX-License-Identifier: Apache-2.0
// What the reports of gui/report.h share (not a public API: report.cc, report_orchmllm.cc, report_longvila.cc):
// running a shipped sweep into the results database, finding its rows, the paper-vs-mmtwin tables and the README
// header, the tables with their plots.
//
//   MMTWIN_ASSIGN_OR_RETURN(SweepRows rows, RunReportSweep(scenarios + "/sweeps/x.yaml", options, db));
//   MMTWIN_ASSIGN_OR_RETURN(const RunRecord* r, Find(rows, {{"model", "orchmllm-10b"}, {"data", "orch"}}));
//   table.rows.push_back({"MLLM-10B", "MFU (%)", "41.6", 100 * r->summary->mfu, 1, RunRef(*r)});
//   std::string md = Header("Paper reproduced by mmtwin", options) + MarkdownTable(table);
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chart.h"
#include "sweep/results_db.h"
#include "core/util/status.h"
#include "report.h"

namespace mmtwin::gui::internal {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// printf("%.*f").
std::string Fixed(double v, int decimals);

// A sweep's ok rows of the current definition (its runs' keys), in run order.
struct SweepRows {
  std::string name;  // the sweep name in the database (with -reduced)
  std::vector<RunRecord> rows;
};

// "k=v, k=v".
std::string LabelsOf(const std::vector<std::pair<std::string, std::string>>& axes);

// The report's results database (ReportDbPath), its folder created if missing.
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

struct Figure {
  std::string row;     // e.g. "ISF, w MB"
  std::string figure;  // e.g. "GPU-days"
  // As printed in the paper ("" = not reported). A plain number gets a ratio; anything else (a range
  // "1.5–2.0", "OOM", "≈ 30") is shown as written with the ratio n/a.
  std::string paper;
  double mmtwin = 0;
  int decimals = 2;
  std::string run;  // "sweep#index", "A / B", "A − B", or "sweep#index (plan...)" (see the report's header)
};

struct Table {
  std::string heading;
  std::string intro;
  std::string paper_ref;   // "Table 5", "Fig. 8, §8.1"
  std::string row_header;  // "method"
  std::vector<Figure> rows;
};

std::string RunRef(const RunRecord& r);
// "### heading", the intro, and the six-column table: row, figure, paper (ref), mmtwin, mmtwin / paper, run.
std::string MarkdownTable(const Table& t);
// The paper's value as a number: NaN unless `s` is a plain number (strtod consumes all of it).
double PaperValue(const std::string& s);
// The values of `figure` in table `t` for rows `rows`, paper or mmtwin (NaN where there is no such figure).
std::vector<double> Column(const Table& t, const std::string& figure, const std::vector<std::string>& rows,
                           bool paper);

struct Png {
  std::string name, content;
};

// Renders `c` offscreen at the plot size (kPlotWidthPx x kPlotHeightPx) and appends it to `pngs` as `name`.
Status AddChart(std::vector<Png>& pngs, const std::string& name, const ChartSpec& c);

// The tables with their plots: every table (MarkdownTable) in order, each followed by "![heading](PNG)" for every
// entry of `plot_after` whose key occurs in its heading (in the map's order).
std::string TablesWithPlots(const std::vector<Table>& tables,
                            const std::map<std::string, std::string>& plot_after);

// The report's folder contents: README.md (`md`), then the PNGs (moved out of `pngs`).
void AddReportFiles(std::string md, std::vector<Png>& pngs,
                    std::vector<std::pair<std::string, std::string>>& files);

std::string UtcNow();
// "# title", the generated-by note, the command, the mmtwin commit, the date, the reduced note and (`sweeps`) the
// engine and the run column's naming.
std::string Header(const std::string& title, const ReportOptions& o, bool sweeps = true);
// ./scenarios when it holds sweeps/, else the source tree's.
std::string DefaultScenariosDir();

// The reports (each appends README.md and its PNGs to `files`).
Status GenerateOmnibal(const ReportOptions& o, const std::string& scenarios,
                       std::vector<std::pair<std::string, std::string>>& files);
Status GenerateOrchmllm(const ReportOptions& o, const std::string& scenarios,
                        std::vector<std::pair<std::string, std::string>>& files);
Status GenerateLongvila(const ReportOptions& o, const std::string& scenarios,
                        std::vector<std::pair<std::string, std::string>>& files);
// The validation index (report_validation.cc): runs every suite into o.out_dir/SUITE itself (the suite folders
// and their kept runs stay), and appends the index README.md and its PNG.
Status GenerateValidation(const ReportOptions& o, const std::string& scenarios,
                          std::vector<std::pair<std::string, std::string>>& files);

}  // namespace mmtwin::gui::internal

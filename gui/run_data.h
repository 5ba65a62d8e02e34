// SPDX-License-Identifier: Apache-2.0
// The GUI's data layer, free of Qt so that tests and benchmarks can check it directly: a run as the views see it
// (typed records from a run folder, from Simulate, or from a sweep database row), the Gantt timeline's rows with
// its hit test and level of detail, the memory-over-time counter of a device, and a sweep's heatmap.
//
//   MMTWIN_ASSIGN_OR_RETURN(RunData run, LoadRunDir("runs/default"));   // simulated or measured: one schema
//   TimelineModel tl(run.ops, run.summary.parallel);
//   std::vector<TimelineItem> items;
//   tl.Layout(0, tl.end_us(), 1200, items);   // at most 2 items per pixel column and row, one per op or aggregate
//   int op = tl.HitTest(tl.RowOf(run.ops[7]), run.ops[7].start_us);   // 7 (or an op at the same place)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/records/records.h"
#include "core/util/status.h"
#include "driver/simulate.h"
#include "sweep/results_db.h"
#include "whatif/whatif.h"

namespace mmtwin::gui {

// One run as the views show it. Simulated and measured runs look the same (summary.source says which).
struct RunData {
  RunSummary summary;
  std::vector<OpRecord> ops;  // one iteration's ops (empty for a sweep row: the database keeps no ops)
  std::string scenario_yaml;  // the resolved scenario ("" when the folder has none)
  std::string trace_json;     // only for runs simulated here (written as the run folder's trace)
  std::string dir;            // the run folder it was read from or written to ("" when only in memory)
};

// Reads a run folder (core/records/run_folder.h) written by `mmtwin simulate -o`, by the backend or by
// WriteRunDir, or the folder of a run's summary file: the summary (required), the ops and the scenario (each
// optional). Errors name the file ("runs/a/ops.csv:12: ...").
Result<RunData> LoadRunDir(const std::string& dir);
// Writes the run folder the CLI writes (RunFolderWriter: the summary and its stages, the ops, the trace and the
// scenario when not empty) as one unit; `run.dir` is not used.
Status WriteRunDir(const std::string& dir, const RunData& run);
// A finished simulation as a RunData (ops, trace and resolved scenario moved out of `r`).
RunData RunDataOf(SimulationResult&& r);

// ---- Gantt timeline ----

// One row of the timeline: a device's lane (compute, p2p_fwd, p2p_bwd, dp, dispatch). Rows are ordered by device,
// then lane; a device gets its compute row always and a comm row only for lanes that carry ops.
struct TimelineRow {
  int32_t device = 0;
  Lane lane = Lane::kCompute;
  std::string label;  // "dp 0 / stage 1" on the compute row, the lane's name on the others
};

// What the painter draws: an op (op >= 0, the index into the ops given to TimelineModel), or an aggregate of the
// `count` ops whose start falls into one pixel column of one row (op = -1), coloured by `kind`, the kind with the
// most time in the column, and `fill` the fraction of the column's time they cover.
struct TimelineItem {
  int row = 0;
  double start_us = 0, end_us = 0;
  OpKind kind = OpKind::kForward;
  int op = -1;
  int count = 1;
  float fill = 1;
};

class TimelineModel {
 public:
  TimelineModel() = default;
  // Keeps a copy of nothing but indices: `ops` must outlive the model and not change. Barriers (device -1) and
  // zero-length ops get no row and are never drawn.
  TimelineModel(const std::vector<OpRecord>& ops, const ParallelConfig& parallel);

  const std::vector<TimelineRow>& rows() const { return rows_; }
  // Row of an op, -1 for ops without one (barriers, zero duration).
  int RowOf(const OpRecord& op) const;
  int RowOf(int32_t device, Lane lane) const;
  double end_us() const { return end_us_; }  // the latest op end
  // Ops drawn (every op with a row).
  int64_t drawn_ops() const { return drawn_ops_; }

  // The op of `row` covering time t_us (start <= t < end; within tolerance_us of an op's edge counts too), or -1.
  // O(log n) per row.
  int HitTest(int row, double t_us, double tolerance_us = 0) const;

  // Level of detail: the items to draw for the time window [t0_us, t1_us) on width_px pixel columns. An op at
  // least one pixel wide is its own item; narrower ops are merged per row and pixel column into one aggregate.
  // Every op overlapping the window is in exactly one item (the counts of the items add up to the ops in the
  // window), and a row yields at most 2 * width_px items, so the painter's work is bounded by the pixels, not
  // by the ops. `out` is cleared first.
  void Layout(double t0_us, double t1_us, int width_px, std::vector<TimelineItem>& out) const;

 private:
  const std::vector<OpRecord>* ops_ = nullptr;
  std::vector<TimelineRow> rows_;
  std::map<std::pair<int32_t, int>, int> row_of_;  // (device, lane) -> row
  std::vector<std::vector<int>> row_ops_;          // per row: op indices sorted by start
  std::vector<std::vector<double>>
      row_max_end_;  // per row: running max of end over row_ops_ (for the search)
  double end_us_ = 0;
  int64_t drawn_ops_ = 0;
};

// Display colour of an op kind as 0xRRGGBB (forward blue, backward green, recompute orange, P2P purple,
// DP collectives red, TP collectives teal, dispatch brown, optimizer grey) and the legend's groups.
uint32_t OpKindColor(OpKind k);
struct LegendEntry {
  const char* label;
  uint32_t color;
};
const std::vector<LegendEntry>& OpKindLegend();

// Activation memory of one device over the iteration (Perfetto's "activations" counter): (time_us, bytes) steps,
// + activation_bytes when a forward ends, - when its backward ends, starting at (0, 0).
std::vector<std::pair<double, int64_t>> ActivationCounter(const std::vector<OpRecord>& ops, int32_t device);

// ---- Sweep heatmap ----

// The numeric summary columns a heatmap can show (SummaryColumns() of core/records/records_codec.h, INTEGER and
// REAL), e.g. "iteration_time_us_p50".
std::vector<std::string> HeatmapMetrics();
// Value of a numeric summary column for a summary (by SummaryColumns() name); false when unknown or not numeric.
bool SummaryMetric(const RunSummary& s, const std::string& column, double& value);

// The axes of a sweep's rows and their values in order (numbers ascending when every value is a number, else in
// order of first appearance).
std::vector<std::pair<std::string, std::vector<std::string>>> SweepAxes(const std::vector<RunRecord>& runs);

struct HeatmapCell {
  int x = 0, y = 0;  // indices into x_values / y_values
  double value = 0;  // the metric of the run
  int run = -1;      // index into the runs given
  bool ok = true;    // false: the run failed (status error), value is 0
};
struct Heatmap {
  std::string metric, x_axis, y_axis;
  std::vector<std::string> x_values, y_values;
  std::vector<HeatmapCell> cells;  // one per (x, y) with a matching run (the first one when several match)
  double min = 0, max = 0;         // over the ok cells
};
// The runs whose other axes equal `filters` (axis -> value label; an axis without a filter matches any value),
// placed by their x and y axis values. Errors: an unknown metric or axis.
Result<Heatmap> BuildHeatmap(const std::vector<RunRecord>& runs, const std::string& metric,
                             const std::string& x_axis, const std::string& y_axis,
                             const std::map<std::string, std::string>& filters);

// The slowdown of every op-graph device (rows, "dp D pp R") at every replayed step (columns, the iteration), as
// `mmtwin replay` judges it (ReplayIteration::device_slowdown: 1 = its replicas' typical speed); cells of devices
// without compute are left out. No cell names a run (run -1).
Heatmap ReplayHeatmap(const ReplayReport& report);

}  // namespace mmtwin::gui

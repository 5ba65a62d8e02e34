// SPDX-License-Identifier: Apache-2.0
// The views of a run and of a sweep, as widgets that take the typed records (core/records/records.h): a run
// simulated here, read from a run folder (simulated or measured by the backend: one schema) or from a sweep
// database row shows the same way. Charts are drawn with QPainter (no Qt Charts). Reports can reuse them: each
// widget renders offscreen (QWidget::grab) at any size.
//
//   SummaryPanel summary;  summary.SetRun(run.summary);          // iteration p50 / p99, split, tokens/s, MFU, ...
//   StageTable table;      table.SetStages(run.summary.stages);
//   MemoryView memory;     memory.SetRun(&run);                   // stacked bars per stage + a device's counter
//   GanttView gantt;       gantt.SetRun(&run);                    // one iteration, zoom with the wheel, drag to pan
//
// Units on screen: times in ms, memory in GiB, ratios in % of GPU time (as `mmtwin simulate` prints them).
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QTableWidget>
#include <QWidget>

#include <map>
#include <string>
#include <vector>

#include "run_data.h"
#include "tune/tune.h"

namespace mmtwin::gui {

// Display formats shared by the views (and by tests as the way a figure is written on screen).
QString FormatMs(double us);       // "6980.3 ms" (1 decimal)
QString FormatPercent(double r);   // "29.1%" (1 decimal)
QString FormatGiB(int64_t bytes);  // "66.0 GiB" (1 decimal)

// The run's headline figures in a grid of labels. Each value label has an objectName (for tests and style
// sheets): iteration_p50, iteration_p99, iteration_mean, busy, bubble, idle, exposed_comm, tokens_per_s, mfu,
// gpu_days, oom, source, layout, policies.
class SummaryPanel : public QWidget {
 public:
  explicit SummaryPanel(QWidget* parent = nullptr);
  void SetRun(const RunSummary& s);
  void Clear();
  // The text shown for a field (objectName above), "" when unknown.
  QString FieldText(const QString& name) const;

 private:
  std::map<QString, QLabel*> fields_;
};

// One row per pipeline stage: stage, layers, params, recomputed layers, forward / backward / recompute ms per
// micro-batch, busy / bubble / idle %, model states, peak activations, peak and capacity GiB, fits. Each cell
// keeps its raw value (Qt::UserRole: ms, ratio or bytes as a double) for sorting and tests.
class StageTable : public QTableWidget {
 public:
  explicit StageTable(QWidget* parent = nullptr);
  void SetStages(const std::vector<StageRecord>& stages);
  enum Column {
    kStage,
    kLayers,
    kParams,
    kRecompute,
    kFwd,
    kBwd,
    kRecomputeMs,
    kBusy,
    kBubble,
    kIdle,
    kStates,
    kActivations,
    kPeak,
    kCapacity,
    kFits,
    kNumColumns
  };
};

// One coloured part of a stage's memory bar, bottom to top.
struct MemorySegment {
  QString label;
  int64_t bytes = 0;
  QColor color;
};

// Memory per stage: stacked bars in GiB (MemoryChart::Segments: model states, peak activations, buffers and
// workspaces, the allocator's fragmentation, the runtime outside the allocator) with the device capacity as a
// dashed line; a stage that does not fit is outlined and labelled in red.
class MemoryChart : public QWidget {
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  // The parts of a stage's peak_memory_bytes, bottom to top; they sum to it. Buffers and workspaces are what
  // the record does not name (boundary buffers, cuBLAS / cuDNN workspaces; in a measured run, all but the
  // states and activations).
  static std::vector<MemorySegment> Segments(const StageRecord& s);
  void SetStages(const std::vector<StageRecord>& stages);
  // Where stage i's bar is drawn (widget coordinates, after a layout at the current size); empty when none.
  QRectF BarRect(int stage) const;
  // Colour of the bar outline of stage i (red for OOM).
  QColor OutlineColor(int stage) const;
  QSize sizeHint() const override { return {560, 320}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<StageRecord> stages_;
};

// A step chart of one device's activation memory over the iteration (ActivationCounter), in GiB against ms.
class ActivationChart : public QWidget {
 public:
  explicit ActivationChart(QWidget* parent = nullptr);
  void SetSeries(std::vector<std::pair<double, int64_t>> steps, QString title);
  QSize sizeHint() const override { return {560, 200}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<std::pair<double, int64_t>> steps_;
  QString title_;
};

// MemoryChart above an ActivationChart with a device chooser.
class MemoryView : public QWidget {
 public:
  explicit MemoryView(QWidget* parent = nullptr);
  void SetRun(const RunData* run);  // nullptr clears; the run must outlive the view's use of it
  MemoryChart* chart() const { return chart_; }
  QComboBox* device_box() const { return device_; }

 private:
  void ShowDevice(int index);
  const RunData* run_ = nullptr;
  MemoryChart* chart_;
  ActivationChart* counter_;
  QComboBox* device_;
};

// The Gantt timeline of one iteration: a row per device and lane (TimelineModel), ops coloured by kind, the
// time without compute shaded on compute rows (bubbles and idle), a time axis in ms and a legend. Wheel zooms
// around the cursor, drag pans, double click resets; a tooltip shows the op's kind, micro-batch, chunk, start,
// duration, bytes, tokens and samples. Painting goes through TimelineModel::Layout, so its cost is bounded by
// the pixels (100k ops stay smooth).
class GanttView : public QWidget {
  Q_OBJECT
 public:
  explicit GanttView(QWidget* parent = nullptr);
  // Shows the run's ops (nullptr clears); the run must outlive the view's use of it. Resets the window to the
  // whole iteration.
  void SetRun(const RunData* run);
  void SetOps(const std::vector<OpRecord>* ops, const ParallelConfig& parallel);
  void SetTitle(const QString& title) {
    title_ = title;
    update();
  }
  // false: the axis label leaves out the mouse hints (a picture rendered for a report).
  void SetInteractive(bool on) {
    interactive_ = on;
    update();
  }

  // The visible time window (us).
  double t0_us() const { return t0_us_; }
  double t1_us() const { return t1_us_; }
  void SetWindow(double t0_us, double t1_us);
  void ResetWindow();
  // The time span the full window shows (the iteration, or a longer one set by an aligned view).
  void SetFullSpan(double end_us);

  const TimelineModel& model() const { return model_; }
  // Items drawn by the last paint (for tests and the benchmark).
  const std::vector<TimelineItem>& last_items() const { return items_; }
  // Index of the op under a widget point, -1 when none.
  int OpAt(const QPoint& p) const;
  // Centre of op i's bar in widget coordinates (may lie outside the widget when scrolled away).
  QPointF PointOf(int op) const;
  QString TooltipText(int op) const;
  // Geometry: the plot area (right of the labels, between the axis and the legend) and a row's band.
  QRectF PlotRect() const;
  QRectF RowRect(int row) const;
  double XOf(double t_us) const;
  double TimeAt(double x) const;
  QSize sizeHint() const override;

 signals:
  void windowChanged(double t0_us, double t1_us);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  bool event(QEvent*) override;

 private:
  const std::vector<OpRecord>* ops_ = nullptr;
  TimelineModel model_;
  std::vector<TimelineItem> items_;
  double t0_us_ = 0, t1_us_ = 1, full_end_us_ = 1;
  QString title_;
  bool interactive_ = true;
  bool dragging_ = false;
  double drag_x_ = 0, drag_t0_ = 0;
};

// A over B: the headline metrics (A, B, B - A, B / A; one row per HeadlineMetrics() entry of
// core/records/headline_metrics.h, as `mmtwin compare` prints them) and per-stage deltas (one column per
// StageMetrics() entry after the stage), and both timelines on one time scale (zooming or panning one moves the
// other). Cells keep the raw numbers in Qt::UserRole (the delta columns hold B - A exactly); a delta is green when
// it is an improvement by the metric's direction, red when it is worse.
class CompareView : public QWidget {
 public:
  explicit CompareView(QWidget* parent = nullptr);
  // Either may be nullptr (then its side stays empty). The runs must outlive the view's use of them.
  void SetRuns(const RunData* a, const RunData* b);
  QTableWidget* summary_table() const { return summary_; }
  QTableWidget* stage_table() const { return stages_; }
  GanttView* gantt_a() const { return gantt_a_; }
  GanttView* gantt_b() const { return gantt_b_; }

 private:
  QLabel* title_;
  QTableWidget* summary_;
  QTableWidget* stages_;
  GanttView* gantt_a_;
  GanttView* gantt_b_;
};

// The runs of this session, oldest first (issue 33, item 3: the what-if loop's history): per run its number, the
// time it finished, engine, what changed in its scenario from the run before it (core/scenario/diff.h) and a few
// headline metrics (core/records/headline_metrics.h, the Compare tab's labels and formats). Double-clicking a row
// (or "Show") emits showRequested; selecting two rows and "Compare" emits compareRequested with the older as A.
// An entry keeps the summary, the resolved scenario and the run folder, not the ops: the window reloads the
// folder to show a run.
struct HistoryEntry {
  int number = 0;    // 1, 2, ... in the order the runs finished
  QString finished;  // "HH:mm:ss"
  RunSummary summary;
  std::string scenario_yaml;
  std::string dir;  // the run folder the window wrote
  QString changes;  // FormatChanges against the previous entry ("first run" for the first)
};

class HistoryView : public QWidget {
  Q_OBJECT
 public:
  explicit HistoryView(QWidget* parent = nullptr);
  // Appends a finished run (its scenario compared with the previous entry's). At most kMaxEntries are kept.
  void Add(const RunData& run);
  static constexpr int kMaxEntries = 100;
  int size() const { return static_cast<int>(entries_.size()); }
  const HistoryEntry& entry(int i) const { return entries_.at(i); }
  QTableWidget* table() const { return table_; }
  // The headline metrics shown, by their HeadlineMetric names.
  static const std::vector<std::string>& MetricNames();
  // Emits compareRequested for the two selected rows (older first); false unless exactly two are selected.
  bool CompareSelected();

 signals:
  void showRequested(int entry);
  void compareRequested(int a, int b);

 private:
  void AddRow(const HistoryEntry& e);
  QTableWidget* table_;
  std::vector<HistoryEntry> entries_;
};

// A heatmap of one metric over two sweep axes: cells coloured from low (light) to high (dark), the value written
// in each cell, axis labels, and failed runs crossed out. Clicking a cell emits runClicked with its run index.
class HeatmapView : public QWidget {
  Q_OBJECT
 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  void SetHeatmap(Heatmap h);
  const Heatmap& heatmap() const { return heatmap_; }
  QRectF CellRect(int x, int y) const;
  // The cell index under a point, -1 when none.
  int CellAt(const QPointF& p) const;
  QSize sizeHint() const override { return {640, 420}; }

 signals:
  void runClicked(int run);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;

 private:
  QRectF GridRect() const;
  Heatmap heatmap_;
};

// `mmtwin replay` of a run folder (sim/whatif/whatif.h): per replayed step the recorded and replayed time and the
// what-ifs (balanced data, balanced stages, no slow device, no stalled pass, all four), what each costs the job,
// and the heatmap of each device's slowdown by step (ReplayHeatmap).
class ReplayView : public QWidget {
  Q_OBJECT
 public:
  explicit ReplayView(QWidget* parent = nullptr);
  // Replays the run folder `dir`; errors leave the view as it was.
  Status Open(const std::string& dir);
  const ReplayReport& report() const { return report_; }
  QTableWidget* table() const { return table_; }
  HeatmapView* heatmap() const { return heatmap_; }
  QLabel* attribution() const { return attribution_; }

 private:
  ReplayReport report_;
  QLabel* path_;
  QTableWidget* table_;
  QLabel* attribution_;
  HeatmapView* heatmap_;
};

// A sweep database: metric, x axis, y axis and one filter per other axis, above the heatmap. runOpened(index)
// asks the window to open runs()[index].
class SweepView : public QWidget {
  Q_OBJECT
 public:
  explicit SweepView(QWidget* parent = nullptr);
  // Reads every run of the database (ResultsDb::Runs); errors leave the view as it was.
  Status Open(const std::string& db_path);
  const std::vector<RunRecord>& runs() const { return runs_; }
  // Where the relative paths of a sweep's resolved scenarios resolve: its base scenario's folder when the sweep
  // file recorded in the database still loads (LoadSweep), else the database's folder.
  std::string BaseDirOf(const std::string& sweep) const;
  // Chooses what the heatmap shows (names as in the combo boxes); false when one is not offered.
  bool Choose(const std::string& metric, const std::string& x_axis, const std::string& y_axis);
  bool SetFilter(const std::string& axis, const std::string& value);
  HeatmapView* heatmap() const { return heatmap_; }
  QString error() const;

 signals:
  void runOpened(int index);

 private:
  void Rebuild();
  std::vector<RunRecord> runs_;
  std::map<std::string, std::string> base_dirs_;  // sweep name -> base folder
  QString path_;
  QComboBox *metric_, *x_, *y_;
  QWidget* filters_;
  std::map<std::string, QComboBox*> filter_boxes_;
  QLabel* status_;
  HeatmapView* heatmap_;
};

// A tune search's configurations that fit as points (x: the worst stage's peak memory in GiB, y: the objective),
// the Pareto front joined and the best ringed; clicking a point emits pointClicked with its index (the nearest
// point within 8 px). Axes from 0 to a round top with ticks (report/chart.h's NiceStep and TickLabel).
class TuneScatter : public QWidget {
  Q_OBJECT
 public:
  struct Point {
    double peak_gib = 0, objective = 0;
    bool pareto = false, best = false;
    QString label;  // the tooltip: configuration and figures
  };
  explicit TuneScatter(QWidget* parent = nullptr);
  void SetPoints(std::vector<Point> points, QString y_label);
  const std::vector<Point>& points() const { return points_; }
  // Where point i is drawn, and the point under a position (-1 when none within 8 px).
  QPointF PointPos(int i) const;
  int PointAt(const QPointF& pos) const;
  QSize sizeHint() const override { return {640, 420}; }

 signals:
  void pointClicked(int index);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  bool event(QEvent*) override;  // tooltips

 private:
  QRectF PlotRect() const;
  std::vector<Point> points_;
  QString y_label_;
  double x_top_ = 1, y_top_ = 1;
};

// `mmtwin tune`'s results database (tune/tune.h): the evaluation sweep whose recorded file is a tune space,
// enumerated and ranked again as `mmtwin tune` ranks it (EnumerateTune, RankTune: the same public code), shown as
// the Pareto scatter (every configuration that fits, the front joined) above the ranked table. Clicking a point or
// double-clicking a row emits runOpened with that run's record (its resolved scenario and summary) and the folder
// its relative paths resolve in (the space's base folder).
class TuneView : public QWidget {
  Q_OBJECT
 public:
  explicit TuneView(QWidget* parent = nullptr);
  // Errors (the view unchanged): the database does not open, or no sweep in it was recorded from a tune space
  // that still loads.
  Status Open(const std::string& db_path);
  const TuneResult& result() const { return result_; }
  TuneScatter* scatter() const { return scatter_; }
  QTableWidget* table() const { return table_; }
  // The record of ranked row i (nullptr when none).
  const RunRecord* RankedRecord(int i) const;

 signals:
  void runOpened(const mmtwin::RunRecord& record, const QString& base_dir);

 private:
  void OpenRanked(int i);
  TuneSpace space_;
  TuneEnumeration enumeration_;  // result_'s rows point into it
  TuneResult result_;
  std::map<std::string, RunRecord> by_key_;
  std::vector<int> point_row_;  // scatter point -> ranked row
  QLabel* status_;
  TuneScatter* scatter_;
  QTableWidget* table_;
};

}  // namespace mmtwin::gui

// SPDX-License-Identifier: Apache-2.0
// The what-if explorer's window: tabs Scenario (ScenarioEditor), Summary (SummaryPanel + StageTable), Timeline
// (GanttView), Memory (MemoryView), Compare (CompareView), Sweep (SweepView), History (HistoryView: every run
// of the session, what changed between them, show or compare any two), Replay (ReplayView) and Tune (TuneView:
// a `mmtwin tune` search's Pareto scatter and ranking, a click opens that run); a toolbar with open / save /
// save as, run (analytic, in-process) / run with SimGrid (child mmtwin process) / cancel, and pin (the current
// run becomes A of the comparison); recent files in QSettings ("mmtwin", "mmtwin-gui").
//
//   MainWindow w;
//   w.Open("scenarios/default.yaml");   // a scenario, a run folder (simulated or measured), a sweep .sqlite, or
//                                       // a tune search (its .sqlite or `mmtwin tune`'s output folder)
//   w.show();
//
// Runs are written as ordinary run folders under RunsDir() ($MMTWIN_GUI_RUNS, else the QSettings key
// "runs_dir", else runs/gui in the working folder).
#pragma once

#include <QLabel>
#include <QMainWindow>
#include <QMenu>
#include <QProgressBar>
#include <QString>
#include <QTabWidget>

#include <memory>

#include "editor.h"
#include "run_data.h"
#include "runner.h"
#include "views.h"

namespace mmtwin::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Opens a scenario file (into the editor), a run folder (its views), a tune search (the Tune tab: a database
  // holding a sweep recorded from a tune space, or `mmtwin tune`'s output folder, whose DIR.sqlite is read) or a
  // sweep database (the Sweep tab), chosen by what `path` is; adds it to the recent files. A second run folder
  // while one is shown is compared.
  Status Open(const QString& path);
  Status OpenRunDir(const QString& dir);
  Status OpenSweep(const QString& db);
  Status OpenTune(const QString& db);
  // Shows a database row's run (its summary; its resolved scenario in the editor, named in `base_dir`, where its
  // relative paths resolve, ready to run again for its timeline): what a click in the Sweep or Tune tab does.
  void OpenRecord(const RunRecord& r, const QString& base_dir);
  // Replays a run folder (`mmtwin replay`) into the Replay tab and shows it.
  Status OpenReplay(const QString& dir);
  Status SaveTo(const QString& path);

  // Runs the editor's scenario: analytic in-process, or engine "simgrid" as a child process. False when the
  // scenario does not validate (the editor shows why) or a run is in progress.
  bool Run(const QString& engine = "analytic");
  void CancelRun();
  bool running() const;
  // Current run becomes A of the comparison and stays A. Without a pin, each finished run makes the run before
  // it A (edit, run, compare with the previous run).
  void Pin();
  // Shows a run (the window keeps it) in the Summary, Timeline and Memory tabs (and as B of the comparison).
  void ShowRun(RunData run);

  const RunData* current() const { return current_.get(); }
  const RunData* pinned() const { return pinned_.get(); }
  QString last_error() const { return last_error_; }
  QString status_text() const;  // what the status bar says
  static QString RunsDir();

  // Widgets, for tests and screenshots.
  QTabWidget* tabs() const { return tabs_; }
  ScenarioEditor* editor() const { return editor_; }
  SummaryPanel* summary() const { return summary_; }
  StageTable* stage_table() const { return stages_; }
  GanttView* gantt() const { return gantt_; }
  MemoryView* memory() const { return memory_; }
  CompareView* compare() const { return compare_; }
  SweepView* sweep() const { return sweep_; }
  HistoryView* history() const { return history_; }
  ReplayView* replay() const { return replay_; }
  TuneView* tune() const { return tune_; }
  AnalyticRunner* runner() const { return runner_; }

  // Renders every view to DIR/{editor,yaml,summary,timeline,memory,compare,sweep,history,replay,tune}.png at width x height (the
  // window as shown, offscreen with QT_QPA_PLATFORM=offscreen). The runs shown are whatever the window holds.
  Status SaveScreenshots(const QString& dir, int width = 1400, int height = 900);

 signals:
  void runFinished(bool ok, const QString& error);

 private:
  void BuildActions();
  // The end of a run of either runner: shows it, or says why not (a cancellation as a cancellation).
  void RunDone(bool ok, const QString& error, bool cancelled, RunData run);
  void AddRecent(const QString& path);
  void UpdateRecentMenu();
  void UpdateTitle();
  void SetStatus(const QString& text);
  // History entry i as a run: its folder reloaded (with its timeline), else the summary the history kept.
  RunData HistoryRun(int i) const;
  // A = history entry a, B = entry b (shown), on the Compare tab.
  void CompareHistory(int a, int b);

  QTabWidget* tabs_;
  ScenarioEditor* editor_;
  SummaryPanel* summary_;
  StageTable* stages_;
  GanttView* gantt_;
  MemoryView* memory_;
  CompareView* compare_;
  SweepView* sweep_;
  HistoryView* history_;
  ReplayView* replay_;
  TuneView* tune_;
  AnalyticRunner* runner_;
  ProcessRunner* process_;
  QProgressBar* progress_;
  bool child_fraction_ = false;  // the SimGrid child has reported a fraction this run
  QLabel* status_;
  QMenu* recent_menu_ = nullptr;
  QAction *run_action_ = nullptr, *simgrid_action_ = nullptr, *cancel_action_ = nullptr;
  std::unique_ptr<RunData> current_, pinned_;
  bool user_pinned_ = false;  // Pin() chose A; otherwise every finished run makes the previous one A
  QString last_error_;
};

}  // namespace mmtwin::gui

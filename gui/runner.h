// SPDX-License-Identifier: Apache-2.0
// Running a scenario from the GUI without freezing it. Both runners write an ordinary run folder (what
// `mmtwin simulate -o` writes) and hand back the typed records.
//
// AnalyticRunner: Simulate() (driver/simulate.h) in this process on a worker thread; progress and the end
// arrive as queued signals on the thread that owns the runner (the GUI thread), and Cancel() sets the flag
// Simulate polls, so a cancelled run ends with finished(false, "cancelled", true) soon after, whatever it was doing
// (planning, BMP's candidate timing, the replay): the run's error kind says so (core/util/status.h), never the
// message.
// ProcessRunner: a child `mmtwin simulate SCENARIO --engine ENGINE -o DIR` (QProcess), used for the SimGrid
// engine so that a library that may abort stays outside the GUI; Cancel() terminates the child, which ends the same
// way (a child the user did not cancel but that was interrupted, exit 130 / 143, counts as cancelled too).
//
//   AnalyticRunner runner;
//   connect(&runner, &AnalyticRunner::finished,
//           [&](bool ok, QString error, bool cancelled) { if (ok) Show(runner.TakeResult()); });
//   runner.Start(editor.scenario(), "runs/gui-default-1");
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QProcess>
#include <QString>

#include <atomic>
#include <memory>
#include <thread>

#include "core/scenario/scenario.h"
#include "run_data.h"

namespace mmtwin::gui {

class AnalyticRunner : public QObject {
  Q_OBJECT
 public:
  explicit AnalyticRunner(QObject* parent = nullptr);
  ~AnalyticRunner() override;  // cancels a run in progress and waits for its thread

  // Starts Simulate(scenario) (the analytic engine whatever scenario.engine says); the result is written to
  // out_dir as a run folder when out_dir is not empty. False (and nothing started) while a run is in progress.
  bool Start(const Scenario& scenario, const QString& out_dir);
  void Cancel();
  bool running() const { return running_; }
  // The finished run (after finished(true, ...)); empty RunData otherwise. Moves it out.
  RunData TakeResult();

 signals:
  void progress(double fraction);                // 0..1
  // ok: the run finished and was written; else `error` is the core's message, or "cancelled" with cancelled true.
  void finished(bool ok, const QString& error, bool cancelled);

 private:
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  bool running_ = false;
  std::unique_ptr<RunData> result_;
};

class ProcessRunner : public QObject {
  Q_OBJECT
 public:
  explicit ProcessRunner(QObject* parent = nullptr);
  ~ProcessRunner() override;

  // The mmtwin CLI the GUI runs: $MMTWIN_CLI, else the QSettings key "mmtwin_path", else `mmtwin` next to this
  // executable, else ../sim/mmtwin from it (the build tree), else `mmtwin` on PATH; "" when none is found.
  static QString FindCli();

  // Writes the resolved scenario to out_dir + ".scenario.yaml" and runs `cli simulate that --engine engine -o
  // out_dir --progress` (its "progress F" stderr lines become fraction()). False when a run is in progress or the file cannot be written (error() says why).
  bool Start(const QString& cli, const Scenario& scenario, const QString& engine, const QString& out_dir);
  void Cancel();
  bool running() const { return process_ != nullptr; }
  RunData TakeResult();
  QString error() const { return error_; }

 signals:
  void progress(double elapsed_s);  // seconds since the child started (every 250 ms)
  void fraction(double done);       // 0..1, as the child reports it (`mmtwin simulate --progress`)
  void finished(bool ok, const QString& error, bool cancelled);  // as AnalyticRunner::finished

 private:
  void Done(int exit_code, QProcess::ExitStatus status);
  QProcess* process_ = nullptr;
  QString out_dir_, error_;
  QByteArray stderr_;   // the child's stderr less its progress lines (the error message when it fails)
  QByteArray partial_;  // an incomplete stderr line
  QElapsedTimer clock_;
  std::unique_ptr<RunData> result_;
  bool cancelled_ = false;
};

}  // namespace mmtwin::gui

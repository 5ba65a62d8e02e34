// SPDX-License-Identifier: Apache-2.0
#include "main_window.h"

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QToolBar>
#include <QVBoxLayout>

#include <fstream>
#include <sstream>

#include "core/records/run_folder.h"

namespace mmtwin::gui {
namespace {

QSettings Settings() { return QSettings("mmtwin", "mmtwin-gui"); }

bool ReadFile(const QString& path, std::string& out) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

enum Tab {
  kScenarioTab,
  kSummaryTab,
  kTimelineTab,
  kMemoryTab,
  kCompareTab,
  kSweepTab,
  kHistoryTab,
  kReplayTab,
  kTuneTab
};

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  tabs_ = new QTabWidget(this);
  editor_ = new ScenarioEditor(this);
  tabs_->addTab(editor_, "Scenario");
  auto* summary_page = new QSplitter(Qt::Vertical, this);
  summary_ = new SummaryPanel(summary_page);
  stages_ = new StageTable(summary_page);
  summary_page->addWidget(summary_);
  summary_page->addWidget(stages_);
  summary_page->setStretchFactor(1, 1);
  tabs_->addTab(summary_page, "Summary");
  gantt_ = new GanttView(this);
  tabs_->addTab(gantt_, "Timeline");
  memory_ = new MemoryView(this);
  tabs_->addTab(memory_, "Memory");
  compare_ = new CompareView(this);
  tabs_->addTab(compare_, "Compare");
  sweep_ = new SweepView(this);
  tabs_->addTab(sweep_, "Sweep");
  history_ = new HistoryView(this);
  tabs_->addTab(history_, "History");
  replay_ = new ReplayView(this);
  tabs_->addTab(replay_, "Replay");
  tune_ = new TuneView(this);
  tabs_->addTab(tune_, "Tune");
  setCentralWidget(tabs_);

  runner_ = new AnalyticRunner(this);
  process_ = new ProcessRunner(this);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(240);
  progress_->setVisible(false);
  status_ = new QLabel(this);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  BuildActions();

  connect(runner_, &AnalyticRunner::progress, this, [this](double f) {
    progress_->setRange(0, 1000);
    progress_->setValue(static_cast<int>(f * 1000));
  });
  connect(runner_, &AnalyticRunner::finished, this, [this](bool ok, const QString& error, bool cancelled) {
    RunDone(ok, error, cancelled, runner_->TakeResult());
  });
  connect(process_, &ProcessRunner::progress, this, [this](double s) {
    if (!child_fraction_) progress_->setRange(0, 0);  // busy until the child reports a fraction
    SetStatus(QString("SimGrid run in a child mmtwin process: %1 s").arg(s, 0, 'f', 1));
  });
  connect(process_, &ProcessRunner::fraction, this, [this](double f) {
    child_fraction_ = true;
    progress_->setRange(0, 1000);
    progress_->setValue(static_cast<int>(f * 1000));
  });
  connect(process_, &ProcessRunner::finished, this, [this](bool ok, const QString& error, bool cancelled) {
    RunDone(ok, error, cancelled, process_->TakeResult());
  });
  connect(history_, &HistoryView::showRequested, this, [this](int i) {
    ShowRun(HistoryRun(i));
    tabs_->setCurrentIndex(kSummaryTab);
  });
  connect(history_, &HistoryView::compareRequested, this, [this](int a, int b) { CompareHistory(a, b); });
  connect(editor_, &ScenarioEditor::validityChanged, this, [this](bool) { UpdateTitle(); });
  connect(editor_, &ScenarioEditor::modifiedChanged, this, [this](bool) { UpdateTitle(); });
  connect(sweep_, &SweepView::runOpened, this, [this](int i) {
    const RunRecord& r = sweep_->runs().at(i);
    OpenRecord(r, QString::fromStdString(sweep_->BaseDirOf(r.sweep)));
  });
  connect(tune_, &TuneView::runOpened, this, &MainWindow::OpenRecord);
  resize(1400, 900);
  UpdateTitle();
  SetStatus("Open a scenario, a run folder or a sweep database; F5 runs the scenario.");
}

void MainWindow::BuildActions() {
  QMenu* file = menuBar()->addMenu("&File");
  QToolBar* bar = addToolBar("main");
  bar->setMovable(false);
  auto* open = file->addAction("&Open...", QKeySequence::Open, [this] {
    const QString summary = RunFileName(RunFile::kSummary);
    const QString path = QFileDialog::getOpenFileName(
        this, "Open a scenario, a run's " + summary + " or a sweep database", QString(),
        "Scenarios and runs (*.yaml *.yml " + summary + " *.sqlite *.db);;All files (*)");
    if (path.isEmpty()) return;
    const QString target = QString::fromStdString(RunFolderOf(path.toStdString()));
    Status st = Open(target);
    if (!st.ok()) QMessageBox::warning(this, "mmtwin", QString::fromStdString(st.error().message()));
  });
  recent_menu_ = file->addMenu("Open &recent");
  auto* save = file->addAction("&Save", QKeySequence::Save, [this] {
    if (editor_->path().isEmpty()) {
      const QString p = QFileDialog::getSaveFileName(this, "Save scenario", QString(), "Scenarios (*.yaml)");
      if (p.isEmpty()) return;
      Status st = SaveTo(p);
      if (!st.ok()) QMessageBox::warning(this, "mmtwin", QString::fromStdString(st.error().message()));
      return;
    }
    Status st = SaveTo(editor_->path());
    if (!st.ok()) QMessageBox::warning(this, "mmtwin", QString::fromStdString(st.error().message()));
  });
  file->addAction("Save &as...", QKeySequence::SaveAs, [this] {
    const QString p =
        QFileDialog::getSaveFileName(this, "Save scenario as", editor_->path(), "Scenarios (*.yaml)");
    if (p.isEmpty()) return;
    Status st = SaveTo(p);
    if (!st.ok()) QMessageBox::warning(this, "mmtwin", QString::fromStdString(st.error().message()));
  });
  file->addSeparator();
  file->addAction("&Replay a run folder...", [this] {
    const QString dir =
        QFileDialog::getExistingDirectory(this, "Replay a run folder (scenario.yaml and ops.csv)");
    if (dir.isEmpty()) return;
    const Status st = OpenReplay(dir);
    if (!st.ok()) QMessageBox::warning(this, "mmtwin", QString::fromStdString(st.error().message()));
  });
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  bar->addAction(open);
  bar->addAction(save);
  bar->addSeparator();
  QMenu* run = menuBar()->addMenu("&Run");
  run_action_ = run->addAction("&Run (analytic)", QKeySequence(Qt::Key_F5), [this] { Run("analytic"); });
  simgrid_action_ = run->addAction("Run with &SimGrid (child process)", [this] { Run("simgrid"); });
  cancel_action_ = run->addAction("&Cancel", QKeySequence(Qt::Key_Escape), [this] { CancelRun(); });
  cancel_action_->setEnabled(false);
  auto* pin = run->addAction("&Pin as A (compare)", [this] { Pin(); });
  auto* compare_dir = run->addAction("Compare with a run &folder...", [this] {
    const QString d = QFileDialog::getExistingDirectory(this, "Run folder to compare with (as A)");
    if (d.isEmpty()) return;
    Result<RunData> r = LoadRunDir(d.toStdString());
    if (!r.ok()) {
      QMessageBox::warning(this, "mmtwin", QString::fromStdString(r.error().message()));
      return;
    }
    pinned_ = std::make_unique<RunData>(std::move(*r));
    compare_->SetRuns(pinned_.get(), current_.get());
    tabs_->setCurrentIndex(kCompareTab);
  });
  bar->addAction(run_action_);
  bar->addAction(simgrid_action_);
  bar->addAction(cancel_action_);
  bar->addSeparator();
  bar->addAction(pin);
  bar->addAction(compare_dir);
  UpdateRecentMenu();
}

QString MainWindow::RunsDir() {
  const QString env = qEnvironmentVariable("MMTWIN_GUI_RUNS");
  if (!env.isEmpty()) return env;
  const QString configured = Settings().value("runs_dir").toString();
  if (!configured.isEmpty()) return configured;
  return QDir::current().filePath("runs/gui");
}

Status MainWindow::Open(const QString& path) {
  const QFileInfo info(path);
  if (!info.exists()) return Error::Io(path.toStdString() + ": no such file or folder");
  Status st;
  const bool tune_dir = info.isDir() && QFileInfo::exists(QDir(path).filePath("ranked.csv")) &&
                        QFileInfo::exists(QDir(path).filePath("pareto.csv"));
  if (tune_dir) {  // `mmtwin tune`'s output folder: its database is DIR.sqlite beside it (the default)
    const QString db = QDir::cleanPath(info.absoluteFilePath()) + ".sqlite";
    st = QFileInfo::exists(db)
             ? OpenTune(db)
             : Status(Error::Io(db.toStdString() +
                                ": no such file (a tune folder's database, unless --db named "
                                "another: open that one)"));
  } else if (info.isDir()) {
    st = OpenRunDir(path);
  } else if (path.endsWith(".sqlite") || path.endsWith(".db")) {
    // A tune search's database opens in the Tune tab, any other in the Sweep tab.
    st = OpenTune(path);
    if (!st.ok()) st = OpenSweep(path);
  } else {
    std::string text;
    if (!ReadFile(path, text)) return Error::Io(path.toStdString() + ": cannot read");
    editor_->SetText(QString::fromStdString(text), path);
    tabs_->setCurrentIndex(kScenarioTab);
  }
  if (st.ok()) AddRecent(info.absoluteFilePath());
  UpdateTitle();
  return st;
}

Status MainWindow::OpenRunDir(const QString& dir) {
  MMTWIN_ASSIGN_OR_RETURN(RunData run, LoadRunDir(dir.toStdString()));
  if (!run.scenario_yaml.empty())
    editor_->SetText(QString::fromStdString(run.scenario_yaml),
                     QString::fromStdString(RunFilePath(run.dir, RunFile::kScenario)));
  // A second run folder: the one shown before becomes A of the comparison.
  if (current_) pinned_ = std::move(current_);
  ShowRun(std::move(run));
  tabs_->setCurrentIndex(pinned_ ? kCompareTab : kSummaryTab);
  return Status();
}

Status MainWindow::OpenReplay(const QString& dir) {
  MMTWIN_RETURN_IF_ERROR(replay_->Open(dir.toStdString()));
  tabs_->setCurrentIndex(kReplayTab);
  SetStatus("Replayed " + dir);
  return Status();
}

void MainWindow::OpenRecord(const RunRecord& r, const QString& base) {
  if (!r.summary) {
    SetStatus(QString::fromStdString("run " + std::to_string(r.run_index) + " failed: " + r.error));
    return;
  }
  RunData run;
  run.summary = *r.summary;
  run.scenario_yaml = r.scenario_yaml;
  // The resolved scenario goes to the editor, named in the base folder (where its relative paths resolve), so
  // "run" replays it with its timeline.
  editor_->SetText(
      QString::fromStdString(r.scenario_yaml),
      QDir(base).filePath(QString("%1-run-%2.yaml").arg(QString::fromStdString(r.sweep)).arg(r.run_index)));
  ShowRun(std::move(run));
  tabs_->setCurrentIndex(kSummaryTab);
}

Status MainWindow::OpenTune(const QString& db) {
  MMTWIN_RETURN_IF_ERROR(tune_->Open(db.toStdString()));
  tabs_->setCurrentIndex(kTuneTab);
  return Status();
}

Status MainWindow::OpenSweep(const QString& db) {
  MMTWIN_RETURN_IF_ERROR(sweep_->Open(db.toStdString()));
  tabs_->setCurrentIndex(kSweepTab);
  return Status();
}

Status MainWindow::SaveTo(const QString& path) {
  {
    std::ofstream f(path.toStdString(), std::ios::binary | std::ios::trunc);
    f << editor_->text().toStdString();
    if (!f) return Error::Io(path.toStdString() + ": cannot write");
  }
  editor_->SetPath(path);
  editor_->SetModified(false);
  AddRecent(QFileInfo(path).absoluteFilePath());
  UpdateTitle();
  return Status();
}

bool MainWindow::running() const { return runner_->running() || process_->running(); }

bool MainWindow::Run(const QString& engine) {
  if (running()) return false;
  editor_->CommitPendingEdits();  // a number typed without Enter is run, not reset (issue 33, item 3)
  editor_->Reparse();
  if (!editor_->valid()) {
    last_error_ = editor_->error();
    SetStatus("Not run: " + last_error_);
    tabs_->setCurrentIndex(kScenarioTab);
    return false;
  }
  const Scenario& s = editor_->scenario();
  const QString dir =
      QDir(RunsDir()).filePath(QString::fromStdString(s.name.empty() ? "scenario" : s.name) + "-" +
                               QDateTime::currentDateTime().toString("yyyyMMdd-hhmmss-zzz"));
  QDir().mkpath(RunsDir());
  bool started = false;
  if (engine == "analytic") {
    started = runner_->Start(s, dir);
  } else {
    started = process_->Start(ProcessRunner::FindCli(), s, engine, dir);
    if (!started) last_error_ = process_->error();
  }
  if (!started) {
    SetStatus("Not run: " + last_error_);
    return false;
  }
  child_fraction_ = false;
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setVisible(true);
  run_action_->setEnabled(false);
  simgrid_action_->setEnabled(false);
  cancel_action_->setEnabled(true);
  SetStatus("Running " + engine + " ...");
  return true;
}

void MainWindow::CancelRun() {
  runner_->Cancel();
  process_->Cancel();
}

void MainWindow::RunDone(bool ok, const QString& error, bool cancelled, RunData run) {
  progress_->setVisible(false);
  run_action_->setEnabled(true);
  simgrid_action_->setEnabled(true);
  cancel_action_->setEnabled(false);
  if (cancelled) {  // not an error: the shown run and the editor's error marker stay as they were
    SetStatus("Run cancelled; nothing was written");
    emit runFinished(false, "cancelled");
    return;
  }
  if (!ok) {
    last_error_ = error;
    SetStatus("Run failed: " + error);
    emit runFinished(false, error);
    return;
  }
  last_error_.clear();
  const QString dir = QString::fromStdString(run.dir);
  // The what-if loop (issue 33, item 3): edit, run, and the Compare tab holds the previous run as A and this one
  // as B, unless a run was pinned (Pin as A), which stays A until the next pin.
  const bool previous = !user_pinned_ && current_ != nullptr;
  if (previous) pinned_ = std::move(current_);
  history_->Add(run);
  ShowRun(std::move(run));
  SetStatus("Run written to " + dir +
            (previous       ? QString("; Compare: A = the previous run, B = this one")
             : user_pinned_ ? QString("; Compare: A = the pinned run, B = this one")
                            : QString()));
  emit runFinished(true, QString());
}

void MainWindow::ShowRun(RunData run) {
  current_ = std::make_unique<RunData>(std::move(run));
  summary_->SetRun(current_->summary);
  stages_->SetStages(current_->summary.stages);
  gantt_->SetRun(current_.get());
  gantt_->SetTitle(QString::fromStdString(
      "Timeline of iteration " +
      (current_->ops.empty() ? std::string("-") : std::to_string(current_->ops.front().iteration)) + " (" +
      RecordSourceName(current_->summary.source) + ", " + current_->summary.engine + "), " +
      current_->summary.scenario));
  memory_->SetRun(current_.get());
  compare_->SetRuns(pinned_.get(), current_.get());
  UpdateTitle();
}

RunData MainWindow::HistoryRun(int i) const {
  const HistoryEntry& e = history_->entry(i);
  Result<RunData> r = LoadRunDir(e.dir);
  if (r.ok()) return std::move(*r);
  RunData run;  // the folder is gone: the figures the history kept, without a timeline
  run.summary = e.summary;
  run.scenario_yaml = e.scenario_yaml;
  run.dir = e.dir;
  return run;
}

void MainWindow::CompareHistory(int a, int b) {
  pinned_ = std::make_unique<RunData>(HistoryRun(a));
  ShowRun(HistoryRun(b));
  tabs_->setCurrentIndex(kCompareTab);
  SetStatus(QString("Compare: A = run %1, B = run %2 of the history")
                .arg(history_->entry(a).number)
                .arg(history_->entry(b).number));
}

void MainWindow::Pin() {
  if (!current_) return;
  pinned_ = std::make_unique<RunData>(*current_);
  user_pinned_ = true;
  compare_->SetRuns(pinned_.get(), nullptr);
  SetStatus("Pinned as A: change knobs and run again to compare (it stays A until the next pin).");
}

void MainWindow::AddRecent(const QString& path) {
  QSettings s = Settings();
  QStringList recent = s.value("recent").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > 10) recent.removeLast();
  s.setValue("recent", recent);
  UpdateRecentMenu();
}

void MainWindow::UpdateRecentMenu() {
  if (recent_menu_ == nullptr) return;
  recent_menu_->clear();
  for (const QString& p : Settings().value("recent").toStringList())
    recent_menu_->addAction(p, [this, p] {
      Status st = Open(p);
      if (!st.ok()) QMessageBox::warning(this, "mmtwin", QString::fromStdString(st.error().message()));
    });
  recent_menu_->setEnabled(!recent_menu_->isEmpty());
}

void MainWindow::UpdateTitle() {
  const QString file =
      editor_->path().isEmpty() ? QString("untitled.yaml") : QFileInfo(editor_->path()).fileName();
  setWindowTitle(QString("mmtwin what-if explorer - %1%2%3")
                     .arg(file)
                     .arg(editor_->modified() ? " (modified)" : "")
                     .arg(editor_->valid() ? "" : " (invalid)"));
}

void MainWindow::SetStatus(const QString& text) { status_->setText(text); }

QString MainWindow::status_text() const { return status_->text(); }

Status MainWindow::SaveScreenshots(const QString& dir, int width, int height) {
  if (!QDir().mkpath(dir)) return Error::Io(dir.toStdString() + ": cannot create");
  resize(width, height);
  show();
  const std::vector<std::pair<int, QString>> shots = {{kScenarioTab, "editor"}, {kScenarioTab, "yaml"},
                                                      {kSummaryTab, "summary"}, {kTimelineTab, "timeline"},
                                                      {kMemoryTab, "memory"},   {kCompareTab, "compare"},
                                                      {kSweepTab, "sweep"},     {kHistoryTab, "history"},
                                                      {kReplayTab, "replay"},   {kTuneTab, "tune"}};
  for (const auto& [tab, name] : shots) {
    tabs_->setCurrentIndex(tab);
    editor_->tabs()->setCurrentIndex(name == "yaml" ? 1 : 0);
    QApplication::processEvents();
    const QString file = QDir(dir).filePath(name + ".png");
    if (!grab().save(file)) return Error::Io(file.toStdString() + ": cannot write");
  }
  editor_->tabs()->setCurrentIndex(0);
  return Status();
}

}  // namespace mmtwin::gui

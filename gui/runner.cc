// SPDX-License-Identifier: Apache-2.0
#include "runner.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <QTimer>

#include <fstream>

#include "driver/simulate.h"

namespace mmtwin::gui {

// ---- AnalyticRunner ----

AnalyticRunner::AnalyticRunner(QObject* parent) : QObject(parent) {}

AnalyticRunner::~AnalyticRunner() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

bool AnalyticRunner::Start(const Scenario& scenario, const QString& out_dir) {
  if (running_) return false;
  if (thread_.joinable()) thread_.join();  // the previous run's thread has finished (its end was delivered)
  running_ = true;
  cancel_ = false;
  result_.reset();
  Scenario s = scenario;
  s.engine = "analytic";
  const std::string dir = out_dir.toStdString();
  thread_ = std::thread([this, s = std::move(s), dir] {
    SimulateOptions o;
    o.cancel = &cancel_;
    int last_permille = -1;
    o.progress = [this, &last_permille](double f) {
      const int permille = static_cast<int>(f * 1000);
      if (permille == last_permille) return;  // at most 1001 events per run
      last_permille = permille;
      QMetaObject::invokeMethod(
          this, [this, f] { emit progress(f); }, Qt::QueuedConnection);
    };
    auto out = std::make_shared<Result<RunData>>(Error("not run"));
    Result<SimulationResult> r = Simulate(s, o);
    if (!r.ok()) {
      *out = Result<RunData>(r.error());
    } else {
      RunData run = RunDataOf(std::move(*r));
      Status written;
      if (!dir.empty()) {
        written = WriteRunDir(dir, run);
        run.dir = dir;
      }
      if (written.ok())
        *out = std::move(run);
      else
        *out = Result<RunData>(written.error());
    }
    // Delivered on the runner's thread; dropped if the runner is destroyed first.
    QMetaObject::invokeMethod(
        this,
        [this, out] {
          if (thread_.joinable()) thread_.join();
          running_ = false;
          if (out->ok()) {
            result_ = std::make_unique<RunData>(std::move(**out));
            emit finished(true, QString(), false);
          } else if (out->error().cancelled()) {
            emit finished(false, "cancelled", true);
          } else {
            emit finished(false, QString::fromStdString(out->error().message()), false);
          }
        },
        Qt::QueuedConnection);
  });
  return true;
}

void AnalyticRunner::Cancel() { cancel_ = true; }

RunData AnalyticRunner::TakeResult() {
  if (!result_) return {};
  RunData r = std::move(*result_);
  result_.reset();
  return r;
}

// ---- ProcessRunner ----

ProcessRunner::ProcessRunner(QObject* parent) : QObject(parent) {}

ProcessRunner::~ProcessRunner() {
  if (process_ != nullptr) {
    process_->disconnect(this);
    process_->kill();
    process_->waitForFinished(3000);
  }
}

QString ProcessRunner::FindCli() {
  const QString env = qEnvironmentVariable("MMTWIN_CLI");
  if (!env.isEmpty() && QFileInfo(env).isExecutable()) return env;
  const QString configured = QSettings("mmtwin", "mmtwin-gui").value("mmtwin_path").toString();
  if (!configured.isEmpty() && QFileInfo(configured).isExecutable()) return configured;
  const QString here = QCoreApplication::applicationDirPath();
  for (const QString& candidate : {here + "/mmtwin", here + "/../sim/mmtwin"})
    if (QFileInfo(candidate).isExecutable()) return QFileInfo(candidate).canonicalFilePath();
  return QStandardPaths::findExecutable("mmtwin");
}

bool ProcessRunner::Start(const QString& cli, const Scenario& scenario, const QString& engine,
                          const QString& out_dir) {
  if (process_ != nullptr) return false;
  error_.clear();
  cancelled_ = false;
  result_.reset();
  if (cli.isEmpty()) {
    error_ = "the mmtwin command was not found (set MMTWIN_CLI or the mmtwin_path setting)";
    return false;
  }
  out_dir_ = out_dir;
  const QString input = out_dir + ".scenario.yaml";
  QDir().mkpath(QFileInfo(input).absolutePath());
  {
    std::ofstream f(input.toStdString(), std::ios::binary | std::ios::trunc);
    f << FormatScenario(scenario);
    if (!f) {
      error_ = "cannot write " + input;
      return false;
    }
  }
  process_ = new QProcess(this);
  process_->setProcessChannelMode(QProcess::SeparateChannels);
  connect(process_, &QProcess::finished, this, &ProcessRunner::Done);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) Done(-1, QProcess::CrashExit);
  });
  auto* ticker = new QTimer(process_);
  connect(ticker, &QTimer::timeout, this, [this] { emit progress(clock_.elapsed() / 1e3); });
  ticker->start(250);
  clock_.start();
  stderr_.clear();
  partial_.clear();
  connect(process_, &QProcess::readyReadStandardError, this, [this] {
    if (process_ == nullptr) return;
    partial_ += process_->readAllStandardError();
    for (qsizetype nl; (nl = partial_.indexOf('\n')) >= 0;) {
      const QByteArray line = partial_.left(nl);
      partial_.remove(0, nl + 1);
      bool ok = false;
      const double f = line.startsWith("progress ") ? line.mid(9).toDouble(&ok) : 0.0;
      if (ok)
        emit fraction(f);
      else
        stderr_ += line + '\n';
    }
  });
  process_->start(cli, {"simulate", input, "--engine", engine, "-o", out_dir, "--progress"});
  return true;
}

void ProcessRunner::Cancel() {
  if (process_ == nullptr) return;
  cancelled_ = true;
  process_->terminate();  // SIGTERM: the CLI leaves the run folder as it was (exit 143)
}

void ProcessRunner::Done(int exit_code, QProcess::ExitStatus status) {
  if (process_ == nullptr) return;
  QProcess* p = process_;
  process_ = nullptr;
  const QString err = QString::fromLocal8Bit(stderr_ + partial_ + p->readAllStandardError()).trimmed();
  const bool started = p->error() != QProcess::FailedToStart;
  p->deleteLater();
  // Exit 128 + SIGINT / SIGTERM: the child was interrupted and left its run folder as it was (a cancellation,
  // whoever sent the signal).
  const bool interrupted = status == QProcess::NormalExit && (exit_code == 130 || exit_code == 143);
  if (cancelled_ || interrupted) {
    emit finished(false, "cancelled", true);
    return;
  }
  if (!started) {
    emit finished(false, "cannot start " + p->program(), false);
    return;
  }
  // Exit 0 ok, 1 OOM (the run folder is still written), else an error.
  if (status != QProcess::NormalExit || (exit_code != 0 && exit_code != 1)) {
    emit finished(false, err.isEmpty() ? QString("mmtwin simulate exited with %1").arg(exit_code) : err, false);
    return;
  }
  Result<RunData> run = LoadRunDir(out_dir_.toStdString());
  if (!run.ok()) {
    emit finished(false, QString::fromStdString(run.error().message()), false);
    return;
  }
  result_ = std::make_unique<RunData>(std::move(*run));
  emit finished(true, QString(), false);
}

RunData ProcessRunner::TakeResult() {
  if (!result_) return {};
  RunData r = std::move(*result_);
  result_.reset();
  return r;
}

}  // namespace mmtwin::gui

// SPDX-License-Identifier: Apache-2.0
// mmtwin-gui [SCENARIO | RUNDIR | SWEEP.sqlite]...: the what-if explorer (gui/README.md). Each argument is opened
// in turn (a second run folder is compared with the first).
//
// mmtwin-gui --replay RUNDIR: the run folder's replay in the Replay tab (`mmtwin replay`; File > Replay a run folder).
// mmtwin-gui --screenshot DIR [--what-if KEY=VALUE]... [INPUT]...: renders every view to DIR/*.png and exits (use
// QT_QPA_PLATFORM=offscreen without a display). When a scenario is open it is run first; with --what-if that run
// is pinned, the dotted scenario keys are changed (e.g. policies.partition=uniform) and it runs again, so the
// Compare view shows both. Exit 0, or 2 with a message on stderr.
#include <QApplication>
#include <QEventLoop>

#include <cstdio>
#include <string>

#include "core/util/version.h"
#include "main_window.h"

namespace {

int Fail(const QString& message) {
  std::fprintf(stderr, "mmtwin-gui: %s\n", message.toLocal8Bit().constData());
  return 2;
}

// Runs the window's scenario and waits for it; false (with the error in the window) when it fails.
bool RunAndWait(mmtwin::gui::MainWindow& w) {
  QEventLoop loop;
  bool ok = false;
  QObject::connect(&w, &mmtwin::gui::MainWindow::runFinished, &loop, [&](bool success, const QString&) {
    ok = success;
    loop.quit();
  });
  if (!w.Run("analytic")) return false;
  loop.exec();
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  // Before QApplication, which needs a display.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--version") {
      std::printf("%s\n", mmtwin::VersionLine("mmtwin-gui").c_str());
      return 0;
    }
  QApplication app(argc, argv);
  QApplication::setApplicationName("mmtwin-gui");
  QApplication::setOrganizationName("mmtwin");
  QString screenshot_dir;
  QStringList inputs, what_ifs, replays;
  const QStringList args = QApplication::arguments();
  for (int i = 1; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::printf(
          "usage: mmtwin-gui [SCENARIO.yaml | RUNDIR | SWEEP.sqlite]...\n"
          "       mmtwin-gui --screenshot DIR [--what-if KEY=VALUE]... [--replay RUNDIR] [INPUT]...\n"
          "       mmtwin-gui --version\n");
      return 0;
    }
    if (args[i] == "--screenshot" || args[i] == "--what-if" || args[i] == "--replay") {
      if (i + 1 >= args.size()) return Fail(args[i] + " needs a value");
      if (args[i] == "--screenshot")
        screenshot_dir = args[i + 1];
      else if (args[i] == "--replay")
        replays << args[i + 1];
      else
        what_ifs << args[i + 1];
      ++i;
      continue;
    }
    inputs << args[i];
  }
  mmtwin::gui::MainWindow w;
  for (const QString& dir : replays) {
    mmtwin::Status st = w.OpenReplay(dir);
    if (!st.ok()) return Fail(QString::fromStdString(st.error().message()));
  }
  for (const QString& in : inputs) {
    mmtwin::Status st = w.Open(in);
    if (!st.ok()) return Fail(QString::fromStdString(st.error().message()));
  }
  if (screenshot_dir.isEmpty()) {
    w.show();
    return QApplication::exec();
  }
  // Screenshots: run the open scenario (if any and no run is shown), then the what-if.
  if (w.editor()->valid() && w.current() == nullptr) {
    if (!RunAndWait(w)) return Fail("run failed: " + w.last_error());
    if (!what_ifs.isEmpty()) {
      std::vector<mmtwin::ScenarioOverride> overrides;
      for (const QString& what_if : what_ifs) {
        const int eq = what_if.indexOf('=');
        if (eq <= 0) return Fail("--what-if: expected KEY=VALUE, got " + what_if);
        overrides.push_back({what_if.left(eq).toStdString(), what_if.mid(eq + 1).toStdString()});
      }
      w.Pin();
      auto edited = mmtwin::OverrideScenarioYaml(w.editor()->text().toStdString(), overrides);
      if (!edited.ok()) return Fail(QString::fromStdString(edited.error().message()));
      w.editor()->SetText(QString::fromStdString(*edited), w.editor()->path());
      if (!w.editor()->valid()) return Fail("--what-if: " + w.editor()->error());
      if (!RunAndWait(w)) return Fail("what-if run failed: " + w.last_error());
    }
  }
  mmtwin::Status st = w.SaveScreenshots(screenshot_dir);
  if (!st.ok()) return Fail(QString::fromStdString(st.error().message()));
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// The GUI's performance targets (issue 11), offscreen (QT_QPA_PLATFORM=offscreen is set when unset):
//   - default scenario, a knob change in the form to refreshed views (re-parse and validate, analytic run on the
//     worker thread, run folder written, summary / table / memory / timeline updated and the timeline painted)
//     <= 1 s;
//   - full-zoom-out repaint of a 100k-op timeline (level of detail) <= 16 ms;
// and the scenario editor's form edit and re-parse (no target).
#include <QApplication>
#include <QEventLoop>
#include <QImage>

#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "editor.h"
#include "synthetic_ops.h"
#include "main_window.h"
#include "run_data.h"
#include "views.h"

namespace mmtwin::gui {
namespace {

std::vector<OpRecord> SyntheticOps(int n) { return testing::SyntheticOps(n, 64); }

std::string ReadDefault() {
  std::ifstream in(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void BM_TimelineRepaintFullZoomOut(benchmark::State& state) {
  const std::vector<OpRecord> ops = SyntheticOps(static_cast<int>(state.range(0)));
  GanttView view;
  view.resize(1600, 1000);
  view.SetOps(&ops, ParallelConfig{.dp = 16, .tp = 1, .pp = 4});
  QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
  for (auto _ : state) {
    view.render(&image);
    benchmark::DoNotOptimize(view.last_items().size());
  }
  state.counters["items"] = static_cast<double>(view.last_items().size());
  state.counters["ops"] = static_cast<double>(view.model().drawn_ops());
}
BENCHMARK(BM_TimelineRepaintFullZoomOut)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_TimelineLayoutFullZoomOut(benchmark::State& state) {
  const std::vector<OpRecord> ops = SyntheticOps(static_cast<int>(state.range(0)));
  TimelineModel m(ops, ParallelConfig{.dp = 16, .tp = 1, .pp = 4});
  std::vector<TimelineItem> items;
  for (auto _ : state) {
    m.Layout(0, m.end_us(), 1500, items);
    benchmark::DoNotOptimize(items.data());
  }
  state.counters["items"] = static_cast<double>(items.size());
}
BENCHMARK(BM_TimelineLayoutFullZoomOut)->Arg(100000)->Unit(benchmark::kMillisecond);

// Knob change -> refreshed views: alternate dp 1 / 2 in the form of scenarios/default.yaml.
void BM_KnobChangeToRefreshedViews(benchmark::State& state) {
  qputenv("MMTWIN_GUI_RUNS", QByteArray("/tmp/mmtwin-gui-bench-runs"));
  MainWindow w;
  w.resize(1400, 900);
  if (!w.Open(QString(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml").ok()) {
    state.SkipWithError("cannot open scenarios/default.yaml");
    return;
  }
  w.tabs()->setCurrentWidget(w.gantt());
  int dp = 2;
  for (auto _ : state) {
    dp = dp == 2 ? 1 : 2;
    QEventLoop loop;
    bool ok = false;
    auto c = QObject::connect(&w, &MainWindow::runFinished, &loop, [&](bool success, const QString&) {
      ok = success;
      loop.quit();
    });
    w.editor()->form().dp->setValue(dp);  // the form edit: YAML re-emitted, parsed and validated
    if (!w.Run()) {
      state.SkipWithError("run refused");
      return;
    }
    loop.exec();
    QObject::disconnect(c);
    if (!ok) {
      state.SkipWithError("run failed");
      return;
    }
    benchmark::DoNotOptimize(w.grab());  // the visible view painted with the new run
  }
}
BENCHMARK(BM_KnobChangeToRefreshedViews)->Unit(benchmark::kMillisecond)->UseRealTime();

// The editor alone, offscreen, scenarios/default.yaml: a form edit (dp 2 <-> 1: the override, the in-place edit,
// the check, the form filled again) and a typed edit's re-parse (ScenarioEditor::Reparse). tests/bench/
// scenario_bench.cc times the check inside them before and after the round trip was removed, interleaved.
void BM_EditorFormEdit(benchmark::State& state) {
  ScenarioEditor ed;
  ed.SetText(QString::fromStdString(ReadDefault()), QString(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml");
  if (!ed.valid()) {
    state.SkipWithError(qPrintable(ed.error()));
    return;
  }
  int dp = 2;
  for (auto _ : state) {
    dp = dp == 2 ? 1 : 2;
    ed.form().dp->setValue(dp);
    benchmark::DoNotOptimize(ed.valid());
  }
  if (!ed.valid() || ed.scenario().parallel.dp != dp) state.SkipWithError("the form edit did not apply");
}
BENCHMARK(BM_EditorFormEdit)->Unit(benchmark::kMicrosecond);

void BM_EditorReparse(benchmark::State& state) {
  ScenarioEditor ed;
  ed.SetText(QString::fromStdString(ReadDefault()), QString(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml");
  for (auto _ : state) {
    ed.Reparse();
    benchmark::DoNotOptimize(ed.valid());
  }
  if (!ed.valid()) state.SkipWithError(qPrintable(ed.error()));
}
BENCHMARK(BM_EditorReparse)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mmtwin::gui

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

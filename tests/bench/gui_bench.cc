// The GUI's performance targets (issue 11), offscreen (QT_QPA_PLATFORM=offscreen is set when unset):
//   - default scenario, a knob change in the form to refreshed views (re-parse and validate, analytic run on the
//     worker thread, run folder written, summary / table / memory / timeline updated and the timeline painted)
//     <= 1 s;
//   - full-zoom-out repaint of a 100k-op timeline (level of detail) <= 16 ms.
#include <QApplication>
#include <QEventLoop>
#include <QImage>

#include <benchmark/benchmark.h>

#include "main_window.h"
#include "run_data.h"
#include "views.h"

namespace mmtwin::gui {
namespace {

// n ops on 64 devices (compute lane, every fifth op on the p2p lane), back to back with gaps.
std::vector<OpRecord> SyntheticOps(int n) {
  std::vector<OpRecord> ops;
  ops.reserve(n);
  std::vector<double> t(128, 0.0);
  for (int i = 0; i < n; ++i) {
    OpRecord op;
    op.device = i % 64;
    op.lane = (i / 64) % 5 == 4 ? Lane::kP2pForward : Lane::kCompute;
    op.kind = op.lane == Lane::kCompute ? ((i / 64) % 2 ? OpKind::kBackward : OpKind::kForward)
                                        : OpKind::kP2pSendActivation;
    op.micro_batch = i / 64;
    const int slot = op.device * 2 + (op.lane == Lane::kCompute ? 0 : 1);
    op.duration_us = 5 + (i * 7919 % 97);
    op.start_us = t[slot];
    t[slot] += op.duration_us + (i % 3 == 0 ? 11 : 0);
    ops.push_back(op);
  }
  return ops;
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

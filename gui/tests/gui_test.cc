// SPDX-License-Identifier: Apache-2.0
// The GUI's tests (QTest, offscreen, real widgets, real runs): issue 11's acceptance checks 1-3 and the views'
// oracles. Each test function is its own ctest entry (tests/CMakeLists.txt), run as `gui_test FUNCTION`.
// Oracles come from outside the widget under test: the `mmtwin` CLI's --json output for the same scenario, the
// run's trace.json, the sweep database read with raw SQL, brute-force counts over the ops.
#include <QApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QWheelEvent>

#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/balance/data_policy.h"
#include "core/plan/encoder.h"
#include "core/plan/mesh.h"
#include "core/plan/seqpar.h"
#include "core/records/headline_metrics.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "editor.h"
#include "main_window.h"
#include "run_data.h"
#include "runner.h"
#include "synthetic_ops.h"
#include "views.h"

using nlohmann::json;
using namespace mmtwin;
using namespace mmtwin::gui;

namespace {

const QString kSource = QStringLiteral(MMTWIN_SOURCE_DIR);
const QString kDefault = kSource + "/scenarios/default.yaml";

std::string ReadFile(const QString& path) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const QString& path, const std::string& text) {
  std::ofstream out(path.toStdString(), std::ios::binary | std::ios::trunc);
  out << text;
}

// Runs the mmtwin CLI; returns stdout (fails the test on a non-zero exit).
QByteArray Cli(const QStringList& args, int expected_exit = 0) {
  QProcess p;
  p.start(QStringLiteral(MMTWIN_CLI), args);
  if (!p.waitForFinished(120000)) qWarning() << "mmtwin did not finish";
  if (p.exitCode() != expected_exit) qWarning() << p.readAllStandardError();
  return p.exitCode() == expected_exit ? p.readAllStandardOutput() : QByteArray();
}

bool WaitRun(MainWindow& w, QString* error = nullptr) {
  QSignalSpy spy(&w, &MainWindow::runFinished);
  if (!spy.wait(60000)) return false;
  if (error) *error = spy.at(0).at(1).toString();
  return spy.at(0).at(0).toBool();
}

double Cell(QTableWidget* t, int row, int col) { return t->item(row, col)->data(Qt::UserRole).toDouble(); }

std::vector<OpRecord> SyntheticOps(int n) { return testing::SyntheticOps(n, 16); }

}  // namespace

class GuiTest : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // QSettings (recent files) go to a test location
    QVERIFY(tmp_.isValid());
    qputenv("MMTWIN_GUI_RUNS", tmp_.filePath("runs").toLocal8Bit());
  }

  // Issue 33, item 3: with recomputation on, every compute op of device 0 is drawn over its whole span (the
  // backward right after its recompute started mid-pixel and was folded into a one-pixel aggregate: the
  // timeline showed idle where ops.csv had the backward). Scenarios/default.yaml with recompute full, laid out
  // at several widths: the drawn items cover each op but for at most one pixel.
  void recomputedOpsAreDrawnWhole() {
    std::string text = ReadFile(kDefault);
    const size_t at = text.find("recompute: ");
    QVERIFY(at != std::string::npos);
    text.replace(at, text.find('\n', at) - at, "recompute: full");
    const QString file = tmp_.filePath("recompute-full.yaml");
    WriteFile(file, text);
    const QString dir = tmp_.filePath("recompute-full-run");
    Cli({"simulate", file, "-o", dir});
    MainWindow w;
    QVERIFY(w.Open(dir).ok());
    const RunData* run = w.current();
    QVERIFY(run != nullptr);
    const TimelineModel m(run->ops, run->summary.parallel);
    const int row = m.RowOf(0, Lane::kCompute);
    QVERIFY(row >= 0);
    int recompute_ops = 0;
    for (const OpRecord& op : run->ops) recompute_ops += op.device == 0 && op.kind == OpKind::kRecompute;
    QVERIFY(recompute_ops > 0);
    for (int width : {700, 1200, 1913}) {
      std::vector<TimelineItem> items;
      m.Layout(0, m.end_us(), width, items);
      const double px_us = m.end_us() / width;
      for (const OpRecord& op : run->ops) {
        if (op.device != 0 || op.lane != Lane::kCompute || !(op.duration_us > 2 * px_us)) continue;
        double covered = 0;
        for (const TimelineItem& it : items)
          if (it.row == row)
            covered += std::max(
                0.0, std::min(it.end_us, op.start_us + op.duration_us) - std::max(it.start_us, op.start_us));
        QVERIFY2(covered >= op.duration_us - 1.01 * px_us,
                 qPrintable(QString("width %1: %2 at %3 us drawn over %4 of %5 us")
                                .arg(width)
                                .arg(OpKindName(op.kind))
                                .arg(op.start_us)
                                .arg(covered)
                                .arg(op.duration_us)));
      }
    }
  }

  // Issue 33, item 3: the what-if loop without a pin: each run is compared with the one before it (A = the
  // previous run, B = the new one); a pin keeps its run as A.
  void eachRunIsComparedWithThePreviousOne() {
    MainWindow w;
    QVERIFY(w.Open(kDefault).ok());
    QString error;
    QVERIFY(w.Run());
    QVERIFY2(WaitRun(w, &error), qPrintable(error));
    QVERIFY(w.pinned() == nullptr);
    w.editor()->form().dp->setValue(1);
    QVERIFY(w.Run());
    QVERIFY2(WaitRun(w, &error), qPrintable(error));
    QVERIFY(w.pinned() != nullptr);
    QCOMPARE(w.pinned()->summary.parallel.dp, 2);
    QCOMPARE(w.current()->summary.parallel.dp, 1);
    QVERIFY(w.status_text().contains("A = the previous run"));
    // Pinned: A stays the pinned run over later runs.
    w.Pin();
    w.editor()->form().micro_batches->setValue(w.editor()->form().micro_batches->value() * 2);
    QVERIFY(w.Run());
    QVERIFY2(WaitRun(w, &error), qPrintable(error));
    QCOMPARE(w.pinned()->summary.parallel.dp, 1);
    QCOMPARE(w.pinned()->summary.parallel.micro_batches * 2, w.current()->summary.parallel.micro_batches);
    QVERIFY(w.Run());
    QVERIFY2(WaitRun(w, &error), qPrintable(error));
    QCOMPARE(w.pinned()->summary.parallel.micro_batches * 2, w.current()->summary.parallel.micro_batches);
    QVERIFY(w.status_text().contains("A = the pinned run"));
  }

  // Issue 33, item 3: the run history. Three runs (dp 2, dp 1, then recompute full): the History tab lists them in
  // order, each with what changed from the run before (the resolved scenarios' keys) and its figures as the
  // Compare tab writes them; comparing runs 1 and 3 puts them as A and B; showing run 1 reloads its folder with its
  // timeline.
  // File > Replay a run folder: a kept measured run (DP 2, 10 iterations) in the Replay tab: one row per step and
  // the mean, the replay within 3% of the record in every row, the attribution, and the slowdown heatmap of its two
  // devices by step, around 1.
  void theReplayTabShowsTheStepsTheAttributionAndTheSlowdownHeatmap() {
    MainWindow w;
    const QString run = kSource + "/reports/validation/cpu-audio/runs/dp2-b2";
    const Status st = w.OpenReplay(run);
    QVERIFY2(st.ok(), st.ok() ? "" : st.error().message().c_str());
    ReplayView* r = w.replay();
    QCOMPARE(r->table()->rowCount(), 11);
    QCOMPARE(r->table()->item(0, 0)->text(), QString("mean"));  // first, visible without scrolling
    QVERIFY(r->table()->item(0, 0)->font().bold());
    QCOMPARE(r->table()->item(1, 0)->text(), QString("0"));  // then the steps, the run's first one first
    for (int row = 0; row < 11; ++row) {
      const double recorded = r->table()->item(row, 1)->text().toDouble();
      const double replayed = r->table()->item(row, 2)->text().toDouble();
      QVERIFY2(std::abs(replayed / recorded - 1) < 0.03, qPrintable(r->table()->item(row, 3)->text()));
    }
    QVERIFY(r->attribution()->text().contains("data imbalance"));
    QVERIFY(r->attribution()->text().contains("stalls"));
    QCOMPARE(r->table()->horizontalHeaderItem(7)->text(), QString("stalls ms"));
    // dp2-b2 has no stalled pass: the stalls what-if is the replay itself.
    QCOMPARE(r->table()->item(0, 7)->text(), r->table()->item(0, 2)->text());
    const Heatmap& h = r->heatmap()->heatmap();
    QCOMPARE(static_cast<int>(h.x_values.size()), 10);
    QCOMPARE(h.y_values, (std::vector<std::string>{"dp 0 pp 0", "dp 1 pp 0"}));
    QCOMPARE(static_cast<int>(h.cells.size()), 20);
    QVERIFY(h.min > 0.5 && h.max < 2.0);
    QVERIFY(!r->heatmap()->CellRect(0, 0).isEmpty());
    // A folder that is not a run: an error, the tab as it was.
    QVERIFY(!w.OpenReplay(kSource + "/scenarios").ok());
    QCOMPARE(r->table()->rowCount(), 11);
  }

  void theHistoryListsEachRunWithWhatChangedAndComparesAnyTwo() {
    MainWindow w;
    QVERIFY(w.Open(kDefault).ok());
    QString error;
    QVERIFY(w.Run());
    QVERIFY2(WaitRun(w, &error), qPrintable(error));
    w.editor()->form().dp->setValue(1);
    QVERIFY(w.Run());
    QVERIFY2(WaitRun(w, &error), qPrintable(error));
    w.editor()->form().policy.at("recompute")->setCurrentText("full");
    QVERIFY(w.Run());
    QVERIFY2(WaitRun(w, &error), qPrintable(error));
    HistoryView* h = w.history();
    QCOMPARE(h->size(), 3);
    QCOMPARE(h->table()->rowCount(), 3);
    QCOMPARE(h->table()->item(0, 3)->text(), QString("first run"));
    QCOMPARE(h->table()->item(1, 3)->text(), QString("parallel.dp: 2 -> 1"));
    QVERIFY2(h->table()->item(2, 3)->text().contains("policies.recompute"),
             qPrintable(h->table()->item(2, 3)->text()));
    QVERIFY(!h->table()->item(2, 3)->text().contains("parallel.dp"));
    QCOMPARE(h->entry(0).summary.parallel.dp, 2);
    QCOMPARE(h->entry(1).summary.parallel.dp, 1);
    // The p50 column is the Compare tab's metric, written the same way.
    const double p50 = h->entry(1).summary.iteration_time_us.p50;
    QCOMPARE(h->table()->item(1, 4)->text(), QString::number(p50 * 1e-3, 'f', 2));
    // Select runs 1 and 3 (click order does not matter), compare: A = run 1, B = run 3.
    QVERIFY(!h->CompareSelected());  // nothing selected
    h->table()->selectRow(2);
    h->table()->selectRow(0);
    QVERIFY(h->CompareSelected());
    QVERIFY(w.pinned() != nullptr && w.current() != nullptr);
    QCOMPARE(w.pinned()->summary.parallel.dp, 2);
    QCOMPARE(w.pinned()->summary.recompute_policy.name, std::string("adaptive"));  // default.yaml's
    QCOMPARE(w.current()->summary.recompute_policy.name, std::string("full"));
    QCOMPARE(w.compare()->summary_table()->item(0, 0)->text(),
             QString::number(h->entry(0).summary.iteration_time_us.p50 * 1e-3, 'f', 2));
    QVERIFY(w.status_text().contains("A = run 1, B = run 3"));
    // Show run 1 (a double-click): its folder is read back, ops and all.
    emit h->showRequested(0);
    QCOMPARE(w.current()->summary.parallel.dp, 2);
    QVERIFY(!w.current()->ops.empty());
    QCOMPARE(QString::fromStdString(w.current()->dir), QString::fromStdString(h->entry(0).dir));
  }

  // Issue 33, item 3: a number typed into a spin box without Enter, then Run from the toolbar (which takes no
  // focus): the run uses the typed number and the field keeps it.
  void aNumberTypedWithoutEnterIsWhatRuns() {
    MainWindow w;
    QVERIFY(w.Open(kDefault).ok());
    ScenarioEditor* ed = w.editor();
    QSpinBox* dp = ed->form().dp;
    QCOMPARE(dp->value(), 2);
    dp->selectAll();
    QTest::keyClicks(dp, "1");
    QCOMPARE(ed->scenario().parallel.dp, 2);  // not entered yet
    QVERIFY(w.Run());
    QString error;
    QVERIFY2(WaitRun(w, &error), qPrintable(error));
    QCOMPARE(w.current()->summary.parallel.dp, 1);
    QCOMPARE(dp->value(), 1);
    QCOMPARE(ed->scenario().parallel.dp, 1);
  }

  // Acceptance 1: load scenarios/default.yaml, change dp in the form, run; the summary and per-stage table show
  // the new run's figures, equal to `mmtwin simulate --json` for the same scenario; the YAML tab reflects it.
  void dpChangeRunsAndShowsTheCliFigures() {
    MainWindow w;
    QVERIFY(w.Open(kDefault).ok());
    ScenarioEditor* ed = w.editor();
    QVERIFY(ed->valid());
    QCOMPARE(ed->form().dp->value(), 2);
    ed->form().dp->setValue(1);
    QCOMPARE(ed->scenario().parallel.dp, 1);
    // Edited in place: the file's comments and layout are kept, only the value changed.
    std::string expected_text = ReadFile(kDefault);
    expected_text.replace(expected_text.find("dp: 2,"), 6, "dp: 1,");
    QCOMPARE(ed->text().toStdString(), expected_text);
    QVERIFY(w.Run());
    QString error;
    QVERIFY2(WaitRun(w, &error), qPrintable(error));

    const QString file = tmp_.filePath("dp1.yaml");
    WriteFile(file, ed->text().toStdString());
    const json cli = json::parse(Cli({"simulate", file, "--json"}).toStdString());
    QCOMPARE(cli["parallel"]["dp"].get<int>(), 1);
    const double p50 = cli["iteration_time_us"]["p50"], p99 = cli["iteration_time_us"]["p99"];
    QCOMPARE(w.summary()->FieldText("iteration_p50"), FormatMs(p50));
    QCOMPARE(w.summary()->FieldText("iteration_p99"), FormatMs(p99));
    QCOMPARE(w.summary()->FieldText("bubble"), FormatPercent(cli["bubble_ratio"].get<double>()));
    QCOMPARE(w.summary()->FieldText("mfu"), FormatPercent(cli["mfu"].get<double>()));
    QVERIFY(std::abs(w.current()->summary.iteration_time_us.p50 - p50) <= 1e-9 * p50);
    // The default run (dp 2) differs: the figures shown are the new run's.
    const json before = json::parse(Cli({"simulate", kDefault, "--json"}).toStdString());
    QVERIFY(before["iteration_time_us"]["p50"].get<double>() != p50);

    StageTable* t = w.stage_table();
    const json& stages = cli["stages"];
    QCOMPARE(t->rowCount(), static_cast<int>(stages.size()));
    for (int r = 0; r < t->rowCount(); ++r) {
      QCOMPARE(t->item(r, StageTable::kBusy)->text(),
               QString::number(100 * stages[r]["busy_ratio"].get<double>(), 'f', 1));
      QVERIFY(std::abs(Cell(t, r, StageTable::kBubble) - stages[r]["bubble_ratio"].get<double>()) < 1e-9);
      QCOMPARE(Cell(t, r, StageTable::kPeak), stages[r]["peak_memory_bytes"].get<double>());
      QCOMPARE(Cell(t, r, StageTable::kFwd) * 1e3, stages[r]["fwd_us_mean"].get<double>());
    }
    // The run was written as an ordinary run folder the library reads back.
    Result<RunData> back = LoadRunDir(w.current()->dir);
    QVERIFY(back.ok());
    QCOMPARE(back->summary.iteration_time_us.p50, w.current()->summary.iteration_time_us.p50);
    QCOMPARE(back->ops.size(), w.current()->ops.size());
  }

  // Acceptance 1 (cont.): an invalid value shows the core's error at its line and does not run.
  void invalidValueShowsCoreErrorAndDoesNotRun() {
    MainWindow w;
    QVERIFY(w.Open(kDefault).ok());
    ScenarioEditor* ed = w.editor();
    const std::string text = ReadFile(kDefault);
    std::string bad = text;
    const size_t at = bad.find("dp: 2,");
    QVERIFY(at != std::string::npos);
    bad.replace(at, 6, "dp: 0,");
    const int line = static_cast<int>(std::count(bad.begin(), bad.begin() + at, '\n')) + 1;
    // Typing into the YAML tab re-parses after a pause.
    ed->yaml_edit()->setPlainText(QString::fromStdString(bad));
    QTRY_VERIFY_WITH_TIMEOUT(!ed->valid(), 3000);
    // The core's own message, as `mmtwin simulate` prints it for the same file.
    const QString file = tmp_.filePath("default.yaml");
    WriteFile(file, bad);
    Result<Scenario> core = LoadScenario(file.toStdString());
    QVERIFY(!core.ok());
    QString expected = QString::fromStdString(core.error().message());
    expected.replace(file, kDefault);
    QCOMPARE(ed->error(), expected);
    QVERIFY2(ed->error().startsWith(kDefault + ":" + QString::number(line) + ": parallel.dp"),
             qPrintable(ed->error()));
    QCOMPARE(ed->error_line(), line);
    QVERIFY(ed->error_label()->isVisibleTo(ed));
    QCOMPARE(ed->yaml_edit()->extraSelections().size(), 1);
    QCOMPARE(ed->yaml_edit()->extraSelections()[0].cursor.blockNumber() + 1, line);
    QSignalSpy spy(&w, &MainWindow::runFinished);
    QVERIFY(!w.Run());
    QVERIFY(!w.running());
    QCOMPARE(w.last_error(), expected);
    QTest::qWait(200);
    QCOMPARE(spy.count(), 0);
    QVERIFY(w.current() == nullptr);

    // A value the parser accepts but the planner's validation refuses (tp above a node), set in the form.
    ed->yaml_edit()->setPlainText(QString::fromStdString(text));
    ed->Reparse();
    QVERIFY(ed->valid());
    ed->form().tp->setValue(16);
    QVERIFY(!ed->valid());
    QVERIFY2(ed->error().contains("parallel.tp") && ed->error_line() > 0, qPrintable(ed->error()));
    QVERIFY(!w.Run());
    // The edit is made in place although the checker refuses the value (the in-place text is compared with the
    // override's by parsing alone): the comments stay, the edited line is marked, and the message is the one
    // `mmtwin simulate` gives for the same text.
    const std::string edited = ed->text().toStdString();
    QVERIFY2(edited.rfind("# The README's main command", 0) == 0, edited.c_str());
    const size_t tp_at = edited.find("tp: 16,");
    QVERIFY(tp_at != std::string::npos);
    const int tp_line = static_cast<int>(std::count(edited.begin(), edited.begin() + tp_at, '\n')) + 1;
    QCOMPARE(ed->error_line(), tp_line);
    WriteFile(file, edited);
    Result<Scenario> cli = LoadScenario(file.toStdString());
    QVERIFY(!cli.ok());
    QString cli_message = QString::fromStdString(cli.error().message());
    cli_message.replace(file, kDefault);
    QCOMPARE(ed->error(), cli_message);
    QVERIFY2(ed->error().startsWith(kDefault + ":" + QString::number(tp_line) +
                                    ": parallel.tp: tensor parallelism stays inside a node: tp 16 > 8"),
             qPrintable(ed->error()));
    // Fixing it makes it valid again.
    ed->form().tp->setValue(2);
    QVERIFY(ed->valid());
    QVERIFY(!ed->error_label()->isVisibleTo(ed));
  }

  // Choosing another model in the form keeps the keys of a model written as a mapping (model.frozen here).
  void modelChoiceKeepsFrozenComponents() {
    const QString file = kSource + "/scenarios/llava/llava-1.5-13b-finetune.yaml";
    ScenarioEditor a;
    a.SetText(QString::fromStdString(ReadFile(file)), file);
    QVERIFY2(a.valid(), qPrintable(a.error()));
    QCOMPARE(a.scenario().frozen, std::vector<std::string>{"vision"});
    a.form().model->setCurrentText("llava-1.5-7b");
    QVERIFY2(a.valid(), qPrintable(a.error()));
    QCOMPARE(a.scenario().model, std::string("llava-1.5-7b"));
    QCOMPARE(a.scenario().frozen, std::vector<std::string>{"vision"});
  }

  // Form -> YAML -> form is the identity, and every knob reaches the scenario.
  void formYamlFormRoundTrip() {
    ScenarioEditor a;
    a.SetText(QString::fromStdString(ReadFile(kDefault)), kDefault);
    QVERIFY(a.valid());
    const auto& f = a.form();
    f.dp->setValue(4);
    f.nodes->setValue(4);
    f.pp->setValue(2);
    f.micro_batches->setValue(6);
    f.zero_stage->setValue(2);
    f.iterations->setValue(3);
    f.seed->setValue(7);
    f.trace_samples->setValue(5000);
    f.policy.at("partition")->setCurrentText("uniform");
    f.policy.at("schedule")->setCurrentText("gpipe");
    f.policy.at("data")->setCurrentText("random");
    QLineEdit* batch = a.form().params.at("data").at("batch_size");
    batch->setText("3");
    emit batch->editingFinished();
    QVERIFY2(a.valid(), qPrintable(a.error()));
    const Scenario& s = a.scenario();
    QCOMPARE(s.parallel.dp, 4);
    QCOMPARE(s.nodes, 4);
    QCOMPARE(s.parallel.pp, 2);
    QCOMPARE(s.parallel.micro_batches, 6);
    QCOMPARE(s.parallel.zero_stage, 2);
    QCOMPARE(s.iterations, int64_t{3});
    QCOMPARE(s.seed, uint64_t{7});
    QCOMPARE(s.trace.samples, int64_t{5000});
    QCOMPARE(s.partition.name, std::string("uniform"));
    QCOMPARE(s.schedule.name, std::string("gpipe"));
    QCOMPARE(s.data.name, std::string("random"));
    QCOMPARE(s.data.params.at("batch_size"), std::string("3"));
    // Sequence parallelism from the form: the degree and the policy (every SP registry entry is offered, the
    // issue-31 additions among them, with their typed parameters).
    {
      ScenarioEditor c;
      c.SetText(a.text(), kDefault);
      const auto& h = c.form();
      QComboBox* sp = h.policy.at("sp");
      QCOMPARE(sp->count(), static_cast<int>(SpPolicyRegistry().entries().size()));
      QVERIFY(sp->findText("cornstarch-cp") >= 0);
      h.pp->setValue(1);
      h.sp->setValue(2);
      sp->setCurrentText("cornstarch-cp");
      QVERIFY(h.params.at("sp").count("block_tokens") && h.params.at("sp").count("heads_stride"));
      QLineEdit* block = h.params.at("sp").at("block_tokens");
      block->setText("256");
      emit block->editingFinished();
      QVERIFY2(c.valid(), qPrintable(c.error()));
      QCOMPARE(c.scenario().parallel.sp, 2);
      QCOMPARE(c.scenario().sp.name, std::string("cornstarch-cp"));
      QCOMPARE(c.scenario().sp.params.at("block_tokens"), std::string("256"));
    }
    // The data policies likewise: every registry entry offered, WLB-LLM's packing with its typed parameters.
    {
      ScenarioEditor c;
      c.SetText(a.text(), kDefault);
      const auto& h = c.form();
      QComboBox* data = h.policy.at("data");
      QCOMPARE(data->count(), static_cast<int>(DataPolicyRegistry().entries().size()));
      data->setCurrentText("wlb-llm");
      QVERIFY(h.params.at("data").count("queues") && h.params.at("data").count("outlier_tokens"));
      QLineEdit* queues = h.params.at("data").at("queues");
      queues->setText("3");
      emit queues->editingFinished();
      QVERIFY2(c.valid(), qPrintable(c.error()));
      QCOMPARE(c.scenario().data.name, std::string("wlb-llm"));
      QCOMPARE(c.scenario().data.params.at("queues"), std::string("3"));
    }
    // The encoder placements likewise (Optimus's bubbles with its `fill`).
    {
      ScenarioEditor c;
      c.SetText(a.text(), kDefault);
      const auto& h = c.form();
      QComboBox* encoder = h.policy.at("encoder");
      QCOMPARE(encoder->count(), static_cast<int>(EncoderPlacements().entries().size()));
      encoder->setCurrentText("bubbles");
      QVERIFY(h.params.at("encoder").count("fill") && h.params.at("encoder").count("min_bubble_us"));
      QLineEdit* fill = h.params.at("encoder").at("fill");
      fill->setText("coarse");
      emit fill->editingFinished();
      QVERIFY2(c.valid(), qPrintable(c.error()));
      QCOMPARE(c.scenario().encoder.name, std::string("bubbles"));
      QCOMPARE(c.scenario().encoder.params.at("fill"), std::string("coarse"));
    }

    ScenarioEditor b;
    b.SetText(a.text(), kDefault);
    QVERIFY(b.valid());
    QVERIFY(b.scenario() == a.scenario());
    const auto& g = b.form();
    for (auto [x, y] : std::vector<std::pair<QSpinBox*, QSpinBox*>>{{f.dp, g.dp},
                                                                    {f.tp, g.tp},
                                                                    {f.pp, g.pp},
                                                                    {f.vpp, g.vpp},
                                                                    {f.sp, g.sp},
                                                                    {f.micro_batches, g.micro_batches},
                                                                    {f.zero_stage, g.zero_stage},
                                                                    {f.nodes, g.nodes},
                                                                    {f.iterations, g.iterations},
                                                                    {f.seed, g.seed},
                                                                    {f.trace_samples, g.trace_samples}})
      QCOMPARE(y->value(), x->value());
    for (const std::string& kind : PolicyKinds()) {
      QCOMPARE(g.policy.at(kind)->currentText(), f.policy.at(kind)->currentText());
      QCOMPARE(g.params.at(kind).size(), f.params.at(kind).size());
      for (const auto& [name, edit] : f.params.at(kind))
        QCOMPARE(g.params.at(kind).at(name)->text(), edit->text());
    }
    QCOMPARE(g.model->currentText(), f.model->currentText());
    QCOMPARE(g.cluster->currentText(), f.cluster->currentText());
    QCOMPARE(g.engine->currentText(), f.engine->currentText());
    // Descriptions come from the registries.
    QVERIFY(!g.policy_description.at("schedule")->text().isEmpty());
  }

  // Acceptance 2: the Gantt holds one item or one LOD aggregate per op of the iteration, in the right row and
  // time span, checked against trace.json; the op under an op's pixel is that op.
  void ganttMatchesTraceJsonAndHitTests() {
    AnalyticRunner runner;
    QSignalSpy done(&runner, &AnalyticRunner::finished);
    Result<Scenario> s = LoadScenario(kDefault.toStdString());
    QVERIFY(s.ok());
    const QString dir = tmp_.filePath("gantt-run");
    QVERIFY(runner.Start(*s, dir));
    QVERIFY(done.wait(60000));
    QVERIFY(done.at(0).at(0).toBool());
    Result<RunData> run = LoadRunDir(dir.toStdString());
    QVERIFY(run.ok());
    GanttView view;
    view.resize(1600, 700);
    view.SetRun(&*run);
    (void)view.grab();  // paints: Layout at the full window
    const TimelineModel& m = view.model();
    int64_t counted = 0;
    std::set<int> single;
    for (const TimelineItem& it : view.last_items()) {
      counted += it.count;
      if (it.op >= 0) single.insert(it.op);
    }
    QCOMPARE(counted, m.drawn_ops());

    // trace.json: one X event per op with a positive duration; pid = device + 1, tid = lane + 1.
    const json trace = json::parse(ReadFile(dir + "/trace.json"));
    std::map<int, std::string> process_name;
    int64_t events = 0;
    for (const json& e : trace["traceEvents"])
      if (e["ph"] == "M" && e["name"] == "process_name") process_name[e["pid"]] = e["args"]["name"];
    const DeviceMesh mesh(run->summary.parallel);
    for (const json& e : trace["traceEvents"]) {
      if (e["ph"] != "X") continue;
      ++events;
      const int device = e["pid"].get<int>() - 1, lane = e["tid"].get<int>() - 1;
      const double ts = e["ts"], dur = e["dur"];
      // The op the event is, and its row.
      int found = -1;
      for (int i = 0; i < static_cast<int>(run->ops.size()); ++i) {
        const OpRecord& op = run->ops[i];
        if (op.device == device && static_cast<int>(op.lane) == lane && std::abs(op.start_us - ts) < 2e-3 &&
            std::abs(op.duration_us - dur) < 2e-3) {
          found = i;
          break;
        }
      }
      QVERIFY2(found >= 0, qPrintable(QString("no op for event at %1 us on pid %2").arg(ts).arg(device + 1)));
      const int row = m.RowOf(run->ops[found]);
      QVERIFY(row >= 0);
      QCOMPARE(m.rows()[row].device, device);
      QCOMPARE(static_cast<int>(m.rows()[row].lane), lane);
      // The compute row's label is the trace's process name ("dp D / stage S").
      const int compute_row = m.RowOf(device, Lane::kCompute);
      QCOMPARE(QString::fromStdString(m.rows()[compute_row].label),
               QString::fromStdString(process_name[device + 1]));
      // Its item spans the event's time (ops wider than a pixel are their own item).
      const QRectF rr = view.RowRect(row);
      const double w_px = view.XOf(ts + dur) - view.XOf(ts);
      if (w_px >= 3 && single.count(found)) {
        const QPointF c = view.PointOf(found);
        QVERIFY(c.y() >= rr.top() && c.y() < rr.bottom());
        QCOMPARE(view.OpAt(c.toPoint()), found);
        QVERIFY(
            view.TooltipText(found).contains(QString("micro-batch %1").arg(run->ops[found].micro_batch)) ||
            run->ops[found].micro_batch < 0);
      }
    }
    QCOMPARE(events, m.drawn_ops());
    QVERIFY(events > 100);
    // Zooming into a tenth of the iteration: the ops in the window are still each counted once.
    view.SetWindow(m.end_us() * 0.4, m.end_us() * 0.5);
    (void)view.grab();
    counted = 0;
    for (const TimelineItem& it : view.last_items()) counted += it.count;
    int64_t in_window = 0;
    for (const OpRecord& op : run->ops)
      if (m.RowOf(op) >= 0 && op.start_us < m.end_us() * 0.5 &&
          op.start_us + op.duration_us > m.end_us() * 0.4)
        ++in_window;
    QCOMPARE(counted, in_window);
    // Drag pans: 100 px to the left moves the window 100 px worth of time later; double click shows it all.
    const double t0 = view.t0_us(), span = view.t1_us() - view.t0_us();
    const QPoint from = view.PlotRect().center().toPoint();
    QTest::mousePress(&view, Qt::LeftButton, Qt::NoModifier, from);
    QTest::mouseMove(&view, from - QPoint(100, 0));
    QTest::mouseRelease(&view, Qt::LeftButton, Qt::NoModifier, from - QPoint(100, 0));
    QVERIFY(std::abs(view.t0_us() - (t0 + 100 * span / view.PlotRect().width())) < 1e-6 * span);
    QCOMPARE(view.t1_us() - view.t0_us(), span);
    QTest::mouseDClick(&view, Qt::LeftButton, Qt::NoModifier, from);
    QCOMPARE(view.t0_us(), 0.0);
    QCOMPARE(view.t1_us(), m.end_us());
  }

  // Level of detail: 100k ops at full zoom-out draw a number of items bounded by the pixels, and every op in
  // the window is counted exactly once; an aggregate's colour is a kind present in its column.
  void lodBoundsItemsFor100kOps() {
    const std::vector<OpRecord> ops = SyntheticOps(100000);
    TimelineModel m(ops, ParallelConfig{.dp = 4, .tp = 1, .pp = 4});
    QCOMPARE(m.drawn_ops(), int64_t{100000});
    QCOMPARE(static_cast<int>(m.rows().size()), 32);
    std::vector<TimelineItem> items;
    const int width = 1200;
    m.Layout(0, m.end_us(), width, items);
    QVERIFY2(items.size() <= m.rows().size() * (2 * width + 2), qPrintable(QString::number(items.size())));
    QVERIFY(items.size() < 100000 / 2);
    int64_t counted = 0;
    for (const TimelineItem& it : items) counted += it.count;
    QCOMPARE(counted, int64_t{100000});
    // A zoomed window: brute-force count of the ops overlapping it.
    const double t0 = m.end_us() * 0.3, t1 = m.end_us() * 0.31;
    m.Layout(t0, t1, width, items);
    int64_t expected = 0;
    for (const OpRecord& op : ops)
      if (op.start_us < t1 && op.start_us + op.duration_us > t0) ++expected;
    counted = 0;
    int singles = 0;
    for (const TimelineItem& it : items) {
      counted += it.count;
      singles += it.op >= 0;
    }
    QCOMPARE(counted, expected);
    QVERIFY(singles > 0);  // zoomed in, ops are drawn one by one
    // Hit test against brute force on random times.
    for (int k = 0; k < 200; ++k) {
      const int row = k % 32;
      const double t = m.end_us() * (k * 0.618034 - std::floor(k * 0.618034));
      const int hit = m.HitTest(row, t);
      int brute = -1;
      for (int i = 0; i < static_cast<int>(ops.size()); ++i)
        if (m.RowOf(ops[i]) == row && ops[i].start_us <= t && t < ops[i].start_us + ops[i].duration_us)
          brute = i;
      QCOMPARE(hit, brute);
    }
    // The widget paints through the same bound.
    GanttView view;
    view.resize(1400, 800);
    view.SetOps(&ops, ParallelConfig{.dp = 4, .tp = 1, .pp = 4});
    (void)view.grab();
    QVERIFY(view.last_items().size() <=
            m.rows().size() * (2 * static_cast<size_t>(view.PlotRect().width()) + 4));
  }

  // Acceptance 3: while a long run is in progress the event loop keeps processing events, and cancel stops it.
  void longRunKeepsEventLoopAliveAndCancels() {
    std::string text = ReadFile(kDefault);
    text.replace(text.find("iterations: 8"), 13, "iterations: epoch");
    text.replace(text.find("samples: 20000"), 14, "samples: 2000000");
    Result<Scenario> s = ParseScenario(text, "long.yaml", (kSource + "/scenarios").toStdString());
    QVERIFY(s.ok());
    AnalyticRunner runner;
    QSignalSpy done(&runner, &AnalyticRunner::finished);
    // A 5 ms timer on the GUI thread, started before the run: the largest gap between its ticks (Start itself
    // included) while the run works. The run takes seconds (about 3 s in a Release build), so a run that held
    // the GUI thread would leave a gap of seconds; the bound leaves room for a loaded CI machine.
    QElapsedTimer clock;
    clock.start();
    qint64 last = 0, max_gap = 0;
    int ticks = 0;
    QTimer timer;
    QObject::connect(&timer, &QTimer::timeout, [&] {
      const qint64 now = clock.elapsed();
      max_gap = std::max(max_gap, now - last);
      last = now;
      ++ticks;
    });
    timer.start(5);
    QVERIFY(runner.Start(*s, tmp_.filePath("long-run")));
    QVERIFY(!runner.Start(*s, tmp_.filePath("long-run-2")));  // one run at a time
    QVERIFY2(clock.elapsed() < 500, "Start blocked");
    QTest::qWait(600);
    QVERIFY2(runner.running(), "the run ended before it could be cancelled: make it longer");
    QVERIFY(done.isEmpty());
    max_gap = std::max(max_gap, clock.elapsed() - last);
    QVERIFY2(max_gap < 400, qPrintable(QString("event loop blocked for %1 ms").arg(max_gap)));
    QVERIFY(ticks >= 10);
    QElapsedTimer cancel_clock;
    cancel_clock.start();
    runner.Cancel();
    QVERIFY(done.wait(20000));
    QCOMPARE(done.at(0).at(0).toBool(), false);
    QCOMPARE(done.at(0).at(1).toString(), QString("cancelled"));
    QCOMPARE(done.at(0).at(2).toBool(), true);  // a cancellation, by kind, wherever it landed
    QVERIFY(!runner.running());
    QVERIFY(!QFileInfo::exists(tmp_.filePath("long-run")));  // nothing written for a cancelled run
    qInfo() << "cancel took" << cancel_clock.elapsed() << "ms; max event-loop gap" << max_gap << "ms over"
            << ticks << "ticks";
  }

  // The window shows a cancel as a cancel: whatever the run was doing when Cancel came (planning, BMP, the
  // replay), the status says it was cancelled, no error is recorded and the shown run stays as it was.
  void windowShowsACancelAsACancel() {
    std::string text = ReadFile(kDefault);
    text.replace(text.find("iterations: 8"), 13, "iterations: epoch");
    text.replace(text.find("samples: 20000"), 14, "samples: 2000000");
    const QString file = tmp_.filePath("long.yaml");
    WriteFile(file, text);
    MainWindow w;
    QVERIFY(w.Open(kDefault).ok());
    QVERIFY(w.Run());
    QVERIFY(WaitRun(w));
    const std::string shown = SummaryToJson(w.current()->summary);
    for (int delay_ms : {0, 150, 600}) {
      QVERIFY(w.Open(file).ok());
      QSignalSpy spy(&w, &MainWindow::runFinished);
      QVERIFY(w.Run());
      QTest::qWait(delay_ms);
      QVERIFY2(w.running(), "the run ended before it could be cancelled: make it longer");
      w.CancelRun();
      QVERIFY(spy.wait(20000));
      QCOMPARE(spy.at(0).at(0).toBool(), false);
      QCOMPARE(spy.at(0).at(1).toString(), QString("cancelled"));
      QCOMPARE(w.status_text(), QString("Run cancelled; nothing was written"));
      QVERIFY(w.last_error().isEmpty());
      QCOMPARE(SummaryToJson(w.current()->summary), shown);
    }
  }

  // The worker reports progress and the finished run equals Simulate's.
  void workerRunReportsProgress() {
    std::string text = ReadFile(kDefault);
    text.replace(text.find("iterations: 8"), 13, "iterations: 64");
    Result<Scenario> s = ParseScenario(text, "p.yaml", (kSource + "/scenarios").toStdString());
    QVERIFY(s.ok());
    AnalyticRunner runner;
    QSignalSpy progress(&runner, &AnalyticRunner::progress);
    QSignalSpy done(&runner, &AnalyticRunner::finished);
    QVERIFY(runner.Start(*s, QString()));
    QVERIFY(done.wait(60000));
    QVERIFY(done.at(0).at(0).toBool());
    QVERIFY(progress.count() > 0);
    for (int i = 1; i < progress.count(); ++i)
      QVERIFY(progress.at(i).at(0).toDouble() >= progress.at(i - 1).at(0).toDouble());
    RunData run = runner.TakeResult();
    Result<SimulationResult> direct = Simulate(*s, {});
    QVERIFY(direct.ok());
    QCOMPARE(SummaryToJson(run.summary), SummaryToJson(direct->summary));
  }

  // A/B compare: deltas equal the differences of the two summaries; both timelines share one time scale.
  void compareDeltasEqualSummaryDifferences() {
    MainWindow w;
    QVERIFY(w.Open(kDefault).ok());
    QVERIFY(w.Run());
    QVERIFY(WaitRun(w));
    w.Pin();
    w.editor()->form().policy.at("partition")->setCurrentText("uniform");
    QVERIFY(w.Run());
    QVERIFY(WaitRun(w));
    const RunSummary &a = w.pinned()->summary, &b = w.current()->summary;
    QCOMPARE(b.partition_policy.name, std::string("uniform"));
    QVERIFY(a.iteration_time_us.p50 != b.iteration_time_us.p50);
    CompareView* c = w.compare();
    // The rows are the headline metrics `mmtwin compare` prints (core/records/headline_metrics.h).
    const auto& metrics = HeadlineMetrics();
    QCOMPARE(c->summary_table()->rowCount(), static_cast<int>(metrics.size()));
    for (int r = 0; r < static_cast<int>(metrics.size()); ++r) {
      QCOMPARE(c->summary_table()->verticalHeaderItem(r)->text(), QString(metrics[r].label));
      QCOMPARE(Cell(c->summary_table(), r, 0), metrics[r].get(a));
      QCOMPARE(Cell(c->summary_table(), r, 1), metrics[r].get(b));
      QCOMPARE(Cell(c->summary_table(), r, 2), metrics[r].get(b) - metrics[r].get(a));
    }
    QCOMPARE(Cell(c->summary_table(), 0, 2), b.iteration_time_us.p50 - a.iteration_time_us.p50);
    // A delta is green when it is an improvement by the metric's direction, red when it is worse.
    const QColor better(0x1e8449), worse(0xc0392b);
    for (int r = 0; r < static_cast<int>(metrics.size()); ++r) {
      const double d = metrics[r].get(b) - metrics[r].get(a);
      const QVariant fg = c->summary_table()->item(r, 2)->data(Qt::ForegroundRole);
      if (d == 0 || metrics[r].better == Better::kNeither) {
        QVERIFY2(!fg.isValid(), metrics[r].name);
      } else {
        const bool improved = (metrics[r].better == Better::kLower) == (d < 0);
        QCOMPARE(fg.value<QBrush>().color(), improved ? better : worse);
      }
    }
    const auto& stage_metrics = StageMetrics();
    QCOMPARE(c->stage_table()->rowCount(), static_cast<int>(a.stages.size()));
    QCOMPARE(c->stage_table()->columnCount(), 1 + static_cast<int>(stage_metrics.size()));
    for (int r = 0; r < c->stage_table()->rowCount(); ++r)
      for (int k = 0; k < static_cast<int>(stage_metrics.size()); ++k)
        QCOMPARE(Cell(c->stage_table(), r, 1 + k),
                 stage_metrics[k].get(b.stages[r]) - stage_metrics[k].get(a.stages[r]));
    // The same two run folders through `mmtwin compare`: every A and B cell reads as the CLI prints it.
    QVERIFY(!w.pinned()->dir.empty() && !w.current()->dir.empty());
    const QStringList cli = QString::fromUtf8(Cli({"compare", QString::fromStdString(w.pinned()->dir),
                                                   QString::fromStdString(w.current()->dir)}))
                                .split('\n');
    for (int r = 0; r < static_cast<int>(metrics.size()); ++r) {
      const QString label = metrics[r].label;
      auto line =
          std::find_if(cli.begin(), cli.end(), [&](const QString& l) { return l.startsWith(label + " "); });
      QVERIFY2(line != cli.end(), metrics[r].name);
      const QStringList cells = line->mid(label.size()).split(' ', Qt::SkipEmptyParts);  // A, B, B - A, B / A
      QCOMPARE(cells.size(), 4);
      QCOMPARE(c->summary_table()->item(r, 0)->text(), cells[0]);
      QCOMPARE(c->summary_table()->item(r, 1)->text(), cells[1]);
    }
    // Aligned timelines: the same window, and a zoom on A moves B.
    c->resize(1200, 900);
    GanttView *ga = c->gantt_a(), *gb = c->gantt_b();
    QCOMPARE(ga->t1_us(), gb->t1_us());
    QCOMPARE(ga->t1_us(), std::max(ga->model().end_us(), gb->model().end_us()));
    ga->resize(1000, 300);
    QWheelEvent wheel(QPointF(500, 100), ga->mapToGlobal(QPointF(500, 100)), QPoint(), QPoint(0, 240),
                      Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(ga, &wheel);
    QVERIFY(ga->t1_us() - ga->t0_us() < ga->model().end_us());
    QCOMPARE(gb->t0_us(), ga->t0_us());
    QCOMPARE(gb->t1_us(), ga->t1_us());
  }

  // A measured run folder (the backend's, same schema) opens like a simulated one, and compares with a
  // simulation of its own scenario.
  void measuredRunOpensAndComparesWithSimulation() {
    const QString measured = kSource + "/reports/validation/cpu-ws4/runs/vpp2";
    MainWindow w;
    QVERIFY(w.Open(measured).ok());
    QVERIFY(w.current() != nullptr);
    QCOMPARE(w.current()->summary.source, RecordSource::kMeasured);
    QVERIFY(w.summary()->FieldText("source").startsWith("measured"));
    Result<RunSummary> oracle = LoadSummary((measured + "/summary.json").toStdString());
    QVERIFY(oracle.ok());
    QCOMPARE(w.summary()->FieldText("iteration_p50"), FormatMs(oracle->iteration_time_us.p50));
    QCOMPARE(w.stage_table()->rowCount(), static_cast<int>(oracle->stages.size()));
    QVERIFY(w.editor()->valid());  // its scenario.yaml is in the editor
    w.Pin();
    QVERIFY(w.Run());
    QVERIFY(WaitRun(w));
    QCOMPARE(w.current()->summary.source, RecordSource::kSimulated);
    QCOMPARE(Cell(w.compare()->summary_table(), 0, 2),
             w.current()->summary.iteration_time_us.p50 - oracle->iteration_time_us.p50);
  }

  // Sweeps: the heatmap's cells equal the database's rows for the chosen metric (read with raw SQL); a click
  // on a cell opens that run.
  void heatmapCellsEqualDatabaseRows() {
    const QString sweep = tmp_.filePath("small-sweep.yaml"), db = tmp_.filePath("small.sqlite");
    WriteFile(sweep, "name: small\nbase: " + kDefault.toStdString() +
                         "\nmode: cartesian\niterations: 2\naxes:\n"
                         "  - {key: parallel.micro_batches, name: micro_batches, values: [4, 8, 16]}\n"
                         "  - {key: policies.partition, name: partition, values: [uniform, bmp]}\n"
                         "  - {key: policies.schedule, name: schedule, values: [1f1b, gpipe]}\n");
    Cli({"sweep", sweep, "--db", db, "--jobs", "2"});
    MainWindow w;
    QVERIFY(w.Open(db).ok());
    SweepView* v = w.sweep();
    QCOMPARE(static_cast<int>(v->runs().size()), 12);
    QVERIFY(v->Choose("iteration_time_us_p50", "micro_batches", "partition"));
    QVERIFY(v->SetFilter("schedule", "gpipe"));
    const Heatmap& h = v->heatmap()->heatmap();
    QCOMPARE(h.x_values, (std::vector<std::string>{"4", "8", "16"}));

    sqlite3* raw = nullptr;
    QCOMPARE(sqlite3_open_v2(db.toUtf8().constData(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    QCOMPARE(sqlite3_prepare_v2(raw,
                                "SELECT axis_micro_batches, axis_partition, iteration_time_us_p50 FROM runs "
                                "WHERE axis_schedule = 'gpipe' AND status = 'ok'",
                                -1, &st, nullptr),
             SQLITE_OK);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      ++rows;
      const std::string mb = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      const std::string part = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
      const double p50 = sqlite3_column_double(st, 2);
      bool matched = false;
      for (const HeatmapCell& c : h.cells)
        if (h.x_values[c.x] == mb && h.y_values[c.y] == part) {
          QCOMPARE(c.value, p50);
          matched = true;
        }
      QVERIFY2(matched, (mb + " / " + part).c_str());
    }
    sqlite3_finalize(st);
    sqlite3_close(raw);
    QCOMPARE(rows, 6);
    QCOMPARE(static_cast<int>(h.cells.size()), rows);

    // Click the cell (micro_batches 16, bmp): the window shows that run.
    const HeatmapCell* target = nullptr;
    for (const HeatmapCell& c : h.cells)
      if (h.x_values[c.x] == "16" && h.y_values[c.y] == "bmp") target = &c;
    QVERIFY(target != nullptr);
    const double value = target->value;
    v->heatmap()->resize(800, 500);
    QTest::mouseClick(v->heatmap(), Qt::LeftButton, Qt::NoModifier,
                      v->heatmap()->CellRect(target->x, target->y).center().toPoint());
    QVERIFY(w.current() != nullptr);
    QCOMPARE(w.current()->summary.iteration_time_us.p50, value);
    QCOMPARE(w.current()->summary.parallel.micro_batches, 16);
    QCOMPARE(w.current()->summary.schedule_policy.name, std::string("gpipe"));
    QCOMPARE(w.summary()->FieldText("iteration_p50"), FormatMs(value));
    QVERIFY(w.editor()->valid());  // its resolved scenario, ready to run again for its timeline
    QCOMPARE(w.editor()->scenario().parallel.micro_batches, 16);
    // Named in the sweep's base folder, where the resolved scenario's relative paths resolve.
    QCOMPARE(QFileInfo(w.editor()->path()).absolutePath(), QFileInfo(kDefault).absolutePath());
  }

  // Tune: `mmtwin tune`'s output folder opens in the Tune tab (its DIR.sqlite), ranked as the CLI ranked it
  // (ranked.csv: the same configurations in the same order with the same objectives), one scatter point per
  // configuration that fits, exactly pareto.csv's rows marked as the front; a click on the best point opens that
  // run (its summary, its resolved scenario in the editor). The database alone opens the same way; a plain sweep's
  // still opens in the Sweep tab (heatmapCellsEqualDatabaseRows).
  void theTuneTabShowsTheSearchAndAClickOpensARun() {
    const QString dir = tmp_.filePath("tune-out");
    Cli({"tune", kSource + "/scenarios/tune/default-16gpu.yaml", "-o", dir, "--jobs", "2"});
    auto csv_rows = [](const QString& file) {
      std::vector<std::vector<std::string>> rows;
      std::istringstream in(ReadFile(file));
      std::string line;
      while (std::getline(in, line)) {
        std::vector<std::string> cells;
        std::stringstream ls(line);
        std::string c;
        while (std::getline(ls, c, ',')) cells.push_back(c);
        rows.push_back(cells);
      }
      return rows;
    };
    const auto ranked = csv_rows(dir + "/ranked.csv"), pareto = csv_rows(dir + "/pareto.csv");
    QVERIFY(ranked.size() > 2);
    const auto& header = ranked.front();
    const size_t key_col = std::find(header.begin(), header.end(), "run_key") - header.begin();
    const size_t obj_col = std::find(header.begin(), header.end(), "objective") - header.begin();
    QVERIFY(key_col < header.size() && obj_col < header.size());
    for (const QString& path : {dir, dir + ".sqlite"}) {
      MainWindow w;
      QVERIFY(w.Open(path).ok());
      TuneView* v = w.tune();
      const TuneResult& r = v->result();
      QCOMPARE(r.ranked.size(), ranked.size() - 1);
      for (size_t i = 0; i < r.ranked.size(); ++i) {
        QCOMPARE(r.ranked[i].candidate->run_key, ranked[i + 1][key_col]);
        QVERIFY(std::fabs(r.ranked[i].objective - std::stod(ranked[i + 1][obj_col])) <=
                1e-6 * std::fabs(r.ranked[i].objective));
      }
      QCOMPARE(v->scatter()->points().size(), r.ranked.size());
      std::set<std::string> front_keys, marked;
      for (size_t i = 1; i < pareto.size(); ++i) front_keys.insert(pareto[i][key_col]);
      for (size_t i = 0; i < v->scatter()->points().size(); ++i)
        if (v->scatter()->points()[i].pareto) marked.insert(r.ranked[i].candidate->run_key);
      QCOMPARE(marked, front_keys);
      QCOMPARE(v->table()->rowCount(), static_cast<int>(r.ranked.size()));
      // Click the best point.
      v->scatter()->resize(800, 500);
      QVERIFY(v->scatter()->points()[0].best);
      QCOMPARE(v->scatter()->PointAt(v->scatter()->PointPos(0)), 0);
      QTest::mouseClick(v->scatter(), Qt::LeftButton, Qt::NoModifier, v->scatter()->PointPos(0).toPoint());
      QVERIFY(w.current() != nullptr);
      QCOMPARE(w.current()->summary.gpu_days, r.ranked[0].objective);
      QVERIFY(w.editor()->valid());
      QCOMPARE(w.editor()->scenario().parallel.dp, static_cast<int>(r.ranked[0].candidate->dp));
    }
  }

  // Memory view: bars per stage; an OOM stage is outlined in red (and the summary says OOM).
  void memoryViewMarksOom() {
    std::string text = ReadFile(kDefault);
    text.replace(text.find("recompute: adaptive"), 19, "recompute: none");
    text.replace(text.find("schedule: 1f1b"), 14, "schedule: gpipe");     // every micro-batch's activations
    text.replace(text.find("micro_batches: 8"), 16, "micro_batches: 4");  // some stages fit, others do not
    Result<Scenario> s = ParseScenario(text, "oom.yaml", (kSource + "/scenarios").toStdString());
    QVERIFY(s.ok());
    Result<SimulationResult> r = Simulate(*s, {});
    QVERIFY(r.ok());
    RunData run = RunDataOf(std::move(*r));
    MemoryView view;
    view.resize(900, 700);
    view.SetRun(&run);
    (void)view.grab();
    bool any_oom = false, any_fits = false;
    for (int i = 0; i < static_cast<int>(run.summary.stages.size()); ++i) {
      const StageRecord& st = run.summary.stages[i];
      QVERIFY(!view.chart()->BarRect(i).isEmpty());
      QCOMPARE(view.chart()->OutlineColor(i) == QColor(0xd6, 0x27, 0x28), !st.fits);
      any_oom = any_oom || !st.fits;
      any_fits = any_fits || st.fits;
    }
    // Each bar's parts sum to its peak, name the simulated fragmentation and runtime, and are drawn in their
    // colours: the middle of each part at least 4 px high has its colour in the grabbed chart.
    const QImage image = view.chart()->grab().toImage();
    int parts_seen = 0;
    for (int i = 0; i < static_cast<int>(run.summary.stages.size()); ++i) {
      const StageRecord& st = run.summary.stages[i];
      QVERIFY(st.fragmentation_bytes > 0);
      QVERIFY(st.runtime_bytes > 0);  // the preset's CUDA context at least
      const std::vector<MemorySegment> parts = MemoryChart::Segments(st);
      QCOMPARE(static_cast<int>(parts.size()), 5);
      int64_t sum = 0;
      for (const MemorySegment& seg : parts) sum += seg.bytes;
      QCOMPARE(sum, st.peak_memory_bytes);
      QCOMPARE(parts[3].bytes, st.fragmentation_bytes);
      QCOMPARE(parts[4].bytes, st.runtime_bytes);
      const QRectF bar = view.chart()->BarRect(i);
      double y = bar.bottom();
      for (const MemorySegment& seg : parts) {
        const double h =
            bar.height() * static_cast<double>(seg.bytes) / static_cast<double>(st.peak_memory_bytes);
        if (h >= 4) {
          const QPoint mid(static_cast<int>(bar.center().x()), static_cast<int>(y - h / 2));
          QCOMPARE(image.pixelColor(mid), seg.color);
          ++parts_seen;
        }
        y -= h;
      }
    }
    QVERIFY(parts_seen >= 3 * static_cast<int>(run.summary.stages.size()));
    // Bar heights are proportional to the peaks.
    const double h0 = view.chart()->BarRect(0).height(), h1 = view.chart()->BarRect(1).height();
    QVERIFY(std::abs(h0 / h1 - static_cast<double>(run.summary.stages[0].peak_memory_bytes) /
                                   run.summary.stages[1].peak_memory_bytes) < 0.02);
    QCOMPARE(any_oom, run.summary.oom);
    QVERIFY2(any_oom && any_fits, "the scenario was meant to fit on some stages only");
    SummaryPanel panel;
    panel.SetRun(run.summary);
    QVERIFY(panel.FieldText("oom").startsWith("OOM"));
    QCOMPARE(view.device_box()->count(), run.summary.parallel.dp * run.summary.parallel.pp);
  }

  // The SimGrid engine runs as a child `mmtwin simulate --engine simgrid` process and its run folder is read
  // back; cancel terminates the child.
  void simgridRunsAsChildProcess() {
    Result<Scenario> s = LoadScenario(kDefault.toStdString());
    QVERIFY(s.ok());
    ProcessRunner runner;
    QSignalSpy done(&runner, &ProcessRunner::finished);
    QSignalSpy fractions(&runner, &ProcessRunner::fraction);
    const QString dir = tmp_.filePath("simgrid-run");
    QVERIFY(runner.Start(QStringLiteral(MMTWIN_CLI), *s, "simgrid", dir));
    QVERIFY(runner.running());
    QVERIFY(done.wait(120000));
    const QString error = done.at(0).at(1).toString();
    if (error.contains("without the SimGrid engine")) QSKIP("this mmtwin was built without SimGrid");
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(error));
    RunData run = runner.TakeResult();
    QCOMPARE(run.summary.engine, std::string("simgrid"));
    QVERIFY(!run.ops.empty());
    Result<RunSummary> oracle = LoadSummary(dir.toStdString());
    QVERIFY(oracle.ok());
    QCOMPARE(SummaryToJson(run.summary), SummaryToJson(*oracle));
    // The child reports its progress (`--progress`): increasing fractions, the last 1.
    QVERIFY(fractions.size() >= 2);
    for (int i = 1; i < fractions.size(); ++i)
      QVERIFY(fractions.at(i).at(0).toDouble() > fractions.at(i - 1).at(0).toDouble());
    QCOMPARE(fractions.last().at(0).toDouble(), 1.0);
    // Cancel: a long run is terminated.
    std::string text = ReadFile(kDefault);
    text.replace(text.find("iterations: 8"), 13, "iterations: epoch");
    text.replace(text.find("samples: 20000"), 14, "samples: 2000000");
    Result<Scenario> long_s = ParseScenario(text, "long.yaml", (kSource + "/scenarios").toStdString());
    QVERIFY(long_s.ok());
    QSignalSpy done2(&runner, &ProcessRunner::finished);
    QVERIFY(runner.Start(QStringLiteral(MMTWIN_CLI), *long_s, "simgrid", tmp_.filePath("simgrid-long")));
    QTest::qWait(300);
    QVERIFY(runner.running());
    runner.Cancel();
    QVERIFY(done2.wait(20000));
    QCOMPARE(done2.at(0).at(1).toString(), QString("cancelled"));
    QCOMPARE(done2.at(0).at(2).toBool(), true);
    QVERIFY(!QFileInfo::exists(tmp_.filePath("simgrid-long") + "/summary.json"));
  }

  // Open / save as / recent files.
  void saveAsAndRecentFiles() {
    MainWindow w;
    QVERIFY(w.Open(kDefault).ok());
    w.editor()->form().micro_batches->setValue(12);
    QVERIFY(w.editor()->modified());
    const QString file = tmp_.filePath("saved.yaml");
    QVERIFY(w.SaveTo(file).ok());
    QVERIFY(!w.editor()->modified());
    QCOMPARE(w.editor()->path(), file);
    Result<Scenario> back = LoadScenario(file.toStdString());
    QVERIFY(back.ok());
    QCOMPARE(back->parallel.micro_batches, 12);
    const QStringList recent = QSettings("mmtwin", "mmtwin-gui").value("recent").toStringList();
    QVERIFY(recent.size() >= 2);
    QCOMPARE(recent.front(), QFileInfo(file).absoluteFilePath());
    QVERIFY(recent.contains(QFileInfo(kDefault).absoluteFilePath()));
    QVERIFY(!w.Open(tmp_.filePath("missing.yaml")).ok());
  }
};

QTEST_MAIN(GuiTest)
#include "gui_test.moc"

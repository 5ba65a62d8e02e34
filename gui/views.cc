// SPDX-License-Identifier: Apache-2.0
#include "views.h"

#include <QFileInfo>
#include <QFont>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHelpEvent>
#include <QImage>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QSplitter>
#include <QTime>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/plan/mesh.h"
#include "core/records/headline_metrics.h"
#include "core/scenario/diff.h"
#include "report/chart.h"
#include "sweep/sweep.h"

namespace mmtwin::gui {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The axes of every chart share the reports' tick rules (report/chart.h).
using report::NiceStep;
QString TickLabel(double v, double step) { return QString::fromStdString(report::TickLabel(v, step)); }

QColor Rgb(uint32_t c) { return QColor((c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff); }

QTableWidgetItem* NumberItem(const QString& text, double raw) {
  auto* it = new QTableWidgetItem(text);
  it->setData(Qt::UserRole, raw);
  it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  it->setFlags(it->flags() & ~Qt::ItemIsEditable);
  return it;
}

QTableWidgetItem* TextItem(const QString& text) {
  auto* it = new QTableWidgetItem(text);
  it->setFlags(it->flags() & ~Qt::ItemIsEditable);
  return it;
}

// A headline metric's value as the tables show it: raw * scale with the metric's decimals.
template <class Record>
QString MetricText(const RecordMetric<Record>& m, double raw) {
  return QString::number(raw * m.scale, 'f', m.decimals);
}

// A difference B - A (raw in Qt::UserRole), signed, green when it is an improvement by the metric's direction and
// red when it is worse.
template <class Record>
QTableWidgetItem* DeltaItem(const RecordMetric<Record>& m, double delta) {
  QTableWidgetItem* it = NumberItem((delta > 0 ? "+" : "") + MetricText(m, delta), delta);
  const bool lower = m.better == Better::kLower, higher = m.better == Better::kHigher;
  if ((lower && delta < 0) || (higher && delta > 0)) it->setForeground(QColor(0x1e8449));
  if ((lower && delta > 0) || (higher && delta < 0)) it->setForeground(QColor(0xc0392b));
  return it;
}

// A table header for a metric, its tooltip the field, the unit and the direction.
template <class Record>
QTableWidgetItem* MetricHeader(const RecordMetric<Record>& m, const QString& text) {
  auto* it = new QTableWidgetItem(text);
  QString tip = QString(m.name);
  if (*m.unit) tip += QString(" (") + m.unit + ")";
  if (m.better != Better::kNeither) tip += QString(": ") + BetterName(m.better);
  it->setToolTip(tip);
  return it;
}

void DrawLegendSwatch(QPainter& p, double& x, double y, const QColor& c, const QString& label) {
  p.fillRect(QRectF(x, y - 9, 12, 10), c);
  p.setPen(Qt::black);
  p.drawText(QPointF(x + 16, y), label);
  x += 16 + p.fontMetrics().horizontalAdvance(label) + 14;
}

}  // namespace

QString FormatMs(double us) { return QString::number(us / 1e3, 'f', 1) + " ms"; }
QString FormatPercent(double r) { return QString::number(100 * r, 'f', 1) + "%"; }
QString FormatGiB(int64_t bytes) { return QString::number(bytes / kGiB, 'f', 1) + " GiB"; }

// ---- SummaryPanel ----

SummaryPanel::SummaryPanel(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  const std::vector<std::pair<const char*, const char*>> fields = {
      {"source", "source"},
      {"layout", "layout"},
      {"policies", "policies"},
      {"iteration_p50", "iteration p50"},
      {"iteration_p99", "iteration p99"},
      {"iteration_mean", "iteration mean"},
      {"busy", "busy"},
      {"bubble", "bubble"},
      {"idle", "idle"},
      {"exposed_comm", "exposed comm"},
      {"tokens_per_s", "tokens/s"},
      {"mfu", "MFU"},
      {"gpu_days", "GPU-days / epoch"},
      {"oom", "memory"},
  };
  int i = 0;
  for (const auto& [name, caption] : fields) {
    auto* c = new QLabel(QString(caption) + ":", this);
    c->setStyleSheet("color: #555");
    auto* v = new QLabel("-", this);
    v->setObjectName(name);
    v->setTextInteractionFlags(Qt::TextSelectableByMouse);
    const bool wide = i < 3;  // source, layout and policies span the whole width
    if (wide) {
      grid->addWidget(c, i, 0);
      grid->addWidget(v, i, 1, 1, 3);
    } else {
      const int k = i - 3, row = 3 + k / 2, col = (k % 2) * 2;
      grid->addWidget(c, row, col);
      grid->addWidget(v, row, col + 1);
    }
    fields_[name] = v;
    ++i;
  }
  grid->setColumnStretch(1, 1);
  grid->setColumnStretch(3, 1);
}

void SummaryPanel::Clear() {
  for (auto& [name, label] : fields_) label->setText("-");
}

void SummaryPanel::SetRun(const RunSummary& s) {
  const ParallelConfig& p = s.parallel;
  fields_["source"]->setText(QString::fromStdString(std::string(RecordSourceName(s.source)) + " (" +
                                                    s.engine + "), scenario " + s.scenario + ", model " +
                                                    s.model));
  fields_["layout"]->setText(
      QString("%1 GPUs = dp %2 x tp %3 x pp %4 (vpp %5), %6 micro-batches, ZeRO-%7, %8 x %9")
          .arg(p.world_size())
          .arg(p.dp)
          .arg(p.tp)
          .arg(p.pp)
          .arg(p.vpp)
          .arg(p.micro_batches)
          .arg(p.zero_stage)
          .arg(s.cluster.nodes)
          .arg(QString::fromStdString(s.cluster.preset)));
  fields_["policies"]->setText(QString::fromStdString(
      "data " + s.data_policy.name + ", partition " + s.partition_policy.name + ", recompute " +
      s.recompute_policy.name + ", schedule " + s.schedule_policy.name));
  fields_["iteration_p50"]->setText(FormatMs(s.iteration_time_us.p50));
  fields_["iteration_p99"]->setText(FormatMs(s.iteration_time_us.p99));
  fields_["iteration_mean"]->setText(FormatMs(s.iteration_time_us.mean));
  fields_["busy"]->setText(FormatPercent(s.busy_ratio));
  fields_["bubble"]->setText(FormatPercent(s.bubble_ratio));
  fields_["idle"]->setText(FormatPercent(s.idle_ratio));
  fields_["exposed_comm"]->setText(FormatPercent(s.exposed_comm_ratio));
  fields_["tokens_per_s"]->setText(QString::number(s.tokens_per_s, 'f', 0));
  fields_["mfu"]->setText(FormatPercent(s.mfu));
  fields_["gpu_days"]->setText(QString::number(s.gpu_days, 'g', 4));
  if (s.oom) {
    QStringList short_stages;
    for (const OomStage& o : s.oom_stages)
      short_stages << QString("stage %1 short %2").arg(o.stage).arg(FormatGiB(o.short_bytes));
    fields_["oom"]->setText("OOM: " + short_stages.join(", "));
    fields_["oom"]->setStyleSheet("color: #c0392b; font-weight: bold");
  } else {
    fields_["oom"]->setText("fits on every stage");
    fields_["oom"]->setStyleSheet("");
  }
}

QString SummaryPanel::FieldText(const QString& name) const {
  auto it = fields_.find(name);
  return it == fields_.end() ? QString() : it->second->text();
}

// ---- StageTable ----

StageTable::StageTable(QWidget* parent) : QTableWidget(parent) {
  setColumnCount(kNumColumns);
  setHorizontalHeaderLabels({"stage", "layers", "params", "recomp.\nlayers", "fwd\nms", "bwd\nms",
                             "recomp.\nms", "busy\n%", "bubble\n%", "idle\n%", "states\nGiB", "activ.\nGiB",
                             "peak\nGiB", "capacity\nGiB", "fits"});
  verticalHeader()->setVisible(false);
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  setAlternatingRowColors(true);
  setSelectionBehavior(QAbstractItemView::SelectRows);
}

void StageTable::SetStages(const std::vector<StageRecord>& stages) {
  setRowCount(static_cast<int>(stages.size()));
  for (int r = 0; r < static_cast<int>(stages.size()); ++r) {
    const StageRecord& s = stages[r];
    setItem(r, kStage, NumberItem(QString::number(s.stage), s.stage));
    setItem(r, kLayers, TextItem(QString("%1..%2 (%3)").arg(s.first_layer).arg(s.last_layer).arg(s.layers)));
    setItem(r, kParams,
            NumberItem(QString::number(s.params / 1e9, 'f', 2) + "B", static_cast<double>(s.params)));
    setItem(r, kRecompute, NumberItem(QString::number(s.recomputed_layers), s.recomputed_layers));
    setItem(r, kFwd, NumberItem(QString::number(s.fwd_us_mean / 1e3, 'f', 1), s.fwd_us_mean / 1e3));
    setItem(r, kBwd, NumberItem(QString::number(s.bwd_us_mean / 1e3, 'f', 1), s.bwd_us_mean / 1e3));
    setItem(r, kRecomputeMs,
            NumberItem(QString::number(s.recompute_us_mean / 1e3, 'f', 1), s.recompute_us_mean / 1e3));
    setItem(r, kBusy, NumberItem(QString::number(100 * s.busy_ratio, 'f', 1), s.busy_ratio));
    setItem(r, kBubble, NumberItem(QString::number(100 * s.bubble_ratio, 'f', 1), s.bubble_ratio));
    setItem(r, kIdle, NumberItem(QString::number(100 * s.idle_ratio, 'f', 1), s.idle_ratio));
    auto gib = [](int64_t b) { return QString::number(b / kGiB, 'f', 1); };
    setItem(r, kStates, NumberItem(gib(s.model_state_bytes), static_cast<double>(s.model_state_bytes)));
    setItem(r, kActivations,
            NumberItem(gib(s.peak_activation_bytes), static_cast<double>(s.peak_activation_bytes)));
    setItem(r, kPeak, NumberItem(gib(s.peak_memory_bytes), static_cast<double>(s.peak_memory_bytes)));
    setItem(r, kCapacity,
            NumberItem(gib(s.memory_capacity_bytes), static_cast<double>(s.memory_capacity_bytes)));
    auto* fits = TextItem(s.fits ? "yes" : "OOM");
    if (!s.fits) fits->setForeground(QColor(0xc0, 0x39, 0x2b));
    setItem(r, kFits, fits);
  }
}

// ---- MemoryChart ----

MemoryChart::MemoryChart(QWidget* parent) : QWidget(parent) {
  setMinimumSize(360, 240);
  setAutoFillBackground(true);
}

void MemoryChart::SetStages(const std::vector<StageRecord>& stages) {
  stages_ = stages;
  update();
}

namespace {
struct MemoryGeometry {
  QRectF plot;
  double max_bytes = 1;
  double slot = 1;
};
MemoryGeometry MemoryLayout(const QRectF& widget, const std::vector<StageRecord>& stages) {
  MemoryGeometry g;
  g.plot = widget.adjusted(64, 48, -16, -44);
  for (const StageRecord& s : stages)
    g.max_bytes = std::max({g.max_bytes, static_cast<double>(s.peak_memory_bytes),
                            static_cast<double>(s.memory_capacity_bytes)});
  g.max_bytes *= 1.12;
  g.slot = stages.empty() ? 1 : g.plot.width() / stages.size();
  return g;
}
}  // namespace

QRectF MemoryChart::BarRect(int stage) const {
  if (stage < 0 || stage >= static_cast<int>(stages_.size())) return {};
  const MemoryGeometry g = MemoryLayout(QRectF(rect()), stages_);
  const StageRecord& s = stages_[stage];
  const double h = g.plot.height() * s.peak_memory_bytes / g.max_bytes;
  const double x = g.plot.left() + stage * g.slot + g.slot * 0.2;
  return QRectF(x, g.plot.bottom() - h, g.slot * 0.6, h);
}

QColor MemoryChart::OutlineColor(int stage) const {
  if (stage < 0 || stage >= static_cast<int>(stages_.size())) return {};
  return stages_[stage].fits ? QColor(0x44, 0x44, 0x44) : QColor(0xd6, 0x27, 0x28);
}

std::vector<MemorySegment> MemoryChart::Segments(const StageRecord& s) {
  const int64_t named =
      s.model_state_bytes + s.peak_activation_bytes + s.fragmentation_bytes + s.runtime_bytes;
  return {
      {"model states", s.model_state_bytes, QColor(0x4e, 0x79, 0xa7)},
      {"peak activations", s.peak_activation_bytes, QColor(0xf2, 0x8e, 0x2b)},
      {"buffers, workspaces", std::max<int64_t>(0, s.peak_memory_bytes - named), QColor(0xba, 0xb0, 0xac)},
      {"fragmentation", s.fragmentation_bytes, QColor(0xb0, 0x7a, 0xa1)},
      {"CUDA context, NCCL", s.runtime_bytes, QColor(0x76, 0xb7, 0xb2)}};
}

void MemoryChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  p.fillRect(rect(), Qt::white);
  const MemoryGeometry g = MemoryLayout(QRectF(rect()), stages_);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(Qt::black);
  p.drawText(QRectF(8, 4, width() - 16, 18), Qt::AlignLeft, "Memory per GPU by pipeline stage (GiB)");
  p.setFont(font());
  // Legend.
  double lx = 8;
  for (const MemorySegment& seg : Segments(StageRecord{})) DrawLegendSwatch(p, lx, 38, seg.color, seg.label);
  p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 2, Qt::DashLine));
  p.drawLine(QPointF(lx, 34), QPointF(lx + 18, 34));
  p.setPen(Qt::black);
  p.drawText(QPointF(lx + 22, 38), "capacity");
  lx += 22 + p.fontMetrics().horizontalAdvance("capacity") + 14;
  p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 2));
  p.drawRect(QRectF(lx, 29, 12, 10));
  p.setPen(Qt::black);
  p.drawText(QPointF(lx + 16, 38), "does not fit (OOM)");
  if (stages_.empty()) {
    p.drawText(g.plot, Qt::AlignCenter, "no run");
    return;
  }
  // Y axis.
  const double step = NiceStep(g.max_bytes / kGiB, 6);
  p.setPen(QColor(0xdd, 0xdd, 0xdd));
  for (double v = 0; v <= g.max_bytes / kGiB + 1e-9; v += step) {
    const double y = g.plot.bottom() - g.plot.height() * v * kGiB / g.max_bytes;
    p.setPen(QColor(0xe4, 0xe4, 0xe4));
    p.drawLine(QPointF(g.plot.left(), y), QPointF(g.plot.right(), y));
    p.setPen(Qt::black);
    p.drawText(QRectF(0, y - 8, g.plot.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
               TickLabel(v, step));
  }
  p.save();
  p.translate(12, g.plot.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-60, -10, 120, 20), Qt::AlignCenter, "GiB per GPU");
  p.restore();
  p.drawLine(g.plot.bottomLeft(), g.plot.bottomRight());
  // Bars.
  for (int i = 0; i < static_cast<int>(stages_.size()); ++i) {
    const StageRecord& s = stages_[i];
    const QRectF bar = BarRect(i);
    auto seg_h = [&](double bytes) { return g.plot.height() * bytes / g.max_bytes; };
    double y = g.plot.bottom();
    for (const MemorySegment& seg : Segments(s)) {
      const double h = seg_h(static_cast<double>(seg.bytes));
      p.fillRect(QRectF(bar.left(), y - h, bar.width(), h), seg.color);
      y -= h;
    }
    p.setPen(QPen(OutlineColor(i), s.fits ? 1 : 2.5));
    p.drawRect(bar);
    // Capacity of this stage's GPUs.
    const double yc = g.plot.bottom() - seg_h(static_cast<double>(s.memory_capacity_bytes));
    p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 2, Qt::DashLine));
    p.drawLine(QPointF(g.plot.left() + i * g.slot + 2, yc),
               QPointF(g.plot.left() + (i + 1) * g.slot - 2, yc));
    // Peak value above the bar (red with OOM).
    p.setPen(s.fits ? Qt::black : QColor(0xd6, 0x27, 0x28));
    const QString top = QString::number(s.peak_memory_bytes / kGiB, 'f', 1) + (s.fits ? "" : "  OOM");
    p.drawText(QRectF(bar.left() - 30, std::min(bar.top(), yc) - 18, bar.width() + 60, 16), Qt::AlignCenter,
               top);
    p.setPen(Qt::black);
    p.drawText(QRectF(g.plot.left() + i * g.slot, g.plot.bottom() + 4, g.slot, 16), Qt::AlignCenter,
               QString("stage %1").arg(s.stage));
  }
  p.drawText(QRectF(g.plot.left(), g.plot.bottom() + 22, g.plot.width(), 16), Qt::AlignCenter,
             QString("capacity %1 per GPU; layers per stage in the stage table")
                 .arg(FormatGiB(stages_.front().memory_capacity_bytes)));
}

// ---- ActivationChart ----

ActivationChart::ActivationChart(QWidget* parent) : QWidget(parent) { setMinimumSize(360, 150); }

void ActivationChart::SetSeries(std::vector<std::pair<double, int64_t>> steps, QString title) {
  steps_ = std::move(steps);
  title_ = std::move(title);
  update();
}

void ActivationChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(QRectF(8, 4, width() - 16, 18), Qt::AlignLeft, title_);
  p.setFont(font());
  const QRectF plot = QRectF(rect()).adjusted(64, 28, -16, -36);
  if (steps_.size() < 2) {
    p.drawText(plot, Qt::AlignCenter, "no activation records (ops.csv) for this run");
    return;
  }
  double t_end = 0, v_max = 1;
  for (const auto& [t, v] : steps_) {
    t_end = std::max(t_end, t);
    v_max = std::max(v_max, static_cast<double>(v));
  }
  v_max *= 1.1;
  const double vstep = NiceStep(v_max / kGiB, 4), tstep = NiceStep(t_end / 1e3, 8);
  for (double v = 0; v <= v_max / kGiB + 1e-9; v += vstep) {
    const double y = plot.bottom() - plot.height() * v * kGiB / v_max;
    p.setPen(QColor(0xe4, 0xe4, 0xe4));
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    p.setPen(Qt::black);
    p.drawText(QRectF(0, y - 8, plot.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter, TickLabel(v, vstep));
  }
  for (double t = 0; t <= t_end / 1e3 + 1e-9; t += tstep) {
    const double x = plot.left() + plot.width() * t * 1e3 / t_end;
    p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 4));
    p.drawText(QRectF(x - 40, plot.bottom() + 4, 80, 14), Qt::AlignCenter, TickLabel(t, tstep));
  }
  p.drawText(QRectF(plot.left(), plot.bottom() + 18, plot.width(), 16), Qt::AlignCenter,
             "time in the iteration (ms); activation memory held (GiB)");
  p.drawLine(plot.bottomLeft(), plot.bottomRight());
  QPainterPath path;
  auto pt = [&](double t, double v) {
    return QPointF(plot.left() + plot.width() * t / t_end, plot.bottom() - plot.height() * v / v_max);
  };
  path.moveTo(pt(steps_[0].first, steps_[0].second));
  for (size_t i = 1; i < steps_.size(); ++i) {
    path.lineTo(pt(steps_[i].first, steps_[i - 1].second));
    path.lineTo(pt(steps_[i].first, steps_[i].second));
  }
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(QColor(0xf2, 0x8e, 0x2b), 2));
  p.drawPath(path);
}

// ---- MemoryView ----

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  chart_ = new MemoryChart(this);
  layout->addWidget(chart_, 3);
  auto* row = new QHBoxLayout();
  row->addWidget(new QLabel("Activation memory over the iteration of device:", this));
  device_ = new QComboBox(this);
  row->addWidget(device_);
  row->addStretch(1);
  layout->addLayout(row);
  counter_ = new ActivationChart(this);
  layout->addWidget(counter_, 2);
  QObject::connect(device_, &QComboBox::currentIndexChanged, this, [this](int i) { ShowDevice(i); });
}

void MemoryView::SetRun(const RunData* run) {
  run_ = run;
  chart_->SetStages(run ? run->summary.stages : std::vector<StageRecord>{});
  QSignalBlocker block(device_);
  device_->clear();
  if (run != nullptr) {
    std::set<int32_t> devices;
    for (const OpRecord& op : run->ops)
      if (op.device >= 0) devices.insert(op.device);
    const DeviceMesh mesh(run->summary.parallel);
    for (int32_t d : devices)
      device_->addItem(
          QString::fromStdString(d < mesh.num_devices() ? mesh.DeviceName(d) : "device " + std::to_string(d)),
          d);
  }
  ShowDevice(device_->count() > 0 ? 0 : -1);
}

void MemoryView::ShowDevice(int index) {
  if (run_ == nullptr || index < 0) {
    counter_->SetSeries({}, "Activation memory over the iteration");
    return;
  }
  const int32_t d = device_->itemData(index).toInt();
  counter_->SetSeries(ActivationCounter(run_->ops, d),
                      "Activation memory of " + device_->itemText(index) + " over the traced iteration");
}

// ---- GanttView ----

namespace {
constexpr double kLabelWidth = 120, kTitleHeight = 22, kAxisHeight = 34, kLegendHeight = 22;
double RowWeight(Lane l) { return l == Lane::kCompute ? 2.0 : 1.0; }
}  // namespace

GanttView::GanttView(QWidget* parent) : QWidget(parent) {
  setMinimumSize(400, 160);
  setMouseTracking(false);
}

QSize GanttView::sizeHint() const {
  double w = 0;
  for (const TimelineRow& r : model_.rows()) w += RowWeight(r.lane);
  return QSize(
      900, static_cast<int>(std::clamp(w * 9 + kTitleHeight + kAxisHeight + kLegendHeight, 200.0, 900.0)));
}

void GanttView::SetRun(const RunData* run) {
  static const std::vector<OpRecord> kNone;
  SetOps(run ? &run->ops : &kNone, run ? run->summary.parallel : ParallelConfig{});
}

void GanttView::SetOps(const std::vector<OpRecord>* ops, const ParallelConfig& parallel) {
  ops_ = ops;
  model_ = TimelineModel(*ops, parallel);
  full_end_us_ = std::max(1.0, model_.end_us());
  items_.clear();
  ResetWindow();
  updateGeometry();
}

void GanttView::SetFullSpan(double end_us) {
  full_end_us_ = std::max(1.0, end_us);
  ResetWindow();
}

void GanttView::ResetWindow() { SetWindow(0, full_end_us_); }

void GanttView::SetWindow(double t0, double t1) {
  const double span = std::clamp(t1 - t0, 1.0, full_end_us_ * 1.5);
  t0 = std::clamp(t0, -0.25 * full_end_us_, full_end_us_);
  t1 = t0 + span;
  if (t0 == t0_us_ && t1 == t1_us_) return;
  t0_us_ = t0;
  t1_us_ = t1;
  update();
  emit windowChanged(t0_us_, t1_us_);
}

QRectF GanttView::PlotRect() const {
  // As tall as the rows need at 13 px per unit of row weight (compute rows 2, comm lanes 1), at most the space.
  double weight = 0;
  for (const TimelineRow& r : model_.rows()) weight += RowWeight(r.lane);
  const double space = std::max(10.0, height() - kTitleHeight - kAxisHeight - kLegendHeight);
  return QRectF(kLabelWidth, kTitleHeight, std::max(10.0, width() - kLabelWidth - 10),
                weight > 0 ? std::min(space, weight * 13.0) : space);
}

QRectF GanttView::RowRect(int row) const {
  const auto& rows = model_.rows();
  if (row < 0 || row >= static_cast<int>(rows.size())) return {};
  double total = 0, before = 0;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    if (i == row) before = total;
    total += RowWeight(rows[i].lane);
  }
  const QRectF plot = PlotRect();
  const double unit = std::min(13.0, plot.height() / total);
  return QRectF(plot.left(), plot.top() + before * unit, plot.width(), RowWeight(rows[row].lane) * unit);
}

double GanttView::XOf(double t_us) const {
  const QRectF plot = PlotRect();
  return plot.left() + (t_us - t0_us_) * plot.width() / (t1_us_ - t0_us_);
}

double GanttView::TimeAt(double x) const {
  const QRectF plot = PlotRect();
  return t0_us_ + (x - plot.left()) * (t1_us_ - t0_us_) / plot.width();
}

int GanttView::OpAt(const QPoint& p) const {
  if (!PlotRect().contains(p)) return -1;
  for (int r = 0; r < static_cast<int>(model_.rows().size()); ++r) {
    const QRectF rr = RowRect(r);
    if (p.y() >= rr.top() && p.y() < rr.bottom()) {
      const double tol_us = 2.0 * (t1_us_ - t0_us_) / PlotRect().width();  // 2 pixels
      return model_.HitTest(r, TimeAt(p.x() + 0.5), tol_us);
    }
  }
  return -1;
}

QPointF GanttView::PointOf(int op) const {
  if (ops_ == nullptr || op < 0 || op >= static_cast<int>(ops_->size())) return {};
  const OpRecord& o = (*ops_)[op];
  const QRectF rr = RowRect(model_.RowOf(o));
  return QPointF(XOf(o.start_us + o.duration_us / 2), rr.center().y());
}

QString GanttView::TooltipText(int op) const {
  if (ops_ == nullptr || op < 0 || op >= static_cast<int>(ops_->size())) return {};
  const OpRecord& o = (*ops_)[op];
  QString s = QString("<b>%1</b>, device %2, lane %3<br>")
                  .arg(OpKindName(o.kind))
                  .arg(o.device)
                  .arg(LaneName(o.lane));
  if (o.micro_batch >= 0) s += QString("micro-batch %1, ").arg(o.micro_batch);
  s += QString("chunk %1<br>").arg(o.chunk);
  s += QString("start %1 ms, duration %2 ms")
           .arg(o.start_us / 1e3, 0, 'f', 3)
           .arg(o.duration_us / 1e3, 0, 'f', 3);
  if (o.bytes > 0) s += QString("<br>%1 MB moved").arg(o.bytes / 1e6, 0, 'f', 2);
  if (o.tokens > 0) s += QString("<br>%1 tokens").arg(o.tokens);
  if (o.spans > 0) s += QString(", %1 samples").arg(o.spans);
  return s;
}

void GanttView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const QRectF plot = PlotRect();
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(QRectF(8, 2, width() - 16, kTitleHeight - 4), Qt::AlignLeft | Qt::AlignVCenter,
             title_.isEmpty() ? QString("Timeline of one iteration") : title_);
  p.setFont(font());
  const auto& rows = model_.rows();
  if (rows.empty()) {
    p.drawText(plot, Qt::AlignCenter,
               "no ops for this run (a sweep row keeps none: run it to see its timeline)");
    items_.clear();
    return;
  }
  // Row labels and backgrounds: compute rows shaded where there is no compute (bubbles and idle).
  const QColor no_compute(0xf7, 0xdc, 0xdc), lane_bg(0xf3, 0xf3, 0xf3);
  const double x_full0 = std::max(plot.left(), XOf(0)), x_full1 = std::min(plot.right(), XOf(full_end_us_));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.8));
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    const QRectF rr = RowRect(r);
    const bool compute = rows[r].lane == Lane::kCompute;
    if (rr.height() >= (compute ? 8 : 11)) {
      p.setFont(compute ? font() : small);
      p.setPen(compute ? Qt::black : QColor(0x77, 0x77, 0x77));
      p.drawText(QRectF(4, rr.top() - 2, kLabelWidth - 8, rr.height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
                 QString::fromStdString(rows[r].label));
    }
  }
  p.setFont(font());
  // Ops (level of detail: TimelineModel::Layout).
  model_.Layout(t0_us_, t1_us_, static_cast<int>(std::ceil(plot.width())), items_);
  // Row backgrounds and ops filled as pixel spans into one opaque image (cost: ops + pixels, whatever the number
  // of items; an aggregate's shade is blended with its row's background here), then drawn once.
  const QRect px = plot.toAlignedRect().intersected(rect());
  QImage strip(px.size(), QImage::Format_RGB32);
  strip.fill(Qt::white);
  uchar* const bits = strip.bits();  // detached once (scanLine() checks for a detach on every call)
  const qsizetype bytes_per_line = strip.bytesPerLine();
  auto fill = [&](int y0, int y1, int x0, int x1, QRgb rgb) {
    for (int y = y0; y < y1; ++y) {
      QRgb* line = reinterpret_cast<QRgb*>(bits + y * bytes_per_line);
      std::fill(line + x0, line + x1, rgb);
    }
  };
  struct Band {
    int y0, y1;  // items [y0, y1); the background starts one pixel higher
    QColor bg;
  };
  std::vector<Band> bands(rows.size());
  const int bg_x0 = std::clamp(static_cast<int>(std::floor(x_full0)) - px.left(), 0, px.width());
  const int bg_x1 = std::clamp(static_cast<int>(std::floor(x_full1)) - px.left(), 0, px.width());
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    const QRectF rr = RowRect(r);
    const int top = std::clamp(static_cast<int>(std::floor(rr.top())) - px.top(), 0, px.height());
    const int y0 = std::clamp(static_cast<int>(std::floor(rr.top() + 1)) - px.top(), 0, px.height());
    const int y1 = std::clamp(static_cast<int>(std::floor(rr.bottom() - 1)) - px.top(), 0, px.height());
    bands[r] = {y0, std::max(y1, std::min(y0 + 1, px.height())),
                rows[r].lane == Lane::kCompute ? no_compute : lane_bg};
    if (bg_x1 > bg_x0) fill(top, bands[r].y1, bg_x0, bg_x1, bands[r].bg.rgb());
  }
  const double scale = plot.width() / (t1_us_ - t0_us_), left = plot.left() - px.left();
  for (const TimelineItem& it : items_) {
    int x0 = static_cast<int>(std::floor(left + (it.start_us - t0_us_) * scale));
    int x1 = static_cast<int>(std::floor(left + (it.end_us - t0_us_) * scale));
    if (x1 <= x0) x1 = x0 + 1;
    x0 = std::clamp(x0, 0, px.width());
    x1 = std::clamp(x1, 0, px.width());
    if (x1 <= x0) continue;
    const Band& band = bands[it.row];
    const uint32_t c = OpKindColor(it.kind);
    const double a = it.op < 0 ? 0.35 + 0.65 * it.fill : 1.0;
    auto mix = [a](int fg, int bg) { return static_cast<int>(a * fg + (1 - a) * bg + 0.5); };
    const QRgb rgb = qRgb(mix((c >> 16) & 0xff, band.bg.red()), mix((c >> 8) & 0xff, band.bg.green()),
                          mix(c & 0xff, band.bg.blue()));
    fill(band.y0, band.y1, x0, x1, rgb);
  }
  p.drawImage(px.topLeft(), strip);
  // Time axis (ms).
  const double span_ms = (t1_us_ - t0_us_) / 1e3, step = NiceStep(span_ms, 10);
  p.setPen(Qt::black);
  p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()));
  for (double t = std::ceil(t0_us_ / 1e3 / step) * step; t <= t1_us_ / 1e3 + 1e-9; t += step) {
    const double x = XOf(t * 1e3);
    p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 4));
    p.drawText(QRectF(x - 40, plot.bottom() + 4, 80, 14), Qt::AlignCenter, TickLabel(t, step));
  }
  p.drawText(QRectF(plot.left(), plot.bottom() + 18, plot.width(), 14), Qt::AlignCenter,
             interactive_
                 ? "time in the iteration (ms) - wheel: zoom, drag: pan, double click: whole iteration"
                 : "time in the iteration (ms)");
  // Legend.
  double lx = 8;
  const double ly = plot.bottom() + kAxisHeight + 14;
  for (const LegendEntry& e : OpKindLegend()) DrawLegendSwatch(p, lx, ly, Rgb(e.color), e.label);
  DrawLegendSwatch(p, lx, ly, no_compute, "no compute (bubble / idle)");
}

void GanttView::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (steps == 0) return;
  const double factor = std::pow(1.25, -steps);
  const double t = TimeAt(e->position().x());
  SetWindow(t - (t - t0_us_) * factor, t + (t1_us_ - t) * factor);
  e->accept();
}

void GanttView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  dragging_ = true;
  drag_x_ = e->position().x();
  drag_t0_ = t0_us_;
  setCursor(Qt::ClosedHandCursor);
}

void GanttView::mouseMoveEvent(QMouseEvent* e) {
  if (!dragging_) return;
  const double dt = (e->position().x() - drag_x_) * (t1_us_ - t0_us_) / PlotRect().width();
  const double span = t1_us_ - t0_us_;
  SetWindow(drag_t0_ - dt, drag_t0_ - dt + span);
}

void GanttView::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = false;
  unsetCursor();
}

void GanttView::mouseDoubleClickEvent(QMouseEvent*) { ResetWindow(); }

bool GanttView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int op = OpAt(help->pos());
    if (op >= 0)
      QToolTip::showText(help->globalPos(), TooltipText(op), this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

// ---- CompareView ----

HistoryView::HistoryView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* help = new QLabel(
      "Every run of this session. Double-click a run to show it; select two and Compare (the older is A).",
      this);
  help->setWordWrap(true);
  layout->addWidget(help);
  table_ = new QTableWidget(this);
  QStringList headers = {"#", "finished", "engine", "changed from the run before"};
  for (const std::string& name : MetricNames())
    for (const HeadlineMetric& m : HeadlineMetrics())
      if (name == m.name) headers << m.label;
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::MultiSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
  layout->addWidget(table_, 1);
  auto* buttons = new QHBoxLayout();
  auto* show = new QPushButton("Show", this);
  auto* compare = new QPushButton("Compare (older = A)", this);
  buttons->addWidget(show);
  buttons->addWidget(compare);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  QObject::connect(table_, &QTableWidget::cellDoubleClicked, this,
                   [this](int row, int) { emit showRequested(row); });
  QObject::connect(show, &QPushButton::clicked, this, [this] {
    if (table_->currentRow() >= 0) emit showRequested(table_->currentRow());
  });
  QObject::connect(compare, &QPushButton::clicked, this, [this] { CompareSelected(); });
}

const std::vector<std::string>& HistoryView::MetricNames() {
  static const std::vector<std::string> kNames = {"iteration_time_us/p50", "gpu_days", "tokens_per_s", "mfu",
                                                  "oom"};
  return kNames;
}

void HistoryView::Add(const RunData& run) {
  HistoryEntry e;
  e.number = entries_.empty() ? 1 : entries_.back().number + 1;
  e.finished = QTime::currentTime().toString("HH:mm:ss");
  e.summary = run.summary;
  e.scenario_yaml = run.scenario_yaml;
  e.dir = run.dir;
  if (entries_.empty()) {
    e.changes = "first run";
  } else {
    auto changes = ScenarioChanges(entries_.back().scenario_yaml, run.scenario_yaml);
    e.changes = changes.ok() ? QString::fromStdString(FormatChanges(*changes, 4))
                             : QString::fromStdString("(not compared: " + changes.error().message() + ")");
  }
  if (static_cast<int>(entries_.size()) == kMaxEntries) {
    entries_.erase(entries_.begin());
    table_->removeRow(0);
  }
  entries_.push_back(std::move(e));
  AddRow(entries_.back());
}

void HistoryView::AddRow(const HistoryEntry& e) {
  const int r = table_->rowCount();
  table_->insertRow(r);
  table_->setItem(r, 0, NumberItem(QString::number(e.number), e.number));
  table_->setItem(r, 1, TextItem(e.finished));
  table_->setItem(r, 2, TextItem(QString::fromStdString(e.summary.engine)));
  QTableWidgetItem* changes = TextItem(e.changes);
  changes->setToolTip(QString::fromStdString(e.dir));
  table_->setItem(r, 3, changes);
  int col = 4;
  for (const std::string& name : MetricNames())
    for (const HeadlineMetric& m : HeadlineMetrics())
      if (name == m.name) {
        const double v = m.get(e.summary);
        table_->setItem(r, col++, NumberItem(MetricText(m, v), v));
      }
  table_->scrollToBottom();
}

bool HistoryView::CompareSelected() {
  std::vector<int> rows;
  for (const QModelIndex& i : table_->selectionModel()->selectedRows()) rows.push_back(i.row());
  if (rows.size() != 2) return false;
  std::sort(rows.begin(), rows.end());
  emit compareRequested(rows[0], rows[1]);
  return true;
}

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel("Pin a run (A), change knobs and run again (B); or open two run folders.", this);
  title_->setWordWrap(true);
  layout->addWidget(title_);
  auto* tables = new QSplitter(Qt::Horizontal, this);
  summary_ = new QTableWidget(this);
  summary_->setColumnCount(4);
  summary_->setHorizontalHeaderLabels({"A", "B", "B - A", "B / A"});
  summary_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  stages_ = new QTableWidget(this);
  stages_->verticalHeader()->setVisible(false);
  stages_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  tables->addWidget(summary_);
  tables->addWidget(stages_);
  auto* timelines = new QSplitter(Qt::Vertical, this);
  gantt_a_ = new GanttView(this);
  gantt_b_ = new GanttView(this);
  timelines->addWidget(gantt_a_);
  timelines->addWidget(gantt_b_);
  auto* all = new QSplitter(Qt::Vertical, this);
  all->addWidget(tables);
  all->addWidget(timelines);
  all->setSizes({320, 560});
  layout->addWidget(all, 1);
  // One time scale: a zoom or pan on either timeline moves the other (SetWindow ignores an unchanged window).
  QObject::connect(gantt_a_, &GanttView::windowChanged, gantt_b_, &GanttView::SetWindow);
  QObject::connect(gantt_b_, &GanttView::windowChanged, gantt_a_, &GanttView::SetWindow);
}

void CompareView::SetRuns(const RunData* a, const RunData* b) {
  auto describe = [](const RunData* r) {
    if (r == nullptr) return QString("(none)");
    const RunSummary& s = r->summary;
    const ParallelConfig& p = s.parallel;
    return QString::fromStdString(s.scenario + " [" + RecordSourceName(s.source) + ", " + s.engine +
                                  "]: dp " + std::to_string(p.dp) + " x tp " + std::to_string(p.tp) +
                                  " x pp " + std::to_string(p.pp) + ", " + std::to_string(p.micro_batches) +
                                  " micro-batches; data " + s.data_policy.name + ", partition " +
                                  s.partition_policy.name + ", recompute " + s.recompute_policy.name +
                                  ", schedule " + s.schedule_policy.name);
  };
  title_->setText("<b>A</b>: " + describe(a) + "<br><b>B</b>: " + describe(b));
  title_->setToolTip(
      QString::fromStdString("A: " + (a ? a->dir : std::string()) + "\nB: " + (b ? b->dir : std::string())));
  const auto& metrics = HeadlineMetrics();
  summary_->setRowCount(static_cast<int>(metrics.size()));
  for (int i = 0; i < static_cast<int>(metrics.size()); ++i) {
    const HeadlineMetric& m = metrics[i];
    summary_->setVerticalHeaderItem(i, MetricHeader(m, m.label));
    const double va = a ? m.get(a->summary) : 0, vb = b ? m.get(b->summary) : 0;
    summary_->setItem(i, 0, a ? NumberItem(MetricText(m, va), va) : TextItem("-"));
    summary_->setItem(i, 1, b ? NumberItem(MetricText(m, vb), vb) : TextItem("-"));
    if (a && b) {
      summary_->setItem(i, 2, DeltaItem(m, vb - va));
      summary_->setItem(i, 3,
                        va != 0 ? NumberItem(QString::number(vb / va, 'f', 3), vb / va) : TextItem("-"));
    } else {
      summary_->setItem(i, 2, TextItem("-"));
      summary_->setItem(i, 3, TextItem("-"));
    }
  }
  // Per stage: B - A of each stage metric (stages present in both).
  const auto& stage_metrics = StageMetrics();
  stages_->clear();
  stages_->setColumnCount(1 + static_cast<int>(stage_metrics.size()));
  stages_->setHorizontalHeaderItem(0, new QTableWidgetItem("stage"));
  for (int k = 0; k < static_cast<int>(stage_metrics.size()); ++k)
    stages_->setHorizontalHeaderItem(1 + k,
                                     MetricHeader(stage_metrics[k], QString("d ") + stage_metrics[k].label));
  const size_t n = (a && b) ? std::min(a->summary.stages.size(), b->summary.stages.size()) : 0;
  stages_->setRowCount(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) {
    const StageRecord &sa = a->summary.stages[i], &sb = b->summary.stages[i];
    const int r = static_cast<int>(i);
    stages_->setItem(r, 0, NumberItem(QString::number(sa.stage), sa.stage));
    for (int k = 0; k < static_cast<int>(stage_metrics.size()); ++k) {
      const StageMetric& m = stage_metrics[k];
      stages_->setItem(r, 1 + k, DeltaItem(m, m.get(sb) - m.get(sa)));
    }
  }
  gantt_a_->SetRun(a);
  gantt_b_->SetRun(b);
  gantt_a_->SetTitle("A: " + describe(a));
  gantt_b_->SetTitle("B: " + describe(b));
  const double end = std::max(gantt_a_->model().end_us(), gantt_b_->model().end_us());
  gantt_a_->SetFullSpan(end);
  gantt_b_->SetFullSpan(end);
}

// ---- HeatmapView ----

HeatmapView::HeatmapView(QWidget* parent) : QWidget(parent) { setMinimumSize(360, 240); }

void HeatmapView::SetHeatmap(Heatmap h) {
  heatmap_ = std::move(h);
  update();
}

QRectF HeatmapView::GridRect() const { return QRectF(rect()).adjusted(150, 52, -90, -50); }

QRectF HeatmapView::CellRect(int x, int y) const {
  const int nx = static_cast<int>(heatmap_.x_values.size()), ny = static_cast<int>(heatmap_.y_values.size());
  if (x < 0 || y < 0 || x >= nx || y >= ny) return {};
  const QRectF g = GridRect();
  const double w = g.width() / nx, h = g.height() / ny;
  // y grows upwards: the first y value at the bottom.
  return QRectF(g.left() + x * w, g.bottom() - (y + 1) * h, w, h);
}

int HeatmapView::CellAt(const QPointF& p) const {
  for (int i = 0; i < static_cast<int>(heatmap_.cells.size()); ++i)
    if (CellRect(heatmap_.cells[i].x, heatmap_.cells[i].y).contains(p)) return i;
  return -1;
}

namespace {
QColor HeatColor(double f) {  // 0 light .. 1 dark blue
  f = std::clamp(f, 0.0, 1.0);
  const QColor lo(0xf7, 0xfb, 0xff), hi(0x08, 0x30, 0x6b);
  return QColor(static_cast<int>(lo.red() + f * (hi.red() - lo.red())),
                static_cast<int>(lo.green() + f * (hi.green() - lo.green())),
                static_cast<int>(lo.blue() + f * (hi.blue() - lo.blue())));
}
QString CellNumber(double v) { return QString::number(v, 'g', 4); }
}  // namespace

void HeatmapView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const Heatmap& h = heatmap_;
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  const bool opens_runs =
      std::any_of(h.cells.begin(), h.cells.end(), [](const HeatmapCell& c) { return c.run >= 0; });
  p.drawText(QRectF(8, 4, width() - 16, 20), Qt::AlignLeft,
             h.metric.empty()
                 ? QString("Open a sweep database (SQLite)")
                 : QString::fromStdString(h.metric + " by " + h.x_axis +
                                          (h.y_axis.empty() ? "" : " and " + h.y_axis) +
                                          (opens_runs ? "  (click a cell to open its run)" : "")));
  p.setFont(font());
  if (h.x_values.empty()) return;
  const double range = h.max > h.min ? h.max - h.min : 1;
  for (const HeatmapCell& c : h.cells) {
    const QRectF r = CellRect(c.x, c.y).adjusted(1, 1, -1, -1);
    const double f = (c.value - h.min) / range;
    p.fillRect(r, c.ok ? HeatColor(f) : QColor(0xee, 0xee, 0xee));
    p.setPen(c.ok && f > 0.55 ? Qt::white : Qt::black);
    if (c.ok) {
      p.drawText(r, Qt::AlignCenter, CellNumber(c.value));
    } else {
      p.setPen(QColor(0xd6, 0x27, 0x28));
      p.drawLine(r.topLeft(), r.bottomRight());
      p.drawText(r, Qt::AlignCenter, "error");
    }
  }
  p.setPen(Qt::black);
  const QRectF g = GridRect();
  for (int x = 0; x < static_cast<int>(h.x_values.size()); ++x) {
    const QRectF r = CellRect(x, 0);
    p.drawText(QRectF(r.left(), g.bottom() + 4, r.width(), 16), Qt::AlignCenter,
               QString::fromStdString(h.x_values[x]));
  }
  for (int y = 0; y < static_cast<int>(h.y_values.size()); ++y) {
    const QRectF r = CellRect(0, y);
    p.drawText(QRectF(4, r.top(), g.left() - 10, r.height()), Qt::AlignRight | Qt::AlignVCenter,
               QString::fromStdString(h.y_values[y]));
  }
  p.setFont(bold);
  p.drawText(QRectF(g.left(), g.bottom() + 24, g.width(), 18), Qt::AlignCenter,
             QString::fromStdString(h.x_axis));
  p.drawText(QRectF(4, g.top() - 22, g.left() - 10, 18), Qt::AlignRight | Qt::AlignVCenter,
             QString::fromStdString(h.y_axis));
  p.setFont(font());
  // Colour scale.
  const QRectF scale(g.right() + 16, g.top(), 16, g.height());
  for (int i = 0; i < 64; ++i)
    p.fillRect(QRectF(scale.left(), scale.bottom() - (i + 1) * scale.height() / 64, scale.width(),
                      scale.height() / 64 + 1),
               HeatColor(i / 63.0));
  p.drawRect(scale);
  p.drawText(QRectF(scale.right() + 2, scale.top() - 8, 70, 16), Qt::AlignLeft, CellNumber(h.max));
  p.drawText(QRectF(scale.right() + 2, scale.bottom() - 8, 70, 16), Qt::AlignLeft, CellNumber(h.min));
}

void HeatmapView::mousePressEvent(QMouseEvent* e) {
  const int i = CellAt(e->position());
  if (i >= 0) emit runClicked(heatmap_.cells[i].run);
}

// ---- ReplayView ----

ReplayView::ReplayView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  path_ = new QLabel(
      "Replay a run folder (File > Replay a run folder...): its recorded timeline through the "
      "dependency model, and what balanced data, balanced stages, no slow device and no stalled pass would "
      "give.",
      this);
  path_->setWordWrap(true);
  layout->addWidget(path_);
  table_ = new QTableWidget(this);
  const QStringList headers = {"iteration",    "recorded ms",   "replayed ms", "error",   "data ms",
                               "partition ms", "stragglers ms", "stalls ms",   "ideal ms"};
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  layout->addWidget(table_, 1);
  attribution_ = new QLabel(this);
  attribution_->setWordWrap(true);
  layout->addWidget(attribution_);
  heatmap_ = new HeatmapView(this);
  layout->addWidget(heatmap_, 2);
}

Status ReplayView::Open(const std::string& dir) {
  MMTWIN_ASSIGN_OR_RETURN(ReplayReport r, ReplayRunFolder(dir, {}));
  report_ = std::move(r);
  path_->setText(QString::fromStdString(report_.run_dir + " (" + RecordSourceName(report_.source) + ")"));
  auto ms = [](double us) { return QString::number(us / 1e3, 'f', 1); };
  // The mean first (bold), so that it shows without scrolling; then the steps in the run's order.
  std::vector<ReplayIteration> rows;
  if (report_.iterations.size() > 1) rows.push_back(report_.mean);
  rows.insert(rows.end(), report_.iterations.begin(), report_.iterations.end());
  table_->setRowCount(static_cast<int>(rows.size()));
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const ReplayIteration& it = rows[i];
    const double e = it.recorded_us > 0 ? 100.0 * (it.replayed_us / it.recorded_us - 1) : 0.0;
    const QStringList cells = {it.iteration >= 0 ? QString::number(it.iteration) : QString("mean"),
                               ms(it.recorded_us),
                               ms(it.replayed_us),
                               QString("%1%2%").arg(e >= 0 ? "+" : "").arg(e, 0, 'f', 1),
                               ms(it.data_us),
                               ms(it.partition_us),
                               ms(it.stragglers_us),
                               ms(it.stalls_us),
                               ms(it.ideal_us)};
    for (int c = 0; c < static_cast<int>(cells.size()); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (it.iteration < 0) {
        QFont bold = item->font();
        bold.setBold(true);
        item->setFont(bold);
      }
      table_->setItem(i, c, item);
    }
  }
  const ReplayIteration& m = report_.mean;
  auto share = [&](double whatif) {
    return QString("%1 ms (%2%)")
        .arg((m.replayed_us - whatif) / 1e3, 0, 'f', 1)
        .arg(m.replayed_us > 0 ? 100.0 * (m.replayed_us - whatif) / m.replayed_us : 0.0, 0, 'f', 1);
  };
  attribution_->setText("What each costs this job (replayed - what-if): data imbalance " + share(m.data_us) +
                        ", partition imbalance " + share(m.partition_us) + ", slow devices " +
                        share(m.stragglers_us) + ", stalls " + share(m.stalls_us) + ", all four " +
                        share(m.ideal_us) + ". Below: each device's slowdown against its replicas, by step.");
  heatmap_->SetHeatmap(ReplayHeatmap(report_));
  return Status();
}

// ---- SweepView ----

SweepView::SweepView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* row = new QHBoxLayout();
  metric_ = new QComboBox(this);
  x_ = new QComboBox(this);
  y_ = new QComboBox(this);
  row->addWidget(new QLabel("metric", this));
  row->addWidget(metric_, 2);
  row->addWidget(new QLabel("x axis", this));
  row->addWidget(x_, 1);
  row->addWidget(new QLabel("y axis", this));
  row->addWidget(y_, 1);
  layout->addLayout(row);
  filters_ = new QWidget(this);
  new QHBoxLayout(filters_);
  filters_->layout()->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(filters_);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  layout->addWidget(status_);
  heatmap_ = new HeatmapView(this);
  layout->addWidget(heatmap_, 1);
  for (QComboBox* b : {metric_, x_, y_})
    QObject::connect(b, &QComboBox::currentIndexChanged, this, [this] { Rebuild(); });
  QObject::connect(heatmap_, &HeatmapView::runClicked, this, &SweepView::runOpened);
}

Status SweepView::Open(const std::string& db_path) {
  MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<ResultsDb> db, ResultsDb::OpenReadOnly(db_path));
  MMTWIN_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, db->Runs());
  runs_ = std::move(runs);
  path_ = QString::fromStdString(db_path);
  base_dirs_.clear();
  if (Result<std::vector<SweepInfo>> sweeps = db->Sweeps(); sweeps.ok())
    for (const SweepInfo& info : *sweeps)
      if (Result<SweepSpec> spec = LoadSweep(info.path); spec.ok()) base_dirs_[info.name] = spec->base_dir;
  const auto axes = SweepAxes(runs_);
  {
    QSignalBlocker b1(metric_), b2(x_), b3(y_);
    metric_->clear();
    for (const std::string& m : HeatmapMetrics()) metric_->addItem(QString::fromStdString(m));
    // GPU-days of the epoch: the cost a sweep is usually run to minimise.
    const int gpu_days = metric_->findText("gpu_days"), p50 = metric_->findText("iteration_time_us_p50");
    metric_->setCurrentIndex(std::max(0, gpu_days >= 0 ? gpu_days : p50));
    x_->clear();
    y_->clear();
    y_->addItem("(none)");
    for (const auto& [name, values] : axes) {
      x_->addItem(QString::fromStdString(name));
      y_->addItem(QString::fromStdString(name));
    }
    x_->setCurrentIndex(0);
    y_->setCurrentIndex(axes.size() > 1 ? 2 : 0);
  }
  Rebuild();
  return Status();
}

std::string SweepView::BaseDirOf(const std::string& sweep) const {
  auto it = base_dirs_.find(sweep);
  if (it != base_dirs_.end()) return it->second;
  return QFileInfo(path_).absolutePath().toStdString();
}

bool SweepView::Choose(const std::string& metric, const std::string& x_axis, const std::string& y_axis) {
  const int m = metric_->findText(QString::fromStdString(metric)),
            x = x_->findText(QString::fromStdString(x_axis)),
            y = y_axis.empty() ? 0 : y_->findText(QString::fromStdString(y_axis));
  if (m < 0 || x < 0 || y < 0) return false;
  QSignalBlocker b1(metric_), b2(x_), b3(y_);
  metric_->setCurrentIndex(m);
  x_->setCurrentIndex(x);
  y_->setCurrentIndex(y);
  Rebuild();
  return true;
}

bool SweepView::SetFilter(const std::string& axis, const std::string& value) {
  auto it = filter_boxes_.find(axis);
  if (it == filter_boxes_.end()) return false;
  const int i = it->second->findText(QString::fromStdString(value));
  if (i < 0) return false;
  it->second->setCurrentIndex(i);  // rebuilds
  return true;
}

QString SweepView::error() const { return status_->text(); }

void SweepView::Rebuild() {
  const std::string metric = metric_->currentText().toStdString(), x = x_->currentText().toStdString(),
                    y = y_->currentIndex() <= 0 ? "" : y_->currentText().toStdString();
  // Filters: one combo per other axis (keeping its choice), defaulting to the axis' first value so that each
  // cell is one run.
  std::map<std::string, std::string> filters;
  std::map<std::string, QString> kept;
  for (auto& [axis, box] : filter_boxes_) kept[axis] = box->currentText();
  QLayout* fl = filters_->layout();
  // Deleted later: this may run inside one of these combo boxes' own signals.
  while (QLayoutItem* item = fl->takeAt(0)) {
    if (QWidget* old = item->widget()) {
      old->hide();
      old->disconnect(this);
      old->deleteLater();
    }
    delete item;
  }
  filter_boxes_.clear();
  for (const auto& [axis, values] : SweepAxes(runs_)) {
    if (axis == x || axis == y) continue;
    fl->addWidget(new QLabel(QString::fromStdString(axis) + " =", filters_));
    auto* box = new QComboBox(filters_);
    for (const std::string& v : values) box->addItem(QString::fromStdString(v));
    const int k = kept.count(axis) ? box->findText(kept[axis]) : -1;
    box->setCurrentIndex(std::max(0, k));
    filters[axis] = box->currentText().toStdString();
    QObject::connect(box, &QComboBox::currentIndexChanged, this, [this] { Rebuild(); });
    fl->addWidget(box);
    filter_boxes_[axis] = box;
  }
  static_cast<QHBoxLayout*>(fl)->addStretch(1);
  if (runs_.empty()) {
    status_->setText(path_.isEmpty() ? "" : path_ + ": no runs");
    heatmap_->SetHeatmap({});
    return;
  }
  Result<Heatmap> h = BuildHeatmap(runs_, metric, x, y, filters);
  if (!h.ok()) {
    status_->setText(QString::fromStdString(h.error().message()));
    heatmap_->SetHeatmap({});
    return;
  }
  status_->setText(QString("%1: %2 runs, %3 shown")
                       .arg(QFileInfo(path_).fileName())
                       .arg(runs_.size())
                       .arg(h->cells.size()));
  heatmap_->SetHeatmap(std::move(*h));
}

// ---- Tune ----

TuneScatter::TuneScatter(QWidget* parent) : QWidget(parent) {
  setMinimumSize(320, 240);
  setMouseTracking(true);
}

void TuneScatter::SetPoints(std::vector<Point> points, QString y_label) {
  points_ = std::move(points);
  y_label_ = std::move(y_label);
  double x_max = 0, y_max = 0;
  for (const Point& q : points_) {
    x_max = std::max(x_max, q.peak_gib);
    y_max = std::max(y_max, q.objective);
  }
  const double xs = NiceStep(x_max, 6), ys = NiceStep(y_max, 6);
  x_top_ = std::max(xs, std::ceil(x_max / xs) * xs);
  y_top_ = std::max(ys, std::ceil(y_max / ys) * ys);
  update();
}

QRectF TuneScatter::PlotRect() const { return QRectF(70, 30, width() - 90, height() - 80); }

QPointF TuneScatter::PointPos(int i) const {
  const QRectF r = PlotRect();
  const Point& q = points_.at(static_cast<size_t>(i));
  return {r.left() + r.width() * q.peak_gib / x_top_, r.bottom() - r.height() * q.objective / y_top_};
}

int TuneScatter::PointAt(const QPointF& pos) const {
  int best = -1;
  double best_d2 = 8.0 * 8.0;
  for (int i = 0; i < static_cast<int>(points_.size()); ++i) {
    const QPointF d = PointPos(i) - pos;
    const double d2 = d.x() * d.x() + d.y() * d.y();
    if (d2 < best_d2 || (best < 0 && d2 <= best_d2)) {  // ties (points drawn on one another): the better rank
      best_d2 = d2;
      best = i;
    }
  }
  return best;
}

void TuneScatter::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), Qt::white);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(QRectF(8, 4, width() - 16, 20), Qt::AlignLeft,
             points_.empty()
                 ? QString("Open a tune search's database (mmtwin tune ... --db FILE, or DIR.sqlite)")
                 : QString("%1 against peak memory: %2 configurations that fit, the Pareto front "
                           "joined, the best ringed (click a point to open its run)")
                       .arg(y_label_)
                       .arg(points_.size()));
  p.setFont(font());
  if (points_.empty()) return;
  const QRectF r = PlotRect();
  const double xs = NiceStep(x_top_, 6), ys = NiceStep(y_top_, 6);
  p.setPen(QColor(0xe0, 0xe0, 0xe0));
  for (double x = 0; x <= x_top_ + 1e-9; x += xs) {
    const double px = r.left() + r.width() * x / x_top_;
    p.drawLine(QPointF(px, r.top()), QPointF(px, r.bottom()));
  }
  for (double y = 0; y <= y_top_ + 1e-9; y += ys) {
    const double py = r.bottom() - r.height() * y / y_top_;
    p.drawLine(QPointF(r.left(), py), QPointF(r.right(), py));
  }
  p.setPen(Qt::black);
  p.drawLine(r.bottomLeft(), r.bottomRight());
  p.drawLine(r.bottomLeft(), r.topLeft());
  for (double x = 0; x <= x_top_ + 1e-9; x += xs) {
    const double px = r.left() + r.width() * x / x_top_;
    p.drawText(QRectF(px - 30, r.bottom() + 4, 60, 16), Qt::AlignCenter, TickLabel(x, xs));
  }
  for (double y = 0; y <= y_top_ + 1e-9; y += ys) {
    const double py = r.bottom() - r.height() * y / y_top_;
    p.drawText(QRectF(0, py - 8, r.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter, TickLabel(y, ys));
  }
  p.drawText(QRectF(r.left(), r.bottom() + 22, r.width(), 18), Qt::AlignCenter,
             "peak memory per GPU, worst stage (GiB)");
  p.save();
  p.translate(14, r.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-r.height() / 2, -10, r.height(), 20), Qt::AlignCenter, y_label_);
  p.restore();
  const report::Rgb c0 = report::SeriesColor(0), c1 = report::SeriesColor(1);
  const QColor all(c0.r, c0.g, c0.b), front(c1.r, c1.g, c1.b);
  std::vector<QPointF> line;
  for (int i = 0; i < static_cast<int>(points_.size()); ++i)
    if (points_[i].pareto) line.push_back(PointPos(i));
  std::sort(line.begin(), line.end(), [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); });
  p.setPen(QPen(front, 1.5));
  if (line.size() >= 2) p.drawPolyline(line.data(), static_cast<int>(line.size()));
  for (int i = 0; i < static_cast<int>(points_.size()); ++i) {
    const QPointF c = PointPos(i);
    const bool on = points_[i].pareto;
    p.setPen(QPen(on ? front.darker(130) : all.darker(120), 1));
    p.setBrush(on ? front : all);
    p.drawEllipse(c, on ? 4.5 : 3.0, on ? 4.5 : 3.0);
    if (points_[i].best) {
      p.setBrush(Qt::NoBrush);
      p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 2));
      p.drawEllipse(c, 8.0, 8.0);
    }
  }
  // Legend.
  p.setPen(Qt::black);
  const double lx = r.right() - 230, ly = r.top() + 6;
  p.setBrush(all);
  p.drawEllipse(QPointF(lx, ly + 6), 3.0, 3.0);
  p.drawText(QRectF(lx + 10, ly - 2, 220, 16), Qt::AlignLeft | Qt::AlignVCenter, "a configuration that fits");
  p.setBrush(front);
  p.drawEllipse(QPointF(lx, ly + 24), 4.5, 4.5);
  p.drawText(QRectF(lx + 10, ly + 16, 220, 16), Qt::AlignLeft | Qt::AlignVCenter, "on the Pareto front");
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 2));
  p.drawEllipse(QPointF(lx, ly + 42), 6.0, 6.0);
  p.setPen(Qt::black);
  p.drawText(QRectF(lx + 10, ly + 34, 220, 16), Qt::AlignLeft | Qt::AlignVCenter, "the best");
}

void TuneScatter::mousePressEvent(QMouseEvent* e) {
  const int i = PointAt(e->position());
  if (i >= 0) emit pointClicked(i);
}

bool TuneScatter::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int i = PointAt(help->pos());
    if (i >= 0)
      QToolTip::showText(help->globalPos(), points_[static_cast<size_t>(i)].label, this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

namespace {

QString ObjectiveText(TuneObjective o, double v) {
  switch (o) {
    case TuneObjective::kGpuDays:
      return QString::number(v, 'g', 4) + " GPU-days";
    case TuneObjective::kTokensPerS:
      return QString::number(v, 'f', 0) + " tokens/s";
    case TuneObjective::kIterationTime:
      return QString::number(v, 'f', 1) + " ms";
  }
  return {};
}

}  // namespace

TuneView::TuneView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  status_ = new QLabel(
      "Open a tune search's database: File > Open (DIR.sqlite beside `mmtwin tune`'s folder, or "
      "the folder itself).",
      this);
  status_->setWordWrap(true);
  layout->addWidget(status_);
  auto* split = new QSplitter(Qt::Vertical, this);
  scatter_ = new TuneScatter(split);
  table_ = new QTableWidget(split);
  table_->setColumnCount(5);
  table_->setHorizontalHeaderLabels(
      {"rank", "configuration", "objective", "peak memory", "bubble / exposed comm"});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  table_->setWordWrap(false);
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  split->addWidget(scatter_);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  QObject::connect(scatter_, &TuneScatter::pointClicked, this,
                   [this](int i) { OpenRanked(point_row_.at(static_cast<size_t>(i))); });
  QObject::connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { OpenRanked(row); });
}

Status TuneView::Open(const std::string& db_path) {
  MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<ResultsDb> db, ResultsDb::OpenReadOnly(db_path));
  MMTWIN_ASSIGN_OR_RETURN(std::vector<SweepInfo> sweeps, db->Sweeps());
  for (const SweepInfo& info : sweeps) {
    Result<TuneSpace> space = LoadTuneSpace(info.path);
    if (!space.ok() || space->sweep.name != info.name) continue;  // a plain sweep, or a space that moved
    MMTWIN_ASSIGN_OR_RETURN(TuneEnumeration e, EnumerateTune(*space, /*prune=*/true));
    MMTWIN_ASSIGN_OR_RETURN(std::vector<RunRecord> records, db->Runs(info.name));
    space_ = std::move(*space);
    enumeration_ = std::move(e);
    result_ = RankTune(space_, enumeration_, records);
    by_key_.clear();
    for (RunRecord& r : records) by_key_[r.run_key] = std::move(r);
    std::set<const TuneCandidate*> front;
    for (const TuneRow& r : result_.pareto) front.insert(r.candidate);
    std::vector<TuneScatter::Point> points;
    point_row_.clear();
    for (size_t i = 0; i < result_.ranked.size(); ++i) {
      const TuneRow& r = result_.ranked[i];
      TuneScatter::Point q;
      q.peak_gib = static_cast<double>(r.peak_memory_bytes) / kGiB;
      q.objective = r.objective;
      q.pareto = front.count(r.candidate) > 0;
      q.best = i == 0;
      q.label = QString("rank %1: %2\n%3, peak %4")
                    .arg(i + 1)
                    .arg(QString::fromStdString(TuneCandidateLabel(space_, *r.candidate)))
                    .arg(ObjectiveText(space_.objective, r.objective))
                    .arg(FormatGiB(r.peak_memory_bytes));
      points.push_back(std::move(q));
      point_row_.push_back(static_cast<int>(i));
    }
    scatter_->SetPoints(std::move(points), QString::fromStdString(TuneObjectiveName(space_.objective)));
    table_->setRowCount(static_cast<int>(result_.ranked.size()));
    for (size_t i = 0; i < result_.ranked.size(); ++i) {
      const TuneRow& r = result_.ranked[i];
      const int row = static_cast<int>(i);
      table_->setItem(row, 0, NumberItem(QString::number(i + 1), static_cast<double>(i + 1)));
      table_->setItem(row, 1, TextItem(QString::fromStdString(TuneCandidateLabel(space_, *r.candidate))));
      table_->setItem(row, 2, NumberItem(ObjectiveText(space_.objective, r.objective), r.objective));
      table_->setItem(row, 3,
                      NumberItem(FormatGiB(r.peak_memory_bytes), static_cast<double>(r.peak_memory_bytes)));
      table_->setItem(row, 4,
                      TextItem(FormatPercent(r.summary.bubble_ratio) + " / " +
                               FormatPercent(r.summary.exposed_comm_ratio)));
    }
    status_->setText(
        QString("%1: space %2 (%3): %4 combinations, %5 evaluated, %6 fit, %7 on the Pareto front%8. %9")
            .arg(QString::fromStdString(db_path))
            .arg(QString::fromStdString(space_.sweep.name))
            .arg(QString::fromStdString(info.path))
            .arg(enumeration_.combinations)
            .arg(static_cast<int64_t>(enumeration_.evaluate.size()) - result_.missing)
            .arg(result_.ranked.size())
            .arg(result_.pareto.size())
            .arg(result_.missing ? QString(", %1 not in the database (skipped by the time bound, another "
                                           "shard's, or not run)")
                                       .arg(result_.missing)
                                 : QString())
            .arg(QString::fromStdString(result_.why)));
    return Status();
  }
  return Error(db_path +
               ": no tune search in it (no sweep recorded from a tune space that still loads; a "
               "plain sweep opens in the Sweep tab)");
}

const RunRecord* TuneView::RankedRecord(int i) const {
  if (i < 0 || i >= static_cast<int>(result_.ranked.size())) return nullptr;
  auto it = by_key_.find(result_.ranked[static_cast<size_t>(i)].candidate->run_key);
  return it == by_key_.end() ? nullptr : &it->second;
}

void TuneView::OpenRanked(int i) {
  if (const RunRecord* r = RankedRecord(i)) emit runOpened(*r, QString::fromStdString(space_.sweep.base_dir));
}

}  // namespace mmtwin::gui

// SPDX-License-Identifier: Apache-2.0
#include "chart.h"

#include <QBuffer>
#include <QImage>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace mmtwin::gui {
namespace {

// Series colours (Tableau 10): the paper's series first in every report, so it is always the same blue.
constexpr uint32_t kPalette[] = {0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2,
                                 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};

QColor SeriesColor(size_t i) {
  const uint32_t c = kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))];
  return QColor((c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff);
}

double MaxValue(const ChartSpec& s) {
  double m = 0;
  for (const ChartSeries& se : s.series)
    for (double v : se.values)
      if (std::isfinite(v)) m = std::max(m, v);
  return m;
}

constexpr double kTitleH = 26, kLegendH = 22, kTickW = 56, kYLabelW = 22, kRight = 16;

}  // namespace

double NiceStep(double span, int target) {
  if (!(span > 0)) return 1;
  const double raw = span / std::max(1, target);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

QString TickLabel(double v, double step) {
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return QString::number(v, 'f', decimals);
}

ChartView::ChartView(QWidget* parent) : QWidget(parent) { setAttribute(Qt::WA_OpaquePaintEvent); }

void ChartView::SetChart(ChartSpec spec) {
  spec_ = std::move(spec);
  update();
}

double ChartView::YMax() const {
  const double m = MaxValue(spec_);
  if (!(m > 0)) return 1;
  const double step = NiceStep(m * 1.08, 6);  // headroom for the values written above the bars
  return std::ceil(m * 1.08 / step) * step;
}

QRectF ChartView::PlotRect() const {
  const double top = kTitleH + kLegendH + 8;
  const double bottom = height() - (spec_.x_label.empty() ? 30 : 50);
  const double left = kYLabelW + kTickW;
  return QRectF(left, top, std::max(10.0, width() - left - kRight), std::max(10.0, bottom - top));
}

void ChartView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, true);
  p.fillRect(rect(), Qt::white);
  QFont base = font();
  QFont bold = base;
  bold.setBold(true);
  bold.setPointSizeF(base.pointSizeF() * 1.1);
  p.setFont(bold);
  p.setPen(Qt::black);
  p.drawText(QRectF(8, 4, width() - 16, kTitleH - 4), Qt::AlignHCenter | Qt::AlignVCenter,
             QString::fromStdString(spec_.title));
  p.setFont(base);

  // Legend, centred under the title.
  {
    const QFontMetrics fm = p.fontMetrics();
    double total = 0;
    for (const ChartSeries& s : spec_.series)
      total += 18 + fm.horizontalAdvance(QString::fromStdString(s.name)) + 18;
    double x = std::max(8.0, (width() - total) / 2);
    const double y = kTitleH + kLegendH / 2 + 4;
    for (size_t i = 0; i < spec_.series.size(); ++i) {
      const QColor c = SeriesColor(i);
      if (spec_.kind == ChartSpec::Kind::kBars) {
        p.fillRect(QRectF(x, y - 6, 12, 12), c);
      } else {
        p.setPen(QPen(c, 2.5));
        p.drawLine(QPointF(x - 2, y), QPointF(x + 14, y));
        p.setBrush(c);
        p.drawEllipse(QPointF(x + 6, y), 3.5, 3.5);
        p.setBrush(Qt::NoBrush);
      }
      p.setPen(Qt::black);
      const QString name = QString::fromStdString(spec_.series[i].name);
      p.drawText(QRectF(x + 18, y - 9, fm.horizontalAdvance(name) + 4, 18), Qt::AlignLeft | Qt::AlignVCenter,
                 name);
      x += 18 + fm.horizontalAdvance(name) + 18;
    }
  }

  const QRectF plot = PlotRect();
  const double ymax = YMax();
  const double step = NiceStep(ymax, 6);
  auto y_of = [&](double v) { return plot.bottom() - plot.height() * v / ymax; };
  // Grid, ticks and the y label.
  for (double v = 0; v <= ymax + step * 1e-6; v += step) {
    const double y = y_of(v);
    p.setPen(QColor(0xe4, 0xe4, 0xe4));
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    p.setPen(Qt::black);
    p.drawLine(QPointF(plot.left() - 4, y), QPointF(plot.left(), y));
    p.drawText(QRectF(kYLabelW, y - 8, kTickW - 8, 16), Qt::AlignRight | Qt::AlignVCenter,
               TickLabel(v, step));
  }
  p.save();
  p.translate(12, plot.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-plot.height() / 2, -10, plot.height(), 20), Qt::AlignCenter,
             QString::fromStdString(spec_.y_label));
  p.restore();
  p.setPen(Qt::black);
  p.drawLine(plot.bottomLeft(), plot.bottomRight());
  p.drawLine(plot.bottomLeft(), plot.topLeft());

  const int n = static_cast<int>(spec_.categories.size());
  if (n == 0) return;
  const double slot = plot.width() / n;
  QFont small = base;
  small.setPointSizeF(base.pointSizeF() * 0.85);
  for (int i = 0; i < n; ++i) {
    p.setPen(Qt::black);
    p.drawText(QRectF(plot.left() + i * slot, plot.bottom() + 4, slot, 18), Qt::AlignHCenter | Qt::AlignTop,
               QString::fromStdString(spec_.categories[i]));
  }
  if (!spec_.x_label.empty())
    p.drawText(QRectF(plot.left(), plot.bottom() + 24, plot.width(), 18), Qt::AlignHCenter | Qt::AlignTop,
               QString::fromStdString(spec_.x_label));

  const int ns = static_cast<int>(spec_.series.size());
  if (spec_.kind == ChartSpec::Kind::kBars) {
    const double group = slot * 0.8;
    const double bw = group / std::max(1, ns);
    p.setFont(small);
    for (int s = 0; s < ns; ++s) {
      const ChartSeries& se = spec_.series[s];
      for (int i = 0; i < n && i < static_cast<int>(se.values.size()); ++i) {
        const double v = se.values[i];
        if (!std::isfinite(v)) continue;
        const double x = plot.left() + i * slot + (slot - group) / 2 + s * bw;
        const QRectF bar(x + 1, y_of(v), bw - 2, plot.bottom() - y_of(v));
        p.fillRect(bar, SeriesColor(s));
        if (spec_.value_decimals >= 0 && se.show_values) {
          p.setPen(Qt::black);
          p.drawText(QRectF(x - 10, bar.top() - 16, bw + 20, 14), Qt::AlignHCenter | Qt::AlignBottom,
                     QString::number(v, 'f', spec_.value_decimals));
        }
      }
    }
    p.setFont(base);
  } else {
    for (int s = 0; s < ns; ++s) {
      const ChartSeries& se = spec_.series[s];
      const QColor c = SeriesColor(s);
      QPainterPath path;
      bool open = false;
      for (int i = 0; i < n && i < static_cast<int>(se.values.size()); ++i) {
        const double v = se.values[i];
        if (!std::isfinite(v)) {
          open = false;
          continue;
        }
        const QPointF pt(plot.left() + (i + 0.5) * slot, y_of(v));
        if (open) {
          path.lineTo(pt);
        } else {
          path.moveTo(pt);
          open = true;
        }
      }
      p.setPen(QPen(c, 2.5));
      p.setBrush(Qt::NoBrush);
      p.drawPath(path);
      p.setBrush(c);
      p.setFont(small);
      for (int i = 0; i < n && i < static_cast<int>(se.values.size()); ++i) {
        const double v = se.values[i];
        if (!std::isfinite(v)) continue;
        const QPointF pt(plot.left() + (i + 0.5) * slot, y_of(v));
        p.setPen(QPen(c, 1));
        p.drawEllipse(pt, 3.5, 3.5);
        if (spec_.value_decimals >= 0 && se.show_values) {
          p.setPen(Qt::black);
          p.drawText(QRectF(pt.x() - 40, pt.y() - 20, 80, 14), Qt::AlignHCenter | Qt::AlignBottom,
                     QString::number(v, 'f', spec_.value_decimals));
        }
      }
      p.setBrush(Qt::NoBrush);
      p.setFont(base);
    }
  }
}

Result<std::string> RenderWidgetPng(QWidget& widget, int w, int h) {
  widget.resize(w, h);
  widget.ensurePolished();
  QImage img(w, h, QImage::Format_RGB32);
  img.fill(Qt::white);
  widget.render(&img);
  QByteArray bytes;
  QBuffer buf(&bytes);
  buf.open(QIODevice::WriteOnly);
  if (!img.save(&buf, "PNG") || bytes.isEmpty()) return Error("could not encode a PNG image");
  return std::string(bytes.constData(), static_cast<size_t>(bytes.size()));
}

Result<std::string> RenderChartPng(const ChartSpec& spec, int w, int h) {
  ChartView view;
  view.SetChart(spec);
  return RenderWidgetPng(view, w, h);
}

}  // namespace mmtwin::gui

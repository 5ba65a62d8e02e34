// SPDX-License-Identifier: Apache-2.0
// The QPainter canvas and the chart widget (chart.h).
#include "chart.h"

#include <QBuffer>
#include <QImage>
#include <QPainterPath>

namespace mmtwin::gui {
namespace {

QColor ToQt(report::Rgb c) { return QColor(c.r, c.g, c.b); }
QPointF ToQt(report::PointF p) { return QPointF(p.x, p.y); }
QRectF ToQt(const report::RectF& r) { return QRectF(r.x, r.y, r.w, r.h); }

int Flags(report::HAlign h, report::VAlign v) {
  const int hf = h == report::HAlign::kLeft    ? Qt::AlignLeft
                 : h == report::HAlign::kRight ? Qt::AlignRight
                                               : Qt::AlignHCenter;
  const int vf = v == report::VAlign::kTop      ? Qt::AlignTop
                 : v == report::VAlign::kBottom ? Qt::AlignBottom
                                                : Qt::AlignVCenter;
  return hf | vf;
}

}  // namespace

QPainterCanvas::QPainterCanvas(QPainter& painter, double width, double height, const QFont& base)
    : p_(painter), width_(width), height_(height), base_(base) {}

QFont QPainterCanvas::FontOf(const report::Font& f) const {
  QFont q = base_;
  if (f.bold) q.setBold(true);
  if (f.scale != 1) q.setPointSizeF(base_.pointSizeF() * f.scale);
  return q;
}

void QPainterCanvas::SetPen(const report::Stroke& s) {
  QPen pen(ToQt(s.color), s.width);
  if (s.dashed) pen.setDashPattern({5 / s.width, 4 / s.width});  // the pattern is in units of the pen width
  p_.setPen(pen);
}

void QPainterCanvas::FillRect(const report::RectF& r, report::Rgb fill) { p_.fillRect(ToQt(r), ToQt(fill)); }

void QPainterCanvas::Line(report::PointF a, report::PointF b, const report::Stroke& s) {
  SetPen(s);
  p_.drawLine(ToQt(a), ToQt(b));
}

void QPainterCanvas::Polylines(const std::vector<std::vector<report::PointF>>& lines,
                               const report::Stroke& s) {
  QPainterPath path;
  for (const std::vector<report::PointF>& line : lines)
    for (size_t i = 0; i < line.size(); ++i) {
      if (i == 0)
        path.moveTo(ToQt(line[i]));
      else
        path.lineTo(ToQt(line[i]));
    }
  SetPen(s);
  p_.setBrush(Qt::NoBrush);
  p_.drawPath(path);
}

void QPainterCanvas::Circle(report::PointF c, double r, const report::Stroke& s,
                            std::optional<report::Rgb> fill) {
  SetPen(s);
  if (fill)
    p_.setBrush(ToQt(*fill));
  else
    p_.setBrush(Qt::NoBrush);
  p_.drawEllipse(ToQt(c), r, r);
  p_.setBrush(Qt::NoBrush);
}

void QPainterCanvas::Text(const report::RectF& box, const std::string& text, report::HAlign h,
                          report::VAlign v, const report::Font& f, report::Rgb color) {
  p_.setFont(FontOf(f));
  p_.setPen(ToQt(color));
  p_.drawText(ToQt(box), Flags(h, v), QString::fromStdString(text));
}

void QPainterCanvas::TextUp(report::PointF center, double length, double thickness, const std::string& text,
                            const report::Font& f, report::Rgb color) {
  p_.save();
  p_.setFont(FontOf(f));
  p_.setPen(ToQt(color));
  p_.translate(center.x, center.y);
  p_.rotate(-90);
  p_.drawText(QRectF(-length / 2, -thickness / 2, length, thickness), Qt::AlignCenter,
              QString::fromStdString(text));
  p_.restore();
}

double QPainterCanvas::TextWidth(const std::string& text, const report::Font& f) {
  p_.setFont(FontOf(f));
  return p_.fontMetrics().horizontalAdvance(QString::fromStdString(text));
}

ChartView::ChartView(QWidget* parent) : QWidget(parent) { setAttribute(Qt::WA_OpaquePaintEvent); }

void ChartView::SetChart(report::ChartSpec spec) {
  spec_ = std::move(spec);
  update();
}

void ChartView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, true);
  QPainterCanvas canvas(p, width(), height(), font());
  report::DrawChart(spec_, canvas);
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
  if (!img.save(&buf, "PNG") || bytes.isEmpty()) return Error::Io("could not encode a PNG image");
  return std::string(bytes.constData(), static_cast<size_t>(bytes.size()));
}

Result<std::string> RenderChartPng(const report::ChartSpec& spec, int w, int h) {
  ChartView view;
  view.SetChart(spec);
  return RenderWidgetPng(view, w, h);
}

}  // namespace mmtwin::gui

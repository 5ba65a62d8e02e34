// SPDX-License-Identifier: Apache-2.0
// The reports' charts on Qt: a QPainter canvas for the one chart writer (report/chart.h: the layout, scales,
// ticks, legend and title are computed there, Qt-free), a widget that shows a chart, and offscreen PNG rendering.
//
//   report::ChartSpec c = ...;
//   MMTWIN_ASSIGN_OR_RETURN(std::string png, RenderChartPng(c, 900, 420));   // a QApplication must exist
#pragma once

#include <QFont>
#include <QPainter>
#include <QWidget>

#include <string>
#include <vector>

#include "core/util/status.h"
#include "report/chart.h"

namespace mmtwin::gui {

// A report::Canvas drawing with `painter` (antialiasing as the painter has it); fonts are `base` scaled.
class QPainterCanvas final : public report::Canvas {
 public:
  QPainterCanvas(QPainter& painter, double width, double height, const QFont& base);
  double Width() const override { return width_; }
  double Height() const override { return height_; }
  void FillRect(const report::RectF& r, report::Rgb fill) override;
  void Line(report::PointF a, report::PointF b, const report::Stroke& s) override;
  void Polylines(const std::vector<std::vector<report::PointF>>& lines, const report::Stroke& s) override;
  void Circle(report::PointF c, double r, const report::Stroke& s, std::optional<report::Rgb> fill) override;
  void Text(const report::RectF& box, const std::string& text, report::HAlign h, report::VAlign v,
            const report::Font& f, report::Rgb color) override;
  void TextUp(report::PointF center, double length, double thickness, const std::string& text,
              const report::Font& f, report::Rgb color) override;
  // Exact: QFontMetrics::horizontalAdvance on the painter's device.
  double TextWidth(const std::string& text, const report::Font& f) override;

 private:
  QFont FontOf(const report::Font& f) const;
  void SetPen(const report::Stroke& s);

  QPainter& p_;
  double width_, height_;
  QFont base_;
};

// A widget showing a chart at its size (antialiased, on white).
class ChartView : public QWidget {
 public:
  explicit ChartView(QWidget* parent = nullptr);
  void SetChart(report::ChartSpec spec);
  const report::ChartSpec& chart() const { return spec_; }
  QSize sizeHint() const override { return {900, 420}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  report::ChartSpec spec_;
};

// `widget` drawn offscreen at w x h px as PNG bytes (a QApplication must exist). Errors: an empty image.
Result<std::string> RenderWidgetPng(QWidget& widget, int w, int h);
// A ChartView of `spec` as PNG bytes.
Result<std::string> RenderChartPng(const report::ChartSpec& spec, int w, int h);

}  // namespace mmtwin::gui

// SPDX-License-Identifier: Apache-2.0
// A small chart widget for reports and the GUI: grouped bars or lines over categories, with a title, axis labels
// (the y label carries the unit), y ticks at round values, category labels on the x axis, a legend, and the value
// written above each bar. Drawn with QPainter like the other views (no Qt Charts); renders offscreen at any size.
//
//   ChartSpec c;
//   c.title = "GPU-days per epoch, paper vs mmtwin";
//   c.y_label = "GPU-days";
//   c.categories = {"baseline", "+data"};
//   c.series = {{"paper (Table 3)", {61.8, 51.9}}, {"mmtwin", {56.1, 43.3}}};
//   MMTWIN_ASSIGN_OR_RETURN(std::string png, RenderChartPng(c, 900, 420));
//
// Values that are not finite (NaN: no such figure) are left out: no bar, a gap in a line.
#pragma once

#include <QWidget>

#include <string>
#include <vector>

#include "core/util/status.h"

namespace mmtwin::gui {

struct ChartSeries {
  std::string name;            // legend text
  std::vector<double> values;  // one per category, in the y axis' unit; NaN = none
  bool show_values = true;     // write each value (ChartSpec::value_decimals) above its bar or point
};

struct ChartSpec {
  enum class Kind { kBars, kLines };
  Kind kind = Kind::kBars;
  std::string title;
  std::string x_label;  // below the category labels ("" = none)
  std::string y_label;  // with the unit, e.g. "GPU-days per epoch"
  std::vector<std::string> categories;
  std::vector<ChartSeries> series;
  int value_decimals = 1;  // digits of the value written above each bar (-1 = none)
};

class ChartView : public QWidget {
 public:
  explicit ChartView(QWidget* parent = nullptr);
  void SetChart(ChartSpec spec);
  const ChartSpec& chart() const { return spec_; }
  // The plot area (inside the axes) at the current size.
  QRectF PlotRect() const;
  // The y axis' top value (a round number >= every value).
  double YMax() const;
  QSize sizeHint() const override { return {900, 420}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  ChartSpec spec_;
};

// Axis helpers shared by every chart of the GUI and the reports: a "nice" tick step (1, 2, 5 x 10^k) giving about
// `target` ticks over `span`, and a tick's label with as many decimals as the step needs.
double NiceStep(double span, int target);
QString TickLabel(double v, double step);

// `widget` drawn offscreen at w x h px as PNG bytes (a QApplication must exist). Errors: an empty image.
Result<std::string> RenderWidgetPng(QWidget& widget, int w, int h);
// A ChartView of `spec` as PNG bytes.
Result<std::string> RenderChartPng(const ChartSpec& spec, int w, int h);

}  // namespace mmtwin::gui

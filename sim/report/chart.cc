// SPDX-License-Identifier: Apache-2.0
// Chart layout (chart.h).
#include "report/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace mmtwin::report {
namespace {

constexpr uint32_t kPalette[] = {0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2,
                                 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};
constexpr Rgb kGrid{0xe4, 0xe4, 0xe4};
constexpr Rgb kDiagonal{0x88, 0x88, 0x88};

// The frame's sizes (px): title band, legend band, tick labels and the y label left of the plot, right margin.
constexpr double kTitleH = 26, kLegendH = 22, kTickW = 56, kYLabelW = 22, kRight = 16, kPointsRight = 32;
constexpr Font kBase{};
constexpr Font kTitleFont{1.1, true};
constexpr Font kSmall{0.85, false};

double MaxValue(const ChartSpec& s) {
  double m = 0;
  for (const ChartSeries& se : s.series)
    for (double v : se.values)
      if (std::isfinite(v)) m = std::max(m, v);
  return m;
}

// A lighter shade of `c` (towards white by `amount`, 0..1).
Rgb Lighter(Rgb c, double amount) {
  auto mix = [&](uint8_t v) { return static_cast<uint8_t>(std::lround(v + (255 - v) * amount)); };
  return {mix(c.r), mix(c.g), mix(c.b)};
}

// The plot area of bars and lines: below the title and legend, right of the ticks and the y label, above the
// category labels (and the x label when there is one).
RectF PlotRect(bool x_label, const Canvas& canvas, double right = kRight) {
  const double top = kTitleH + kLegendH + 8;
  const double bottom = canvas.Height() - (x_label ? 50 : 30);
  const double left = kYLabelW + kTickW;
  return {left, top, std::max(10.0, canvas.Width() - left - right), std::max(10.0, bottom - top)};
}

void DrawTitle(const ChartSpec& c, Canvas& canvas) {
  canvas.Text({8, 4, canvas.Width() - 16, kTitleH - 4}, c.title, HAlign::kCenter, VAlign::kCenter, kTitleFont,
              kBlack);
}

// The legend's entries, centred under the title: a swatch (a square for bars, a line with a dot for lines and
// points, a dashed line for the y = x line) and the name.
struct LegendEntry {
  std::string name;
  Rgb color;
  enum class Swatch { kSquare, kLine, kDot, kDashed } swatch;
};

void DrawLegend(const std::vector<LegendEntry>& entries, Canvas& canvas) {
  double total = 0;
  for (const LegendEntry& e : entries) total += 18 + canvas.TextWidth(e.name, kBase) + 18;
  double x = std::max(8.0, (canvas.Width() - total) / 2);
  const double y = kTitleH + kLegendH / 2 + 4;
  for (const LegendEntry& e : entries) {
    switch (e.swatch) {
      case LegendEntry::Swatch::kSquare:
        canvas.FillRect({x, y - 6, 12, 12}, e.color);
        break;
      case LegendEntry::Swatch::kLine:
        canvas.Line({x - 2, y}, {x + 14, y}, {e.color, 2.5});
        canvas.Circle({x + 6, y}, 3.5, {e.color, 2.5}, e.color);
        break;
      case LegendEntry::Swatch::kDot:
        canvas.Circle({x + 6, y}, 4, {e.color, 1}, e.color);
        break;
      case LegendEntry::Swatch::kDashed:
        canvas.Line({x - 2, y}, {x + 14, y}, {kDiagonal, 1.5, true});
        break;
    }
    const double w = canvas.TextWidth(e.name, kBase);
    canvas.Text({x + 18, y - 9, w + 4, 18}, e.name, HAlign::kLeft, VAlign::kCenter, kBase, kBlack);
    x += 18 + w + 18;
  }
}

std::vector<LegendEntry> SeriesLegend(const ChartSpec& c) {
  std::vector<LegendEntry> out;
  for (size_t i = 0; i < c.series.size(); ++i) {
    LegendEntry::Swatch sw = LegendEntry::Swatch::kSquare;
    if (c.kind == ChartSpec::Kind::kLines) sw = LegendEntry::Swatch::kLine;
    if (c.kind == ChartSpec::Kind::kPoints) sw = LegendEntry::Swatch::kDot;
    out.push_back({c.series[i].name, SeriesColor(i), sw});
  }
  if (c.kind == ChartSpec::Kind::kPoints && !c.diagonal_label.empty() && c.same_scale)
    out.push_back({c.diagonal_label, kDiagonal, LegendEntry::Swatch::kDashed});
  return out;
}

// The y axis from 0 to `top` (grid lines, ticks and their labels) and its label, written upwards.
void DrawValueAxis(const RectF& plot, double top, const std::string& label, Canvas& canvas) {
  const double step = NiceStep(top, 6);
  for (double v = 0; v <= top + step * 1e-6; v += step) {
    const double y = plot.bottom() - plot.h * v / top;
    canvas.Line({plot.x, y}, {plot.right(), y}, {kGrid});
    canvas.Line({plot.x - 4, y}, {plot.x, y}, {kBlack});
    canvas.Text({kYLabelW, y - 8, kTickW - 8, 16}, TickLabel(v, step), HAlign::kRight, VAlign::kCenter, kBase,
                kBlack);
  }
  canvas.TextUp({12, plot.y + plot.h / 2}, plot.h, 20, label, kBase, kBlack);
}

void DrawAxes(const RectF& plot, Canvas& canvas) {
  canvas.Line({plot.x, plot.bottom()}, {plot.right(), plot.bottom()}, {kBlack});
  canvas.Line({plot.x, plot.bottom()}, {plot.x, plot.y}, {kBlack});
}

void DrawBars(const ChartSpec& c, const RectF& plot, double top, Canvas& canvas) {
  const int n = static_cast<int>(c.categories.size());
  const int ns = static_cast<int>(c.series.size());
  const double slot = plot.w / n;
  const double group = slot * 0.8;
  const double bw = group / std::max(1, ns);
  auto y_of = [&](double v) { return plot.bottom() - plot.h * v / top; };
  for (int s = 0; s < ns; ++s) {
    const ChartSeries& se = c.series[s];
    for (int i = 0; i < n && i < static_cast<int>(se.values.size()); ++i) {
      const double v = se.values[i];
      if (!std::isfinite(v)) continue;
      const double x = plot.x + i * slot + (slot - group) / 2 + s * bw;
      const RectF bar{x + 1, y_of(v), bw - 2, plot.bottom() - y_of(v)};
      canvas.FillRect(bar, SeriesColor(s));
      if (c.value_decimals >= 0 && se.show_values)
        canvas.Text({x - 10, bar.y - 16, bw + 20, 14}, FormatFixed(v, c.value_decimals), HAlign::kCenter,
                    VAlign::kBottom, kSmall, kBlack);
    }
  }
}

void DrawLines(const ChartSpec& c, const RectF& plot, double top, Canvas& canvas) {
  const int n = static_cast<int>(c.categories.size());
  const double slot = plot.w / n;
  auto point = [&](int i, double v) {
    return PointF{plot.x + (i + 0.5) * slot, plot.bottom() - plot.h * v / top};
  };
  // Value labels placed so far per category (their boxes' tops): a label that would overlap one goes below its
  // point instead (two series meeting at a category, e.g. a paper point beside mmtwin's).
  std::vector<std::vector<double>> placed(n);
  constexpr double kLabelH = 14;
  auto label_top = [&](int i, const PointF& pt) {
    double y = pt.y - 20;
    for (double other : placed[i])
      if (std::fabs(other - y) < kLabelH) {
        y = pt.y + 6;
        break;
      }
    placed[i].push_back(y);
    return y;
  };
  for (size_t s = 0; s < c.series.size(); ++s) {
    const ChartSeries& se = c.series[s];
    const Rgb color = SeriesColor(s);
    const int m = std::min(n, static_cast<int>(se.values.size()));
    // The line, broken where a value is missing.
    std::vector<std::vector<PointF>> lines;
    bool open = false;
    for (int i = 0; i < m; ++i) {
      if (!std::isfinite(se.values[i])) {
        open = false;
        continue;
      }
      if (!open) lines.emplace_back();
      lines.back().push_back(point(i, se.values[i]));
      open = true;
    }
    canvas.Polylines(lines, {color, 2.5});
    for (int i = 0; i < m; ++i) {
      const double v = se.values[i];
      if (!std::isfinite(v)) continue;
      const PointF pt = point(i, v);
      canvas.Circle(pt, 3.5, {color, 1}, color);
      if (c.value_decimals >= 0 && se.show_values)
        canvas.Text({pt.x - 40, label_top(i, pt), 80, kLabelH}, FormatFixed(v, c.value_decimals),
                    HAlign::kCenter, VAlign::kBottom, kSmall, kBlack);
    }
  }
}

void DrawCategoryChart(const ChartSpec& c, Canvas& canvas) {
  const RectF plot = PlotRect(!c.x_label.empty(), canvas);
  const double top = ValueAxisTop(c);
  DrawValueAxis(plot, top, c.y_label, canvas);
  DrawAxes(plot, canvas);
  const int n = static_cast<int>(c.categories.size());
  if (n == 0) return;
  const double slot = plot.w / n;
  for (int i = 0; i < n; ++i)
    canvas.Text({plot.x + i * slot, plot.bottom() + 4, slot, 18}, c.categories[i], HAlign::kCenter,
                VAlign::kTop, kBase, kBlack);
  if (!c.x_label.empty())
    canvas.Text({plot.x, plot.bottom() + 24, plot.w, 18}, c.x_label, HAlign::kCenter, VAlign::kTop, kBase,
                kBlack);
  if (c.kind == ChartSpec::Kind::kBars)
    DrawBars(c, plot, top, canvas);
  else
    DrawLines(c, plot, top, canvas);
}

// Points: both axes from 0 to one round top (so the y = x line is the diagonal), or each to its own (same_scale
// false), x ticks below the plot (the last one centred on the plot's right edge: kPointsRight leaves room for its
// label).
void DrawPointChart(const ChartSpec& c, Canvas& canvas) {
  double hi_y = 0, hi_x = 0;
  for (const ChartSeries& se : c.series) {
    for (double v : se.values)
      if (std::isfinite(v)) hi_y = std::max(hi_y, v);
    for (double v : se.xs)
      if (std::isfinite(v)) hi_x = std::max(hi_x, v);
  }
  if (c.same_scale) hi_x = hi_y = std::max(hi_x, hi_y);
  const double step = NiceStep(hi_x > 0 ? hi_x * 1.05 : 1, 6);
  const double top = hi_x > 0 ? std::ceil(hi_x * 1.05 / step) * step : 1;
  const double step_y = NiceStep(hi_y > 0 ? hi_y * 1.05 : 1, 6);
  const double top_y = hi_y > 0 ? std::ceil(hi_y * 1.05 / step_y) * step_y : 1;
  const RectF plot = PlotRect(!c.x_label.empty(), canvas, kPointsRight);
  auto px = [&](double v) { return plot.x + plot.w * v / top; };
  auto py = [&](double v) { return plot.bottom() - plot.h * v / top_y; };
  DrawValueAxis(plot, top_y, c.y_label, canvas);
  for (double v = step; v <= top + step * 1e-6; v += step)
    canvas.Line({px(v), plot.y}, {px(v), plot.bottom()}, {kGrid});
  for (double v = 0; v <= top + step * 1e-6; v += step) {
    canvas.Line({px(v), plot.bottom()}, {px(v), plot.bottom() + 4}, {kBlack});
    canvas.Text({px(v) - 40, plot.bottom() + 4, 80, 18}, TickLabel(v, step), HAlign::kCenter, VAlign::kTop,
                kBase, kBlack);
  }
  DrawAxes(plot, canvas);
  if (!c.x_label.empty())
    canvas.Text({plot.x, plot.bottom() + 24, plot.w, 18}, c.x_label, HAlign::kCenter, VAlign::kTop, kBase,
                kBlack);
  if (!c.diagonal_label.empty() && c.same_scale)
    canvas.Line({px(0), py(0)}, {px(top), py(top)}, {kDiagonal, 1.5, true});
  for (size_t s = 0; s < c.series.size(); ++s) {
    const ChartSeries& se = c.series[s];
    for (size_t i = 0; i < se.values.size() && i < se.xs.size(); ++i) {
      if (!std::isfinite(se.values[i]) || !std::isfinite(se.xs[i])) continue;
      const PointF pt{px(se.xs[i]), py(se.values[i])};
      canvas.Circle(pt, 4, {kWhite, 1}, SeriesColor(s));
      if (c.value_decimals >= 0 && se.show_values)
        canvas.Text({pt.x - 40, pt.y - 20, 80, 14}, FormatFixed(se.values[i], c.value_decimals),
                    HAlign::kCenter, VAlign::kBottom, kSmall, kBlack);
    }
  }
}

// Horizontal charts (stacked and grouped bars): categories top to bottom, their labels right-aligned left of the
// plot, the value axis along the bottom. The plot area, `right` px from the canvas's right edge.
RectF HorizontalPlot(const ChartSpec& c, Canvas& canvas, double right) {
  double label_w = 0;
  for (const std::string& cat : c.categories) label_w = std::max(label_w, canvas.TextWidth(cat, kBase));
  const double left = std::min(canvas.Width() / 2, label_w + 16);
  const double top = kTitleH + kLegendH + 8;
  const double bottom = canvas.Height() - (c.x_label.empty() ? 30 : 50);
  return {left, top, std::max(10.0, canvas.Width() - left - right), std::max(10.0, bottom - top)};
}

// A horizontal chart's value axis: at each tick (x in px, its label) a grid line (black at the plot's left edge),
// a tick mark and the label below; the axis line and the x label.
void DrawHorizontalValueAxis(const ChartSpec& c, const RectF& plot,
                             const std::vector<std::pair<double, std::string>>& ticks, Canvas& canvas) {
  for (const auto& [x, label] : ticks) {
    canvas.Line({x, plot.y}, {x, plot.bottom()}, {x == plot.x ? kBlack : kGrid});
    canvas.Line({x, plot.bottom()}, {x, plot.bottom() + 4}, {kBlack});
    canvas.Text({x - 40, plot.bottom() + 4, 80, 18}, label, HAlign::kCenter, VAlign::kTop, kBase, kBlack);
  }
  canvas.Line({plot.x, plot.bottom()}, {plot.right(), plot.bottom()}, {kBlack});
  if (!c.x_label.empty())
    canvas.Text({plot.x, plot.bottom() + 24, plot.w, 18}, c.x_label, HAlign::kCenter, VAlign::kTop, kBase,
                kBlack);
}

// Each category's band of a horizontal chart: its label, then draw(i, y0, bar_h) for its `bars` bars of height
// bar_h centred in the band (the first at y0).
template <class Draw>
void ForEachBand(const ChartSpec& c, const RectF& plot, size_t bars, Canvas& canvas, const Draw& draw) {
  const size_t n = c.categories.size();
  if (n == 0) return;
  const double slot = plot.h / static_cast<double>(n);
  const double bar_h = std::min(14.0, slot * 0.8 / static_cast<double>(bars));
  for (size_t i = 0; i < n; ++i) {
    const double y0 = plot.y + slot * static_cast<double>(i) + (slot - bar_h * static_cast<double>(bars)) / 2;
    canvas.Text({0, plot.y + slot * static_cast<double>(i), plot.x - 8, slot}, c.categories[i],
                HAlign::kRight, VAlign::kCenter, kBase, kBlack);
    draw(i, y0, bar_h);
  }
}

// Horizontal stacked bars: ticks at 0, 25, ..., 100%.
void DrawStackedChart(const ChartSpec& c, Canvas& canvas) {
  const RectF plot = HorizontalPlot(c, canvas, 24);
  std::vector<std::pair<double, std::string>> ticks;
  for (int i = 0; i <= 4; ++i) ticks.emplace_back(plot.x + plot.w * i / 4, FormatFixed(25.0 * i, 0) + "%");
  DrawHorizontalValueAxis(c, plot, ticks, canvas);
  const size_t ns = std::max<size_t>(1, c.stacks.size());
  ForEachBand(c, plot, ns, canvas, [&](size_t i, double y0, double bar_h) {
    for (size_t k = 0; k < ns; ++k) {
      double x = plot.x;
      for (size_t s = 0; s < c.series.size(); ++s) {
        const size_t at = i * ns + k;
        const double f = at < c.series[s].values.size() ? c.series[s].values[at] : 0;
        if (!std::isfinite(f) || f <= 0) continue;
        const double w = plot.w * std::min(f, 1.0);
        canvas.FillRect({x, y0 + bar_h * static_cast<double>(k), w, bar_h - 1},
                        k == 0 ? SeriesColor(s) : Lighter(SeriesColor(s), 0.5));
        x += w;
      }
    }
  });
}

// Horizontal grouped bars: the value axis from 0 to a round top (at least the reference), each category's series
// one under the other in its band; values right of their bars where the bars are tall enough to hold them.
void DrawHorizontalBars(const ChartSpec& c, Canvas& canvas) {
  const RectF plot = HorizontalPlot(c, canvas, 48);
  const double top = std::max(ValueAxisTop(c), std::isfinite(c.reference) ? c.reference : 0.0);
  auto x_of = [&](double v) { return plot.x + plot.w * v / top; };
  const double step = NiceStep(top, 6);
  std::vector<std::pair<double, std::string>> ticks;
  for (double v = 0; v <= top + step * 1e-6; v += step) ticks.emplace_back(x_of(v), TickLabel(v, step));
  DrawHorizontalValueAxis(c, plot, ticks, canvas);
  ForEachBand(c, plot, std::max<size_t>(1, c.series.size()), canvas, [&](size_t i, double y0, double bar_h) {
    for (size_t s = 0; s < c.series.size(); ++s) {
      const ChartSeries& se = c.series[s];
      const double v = i < se.values.size() ? se.values[i] : std::nan("");
      if (!std::isfinite(v) || v <= 0) continue;
      const RectF bar{plot.x, y0 + bar_h * static_cast<double>(s), x_of(v) - plot.x, bar_h - 1};
      canvas.FillRect(bar, SeriesColor(s));
      if (c.value_decimals >= 0 && se.show_values && bar_h >= 9)
        canvas.Text({bar.right() + 3, bar.y - 2, 44, bar.h + 4}, FormatFixed(v, c.value_decimals),
                    HAlign::kLeft, VAlign::kCenter, kSmall, kBlack);
    }
  });
  if (std::isfinite(c.reference))
    canvas.Line({x_of(c.reference), plot.y}, {x_of(c.reference), plot.bottom()}, {kDiagonal, 1.5, true});
}

}  // namespace

Rgb SeriesColor(size_t i) {
  const uint32_t c = kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))];
  return {static_cast<uint8_t>((c >> 16) & 0xff), static_cast<uint8_t>((c >> 8) & 0xff),
          static_cast<uint8_t>(c & 0xff)};
}

double ValueAxisTop(const ChartSpec& c) {
  const double m = MaxValue(c);
  if (!(m > 0)) return 1;
  const double step = NiceStep(m * 1.08, 6);  // headroom for the values written above the bars
  return std::ceil(m * 1.08 / step) * step;
}

void DrawChart(const ChartSpec& c, Canvas& canvas) {
  canvas.FillRect({0, 0, canvas.Width(), canvas.Height()}, kWhite);
  DrawTitle(c, canvas);
  DrawLegend(SeriesLegend(c), canvas);
  switch (c.kind) {
    case ChartSpec::Kind::kBars:
    case ChartSpec::Kind::kLines:
      DrawCategoryChart(c, canvas);
      break;
    case ChartSpec::Kind::kPoints:
      DrawPointChart(c, canvas);
      break;
    case ChartSpec::Kind::kStackedBars:
      DrawStackedChart(c, canvas);
      break;
    case ChartSpec::Kind::kHBars:
      DrawHorizontalBars(c, canvas);
      break;
  }
}

double NiceStep(double span, int target) {
  if (!(span > 0)) return 1;
  const double raw = span / std::max(1, target);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string TickLabel(double v, double step) {
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return FormatFixed(v, decimals);
}

std::string FormatFixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace mmtwin::report

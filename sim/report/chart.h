// SPDX-License-Identifier: Apache-2.0
// The one chart writer of every report (the paper reports' PNGs, the validation index, `mmtwin validate`'s SVGs):
// a chart is described once (ChartSpec), laid out once here (scales, round ticks, axis labels with their units,
// bars, lines or points, legend, title) and drawn onto a Canvas, a minimal drawing surface with two
// implementations: SvgCanvas (svg_canvas.h, Qt-free) and the GUI's QPainter canvas (gui/chart.h, PNG).
//
//   ChartSpec c;
//   c.title = "GPU-days per epoch, paper vs mmtwin";
//   c.y_label = "GPU-days";
//   c.categories = {"baseline", "+data"};
//   c.series = {{"paper (Table 3)", {61.8, 51.9}}, {"mmtwin", {56.1, 43.3}}};
//   SvgCanvas canvas(900, 420);
//   DrawChart(c, canvas);
//   std::string svg = canvas.Finish();
//
// Kinds: grouped bars or lines over categories (values not finite are left out: no bar, a gap in a line);
// points on two value axes of one scale with the y = x line (predicted against measured); horizontal stacked bars
// of fractions, one bar per category and stack; horizontal grouped bars (many categories with long labels, e.g.
// a league table's policies, with an optional reference line). Coordinates are in px, y downwards; fonts are
// relative to the canvas's base font (about 12 px).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace mmtwin::report {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};
inline constexpr Rgb kBlack{0, 0, 0};
inline constexpr Rgb kWhite{255, 255, 255};

struct PointF {
  double x = 0, y = 0;
};
struct RectF {
  double x = 0, y = 0, w = 0, h = 0;
  double right() const { return x + w; }
  double bottom() const { return y + h; }
};

struct Stroke {
  Rgb color;
  double width = 1;     // px
  bool dashed = false;  // 5 px on, 4 px off
};

// A font relative to the canvas's base font: `scale` times its size, bold or not.
struct Font {
  double scale = 1;
  bool bold = false;
};

enum class HAlign { kLeft, kCenter, kRight };
enum class VAlign { kTop, kCenter, kBottom };

// A drawing surface: what a chart needs and nothing more. Every call states its whole style (no drawing state
// carries over), so any two canvases draw the same chart from the same calls.
class Canvas {
 public:
  virtual ~Canvas() = default;
  virtual double Width() const = 0;  // px
  virtual double Height() const = 0;
  virtual void FillRect(const RectF& r, Rgb fill) = 0;
  virtual void Line(PointF a, PointF b, const Stroke& s) = 0;
  // Open polylines stroked as one path (no fill); a polyline of fewer than two points draws nothing.
  virtual void Polylines(const std::vector<std::vector<PointF>>& lines, const Stroke& s) = 0;
  // A circle of radius r around c, outlined with `s` and filled with `fill` when given.
  virtual void Circle(PointF c, double r, const Stroke& s, std::optional<Rgb> fill) = 0;
  // `text` on one line inside `box`, aligned as told (it may overflow the box).
  virtual void Text(const RectF& box, const std::string& text, HAlign h, VAlign v, const Font& f,
                    Rgb color) = 0;
  // `text` read bottom to top, centred on `center` in a box `length` long along the text and `thickness` across.
  virtual void TextUp(PointF center, double length, double thickness, const std::string& text, const Font& f,
                      Rgb color) = 0;
  // The advance width of `text` in px (exact for the QPainter canvas, an estimate for SVG).
  virtual double TextWidth(const std::string& text, const Font& f) = 0;
};

struct ChartSeries {
  std::string name;  // legend text
  std::vector<double>
      values;               // one per category, in the y axis' unit (kStackedBars: see ChartSpec); NaN = none
  bool show_values = true;  // write each value (ChartSpec::value_decimals) above its bar or point
  std::vector<double> xs;   // kPoints only: the x of each value
};

struct ChartSpec {
  enum class Kind {
    kBars,         // grouped bars over categories
    kLines,        // a line per series over categories
    kPoints,       // (xs[i], values[i]) per series on one scale for both axes, with the y = x line
    kStackedBars,  // horizontal: per category one bar per stack, the series' fractions stacked left to right
    kHBars,        // horizontal grouped bars: categories top to bottom (long labels, many categories), values
                   // along x from 0; the series side by side in each category's band
  };
  Kind kind = Kind::kBars;
  std::string title;
  std::string x_label;  // below the axis ("" = none); kPoints, kStackedBars: with the unit
  std::string y_label;  // with the unit, e.g. "GPU-days per epoch"; kStackedBars: none
  std::vector<std::string> categories;
  std::vector<ChartSeries> series;
  int value_decimals = 1;  // digits of the value written above each bar or point (-1 = none)
  // kPoints: the legend entry of the dashed y = x line ("" = no line).
  std::string diagonal_label;
  // kPoints: true (default) = both axes from 0 to one round top (predicted against measured); false = each axis
  // from 0 to its own (two quantities, e.g. GPU-days against peak memory; no diagonal).
  bool same_scale = true;
  // kStackedBars: the bars of each category, top to bottom (e.g. "measured", "predicted"); a series' values are
  // category-major (values[c * stacks.size() + k]), fractions of the bar's full length (0..1). Stacks after the
  // first are drawn lighter.
  std::vector<std::string> stacks;
  // kHBars: a dashed vertical line at this value (e.g. 1 for a speed-up over a baseline); NaN = none.
  double reference = std::numeric_limits<double>::quiet_NaN();
};

// Series colours (Tableau 10): the paper's series first in every report, so it is always the same blue.
Rgb SeriesColor(size_t i);

// Lays out `c` on the whole canvas and draws it.
void DrawChart(const ChartSpec& c, Canvas& canvas);

// The top of the y axis of bars and lines: a round number >= every value with headroom for the values written
// above the bars (1 when there is no positive value).
double ValueAxisTop(const ChartSpec& c);

// Axis helpers shared by every chart of the reports and the GUI: a "nice" tick step (1, 2, 5 x 10^k) giving about
// `target` ticks over `span` (1 when span is not positive), and a tick's label with as many decimals as the step
// needs ("0.25" for a step of 0.05: 2 decimals; "150" for a step of 50).
double NiceStep(double span, int target);
std::string TickLabel(double v, double step);
// printf("%.*f", decimals, v).
std::string FormatFixed(double v, int decimals);

}  // namespace mmtwin::report

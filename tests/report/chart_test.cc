// SPDX-License-Identifier: Apache-2.0
// The reports' chart writer (report/chart.h) and its SVG canvas (report/svg_canvas.h): tick steps and labels on
// small cases (closed forms), the layout of bars, lines, points and stacked bars read back from a canvas that
// records every call (positions computed here by hand from the documented frame), and the SVG text itself.
#include "report/chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "report/plotter.h"
#include "report/svg_canvas.h"

namespace mmtwin::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Records what a chart draws: rectangles with their fill, lines, polylines, circles and texts with their boxes.
class Recorder final : public Canvas {
 public:
  struct Rect {
    RectF r;
    Rgb fill;
  };
  struct Txt {
    RectF box;
    std::string text;
    HAlign h;
    VAlign v;
  };
  Recorder(double w, double h) : w_(w), h_(h) {}
  double Width() const override { return w_; }
  double Height() const override { return h_; }
  void FillRect(const RectF& r, Rgb fill) override { rects.push_back({r, fill}); }
  void Line(PointF a, PointF b, const Stroke& s) override { lines.push_back({a, b}); }
  void Polylines(const std::vector<std::vector<PointF>>& l, const Stroke& s) override {
    polylines.push_back(l);
  }
  void Circle(PointF c, double r, const Stroke& s, std::optional<Rgb> fill) override { circles.push_back(c); }
  void Text(const RectF& box, const std::string& text, HAlign h, VAlign v, const Font& f,
            Rgb color) override {
    texts.push_back({box, text, h, v});
  }
  void TextUp(PointF center, double length, double thickness, const std::string& text, const Font& f,
              Rgb color) override {
    up.push_back(text);
  }
  double TextWidth(const std::string& text, const Font& f) override { return 7.0 * text.size(); }

  std::vector<Rect> FilledWith(Rgb c) const {
    std::vector<Rect> out;
    for (const Rect& r : rects)
      if (r.fill == c) out.push_back(r);
    return out;
  }
  const Txt* TextOf(const std::string& s) const {
    for (const Txt& t : texts)
      if (t.text == s) return &t;
    return nullptr;
  }

  std::vector<Rect> rects;
  std::vector<std::pair<PointF, PointF>> lines;
  std::vector<std::vector<std::vector<PointF>>> polylines;
  std::vector<PointF> circles;
  std::vector<Txt> texts;
  std::vector<std::string> up;

 private:
  double w_, h_;
};

TEST(ChartAxes, NiceStepIsOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(NiceStep(10, 5), 2);       // raw 2
  EXPECT_DOUBLE_EQ(NiceStep(7, 6), 2);        // raw 1.17 -> 2
  EXPECT_DOUBLE_EQ(NiceStep(0.3, 6), 0.05);   // raw 0.05
  EXPECT_DOUBLE_EQ(NiceStep(66.744, 6), 20);  // raw 11.1 -> 20
  EXPECT_DOUBLE_EQ(NiceStep(3000, 6), 500);   // raw 500
  EXPECT_DOUBLE_EQ(NiceStep(3001, 6), 1000);  // raw 500.2 -> 1000
  EXPECT_DOUBLE_EQ(NiceStep(0, 6), 1);
  EXPECT_DOUBLE_EQ(NiceStep(-4, 6), 1);
  EXPECT_DOUBLE_EQ(NiceStep(kNaN, 6), 1);
}

TEST(ChartAxes, TickLabelsCarryTheDecimalsOfTheStep) {
  EXPECT_EQ(TickLabel(150, 50), "150");
  EXPECT_EQ(TickLabel(0.25, 0.05), "0.25");
  EXPECT_EQ(TickLabel(0.5, 0.1), "0.5");
  EXPECT_EQ(TickLabel(2, 0.5), "2.0");
  EXPECT_EQ(TickLabel(0, 1e-9), "0.000000");  // at most 6 decimals
  EXPECT_EQ(FormatFixed(2.675, 1), "2.7");
}

TEST(ChartAxes, ValueAxisTopIsARoundNumberAboveTheValuesWithHeadroom) {
  ChartSpec c;
  c.series = {{"a", {61.8, 51.9}}};
  EXPECT_DOUBLE_EQ(ValueAxisTop(c), 80);  // 61.8 x 1.08 = 66.7, step 20
  c.series = {{"a", {1, 2, kNaN}}};
  EXPECT_DOUBLE_EQ(ValueAxisTop(c), 2.5);  // 2.16, step 0.5
  c.series = {{"a", {kNaN, -3}}};
  EXPECT_DOUBLE_EQ(ValueAxisTop(c), 1);  // nothing positive
}

// 400 x 300, no x label: plot from (78, 56) to (384, 270) (title 26 + legend 22 + 8; ticks 56 + y label 22 left;
// 16 right; 30 below).
TEST(ChartLayout, BarsStandOnTheAxisAtTheirValue) {
  ChartSpec c;
  c.title = "t";
  c.y_label = "GPU-days";
  c.categories = {"a", "b"};
  c.series = {{"s", {1, 2}}};
  Recorder r(400, 300);
  DrawChart(c, r);
  ASSERT_EQ(r.rects.size(), 1u + 1 + 2);  // background, legend swatch, two bars
  EXPECT_EQ(r.rects[0].fill, kWhite);
  const std::vector<Recorder::Rect> bars = r.FilledWith(SeriesColor(0));
  ASSERT_EQ(bars.size(), 3u);  // the swatch, then the bars
  const double top = 2.5, plot_h = 270 - 56, slot = (400 - 78 - 16) / 2.0, group = slot * 0.8;
  for (int i = 0; i < 2; ++i) {
    const RectF& b = bars[1 + i].r;
    EXPECT_NEAR(b.x, 78 + i * slot + (slot - group) / 2 + 1, 1e-9);
    EXPECT_NEAR(b.w, group - 2, 1e-9);
    EXPECT_NEAR(b.bottom(), 270, 1e-9);
    EXPECT_NEAR(b.h, plot_h * (i + 1) / top, 1e-9);
  }
  // Ticks 0, 0.5, ..., 2.5 right-aligned left of the plot, each centred on its grid line; values above the bars.
  for (int k = 0; k <= 5; ++k) {
    const Recorder::Txt* t = r.TextOf(TickLabel(0.5 * k, 0.5));
    ASSERT_NE(t, nullptr) << k;
    EXPECT_EQ(t->h, HAlign::kRight);
    EXPECT_NEAR(t->box.y + t->box.h / 2, 270 - plot_h * 0.5 * k / top, 1e-9);
  }
  EXPECT_EQ(r.TextOf("3.0"), nullptr);
  EXPECT_NE(r.TextOf("1.0"), nullptr);  // a tick and the value of bar a
  EXPECT_NE(r.TextOf("t"), nullptr);
  EXPECT_NE(r.TextOf("s"), nullptr);  // the legend
  EXPECT_EQ(r.up, std::vector<std::string>{"GPU-days"});
}

TEST(ChartLayout, LinesBreakAtMissingValues) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kLines;
  c.categories = {"1", "2", "3", "4"};
  c.series = {{"s", {1, 2, kNaN, 4}}};
  c.value_decimals = -1;
  Recorder r(400, 300);
  DrawChart(c, r);
  ASSERT_EQ(r.polylines.size(), 1u);
  ASSERT_EQ(r.polylines[0].size(), 2u);
  EXPECT_EQ(r.polylines[0][0].size(), 2u);
  EXPECT_EQ(r.polylines[0][1].size(), 1u);  // a lone point: drawn as a dot, no line
  EXPECT_EQ(r.circles.size(), 1u + 3);      // the legend's dot and one per value
  const double slot = (400 - 78 - 16) / 4.0;
  EXPECT_NEAR(r.polylines[0][1][0].x, 78 + 3.5 * slot, 1e-9);
  EXPECT_EQ(r.TextOf("4.0"), nullptr);  // no values written
}

TEST(ChartLayout, ValueLabelsOfNearPointsDoNotOverlap) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kLines;
  c.categories = {"a", "b"};
  c.series = {{"mmtwin", {10, 40.8}}, {"paper", {kNaN, 41.6}}, {"far", {30, kNaN}}};
  c.value_decimals = 1;
  Recorder r(400, 300);
  DrawChart(c, r);
  const auto* a = r.TextOf("40.8");
  const auto* b = r.TextOf("41.6");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // The second label of category b moved below its point: the boxes no longer overlap.
  EXPECT_GE(std::fabs(a->box.y - b->box.y), a->box.h);
  // Labels far apart in one category both stay above their points: the lower value's box lies below the
  // higher's by the points' distance (more than a label's height here).
  const auto* x = r.TextOf("10.0");
  const auto* y = r.TextOf("30.0");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(y, nullptr);
  EXPECT_GT(x->box.y - y->box.y, x->box.h);
  EXPECT_LT(a->box.y, b->box.y);  // 41.6 (drawn second) went below its point, 40.8 kept its place above
}

TEST(ChartLayout, PointsShareOneScaleAndTheDiagonal) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kPoints;
  c.x_label = "measured (ms)";
  c.diagonal_label = "predicted = measured";
  c.value_decimals = -1;
  c.series = {{"a", {50, 190}, true, {100, 200}}};
  Recorder r(400, 300);
  DrawChart(c, r);
  // hi = 200 x 1.05 = 210, step 50, top 250; plot from (78, 56) to (368, 250) (32 px right for the last tick).
  const double top = 250, w = 400 - 78 - 32, h = 250 - 56;
  ASSERT_EQ(r.circles.size(), 1u + 2);
  EXPECT_NEAR(r.circles[1].x, 78 + w * 100 / top, 1e-9);
  EXPECT_NEAR(r.circles[1].y, 250 - h * 50 / top, 1e-9);
  EXPECT_NEAR(r.circles[2].y, 250 - h * 190 / top, 1e-9);
  bool diagonal = false;
  for (const auto& [a, b] : r.lines)
    diagonal = diagonal || (std::abs(a.x - 78) < 1e-9 && std::abs(a.y - 250) < 1e-9 &&
                            std::abs(b.x - 368) < 1e-9 && std::abs(b.y - 56) < 1e-9);
  EXPECT_TRUE(diagonal);
  for (const char* tick : {"0", "50", "100", "150", "200", "250"}) EXPECT_NE(r.TextOf(tick), nullptr) << tick;
  EXPECT_NE(r.TextOf("predicted = measured"), nullptr);
}

// Two quantities (same_scale false): x from 0 to its own round top, y to its own; no diagonal.
TEST(ChartLayout, PointsOnTwoScales) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kPoints;
  c.same_scale = false;
  c.x_label = "peak memory (GiB)";
  c.diagonal_label = "not drawn";
  c.value_decimals = -1;
  c.series = {{"a", {0.3, 0.2}, true, {40, 75}}};
  Recorder r(400, 300);
  DrawChart(c, r);
  // x: hi 75 x 1.05 = 78.75, step 20 (NiceStep for 6 ticks), top 80; y: hi 0.3 x 1.05 = 0.315, step 0.1, top 0.4.
  const double top_x = 80, top_y = 0.4, w = 400 - 78 - 32, h = 250 - 56;
  ASSERT_EQ(r.circles.size(), 1u + 2);  // the series' legend swatch, then its points
  EXPECT_NEAR(r.circles[1].x, 78 + w * 40 / top_x, 1e-9);
  EXPECT_NEAR(r.circles[1].y, 250 - h * 0.3 / top_y, 1e-9);
  EXPECT_NEAR(r.circles[2].x, 78 + w * 75 / top_x, 1e-9);
  EXPECT_NEAR(r.circles[2].y, 250 - h * 0.2 / top_y, 1e-9);
  EXPECT_EQ(r.TextOf("not drawn"), nullptr);  // nor its legend entry
  for (const auto& [a, b] : r.lines)
    EXPECT_FALSE(std::abs(a.x - 78) < 1e-9 && std::abs(a.y - 250) < 1e-9 && std::abs(b.x - 368) < 1e-9 &&
                 std::abs(b.y - 56) < 1e-9);
  for (const char* tick : {"0", "20", "40", "60", "80", "0.1", "0.4"})
    EXPECT_NE(r.TextOf(tick), nullptr) << tick;
}

TEST(ChartLayout, StackedBarsSplitTheirLengthByFraction) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kStackedBars;
  c.categories = {"x s0"};
  c.stacks = {"measured", "predicted"};
  c.series = {{"busy", {0.5, 0.25}}, {"bubble", {0.25, 0.5}}};
  Recorder r(400, 300);
  DrawChart(c, r);
  // Labels 7 px per character: left = 4 x 7 + 16 = 44; plot width 400 - 44 - 24 = 332.
  const std::vector<Recorder::Rect> busy = r.FilledWith(SeriesColor(0));
  ASSERT_EQ(busy.size(), 2u);  // the swatch and the measured bar; the predicted one is lighter
  EXPECT_NEAR(busy[1].r.x, 44, 1e-9);
  EXPECT_NEAR(busy[1].r.w, 332 * 0.5, 1e-9);
  const std::vector<Recorder::Rect> bubble = r.FilledWith(SeriesColor(1));
  ASSERT_EQ(bubble.size(), 2u);
  EXPECT_NEAR(bubble[1].r.x, 44 + 332 * 0.5, 1e-9);
  EXPECT_NEAR(bubble[1].r.w, 332 * 0.25, 1e-9);
  EXPECT_EQ(r.rects.size(), 1u + 2 + 4);  // background, two swatches, 2 x 2 segments
  EXPECT_NE(r.TextOf("100%"), nullptr);
  ASSERT_NE(r.TextOf("x s0"), nullptr);
  EXPECT_EQ(r.TextOf("x s0")->h, HAlign::kRight);
}

TEST(ChartLayout, HorizontalBarsRunFromTheAxisToTheirValue) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kHBars;
  c.categories = {"data/isf", "sp/2d (OOM)"};
  c.series = {{"128", {1.5, kNaN}}, {"1024", {3.0, 0.5}}};
  c.reference = 1;
  c.value_decimals = 2;
  Recorder r(400, 300);
  DrawChart(c, r);
  // Labels 7 px per character: left = 11 x 7 + 16 = 93; plot width 400 - 93 - 48 = 259, top 4 (ValueAxisTop).
  const double left = 93, w = 259, top = ValueAxisTop(c);
  EXPECT_DOUBLE_EQ(top, 4.0);
  const std::vector<Recorder::Rect> s0 = r.FilledWith(SeriesColor(0)), s1 = r.FilledWith(SeriesColor(1));
  ASSERT_EQ(s0.size(), 2u);  // the swatch and one bar: the missing value draws none
  ASSERT_EQ(s1.size(), 3u);
  EXPECT_NEAR(s0[1].r.x, left, 1e-9);
  EXPECT_NEAR(s0[1].r.w, w * 1.5 / top, 1e-9);
  EXPECT_NEAR(s1[1].r.w, w * 3.0 / top, 1e-9);
  EXPECT_NEAR(s1[2].r.w, w * 0.5 / top, 1e-9);
  // The two series of a category one under the other, the second category below the first.
  EXPECT_NEAR(s1[1].r.y, s0[1].r.y + s0[1].r.h + 1, 1e-9);
  EXPECT_GT(s1[2].r.y, s1[1].r.y + s1[1].r.h);
  // The reference line at 1 from the plot's top to its bottom, category labels right-aligned left of the plot.
  bool reference = false;
  for (const auto& [a, b] : r.lines)
    reference = reference || (std::fabs(a.x - (left + w / top)) < 1e-9 && a.x == b.x && b.y - a.y > 100);
  EXPECT_TRUE(reference);
  ASSERT_NE(r.TextOf("sp/2d (OOM)"), nullptr);
  EXPECT_EQ(r.TextOf("sp/2d (OOM)")->h, HAlign::kRight);
  EXPECT_NE(r.TextOf("3.00"), nullptr);  // the value right of its bar
}

TEST(SvgCanvas, WritesOneElementPerCall) {
  SvgCanvas s(100, 50);
  s.FillRect({1, 2, 3, 4}, SeriesColor(0));
  s.Line({0, 0}, {10, 5.25}, {{0x88, 0x88, 0x88}, 1.5, true});
  s.Polylines({{{0, 0}, {1, 1}, {2, 0}}, {{5, 5}}}, {kBlack, 2.5});
  s.Circle({3, 4}, 3.5, {kWhite, 1}, Rgb{1, 2, 3});
  s.Text({10, 20, 40, 10}, "a<b & c", HAlign::kRight, VAlign::kCenter, {0.85, false}, kBlack);
  s.TextUp({12, 30}, 40, 20, "up", {}, kBlack);
  EXPECT_EQ(
      s.Finish(),
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100.0\" height=\"50.0\" viewBox=\"0 0 100.0 "
      "50.0\">\n"
      "<rect x=\"1.0\" y=\"2.0\" width=\"3.0\" height=\"4.0\" fill=\"#4e79a7\"/>\n"
      "<line x1=\"0.0\" y1=\"0.0\" x2=\"10.0\" y2=\"5.2\" stroke=\"#888888\" stroke-width=\"1.5\" "
      "stroke-dasharray=\"5,4\"/>\n"
      "<polyline points=\"0.0,0.0 1.0,1.0 2.0,0.0\" fill=\"none\" stroke=\"#000000\" stroke-width=\"2.5\" "
      "stroke-linejoin=\"bevel\"/>\n"
      "<circle cx=\"3.0\" cy=\"4.0\" r=\"3.5\" fill=\"#010203\" stroke=\"#ffffff\" stroke-width=\"1.0\"/>\n"
      "<text x=\"50.0\" y=\"28.6\" text-anchor=\"end\" font-family=\"sans-serif\" font-size=\"10.2\" "
      "fill=\"#000000\">a&lt;b &amp; c</text>\n"
      "<text x=\"12.0\" y=\"34.2\" text-anchor=\"middle\" transform=\"rotate(-90 12.0 30.0)\" "
      "font-family=\"sans-serif\" font-size=\"12.0\" fill=\"#000000\">up</text>\n"
      "</svg>\n");
  // Width estimates: wider for capitals, narrower for i and l, proportional to the font.
  EXPECT_GT(s.TextWidth("MMM", {}), s.TextWidth("mmm", {}) * 0.99);
  EXPECT_LT(s.TextWidth("ill", {}), s.TextWidth("abc", {}));
  EXPECT_DOUBLE_EQ(s.TextWidth("abc", {2, false}), 2 * s.TextWidth("abc", {}));
  EXPECT_DOUBLE_EQ(s.TextWidth("×", {}), s.TextWidth("x", {}));  // one code point, not two bytes
}

TEST(SvgPlotter, DrawsAWholeChart) {
  ChartSpec c;
  c.title = "GPU-days <per> epoch";
  c.categories = {"a", "b", "c"};
  c.series = {{"paper", {1, kNaN, 3}}, {"mmtwin", {2, 2, 2}}};
  SvgPlotter p;
  EXPECT_EQ(p.Extension(), "svg");
  auto svg = p.Chart(c, 640, 480);
  ASSERT_TRUE(svg.ok());
  EXPECT_EQ(svg->rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640.0\" height=\"480.0\"", 0), 0u);
  EXPECT_EQ(svg->substr(svg->size() - 7), "</svg>\n");
  EXPECT_NE(svg->find(">GPU-days &lt;per&gt; epoch</text>"), std::string::npos);
  auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t at = svg->find(s); at != std::string::npos; at = svg->find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("fill=\"#4e79a7\"/>"), 1u + 2);  // swatch + two bars (the NaN is left out)
  EXPECT_EQ(count("fill=\"#f28e2b\"/>"), 1u + 3);
  // No timelines without Qt.
  auto t = p.Timelines({}, 100, 100);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("draws no timelines"), std::string::npos);
}

}  // namespace
}  // namespace mmtwin::report

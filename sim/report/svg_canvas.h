// SPDX-License-Identifier: Apache-2.0
// A Canvas (chart.h) that writes SVG text: what `mmtwin validate` and any report drawn without Qt write. Qt-free.
//
//   SvgCanvas canvas(640, 480);
//   DrawChart(spec, canvas);
//   std::string svg = canvas.Finish();   // "<svg ...>...</svg>\n"
//
// Every element is one line; coordinates are written with one decimal. Text is sans-serif at kBaseFontPx times
// the font's scale, its box alignment turned into text-anchor and a baseline offset (SVG has no text boxes);
// TextWidth estimates the advance from the characters (about 0.6 em for a lower-case letter), so a legend
// laid out with it leaves room for wider fonts.
#pragma once

#include <string>

#include "report/chart.h"

namespace mmtwin::report {

class SvgCanvas final : public Canvas {
 public:
  static constexpr double kBaseFontPx = 12;

  SvgCanvas(double width_px, double height_px);
  double Width() const override { return width_; }
  double Height() const override { return height_; }
  void FillRect(const RectF& r, Rgb fill) override;
  void Line(PointF a, PointF b, const Stroke& s) override;
  void Polylines(const std::vector<std::vector<PointF>>& lines, const Stroke& s) override;
  void Circle(PointF c, double r, const Stroke& s, std::optional<Rgb> fill) override;
  void Text(const RectF& box, const std::string& text, HAlign h, VAlign v, const Font& f, Rgb color) override;
  void TextUp(PointF center, double length, double thickness, const std::string& text, const Font& f,
              Rgb color) override;
  double TextWidth(const std::string& text, const Font& f) override;

  // The document: the elements drawn so far inside the <svg> element.
  std::string Finish() const;

 private:
  double width_, height_;
  std::string body_;
};

// "#rrggbb".
std::string HexColor(Rgb c);
// `s` with &, < and > (and quotes) escaped for XML text and attributes.
std::string XmlEscape(const std::string& s);

}  // namespace mmtwin::report

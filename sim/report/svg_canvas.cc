// SPDX-License-Identifier: Apache-2.0
// The SVG canvas (svg_canvas.h).
#include "report/svg_canvas.h"

#include <cstdio>
#include <string_view>

namespace mmtwin::report {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string StrokeAttrs(const Stroke& s) {
  return " stroke=\"" + HexColor(s.color) + "\" stroke-width=\"" + Num(s.width) + "\"" +
         (s.dashed ? " stroke-dasharray=\"5,4\"" : "");
}

double FontPx(const Font& f) { return SvgCanvas::kBaseFontPx * f.scale; }

std::string FontAttrs(const Font& f, Rgb color) {
  return " font-family=\"sans-serif\" font-size=\"" + Num(FontPx(f)) + "\"" +
         (f.bold ? " font-weight=\"bold\"" : "") + " fill=\"" + HexColor(color) + "\"";
}

// Where the baseline goes for a vertical alignment inside [top, top + h] (SVG places text by its baseline):
// ascent about 0.9 em, descent about 0.25 em, the middle of the lower-case letters about 0.35 em above it.
double Baseline(double top, double h, VAlign v, double px) {
  switch (v) {
    case VAlign::kTop:
      return top + 0.9 * px;
    case VAlign::kBottom:
      return top + h - 0.25 * px;
    case VAlign::kCenter:
      break;
  }
  return top + h / 2 + 0.35 * px;
}

}  // namespace

std::string HexColor(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

std::string XmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

SvgCanvas::SvgCanvas(double width_px, double height_px) : width_(width_px), height_(height_px) {}

void SvgCanvas::FillRect(const RectF& r, Rgb fill) {
  body_ += "<rect x=\"" + Num(r.x) + "\" y=\"" + Num(r.y) + "\" width=\"" + Num(r.w) + "\" height=\"" +
           Num(r.h) + "\" fill=\"" + HexColor(fill) + "\"/>\n";
}

void SvgCanvas::Line(PointF a, PointF b, const Stroke& s) {
  body_ += "<line x1=\"" + Num(a.x) + "\" y1=\"" + Num(a.y) + "\" x2=\"" + Num(b.x) + "\" y2=\"" + Num(b.y) +
           "\"" + StrokeAttrs(s) + "/>\n";
}

void SvgCanvas::Polylines(const std::vector<std::vector<PointF>>& lines, const Stroke& s) {
  for (const std::vector<PointF>& line : lines) {
    if (line.size() < 2) continue;
    std::string points;
    for (const PointF& p : line) points += (points.empty() ? "" : " ") + Num(p.x) + "," + Num(p.y);
    body_ += "<polyline points=\"" + points + "\" fill=\"none\"" + StrokeAttrs(s) +
             " stroke-linejoin=\"bevel\"/>\n";
  }
}

void SvgCanvas::Circle(PointF c, double r, const Stroke& s, std::optional<Rgb> fill) {
  body_ += "<circle cx=\"" + Num(c.x) + "\" cy=\"" + Num(c.y) + "\" r=\"" + Num(r) + "\" fill=\"" +
           (fill ? HexColor(*fill) : std::string("none")) + "\"" + StrokeAttrs(s) + "/>\n";
}

void SvgCanvas::Text(const RectF& box, const std::string& text, HAlign h, VAlign v, const Font& f,
                     Rgb color) {
  if (text.empty()) return;
  const double x = h == HAlign::kLeft ? box.x : h == HAlign::kRight ? box.right() : box.x + box.w / 2;
  const char* anchor = h == HAlign::kLeft ? "start" : h == HAlign::kRight ? "end" : "middle";
  body_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(Baseline(box.y, box.h, v, FontPx(f))) +
           "\" text-anchor=\"" + anchor + "\"" + FontAttrs(f, color) + ">" + XmlEscape(text) + "</text>\n";
}

void SvgCanvas::TextUp(PointF center, double length, double thickness, const std::string& text, const Font& f,
                       Rgb color) {
  if (text.empty()) return;
  body_ += "<text x=\"" + Num(center.x) + "\" y=\"" +
           Num(Baseline(center.y - thickness / 2, thickness, VAlign::kCenter, FontPx(f))) +
           "\" text-anchor=\"middle\" transform=\"rotate(-90 " + Num(center.x) + " " + Num(center.y) + ")\"" +
           FontAttrs(f, color) + ">" + XmlEscape(text) + "</text>\n";
}

double SvgCanvas::TextWidth(const std::string& text, const Font& f) {
  double em = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xc0) == 0x80) continue;  // a UTF-8 continuation byte: counted with its lead byte
    if (c == ' ')
      em += 0.32;
    else if (std::string_view("ijl.,:;'|!()[]{}/-").find(static_cast<char>(c)) != std::string_view::npos)
      em += 0.36;
    else if (c == 'm' || c == 'w' || c == 'M' || c == 'W')
      em += 0.9;
    else if (c >= 'A' && c <= 'Z')
      em += 0.72;
    else
      em += 0.62;
  }
  return em * FontPx(f) * (f.bold ? 1.05 : 1.0);
}

std::string SvgCanvas::Finish() const {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width_) + "\" height=\"" + Num(height_) +
         "\" viewBox=\"0 0 " + Num(width_) + " " + Num(height_) + "\">\n" + body_ + "</svg>\n";
}

}  // namespace mmtwin::report

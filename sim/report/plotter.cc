// SPDX-License-Identifier: Apache-2.0
// The plotter interface's defaults and the SVG plotter (plotter.h).
#include "report/plotter.h"

#include "report/svg_canvas.h"

namespace mmtwin::report {

Result<std::string> Plotter::Timelines(const std::vector<TimelinePanel>& panels, int width_px,
                                       int height_px) {
  return Error::Internal("this plotter (" + Extension() +
                         ") draws no timelines; mmtwin-report's Qt plotter does");
}

Result<std::string> SvgPlotter::Chart(const ChartSpec& chart, int width_px, int height_px) {
  SvgCanvas canvas(width_px, height_px);
  DrawChart(chart, canvas);
  return canvas.Finish();
}

}  // namespace mmtwin::report

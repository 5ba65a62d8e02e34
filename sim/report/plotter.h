// SPDX-License-Identifier: Apache-2.0
// How a report draws its pictures: a Plotter turns a chart (chart.h) or a set of timelines into the bytes of one
// image file. The reports depend only on this interface; a program picks the implementation:
//   SvgPlotter (here, Qt-free): charts as SVG (`mmtwin validate`); no timelines.
//   QtPlotter (gui/report.h): charts as PNG through a QPainter canvas, and timelines drawn by the explorer's
//   GanttView (mmtwin-report).
//
//   SvgPlotter plotter;
//   MMTWIN_ASSIGN_OR_RETURN(std::string svg, plotter.Chart(spec, 640, 480));
//   WriteFileAtomic("scatter." + plotter.Extension(), svg);
#pragma once

#include <string>
#include <vector>

#include "core/records/records.h"
#include "core/util/status.h"
#include "report/chart.h"

namespace mmtwin::report {

// One run's timeline: its ops (one iteration; the caller keeps them alive while plotting) under a title.
struct TimelinePanel {
  std::string title;
  const std::vector<OpRecord>* ops = nullptr;
  ParallelConfig parallel;
};

class Plotter {
 public:
  virtual ~Plotter() = default;
  // The file extension of the images it makes ("svg", "png"), without the dot.
  virtual std::string Extension() const = 0;
  // `chart` drawn at width_px x height_px. Errors: the image could not be encoded.
  virtual Result<std::string> Chart(const ChartSpec& chart, int width_px, int height_px) = 0;
  // The panels stacked top to bottom on one time scale (the longest run's), each a row per device with its
  // compute and communication lanes. The default: an error saying this plotter draws no timelines.
  virtual Result<std::string> Timelines(const std::vector<TimelinePanel>& panels, int width_px,
                                        int height_px);
};

class SvgPlotter final : public Plotter {
 public:
  std::string Extension() const override { return "svg"; }
  Result<std::string> Chart(const ChartSpec& chart, int width_px, int height_px) override;
};

}  // namespace mmtwin::report

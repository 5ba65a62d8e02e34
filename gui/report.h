// SPDX-License-Identifier: Apache-2.0
// mmtwin-report's Qt side. The reproduction reports themselves are Qt-free (report/report.h: the sweeps, tables,
// paper values, templates and the one chart writer); this program draws their pictures with Qt: QtPlotter is the
// report::Plotter (report/plotter.h) that renders charts through the QPainter canvas (chart.h) as PNG, and
// timelines with the explorer's GanttView (views.h), offscreen. mmtwin_report_main.cc is the command line.
//
//   QApplication app(argc, argv);            // offscreen is fine (QT_QPA_PLATFORM=offscreen)
//   QtPlotter plotter;
//   MMTWIN_RETURN_IF_ERROR(report::GenerateReport(options, plotter));
#pragma once

#include <string>
#include <vector>

#include "report/plotter.h"

namespace mmtwin::gui {

class QtPlotter final : public report::Plotter {
 public:
  std::string Extension() const override { return "png"; }
  // The chart on a white w x h image (report/chart.h's layout, QPainter's text), as PNG bytes.
  Result<std::string> Chart(const report::ChartSpec& chart, int width_px, int height_px) override;
  // One GanttView per panel (title, rows per device and lane, ops coloured by kind), stacked, all on the longest
  // panel's time span, not interactive; as PNG bytes.
  Result<std::string> Timelines(const std::vector<report::TimelinePanel>& panels, int width_px,
                                int height_px) override;
};

}  // namespace mmtwin::gui

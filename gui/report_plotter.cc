// SPDX-License-Identifier: Apache-2.0
// The Qt plotter of mmtwin-report (report.h).
#include <QPalette>
#include <QVBoxLayout>
#include <QWidget>

#include <algorithm>
#include <memory>

#include "chart.h"
#include "report.h"
#include "views.h"

namespace mmtwin::gui {

Result<std::string> QtPlotter::Chart(const report::ChartSpec& chart, int width_px, int height_px) {
  return RenderChartPng(chart, width_px, height_px);
}

Result<std::string> QtPlotter::Timelines(const std::vector<report::TimelinePanel>& panels, int width_px,
                                         int height_px) {
  QWidget page;
  page.setAutoFillBackground(true);
  QPalette pal = page.palette();
  pal.setColor(QPalette::Window, Qt::white);
  page.setPalette(pal);
  auto* layout = new QVBoxLayout(&page);
  layout->setContentsMargins(4, 4, 4, 4);
  std::vector<GanttView*> views;
  double end_us = 0;
  for (const report::TimelinePanel& p : panels) {
    if (!p.ops) return Error::Internal("a timeline panel without ops");
    auto* v = new GanttView(&page);
    v->SetOps(p.ops, p.parallel);
    end_us = std::max(end_us, v->model().end_us());
    views.push_back(v);
  }
  for (size_t i = 0; i < views.size(); ++i) {
    views[i]->SetFullSpan(end_us);
    views[i]->SetInteractive(false);
    views[i]->SetTitle(QString::fromStdString(panels[i].title));
    layout->addWidget(views[i]);
  }
  return RenderWidgetPng(page, width_px, height_px);
}

}  // namespace mmtwin::gui

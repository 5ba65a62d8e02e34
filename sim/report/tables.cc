// SPDX-License-Identifier: Apache-2.0
// Paper-vs-mmtwin tables (tables.h).
#include "report/tables.h"

#include <cmath>
#include <cstdlib>

#include "report/chart.h"

namespace mmtwin::report {

void ReportTable::Add(const std::string& row, const std::string& figure, double mmtwin, int decimals,
                      const std::string& run) {
  rows.push_back({row, figure, paper ? paper->Value(row, figure) : std::string(), mmtwin, decimals, run});
}

bool ReportTable::HasRow(const std::string& row) const {
  for (const Figure& f : rows)
    if (f.row == row) return true;
  return false;
}

bool ReportTable::HasFigure(const std::string& figure) const {
  for (const Figure& f : rows)
    if (f.figure == figure) return true;
  return false;
}

Result<ReportTable> NewTable(const Paper& paper, const std::string& name) {
  MMTWIN_ASSIGN_OR_RETURN(const PaperTable* p, paper.Table(name));
  ReportTable t;
  t.name = name;
  t.paper_ref = p->ref;
  t.row_header = p->row_header;
  t.paper = p;
  return t;
}

std::string MarkdownTable(const ReportTable& t) {
  std::string md =
      "| " + t.row_header + " | figure | paper (" + t.paper_ref + ") | mmtwin | mmtwin / paper | run |\n";
  md += "|---|---|---:|---:|---:|---|";
  for (const Figure& f : t.rows) {
    const double paper = PaperNumber(f.paper);
    std::string ratio = "n/a";
    if (std::isfinite(paper) && paper != 0) ratio = Fixed(f.mmtwin / paper, 2);
    md += "\n| " + f.row + " | " + f.figure + " | " + (f.paper.empty() ? "n/a" : f.paper) + " | " +
          Fixed(f.mmtwin, f.decimals) + " | " + ratio + " | " + f.run + " |";
  }
  return md;
}

double PaperNumber(const std::string& s) {
  if (s.empty()) return kNaN;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' ? v : kNaN;
}

double Cell(const ReportTable& t, const std::string& row, const std::string& figure, bool paper) {
  double x = kNaN;
  for (const Figure& f : t.rows)
    if (f.row == row && f.figure == figure) x = paper ? PaperNumber(f.paper) : f.mmtwin;
  return x;
}

std::vector<double> Column(const ReportTable& t, const std::string& figure,
                           const std::vector<std::string>& rows, bool paper) {
  std::vector<double> v;
  for (const std::string& row : rows) v.push_back(Cell(t, row, figure, paper));
  return v;
}

Status CheckPaperValuesShown(const Paper& paper, const std::vector<const ReportTable*>& tables) {
  for (const auto& [name, pt] : paper.tables) {
    const ReportTable* shown = nullptr;
    for (const ReportTable* t : tables)
      if (t->name == name) shown = t;
    for (const auto& [row, figures] : pt.values)
      for (const auto& [figure, value] : figures) {
        bool found = false;
        if (shown)
          for (const Figure& f : shown->rows)
            found = found || ((row == "*" || f.row == row) && f.figure == figure);
        if (!found)
          return Error::At(paper.file, value.line, "tables." + name + ".values." + row + "." + figure,
                           shown ? "the report's table has no such row and figure (a misspelt row or figure?)"
                                 : "the report shows no table '" + name + "'");
      }
  }
  return Status();
}

std::string Fixed(double v, int decimals) { return FormatFixed(v, decimals); }

std::string FixedOrNa(double v, int decimals) {
  return std::isfinite(v) ? FormatFixed(v, decimals) : std::string("n/a");
}

std::string Pct(double fraction) {
  const double pct = 100 * fraction;
  return Fixed(std::fabs(pct) < 0.05 ? 0.0 : pct, 1) + "%";
}

}  // namespace mmtwin::report

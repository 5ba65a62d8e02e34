// SPDX-License-Identifier: Apache-2.0
// Paper-vs-mmtwin tables: one row per figure (the paper's value from paper.yaml, mmtwin's value, their ratio and
// the run it came from), written as the six-column Markdown table every report shows.
//
//   MMTWIN_ASSIGN_OR_RETURN(ReportTable t, NewTable(paper, "main"));
//   t.Add("6B+20B", "GPU-days, baseline", r->summary->gpu_days, 1, RunRef(*r));   // paper: "61.8" (paper.yaml)
//   std::string md = MarkdownTable(t);
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "report/paper.h"

namespace mmtwin::report {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Figure {
  std::string row;     // e.g. "ISF, w MB"
  std::string figure;  // e.g. "GPU-days"
  // As printed in the paper ("" = not reported). A plain number gets a ratio; anything else (a range
  // "1.5–2.0", "OOM", "≈ 30") is shown as written with the ratio n/a.
  std::string paper;
  double mmtwin = 0;
  int decimals = 2;
  std::string run;  // "sweep#index", "A / B", "A − B", or "sweep#index (plan...)" (see the report's header)
};

struct ReportTable {
  std::string name;        // its paper.yaml table and its template name
  std::string paper_ref;   // "Table 5", "Fig. 8, §8.1"
  std::string row_header;  // "method"
  std::vector<Figure> rows;
  const PaperTable* paper = nullptr;  // where Add finds the paper's values (null: none)

  // Appends a row, its paper value looked up in `paper`.
  void Add(const std::string& row, const std::string& figure, double mmtwin, int decimals,
           const std::string& run);
  // Whether some row has this label, or this figure.
  bool HasRow(const std::string& row) const;
  bool HasFigure(const std::string& figure) const;
};

// The table `name` of paper.yaml, empty. Errors: no such table.
Result<ReportTable> NewTable(const Paper& paper, const std::string& name);

// The six-column table (header, separator, rows; no trailing newline): row, figure, paper (ref), mmtwin,
// mmtwin / paper, run.
std::string MarkdownTable(const ReportTable& t);
// The paper's value as a number: NaN unless `s` is a plain number (strtod consumes all of it).
double PaperNumber(const std::string& s);
// The value of (row, figure) in `t`, paper or mmtwin; NaN where there is none.
double Cell(const ReportTable& t, const std::string& row, const std::string& figure, bool paper = false);
// The values of `figure` in `t` for `rows` (Cell of each).
std::vector<double> Column(const ReportTable& t, const std::string& figure,
                           const std::vector<std::string>& rows, bool paper);
// Every paper value of the report's tables is shown in one of its rows (a "*" value in at least one): a value
// no row shows is a misspelt row or figure in paper.yaml. Errors name `paper.yaml:line: tables.T.values.R.F`.
Status CheckPaperValuesShown(const Paper& paper, const std::vector<const ReportTable*>& tables);

// printf("%.*f") ("nan" when v is NaN: the tables show what they hold), and the prose's form: "n/a" when v is
// not finite.
std::string Fixed(double v, int decimals);
std::string FixedOrNa(double v, int decimals);
// A share in percent with one decimal ("0.0%", never "-0.0%" for a ratio a rounding error left below zero).
std::string Pct(double fraction);

}  // namespace mmtwin::report

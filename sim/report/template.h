// SPDX-License-Identifier: Apache-2.0
// Report templates: a report's prose is Markdown (data/NAME/template.md) with named holes that the report's code
// fills (Bindings). The template says what is written; the code says what each name is.
//
//   {{NAME}}                       a bound value (text the code computed: "2.90", "lower", a whole list)
//   {{table:NAME}}                 a bound table: its Markdown table lines (ReportTable, tables.h)
//   {{figure:NAME}}                a bound figure's file name ("ablation.png"): ![alt text]({{figure:ablation}})
//   {{cell:TABLE|ROW|FIGURE|D}}    mmtwin's value of a table's row and figure with D decimals ("n/a" when the
//                                  table is empty, the row lacks that figure or the value is not finite)
//   {{paper:TABLE|ROW|FIGURE}}     the paper's value there, as printed ("n/a" when none)
//   {{#if NAME}} ... {{else}} ... {{/if}}   a bound flag chooses (else optional; ifs nest)
//   {{! text }}                    a comment: not written
// In cell and paper, an argument $NAME is the bound value NAME (a row chosen by the code: {{cell:t|$top|MFU|1}}).
// A line holding only an if, else, /if or comment (and spaces) is dropped whole, newline included, so block
// directives can stand on their own lines; every other character is written as it is.
//
// Errors name `file:line`: a directive that does not parse, an if without its /if, and (at Render) any name the
// bindings do not hold, in either branch of an if, a cell whose table holds rows but no such row or figure, and a
// figure bound but never shown.
//
//   MMTWIN_ASSIGN_OR_RETURN(Template t, LoadTemplate(dir + "/template.md"));
//   Bindings b;
//   b.SetValue("speedup", "2.90");
//   b.SetTable("main", &main_table);
//   b.SetFigure("main", "main.png");
//   MMTWIN_ASSIGN_OR_RETURN(std::string md, Render(t, b));
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "report/tables.h"

namespace mmtwin::report {

class Bindings {
 public:
  void SetValue(const std::string& name, std::string text) { values_[name] = std::move(text); }
  void SetFlag(const std::string& name, bool on) { flags_[name] = on; }
  // The table must outlive the bindings' use.
  void SetTable(const std::string& name, const ReportTable* table) { tables_[name] = table; }
  void SetFigure(const std::string& name, std::string file) { figures_[name] = std::move(file); }

  const std::map<std::string, std::string>& values() const { return values_; }
  const std::map<std::string, bool>& flags() const { return flags_; }
  const std::map<std::string, const ReportTable*>& tables() const { return tables_; }
  const std::map<std::string, std::string>& figures() const { return figures_; }

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> flags_;
  std::map<std::string, const ReportTable*> tables_;
  std::map<std::string, std::string> figures_;
};

struct TemplateNode {
  enum class Kind { kText, kValue, kTable, kFigure, kCell, kPaper, kIf };
  Kind kind = Kind::kText;
  long line = 0;                  // where the directive starts (1-based)
  std::string text;               // kText: the text; otherwise the name (kCell, kPaper: the table)
  std::vector<std::string> args;  // kCell: row, figure, decimals; kPaper: row, figure
  std::vector<TemplateNode> then_nodes, else_nodes;  // kIf
};

struct Template {
  std::string file;  // for errors
  std::vector<TemplateNode> nodes;
};

// Parses `text` (named `file` in errors).
Result<Template> ParseTemplate(const std::string& text, const std::string& file);
// Reads and parses the file.
Result<Template> LoadTemplate(const std::string& path);

// The names a template uses, by kind (both branches of every if), for checks and tests.
struct TemplateNames {
  std::vector<std::string> values, flags, tables, figures;
};
TemplateNames NamesOf(const Template& t);

// The filled-in text. Errors: see above.
Result<std::string> Render(const Template& t, const Bindings& b);

}  // namespace mmtwin::report

// SPDX-License-Identifier: Apache-2.0
// Report templates (report/template.h): every directive renders what its binding holds, block directives on their
// own lines leave no line behind, and every name the bindings lack is an error at the template's file:line (in
// either branch of an if); a figure drawn but not shown is an error too. The shipped templates parse and show
// exactly the figures their reports draw.
#include "report/template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "report/report.h"

namespace mmtwin::report {
namespace {

namespace fs = std::filesystem;

ReportTable Sample() {
  static const PaperTable paper = [] {
    PaperTable p;
    p.values["6B+20B"]["GPU-days"] = {"61.8", "", 3};
    p.values["*"]["speed-up"] = {"1.5–2.0", "", 4};
    return p;
  }();
  ReportTable t;
  t.name = "main";
  t.paper_ref = "Table 2";
  t.row_header = "model";
  t.paper = &paper;
  t.Add("6B+20B", "GPU-days", 56.123, 1, "main#0");
  t.Add("6B+20B", "speed-up", 2.5, 2, "main#0 / main#1");
  t.Add("6B+34B", "GPU-days", kNaN, 1, "main#2");
  return t;
}

Result<std::string> RenderText(const std::string& text, const Bindings& b) {
  MMTWIN_ASSIGN_OR_RETURN(Template t, ParseTemplate(text, "t.md"));
  return Render(t, b);
}

std::string ErrorOf(const std::string& text, const Bindings& b) {
  auto r = RenderText(text, b);
  return r.ok() ? std::string("(no error)") : r.error().message();
}

TEST(Template, RendersValuesTablesFiguresCellsAndPaperValues) {
  const ReportTable t = Sample();
  Bindings b;
  b.SetValue("n", "2 sampled iterations");
  b.SetValue("row", "6B+20B");
  b.SetTable("main", &t);
  b.SetFigure("main", "main.png");
  auto md = RenderText(
      "# T\n\n{{n}}; {{cell:main|6B+20B|GPU-days|2}} vs {{paper:main|6B+20B|GPU-days}} "
      "({{cell:main|$row|speed-up|1}}, "
      "{{paper:main|$row|speed-up}}), {{cell:main|6B+34B|GPU-days|1}}, {{cell:main|6B+34B|speed-up|1}}\n\n"
      "{{table:main}}\n\n![x]({{figure:main}})\n",
      b);
  ASSERT_TRUE(md.ok()) << md.error().message();
  EXPECT_EQ(*md,
            "# T\n\n2 sampled iterations; 56.12 vs 61.8 (2.5, 1.5–2.0), n/a, n/a\n\n"
            "| model | figure | paper (Table 2) | mmtwin | mmtwin / paper | run |\n"
            "|---|---|---:|---:|---:|---|\n"
            "| 6B+20B | GPU-days | 61.8 | 56.1 | 0.91 | main#0 |\n"
            "| 6B+20B | speed-up | 1.5–2.0 | 2.50 | n/a | main#0 / main#1 |\n"
            "| 6B+34B | GPU-days | n/a | nan | n/a | main#2 |\n\n"
            "![x](main.png)\n");
}

TEST(Template, IfElseChoosesAndStandaloneBlockLinesVanish) {
  Bindings b;
  b.SetFlag("on", true);
  b.SetFlag("off", false);
  b.SetValue("v", "V");
  auto md = RenderText(
      "{{! a comment line }}\na\n{{#if on}}\nb {{v}}\n  {{#if off}}\nno\n{{else}}\nc\n{{/if}}\n{{/if}}\n"
      "inline: [{{#if off}}x{{else}}y{{/if}}] [{{#if on}}z{{/if}}]{{! inline comment }}\nend\n",
      b);
  ASSERT_TRUE(md.ok()) << md.error().message();
  EXPECT_EQ(*md, "a\nb V\nc\ninline: [y] [z]\nend\n");
}

TEST(Template, ErrorsNameTheFileAndLine) {
  const ReportTable t = Sample();
  const ReportTable empty;
  Bindings b;
  b.SetValue("v", "V");
  b.SetFlag("on", true);
  b.SetTable("main", &t);
  b.SetTable("none", &empty);
  EXPECT_EQ(ErrorOf("a\n\nx {{w}}\n", b), "t.md:3: unknown value 'w' (the report's code binds no such name)");
  EXPECT_EQ(ErrorOf("{{figure:f}}\n", b),
            "t.md:1: unknown figure 'f' (the report's code binds no such name)");
  EXPECT_EQ(ErrorOf("\n{{table:x}}", b), "t.md:2: unknown table 'x' (the report's code binds no such name)");
  // Both branches are checked, whichever is written.
  EXPECT_EQ(ErrorOf("{{#if on}}\nok\n{{else}}\n{{missing}}\n{{/if}}\n", b),
            "t.md:4: unknown value 'missing' (the report's code binds no such name)");
  EXPECT_EQ(ErrorOf("{{#if nope}}x{{/if}}", b),
            "t.md:1: unknown flag 'nope' (the report's code binds no such name)");
  EXPECT_EQ(ErrorOf("\n\n{{cell:main|6B+99B|GPU-days|1}}", b), "t.md:3: table 'main' has no row '6B+99B'");
  EXPECT_EQ(ErrorOf("{{cell:main|6B+20B|GPU-hours|1}}", b), "t.md:1: table 'main' has no figure 'GPU-hours'");
  EXPECT_EQ(ErrorOf("{{cell:main|$nope|GPU-days|1}}", b),
            "t.md:1: unknown value 'nope' (the report's code binds no such name)");
  EXPECT_EQ(ErrorOf("{{cell:none|any|thing|1}}", b), "(no error)");  // an empty table: n/a
  // Parse errors.
  EXPECT_EQ(ErrorOf("a\n{{#if on}}\nb\n", b), "t.md:2: {{#if on}} without its {{/if}}");
  EXPECT_EQ(ErrorOf("a\n{{/if}}\n", b), "t.md:2: {{/if}} without its {{#if}}");
  EXPECT_EQ(ErrorOf("x {{v\n", b), "t.md:1: '{{' without its '}}'");
  EXPECT_EQ(ErrorOf("{{chart:x}}", b),
            "t.md:1: {{chart:x}}: unknown directive 'chart:' (table:, figure:, cell:, paper:)");
  EXPECT_EQ(ErrorOf("{{cell:main|a|b}}", b),
            "t.md:1: {{cell:main|a|b}}: cell takes 4 arguments separated by '|' (TABLE|ROW|FIGURE|DECIMALS)");
  EXPECT_EQ(ErrorOf("{{cell:main|a|b|x}}", b), "t.md:1: {{cell:main|a|b|x}}: decimals 'x' is not 0..9");
  EXPECT_EQ(ErrorOf("{{a b}}", b), "t.md:1: {{a b}}: 'a b' is not a name (letters, digits, _ - .)");
}

TEST(Template, AFigureDrawnButNotShownIsAnError) {
  Bindings b;
  b.SetFigure("shown", "shown.png");
  b.SetFigure("lost", "lost.png");
  EXPECT_EQ(ErrorOf("![a]({{figure:shown}})\n", b),
            "t.md: figure 'lost' (lost.png) is drawn but the template does not show it: add {{figure:lost}}");
  // Shown in a branch not taken still counts as shown (the template names it).
  b.SetFlag("off", false);
  EXPECT_EQ(ErrorOf("![a]({{figure:shown}}){{#if off}}{{figure:lost}}{{/if}}", b), "(no error)");
}

// The shipped templates parse, and each shows exactly the figures its report draws (the file names the report
// writes: gui/tests/mmtwin_report_test.cc checks them on the real reports) and names only tables its paper.yaml defines.
TEST(Template, ShippedTemplatesShowEveryFigureTheirReportDraws) {
  const std::map<std::string, std::set<std::string>> figures = {
      {"omnibal", {"ablation", "main", "data", "partition", "memory", "datasets", "models", "timeline"}},
      {"orchmllm", {"scaling", "ablation", "a2a", "overhead"}},
      {"longvila", {"sp32", "sp64", "max-context", "sharding"}},
      {"tune", {"best-vs-paper", "pareto"}},
      {"policies", {"image", "audio", "video", "text", "split"}},
      {"validation", {"iteration"}}};
  const std::string data = fs::path(MMTWIN_SOURCE_DIR) / "sim/report/data";
  for (const auto& [report, want] : figures) {
    auto t = LoadTemplate(data + "/" + report + "/template.md");
    ASSERT_TRUE(t.ok()) << t.error().message();
    const TemplateNames names = NamesOf(*t);
    EXPECT_EQ(std::set<std::string>(names.figures.begin(), names.figures.end()), want) << report;
    EXPECT_EQ(std::count(names.values.begin(), names.values.end(), "header"), 1) << report;
    if (report == "validation") continue;
    auto paper = LoadPaper(data + "/" + report + "/paper.yaml");
    ASSERT_TRUE(paper.ok()) << paper.error().message();
    for (const std::string& table : names.tables)
      EXPECT_TRUE(paper->tables.count(table)) << report << ": " << table;
  }
  EXPECT_EQ(figures.size(), ReportNames().size());
}

}  // namespace
}  // namespace mmtwin::report

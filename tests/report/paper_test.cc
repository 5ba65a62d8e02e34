// SPDX-License-Identifier: Apache-2.0
// A report's paper values (report/paper.h, report/tables.h): paper.yaml read with the strict loader (values as
// printed, "*" rows, sources, claims, facts), every error at `file:line: field`, tables filled from it with the
// old six-column Markdown, and a paper value no table row shows reported at its line. The shipped files load.
#include "report/paper.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "report/tables.h"

namespace mmtwin::report {
namespace {

namespace fs = std::filesystem;

constexpr char kPaper[] =
    "paper: P\n"                                    // 1
    "tables:\n"                                     // 2
    "  main:\n"                                     // 3
    "    ref: Table 2\n"                            // 4
    "    rows: model\n"                             // 5
    "    values:\n"                                 // 6
    "      6B+20B:\n"                               // 7
    "        GPU-days: 61.80\n"                     // 8
    "        ratio: {value: 0.0, source: here}\n"   // 9
    "      \"*\": {range: 1.5–2.0}\n"               // 10
    "  empty: {ref: §1, rows: x, values: {}}\n"     // 11
    "claims:\n"                                     // 12
    "  over: {low: 2000, high: .inf, source: s}\n"  // 13
    "  par: {low: 0.8, high: 1.2, parity: 1, source: s}\n"
    "facts:\n"
    "  machine: 2 vCPU\n";

std::string ErrorOf(const std::string& text) {
  auto p = ParsePaper(text, "p.yaml");
  return p.ok() ? std::string("(no error)") : p.error().message();
}

// Shares in the prose: one decimal, and a rounding error below zero is 0.0%, never -0.0% (the tune report's
// "bubble -0.0%" on a run without a pipeline).
TEST(Tables, PctNeverShowsNegativeZero) {
  EXPECT_EQ(Pct(0.196), "19.6%");
  EXPECT_EQ(Pct(-1e-9), "0.0%");
  EXPECT_EQ(Pct(-0.0004), "0.0%");
  EXPECT_EQ(Pct(-0.01), "-1.0%");
  EXPECT_EQ(Pct(1.0), "100.0%");
}

TEST(Paper, ReadsValuesAsPrintedWithStarRowsClaimsAndFacts) {
  auto p = ParsePaper(kPaper, "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->title, "P");
  auto t = p->Table("main");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->ref, "Table 2");
  EXPECT_EQ((*t)->row_header, "model");
  EXPECT_EQ((*t)->Value("6B+20B", "GPU-days"), "61.80");  // the text, not a number
  EXPECT_EQ((*t)->Value("6B+20B", "ratio"), "0.0");
  EXPECT_EQ((*t)->values.at("6B+20B").at("ratio").source, "here");
  EXPECT_EQ((*t)->values.at("6B+20B").at("GPU-days").line, 8);
  EXPECT_EQ((*t)->Value("6B+34B", "range"), "1.5–2.0");  // "*"
  EXPECT_EQ((*t)->Value("6B+34B", "GPU-days"), "");
  auto over = p->Claim("over");
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->low, 2000);
  EXPECT_TRUE(std::isinf(over->high));
  EXPECT_EQ(over->parity, 0);
  EXPECT_EQ(p->Claim("par")->parity, 1);
  EXPECT_EQ(*p->Fact("machine"), "2 vCPU");
  EXPECT_EQ(p->Table("nope").error().message(),
            "p.yaml: tables.nope: not defined (the report's code needs it)");
  EXPECT_EQ(p->Claim("nope").error().message(),
            "p.yaml: claims.nope: not defined (the report's code needs it)");
  EXPECT_EQ(p->Fact("nope").error().message(),
            "p.yaml: facts.nope: not defined (the report's code needs it)");
}

TEST(Paper, ErrorsNameFileLineAndField) {
  EXPECT_EQ(ErrorOf("paper: P\ntabels: {}\n"),
            "p.yaml:2: tabels: unknown key; valid keys are: paper, source, tables, claims, facts");
  EXPECT_EQ(ErrorOf("tables:\n  t:\n    ref: R\n    rows: r\n    value: {}\n"),
            "p.yaml:5: tables.t.value: unknown key; valid keys are: ref, rows, source, values");
  EXPECT_EQ(ErrorOf("tables:\n  t:\n    rows: r\n    values: {}\n"), "p.yaml:3: tables.t.ref: missing");
  EXPECT_EQ(ErrorOf("tables:\n  t:\n    ref: R\n    rows: r\n"),
            "p.yaml:3: tables.t.values: missing (an empty mapping {} when none)");
  EXPECT_EQ(ErrorOf("tables:\n  t:\n    ref: R\n    rows: r\n    values:\n      a:\n        f: [1, 2]\n"),
            "p.yaml:7: tables.t.values.a.f: expected a text");
  EXPECT_EQ(
      ErrorOf(
          "tables:\n  t:\n    ref: R\n    rows: r\n    values:\n      a:\n        f: {value: 1, from: x}\n"),
      "p.yaml:7: tables.t.values.a.f.from: unknown key; valid keys are: value, source");
  EXPECT_EQ(ErrorOf("claims:\n  c: {low: 2, high: 1, source: s}\n"), "p.yaml:2: claims.c.high: below low");
  EXPECT_EQ(ErrorOf("claims:\n  c: {low: two, high: 1, source: s}\n"),
            "p.yaml:2: claims.c.low: 'two' is not a number (or .inf)");
  EXPECT_EQ(ErrorOf("claims:\n  c: {low: 1, high: 2}\n"), "p.yaml:2: claims.c.source: missing");
  EXPECT_EQ(ErrorOf("facts: [a]\n"), "p.yaml:1: facts: expected a mapping");
  // The strict loader: a key given twice.
  EXPECT_NE(ErrorOf("paper: a\npaper: b\n").find("p.yaml:2: paper: duplicate key"), std::string::npos)
      << ErrorOf("paper: a\npaper: b\n");
  EXPECT_NE(ErrorOf("tables: {\n").find("p.yaml:"), std::string::npos);
}

TEST(Paper, TablesTakeTheirPaperValuesAndWriteTheSixColumns) {
  auto p = ParsePaper(kPaper, "p.yaml");
  ASSERT_TRUE(p.ok());
  auto t = NewTable(*p, "main");
  ASSERT_TRUE(t.ok());
  t->Add("6B+20B", "GPU-days", 56.1, 1, "s#0");
  t->Add("6B+20B", "ratio", 3, 2, "s#1");
  t->Add("6B+34B", "range", 1.75, 2, "s#2");
  EXPECT_EQ(MarkdownTable(*t),
            "| model | figure | paper (Table 2) | mmtwin | mmtwin / paper | run |\n"
            "|---|---|---:|---:|---:|---|\n"
            "| 6B+20B | GPU-days | 61.80 | 56.1 | 0.91 | s#0 |\n"
            "| 6B+20B | ratio | 0.0 | 3.00 | n/a | s#1 |\n"  // a paper value of 0: no ratio
            "| 6B+34B | range | 1.5–2.0 | 1.75 | n/a | s#2 |");
  EXPECT_DOUBLE_EQ(Cell(*t, "6B+20B", "GPU-days"), 56.1);
  EXPECT_DOUBLE_EQ(Cell(*t, "6B+20B", "GPU-days", true), 61.8);
  EXPECT_TRUE(std::isnan(Cell(*t, "6B+34B", "range", true)));  // not a plain number
  EXPECT_TRUE(std::isnan(Cell(*t, "6B+34B", "GPU-days")));
  EXPECT_FALSE(NewTable(*p, "nope").ok());
  // Every paper value shown: the table above shows all of main's; "empty" has none; the report shows no "empty".
  auto empty = NewTable(*p, "empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(CheckPaperValuesShown(*p, {&*t, &*empty}).ok());
  ReportTable partial = *t;
  partial.rows.erase(partial.rows.begin());  // GPU-days of 6B+20B no longer shown
  EXPECT_EQ(CheckPaperValuesShown(*p, {&partial}).error().message(),
            "p.yaml:8: tables.main.values.6B+20B.GPU-days: the report's table has no such row and figure (a "
            "misspelt "
            "row or figure?)");
  EXPECT_EQ(CheckPaperValuesShown(*p, {}).error().message(),
            "p.yaml:10: tables.main.values.*.range: the report shows no table 'main'");
}

TEST(Paper, ShippedPaperFilesLoad) {
  const fs::path data = fs::path(MMTWIN_SOURCE_DIR) / "sim/report/data";
  for (const char* f :
       {"omnibal/paper.yaml", "orchmllm/paper.yaml", "longvila/paper.yaml", "validation/runs.yaml"}) {
    auto p = LoadPaper((data / f).string());
    EXPECT_TRUE(p.ok()) << f << ": " << p.error().message();
  }
  auto omnibal = LoadPaper((data / "omnibal/paper.yaml").string());
  ASSERT_TRUE(omnibal.ok());
  EXPECT_EQ((*omnibal->Table("main"))->Value("6B+20B", "speed-up (baseline / OmniBal)"), "2.90");
  EXPECT_EQ((*omnibal->Table("partition"))->Value("(4) BMP", "Δ SUM(comm) (MB)"), "-21.0");
  auto longvila = LoadPaper((data / "longvila/paper.yaml").string());
  ASSERT_TRUE(longvila.ok());
  EXPECT_EQ((*longvila->Table("ctx"))->Value("256", "max context (K tokens), 2d"), "> 2,000");
}

}  // namespace
}  // namespace mmtwin::report

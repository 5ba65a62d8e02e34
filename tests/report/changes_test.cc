// SPDX-License-Identifier: Apache-2.0
// Before -> after sections (report/changes.h): per section the mean error against the paper before and after,
// closer / farther counts, by hand on small READMEs; rows without a numeric paper value and rows of only one
// generation are left out; the section goes before the first "### " heading.
#include "report/changes.h"

#include <gtest/gtest.h>

namespace mmtwin::report {
namespace {

std::string Readme(double a, double b, double c) {
  auto row = [](const std::string& r, const std::string& f, const std::string& paper, double v) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "| %s | %s | %s | %.2f | x | s#0 |\n", r.c_str(), f.c_str(), paper.c_str(),
                  v);
    return std::string(buf);
  };
  return "# Title\n\nintro\n\n### Main (Table 2)\n\n| model | figure | paper (Table 2) | mmtwin | mmtwin / "
         "paper | "
         "run |\n|---|---|---:|---:|---:|---|\n" +
         row("6B", "GPU-days", "10", a) + row("6B", "speed-up", "1.5–2.0", 3) + "\n### Memory (Table 7)\n\n" +
         row("base", "VRAM_1", "20", b) + row("base", "VRAM_2", "40", c) + "\n## Where mmtwin differs\n";
}

TEST(BeforeAfter, MeanErrorsAndMovesPerSectionByHand) {
  // Main: 12 -> 10.5 against 10 (error 20% -> 5%, closer). Memory: VRAM_1 30 -> 20 (50% -> 0%, closer), VRAM_2
  // 40 -> 50 (0% -> 25%, farther).
  const std::string before = Readme(12, 30, 40), after = Readme(10.5, 20, 50);
  const std::string s = BeforeAfterSection(before, after);
  EXPECT_NE(s.find("| Main (Table 2) | 1 | 20.0% | 5.0% | 1 | 0 |"), std::string::npos) << s;
  EXPECT_NE(s.find("| Memory (Table 7) | 2 | 25.0% | 12.5% | 1 | 1 |"), std::string::npos) << s;
  // Unchanged figures: same error, neither closer nor farther.
  EXPECT_NE(BeforeAfterSection(after, after).find("| Main (Table 2) | 1 | 5.0% | 5.0% | 0 | 0 |"),
            std::string::npos);
  // Nothing comparable: no section.
  EXPECT_EQ(BeforeAfterSection("# nothing\n", after), "");
  // A regenerated README's own before -> after table is not compared again.
  const std::string twice = InsertBeforeAfter(after, s);
  EXPECT_EQ(BeforeAfterSection(twice, twice), BeforeAfterSection(after, after));
}

TEST(BeforeAfter, InsertedBeforeTheFirstSection) {
  const std::string md = Readme(1, 2, 3);
  const std::string out = InsertBeforeAfter(md, "### Before → after\n\nX\n\n");
  EXPECT_EQ(out.find("### Before → after"), md.find("### Main"));
  EXPECT_LT(out.find("### Before → after"), out.find("### Main"));
  EXPECT_EQ(InsertBeforeAfter(md, ""), md);
  EXPECT_EQ(InsertBeforeAfter("# t\n", "S\n"), "# t\n\nS\n");
}

}  // namespace
}  // namespace mmtwin::report

// SPDX-License-Identifier: Apache-2.0
// Before -> after: how a regenerated reproduction report's figures moved against the previous generation of the
// same folder (its README.md), section by section, measured against the paper. GenerateReport (report.h) adds it
// to every paper report it regenerates over an earlier one, so each modelling change shows its effect on the
// paper's headline figures where the reader looks.
//
// What is compared: the rows of every six-column paper-vs-mmtwin table (tables.h: row, figure, paper, mmtwin,
// mmtwin / paper, run) whose paper value is a plain number, keyed by their section (the "### " heading above the
// table), row and figure. Per section: how many such figures both generations have, the mean |mmtwin / paper - 1|
// before and after, and how many moved closer to the paper or farther (by more than 0.5% of the paper's value).
//
//   std::string section = BeforeAfterSection(old_readme, new_readme);   // "" when nothing is comparable
//   std::string md = InsertBeforeAfter(new_readme, section);             // before the first "### " section
#pragma once

#include <string>

namespace mmtwin::report {

std::string BeforeAfterSection(const std::string& before_md, const std::string& after_md);
// `md` with `section` inserted before its first "### " heading (at the end when it has none); `md` when `section`
// is empty.
std::string InsertBeforeAfter(const std::string& md, const std::string& section);

}  // namespace mmtwin::report

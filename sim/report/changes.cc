// SPDX-License-Identifier: Apache-2.0
// Before -> after sections of regenerated reports (changes.h).
#include "report/changes.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

namespace mmtwin::report {
namespace {

struct Cell {
  double paper = NAN, mmtwin = NAN;
};
using Key = std::tuple<std::string, std::string, std::string>;  // section, row, figure

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

// A plain number (strtod consumes all of it, thousands separators removed), else NaN.
double Number(std::string s) {
  std::string t;
  for (char c : s)
    if (c != ',') t += c;
  t = Trim(t);
  if (t.empty()) return NAN;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  return end && *end == '\0' ? v : NAN;
}

// Every six-column table row with a numeric paper and mmtwin value, in order of first appearance.
std::vector<std::pair<Key, Cell>> Rows(const std::string& md) {
  std::vector<std::pair<Key, Cell>> out;
  std::istringstream in(md);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      section = Trim(line.substr(4));
      continue;
    }
    if (line.size() < 2 || line[0] != '|') continue;
    std::vector<std::string> cells;
    size_t start = 1;
    for (size_t i = 1; i < line.size(); ++i)
      if (line[i] == '|') {
        cells.push_back(Trim(line.substr(start, i - start)));
        start = i + 1;
      }
    if (cells.size() != 6 || section.rfind("Before → after", 0) == 0) continue;
    Cell c{Number(cells[2]), Number(cells[3])};
    if (std::isnan(c.paper) || std::isnan(c.mmtwin) || c.paper == 0) continue;
    out.push_back({{section, cells[0], cells[1]}, c});
  }
  return out;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string BeforeAfterSection(const std::string& before_md, const std::string& after_md) {
  std::map<Key, Cell> before;
  for (const auto& [k, c] : Rows(before_md)) before.emplace(k, c);
  struct Acc {
    int n = 0, closer = 0, farther = 0;
    double before = 0, after = 0;
  };
  std::vector<std::pair<std::string, Acc>> sections;
  for (const auto& [k, c] : Rows(after_md)) {
    auto it = before.find(k);
    if (it == before.end()) continue;
    const std::string& section = std::get<0>(k);
    if (sections.empty() || sections.back().first != section) sections.push_back({section, Acc{}});
    Acc& a = sections.back().second;
    const double eb = std::fabs(it->second.mmtwin / c.paper - 1), ea = std::fabs(c.mmtwin / c.paper - 1);
    ++a.n;
    a.before += eb;
    a.after += ea;
    if (ea < eb - 0.005) ++a.closer;
    if (ea > eb + 0.005) ++a.farther;
  }
  if (sections.empty()) return "";
  std::string md =
      "### Before → after: this generation against the previous one\n\n"
      "Per section, the figures with a numeric paper value in both generations of this README: the mean "
      "|mmtwin / paper − 1| before and after, and how many moved closer to the paper or farther (by more "
      "than "
      "0.5% of the paper's value). The previous generation is the README this one replaced (its commit is in "
      "the repository history).\n\n"
      "| section | figures | mean error before | after | closer | farther "
      "|\n|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [name, a] : sections)
    md += "| " + name + " | " + std::to_string(a.n) + " | " + Fmt("%.1f%%", 100 * a.before / a.n) + " | " +
          Fmt("%.1f%%", 100 * a.after / a.n) + " | " + std::to_string(a.closer) + " | " +
          std::to_string(a.farther) + " |\n";
  return md + "\n";
}

std::string InsertBeforeAfter(const std::string& md, const std::string& section) {
  if (section.empty()) return md;
  size_t at = md.rfind("### ", 0) == 0 ? 0 : md.find("\n### ");
  if (at == std::string::npos) return md + "\n" + section;
  if (at > 0) ++at;
  return md.substr(0, at) + section + md.substr(at);
}

}  // namespace mmtwin::report

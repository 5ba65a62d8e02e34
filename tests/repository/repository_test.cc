// SPDX-License-Identifier: Apache-2.0
// The repository as a company adopting it sees it: a licence at the root and an SPDX line in every source, no fuzzer
// findings lying where libFuzzer dropped them, and docs that cite only what the repository holds (no path outside
// it, every cited repository path present). Each check also runs on fabricated input, so it is shown to fail.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Files of the repository's own folders (not build folders, run outputs or git's), repository-relative.
std::vector<std::string> RepositoryFiles(const fs::path& root) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), root).generic_string();
    const std::string name = it->path().filename().string();
    if (it->is_directory() && it.depth() == 0 &&
        (StartsWith(name, ".") || StartsWith(name, "build") || name == "runs" || name == "out")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) out.push_back(rel);
  }
  return out;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A source that must carry the SPDX line: C++, shell, CMake.
bool IsSource(const std::string& rel) {
  if (StartsWith(rel, "tests/fuzz/corpus/")) return false;
  const std::string name = fs::path(rel).filename().string();
  return EndsWith(rel, ".cc") || EndsWith(rel, ".h") || EndsWith(rel, ".sh") || EndsWith(rel, ".cmake") ||
         name == "CMakeLists.txt";
}

constexpr char kSpdx[] = "SPDX-License-Identifier: Apache-2.0";

// The SPDX line is the first line, or the second after a shebang.
bool HasSpdxLine(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  for (int n = 0; n < 2 && std::getline(in, line); ++n) {
    if (line.find(kSpdx) != std::string::npos) return true;
    if (!StartsWith(line, "#!")) return false;
  }
  return false;
}

TEST(RepositoryTest, LicenceAtTheRootAndSpdxInEverySource) {
  const fs::path root(MMTWIN_SOURCE_DIR);
  const std::string licence = Read(root / "LICENSE");
  EXPECT_NE(licence.find("Apache License"), std::string::npos);
  EXPECT_NE(licence.find("Version 2.0, January 2004"), std::string::npos);
  int sources = 0;
  for (const std::string& rel : RepositoryFiles(root)) {
    if (!IsSource(rel)) continue;
    ++sources;
    EXPECT_TRUE(HasSpdxLine(Read(root / rel))) << rel << ": first line (after a shebang) must be `// " << kSpdx
                                                << "` (or `# ...`)";
  }
  EXPECT_GT(sources, 250);
  // The check itself.
  EXPECT_TRUE(HasSpdxLine("// SPDX-License-Identifier: Apache-2.0\n#pragma once\n"));
  EXPECT_TRUE(HasSpdxLine("#!/usr/bin/env bash\n# SPDX-License-Identifier: Apache-2.0\nset -e\n"));
  EXPECT_FALSE(HasSpdxLine("#pragma once\n// SPDX-License-Identifier: Apache-2.0\n"));
  EXPECT_FALSE(HasSpdxLine("// SPDX-License-Identifier: MIT\n"));
  EXPECT_TRUE(IsSource("sim/CMakeLists.txt"));
  EXPECT_FALSE(IsSource("tests/fuzz/corpus/scenario_fuzz/a.cc"));
}

// libFuzzer names what it finds crash-*, oom-*, leak-*, timeout-* or slow-unit-* and drops it in the working folder.
bool IsFuzzArtefact(const std::string& name) {
  for (const char* p : {"crash-", "oom-", "leak-", "timeout-", "slow-unit-"})
    if (StartsWith(name, p)) return true;
  return false;
}

TEST(RepositoryTest, FuzzFindingsLiveInTheirCorpus) {
  const fs::path root(MMTWIN_SOURCE_DIR);
  for (const std::string& rel : RepositoryFiles(root))
    if (IsFuzzArtefact(fs::path(rel).filename().string()))
      EXPECT_TRUE(StartsWith(rel, "tests/fuzz/corpus/"))
          << rel << ": a fuzzer finding outside tests/fuzz/corpus/<target>/ (move it into its target's corpus)";
  EXPECT_TRUE(IsFuzzArtefact("oom-9b11a4df6466f1c3f191011dd6153860c7b7286f"));
  EXPECT_FALSE(IsFuzzArtefact("timeout_test.cc"));
}

// Docs and data cite only what is in the repository: no path into the sibling shared/ folder or an absolute /work
// path.
TEST(RepositoryTest, DocsCiteOnlyTheRepository) {
  const fs::path root(MMTWIN_SOURCE_DIR);
  // (Spelled in pieces so that this file does not match the checks it implements.)
  static const std::regex outside(std::string(R"re((\.\./sha)re") + R"re(red|/work/sha)re" +
                                  R"re(red|/work/main))re");
  int scanned = 0;
  for (const std::string& rel : RepositoryFiles(root)) {
    if (!(EndsWith(rel, ".md") || EndsWith(rel, ".h") || EndsWith(rel, ".cc") || EndsWith(rel, ".yaml") ||
          EndsWith(rel, ".sh") || rel == "CMakeLists.txt") ||
        StartsWith(rel, "tests/fuzz/corpus/"))
      continue;
    if (rel == "tests/repository/repository_test.cc") continue;  // the patterns themselves
    const std::string text = Read(root / rel);
    ++scanned;
    std::smatch m;
    EXPECT_FALSE(std::regex_search(text, m, outside)) << rel << " cites a path outside the repository: " << m.str();
  }
  EXPECT_GT(scanned, 300);
}

// Repository paths a text cites: tokens that start with a top folder of the repository (or a folder of sim/, as
// the sim/ docs write them), in Markdown anywhere and in code and YAML in comments only (code and data paths are
// tested by what uses them). Placeholders (NAME, SUITE, x-*.yaml, {a,b}, <dir>) are not citations.
struct Citation {
  int line = 0;
  std::string path;
};

std::vector<Citation> CitedPaths(const std::string& text, bool whole_lines, const std::string& comment) {
  static const std::regex cite(
      R"re((^|[^A-Za-z0-9_./-])((sim|backend|gui|tests|scenarios|traces|reports|core|driver|sweep|calibrate|engine|cli)/[A-Za-z0-9_./-]*[A-Za-z0-9_]))re");
  static const std::regex placeholder(R"re(/[A-Z]{2,}|[*{}<>$]|…)re");
  std::vector<Citation> out;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string part = line;
    if (!whole_lines) {
      const size_t c = line.find(comment);
      if (c == std::string::npos) continue;
      part = line.substr(c);
    }
    for (auto it = std::sregex_iterator(part.begin(), part.end(), cite); it != std::sregex_iterator(); ++it) {
      const size_t start = it->position(2);
      const size_t end = part.find_first_of(" \t`'\"()[],;:", start);
      const std::string token = part.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (std::regex_search(token, placeholder)) continue;
      out.push_back({n, (*it)[2].str()});
    }
  }
  return out;
}

// A cited path exists relative to the repository, to sim/ (the libraries' include root), to tests/ (the tests'
// include root) or to the citing file's folder.
bool CitationExists(const fs::path& root, const std::string& from, const std::string& path) {
  for (const fs::path& base : {fs::path(), fs::path("sim"), fs::path("tests"), fs::path(from).parent_path()})
    if (fs::exists(root / base / path)) return true;
  return false;
}

TEST(RepositoryTest, EveryCitedRepositoryPathExists) {
  const fs::path root(MMTWIN_SOURCE_DIR);
  int citations = 0;
  for (const std::string& rel : RepositoryFiles(root)) {
    if (StartsWith(rel, "tests/fuzz/corpus/") || rel == "tests/repository/repository_test.cc") continue;
    std::vector<Citation> cited;
    if (EndsWith(rel, ".md"))
      cited = CitedPaths(Read(root / rel), true, "");
    else if (EndsWith(rel, ".cc") || EndsWith(rel, ".h"))
      cited = CitedPaths(Read(root / rel), false, "//");
    else if (EndsWith(rel, ".yaml") || EndsWith(rel, ".sh") || EndsWith(rel, "CMakeLists.txt"))
      cited = CitedPaths(Read(root / rel), false, "#");
    for (const Citation& c : cited) {
      ++citations;
      EXPECT_TRUE(CitationExists(root, rel, c.path)) << rel << ":" << c.line << ": cites " << c.path
                                                     << ", which the repository does not hold";
    }
  }
  EXPECT_GT(citations, 500);

  // The checker, on fabricated text.
  const auto md = CitedPaths("see sim/core/plan/mesh.h and `tests/engine/gone_test.cc`.\n"
                             "scenarios/sweeps/NAME.yaml, traces/models/*.yaml, reports/<dir>/x.png\n",
                             true, "");
  ASSERT_EQ(md.size(), 2u);
  EXPECT_EQ(md[0].path, "sim/core/plan/mesh.h");
  EXPECT_EQ(md[1].path, "tests/engine/gone_test.cc");
  EXPECT_EQ(md[1].line, 1);
  EXPECT_TRUE(CitationExists(root, "README.md", md[0].path));
  EXPECT_FALSE(CitationExists(root, "README.md", md[1].path));
  EXPECT_TRUE(CitationExists(root, "sim/cli/app.cc", "core/plan/mesh.h"));
  const auto code = CitedPaths("#include \"core/plan/x.h\"\nint a;  // as in driver/planner.h\n", false, "//");
  ASSERT_EQ(code.size(), 1u);
  EXPECT_EQ(code[0].path, "driver/planner.h");
  EXPECT_EQ(code[0].line, 2);
}

}  // namespace

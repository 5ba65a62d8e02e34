// SPDX-License-Identifier: Apache-2.0
// Issue 34, acceptance 5: the bad-input corpus (tests/messages/corpus, made by make_corpus.py: one bad line in a
// valid file of each input kind) through the real `mmtwin`. Every case must exit 2, and at least 95% of the
// messages must name the bad file and a line (`NAME:LINE`), per input kind and over all. The corpus holds at least
// 300 cases across at least eight input kinds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using mmtwin::testing::CliRun;
using mmtwin::testing::Mmtwin;

const std::string kSrc = MMTWIN_SOURCE_DIR;
const std::string kCorpus = kSrc + "/tests/messages/corpus";

struct Case {
  std::string id, kind, file, command;
  int line = 0;
};

std::vector<Case> ReadCases() {
  std::vector<Case> cases;
  std::ifstream f(kCorpus + "/cases.tsv");
  std::string l;
  while (std::getline(f, l)) {
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream s(l);
    std::string c;
    while (std::getline(s, c, '\t')) cols.push_back(c);
    if (cols.size() != 5) {
      ADD_FAILURE() << "cases.tsv: bad line: " << l;
      continue;
    }
    cases.push_back({cols[0], cols[1], cols[2], cols[4], std::stoi(cols[3])});
  }
  return cases;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

TEST(MessageCorpusTest, HoldsThreeHundredCasesOfEveryInputKind) {
  const std::vector<Case> cases = ReadCases();
  EXPECT_GE(cases.size(), 300u);
  std::map<std::string, int> kinds;
  for (const Case& c : cases) {
    kinds[c.kind]++;
    EXPECT_TRUE(fs::exists(kCorpus + "/" + c.file)) << c.file;
  }
  for (const char* k : {"scenario", "model", "cluster", "sweep", "tune", "suite", "trace", "cost", "kernels"})
    EXPECT_GT(kinds[k], 0) << k;
}

// One test per kind, so that ctest runs them side by side; each checks its own kind's cases.
class MessageKindTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MessageKindTest, EveryCaseExitsTwoAndNamesItsFileAndLine) {
  int total = 0, named = 0;
  std::string unnamed;
  for (const Case& c : ReadCases()) {
    if (c.kind != GetParam()) continue;
    const fs::path out = fs::path(::testing::TempDir()) / ("msg_" + std::to_string(::getpid()) + "_" + c.id);
    fs::remove_all(out);
    fs::create_directories(out);
    const std::string path = kCorpus + "/" + c.file;
    std::string cmd = Replace(Replace(Replace(c.command, "{file}", path), "{src}", kSrc), "{out}", out.string());
    const CliRun r = Mmtwin(cmd);
    fs::remove_all(out);
    ++total;
    EXPECT_EQ(r.code, 2) << c.id << ": " << r.out;
    const std::string base = fs::path(c.file).filename().string();
    if (std::regex_search(r.out, std::regex(std::regex_replace(base, std::regex(R"([.^$|()\[\]{}*+?\\-])"),
                                                               R"(\$&)") +
                                            ":[0-9]+")))
      ++named;
    else
      unnamed += "  " + c.id + ": " + r.out.substr(0, 300) + "\n";
  }
  ASSERT_GT(total, 0);
  const double share = static_cast<double>(named) / total;
  RecordProperty("named_share", std::to_string(share));
  std::cout << GetParam() << ": " << named << " of " << total << " messages name their file and line\n";
  EXPECT_GE(share, 0.95) << "messages without FILE:LINE:\n" << unnamed;
}

INSTANTIATE_TEST_SUITE_P(Kinds, MessageKindTest,
                         ::testing::Values("scenario", "model", "cluster", "sweep", "tune", "suite", "trace", "cost",
                                           "kernels"));

}  // namespace

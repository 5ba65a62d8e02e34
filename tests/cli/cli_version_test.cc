// SPDX-License-Identifier: Apache-2.0
// `--version` of every program (issue 33, item 7): `NAME VERSION (commit C)` on stdout, exit 0, without a
// subcommand and (mmtwin-gui) without a display; C is the commit the source tree is at. The programs not built here
// (mmtwin-train without LibTorch, the GUI without Qt) are skipped by name.
#include <gtest/gtest.h>

#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

namespace mmtwin::testing {
namespace {

struct Program {
  std::string name;
  std::string path;  // empty: not built
};

std::vector<Program> Programs() {
  std::vector<Program> p = {{"mmtwin", MMTWIN_CLI}};
#ifdef MMTWIN_TRAIN
  p.push_back({"mmtwin-train", MMTWIN_TRAIN});
#else
  p.push_back({"mmtwin-train", ""});
#endif
#ifdef MMTWIN_GUI
  p.push_back({"mmtwin-gui", MMTWIN_GUI});
  p.push_back({"mmtwin-report", MMTWIN_REPORT});
#else
  p.push_back({"mmtwin-gui", ""});
  p.push_back({"mmtwin-report", ""});
#endif
  return p;
}

// The abbreviated hash of the source tree's HEAD, "" without git.
std::string HeadHash() {
  CliRun r = Shell(std::string("git -C '") + MMTWIN_SOURCE_DIR + "' rev-parse --short=7 HEAD 2>/dev/null");
  if (r.code != 0) return "";
  while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == ' ')) r.out.pop_back();
  return r.out;
}

TEST(CliVersion, EveryProgramPrintsItsVersionAndCommit) {
  const std::string head = HeadHash();
  int checked = 0;
  for (const Program& p : Programs()) {
    if (p.path.empty()) {
      std::printf("not built here: %s\n", p.name.c_str());
      continue;
    }
    SCOPED_TRACE(p.name);
    // No display for the GUI: --version must not need one.
    const CliRun r =
        Shell("env -u DISPLAY -u WAYLAND_DISPLAY QT_QPA_PLATFORM= '" + p.path + "' --version 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    std::smatch m;
    const std::regex line("^" + p.name + R"( (\d+\.\d+\.\d+) \(commit (\S+)\)\n$)");
    ASSERT_TRUE(std::regex_match(r.out, m, line)) << "'" << r.out << "'";
    const std::string commit = m[2].str();
    if (!head.empty()) {
      // `git describe --always --dirty --tags`: the hash itself, or TAG-N-gHASH, then -dirty for local changes.
      EXPECT_NE(commit.find(head), std::string::npos)
          << commit << " does not name HEAD " << head << " (built before the last commit? rebuild)";
    } else {
      EXPECT_NE(commit, "") << "no commit";
    }
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(CliVersion, HelpListsTheVersionFlag) {
  const CliRun r = Mmtwin("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--version"), std::string::npos) << r.out;
}

TEST(CliVersion, TheUnknownCommandMessageListsEveryCommand) {
  const CliRun r = Mmtwin("frobnicate");
  EXPECT_EQ(r.code, 2);
  for (const char* c : {"trace", "balance", "plan", "simulate", "sweep", "tune", "calibrate", "validate",
                        "compare", "models", "clusters", "policies", "completion"})
    EXPECT_NE(r.out.find(std::string(c) + (std::string(c) == "completion" ? "\n" : ",")), std::string::npos)
        << c << " missing from: " << r.out;
}

}  // namespace
}  // namespace mmtwin::testing

namespace mmtwin::testing {
namespace {

// `mmtwin completion bash` (issue 33, item 7): the script bash sources completes commands, subcommands and each
// command's options from this binary's command tree.
std::string Complete(const std::string& script, const std::string& words, int cword) {
  const std::string cmd = "bash -c 'source " + script + "; COMP_WORDS=(" + words +
                          "); COMP_CWORD=" + std::to_string(cword) +
                          "; _mmtwin; echo \"${COMPREPLY[@]}\"' 2>&1";
  return Shell(cmd).out;
}

TEST(CliCompletion, BashCompletesCommandsSubcommandsAndOptions) {
  const std::string script =
      ::testing::TempDir() + "/mmtwin-completion-" + std::to_string(::getpid()) + ".bash";
  const CliRun r = Shell(std::string(MMTWIN_CLI) + " completion bash > " + script);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Shell("bash -n " + script + " 2>&1").code, 0);
  EXPECT_EQ(Complete(script, "mmtwin sim", 1), "simulate\n");
  EXPECT_EQ(Complete(script, "mmtwin ca", 1), "calibrate\n");
  EXPECT_EQ(Complete(script, "mmtwin trace i", 2).rfind("import", 0), 0u);
  EXPECT_EQ(Complete(script, "mmtwin simulate x.yaml --trace-r", 3), "--trace-replicas\n");
  EXPECT_EQ(Complete(script, "mmtwin sweep table --j", 3), "--json\n");
  const std::string top = Complete(script, "mmtwin ''", 1);
  for (const char* c : {"trace", "balance", "plan", "simulate", "sweep", "tune", "calibrate", "validate",
                        "compare", "models", "clusters", "policies", "--version"})
    EXPECT_NE(top.find(c), std::string::npos) << c << ": " << top;
  EXPECT_EQ(Mmtwin("completion zsh").code, 2);
}

}  // namespace
}  // namespace mmtwin::testing

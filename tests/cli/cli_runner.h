// SPDX-License-Identifier: Apache-2.0
// Runs the real `mmtwin` binary (MMTWIN_CLI, set by tests/CMakeLists.txt) for CLI tests: exit code and output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace mmtwin::testing {

struct CliRun {
  int code;
  std::string out;  // stdout, and stderr too unless left out
};

// Runs a shell command line and captures its stdout.
inline CliRun Shell(const std::string& cmd) {
  CliRun r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `mmtwin ARGS`, with stderr merged into the output (or discarded).
inline CliRun Mmtwin(const std::string& args, bool with_stderr = true) {
  return Shell(std::string(MMTWIN_CLI) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

}  // namespace mmtwin::testing

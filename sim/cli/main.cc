// SPDX-License-Identifier: Apache-2.0
// mmtwin: digital twin of multimodal LLM training. See README.md; `mmtwin --help` lists the commands (the command
// tree is declared in cli/app.cc).
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"

int main(int argc, char** argv) {
  // `mmtwin help [COMMAND...]` is `mmtwin [COMMAND...] --help`.
  std::vector<const char*> args(argv, argv + argc);
  if (argc >= 2 && std::string(argv[1]) == "help") {
    args.erase(args.begin() + 1);
    args.push_back("--help");
  }
  // Library code returns errors as values; what can still escape is running out of memory (a scenario or trace
  // larger than this machine): a clear message and exit 2 instead of std::terminate's abort.
  try {
    return mmtwin::cli::RunCli(static_cast<int>(args.size()), args.data(), std::cout, std::cerr);
  } catch (const std::bad_alloc&) {
    std::cerr
        << "mmtwin: out of memory: the scenario, trace or sweep needs more memory than this process may use "
           "(reduce trace.samples, parallel.micro_batches or the replayed iterations, or run on a larger "
           "machine)\n";
  } catch (const std::exception& e) {
    std::cerr << "mmtwin: internal error: " << e.what() << "\n";
  }
  return 2;
}

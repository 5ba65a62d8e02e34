// mmtwin: digital twin of multimodal LLM training. See README.md; `mmtwin --help` lists the commands (the command
// tree is declared in cli/app.cc).
#include <iostream>
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
  return mmtwin::cli::RunCli(static_cast<int>(args.size()), args.data(), std::cout, std::cerr);
}

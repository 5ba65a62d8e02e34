// mmtwin: digital twin of multimodal LLM training. See README.md.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

constexpr const char* kUsage = R"(mmtwin - digital twin of multimodal LLM training

usage: mmtwin COMMAND [options]

commands:
  trace import --format llava|librispeech|csv IN -o OUT [--map col=src]...   convert a dataset into a trace
  trace gen --preset NAME --samples N --seed S -o OUT                        synthesize a trace from published stats
  trace stats TRACE [--json] [--model M]                                     per-modality statistics
  balance --trace T --model M --dp D --policy P [--param k=v]... [--json]    run a data-balance policy, report metrics
  balance --compare [P1,P2,...] --trace T --model M --dp D                   compare policies side by side
  plan SCENARIO [--json]                                                     partition, recompute, memory per stage
  simulate SCENARIO [--engine E] [-o RUNDIR] [--json] [--trace-iteration K]  replay a scenario (scenarios/README.md)
  sweep SWEEP.yaml [--jobs N] [--shard i/N] [--db FILE] [--csv OUT]          run a sweep into SQLite (resumable)
  sweep merge OUT.sqlite IN.sqlite... | sweep export --db F -o OUT.csv       join shard databases, export CSV
  compare RUN_A RUN_B [--json]                                               side-by-side summaries, per-stage deltas
  models | clusters | policies                                               list the model zoo, cluster presets, policies

Exit codes: 0 ok, 1 a check failed (a plan that does not fit device memory), 2 bad input (the message names
file, line and field).
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "trace") return mmtwin::cli::RunTrace(rest, std::cout, std::cerr);
  if (cmd == "balance") return mmtwin::cli::RunBalance(rest, std::cout, std::cerr);
  if (cmd == "plan") return mmtwin::cli::RunPlan(rest, std::cout, std::cerr);
  if (cmd == "simulate") return mmtwin::cli::RunSimulate(rest, std::cout, std::cerr);
  if (cmd == "sweep") return mmtwin::cli::RunSweepCommand(rest, std::cout, std::cerr);
  if (cmd == "compare") return mmtwin::cli::RunCompare(rest, std::cout, std::cerr);
  if (cmd == "models" || cmd == "clusters" || cmd == "policies")
    return mmtwin::cli::RunList(cmd, rest, std::cout, std::cerr);
  std::cerr
      << "mmtwin: unknown command '" << cmd
      << "'; valid commands are: trace, balance, plan, simulate, sweep, compare, models, clusters, policies\n"
      << "Run 'mmtwin --help' for usage.\n";
  return 2;
}

// Subcommands of the `mmtwin` CLI. Each takes the arguments after its name and returns the process exit code:
// 0 success, 1 a check failed (e.g. a plan that does not fit), 2 bad input (message on `err`).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace mmtwin::cli {

using Args = std::vector<std::string>;

// mmtwin trace import|gen|stats ...   (sim/cli/trace_cmd.cc)
int RunTrace(const Args& args, std::ostream& out, std::ostream& err);
// mmtwin balance ...                  (sim/cli/balance_cmd.cc)
int RunBalance(const Args& args, std::ostream& out, std::ostream& err);
// mmtwin models|clusters|policies     (sim/cli/list_cmd.cc)
int RunList(const std::string& what, const Args& args, std::ostream& out, std::ostream& err);
// mmtwin plan SCENARIO [--json]       (sim/cli/plan_cmd.cc)
int RunPlan(const Args& args, std::ostream& out, std::ostream& err);
// mmtwin simulate SCENARIO ...        (sim/cli/simulate_cmd.cc)
int RunSimulate(const Args& args, std::ostream& out, std::ostream& err);
// mmtwin sweep SWEEP.yaml | sweep merge | sweep export | sweep table   (sim/cli/sweep_cmd.cc)
int RunSweepCommand(const Args& args, std::ostream& out, std::ostream& err);
// mmtwin compare RUN_A RUN_B [--json]  (sim/cli/compare_cmd.cc)
int RunCompare(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace mmtwin::cli

// SPDX-License-Identifier: Apache-2.0
// mmtwin export-chakra SCENARIO -o DIR [--iteration K] [--prefix P] [--json]: one replayed iteration's op graph as
// Chakra execution traces (sim/interop/chakra.h), read back and replayed to check them.
// mmtwin import-chakra DIR --scenario S -o RUNDIR [--prefix P]: a trace mmtwin wrote, back as a measured run folder
// (ops.csv, scenario.yaml, plan.json) for `mmtwin replay`.
// mmtwin replay-chakra DIR [--prefix P] [--whole-micros] [--json]: a Chakra trace of the node kinds mmtwin writes
// replayed with Chakra's semantics: the step time and each rank's end. Exit 0, or 2 on bad input (the message names
// the file and node).
#include <cmath>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "cli/imported_run.h"
#include "core/eval/analytic.h"
#include "core/eval/overlap.h"
#include "driver/planner.h"
#include "driver/simulate.h"
#include "interop/chakra.h"

namespace mmtwin::cli {

int RunExportChakra(const ExportChakraArgs& a, std::ostream& out, std::ostream& err) {
  auto fail = [&](const std::string& m) {
    err << "mmtwin export-chakra: " << m << "\n";
    return 2;
  };
  if (!ChakraAvailable()) return fail(WriteChakra({}, a.output, a.prefix).error().message());
  auto scenario = LoadScenario(a.scenario);
  if (!scenario) return fail(scenario.error().message());
  auto run = PlanForReplay(*scenario);
  if (!run) return fail(run.error().message());
  const size_t n = run->plan.iterations.size();
  if (a.iteration < 0 || static_cast<size_t>(a.iteration) >= n)
    return fail("--iteration: " + std::to_string(a.iteration) + " is not a replayed iteration (0.." +
                std::to_string(n - 1) + ")");
  auto pg = BuildPlanIterationGraph(*run, static_cast<size_t>(a.iteration));
  if (!pg) return fail(pg.error().message());
  // The durations Simulate evaluates: compute stretched by the collectives it overlaps (core/eval/overlap.h).
  if (const double slowdown = run->cluster.device.overlap_slowdown; slowdown > 0) {
    IterationTiming scratch;
    ApplyOverlapSlowdown(pg->graph, slowdown, &scratch);
  }
  const std::string source =
      "mmtwin scenario " + scenario->name + ", replayed iteration " + std::to_string(a.iteration) +
      " (epoch iteration " +
      std::to_string(run->plan.iterations[static_cast<size_t>(a.iteration)].epoch_index) + ")";
  auto trace = ChakraFromGraph(pg->graph, source);
  if (!trace) return fail(trace.error().message());
  trace->iteration = run->plan.iterations[static_cast<size_t>(a.iteration)].epoch_index;
  if (Status st = WriteChakra(*trace, a.output, a.prefix); !st.ok()) return fail(st.error().message());
  // The check: the files read back and replayed, against the analytic evaluator on the same graph.
  auto back = ReadChakra(a.output, a.prefix);
  if (!back) return fail(back.error().message());
  auto replay = ReplayChakra(*back);
  if (!replay) return fail(replay.error().message());
  std::vector<double> scratch;
  const double analytic_us = AnalyticIterationTimeUs(pg->graph, &scratch);
  int64_t nodes = 0;
  for (const ChakraRank& r : back->ranks) nodes += static_cast<int64_t>(r.nodes.size());
  if (a.json) {
    out << nlohmann::json{{"output", a.output},
                          {"prefix", a.prefix},
                          {"ranks", back->ranks.size()},
                          {"nodes", nodes},
                          {"groups", back->groups.size()},
                          {"collectives", replay->collectives},
                          {"messages", replay->messages},
                          {"replayed_us", replay->step_us},
                          {"analytic_us", analytic_us}}
               .dump(1)
        << "\n";
    return 0;
  }
  out << "wrote " << back->ranks.size() << " Chakra traces (" << nodes << " nodes, " << back->groups.size()
      << " process groups) to " << a.output << "/" << a.prefix << ".{0.." << back->ranks.size() - 1
      << "}.et and comm_group.json\n";
  out << "read back and replayed: " << Fixed(replay->step_us / 1e3, 3) << " ms (" << replay->collectives
      << " collectives, " << replay->messages
      << " messages); mmtwin's op graph: " << Fixed(analytic_us / 1e3, 3)
      << " ms (compute stretched by the collectives it overlaps, as simulate times it; without the optimizer "
      << "step, which the trace leaves out)\n";
  return 0;
}

int RunImportChakra(const ImportChakraArgs& a, std::ostream& out, std::ostream& err) {
  auto fail = [&](const std::string& m) {
    err << "mmtwin import-chakra: " << m << "\n";
    return 2;
  };
  auto trace = ReadChakra(a.dir, a.prefix);
  if (!trace) return fail(trace.error().message());
  auto scenario = LoadScenario(a.scenario);
  if (!scenario) return fail(scenario.error().message());
  auto run = PlanForReplay(*scenario);
  if (!run) return fail(run.error().message());
  const int dp_sp = run->plan.parallel.dp * run->plan.parallel.sp;
  const int devices = dp_sp * run->plan.parallel.pp;
  if (static_cast<int>(trace->ranks.size()) != devices)
    return fail(a.dir + ": " + std::to_string(trace->ranks.size()) +
                " ranks, but the scenario's layout has " + std::to_string(devices) +
                " op-graph devices (dp x sp x pp; one per TP group)");
  const int64_t iteration =
      trace->iteration >= 0 ? trace->iteration : run->plan.iterations.front().epoch_index;
  auto ops = ChakraOpRecords(*trace, iteration);
  if (!ops) return fail(ops.error().message());
  const Status st =
      WriteImportedRun(*ops, *scenario, run->plan, a.output,
                       std::to_string(ops->size()) + " ops of " + std::to_string(trace->ranks.size()) +
                           " ranks (epoch iteration " + std::to_string(iteration) + ")",
                       out);
  if (!st.ok()) return fail(st.error().message());
  return 0;
}

int RunReplayChakra(const ReplayChakraArgs& a, std::ostream& out, std::ostream& err) {
  auto fail = [&](const std::string& m) {
    err << "mmtwin replay-chakra: " << m << "\n";
    return 2;
  };
  auto trace = ReadChakra(a.dir, a.prefix);
  if (!trace) return fail(trace.error().message());
  auto replay = ReplayChakra(*trace, a.whole_micros);
  if (!replay) return fail(replay.error().message());
  if (a.json) {
    out << nlohmann::json{{"ranks", trace->ranks.size()},
                          {"nodes", replay->nodes},
                          {"collectives", replay->collectives},
                          {"messages", replay->messages},
                          {"step_us", replay->step_us},
                          {"rank_end_us", replay->rank_end_us},
                          {"source", trace->source}}
               .dump(1)
        << "\n";
    return 0;
  }
  out << "trace   " << a.dir << "/" << a.prefix << ".*.et: " << trace->ranks.size() << " ranks, "
      << replay->nodes << " nodes" << (trace->source.empty() ? "" : " (" + trace->source + ")") << "\n";
  out << "step    " << Fixed(replay->step_us / 1e3, 3) << " ms (" << replay->collectives << " collectives, "
      << replay->messages << " messages" << (a.whole_micros ? "; durations in whole microseconds" : "")
      << ")\n";
  size_t last = 0;
  for (size_t r = 1; r < replay->rank_end_us.size(); ++r)
    if (replay->rank_end_us[r] > replay->rank_end_us[last]) last = r;
  out << "latest  rank " << last << " ends at " << Fixed(replay->rank_end_us[last] / 1e3, 3) << " ms\n";
  return 0;
}

}  // namespace mmtwin::cli

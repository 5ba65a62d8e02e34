// SPDX-License-Identifier: Apache-2.0
// Top level of the simulator: scenario -> plan (the public planner, planner.h) -> priced op graphs ->
// evaluated iterations -> typed run records (core/records).
//
//   MMTWIN_ASSIGN_OR_RETURN(Scenario s, LoadScenario("scenarios/default.yaml"));
//   SimulateOptions o;
//   o.engine.contention = false;                       // engine options for MakeEvaluator (driver.h)
//   MMTWIN_ASSIGN_OR_RETURN(SimulationResult r, Simulate(s, o));
//   MMTWIN_RETURN_IF_ERROR(RunFolderWriter().AddSummary(r.summary).AddOps(r.ops).Write(dir));  // run_folder.h
//
// The summary's fields are RunSummary's (core/records/records.h): what it takes from the plan is
// PlannedRunSummary's (run_summary.h), shared with measured runs; the replay adds the time split, throughput, MFU,
// memory verdict and the stages' timings. Steps: replay (price, build or reprice, evaluate each iteration) ->
// aggregate (sums over iterations, devices and stages) -> summary.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cost/cost_model.h"
#include "core/eval/analytic.h"
#include "core/eval/evaluator.h"
#include "core/graph/op_graph.h"
#include "core/plan/plan.h"
#include "core/records/records.h"
#include "core/scenario/scenario.h"
#include "core/util/status.h"
#include "driver/driver.h"
#include "driver/planner.h"

namespace mmtwin {

struct SimulateOptions {
  int trace_iteration = 0;    // which replayed iteration to export as the Perfetto trace and ops
  int trace_dp_replicas = 4;  // DP replicas drawn in the trace (0 = all; large runs make large files)
  // Times the replayed iterations; nullptr = MakeEvaluator(scenario.engine, the run's cluster, engine).
  // Its name() must match scenario.engine.
  Evaluator* evaluator = nullptr;
  EngineOptions engine;
  // The per-layer cost model; nullptr = the scenario's `cost:` (core/scenario/scenario.h: LoadScenarioCostModel).
  std::shared_ptr<const CostModel> cost;
  // Prices transfers and collectives (core/plan/comm_cost.h); nullptr = the analytic link model of the layout.
  std::shared_ptr<const CommCostModel> comm_cost;
  // Called with the fraction done (0..1) during long replays; may be empty.
  std::function<void(double)> progress;
  // Polled while planning and between iterations; when true, Simulate returns the error "cancelled".
  const std::atomic<bool>* cancel = nullptr;
  // The trace and data plan already prepared (PlanOptions::prepared, driver/planner.h); may be null.
  std::shared_ptr<const PreparedData> prepared;
};

struct SimulationResult {
  RunSummary summary;         // source simulated
  std::vector<OpRecord> ops;  // every op of the traced iteration (options.trace_iteration), graph order
  std::string trace_json;     // Chrome / Perfetto trace of the traced iteration (core/records/perfetto.h)
  std::string resolved_yaml;  // the resolved scenario
  Plan plan;                  // the plan (partition, recompute, schedule, replayed iterations' data)
};

Result<SimulationResult> Simulate(const Scenario& scenario, const SimulateOptions& options);

// One iteration of a plan as Simulate builds it, for re-evaluation with other durations (`mmtwin replay`,
// sim/whatif/whatif.h): its costs, its op graph with the modelled durations (before the overlap slowdown, which
// only the simulated durations carry), and each pipeline stage's optimizer step, which Simulate adds after the
// graph (AddOptimizerStep).
struct PlanIterationGraph {
  IterationCosts costs;
  OpGraph graph;
  std::vector<double> optimizer_us;  // per pipeline stage
};
// Errors: `plan_iteration` outside run.plan.iterations; the graph's (BuildIterationGraph).
Result<PlanIterationGraph> BuildPlanIterationGraph(const PlannedRun& run, size_t plan_iteration);
// Adds the slowest stage's optimizer step (`stage_us`, per pipeline stage) to an evaluated iteration: the
// iteration time grows by it, each device counts its own stage's step busy and the rest idle.
void AddOptimizerStep(const std::vector<double>& stage_us, int pp, IterationTiming& timing);

}  // namespace mmtwin

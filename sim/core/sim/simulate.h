// Top level of the simulator: scenario -> plan -> priced op graphs -> evaluated iterations -> run records.
//
//   MMTWIN_ASSIGN_OR_RETURN(Scenario s, LoadScenario("scenarios/default.yaml"));
//   MMTWIN_ASSIGN_OR_RETURN(SimulationResult r, Simulate(s, {}));
//   std::cout << r.summary.dump(2);          // summary.json
//   WriteFileAtomic(dir + "/trace.json", r.trace.dump());
//
// summary.json keys (units in the names): scenario, model, cluster, parallel {dp,tp,pp,vpp,micro_batches,
// zero_stage}, policies {data,partition,recompute,schedule}, iterations_replayed, iterations_in_epoch,
// iteration_time_us {mean, p50, p99, ci95_low, ci95_high}, bubble_ratio, idle_ratio, recompute_ratio,
// busy_ratio, tokens_per_s, samples_per_s, mfu, gpu_days (projected for one epoch of the trace), oom (bool),
// oom_stages [{stage, short_bytes}], data {pad_ratio, dist_ratio_vit, dist_ratio_llm, mean_batch_size},
// stages [{stage, first_layer, last_layer, layers, params, recomputed_layers, fwd_us_mean, bwd_us_mean,
// recompute_us_mean, busy_ratio, bubble_ratio, idle_ratio, model_state_bytes, peak_activation_bytes,
// peak_memory_bytes, memory_capacity_bytes}].
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/eval/evaluator.h"
#include "core/plan/plan.h"
#include "core/scenario/scenario.h"
#include "core/util/status.h"

namespace mmtwin {

struct SimulateOptions {
  int trace_iteration = 0;    // which replayed iteration to export as trace.json
  int trace_dp_replicas = 4;  // DP replicas drawn in trace.json (0 = all; large runs make large files)
  // Times the replayed iterations; nullptr = the analytic evaluator. Its name() must match scenario.engine.
  Evaluator* evaluator = nullptr;
  // Called with the fraction done (0..1) during long replays; may be empty.
  std::function<void(double)> progress;
};

struct SimulationResult {
  nlohmann::json summary;     // summary.json (see above)
  std::string stages_csv;     // stages.csv: one row per pipeline stage (the `stages` of the summary)
  nlohmann::json trace;       // trace.json (Chrome/Perfetto) of options.trace_iteration
  std::string resolved_yaml;  // the resolved scenario
  Plan plan;                  // the plan (partition, recompute, schedule, replayed iterations' data)
};

Result<SimulationResult> Simulate(const Scenario& scenario, const SimulateOptions& options);

// `mmtwin plan`: partition, recompute and memory per stage without replaying iterations. JSON with keys
// scenario, model, parallel, policies, layers, stages [{stage, first_layer, last_layer, layer_labels (first
// and last), params, recomputed_layers, fwd_us_mean, model_state_bytes, peak_activation_bytes,
// peak_memory_bytes, memory_capacity_bytes, fits}], oom, oom_stages.
Result<nlohmann::json> PlanScenario(const Scenario& scenario);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The public planner: scenario -> plan, the one place every client (the `mmtwin plan` and `simulate` commands,
// the sweep runner, the backend, the GUI) turns a scenario into what runs. It resolves the model, the cluster
// and the trace, runs the data policy, draws the replayed iterations, chooses the partition (the partition
// policy, bmp timing its candidates with the analytic evaluator) and the recomputed layers, and, on request,
// prices every replayed iteration for the memory report.
//
//   MMTWIN_ASSIGN_OR_RETURN(Scenario s, LoadScenario("scenarios/default.yaml"));
//   MMTWIN_ASSIGN_OR_RETURN(PlannedRun run, BuildPlan(s, {}));
//   std::string text = PlanToJson(run.plan);                // core/records/plan_codec.h: every rank reads it
//   Pricer pricer = run.MakePricer();                        // costs of the plan's micro-batches
//
// Steps (each a pure function of the scenario and its seed: the same scenario gives the same plan):
//   1. check the scenario (CheckScenario), fill in `nodes` (just enough for dp * tp * pp * sp: ScenarioNodes);
//   2. load the trace (file, or generator preset + seed) and compute its sizes and per-sample tokens;
//   3. run the data policy (core/balance) for the epoch's mini-batch steps; an iteration is M consecutive
//      steps; replay either the whole epoch or `iterations` distinct iterations drawn with the seed (sorted);
//   4. per-layer profiles over (at most) the first 16 replayed iterations' micro-batches: the mean (what
//      partitioning balances) and the element-wise worst case (what memory must survive);
//   5. the partition policy (core/plan/partition.h) with candidates timed on the first 4 replayed iterations,
//      then the recompute policy (core/plan/recompute.h) against the worst-case profile and device capacity;
//   6. with PlanOptions::memory_report, the memory of every pipeline stage over all replayed iterations
//      (core/plan/memory.h) and the mean forward time per stage.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/balance/data_plan.h"
#include "core/balance/metrics.h"
#include "core/cluster/cluster.h"
#include "core/cost/cost_model.h"
#include "core/model/model.h"
#include "core/plan/comm_cost.h"
#include "core/plan/memory.h"
#include "core/plan/partition.h"
#include "core/plan/plan.h"
#include "core/plan/pricing.h"
#include "core/plan/recompute.h"
#include "core/scenario/scenario.h"
#include "core/trace/trace.h"
#include "core/util/status.h"

namespace mmtwin {

// Totals over every trace sample's tokens that the run summary reports (counted once per token table).
struct TokenCounts {
  int64_t if_larger_images = 0;   // images an if_larger encoder priced by their size
  int64_t unsized_images = 0;     // of those, priced at the cap (the trace has no size)
  int64_t truncated_samples = 0;  // samples cut to the model's max_context
  static TokenCounts Of(const std::vector<SampleTokens>& tokens);
};

// What BuildPlan's steps 2-3 make of a scenario: the trace, its identity, the data policy's epoch plan and its
// metrics. Every scenario with the same PreparedDataKey gets the same, so a sweep prepares it once in its parent
// process (PrepareData) and its forked workers share it (PlanOptions::prepared).
struct PreparedData {
  std::string key;        // PreparedDataKey of the scenario it was made for
  std::string trace_key;  // its PreparedTraceKey: scenarios with only this in common share the trace
  std::string model;      // the model the tokens are for (ModelSpec::name)
  std::shared_ptr<const Trace> trace;  // never null; shared read-only with every PlannedRun built from it
  // Per trace sample (TokensFor of the scenario's model); never null; shared read-only like the trace.
  std::shared_ptr<const std::vector<SampleTokens>> tokens;
  TokenCounts token_counts;  // TokenCounts::Of(*tokens)
  TraceIdentity identity;
  DataPlan data;
  DataMetrics data_metrics;
};
// The scenario's fields steps 2-3 depend on, as text (the resolved scenario without its name, description,
// pipeline layout, micro-batch count, replayed iterations, partition / recompute / schedule policies, engine
// and cost model): equal keys, equal PreparedData.
std::string PreparedDataKey(const Scenario& s);
// The scenario's trace source (file, preset, samples, seed, sequence_tokens) as text: equal keys, equal traces
// (step 2). A scenario whose PreparedDataKey differs but whose PreparedTraceKey matches reuses the prepared trace
// (and its tokens when the model is the same) and runs its own data policy.
std::string PreparedTraceKey(const Scenario& s);
// Steps 2-3 alone. Errors as BuildPlan's for those steps. `reuse`: an earlier preparation whose trace (and
// tokens, for the same model) serve when its PreparedTraceKey is the scenario's (only the data policy runs);
// the result is the same as without it.
Result<std::shared_ptr<const PreparedData>> PrepareData(const Scenario& s,
                                                        const std::atomic<bool>* cancel = nullptr,
                                                        const PreparedData* reuse = nullptr);

// Iteration k of an epoch plan for dp DP ranks and m micro-batches: data steps k * m .. k * m + m - 1 (with
// their dispatch transfers). k must be below data.steps.size() / m.
IterationData EpochIteration(const DataPlan& data, int dp, int m, int64_t k);
// Which iterations of an epoch of `iterations_in_epoch` a scenario replays (BuildPlan's step 3), ascending:
// all of them (`epoch`, or `iterations` at least the epoch's), else `iterations` distinct ones drawn with the
// scenario's seed.
std::vector<int64_t> ReplayedIterations(const Scenario& s, int64_t iterations_in_epoch);

struct PlanOptions {
  // The per-layer cost model; nullptr = the scenario's `cost:` (the analytic model, or a CoefficientCostModel
  // loaded from its CSV). Shared: the PlannedRun keeps it alive.
  std::shared_ptr<const CostModel> cost;
  // Prices the transfers and collectives of the op graphs (core/plan/comm_cost.h); nullptr = the analytic link
  // model of the layout (AnalyticCommCost of PlannedRun::Comm()), e.g. a TableCommCost fitted from measurements.
  std::shared_ptr<const CommCostModel> comm_cost;
  // Price every replayed iteration for PlannedRun::memory and stage_fwd_us_mean (what `mmtwin plan` shows;
  // Simulate computes the same while it replays, so it turns this off).
  bool memory_report = true;
  // Keep PlannedRun::trace. False drops it once the replayed iterations are drawn (before the model plan):
  // the plan and its replay need only the per-sample tokens, and at 100k GPUs the samples are ~1.5 GB of the
  // peak (Simulate turns it off; the backend, which builds real micro-batches from the samples, keeps it).
  bool keep_trace = true;
  // Polled between steps and iterations; when it becomes true, BuildPlan returns the error "cancelled".
  const std::atomic<bool>* cancel = nullptr;
  // Steps 2-3 already done (PrepareData): used when its key is the scenario's PreparedDataKey; only its trace
  // (step 2) when just the PreparedTraceKey matches; else ignored (the plan is then built from scratch; the
  // result is the same either way).
  std::shared_ptr<const PreparedData> prepared;
};

// Everything a run needs, resolved from a scenario once. Movable; MakePricer() refers into it.
struct PlannedRun {
  Scenario scenario;  // as given, with `nodes` filled in
  ModelSpec model;
  ClusterSpec cluster;  // with scenario.nodes nodes
  // The trace, read-only and never null after BuildPlan unless PlanOptions::keep_trace was false; shared with
  // PreparedData (a sweep's workers do not copy it).
  std::shared_ptr<const Trace> trace;
  // Per trace sample (TokensFor); never null after BuildPlan; shared read-only with the PreparedData it came
  // from (a sweep's runs do not copy the epoch's tokens).
  std::shared_ptr<const std::vector<SampleTokens>> tokens;
  TokenCounts token_counts;   // TokenCounts::Of(*tokens)
  int64_t trace_samples = 0;  // the trace's size (also when it was dropped)
  DataMetrics data_metrics;   // of the whole epoch's data plan
  Plan plan;                  // self-describing; iterations = the replayed ones, ascending
  PartitionReport partition_report;
  RecomputeReport recompute_report;
  std::shared_ptr<const CostModel> cost;
  std::shared_ptr<const CommCostModel> comm_cost;  // PlanOptions::comm_cost, or the analytic link model
  // With PlanOptions::memory_report: per pipeline rank, the memory merged over the replayed iterations
  // (MergeMemory) and the mean forward time of one micro-batch through the rank's chunks (us).
  std::vector<StageMemory> memory;
  std::vector<double> stage_fwd_us_mean;

  Packing packing() const { return plan.packed ? Packing::kVarlen : Packing::kPadded; }
  // A pricer for this run's model, cost model, cluster and layout. It refers to this PlannedRun's model and
  // cost model: keep the PlannedRun alive, and do not move it, while the pricer is in use.
  Pricer MakePricer() const { return Pricer(model, *cost, cluster, plan.parallel); }
  // Link speeds of the layout, with the plan's DP bucket size.
  CommSpec Comm() const;
};

// Errors: CheckScenario's first (core/scenario/scenario.h: every check of the scenario's values, naming the key:
// parallel sizes, nodes, tp above a node, unknown model / cluster / trace preset / policy / parameter, more
// chunks than layers, a cost CSV that does not parse or lacks a layer type of the model), a trace too small for
// one iteration, a policy that fails on the data, a plan larger than this process's memory (CheckPlanMemory,
// before anything big is allocated), "cancelled".
Result<PlannedRun> BuildPlan(const Scenario& scenario, const PlanOptions& options);

// Peak memory of planning and simulating a scenario, estimated from the sizes that drive it before anything is
// allocated. Per-unit figures measured with the analytic engine (reports/benchmarks.md, issue 14): ~200 bytes per
// trace sample (the samples, their tokens, the data plan and the replayed iterations), ~6.5 bytes per byte of a
// trace file (the text and what it parses into), ~12 kB per device and micro-batch of one iteration (the op
// graph, its op records and the Perfetto trace), plus 64 MB for the process. `key` is the scenario key whose
// term is largest (trace.samples, trace.file or parallel.micro_batches); `detail` says how it counts.
struct MemoryEstimate {
  int64_t bytes = 0;
  std::string key;
  std::string detail;
};
MemoryEstimate EstimatePlanMemory(const Scenario& scenario);
// ScenarioError at the driving key (file:line: key: ...) when EstimatePlanMemory exceeds
// ProcessMemoryLimitBytes() (core/util/memory_limit.h), with both figures and what to reduce.
Status CheckPlanMemory(const Scenario& scenario);

// One pipeline stage of a planned run (needs memory_report): layers, parameters, recompute, mean forward
// time of a micro-batch (us) and memory.
struct PlanStage {
  int stage = 0;
  int first_layer = 0, last_layer = 0;
  std::string first_layer_label, last_layer_label;
  int layers = 0;
  int64_t params = 0;  // whole, all TP ranks
  int recomputed_layers = 0;
  double fwd_us_mean = 0;
  StageMemory memory;
};
std::vector<PlanStage> PlanStages(const PlannedRun& run);

// `mmtwin plan --json`: keys scenario, model, cluster {preset, nodes}, parallel, policies, layers,
// partition_bounds, stages [{stage, first_layer, last_layer, layer_labels (first and last), layers, params,
// recomputed_layers, fwd_us_mean, model_state_bytes, peak_activation_bytes, boundary_bytes,
// peak_memory_bytes, memory_capacity_bytes, fits, memory {every term of the peak: weight, grad, main_grad,
// optimizer, zero3_transient (summing to model_state), peak_activation, boundary, workspace (with the states:
// allocated_peak), fragmentation, cuda_context, nccl, other (with allocated_peak: peak), microbatch_footprint_
// min / max (the fragmentation term's input), capacity; all _bytes}}], oom_stages, oom. Needs a run built with
// memory_report.
std::string PlanReportJson(const PlannedRun& run);

}  // namespace mmtwin

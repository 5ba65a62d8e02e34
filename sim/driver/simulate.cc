// SPDX-License-Identifier: Apache-2.0
// Scenario -> plan -> priced op graphs -> evaluated iterations -> run records. See simulate.h.
#include "driver/simulate.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/cost/cost_model.h"
#include "core/eval/analytic.h"
#include "core/eval/overlap.h"
#include "core/graph/op_graph.h"
#include "core/plan/memory.h"
#include "core/plan/mesh.h"
#include "core/plan/pricing.h"
#include "core/records/perfetto.h"
#include "core/util/text.h"
#include "driver/planner.h"
#include "driver/run_summary.h"

namespace mmtwin {
namespace {

// Causal attention pairs of a micro-batch's LLM spans: varlen, every sample its own span; padded, every
// sample padded to the longest.
double AttentionPairs(const std::vector<uint32_t>& samples, const std::vector<SampleTokens>& tokens,
                      bool packed) {
  double pairs = 0;
  int64_t longest = 0;
  for (uint32_t s : samples) {
    const double t = static_cast<double>(tokens[s].llm_tokens);
    pairs += t * (t + 1) / 2;
    longest = std::max(longest, tokens[s].llm_tokens);
  }
  if (!packed) pairs = static_cast<double>(samples.size()) * longest * (longest + 1.0) / 2;
  return pairs;
}

// The workload features of the compute records that need the samples: attention pairs and spans.
void AddWorkload(std::vector<OpRecord>& ops, const IterationData& it, const std::vector<SampleTokens>& tokens,
                 bool packed, const DeviceMesh& mesh) {
  for (OpRecord& r : ops) {
    if (r.tokens <= 0 || r.micro_batch < 0) continue;
    const int d = mesh.DpOfDevice(r.device);
    const std::vector<uint32_t>& samples = it.micro_batches[d][r.micro_batch];
    r.attention_pairs = AttentionPairs(samples, tokens, packed);
    r.spans = static_cast<int32_t>(samples.size());
  }
}

// What the replay sums over the replayed iterations, in replay order (the summary's sums depend on it).
struct Replay {
  std::vector<double> times_us;       // per replayed iteration
  std::vector<DeviceTiming> devices;  // per device, summed over the iterations
  std::vector<double> stage_fwd_us, stage_bwd_us, stage_recompute_us;  // per pipeline rank, summed
  double total_us = 0, total_flops = 0, total_tokens = 0, total_samples = 0;
  int64_t micro_batches = 0;        // (DP replica, micro-batch) pairs over the iterations
  std::vector<StageMemory> memory;  // merged over the iterations (MergeMemory)
  std::vector<OpRecord> ops;        // the traced iteration
  std::string trace_json;
};

// Adds one evaluated iteration's times, tokens, samples, FLOPs and per-stage compute to `r`.
void Accumulate(const IterationTiming& timing, const IterationCosts& costs, const IterationData& it,
                const ParallelConfig& par, Replay& r) {
  r.times_us.push_back(timing.iteration_time_us);
  r.total_us += timing.iteration_time_us;
  for (size_t d = 0; d < r.devices.size(); ++d) {
    DeviceTiming& sum = r.devices[d];
    const DeviceTiming& t = timing.devices[d];
    sum.busy_us += t.busy_us;
    sum.recompute_us += t.recompute_us;
    sum.bubble_us += t.bubble_us;
    sum.idle_us += t.idle_us;
    sum.exposed_comm_us += t.exposed_comm_us;
    sum.exposed_dispatch_us += t.exposed_dispatch_us;
    sum.dispatch_us += t.dispatch_us;
    sum.dispatch_ops += t.dispatch_ops;
  }
  for (const ChunkCost& e : costs.encoder)
    r.total_flops += e.model_flops;  // the encoders outside the pipeline
  for (int d = 0; d < costs.dp; ++d)
    for (int m = 0; m < costs.micro_batches; ++m) {
      r.total_tokens += static_cast<double>(costs.At(d, m, 0).llm_tokens);
      // SP ranks (replicas d * sp ..) share a micro-batch: count its samples once.
      if (d % std::max(1, par.sp) == 0)
        r.total_samples += static_cast<double>(it.micro_batches[d / std::max(1, par.sp)][m].size());
      ++r.micro_batches;
      for (int c = 0; c < costs.chunks; ++c) {
        const ChunkCost& cc = costs.At(d, m, c);
        r.total_flops += cc.model_flops;
        const int rank = PipeRankOfChunk(c, par.pp);
        r.stage_fwd_us[rank] += cc.fwd_us;
        r.stage_bwd_us[rank] += cc.bwd_us;
        r.stage_recompute_us[rank] += cc.recompute_us;
      }
    }
}

// The optimizer step (Adam + gradient clipping, core/cost/cost_model.h) of every pipeline rank, microseconds:
// the HBM time of the parameters the rank updates (its chunks' parameters over tp, over dp with ZeRO >= 1), or
// the run's cost model's measured step when it has one (a calibrated profile's optimizer row). Zero for a device
// without a compute curve and no measured step (the fixed-efficiency model never priced it).
std::vector<double> OptimizerStepUsPerStage(const PlannedRun& run, const std::vector<ChunkStatic>& statics) {
  const ParallelConfig& par = run.plan.parallel;
  std::vector<double> params(par.pp, 0), us(par.pp, 0);
  for (size_t c = 0; c < statics.size(); ++c)
    params[PipeRankOfChunk(static_cast<int>(c), par.pp)] += static_cast<double>(
        statics[c].params - statics[c].frozen_params);  // the optimizer steps trained ones
  const AnalyticCostModel cost(run.cluster.device, {.tp = par.tp});
  for (int r = 0; r < par.pp; ++r) {
    const double per_gpu = OptimizerParamsPerGpu(params[r], par.tp, par.dp, par.zero_stage);
    const std::optional<double> measured =
        run.cost ? run.cost->MeasuredOptimizerStepUs(per_gpu) : std::nullopt;
    us[r] = measured ? *measured : cost.OptimizerStepUs(per_gpu);
  }
  return us;
}

}  // namespace

// Adds the optimizer step to an evaluated iteration. It runs on every device after its DP gradient
// collectives, and the next iteration's first forward waits for every device's (the data-parallel replicas
// start together): the op graph does not hold it (op_graph.h), so the iteration ends the slowest stage's step
// after the graph's end (exact when the devices' DP tails end together, an upper bound otherwise), counted as
// busy on each device for its own stage's step and idle for the rest, so the time split still sums to T.
void AddOptimizerStep(const std::vector<double>& stage_us, int pp, IterationTiming& timing) {
  const double slowest = stage_us.empty() ? 0.0 : *std::max_element(stage_us.begin(), stage_us.end());
  if (!(slowest > 0)) return;
  timing.iteration_time_us += slowest;
  for (size_t d = 0; d < timing.devices.size(); ++d) {
    const double own = stage_us[static_cast<int>(d) % pp];
    timing.devices[d].busy_us += own;
    timing.devices[d].idle_us += slowest - own;
  }
}

namespace {

// Prices, builds (first iteration) or reprices the op graph of, and evaluates every replayed iteration; keeps the
// traced one's ops and Perfetto trace.
Result<Replay> ReplayIterations(const PlannedRun& run, Evaluator& evaluator, const SimulateOptions& options) {
  const Plan& plan = run.plan;
  const ParallelConfig& par = plan.parallel;
  const Pricer pricer = run.MakePricer();
  std::vector<int64_t> layer_params;
  for (const Layer& l : pricer.layers()) layer_params.push_back(l.params);
  const std::vector<int64_t> frozen_params = FrozenLayerParams(pricer.layers());
  const std::vector<ChunkStatic> statics = pricer.Static(plan.partition);
  const CommSpec comm = run.Comm();
  const DeviceMesh mesh(par, run.cluster.gpus_per_node);
  const std::vector<double> optimizer_us = OptimizerStepUsPerStage(run, statics);
  Replay r;
  r.devices.resize(mesh.num_devices());
  r.stage_fwd_us.assign(par.pp, 0);
  r.stage_bwd_us.assign(par.pp, 0);
  r.stage_recompute_us.assign(par.pp, 0);
  OpGraph graph;
  IterationTiming timing;
  std::vector<double> unstretched;
  const size_t replayed = plan.iterations.size();
  const int trace_at = std::clamp(options.trace_iteration, 0, static_cast<int>(replayed) - 1);
  MemoryReplay memory_replay;  // device.allocator_model replay: the allocators carry over between the iterations
  for (size_t i = 0; i < replayed; ++i) {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return Error::Cancelled();
    const IterationData& it = plan.iterations[i];
    const IterationCosts costs =
        pricer.PriceIteration(it, *run.tokens, run.packing(), plan.partition, plan.recompute);
    if (i == 0) {
      MMTWIN_ASSIGN_OR_RETURN(graph,
                              BuildIterationGraph(par, plan.schedule, costs, statics, comm, run.comm_cost));
    } else {
      MMTWIN_RETURN_IF_ERROR(RepriceIterationGraph(&graph, plan.schedule, costs));
    }
    // Compute slowed by the collectives it overlaps (core/eval/overlap.h), in the durations every engine reads;
    // the unstretched durations come back after this iteration (repricing starts from them).
    const double slowdown = run.cluster.device.overlap_slowdown;
    if (slowdown > 0) {
      unstretched = graph.duration_us;
      ApplyOverlapSlowdown(graph, slowdown, &timing);
    }
    MMTWIN_RETURN_IF_ERROR(evaluator.Evaluate(graph, &timing));
    AddOptimizerStep(optimizer_us, par.pp, timing);
    // Never record a time that is not a number: name what drives it instead of writing null into the summary.
    if (!std::isfinite(timing.iteration_time_us) || timing.iteration_time_us < 0 ||
        timing.iteration_time_us > 1e15)
      return Error("the " + evaluator.name() + " engine's time for iteration " +
                   std::to_string(it.epoch_index) + " is " + std::to_string(timing.iteration_time_us) +
                   " us, not a finite time; check the cluster's bandwidths and latencies (nic_bytes_per_s, "
                   "nic_latency_us, nvlink_bytes_per_s, nvlink_latency_us) and the cost table");
    Accumulate(timing, costs, it, par, r);
    r.memory = MergeMemory(r.memory, ComputeMemory(par, plan.partition, layer_params, plan.schedule, costs,
                                                   run.cluster.device, frozen_params, &memory_replay));
    if (static_cast<int>(i) == trace_at) {
      r.ops = OpRecordsOf(graph, timing, costs, it.epoch_index);
      AddWorkload(r.ops, it, *run.tokens, plan.packed, mesh);
      r.trace_json = PerfettoTrace(r.ops, par, PerfettoOptions{options.trace_dp_replicas}) + "\n";
    }
    if (slowdown > 0) {
      for (int op = 0; op < graph.num_ops(); ++op)
        if (graph.ops[op].lane == Lane::kCompute) graph.ops[op].duration_us = unstretched[op];
      graph.duration_us = unstretched;
    }
    if (options.progress) options.progress(static_cast<double>(i + 1) / replayed);
  }
  return r;
}

// The replay's time split (of GPU time), dispatch, throughput, MFU and memory verdict.
void AddReplayTotals(const PlannedRun& run, const Replay& r, RunSummary& s) {
  double busy = 0, bubble = 0, idle = 0, recompute = 0, exposed = 0, exposed_dispatch = 0, dispatch = 0;
  int64_t dispatch_ops = 0;
  for (const DeviceTiming& d : r.devices) {
    busy += d.busy_us;
    bubble += d.bubble_us;
    idle += d.idle_us;
    recompute += d.recompute_us;
    exposed += d.exposed_comm_us;
    exposed_dispatch += d.exposed_dispatch_us;
    dispatch += d.dispatch_us;
    dispatch_ops += d.dispatch_ops;
  }
  const double device_time = r.total_us * static_cast<double>(r.devices.size());
  const double world = run.plan.parallel.world_size();
  s.busy_ratio = busy / device_time;
  s.bubble_ratio = bubble / device_time;
  s.idle_ratio = idle / device_time;
  s.exposed_comm_ratio = exposed / device_time;
  s.exposed_dispatch_ratio = exposed_dispatch / device_time;
  s.dispatch_us_mean = dispatch_ops > 0 ? dispatch / static_cast<double>(dispatch_ops) : 0.0;
  s.recompute_ratio = recompute / device_time;
  s.tokens_per_s = r.total_tokens / (r.total_us * 1e-6);
  s.samples_per_s = r.total_samples / (r.total_us * 1e-6);
  s.mfu = r.total_flops / (r.total_us * 1e-6 * world * run.cluster.device.peak_flops);
  for (const StageMemory& m : r.memory)
    if (!m.fits) {
      s.oom = true;
      s.oom_stages.push_back({m.stage, m.short_bytes, m.peak_bytes, m.capacity_bytes});
    }
}

// The stages: the static side of each (layers, parameters, recompute) and its memory, as `mmtwin plan` shows them
// (PlanStages), with the replay's memory and mean forward time; the timing side from the replay. Sets run's memory
// report from the replay.
void AddReplayStages(PlannedRun& run, const Replay& r, RunSummary& s) {
  const ParallelConfig& par = run.plan.parallel;
  const DeviceMesh mesh(par, run.cluster.gpus_per_node);
  const double mbs = static_cast<double>(r.micro_batches);
  run.memory = r.memory;
  run.stage_fwd_us_mean.assign(par.pp, 0.0);
  for (int k = 0; k < par.pp; ++k) run.stage_fwd_us_mean[k] = r.stage_fwd_us[k] / mbs;
  for (const PlanStage& ps : PlanStages(run)) {
    const int k = ps.stage;
    double sb = 0, sbu = 0, si = 0, sxd = 0, sd = 0;
    int64_t sdn = 0;
    for (int d = 0; d < par.dp; ++d) {
      const DeviceTiming& t = r.devices[mesh.Device(d, k)];
      sb += t.busy_us;
      sbu += t.bubble_us;
      si += t.idle_us;
      sxd += t.exposed_dispatch_us;
      sd += t.dispatch_us;
      sdn += t.dispatch_ops;
    }
    const double denom = r.total_us * par.dp;
    StageRecord st = PlannedStageRecord(ps);
    st.fwd_us_mean = ps.fwd_us_mean;
    st.bwd_us_mean = r.stage_bwd_us[k] / mbs;
    st.recompute_us_mean = r.stage_recompute_us[k] / mbs;
    st.busy_ratio = sb / denom;
    st.bubble_ratio = sbu / denom;
    st.idle_ratio = si / denom;
    st.exposed_dispatch_ratio = sxd / denom;
    st.dispatch_us_mean = sdn > 0 ? sd / static_cast<double>(sdn) : 0.0;
    s.stages.push_back(std::move(st));
  }
}

}  // namespace

Result<PlanIterationGraph> BuildPlanIterationGraph(const PlannedRun& run, size_t plan_iteration) {
  const Plan& plan = run.plan;
  if (plan_iteration >= plan.iterations.size())
    return Error("plan iteration " + std::to_string(plan_iteration) + " out of range (the plan replays " +
                 std::to_string(plan.iterations.size()) + ")");
  const Pricer pricer = run.MakePricer();
  const std::vector<ChunkStatic> statics = pricer.Static(plan.partition);
  PlanIterationGraph out;
  out.costs = pricer.PriceIteration(plan.iterations[plan_iteration], *run.tokens, run.packing(),
                                    plan.partition, plan.recompute);
  MMTWIN_ASSIGN_OR_RETURN(out.graph, BuildIterationGraph(plan.parallel, plan.schedule, out.costs, statics,
                                                         run.Comm(), run.comm_cost));
  out.optimizer_us = OptimizerStepUsPerStage(run, statics);
  return out;
}

Result<SimulationResult> Simulate(const Scenario& scenario, const SimulateOptions& options) {
  if (options.evaluator && scenario.engine != options.evaluator->name())
    return Error("engine '" + scenario.engine + "' requested, but the evaluator given is '" +
                 options.evaluator->name() + "' (valid engines: analytic, simgrid)");
  PlanOptions popts;
  popts.cost = options.cost;
  popts.comm_cost = options.comm_cost;
  popts.memory_report = false;  // computed below while replaying
  popts.cancel = options.cancel;
  popts.prepared = options.prepared;
  popts.keep_trace = false;  // the replay needs the per-sample tokens, not the samples
  MMTWIN_ASSIGN_OR_RETURN(PlannedRun run, BuildPlan(scenario, popts));
  std::unique_ptr<Evaluator> owned;
  Evaluator* evaluator = options.evaluator;
  if (!evaluator) {
    MMTWIN_ASSIGN_OR_RETURN(owned, MakeEvaluator(scenario.engine, run.cluster, options.engine));
    evaluator = owned.get();
  }
  MMTWIN_ASSIGN_OR_RETURN(Replay replay, ReplayIterations(run, *evaluator, options));
  SimulationResult res;
  res.summary = PlannedRunSummary(run, RecordSource::kSimulated, evaluator->name(), replay.times_us);
  AddReplayTotals(run, replay, res.summary);
  AddReplayStages(run, replay, res.summary);
  res.ops = std::move(replay.ops);
  res.trace_json = std::move(replay.trace_json);
  res.resolved_yaml = FormatScenario(run.scenario);
  res.plan = std::move(run.plan);
  return res;
}

}  // namespace mmtwin

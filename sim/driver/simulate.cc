// SPDX-License-Identifier: Apache-2.0
// Scenario -> plan -> priced op graphs -> evaluated iterations -> run records. See simulate.h.
#include "driver/simulate.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/memory.h"
#include "core/plan/mesh.h"
#include "core/plan/pricing.h"
#include "core/records/perfetto.h"
#include "core/util/text.h"
#include "driver/planner.h"

namespace mmtwin {
namespace {

PolicyRecord PolicyOf(const PolicyRef& r) { return {r.name, r.params}; }

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

}  // namespace

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
  const Plan& plan = run.plan;
  const ParallelConfig& par = plan.parallel;
  const Pricer pricer = run.MakePricer();
  std::vector<int64_t> layer_params;
  for (const Layer& l : pricer.layers()) layer_params.push_back(l.params);
  const std::vector<ChunkStatic> statics = pricer.Static(plan.partition);
  const CommSpec comm = run.Comm();
  const DeviceMesh mesh(par, run.cluster.gpus_per_node);
  const int devices = mesh.num_devices();

  SimulationResult res;
  std::vector<StageMemory> mem;
  std::vector<double> times;
  std::vector<DeviceTiming> dev_sum(devices);
  std::vector<double> stage_fwd(par.pp, 0), stage_bwd(par.pp, 0), stage_rc(par.pp, 0);
  double total_time = 0, total_flops = 0, total_tokens = 0, total_samples = 0;
  int64_t mbs = 0;
  OpGraph graph;
  IterationTiming timing;
  const size_t replayed = plan.iterations.size();
  const int trace_at = std::clamp(options.trace_iteration, 0, static_cast<int>(replayed) - 1);
  for (size_t i = 0; i < replayed; ++i) {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return Error::Cancelled();
    const IterationData& it = plan.iterations[i];
    const IterationCosts costs =
        pricer.PriceIteration(it, run.tokens, run.packing(), plan.partition, plan.recompute);
    if (i == 0) {
      MMTWIN_ASSIGN_OR_RETURN(graph,
                              BuildIterationGraph(par, plan.schedule, costs, statics, comm, run.comm_cost));
    } else {
      MMTWIN_RETURN_IF_ERROR(RepriceIterationGraph(&graph, plan.schedule, costs));
    }
    MMTWIN_RETURN_IF_ERROR(evaluator->Evaluate(graph, &timing));
    // Never record a time that is not a number: name what drives it instead of writing null into summary.json.
    if (!std::isfinite(timing.iteration_time_us) || timing.iteration_time_us < 0 ||
        timing.iteration_time_us > 1e15)
      return Error("the " + evaluator->name() + " engine's time for iteration " +
                   std::to_string(it.epoch_index) + " is " + std::to_string(timing.iteration_time_us) +
                   " us, not a finite time; check the cluster's bandwidths and latencies (nic_bytes_per_s, "
                   "nic_latency_us, nvlink_bytes_per_s, nvlink_latency_us) and the cost table");
    times.push_back(timing.iteration_time_us);
    total_time += timing.iteration_time_us;
    for (int d = 0; d < devices; ++d) {
      dev_sum[d].busy_us += timing.devices[d].busy_us;
      dev_sum[d].recompute_us += timing.devices[d].recompute_us;
      dev_sum[d].bubble_us += timing.devices[d].bubble_us;
      dev_sum[d].idle_us += timing.devices[d].idle_us;
      dev_sum[d].exposed_comm_us += timing.devices[d].exposed_comm_us;
      dev_sum[d].exposed_dispatch_us += timing.devices[d].exposed_dispatch_us;
      dev_sum[d].dispatch_us += timing.devices[d].dispatch_us;
      dev_sum[d].dispatch_ops += timing.devices[d].dispatch_ops;
    }
    for (int d = 0; d < costs.dp; ++d)
      for (int m = 0; m < costs.micro_batches; ++m) {
        total_tokens += static_cast<double>(costs.At(d, m, 0).llm_tokens);
        // SP ranks (replicas d * sp ..) share a micro-batch: count its samples once.
        if (d % std::max(1, par.sp) == 0)
          total_samples += static_cast<double>(it.micro_batches[d / std::max(1, par.sp)][m].size());
        ++mbs;
        for (int c = 0; c < costs.chunks; ++c) {
          const ChunkCost& cc = costs.At(d, m, c);
          total_flops += cc.model_flops;
          const int r = PipeRankOfChunk(c, par.pp);
          stage_fwd[r] += cc.fwd_us;
          stage_bwd[r] += cc.bwd_us;
          stage_rc[r] += cc.recompute_us;
        }
      }
    mem = MergeMemory(mem, ComputeMemory(par, plan.partition, layer_params, plan.schedule, costs,
                                         UsableMemoryBytes(run.cluster.device)));
    if (static_cast<int>(i) == trace_at) {
      res.ops = OpRecordsOf(graph, timing, costs, it.epoch_index);
      AddWorkload(res.ops, it, run.tokens, plan.packed, mesh);
      res.trace_json = PerfettoTrace(res.ops, par, PerfettoOptions{options.trace_dp_replicas}) + "\n";
    }
    if (options.progress) options.progress(static_cast<double>(i + 1) / replayed);
  }

  const double n = static_cast<double>(times.size());
  const double mean = total_time / n;
  double var = 0;
  for (double t : times) var += (t - mean) * (t - mean);
  var = times.size() > 1 ? var / (n - 1) : 0;
  // 95% interval of the epoch mean from a sample of its iterations (finite-population correction).
  const int64_t epoch_its = plan.iterations_in_epoch;
  const double fpc = epoch_its > 1 ? std::sqrt(std::max(0.0, (epoch_its - n) / (epoch_its - 1.0))) : 0;
  const double half = 1.96 * std::sqrt(var / n) * fpc;
  double busy = 0, bubble = 0, idle = 0, recompute = 0, exposed = 0, exposed_dispatch = 0, dispatch = 0;
  int64_t dispatch_ops = 0;
  for (const auto& d : dev_sum) {
    busy += d.busy_us;
    bubble += d.bubble_us;
    idle += d.idle_us;
    recompute += d.recompute_us;
    exposed += d.exposed_comm_us;
    exposed_dispatch += d.exposed_dispatch_us;
    dispatch += d.dispatch_us;
    dispatch_ops += d.dispatch_ops;
  }
  const double device_time = total_time * devices;
  const double world = par.world_size();
  const double epoch_s = mean * 1e-6 * epoch_its;

  RunSummary& s = res.summary;
  s.source = RecordSource::kSimulated;
  s.scenario = run.scenario.name;
  s.model = run.model.name;
  s.cluster = {run.cluster.name, run.cluster.nodes, run.cluster.device.name};
  s.engine = evaluator->name();
  s.parallel = par;
  s.data_policy = PolicyOf(run.scenario.data);
  s.partition_policy = PolicyOf(run.scenario.partition);
  s.recompute_policy = PolicyOf(run.scenario.recompute);
  s.schedule_policy = PolicyOf(run.scenario.schedule);
  s.trace_samples = run.trace_samples;
  s.iterations_in_epoch = epoch_its;
  s.iterations_replayed = static_cast<int64_t>(times.size());
  s.iteration_time_us = {mean,
                         Percentile(times, 0.5),
                         Percentile(times, 0.99),
                         *std::min_element(times.begin(), times.end()),
                         *std::max_element(times.begin(), times.end()),
                         mean - half,
                         mean + half};
  s.busy_ratio = busy / device_time;
  s.bubble_ratio = bubble / device_time;
  s.idle_ratio = idle / device_time;
  s.exposed_comm_ratio = exposed / device_time;
  s.exposed_dispatch_ratio = exposed_dispatch / device_time;
  s.dispatch_us_mean = dispatch_ops > 0 ? dispatch / static_cast<double>(dispatch_ops) : 0.0;
  s.recompute_ratio = recompute / device_time;
  s.tokens_per_s = total_tokens / (total_time * 1e-6);
  s.samples_per_s = total_samples / (total_time * 1e-6);
  s.mfu = total_flops / (total_time * 1e-6 * world * run.cluster.device.peak_flops);
  s.epoch_time_s = epoch_s;
  s.gpu_days = epoch_s * world / 86400.0;
  for (const StageMemory& m : mem)
    if (!m.fits) {
      s.oom = true;
      s.oom_stages.push_back({m.stage, m.short_bytes, m.peak_bytes, m.capacity_bytes});
    }
  const DataMetrics& dm = run.data_metrics;
  s.data = {dm.pad_ratio,       dm.dist_ratio_vit,  dm.dist_ratio_llm,
            dm.mean_batch_size, dm.samples_skipped, dm.samples_dropped};
  const PartitionReport& pr = run.partition_report;
  s.partition = {plan.partition.bounds, pr.var_fwd_us2, pr.sum_comm_bytes, pr.var_params, pr.var_layers};
  s.recomputed_layers = plan.recompute.Count();

  // The static side of each stage (layers, parameters, recompute) and its memory, as `mmtwin plan` shows them
  // (PlanStages), with the replay's memory and mean forward time; the timing side from the replay.
  run.memory = mem;
  run.stage_fwd_us_mean.assign(par.pp, 0.0);
  for (int r = 0; r < par.pp; ++r) run.stage_fwd_us_mean[r] = stage_fwd[r] / mbs;
  for (const PlanStage& ps : PlanStages(run)) {
    const int r = ps.stage;
    double sb = 0, sbu = 0, si = 0, sxd = 0, sd = 0;
    int64_t sdn = 0;
    for (int d = 0; d < par.dp; ++d) {
      const DeviceTiming& t = dev_sum[mesh.Device(d, r)];
      sb += t.busy_us;
      sbu += t.bubble_us;
      si += t.idle_us;
      sxd += t.exposed_dispatch_us;
      sd += t.dispatch_us;
      sdn += t.dispatch_ops;
    }
    const double denom = total_time * par.dp;
    StageRecord st = PlannedStageRecord(ps);
    st.fwd_us_mean = ps.fwd_us_mean;
    st.bwd_us_mean = stage_bwd[r] / mbs;
    st.recompute_us_mean = stage_rc[r] / mbs;
    st.busy_ratio = sb / denom;
    st.bubble_ratio = sbu / denom;
    st.idle_ratio = si / denom;
    st.exposed_dispatch_ratio = sxd / denom;
    st.dispatch_us_mean = sdn > 0 ? sd / static_cast<double>(sdn) : 0.0;
    s.stages.push_back(std::move(st));
  }
  res.resolved_yaml = FormatScenario(run.scenario);
  res.plan = std::move(run.plan);
  return res;
}

StageRecord PlannedStageRecord(const PlanStage& ps) {
  StageRecord st;
  st.stage = ps.stage;
  st.first_layer = ps.first_layer;
  st.last_layer = ps.last_layer;
  st.first_layer_label = ps.first_layer_label;
  st.last_layer_label = ps.last_layer_label;
  st.layers = ps.layers;
  st.params = ps.params;
  st.recomputed_layers = ps.recomputed_layers;
  st.model_state_bytes = ps.memory.model_state_bytes;
  st.peak_activation_bytes = ps.memory.peak_activation_bytes;
  st.peak_memory_bytes = ps.memory.peak_bytes;
  st.memory_capacity_bytes = ps.memory.capacity_bytes;
  st.fits = ps.memory.fits;
  return st;
}

}  // namespace mmtwin

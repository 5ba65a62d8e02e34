// Scenario -> plan -> priced op graphs -> evaluated iterations -> run records. See simulate.h.
#include "core/sim/simulate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "core/balance/data_policy.h"
#include "core/balance/metrics.h"
#include "core/cluster/cluster.h"
#include "core/cost/cost_model.h"
#include "core/eval/analytic.h"
#include "core/eval/perfetto.h"
#include "core/graph/op_graph.h"
#include "core/plan/memory.h"
#include "core/plan/partition.h"
#include "core/plan/pricing.h"
#include "core/plan/recompute.h"
#include "core/plan/schedule.h"
#include "core/trace/generate.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

// Everything a run needs, resolved from the scenario once.
struct Env {
  Scenario scenario;
  ModelSpec model;
  ClusterSpec cluster;
  Trace trace;
  SampleSizes sizes;
  std::vector<SampleTokens> tokens;
  DataPlan data;
  DataMetrics data_metrics;
  int64_t iterations_in_epoch = 0;
  std::vector<int64_t> replay;  // iteration indices to evaluate, ascending
  std::unique_ptr<AnalyticCostModel> cost;
  std::unique_ptr<Pricer> pricer;
  Packing packing = Packing::kVarlen;
  Schedule schedule;
};

IterationData IterationOf(const Env& e, int64_t k) {
  const int m = e.scenario.parallel.micro_batches, d = e.scenario.parallel.dp;
  IterationData it;
  it.micro_batches.assign(d, std::vector<std::vector<uint32_t>>(m));
  it.dispatch.assign(m, {});
  for (int j = 0; j < m; ++j) {
    const DataStep& step = e.data.steps[static_cast<size_t>(k * m + j)];
    for (int r = 0; r < d; ++r) it.micro_batches[r][j] = step.ranks[r].samples;
    it.dispatch[j] = step.dispatch;
  }
  return it;
}

Result<std::unique_ptr<Env>> Prepare(const Scenario& s) {
  auto e = std::make_unique<Env>();
  e->scenario = s;
  const ParallelConfig& par = s.parallel;
  if (par.dp < 1 || par.tp < 1 || par.pp < 1 || par.vpp < 1 || par.micro_batches < 1)
    return Error("scenario: parallel sizes must be >= 1");
  if (par.zero_stage < 0 || par.zero_stage > 3) return Error("scenario: zero_stage must be 0..3");
  MMTWIN_ASSIGN_OR_RETURN(e->model, LoadModel(s.model));
  MMTWIN_ASSIGN_OR_RETURN(ClusterSpec probe, LoadCluster(s.cluster));
  if (par.tp > probe.gpus_per_node)
    return Error("scenario: tp " + std::to_string(par.tp) + " exceeds the " +
                 std::to_string(probe.gpus_per_node) + " GPUs of a node in cluster '" + probe.name + "'");
  const int needed = (par.world_size() + probe.gpus_per_node - 1) / probe.gpus_per_node;
  if (s.nodes > 0 && s.nodes < needed)
    return Error("scenario: dp*tp*pp = " + std::to_string(par.world_size()) + " GPUs need " +
                 std::to_string(needed) + " nodes of cluster '" + probe.name + "', but nodes is " +
                 std::to_string(s.nodes));
  e->scenario.nodes = s.nodes > 0 ? s.nodes : needed;
  MMTWIN_ASSIGN_OR_RETURN(e->cluster, LoadCluster(s.cluster, e->scenario.nodes));
  if (!s.trace.file.empty()) {
    MMTWIN_ASSIGN_OR_RETURN(e->trace, ReadTrace(s.trace.file));
  } else {
    int64_t n = s.trace.samples;
    if (n <= 0)
      for (const auto& p : GeneratorPresets())
        if (p.name == s.trace.preset) n = p.default_samples;
    MMTWIN_ASSIGN_OR_RETURN(e->trace, GenerateTrace(s.trace.preset, n, s.trace.seed));
  }
  if (e->trace.samples.empty()) return Error("scenario: the trace has no samples");
  e->sizes = ComputeSizes(e->model, e->trace);
  e->tokens.reserve(e->trace.size());
  for (const Sample& x : e->trace.samples) e->tokens.push_back(TokensFor(e->model, x));
  const int ranks_per_node = std::max(1, e->cluster.gpus_per_node / par.tp);
  DataPolicyContext ctx{&e->trace, &e->model, &e->sizes, par.dp, ranks_per_node, s.seed};
  MMTWIN_ASSIGN_OR_RETURN(e->data, RunDataPolicy(s.data.name, s.data.params, ctx));
  e->data_metrics = ComputeDataMetrics(e->data, e->sizes);
  e->packing = e->data.packed ? Packing::kVarlen : Packing::kPadded;
  e->iterations_in_epoch = static_cast<int64_t>(e->data.steps.size()) / par.micro_batches;
  if (e->iterations_in_epoch < 1)
    return Error("scenario: the trace yields " + std::to_string(e->data.steps.size()) +
                 " mini-batch steps for dp " + std::to_string(par.dp) + ", fewer than the " +
                 std::to_string(par.micro_batches) + " micro-batches of one iteration");
  if (s.epoch || s.iterations >= e->iterations_in_epoch) {
    e->replay.resize(e->iterations_in_epoch);
    std::iota(e->replay.begin(), e->replay.end(), 0);
  } else {
    // A seeded sample of distinct iterations (partial Fisher-Yates), ascending.
    std::vector<int64_t> all(e->iterations_in_epoch);
    std::iota(all.begin(), all.end(), 0);
    Rng rng = Rng(s.seed).Fork(101);
    for (int64_t i = 0; i < s.iterations; ++i) std::swap(all[i], all[i + rng.Below(all.size() - i)]);
    e->replay.assign(all.begin(), all.begin() + s.iterations);
    std::sort(e->replay.begin(), e->replay.end());
  }
  e->cost = std::make_unique<AnalyticCostModel>(e->cluster.device, AnalyticOptions{par.tp});
  e->pricer = std::make_unique<Pricer>(e->model, *e->cost, e->cluster, par);
  MMTWIN_ASSIGN_OR_RETURN(e->schedule, BuildSchedule(s.schedule.name, par.pp, par.vpp, par.micro_batches));
  return e;
}

// Per-layer profiles over a bounded sample of the replayed micro-batches: the mean (what partitioning
// balances, OmniBal's "balanced input size") and the element-wise worst case (what memory must survive).
struct Profiles {
  LayerProfile mean, worst;
};

Profiles BuildProfiles(const Env& e) {
  const std::vector<Layer>& layers = e.pricer->layers();
  std::vector<LayerCost> lc, sum(layers.size()), worst(layers.size());
  std::vector<SampleTokens> mb;
  int64_t n = 0;
  const size_t max_iterations = std::min<size_t>(e.replay.size(), 16);
  for (size_t i = 0; i < max_iterations; ++i) {
    const IterationData it = IterationOf(e, e.replay[i]);
    for (const auto& rank : it.micro_batches)
      for (const auto& samples : rank) {
        mb.clear();
        for (uint32_t s : samples) mb.push_back(e.tokens[s]);
        e.pricer->LayerCosts(mb, e.packing, lc);
        for (size_t l = 0; l < lc.size(); ++l) {
          sum[l].fwd_time_us += lc[l].fwd_time_us;
          sum[l].bwd_time_us += lc[l].bwd_time_us;
          sum[l].act_bytes += lc[l].act_bytes;
          sum[l].act_bytes_recompute += lc[l].act_bytes_recompute;
          sum[l].boundary_bytes += lc[l].boundary_bytes;
          sum[l].param_bytes = lc[l].param_bytes;
          worst[l].fwd_time_us = std::max(worst[l].fwd_time_us, lc[l].fwd_time_us);
          worst[l].bwd_time_us = std::max(worst[l].bwd_time_us, lc[l].bwd_time_us);
          worst[l].act_bytes = std::max(worst[l].act_bytes, lc[l].act_bytes);
          worst[l].act_bytes_recompute = std::max(worst[l].act_bytes_recompute, lc[l].act_bytes_recompute);
          worst[l].boundary_bytes = std::max(worst[l].boundary_bytes, lc[l].boundary_bytes);
          worst[l].param_bytes = lc[l].param_bytes;
        }
        ++n;
      }
  }
  for (auto& x : sum) {
    const double k = std::max<int64_t>(1, n);
    x.fwd_time_us /= k;
    x.bwd_time_us /= k;
    x.act_bytes = static_cast<int64_t>(x.act_bytes / k);
    x.act_bytes_recompute = static_cast<int64_t>(x.act_bytes_recompute / k);
    x.boundary_bytes = static_cast<int64_t>(x.boundary_bytes / k);
  }
  return {MakeLayerProfile(layers, sum), MakeLayerProfile(layers, worst)};
}

std::vector<int64_t> LayerParams(const std::vector<Layer>& layers) {
  std::vector<int64_t> p;
  for (const Layer& l : layers) p.push_back(l.params);
  return p;
}

struct Planned {
  Partition partition;
  PartitionReport partition_report;
  RecomputePlan recompute;
  RecomputeReport recompute_report;
};

Result<RecomputePlan> PlanRecompute(const Env& e, const LayerProfile& worst, const Partition& p,
                                    RecomputeReport* report) {
  const ParallelConfig& par = e.scenario.parallel;
  RecomputeContext rc;
  rc.profile = worst;
  rc.partition = p;
  rc.parallel = par;
  rc.in_flight = MaxInFlight(e.schedule);
  rc.model_state_bytes = RankModelStateBytes(par, p, worst.params);
  rc.other_bytes = ProfileBoundaryBytes(worst, p, par);
  rc.capacity_bytes = e.cluster.device.memory_bytes;
  return RunRecomputePolicy(e.scenario.recompute.name, e.scenario.recompute.params, rc, report);
}

// Mean iteration time of a candidate plan over the first few replayed iterations (bmp's "timing").
Result<double> QuickTime(const Env& e, const LayerProfile& worst, const Partition& p) {
  MMTWIN_ASSIGN_OR_RETURN(RecomputePlan rc, PlanRecompute(e, worst, p, nullptr));
  const std::vector<ChunkStatic> statics = e.pricer->Static(p);
  double total = 0;
  const size_t n = std::min<size_t>(e.replay.size(), 4);
  OpGraph graph;
  IterationTiming timing;
  for (size_t i = 0; i < n; ++i) {
    const IterationCosts costs =
        e.pricer->PriceIteration(IterationOf(e, e.replay[i]), e.tokens, e.packing, p, rc);
    if (i == 0) {
      MMTWIN_ASSIGN_OR_RETURN(
          graph, BuildIterationGraph(e.scenario.parallel, e.schedule, costs, statics, e.pricer->Comm()));
    } else {
      MMTWIN_RETURN_IF_ERROR(RepriceIterationGraph(&graph, e.schedule, costs));
    }
    EvaluateAnalytic(graph, &timing);
    total += timing.iteration_time_us;
  }
  return total / std::max<size_t>(1, n);
}

Result<Planned> PlanModel(const Env& e, const Profiles& prof) {
  const ParallelConfig& par = e.scenario.parallel;
  Planned out;
  PartitionContext pc;
  pc.profile = prof.mean;
  pc.chunks = par.chunks();
  pc.pp = par.pp;
  const std::vector<int> in_flight = MaxInFlight(e.schedule);
  const int64_t capacity = e.cluster.device.memory_bytes;
  pc.fits_with_full_recompute = [&](const Partition& p) {
    return FitsWithFullRecompute(prof.worst, p, par, in_flight, capacity);
  };
  pc.evaluate = [&](const Partition& p) { return QuickTime(e, prof.worst, p); };
  if (par.chunks() > static_cast<int>(e.pricer->layers().size()))
    return Error("scenario: pp * vpp = " + std::to_string(par.chunks()) + " chunks exceed the model's " +
                 std::to_string(e.pricer->layers().size()) + " layers");
  MMTWIN_ASSIGN_OR_RETURN(
      out.partition,
      RunPartitionPolicy(e.scenario.partition.name, e.scenario.partition.params, pc, &out.partition_report));
  MMTWIN_ASSIGN_OR_RETURN(out.recompute, PlanRecompute(e, prof.worst, out.partition, &out.recompute_report));
  return out;
}

nlohmann::json ParallelJson(const ParallelConfig& p) {
  return {{"dp", p.dp},
          {"tp", p.tp},
          {"pp", p.pp},
          {"vpp", p.vpp},
          {"micro_batches", p.micro_batches},
          {"zero_stage", p.zero_stage},
          {"world_size", p.world_size()}};
}

nlohmann::json PolicyJson(const PolicyRef& r) { return {{"name", r.name}, {"params", r.params}}; }

nlohmann::json PoliciesJson(const Scenario& s) {
  return {{"data", PolicyJson(s.data)},
          {"partition", PolicyJson(s.partition)},
          {"recompute", PolicyJson(s.recompute)},
          {"schedule", PolicyJson(s.schedule)}};
}

// Per pipeline rank: first/last layer and counts over its chunks.
struct StageShape {
  int first_layer = -1, last_layer = -1, layers = 0, recomputed = 0;
};

std::vector<StageShape> Shapes(const ParallelConfig& par, const Partition& p, const RecomputePlan& rc) {
  std::vector<StageShape> s(par.pp);
  for (int c = 0; c < p.chunks(); ++c) {
    StageShape& x = s[PipeRankOfChunk(c, par.pp)];
    if (x.first_layer < 0) x.first_layer = p.bounds[c];
    x.last_layer = p.bounds[c + 1] - 1;
    x.layers += p.LayersIn(c);
    for (int l = p.bounds[c]; l < p.bounds[c + 1]; ++l) x.recomputed += rc.layers[l] != 0;
  }
  return s;
}

nlohmann::json OomJson(const std::vector<StageMemory>& mem, bool& oom) {
  nlohmann::json a = nlohmann::json::array();
  oom = false;
  for (const StageMemory& m : mem)
    if (!m.fits) {
      oom = true;
      a.push_back({{"stage", m.stage},
                   {"short_bytes", m.short_bytes},
                   {"peak_memory_bytes", m.peak_bytes},
                   {"memory_capacity_bytes", m.capacity_bytes}});
    }
  return a;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * (v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

}  // namespace

Result<nlohmann::json> PlanScenario(const Scenario& scenario) {
  MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<Env> e, Prepare(scenario));
  const Profiles prof = BuildProfiles(*e);
  MMTWIN_ASSIGN_OR_RETURN(Planned planned, PlanModel(*e, prof));
  const ParallelConfig& par = e->scenario.parallel;
  const std::vector<int64_t> layer_params = LayerParams(e->pricer->layers());
  std::vector<StageMemory> mem;
  std::vector<double> fwd(par.pp, 0);
  int64_t mbs = 0;
  for (int64_t k : e->replay) {
    const IterationCosts costs = e->pricer->PriceIteration(IterationOf(*e, k), e->tokens, e->packing,
                                                           planned.partition, planned.recompute);
    mem = MergeMemory(mem, ComputeMemory(par, planned.partition, layer_params, e->schedule, costs,
                                         e->cluster.device.memory_bytes));
    for (int d = 0; d < costs.dp; ++d)
      for (int m = 0; m < costs.micro_batches; ++m) {
        for (int c = 0; c < costs.chunks; ++c) fwd[PipeRankOfChunk(c, par.pp)] += costs.At(d, m, c).fwd_us;
        ++mbs;
      }
  }
  const auto shapes = Shapes(par, planned.partition, planned.recompute);
  const std::vector<int64_t> rank_params = RankParams(par, planned.partition, layer_params);
  const auto& layers = e->pricer->layers();
  nlohmann::json stages = nlohmann::json::array();
  for (int r = 0; r < par.pp; ++r) {
    const StageMemory& m = mem[r];
    stages.push_back(
        {{"stage", r},
         {"first_layer", shapes[r].first_layer},
         {"last_layer", shapes[r].last_layer},
         {"layer_labels", {layers[shapes[r].first_layer].label, layers[shapes[r].last_layer].label}},
         {"layers", shapes[r].layers},
         {"params", rank_params[r]},
         {"recomputed_layers", shapes[r].recomputed},
         {"fwd_us_mean", mbs ? fwd[r] / mbs : 0.0},
         {"model_state_bytes", m.model_state_bytes},
         {"peak_activation_bytes", m.peak_activation_bytes},
         {"boundary_bytes", m.boundary_bytes},
         {"peak_memory_bytes", m.peak_bytes},
         {"memory_capacity_bytes", m.capacity_bytes},
         {"fits", m.fits}});
  }
  bool oom = false;
  nlohmann::json j;
  j["scenario"] = e->scenario.name;
  j["model"] = e->model.name;
  j["cluster"] = {{"preset", e->cluster.name}, {"nodes", e->cluster.nodes}};
  j["parallel"] = ParallelJson(par);
  j["policies"] = PoliciesJson(e->scenario);
  j["layers"] = static_cast<int>(layers.size());
  j["partition_bounds"] = planned.partition.bounds;
  j["stages"] = stages;
  j["oom_stages"] = OomJson(mem, oom);
  j["oom"] = oom;
  return j;
}

Result<SimulationResult> Simulate(const Scenario& scenario, const SimulateOptions& options) {
  AnalyticEvaluator analytic;
  Evaluator* evaluator = options.evaluator ? options.evaluator : &analytic;
  if (scenario.engine != evaluator->name())
    return Error("engine '" + scenario.engine + "' requested, but the evaluator given is '" +
                 evaluator->name() + "' (valid engines: analytic, simgrid)");
  MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<Env> e, Prepare(scenario));
  const Profiles prof = BuildProfiles(*e);
  MMTWIN_ASSIGN_OR_RETURN(Planned planned, PlanModel(*e, prof));
  const ParallelConfig& par = e->scenario.parallel;
  const std::vector<int64_t> layer_params = LayerParams(e->pricer->layers());
  const std::vector<ChunkStatic> statics = e->pricer->Static(planned.partition);
  const CommSpec comm = e->pricer->Comm();
  const int devices = par.dp * par.pp;

  SimulationResult res;
  std::vector<StageMemory> mem;
  std::vector<double> times;
  std::vector<DeviceTiming> dev_sum(devices);
  std::vector<double> stage_fwd(par.pp, 0), stage_bwd(par.pp, 0), stage_rc(par.pp, 0);
  double total_time = 0, total_flops = 0, total_tokens = 0, total_samples = 0;
  int64_t mbs = 0;
  OpGraph graph;
  IterationTiming timing;
  const int trace_at = std::clamp(options.trace_iteration, 0, static_cast<int>(e->replay.size()) - 1);
  for (size_t i = 0; i < e->replay.size(); ++i) {
    const IterationData it = IterationOf(*e, e->replay[i]);
    const IterationCosts costs =
        e->pricer->PriceIteration(it, e->tokens, e->packing, planned.partition, planned.recompute);
    if (i == 0) {
      MMTWIN_ASSIGN_OR_RETURN(graph, BuildIterationGraph(par, e->schedule, costs, statics, comm));
    } else {
      MMTWIN_RETURN_IF_ERROR(RepriceIterationGraph(&graph, e->schedule, costs));
    }
    MMTWIN_RETURN_IF_ERROR(evaluator->Evaluate(graph, &timing));
    times.push_back(timing.iteration_time_us);
    total_time += timing.iteration_time_us;
    for (int d = 0; d < devices; ++d) {
      dev_sum[d].busy_us += timing.devices[d].busy_us;
      dev_sum[d].recompute_us += timing.devices[d].recompute_us;
      dev_sum[d].bubble_us += timing.devices[d].bubble_us;
      dev_sum[d].idle_us += timing.devices[d].idle_us;
      dev_sum[d].exposed_comm_us += timing.devices[d].exposed_comm_us;
    }
    for (int d = 0; d < costs.dp; ++d)
      for (int m = 0; m < costs.micro_batches; ++m) {
        total_tokens += static_cast<double>(costs.At(d, m, 0).llm_tokens);
        total_samples += static_cast<double>(it.micro_batches[d][m].size());
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
    mem = MergeMemory(mem, ComputeMemory(par, planned.partition, layer_params, e->schedule, costs,
                                         e->cluster.device.memory_bytes));
    if (static_cast<int>(i) == trace_at)
      res.trace = PerfettoTrace(graph, timing, costs, par, PerfettoOptions{options.trace_dp_replicas});
    if (options.progress) options.progress(static_cast<double>(i + 1) / e->replay.size());
  }

  const double n = static_cast<double>(times.size());
  const double mean = total_time / n;
  double var = 0;
  for (double t : times) var += (t - mean) * (t - mean);
  var = times.size() > 1 ? var / (n - 1) : 0;
  // 95% interval of the epoch mean from a sample of its iterations (finite-population correction).
  const double fpc =
      e->iterations_in_epoch > 1
          ? std::sqrt(std::max(0.0, (e->iterations_in_epoch - n) / (e->iterations_in_epoch - 1.0)))
          : 0;
  const double half = 1.96 * std::sqrt(var / n) * fpc;
  double busy = 0, bubble = 0, idle = 0, recompute = 0, exposed = 0;
  for (const auto& d : dev_sum) {
    busy += d.busy_us;
    bubble += d.bubble_us;
    idle += d.idle_us;
    recompute += d.recompute_us;
    exposed += d.exposed_comm_us;
  }
  const double device_time = total_time * devices;
  const double world = par.world_size();
  const double epoch_s = mean * 1e-6 * e->iterations_in_epoch;

  bool oom = false;
  nlohmann::json oom_stages = OomJson(mem, oom);
  const auto shapes = Shapes(par, planned.partition, planned.recompute);
  const std::vector<int64_t> rank_params = RankParams(par, planned.partition, layer_params);
  const auto& layers = e->pricer->layers();
  nlohmann::json stages = nlohmann::json::array();
  std::ostringstream csv;
  csv << "stage,first_layer,last_layer,layers,params,recomputed_layers,fwd_us_mean,bwd_us_mean,recompute_us_"
         "mean,"
         "busy_ratio,bubble_ratio,idle_ratio,model_state_bytes,peak_activation_bytes,peak_memory_bytes,"
         "memory_capacity_bytes,fits\n";
  for (int r = 0; r < par.pp; ++r) {
    double sb = 0, sbu = 0, si = 0;
    for (int d = 0; d < par.dp; ++d) {
      sb += dev_sum[d * par.pp + r].busy_us;
      sbu += dev_sum[d * par.pp + r].bubble_us;
      si += dev_sum[d * par.pp + r].idle_us;
    }
    const double denom = total_time * par.dp;
    const StageMemory& m = mem[r];
    nlohmann::json st = {
        {"stage", r},
        {"first_layer", shapes[r].first_layer},
        {"last_layer", shapes[r].last_layer},
        {"layer_labels", {layers[shapes[r].first_layer].label, layers[shapes[r].last_layer].label}},
        {"layers", shapes[r].layers},
        {"params", rank_params[r]},
        {"recomputed_layers", shapes[r].recomputed},
        {"fwd_us_mean", stage_fwd[r] / mbs},
        {"bwd_us_mean", stage_bwd[r] / mbs},
        {"recompute_us_mean", stage_rc[r] / mbs},
        {"busy_ratio", sb / denom},
        {"bubble_ratio", sbu / denom},
        {"idle_ratio", si / denom},
        {"model_state_bytes", m.model_state_bytes},
        {"peak_activation_bytes", m.peak_activation_bytes},
        {"peak_memory_bytes", m.peak_bytes},
        {"memory_capacity_bytes", m.capacity_bytes},
        {"fits", m.fits}};
    csv << r << "," << shapes[r].first_layer << "," << shapes[r].last_layer << "," << shapes[r].layers << ","
        << rank_params[r] << "," << shapes[r].recomputed << "," << st["fwd_us_mean"].get<double>() << ","
        << st["bwd_us_mean"].get<double>() << "," << st["recompute_us_mean"].get<double>() << ","
        << sb / denom << "," << sbu / denom << "," << si / denom << "," << m.model_state_bytes << ","
        << m.peak_activation_bytes << "," << m.peak_bytes << "," << m.capacity_bytes << ","
        << (m.fits ? "true" : "false") << "\n";
    stages.push_back(st);
  }

  nlohmann::json& j = res.summary;
  j["scenario"] = e->scenario.name;
  j["model"] = e->model.name;
  j["cluster"] = {
      {"preset", e->cluster.name}, {"nodes", e->cluster.nodes}, {"device", e->cluster.device.name}};
  j["engine"] = evaluator->name();
  j["parallel"] = ParallelJson(par);
  j["policies"] = PoliciesJson(e->scenario);
  j["trace_samples"] = static_cast<int64_t>(e->trace.size());
  j["iterations_in_epoch"] = e->iterations_in_epoch;
  j["iterations_replayed"] = static_cast<int64_t>(times.size());
  j["iteration_time_us"] = {{"mean", mean},
                            {"p50", Percentile(times, 0.5)},
                            {"p99", Percentile(times, 0.99)},
                            {"min", *std::min_element(times.begin(), times.end())},
                            {"max", *std::max_element(times.begin(), times.end())},
                            {"ci95_low", mean - half},
                            {"ci95_high", mean + half}};
  j["busy_ratio"] = busy / device_time;
  j["bubble_ratio"] = bubble / device_time;
  j["idle_ratio"] = idle / device_time;
  j["exposed_comm_ratio"] = exposed / device_time;
  j["recompute_ratio"] = recompute / device_time;
  j["tokens_per_s"] = total_tokens / (total_time * 1e-6);
  j["samples_per_s"] = total_samples / (total_time * 1e-6);
  j["mfu"] = total_flops / (total_time * 1e-6 * world * e->cluster.device.peak_flops);
  j["epoch_time_s"] = epoch_s;
  j["gpu_days"] = epoch_s * world / 86400.0;
  j["oom"] = oom;
  j["oom_stages"] = oom_stages;
  j["data"] = {{"pad_ratio", e->data_metrics.pad_ratio},
               {"dist_ratio_vit", e->data_metrics.dist_ratio_vit},
               {"dist_ratio_llm", e->data_metrics.dist_ratio_llm},
               {"mean_batch_size", e->data_metrics.mean_batch_size},
               {"samples_skipped", e->data_metrics.samples_skipped},
               {"samples_dropped", e->data_metrics.samples_dropped}};
  const PartitionReport& pr = planned.partition_report;
  j["partition"] = {{"bounds", planned.partition.bounds},
                    {"var_fwd_us2", pr.var_fwd_us2},
                    {"sum_comm_bytes", pr.sum_comm_bytes},
                    {"var_params", pr.var_params},
                    {"var_layers", pr.var_layers}};
  j["recomputed_layers"] = planned.recompute.Count();
  j["stages"] = stages;
  res.stages_csv = csv.str();
  res.resolved_yaml = FormatScenario(e->scenario);
  res.plan.parallel = par;
  res.plan.partition = planned.partition;
  res.plan.recompute = planned.recompute;
  res.plan.schedule = e->schedule;
  res.plan.packed = e->data.packed;
  for (int64_t k : e->replay) res.plan.iterations.push_back(IterationOf(*e, k));
  return res;
}

}  // namespace mmtwin

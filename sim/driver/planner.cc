// SPDX-License-Identifier: Apache-2.0
// The public planner (planner.h): scenario -> PlannedRun.
#include "driver/planner.h"
#include "core/plan/seqpar.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/balance/data_policy.h"
#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/encoder.h"
#include "core/plan/schedule.h"
#include "core/records/records_json.h"
#include "core/trace/generate.h"
#include "core/util/memory_limit.h"
#include "core/util/rng.h"
#include "core/util/text.h"
#include "driver/encoder_timeline.h"
#include "driver/run_summary.h"

namespace mmtwin {
namespace {

Status Cancelled(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load(std::memory_order_relaxed)) return Error::Cancelled();
  return Status();
}

// A policy's error (unknown parameter, bad value) at the scenario key that chose the policy, keeping its kind; a
// cancellation (a policy that polls the cancel flag, BMP's candidate timing) stays a cancellation, without a place.
Status AtPolicyKey(const Scenario& s, const std::string& kind, const Status& st) {
  if (st.ok() || st.error().cancelled()) return st;
  const std::string key = "policies." + kind;
  const auto has = [&](const std::string& k) { return s.lines.count(k) > 0; };
  return ScenarioError(s, has(key + ".params") ? key + ".params" : key, st.error().message());
}

// Per-layer profiles over a bounded sample of the replayed micro-batches: the mean (what partitioning
// balances, OmniBal's "balanced input size") and the element-wise worst case (what memory must survive).
struct Profiles {
  LayerProfile mean, worst;
  // Per sampled micro-batch, each layer's activation bytes without recompute (what the allocator's spread term
  // depends on; SpreadReserveBytes).
  std::vector<std::vector<int64_t>> micro_batch_act;
};

Profiles BuildProfiles(const PlannedRun& run, const Pricer& pricer) {
  const std::vector<Layer>& layers = pricer.layers();
  std::vector<LayerCost> lc, sum(layers.size()), worst(layers.size());
  std::vector<std::vector<int64_t>> micro_batch_act;
  std::vector<SampleTokens> mb;
  int64_t n = 0;
  const size_t max_iterations = std::min<size_t>(run.plan.iterations.size(), 16);
  for (size_t i = 0; i < max_iterations; ++i) {
    const IterationData& it = run.plan.iterations[i];
    for (const auto& rank : it.micro_batches)
      for (const auto& samples : rank) {
        mb.clear();
        for (uint32_t s : samples) mb.push_back((*run.tokens)[s]);
        pricer.LayerCosts(mb, run.packing(), lc);
        std::vector<int64_t>& act = micro_batch_act.emplace_back(lc.size());
        for (size_t l = 0; l < lc.size(); ++l) act[l] = lc[l].act_bytes;
        for (size_t l = 0; l < lc.size(); ++l) {
          sum[l].fwd_time_us += lc[l].fwd_time_us;
          sum[l].bwd_time_us += lc[l].bwd_time_us;
          sum[l].act_bytes += lc[l].act_bytes;
          sum[l].act_bytes_recompute += lc[l].act_bytes_recompute;
          sum[l].bwd_work_bytes += lc[l].bwd_work_bytes;
          sum[l].boundary_bytes += lc[l].boundary_bytes;
          sum[l].param_bytes = lc[l].param_bytes;
          worst[l].fwd_time_us = std::max(worst[l].fwd_time_us, lc[l].fwd_time_us);
          worst[l].bwd_time_us = std::max(worst[l].bwd_time_us, lc[l].bwd_time_us);
          worst[l].act_bytes = std::max(worst[l].act_bytes, lc[l].act_bytes);
          worst[l].act_bytes_recompute = std::max(worst[l].act_bytes_recompute, lc[l].act_bytes_recompute);
          worst[l].bwd_work_bytes = std::max(worst[l].bwd_work_bytes, lc[l].bwd_work_bytes);
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
    x.bwd_work_bytes = static_cast<int64_t>(x.bwd_work_bytes / k);
    x.boundary_bytes = static_cast<int64_t>(x.boundary_bytes / k);
  }
  return {MakeLayerProfile(layers, sum), MakeLayerProfile(layers, worst), std::move(micro_batch_act)};
}

// The allocator's spread term (core/plan/memory.h FragmentationBytes: c x (max - min) of a rank's per-micro-batch
// footprint) is the memory walk's; a profile knows no micro-batches. The planner takes it from the sampled
// micro-batches instead: per rank, c x (max - min) over them of the activations one micro-batch leaves on the
// rank's layers without recompute (an upper bound of the walk's spread: recompute only narrows it), and keeps that
// free, so that a plan the recompute policy makes fit still fits in the walk. Null `profiles`: none (candidate
// ranking). With device.allocator_model replay the reserve is the replayed excess instead (ReplayReserveBytes).
std::vector<int64_t> ReplayReserveBytes(const PlannedRun& run, const Profiles& profiles, const Partition& p);

std::vector<int64_t> SpreadReserveBytes(const PlannedRun& run, const Profiles& profiles, const Partition& p) {
  if (run.cluster.device.allocator_model == "replay") return ReplayReserveBytes(run, profiles, p);
  const ParallelConfig& par = run.plan.parallel;
  std::vector<int64_t> out(par.pp, 0);
  const double c = run.cluster.device.fragmentation_spread;
  if (c <= 0 || profiles.micro_batch_act.empty()) return out;
  for (int r = 0; r < par.pp; ++r) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (const std::vector<int64_t>& act : profiles.micro_batch_act) {
      int64_t held = 0;
      for (int chunk = r; chunk < p.chunks(); chunk += par.pp)
        for (int l = p.bounds[chunk]; l < p.bounds[chunk + 1] && l < static_cast<int>(act.size()); ++l)
          held += act[l];
      lo = std::min(lo, held);
      hi = std::max(hi, held);
    }
    out[r] = static_cast<int64_t>(c * static_cast<double>(hi - lo));
  }
  return out;
}

// The replay's counterpart of the spread reserve, as the walk replays (core/plan/memory.h MemoryReplay): the
// sampled micro-batches come as iterations x DP replicas x the schedule's micro-batches (BuildProfiles' order);
// per rank, each group is one replica's iteration of the rank's schedule with the activations one micro-batch
// leaves on each chunk without recompute. Per iteration, as the walk: the group whose activations peak highest in
// the schedule's order replayed on an empty allocator, and the first replicas' groups on their allocators carried
// through the iterations; the reserve is the largest excess. (Replaying every replica's group fresh cost O(dp)
// replays per iteration: 61 s of a 16,384-GPU what-if's 64; reports/benchmarks.md.)
std::vector<int64_t> ReplayReserveBytes(const PlannedRun& run, const Profiles& profiles, const Partition& p) {
  const ParallelConfig& par = run.plan.parallel;
  std::vector<int64_t> out(par.pp, 0);
  const int m = par.micro_batches, chunks = p.chunks(), dp = std::max(1, par.dp);
  if (m <= 0 || chunks <= 0) return out;
  const int groups = static_cast<int>(profiles.micro_batch_act.size()) / m;
  for (int r = 0; r < par.pp && r < static_cast<int>(run.plan.schedule.per_rank.size()); ++r) {
    const std::vector<PipeOp>& ops = run.plan.schedule.per_rank[r];
    std::vector<CachingAllocatorModel> carried(std::min(dp, MemoryReplay::kReplayedReplicas));
    // Group g's activations per (micro-batch, chunk) of this rank, as one replica's iteration costs.
    const auto costs_of = [&](int g, IterationCosts& costs) {
      costs.Resize(1, m, chunks);
      for (int k = 0; k < m; ++k) {
        const std::vector<int64_t>& act = profiles.micro_batch_act[static_cast<size_t>(g) * m + k];
        for (int c = r; c < chunks; c += par.pp)
          for (int l = p.bounds[c]; l < p.bounds[c + 1] && l < static_cast<int>(act.size()); ++l)
            costs.At(0, k, c).act_bytes += act[l];
      }
    };
    IterationCosts costs;
    for (int first = 0; first < groups; first += dp) {
      const int last = std::min(groups, first + dp);
      int64_t best_peak = -1;
      int best = first;
      for (int g = first; g < last; ++g) {
        costs_of(g, costs);
        int64_t held = 0, peak = 0;
        for (const PipeOp& op : ops) {
          if (op.micro_batch < 0 || op.micro_batch >= m || op.chunk < 0 || op.chunk >= chunks) continue;
          const int64_t a = costs.At(0, op.micro_batch, op.chunk).act_bytes;
          if (op.kind == PassKind::kForward) {
            held += a;
            peak = std::max(peak, held);
          } else if (EndsBackward(op.kind)) {
            held -= a;
          }
        }
        if (peak > best_peak) {
          best_peak = peak;
          best = g;
        }
        if (g - first < static_cast<int>(carried.size()))
          out[r] = std::max(out[r], ReplayActivationExcessBytes(ops, costs, 0, p, {}, &carried[g - first]));
      }
      costs_of(best, costs);
      out[r] = std::max(out[r], ReplayActivationExcessBytes(ops, costs, 0, p, {}));
    }
  }
  return out;
}

Result<RecomputePlan> PlanRecompute(const PlannedRun& run, const LayerProfile& worst, const Partition& p,
                                    RecomputeReport* report, const Profiles* profiles = nullptr) {
  const ParallelConfig& par = run.plan.parallel;
  RecomputeContext rc;
  rc.profile = worst;
  rc.partition = p;
  rc.parallel = par;
  rc.in_flight = MaxInFlight(run.plan.schedule);
  rc.model_state_bytes = RankModelStateBytes(par, p, worst.params, FrozenLayerParams(worst.layers));
  rc.other_bytes = ProfileBoundaryBytes(worst, p, par);
  if (profiles) {
    const std::vector<int64_t> spread = SpreadReserveBytes(run, *profiles, p);
    rc.other_bytes.resize(std::max(rc.other_bytes.size(), spread.size()), 0);
    for (size_t r = 0; r < spread.size(); ++r) rc.other_bytes[r] += spread[r];
  }
  rc.capacity_bytes = PlanUsableMemoryBytes(run.cluster.device, par);
  auto plan = RunRecomputePolicy(run.scenario.recompute.name, run.scenario.recompute.params, rc, report);
  if (!plan) return AtPolicyKey(run.scenario, "recompute", plan.error()).error();
  return plan;
}

// What QuickTime carries from one candidate to the next: the op graph (the candidates of one partition policy share
// its shape: the same schedule and replicas; the DP ops move with the chunk statics, so it is built once and
// re-priced), the costs and the evaluator's scratch (reused, so a candidate allocates nothing at scale).
struct CandidateScratch {
  OpGraph graph;
  IterationCosts costs;
  std::vector<ChunkTimes> times;  // the packed path (RepriceDurations)
  std::vector<double> finish_us;
  // QuickBound: per timed iteration, the DP replicas whose compute ended last in the latest QuickTime (empty
  // until then), and scratch.
  std::vector<std::vector<int>> critical;
  std::vector<double> compute_end_us;
  std::vector<ChunkTimes> replica_times;
};

// How many replicas QuickBound times alone per iteration (the slowest of the last evaluation): one is usually
// the critical one; a second covers a candidate that moves the critical path to another replica.
constexpr int kBoundReplicas = 2;

// The kBoundReplicas replicas whose compute ends last in the graph's latest sweep (scratch.finish_us).
std::vector<int> SlowestReplicas(CandidateScratch& scratch) {
  ReplicaComputeEndUs(&scratch.graph, scratch.finish_us, &scratch.compute_end_us);
  const std::vector<double>& end = scratch.compute_end_us;
  std::vector<int> order(end.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t k = std::min<size_t>(kBoundReplicas, order.size());
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return end[a] > end[b] || (end[a] == end[b] && a < b); });
  order.resize(k);
  return order;
}

// Mean iteration time of a candidate plan over the first few replayed iterations (bmp's "timing").
Result<double> QuickTime(const PlannedRun& run, const Pricer& pricer,
                         const IterationTimingCache* timing_cache, const LayerProfile& worst,
                         const Partition& p, CandidateScratch& scratch, const std::atomic<bool>* cancel) {
  MMTWIN_RETURN_IF_ERROR(Cancelled(cancel));
  MMTWIN_ASSIGN_OR_RETURN(RecomputePlan rc, PlanRecompute(run, worst, p, nullptr));
  std::vector<ChunkStatic> statics = pricer.Static(p);
  statics.resize(
      p.chunks());  // the candidates are timed on the LLM pipeline alone (the encoders placed after)
  double total = 0;
  const size_t n = std::min<size_t>(run.plan.iterations.size(), 4);
  CommSpec comm = pricer.Comm();
  comm.dp_bucket_bytes = run.plan.dp_bucket_bytes;
  OpGraph& graph = scratch.graph;
  IterationCosts& costs = scratch.costs;
  scratch.critical.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    // The packed path: the timing fields alone re-price the graph in place (RepriceDurations), or it declines
    // and the full costs do.
    if (timing_cache && graph.num_ops() > 0 && !timing_cache->HasDispatch(i)) {
      timing_cache->PackedTimes(i, p, rc, &scratch.times);
      if (RepriceDurations(&graph, scratch.times, i == 0 ? &statics : nullptr)) {
        total += AnalyticIterationTimeUs(graph, &scratch.finish_us);
        scratch.critical[i] = SlowestReplicas(scratch);
        continue;
      }
    }
    if (timing_cache)
      timing_cache->Times(i, p, rc, &costs);
    else
      costs = pricer.PriceIteration(run.plan.iterations[i], *run.tokens, run.packing(), p, rc);
    if (graph.num_ops() == 0) {
      MMTWIN_ASSIGN_OR_RETURN(graph, BuildIterationGraph(run.plan.parallel, run.plan.schedule, costs, statics,
                                                         comm, run.comm_cost));
    } else {
      MMTWIN_RETURN_IF_ERROR(RepriceIterationGraph(&graph, run.plan.schedule, costs,
                                                   i == 0 ? &statics : nullptr, RepriceMode::kDurationsOnly));
    }
    total += AnalyticIterationTimeUs(graph, &scratch.finish_us);
    scratch.critical[i] = SlowestReplicas(scratch);
  }
  return total / std::max<size_t>(1, n);
}

// bmp's lower bound on QuickTime(p): per timed iteration, the largest alone time (ReplicaAloneTimeUs) of the
// replicas that ended last in the latest QuickTime, averaged as QuickTime averages. Each iteration's figure is
// <= its time there (the full graph waits at the barriers for every replica), and rounding is monotone, so the
// mean is <= QuickTime(p). 0 (no bound) before the first QuickTime, without the timing cache, or where a
// replica's bound does not apply (dispatch, SP, a graph that would be rebuilt).
Result<double> QuickBound(const PlannedRun& run, const Pricer& pricer,
                          const IterationTimingCache* timing_cache, const LayerProfile& worst,
                          const Partition& p, CandidateScratch& scratch, const std::atomic<bool>* cancel) {
  MMTWIN_RETURN_IF_ERROR(Cancelled(cancel));
  const size_t n = std::min<size_t>(run.plan.iterations.size(), 4);
  if (!timing_cache || scratch.graph.num_ops() == 0 || scratch.critical.size() != n) return 0.0;
  for (size_t i = 0; i < n; ++i)
    if (scratch.critical[i].empty() || timing_cache->HasDispatch(i)) return 0.0;
  MMTWIN_ASSIGN_OR_RETURN(RecomputePlan rc, PlanRecompute(run, worst, p, nullptr));
  std::vector<ChunkStatic> statics = pricer.Static(p);
  statics.resize(p.chunks());
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    double bound = 0;
    for (int r : scratch.critical[i]) {
      timing_cache->PackedReplicaTimes(i, r, p, rc, &scratch.replica_times);
      const std::optional<double> t =
          ReplicaAloneTimeUs(&scratch.graph, r, scratch.replica_times, statics, &scratch.finish_us);
      if (!t) return 0.0;
      bound = std::max(bound, *t);
    }
    total += bound;
  }
  return total / static_cast<double>(n);
}

// The layers before the LLM's first when the scenario moves the encoders out of the pipeline (policies.encoder),
// else 0.
int OutsideEncoderLayers(const PlannedRun& run, const Pricer& pricer) {
  return run.scenario.encoder.name == "pipeline" ? 0 : EncoderLayerCount(run.model, pricer.layers());
}

// `p` (over the profile from layer `first` on) as a partition of the whole layer list.
Partition Shifted(const Partition& p, int first) {
  Partition out = p;
  for (int& b : out.bounds) b += first;
  return out;
}

// The profile of layers [first, end).
LayerProfile SubProfile(const LayerProfile& p, int first) {
  if (first <= 0) return p;
  LayerProfile out;
  auto tail = [first](const auto& v) {
    return std::vector(v.begin() + std::min<size_t>(first, v.size()), v.end());
  };
  out.layers = tail(p.layers);
  out.fwd_us = tail(p.fwd_us);
  out.bwd_us = tail(p.bwd_us);
  out.params = tail(p.params);
  out.boundary_bytes = tail(p.boundary_bytes);
  out.act_bytes = tail(p.act_bytes);
  out.act_bytes_recompute = tail(p.act_bytes_recompute);
  out.bwd_work_bytes = tail(p.bwd_work_bytes);
  return out;
}

Status PlanModel(PlannedRun& run, const Pricer& pricer, const std::atomic<bool>* cancel) {
  const ParallelConfig& par = run.plan.parallel;
  const Profiles prof = BuildProfiles(run, pricer);
  // With the encoders outside the pipeline the partition policy cuts the LLM's layers [e, L) alone; its
  // candidates are shifted back to whole-model partitions (bounds[0] = e) for memory and timing.
  const int e = OutsideEncoderLayers(run, pricer);
  PartitionContext pc;
  pc.profile = SubProfile(prof.mean, e);
  pc.chunks = par.chunks();
  pc.pp = par.pp;
  const std::vector<int> in_flight = MaxInFlight(run.plan.schedule);
  const int64_t capacity = PlanUsableMemoryBytes(run.cluster.device, par);
  pc.fits_with_full_recompute = [&](const Partition& sub) {
    return FitsWithFullRecompute(prof.worst, Shifted(sub, e), par, in_flight, capacity);
  };
  CandidateScratch candidate;  // shared by the candidates (QuickTime)
  // The timed iterations' layer costs, priced once for all candidates (made on the first evaluation: policies
  // without an evaluator never pay for it).
  std::unique_ptr<IterationTimingCache> timing_cache;
  pc.evaluate = [&](const Partition& p) {
    if (!timing_cache && IterationTimingCache::Supported(pricer)) {
      const size_t n = std::min<size_t>(run.plan.iterations.size(), 4);
      const std::vector<IterationData> timed(run.plan.iterations.begin(), run.plan.iterations.begin() + n);
      timing_cache = std::make_unique<IterationTimingCache>(pricer, timed, *run.tokens, run.packing());
    }
    return QuickTime(run, pricer, timing_cache.get(), prof.worst, Shifted(p, e), candidate, cancel);
  };
  pc.lower_bound = [&](const Partition& p) {
    return QuickBound(run, pricer, timing_cache.get(), prof.worst, Shifted(p, e), candidate, cancel);
  };
  if (par.chunks() > static_cast<int>(pricer.layers().size()))
    return ScenarioError(run.scenario, par.vpp > 1 ? "parallel.vpp" : "parallel.pp",
                         "pp * vpp = " + std::to_string(par.chunks()) + " chunks exceed the model's " +
                             std::to_string(pricer.layers().size()) + " layers");
  auto partition = RunPartitionPolicy(run.scenario.partition.name, run.scenario.partition.params, pc,
                                      &run.partition_report);
  if (!partition) return AtPolicyKey(run.scenario, "partition", partition.error());
  run.plan.partition = Shifted(*partition, e);
  MMTWIN_RETURN_IF_ERROR(Cancelled(cancel));
  MMTWIN_ASSIGN_OR_RETURN(run.plan.recompute,
                          PlanRecompute(run, prof.worst, run.plan.partition, &run.recompute_report, &prof));
  // The encoders outside the pipeline are recomputed whole under every policy but none (core/plan/encoder.h).
  if (e > 0 && run.scenario.recompute.name != "none")
    for (int l = 0; l < e && l < static_cast<int>(run.plan.recompute.layers.size()); ++l) {
      const Layer& x = pricer.layers()[l];
      if (x.kind == LayerKind::kTransformer && x.backward != LayerBackward::kNone)
        run.plan.recompute.layers[l] = 1;
    }
  return Status();
}

// policies.encoder other than pipeline: the encoder passes placed into the LLM pipeline's bubbles
// (Schedule::encoder) by the policy, on the first replayed iteration timed without them (core/plan/encoder.h).
Status PlaceEncoders(PlannedRun& run, const Pricer& pricer, const std::atomic<bool>* cancel) {
  if (OutsideEncoderLayers(run, pricer) == 0) return Status();
  MMTWIN_RETURN_IF_ERROR(Cancelled(cancel));
  const Plan& plan = run.plan;
  const IterationCosts costs =
      pricer.PriceIteration(plan.iterations[0], *run.tokens, run.packing(), plan.partition, plan.recompute);
  std::vector<ChunkStatic> statics = pricer.Static(plan.partition);
  statics.resize(plan.partition.chunks());
  CommSpec comm = pricer.Comm();
  comm.dp_bucket_bytes = plan.dp_bucket_bytes;
  MMTWIN_ASSIGN_OR_RETURN(
      OpGraph g, BuildIterationGraph(plan.parallel, plan.schedule, costs, statics, comm, run.comm_cost));
  const IterationTiming timing = EvaluateAnalytic(g);
  bool backward = false;
  for (int l = 0; l < plan.partition.EncoderLayers(); ++l)
    backward = backward || pricer.layers()[l].backward != LayerBackward::kNone;
  const EncoderTimeline tl = EncoderTimelineOf(g, timing, plan.schedule, costs, *run.comm_cost, backward);
  MMTWIN_ASSIGN_OR_RETURN(const RegistryEntry<EncoderPlacementFn>* entry,
                          EncoderPlacements().Find(run.scenario.encoder.name));
  MMTWIN_ASSIGN_OR_RETURN(const Params params,
                          EncoderPlacements().Validate(*entry, run.scenario.encoder.params));
  auto passes = entry->run(plan.schedule, tl, params);
  if (!passes) return AtPolicyKey(run.scenario, "encoder", Status(passes.error()));
  run.plan.schedule.encoder = std::move(*passes);
  if (Status st = ValidateSchedule(run.plan.schedule); !st.ok())
    return AtPolicyKey(run.scenario, "encoder", st);
  return Status();
}

std::vector<int64_t> LayerParams(const std::vector<Layer>& layers) {
  std::vector<int64_t> p;
  for (const Layer& l : layers) p.push_back(l.params);
  return p;
}

Status MemoryReport(PlannedRun& run, const Pricer& pricer, const std::atomic<bool>* cancel) {
  const ParallelConfig& par = run.plan.parallel;
  const std::vector<int64_t> layer_params = LayerParams(pricer.layers());
  const std::vector<int64_t> frozen_params = FrozenLayerParams(pricer.layers());
  std::vector<double> fwd(par.pp, 0);
  int64_t mbs = 0;
  run.memory.clear();
  MemoryReplay replay;  // device.allocator_model replay: the allocators carry over between the iterations
  for (const IterationData& it : run.plan.iterations) {
    MMTWIN_RETURN_IF_ERROR(Cancelled(cancel));
    const IterationCosts costs =
        pricer.PriceIteration(it, *run.tokens, run.packing(), run.plan.partition, run.plan.recompute);
    run.memory =
        MergeMemory(run.memory, ComputeMemory(par, run.plan.partition, layer_params, run.plan.schedule, costs,
                                              run.cluster.device, frozen_params, &replay));
    for (int d = 0; d < costs.dp; ++d)
      for (int m = 0; m < costs.micro_batches; ++m) {
        for (int c = 0; c < costs.chunks; ++c) fwd[PipeRankOfChunk(c, par.pp)] += costs.At(d, m, c).fwd_us;
        ++mbs;
      }
  }
  run.stage_fwd_us_mean.assign(par.pp, 0.0);
  for (int r = 0; r < par.pp; ++r) run.stage_fwd_us_mean[r] = mbs ? fwd[r] / mbs : 0.0;
  return Status();
}

}  // namespace

CommSpec PlannedRun::Comm() const {
  CommSpec c = LayoutComm(cluster, plan.parallel);
  c.dp_bucket_bytes = plan.dp_bucket_bytes;
  return c;
}

MemoryEstimate EstimatePlanMemory(const Scenario& s) {
  constexpr double kProcessBytes = 64e6, kBytesPerSample = 200, kBytesPerTraceFileByte = 6.5,
                   kBytesPerDeviceMicroBatch = 12e3;
  double trace_bytes = 0;
  std::string trace_key, trace_detail;
  if (!s.trace.file.empty()) {
    std::error_code ec;
    const double size = static_cast<double>(std::filesystem::file_size(s.trace.file, ec));
    trace_bytes = ec ? 0 : size * kBytesPerTraceFileByte;
    trace_key = "trace.file";
    trace_detail = "a trace file of " + FormatBytes(ec ? 0 : size) + " (about 6.5 bytes of memory per byte)";
  } else {
    int64_t n = s.trace.samples;
    if (n <= 0)
      for (const auto& p : GeneratorPresets())
        if (p.name == s.trace.preset) n = p.default_samples;
    trace_bytes = static_cast<double>(n) * kBytesPerSample;
    trace_key = "trace.samples";
    trace_detail = GroupDigits(n) + " samples (about 200 bytes each)";
  }
  const ParallelConfig& p = s.parallel;
  const double device_mbs = static_cast<double>(p.dp) * p.pp * std::max(1, p.vpp) * p.micro_batches;
  const double graph_bytes = device_mbs * kBytesPerDeviceMicroBatch;
  MemoryEstimate e;
  e.bytes = static_cast<int64_t>(std::min(9e18, kProcessBytes + trace_bytes + graph_bytes));
  if (graph_bytes > trace_bytes) {
    e.key = "parallel.micro_batches";
    e.detail = GroupDigits(p.micro_batches) + " micro-batches on dp " + std::to_string(p.dp) + " x pp " +
               std::to_string(p.pp) + (p.vpp > 1 ? " x vpp " + std::to_string(p.vpp) : "") +
               " (about 12 kB per device and micro-batch for one iteration's ops)";
  } else {
    e.key = trace_key;
    e.detail = trace_detail;
  }
  return e;
}

Status CheckPlanMemory(const Scenario& s) {
  const MemoryEstimate e = EstimatePlanMemory(s);
  const int64_t limit = ProcessMemoryLimitBytes();
  if (e.bytes <= limit) return Status();
  return ScenarioError(s, e.key,
                       e.detail + " need about " + FormatBytes(static_cast<double>(e.bytes)) +
                           ", more than the " + FormatBytes(static_cast<double>(limit)) +
                           " this process may use (physical memory, ulimit or cgroup); reduce " + e.key +
                           " or run on a larger machine");
}

namespace {

// BuildPlan's step 2: the trace (file or generator) and its identity.
Status LoadScenarioTrace(const Scenario& s, const std::atomic<bool>* cancel, Trace& trace,
                         TraceIdentity& id) {
  if (!s.trace.file.empty()) {
    MMTWIN_ASSIGN_OR_RETURN(trace, ReadTrace(s.trace.file));
    id.file = s.trace.file;
  } else if (s.trace.sequence_tokens > 0) {
    // trace.sequence_tokens: `samples` text-only sequences of that length.
    const uint16_t subset = trace.SubsetIndex("sequence");
    trace.samples.resize(static_cast<size_t>(std::max<int64_t>(1, s.trace.samples)));
    trace.ids.PushNumbered("seq", 1, 0, trace.samples.size());
    for (size_t k = 0; k < trace.samples.size(); ++k) {
      Sample& x = trace.samples[k];
      x.subset = subset;
      x.text_tokens = static_cast<uint32_t>(s.trace.sequence_tokens);
    }
    id.preset = "sequence_tokens:" + std::to_string(s.trace.sequence_tokens);
  } else {
    int64_t n = s.trace.samples;
    if (n <= 0)
      for (const auto& p : GeneratorPresets())
        if (p.name == s.trace.preset) n = p.default_samples;
    MMTWIN_ASSIGN_OR_RETURN(trace, GenerateTrace(s.trace.preset, n, s.trace.seed));
    id.preset = s.trace.preset;
    id.seed = s.trace.seed;
  }
  if (trace.samples.empty()) return ScenarioError(s, "trace", "the trace has no samples");
  id.samples = static_cast<int64_t>(trace.size());
  id.digest = TraceDigest(trace);
  return Cancelled(cancel);
}

// BuildPlan's step 3: the data policy's epoch plan and its metrics. The per-sample sizes live only for the data
// policy and its metrics. `tokens`: the samples' tokens when already made (shared), else null.
Status PlanData(const Scenario& s, const ModelSpec& model, const ClusterSpec& cluster,
                const std::atomic<bool>* cancel, const Trace& trace, DataPlan& data, DataMetrics& metrics,
                const std::vector<SampleTokens>* tokens = nullptr) {
  const ParallelConfig& par = s.parallel;
  // Data policy: the epoch's mini-batch steps.
  // The per-sample sizes live only for the data policy and its metrics, and (when not shared already) the
  // per-sample tokens are computed after them: the two tables are then never held at once (40 bytes per sample
  // less at the peak).
  {
    const SampleSizes sizes = tokens ? ComputeSizes(*tokens, trace) : ComputeSizes(model, trace);
    const int ranks_per_node = std::max(1, cluster.gpus_per_node / par.tp);
    DataPolicyContext ctx{&trace, &model, &sizes, par.dp, ranks_per_node, s.seed, par.pp, par.micro_batches};
    auto data_plan = RunDataPolicy(s.data.name, s.data.params, ctx);
    if (!data_plan) return AtPolicyKey(s, "data", data_plan.error()).error();
    data = std::move(*data_plan);
    metrics = ComputeDataMetrics(data, sizes);
  }
  return Cancelled(cancel);
}

Status TraceAndData(const Scenario& s, const ModelSpec& model, const ClusterSpec& cluster,
                    const std::atomic<bool>* cancel, Trace& trace, TraceIdentity& id, DataPlan& data,
                    DataMetrics& metrics) {
  MMTWIN_RETURN_IF_ERROR(LoadScenarioTrace(s, cancel, trace, id));
  return PlanData(s, model, cluster, cancel, trace, data, metrics);
}

}  // namespace

TokenCounts TokenCounts::Of(const std::vector<SampleTokens>& tokens) {
  TokenCounts c;
  for (const SampleTokens& t : tokens) {
    c.if_larger_images += t.if_larger_images;
    c.unsized_images += t.unsized_images;
    c.truncated_samples += t.truncated ? 1 : 0;
  }
  return c;
}

namespace {

std::shared_ptr<const std::vector<SampleTokens>> TokensOf(const ModelSpec& model, const Trace& trace) {
  auto tokens = std::make_shared<std::vector<SampleTokens>>();
  tokens->reserve(trace.size());
  for (const Sample& x : trace.samples) tokens->push_back(TokensFor(model, x));
  return tokens;
}

}  // namespace

IterationData EpochIteration(const DataPlan& data, int dp, int m, int64_t k) {
  IterationData it;
  it.epoch_index = k;
  it.micro_batches.assign(dp, std::vector<std::vector<uint32_t>>(m));
  it.dispatch.assign(m, {});
  bool backward = false, overhead = false;
  for (int j = 0; j < m; ++j) {
    const DataStep& step = data.steps[static_cast<size_t>(k * m + j)];
    for (int r = 0; r < dp; ++r) it.micro_batches[r][j] = step.ranks[r].samples;
    it.dispatch[j] = step.dispatch;
    backward = backward || !step.dispatch_backward.empty();
    overhead = overhead || !step.dispatch_overhead.empty();
  }
  if (overhead) {
    it.dispatch_overhead.assign(m, {});
    for (int j = 0; j < m; ++j)
      it.dispatch_overhead[j] = data.steps[static_cast<size_t>(k * m + j)].dispatch_overhead;
  }
  if (backward) {
    it.dispatch_backward.assign(m, {});
    for (int j = 0; j < m; ++j)
      it.dispatch_backward[j] = data.steps[static_cast<size_t>(k * m + j)].dispatch_backward;
  }
  return it;
}

std::vector<int64_t> ReplayedIterations(const Scenario& s, int64_t iterations_in_epoch) {
  std::vector<int64_t> replay;
  if (s.epoch || s.iterations >= iterations_in_epoch) {
    replay.resize(std::max<int64_t>(0, iterations_in_epoch));
    std::iota(replay.begin(), replay.end(), 0);
  } else {
    // A seeded sample of distinct iterations (partial Fisher-Yates), ascending.
    std::vector<int64_t> all(iterations_in_epoch);
    std::iota(all.begin(), all.end(), 0);
    Rng rng = Rng(s.seed).Fork(101);
    for (int64_t i = 0; i < s.iterations; ++i) std::swap(all[i], all[i + rng.Below(all.size() - i)]);
    replay.assign(all.begin(), all.begin() + s.iterations);
    std::sort(replay.begin(), replay.end());
  }
  return replay;
}

Result<PlannedRun> BuildPlan(const Scenario& s, const PlanOptions& options) {
  const std::atomic<bool>* cancel = options.cancel;
  PlannedRun run;
  run.scenario = s;
  const ParallelConfig& par = s.parallel;
  MMTWIN_RETURN_IF_ERROR(CheckScenario(s));  // the one checker: every error names its scenario key
  MMTWIN_ASSIGN_OR_RETURN(run.model, LoadScenarioModel(s));
  MMTWIN_ASSIGN_OR_RETURN(ClusterSpec probe, LoadScenarioCluster(s));
  run.scenario.nodes = ScenarioNodes(s, probe.gpus_per_node);
  MMTWIN_ASSIGN_OR_RETURN(run.cluster, LoadScenarioCluster(s, run.scenario.nodes));
  MMTWIN_RETURN_IF_ERROR(CheckPlanMemory(s));
  MMTWIN_RETURN_IF_ERROR(Cancelled(cancel));

  // The trace and the data policy's epoch plan (steps 2-3), or what PrepareData made of them.
  // `data` is the run's own epoch plan, or the prepared one read in place (`epoch` points at either).
  DataPlan data;
  const DataPlan* epoch = &data;
  const PreparedData* prep = options.prepared.get();
  if (prep && prep->key == PreparedDataKey(s)) {
    run.trace = prep->trace;
    run.tokens = prep->tokens;
    run.token_counts = prep->token_counts;
    run.plan.trace = prep->identity;
    epoch = &prep->data;
    run.data_metrics = prep->data_metrics;
  } else if (prep && prep->trace_key == PreparedTraceKey(s)) {  // the same trace, another data plan
    run.trace = prep->trace;
    run.plan.trace = prep->identity;
    const bool same_model = prep->model == run.model.name;
    MMTWIN_RETURN_IF_ERROR(PlanData(s, run.model, run.cluster, cancel, *run.trace, data, run.data_metrics,
                                    same_model ? prep->tokens.get() : nullptr));
    run.tokens = same_model ? prep->tokens : TokensOf(run.model, *run.trace);
    run.token_counts = same_model ? prep->token_counts : TokenCounts::Of(*run.tokens);
  } else {
    auto trace = std::make_shared<Trace>();
    MMTWIN_RETURN_IF_ERROR(
        TraceAndData(s, run.model, run.cluster, cancel, *trace, run.plan.trace, data, run.data_metrics));
    run.trace = std::move(trace);
    run.tokens = TokensOf(run.model, *run.trace);
    run.token_counts = TokenCounts::Of(*run.tokens);
  }
  MMTWIN_RETURN_IF_ERROR(Cancelled(cancel));

  // The replayed iterations.
  Plan& plan = run.plan;
  plan.scenario = s.name;
  plan.model = run.model.name;
  plan.cluster = run.cluster.name;
  plan.nodes = run.cluster.nodes;
  plan.seed = s.seed;
  plan.parallel = par;
  if (par.sp > 1) {
    // The resolved SP policy and its sub-group degrees (the parser checked the layout; ResolveSpLayout).
    const Component* llm = run.model.Find(ComponentKind::kLlm);
    auto layout = ResolveSpLayout(s.sp.name, s.sp.params, par, run.cluster.gpus_per_node,
                                  llm ? llm->tf : TransformerConfig{});
    if (!layout) {
      const std::string msg = layout.error().message();
      const size_t colon = msg.find(": ");
      return ScenarioError(s, colon == std::string::npos ? "parallel.sp" : msg.substr(0, colon),
                           colon == std::string::npos ? msg : msg.substr(colon + 2));
    }
    plan.parallel.sp_method = s.sp.name;
    plan.parallel.sp_ulysses = layout->ulysses;
    plan.parallel.sp_ring = layout->ring;
    plan.parallel.sp_one_stage = layout->one_stage;
    plan.parallel.sp_params = s.sp.params;
  }
  plan.packed = epoch->packed;
  plan.iterations_in_epoch = static_cast<int64_t>(epoch->steps.size()) / par.micro_batches;
  if (plan.iterations_in_epoch < 1)
    return ScenarioError(
        s, "parallel.micro_batches",
        "the trace yields " + std::to_string(epoch->steps.size()) + " mini-batch steps for dp " +
            std::to_string(par.dp) + ", fewer than the " + std::to_string(par.micro_batches) +
            " micro-batches of one iteration (a larger trace.samples or fewer micro-batches)");
  const std::vector<int64_t> replay = ReplayedIterations(s, plan.iterations_in_epoch);
  plan.iterations.reserve(replay.size());
  for (int64_t k : replay) plan.iterations.push_back(EpochIteration(*epoch, par.dp, par.micro_batches, k));
  data = DataPlan();  // the epoch's other steps are not needed any more
  run.trace_samples = static_cast<int64_t>(run.trace->size());
  if (!options.keep_trace) run.trace.reset();

  // Cost model, schedule, partition, recompute.
  if (options.cost) {
    run.cost = options.cost;
  } else {
    auto cost = LoadScenarioCostModel(run.scenario, run.model, run.cluster);
    if (!cost) return ScenarioError(s, "cost", cost.error().message());
    run.cost = std::move(*cost);
  }
  MMTWIN_ASSIGN_OR_RETURN(
      plan.schedule, BuildSchedule(s.schedule.name, par.pp, par.vpp, par.micro_batches, s.schedule.params));
  run.comm_cost = options.comm_cost ? options.comm_cost : std::make_shared<AnalyticCommCost>(run.Comm());
  const Pricer pricer = run.MakePricer();
  MMTWIN_RETURN_IF_ERROR(PlanModel(run, pricer, cancel));
  MMTWIN_RETURN_IF_ERROR(PlaceEncoders(run, pricer, cancel));
  if (options.memory_report) MMTWIN_RETURN_IF_ERROR(MemoryReport(run, pricer, cancel));
  return run;
}

std::string PreparedDataKey(const Scenario& s) {
  Scenario k = s;
  k.name = k.description = k.path = "";
  k.nodes = 0;
  // A policy that shapes micro-batches for the pipeline (dynapipe, wlb-llm) keeps pp and micro_batches in the key.
  const bool pipeline = DataPolicyUsesPipeline(s.data.name);
  if (!pipeline) k.parallel.pp = 1;
  k.parallel.vpp = 1;
  k.parallel.zero_stage = 0;
  k.parallel.tp_sequence_parallel = true;
  k.partition = PolicyRef{"uniform", {}};
  k.recompute = PolicyRef{"none", {}};
  k.schedule = PolicyRef{"1f1b", {}};
  k.encoder = PolicyRef{"pipeline", {}};
  k.engine = k.cost = "analytic";
  k.iterations = 8;  // the replayed iterations are drawn from the epoch plan after it
  k.epoch = false;
  if (!pipeline)
    k.parallel.micro_batches = 1;  // the data policy makes mini-batch steps; iterations group them
  k.lines.clear();
  return FormatScenario(k);
}

std::string PreparedTraceKey(const Scenario& s) {
  const TraceSource& t = s.trace;
  return "file=" + t.file + "\npreset=" + t.preset + "\nsamples=" + std::to_string(t.samples) +
         "\nseed=" + std::to_string(t.seed) + "\nsequence_tokens=" + std::to_string(t.sequence_tokens);
}

Result<std::shared_ptr<const PreparedData>> PrepareData(const Scenario& s, const std::atomic<bool>* cancel,
                                                        const PreparedData* reuse) {
  auto out = std::make_shared<PreparedData>();
  out->key = PreparedDataKey(s);
  MMTWIN_ASSIGN_OR_RETURN(const ModelSpec model, LoadScenarioModel(s));
  MMTWIN_ASSIGN_OR_RETURN(const ClusterSpec cluster, LoadScenarioCluster(s));
  out->trace_key = PreparedTraceKey(s);
  out->model = model.name;
  if (reuse && reuse->trace_key == out->trace_key) {  // the trace (and tokens) of another preparation
    out->trace = reuse->trace;
    out->identity = reuse->identity;
    if (reuse->model == model.name) {
      out->tokens = reuse->tokens;
      out->token_counts = reuse->token_counts;
    }
    MMTWIN_RETURN_IF_ERROR(
        PlanData(s, model, cluster, cancel, *out->trace, out->data, out->data_metrics, out->tokens.get()));
    if (!out->tokens) {
      out->tokens = TokensOf(model, *out->trace);
      out->token_counts = TokenCounts::Of(*out->tokens);
    }
    return std::shared_ptr<const PreparedData>(std::move(out));
  }
  auto trace = std::make_shared<Trace>();
  MMTWIN_RETURN_IF_ERROR(
      TraceAndData(s, model, cluster, cancel, *trace, out->identity, out->data, out->data_metrics));
  out->tokens = TokensOf(model, *trace);
  out->token_counts = TokenCounts::Of(*out->tokens);
  out->trace = std::move(trace);
  return std::shared_ptr<const PreparedData>(std::move(out));
}

namespace {

nlohmann::json PolicyJson(const PolicyRef& r) { return {{"name", r.name}, {"params", r.params}}; }

}  // namespace

std::vector<PlanStage> PlanStages(const PlannedRun& run) {
  const ParallelConfig& par = run.plan.parallel;
  const Pricer pricer = run.MakePricer();
  const std::vector<Layer>& layers = pricer.layers();
  const std::vector<int64_t> rank_params = RankParams(par, run.plan.partition, LayerParams(layers));
  const std::vector<StageShape> shapes = StageShapes(par, run.plan.partition, run.plan.recompute);
  std::vector<PlanStage> out;
  for (int r = 0; r < par.pp && r < static_cast<int>(run.memory.size()); ++r) {
    PlanStage st;
    st.stage = r;
    st.first_layer = shapes[r].first_layer;
    st.last_layer = shapes[r].last_layer;
    st.first_layer_label = layers[shapes[r].first_layer].label;
    st.last_layer_label = layers[shapes[r].last_layer].label;
    st.layers = shapes[r].layers;
    st.params = rank_params[r];
    st.recomputed_layers = shapes[r].recomputed;
    st.fwd_us_mean = run.stage_fwd_us_mean[r];
    st.memory = run.memory[r];
    out.push_back(std::move(st));
  }
  return out;
}

std::string PlanReportJson(const PlannedRun& run) {
  const ParallelConfig& par = run.plan.parallel;
  nlohmann::json stages = nlohmann::json::array(), oom_stages = nlohmann::json::array();
  bool oom = false;
  for (const PlanStage& st : PlanStages(run)) {
    const StageMemory& m = st.memory;
    StageRecord record = PlannedStageRecord(st);
    record.fwd_us_mean = st.fwd_us_mean;
    // The keys of summary.json's stages (core/records/records_json.h), and the boundary buffers.
    nlohmann::json stage = PlannedStageJson(record);
    stage["boundary_bytes"] = m.boundary_bytes;
    stage["memory"] = StageMemoryJson(m);
    stages.push_back(std::move(stage));
    if (!m.fits) {
      oom = true;
      oom_stages.push_back({{"stage", m.stage},
                            {"short_bytes", m.short_bytes},
                            {"peak_memory_bytes", m.peak_bytes},
                            {"memory_capacity_bytes", m.capacity_bytes}});
    }
  }
  nlohmann::json j;
  j["scenario"] = run.scenario.name;
  j["model"] = run.model.name;
  j["cluster"] = {{"preset", run.cluster.name}, {"nodes", run.cluster.nodes}};
  j["parallel"] = ParallelJson(par);
  j["policies"] = {{"data", PolicyJson(run.scenario.data)},
                   {"partition", PolicyJson(run.scenario.partition)},
                   {"recompute", PolicyJson(run.scenario.recompute)},
                   {"schedule", PolicyJson(run.scenario.schedule)}};
  j["layers"] = static_cast<int>(Layers(run.model).size());
  j["partition_bounds"] = run.plan.partition.bounds;
  j["stages"] = stages;
  j["oom_stages"] = oom_stages;
  j["oom"] = oom;
  return j.dump(2);
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// What-if on a recorded run (whatif.h).
#include "whatif/whatif.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "core/eval/analytic.h"
#include "core/eval/overlap.h"
#include "core/graph/op_graph.h"
#include "core/plan/mesh.h"
#include "core/records/run_folder.h"
#include "driver/planner.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

bool IsCompute(OpKind k) {
  return k == OpKind::kForward || k == OpKind::kBackward || k == OpKind::kRecompute ||
         k == OpKind::kBackwardWeight || k == OpKind::kEncoderForward || k == OpKind::kEncoderBackward;
}

// The group an op or a record belongs to (whatif.h): kind, device, micro-batch, chunk, and the pass where one
// chunk has an op of the kind per pass.
using GroupKey = std::tuple<int, int32_t, int32_t, int32_t, int>;
GroupKey KeyOf(OpKind kind, int32_t device, int32_t micro_batch, int32_t chunk, PassKind pass) {
  const bool by_pass =
      kind == OpKind::kTpCollective || kind == OpKind::kSpCollective || kind == OpKind::kDpAllGather;
  return {static_cast<int>(kind), device, micro_batch, chunk, by_pass ? static_cast<int>(pass) : 0};
}

// The ops.csv line of record k (a comment line and the header come first).
std::string RecordAt(const std::string& ops_path, size_t k) { return ops_path + ":" + std::to_string(k + 3); }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The step of `graph` with `durations` (one per op): the analytic time plus the optimizer step.
double StepUs(OpGraph& graph, const std::vector<double>& durations, const std::vector<double>& optimizer_us,
              int pp, IterationTiming& timing) {
  graph.duration_us = durations;
  for (int i = 0; i < graph.num_ops(); ++i) graph.ops[i].duration_us = durations[i];
  EvaluateAnalytic(graph, &timing);
  AddOptimizerStep(optimizer_us, pp, timing);
  return timing.iteration_time_us;
}

// The durations Simulate evaluates (driver/simulate.cc): compute stretched by the DP and dispatch collectives it
// overlaps (core/eval/overlap.h). A simulated run's records are these; a measured run's include whatever the
// overlap cost it.
void Stretch(OpGraph& g, double overlap_slowdown) {
  if (overlap_slowdown <= 0) return;
  IterationTiming scratch;
  ApplyOverlapSlowdown(g, overlap_slowdown, &scratch);
}

// A compute pass: the compute ops of one (device, micro-batch, chunk, kind), one op or the pieces a pass is
// split into (gradient-bucket readiness, FSDP units); the what-ifs change whole passes and scale their pieces.
struct Pass {
  std::vector<int> ops;
  int stage = 0, replica = 0;
  int32_t device = 0, micro_batch = 0, chunk = 0;
  int kind = 0;
};

std::vector<Pass> ComputePasses(const OpGraph& g, const DeviceMesh& mesh) {
  std::map<std::tuple<int32_t, int32_t, int32_t, int>, size_t> at;
  std::vector<Pass> out;
  for (int i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.ops[i];
    if (!IsCompute(op.kind) || op.device < 0) continue;
    const auto key = std::make_tuple(op.device, op.micro_batch, op.chunk, static_cast<int>(op.kind));
    auto it = at.find(key);
    if (it == at.end()) {
      it = at.emplace(key, out.size()).first;
      Pass p;
      p.stage = mesh.PpOfDevice(op.device);
      p.replica = mesh.DpOfDevice(op.device);
      p.device = op.device;
      p.micro_batch = op.micro_batch;
      p.chunk = op.chunk;
      p.kind = static_cast<int>(op.kind);
      out.push_back(p);
    }
    out[it->second].ops.push_back(i);
  }
  return out;
}

double Total(const Pass& p, const std::vector<double>& d) {
  double t = 0;
  for (int i : p.ops) t += d[i];
  return t;
}

// A job's speed over some compute passes for --predict (whatif.h, ReplayOptions::predict): recorded / modelled
// summed over the passes, leaving out the far-out ones: a pass whose ratio is above Q3 + 3 IQR of the passes'
// ratios (Tukey's "far out" fence; quartiles by linear interpolation; the spread at least 1e-6 of Q3), when
// there are at least kFenceMinPasses.
// Passes of modelled time 0 carry no speed.
constexpr size_t kFenceMinPasses = 4;
constexpr double kFarOut = 3.0;

struct PassTimes {
  double recorded = 0, modelled = 0;
};

double Quantile(const std::vector<double>& sorted, double q) {
  const double x = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(x);
  const double f = x - static_cast<double>(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

double FarOutFence(const std::vector<PassTimes>& passes) {
  std::vector<double> ratios;
  for (const PassTimes& p : passes)
    if (p.modelled > 0) ratios.push_back(p.recorded / p.modelled);
  if (ratios.size() < kFenceMinPasses) return INFINITY;
  std::sort(ratios.begin(), ratios.end());
  const double q1 = Quantile(ratios, 0.25), q3 = Quantile(ratios, 0.75);
  // A spread of at least 1e-6 of Q3: equal ratios (a simulated run's, up to rounding) flag no rounding error.
  return q3 + kFarOut * std::max(q3 - q1, 1e-6 * q3);
}

struct Speed {
  double fence = INFINITY;  // FarOutFence: a pass of a larger ratio is a stall
  double ratio = 1.0;   // recorded / modelled over the passes kept (1 without any)
  int64_t kept = 0;     // passes of modelled time > 0 kept
  int64_t stalls = 0;   // passes left out
  double stall_us = 0;  // their recorded time above `ratio` x modelled
};

Speed SpeedOf(const std::vector<PassTimes>& passes) {
  const double fence = FarOutFence(passes);
  double recorded = 0, modelled = 0;
  Speed s;
  s.fence = fence;
  for (const PassTimes& p : passes)
    if (p.modelled > 0 && p.recorded / p.modelled <= fence) {
      recorded += p.recorded;
      modelled += p.modelled;
      ++s.kept;
    }
  if (modelled > 0) s.ratio = recorded / modelled;
  for (const PassTimes& p : passes)
    if (p.modelled > 0 && p.recorded / p.modelled > fence) {
      ++s.stalls;
      s.stall_us += p.recorded - s.ratio * p.modelled;
    }
  return s;
}

// `d` with every pass scaled to its new total (a pass of total 0 stays 0).
std::vector<double> Scaled(const std::vector<Pass>& passes, const std::vector<double>& totals,
                           std::vector<double> d) {
  for (size_t k = 0; k < passes.size(); ++k) {
    const double old = Total(passes[k], d);
    if (old > 0)
      for (int i : passes[k].ops) d[i] *= totals[k] / old;
  }
  return d;
}

// What-ifs (whatif.h), each returning new durations from `d`.
std::vector<double> DataWhatIf(const std::vector<Pass>& passes, const std::vector<double>& d) {
  std::map<std::tuple<int, int32_t, int>, std::pair<double, int>> mean;  // (stage, chunk, kind)
  for (const Pass& p : passes) {
    auto& m = mean[{p.stage, p.chunk, p.kind}];
    m.first += Total(p, d);
    ++m.second;
  }
  std::vector<double> totals;
  for (const Pass& p : passes) {
    const auto& m = mean[{p.stage, p.chunk, p.kind}];
    totals.push_back(m.first / m.second);
  }
  return Scaled(passes, totals, d);
}

std::vector<double> PartitionWhatIf(const std::vector<Pass>& passes, int pp, const std::vector<double>& d) {
  std::map<std::tuple<int, int32_t, int>, std::vector<double>>
      sums;  // (replica, micro-batch, kind) -> stages
  for (const Pass& p : passes) {
    auto& s = sums[{p.replica, p.micro_batch, p.kind}];
    s.resize(pp, 0.0);
    s[p.stage] += Total(p, d);
  }
  std::vector<double> totals;
  for (const Pass& p : passes) {
    const std::vector<double>& s = sums[{p.replica, p.micro_batch, p.kind}];
    const double target = std::accumulate(s.begin(), s.end(), 0.0) / pp;
    const double own = Total(p, d);
    totals.push_back(s[p.stage] > 0 ? own * target / s[p.stage] : own);
  }
  return Scaled(passes, totals, d);
}

std::vector<double> StragglersWhatIf(const std::vector<Pass>& passes, const std::vector<double>& d,
                                     std::vector<double>* device_slowdown = nullptr) {
  // The typical total of each (stage, chunk, kind, micro-batch) over the DP replicas.
  std::map<std::tuple<int, int32_t, int, int32_t>, std::vector<double>> by_pass;
  for (const Pass& p : passes) by_pass[{p.stage, p.chunk, p.kind, p.micro_batch}].push_back(Total(p, d));
  std::map<std::tuple<int, int32_t, int, int32_t>, double> typical;
  for (auto& [k, v] : by_pass) typical[k] = Median(v);
  std::map<int32_t, std::vector<double>> ratios;  // device -> total / typical
  for (const Pass& p : passes) {
    const double t = typical[{p.stage, p.chunk, p.kind, p.micro_batch}], own = Total(p, d);
    if (t > 0 && own > 0) ratios[p.device].push_back(own / t);
  }
  std::map<int32_t, double> slowdown;
  for (auto& [dev, v] : ratios) slowdown[dev] = Median(v);
  if (device_slowdown)
    for (const auto& [dev, s] : slowdown)
      if (dev >= 0 && dev < static_cast<int32_t>(device_slowdown->size())) (*device_slowdown)[dev] = s;
  std::vector<double> totals;
  for (const Pass& p : passes) {
    auto it = slowdown.find(p.device);
    const double own = Total(p, d);
    totals.push_back(it != slowdown.end() && it->second > 0 ? own / it->second : own);
  }
  return Scaled(passes, totals, d);
}

using SpeedKey = std::tuple<int, int32_t, int>;  // (stage, chunk, kind)

std::vector<double> StallsWhatIf(const std::vector<Pass>& passes, const std::vector<double>& d,
                                 const std::vector<double>& modelled,
                                 const std::map<SpeedKey, Speed>& speed) {
  std::vector<double> totals;
  for (const Pass& p : passes) {
    const double own = Total(p, d), model = Total(p, modelled);
    auto it = speed.find({p.stage, p.chunk, p.kind});
    const bool stalled = it != speed.end() && model > 0 && own / model > it->second.fence;
    totals.push_back(stalled ? it->second.ratio * model : own);
  }
  return Scaled(passes, totals, d);
}

// One iteration's op graph with its modelled (Stretch-ed) and replayed durations, the optimizer step per stage
// after it, and the iteration's record counts and recorded step.
struct Replayed {
  PlanIterationGraph pg;
  std::vector<double> modelled, d, optimizer;
  bool optimizer_recorded = false;
  ReplayIteration out;
};

}  // namespace

Result<ReplayReport> ReplayRunFolder(const std::string& dir, const ReplayOptions& options) {
  MMTWIN_ASSIGN_OR_RETURN(RunFolder folder,
                          ReadRunFolder(dir, {RunFile::kScenario, RunFile::kOps}, {RunFile::kPlan}));
  const std::string ops_path = RunFilePath(dir, RunFile::kOps);
  const std::vector<OpRecord>& records = *folder.ops;
  if (records.empty()) return Error(ops_path + ": no ops to replay");
  MMTWIN_ASSIGN_OR_RETURN(Scenario scenario, ScenarioOf(folder));
  PlanOptions plan_options;  // the replay needs the plan's iterations and tokens only
  plan_options.memory_report = false;
  plan_options.keep_trace = false;
  MMTWIN_ASSIGN_OR_RETURN(PlannedRun run, BuildPlan(scenario, plan_options));
  if (folder.plan && !SameRunPlan(*folder.plan, run.plan))
    return Error(
        RunFilePath(dir, RunFile::kPlan) +
        ": the run was recorded under another plan than its scenario.yaml gives today (the partition, "
        "recompute, schedule or replayed iterations differ): replay needs the plan it ran");
  const ParallelConfig& par = run.plan.parallel;
  const DeviceMesh mesh(par, run.cluster.gpus_per_node, std::max(1, par.sp));
  const int devices = mesh.num_devices();

  ReplayReport report;
  report.run_dir = dir;
  report.parallel = par;
  report.devices = devices;
  report.source = records.front().source;
  const bool measured = report.source == RecordSource::kMeasured;

  // The iterations of the records, in order of first appearance, each with its records.
  std::vector<int64_t> order;
  std::map<int64_t, std::vector<size_t>> by_iteration;
  for (size_t k = 0; k < records.size(); ++k) {
    const OpRecord& r = records[k];
    if (r.device >= devices)
      return Error(RecordAt(ops_path, k) + ": device: " + std::to_string(r.device) +
                   " is outside the layout's " + std::to_string(devices) +
                   " devices (scenario.yaml's parallel)");
    if (r.micro_batch >= par.micro_batches)
      return Error(RecordAt(ops_path, k) + ": micro_batch: " + std::to_string(r.micro_batch) +
                   " is outside the layout's " + std::to_string(par.micro_batches) + " micro-batches");
    if (r.chunk >= par.chunks())
      return Error(RecordAt(ops_path, k) + ": chunk: " + std::to_string(r.chunk) + " is outside the plan's " +
                   std::to_string(par.chunks()) + " chunks");
    if (!by_iteration.count(r.iteration)) order.push_back(r.iteration);
    by_iteration[r.iteration].push_back(k);
  }
  std::map<int64_t, size_t> plan_index;
  std::string replayed_list;
  for (size_t i = 0; i < run.plan.iterations.size(); ++i) {
    plan_index[run.plan.iterations[i].epoch_index] = i;
    replayed_list += (i ? ", " : "") + std::to_string(run.plan.iterations[i].epoch_index);
  }

  // ReplayOptions::predict: recorded and modelled compute per (stage, chunk, kind), and per kind; the recorded
  // optimizer step per stage (mean over the iterations).
  std::map<SpeedKey, std::vector<PassTimes>> pass_times;
  std::vector<double> recorded_optimizer(par.pp, 0.0);
  bool optimizer_recorded = false;

  // One iteration's graph (the durations Simulate evaluates) with the recorded durations matched onto it
  // (whatif.h): what every what-if starts from. Called once per iteration, and again for the stalls what-if.
  const auto replay_durations = [&](int64_t iteration) -> Result<Replayed> {
    const std::vector<size_t>& recs = by_iteration[iteration];
    auto at = plan_index.find(iteration);
    if (at == plan_index.end())
      return Error(RecordAt(ops_path, recs.front()) + ": iteration: " + std::to_string(iteration) +
                   " is not one of the plan's replayed iterations (" + replayed_list + ")");
    Replayed rp;
    MMTWIN_ASSIGN_OR_RETURN(rp.pg, BuildPlanIterationGraph(run, at->second));
    OpGraph& g = rp.pg.graph;
    Stretch(g, run.cluster.device.overlap_slowdown);
    rp.modelled = g.duration_us;
    const std::vector<double>& modelled = rp.modelled;
    rp.d = modelled;
    std::vector<double>& d = rp.d;
    ReplayIteration& out = rp.out;
    out.iteration = iteration;
    const PlanIterationGraph& pg = rp.pg;

    // Group the graph's ops and the records; records by start time within a group.
    std::map<GroupKey, std::vector<int>> ops_of;
    for (int i = 0; i < g.num_ops(); ++i) {
      const Op& op = g.ops[i];
      if (op.device < 0 || op.kind == OpKind::kBarrier) continue;
      ops_of[KeyOf(op.kind, op.device, op.micro_batch, op.chunk, op.pass)].push_back(i);
    }
    std::map<GroupKey, std::vector<size_t>> recs_of;
    double first_start = INFINITY, last_end = -INFINITY;
    std::vector<double> optimizer_us;  // per device, recorded
    for (size_t k : recs) {
      const OpRecord& r = records[k];
      first_start = std::min(first_start, r.start_us);
      last_end = std::max(last_end, r.start_us + r.duration_us);
      if (IsWaitKind(r.kind)) {
        ++out.waits;
        continue;
      }
      if (r.kind == OpKind::kOptimizer) {
        optimizer_us.resize(devices, 0.0);
        optimizer_us[r.device] += r.duration_us;
        continue;
      }
      recs_of[KeyOf(r.kind, r.device, r.micro_batch, r.chunk, r.pass)].push_back(k);
    }
    for (auto& [key, ks] : recs_of)
      std::stable_sort(ks.begin(), ks.end(),
                       [&](size_t a, size_t b) { return records[a].start_us < records[b].start_us; });
    std::vector<char> has_records(devices, 0);
    for (size_t k : recs)
      if (records[k].device >= 0) has_records[records[k].device] = 1;
    std::vector<std::pair<GroupKey, const std::vector<int>*>> unrecorded;  // graph ops no record matched
    for (const auto& [key, ops] : ops_of) {
      const OpKind kind = static_cast<OpKind>(std::get<0>(key));
      const bool take = IsCompute(kind) || !measured || options.measured_comm;
      auto rit = recs_of.find(key);
      if (rit == recs_of.end()) {
        unrecorded.push_back({key, &ops});
        continue;
      }
      const std::vector<size_t>& ks = rit->second;
      out.matched += static_cast<int64_t>(ops.size());
      if (!take) continue;
      if (ks.size() == ops.size()) {
        for (size_t j = 0; j < ops.size(); ++j) d[ops[j]] = std::max(0.0, records[ks[j]].duration_us);
        continue;
      }
      double total = 0, model_total = 0;
      for (size_t k : ks) total += std::max(0.0, records[k].duration_us);
      for (int i : ops) model_total += modelled[i];
      for (int i : ops)
        d[i] = model_total > 0 ? total * modelled[i] / model_total : total / static_cast<double>(ops.size());
    }
    // A device without any record (a job profiled on some ranks only): its compute ops take the mean of the same
    // ops on the recorded devices of its stage (ReplayOptions::fill_unrecorded_devices); else, and for every
    // other op without a record, the modelled duration stays.
    for (const auto& [key, ops] : unrecorded) {
      const int32_t dev = std::get<1>(key);
      std::vector<double> sum(ops->size(), 0.0);
      int donors = 0;
      if (options.fill_unrecorded_devices && IsCompute(static_cast<OpKind>(std::get<0>(key))) &&
          !has_records[dev])
        for (int other = 0; other < devices; ++other) {
          if (!has_records[other] || mesh.PpOfDevice(other) != mesh.PpOfDevice(dev) ||
              mesh.SpOfDevice(other) != mesh.SpOfDevice(dev))
            continue;
          const GroupKey twin{std::get<0>(key), other, std::get<2>(key), std::get<3>(key), std::get<4>(key)};
          auto og = ops_of.find(twin);
          if (!recs_of.count(twin) || og == ops_of.end() || og->second.size() != ops->size()) continue;
          ++donors;
          for (size_t j = 0; j < ops->size(); ++j) sum[j] += d[og->second[j]];
        }
      if (donors == 0) {
        for (int i : *ops) out.unmatched += modelled[i] > 0;
        continue;
      }
      for (size_t j = 0; j < ops->size(); ++j) d[(*ops)[j]] = sum[j] / donors;
      out.filled += static_cast<int64_t>(ops->size());
    }
    // The optimizer step after the graph: per stage the slowest of its devices' recorded steps (a simulated
    // run records none: the model's).
    rp.optimizer = pg.optimizer_us;
    std::vector<double>& optimizer = rp.optimizer;
    rp.optimizer_recorded = !optimizer_us.empty();
    if (!optimizer_us.empty()) {
      optimizer.assign(par.pp, 0.0);
      for (int dev = 0; dev < devices; ++dev)
        optimizer[mesh.PpOfDevice(dev)] = std::max(optimizer[mesh.PpOfDevice(dev)], optimizer_us[dev]);
    }
    out.recorded_us =
        (last_end - first_start) + (optimizer_us.empty() && !pg.optimizer_us.empty()
                                        ? *std::max_element(pg.optimizer_us.begin(), pg.optimizer_us.end())
                                        : 0.0);

    return rp;
  };

  for (int64_t iteration : order) {
    MMTWIN_ASSIGN_OR_RETURN(Replayed rp, replay_durations(iteration));
    OpGraph& g = rp.pg.graph;
    const std::vector<double>& modelled = rp.modelled;
    const std::vector<double>& d = rp.d;
    const std::vector<double>& optimizer = rp.optimizer;
    const PlanIterationGraph& pg = rp.pg;
    ReplayIteration& out = rp.out;
    IterationTiming timing;
    const std::vector<Pass> passes = ComputePasses(g, mesh);
    for (const Pass& p : passes) {
      pass_times[{p.stage, p.chunk, p.kind}].push_back({Total(p, d), Total(p, modelled)});
    }
    if (rp.optimizer_recorded) {
      optimizer_recorded = true;
      for (int r = 0; r < par.pp; ++r)
        recorded_optimizer[r] += optimizer[r] / static_cast<double>(order.size());
    }
    out.replayed_us = StepUs(g, d, optimizer, par.pp, timing);
    out.data_us = StepUs(g, DataWhatIf(passes, d), optimizer, par.pp, timing);
    out.partition_us = StepUs(g, PartitionWhatIf(passes, par.pp, d), optimizer, par.pp, timing);
    out.device_slowdown.assign(devices, 0.0);
    out.stragglers_us =
        StepUs(g, StragglersWhatIf(passes, d, &out.device_slowdown), optimizer, par.pp, timing);
    const std::vector<double> ideal =
        PartitionWhatIf(passes, par.pp, DataWhatIf(passes, StragglersWhatIf(passes, d)));
    out.ideal_us = StepUs(g, ideal, optimizer, par.pp, timing);
    if (report.ideal_ops.empty()) report.ideal_ops = OpRecordsOf(g, timing, pg.costs, iteration);
    report.iterations.push_back(out);
  }
  // The run's speed per (stage, chunk, kind) for --predict, its stalls left out (SpeedOf), and per kind where
  // the other plan has a pass this run lacks.
  std::map<SpeedKey, Speed> speed;
  for (const auto& [key, times] : pass_times) {
    const Speed sp = SpeedOf(times);
    speed[key] = sp;
    report.speed_passes += sp.kept + sp.stalls;
    report.stalled_passes += sp.stalls;
    report.stall_us += sp.stall_us;
  }
  std::map<int, std::vector<PassTimes>> kind_times;
  for (const auto& [key, times] : pass_times) {
    std::vector<PassTimes>& k = kind_times[std::get<2>(key)];
    k.insert(k.end(), times.begin(), times.end());
  }
  std::map<int, Speed> kind_speed;
  for (const auto& [kind, times] : kind_times) kind_speed[kind] = SpeedOf(times);

  // The stalls what-if: each stalled pass at its key's speed; the ideal then starts from it. It needs the run's
  // fences, so a run with stalls has its iterations replayed once more (a run without keeps its replay).
  for (size_t n = 0; n < report.iterations.size(); ++n) {
    ReplayIteration& out = report.iterations[n];
    out.stalls_us = out.replayed_us;
    if (report.stalled_passes == 0) continue;
    MMTWIN_ASSIGN_OR_RETURN(Replayed rp, replay_durations(out.iteration));
    OpGraph& g = rp.pg.graph;
    IterationTiming timing;
    const std::vector<Pass> passes = ComputePasses(g, mesh);
    const std::vector<double> calm = StallsWhatIf(passes, rp.d, rp.modelled, speed);
    out.stalls_us = StepUs(g, calm, rp.optimizer, par.pp, timing);
    const std::vector<double> ideal =
        PartitionWhatIf(passes, par.pp, DataWhatIf(passes, StragglersWhatIf(passes, calm)));
    out.ideal_us = StepUs(g, ideal, rp.optimizer, par.pp, timing);
    if (n == 0) report.ideal_ops = OpRecordsOf(g, timing, rp.pg.costs, out.iteration);
  }

  ReplayIteration& m = report.mean;
  const double n = static_cast<double>(report.iterations.size());
  for (const ReplayIteration& it : report.iterations) {
    m.recorded_us += it.recorded_us / n;
    m.replayed_us += it.replayed_us / n;
    m.data_us += it.data_us / n;
    m.partition_us += it.partition_us / n;
    m.stragglers_us += it.stragglers_us / n;
    m.stalls_us += it.stalls_us / n;
    m.ideal_us += it.ideal_us / n;
    m.matched += it.matched;
    m.unmatched += it.unmatched;
    m.filled += it.filled;
    m.waits += it.waits;
  }
  m.iteration = -1;
  if (options.predict) {
    const Scenario& other = *options.predict;
    MMTWIN_ASSIGN_OR_RETURN(PlannedRun run_b, BuildPlan(other, plan_options));
    if (!(run_b.plan.parallel == par))
      return Error(
          (other.path.empty() ? other.name : other.path) +
          ": parallel: the predicted scenario must keep the run's layout (dp, tp, pp, vpp, micro-batches, "
          "ZeRO): the run's speed is known per pipeline stage and chunk");
    report.predicted_scenario = other.name;
    const auto ratio = [&](const Pass& p) {
      auto it = speed.find({p.stage, p.chunk, p.kind});
      if (it != speed.end() && it->second.kept > 0) return it->second.ratio;
      auto k = kind_speed.find(p.kind);
      return k != kind_speed.end() ? k->second.ratio : 1.0;
    };
    for (size_t i = 0; i < run_b.plan.iterations.size(); ++i) {
      MMTWIN_ASSIGN_OR_RETURN(PlanIterationGraph pg, BuildPlanIterationGraph(run_b, i));
      Stretch(pg.graph, run_b.cluster.device.overlap_slowdown);
      const std::vector<double> modelled = pg.graph.duration_us;
      const std::vector<Pass> passes = ComputePasses(pg.graph, mesh);
      std::vector<double> totals;
      for (const Pass& p : passes) totals.push_back(Total(p, modelled) * ratio(p));
      IterationTiming timing;
      const double t = StepUs(pg.graph, Scaled(passes, totals, modelled),
                              optimizer_recorded ? recorded_optimizer : pg.optimizer_us, par.pp, timing);
      report.predicted_us.push_back(t);
      report.predicted_mean_us += t / static_cast<double>(run_b.plan.iterations.size());
    }
  }
  return report;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Measured run records (measure.h).
#include "backend/measure.h"

#include "backend/machine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/plan/mesh.h"
#include "core/records/perfetto.h"
#include "core/records/run_folder.h"
#include "driver/run_summary.h"

namespace mmtwin::backend {

namespace {

// What the measured ops add up to: per device (busy, exposed comm, recompute, dispatch; then idle and bubble by
// the simulator's definitions) and per stage (forward / backward / recompute time), and the tokens and samples.
struct MeasuredTotals {
  std::vector<double> busy, bubble, exposed, recompute, idle;
  // The data dispatch (and the orchestrator's backward all-to-all) blocks the rank's compute: exposed
  // communication, as the simulator counts a compute wait on the dispatch lane, and reported on its own.
  std::vector<double> dispatch;
  std::vector<int64_t> dispatch_mbs;
  std::vector<double> stage_fwd, stage_bwd, stage_recompute;
  double tokens = 0, samples = 0;
};

// Sums the ops' durations by kind into busy, exposed comm, recompute, dispatch and the per-stage passes.
MeasuredTotals SumOps(const std::vector<OpRecord>& ops, const DeviceMesh& mesh, int pp) {
  const int devices = mesh.num_devices();
  MeasuredTotals t;
  for (auto* v : {&t.busy, &t.bubble, &t.exposed, &t.recompute, &t.idle, &t.dispatch}) v->assign(devices, 0);
  t.dispatch_mbs.assign(devices, 0);
  for (auto* v : {&t.stage_fwd, &t.stage_bwd, &t.stage_recompute}) v->assign(pp, 0);
  for (const OpRecord& o : ops) {
    if (o.device < 0 || o.device >= devices) continue;
    const int stage = mesh.PpOfDevice(o.device);
    switch (o.kind) {
      case OpKind::kForward:
        t.busy[o.device] += o.duration_us;
        t.stage_fwd[stage] += o.duration_us;
        if (o.chunk == 0) {
          t.tokens += static_cast<double>(o.tokens);
          t.samples += o.spans;
        }
        break;
      case OpKind::kBackward:
      case OpKind::kBackwardWeight:
        t.busy[o.device] += o.duration_us;
        t.stage_bwd[stage] += o.duration_us;
        break;
      case OpKind::kRecompute:
        t.busy[o.device] += o.duration_us;
        t.recompute[o.device] += o.duration_us;
        t.stage_recompute[stage] += o.duration_us;
        break;
      case OpKind::kOptimizer:
        t.busy[o.device] += o.duration_us;
        break;
      case OpKind::kDpWait:
        t.exposed[o.device] += o.duration_us;
        break;
      case OpKind::kDispatch:
        t.exposed[o.device] += o.duration_us;
        t.dispatch[o.device] += o.duration_us;
        if (o.pass == PassKind::kForward) ++t.dispatch_mbs[o.device];  // one per micro-batch
        break;
      default:
        break;
    }
  }
  return t;
}

// Idle as the simulator defines it (core/eval/analytic.h): a device's wait for the other DP replicas, the
// iteration's end less its replica's last op end; bubble is then the rest of the device's time (`total_us`) that
// is neither busy nor exposed DP communication (P2P waits, sends, warm-up / cool-down and the gaps between ops).
void AddIdleAndBubble(const std::vector<OpRecord>& ops, const DeviceMesh& mesh, double total_us,
                      MeasuredTotals& t) {
  const int devices = mesh.num_devices();
  std::map<int64_t, double> it_end;                       // iteration -> last op end (ops start at 0)
  std::map<std::pair<int64_t, int>, double> replica_end;  // (iteration, dp replica) -> last op end
  for (const OpRecord& o : ops) {
    if (o.device < 0 || o.device >= devices) continue;
    const double end = o.start_us + o.duration_us;
    double& e = it_end[o.iteration];
    e = std::max(e, end);
    double& re = replica_end[{o.iteration, mesh.DpOfDevice(o.device)}];
    re = std::max(re, end);
  }
  for (int d = 0; d < devices; ++d)
    for (const auto& [it, end] : it_end) {
      auto re = replica_end.find({it, mesh.DpOfDevice(d)});
      if (re != replica_end.end()) t.idle[d] += std::max(0.0, end - re->second);
    }
  for (int d = 0; d < devices; ++d)
    t.bubble[d] = std::max(0.0, total_us - t.busy[d] - t.exposed[d] - t.idle[d]);
}

// The run's time split (of GPU time), dispatch and throughput.
void AddMeasuredTotals(const MeasuredTotals& t, double total_us, RunSummary& s) {
  const int devices = static_cast<int>(t.busy.size());
  const double device_time = total_us * devices;
  double b = 0, bu = 0, ex = 0, r = 0, dis = 0;
  int64_t dis_mbs = 0;
  for (int d = 0; d < devices; ++d) {
    b += t.busy[d];
    bu += t.bubble[d];
    ex += t.exposed[d];
    r += t.recompute[d];
    dis += t.dispatch[d];
    dis_mbs += t.dispatch_mbs[d];
  }
  s.dispatch_us_mean = dis_mbs > 0 ? dis / static_cast<double>(dis_mbs) : 0.0;
  s.exposed_dispatch_ratio = dis / device_time;
  s.busy_ratio = b / device_time;
  s.bubble_ratio = bu / device_time;
  s.exposed_comm_ratio = ex / device_time;
  s.idle_ratio = std::max(0.0, 1.0 - s.busy_ratio - s.bubble_ratio - s.exposed_comm_ratio);
  s.recompute_ratio = r / device_time;
  s.tokens_per_s = t.tokens / (total_us * 1e-6);
  s.samples_per_s = t.samples / (total_us * 1e-6);
  s.mfu = 0;  // no model-FLOP rate is claimed for a measured run (the device it ran on is not the cluster's)
}

// Stages: the static side as `mmtwin plan` shows it, the timing and peak memory measured.
void AddMeasuredStages(const PlannedRun& run, const MeasuredTotals& t, const DeviceMesh& mesh,
                       double iterations, double total_us, const std::vector<int64_t>& peak_bytes_per_stage,
                       RunSummary& s) {
  const ParallelConfig& par = run.plan.parallel;
  const double mbs = iterations * par.dp * par.micro_batches;
  for (const PlanStage& ps : PlanStages(run)) {
    const int st = ps.stage;
    double sb = 0, sbu = 0, sex = 0, sdis = 0;
    int64_t sdis_mbs = 0;
    for (int d = 0; d < par.dp; ++d) {
      const int dev = mesh.Device(d, st);
      sb += t.busy[dev];
      sbu += t.bubble[dev];
      sex += t.exposed[dev];
      sdis += t.dispatch[dev];
      sdis_mbs += t.dispatch_mbs[dev];
    }
    const double denom = total_us * par.dp;
    StageRecord rec = PlannedStageRecord(ps);
    rec.fwd_us_mean = t.stage_fwd[st] / mbs;
    rec.bwd_us_mean = t.stage_bwd[st] / mbs;
    rec.recompute_us_mean = t.stage_recompute[st] / mbs;
    rec.busy_ratio = sb / denom;
    rec.bubble_ratio = sbu / denom;
    rec.idle_ratio = std::max(0.0, 1.0 - rec.busy_ratio - rec.bubble_ratio - sex / denom);
    rec.dispatch_us_mean = sdis_mbs > 0 ? sdis / static_cast<double>(sdis_mbs) : 0.0;
    rec.exposed_dispatch_ratio = sdis / denom;
    // Measured: the peak of the counting allocator (no split into model state and activations); it ran.
    rec.peak_activation_bytes = 0;
    rec.peak_memory_bytes = st < static_cast<int>(peak_bytes_per_stage.size()) ? peak_bytes_per_stage[st] : 0;
    rec.fits = true;
    s.stages.push_back(std::move(rec));
  }
}

}  // namespace

RunSummary MeasuredSummary(const PlannedRun& run, const std::vector<OpRecord>& ops,
                           const std::vector<double>& iteration_us,
                           const std::vector<int64_t>& peak_bytes_per_stage, const std::string& engine) {
  RunSummary s = PlannedRunSummary(run, RecordSource::kMeasured, engine, iteration_us);
  if (iteration_us.empty()) return s;
  double total_us = 0;
  for (double t : iteration_us) total_us += t;
  const DeviceMesh mesh(run.plan.parallel, run.cluster.gpus_per_node);
  MeasuredTotals t = SumOps(ops, mesh, run.plan.parallel.pp);
  AddIdleAndBubble(ops, mesh, total_us, t);
  AddMeasuredTotals(t, total_us, s);
  AddMeasuredStages(run, t, mesh, static_cast<double>(iteration_us.size()), total_us, peak_bytes_per_stage,
                    s);
  return s;
}

Status WriteMeasuredRun(const std::string& rundir, const PlannedRun& run, const RunSummary& summary,
                        const std::vector<OpRecord>& ops, const std::vector<LayerTiming>& layers) {
  int64_t last = -1;
  for (const OpRecord& o : ops) last = std::max(last, o.iteration);
  std::vector<OpRecord> last_ops;
  for (const OpRecord& o : ops)
    if (o.iteration == last) last_ops.push_back(o);
  return RunFolderWriter()
      .AddSummary(summary)
      .AddOps(ops)
      .AddTrace(PerfettoTrace(last_ops, run.plan.parallel) + "\n")
      .AddLayers(layers, Layers(run.model))
      .AddPlan(run.plan)
      .AddScenario(FormatScenario(run.scenario))
      .Write(rundir);
}

RecordWriter::RecordWriter(std::string rundir, const PlannedRun& run, std::string engine,
                           MachineRecord machine)
    : rundir_(std::move(rundir)),
      run_(run),
      engine_(std::move(engine)),
      machine_(std::move(machine)),
      thread_([this] { Loop(); }) {}

RecordWriter::~RecordWriter() {
  (void)Flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Status RecordWriter::Add(MeasuredIteration it) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.push_back(std::move(it));
  wake_.notify_all();
  return first_error_;
}

Status RecordWriter::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!idle_.wait_for(lock, timeout, [&] { return pending_.empty() && !busy_; }))
    return Error("the run records in " + rundir_ + " are still being written");
  return first_error_;
}

int64_t RecordWriter::writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_;
}

int64_t RecordWriter::iterations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_iterations_;
}

void RecordWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stop_, nothing left
    std::vector<MeasuredIteration> batch;
    batch.swap(pending_);
    busy_ = true;
    lock.unlock();
    for (MeasuredIteration& it : batch) {
      all_ops_.insert(all_ops_.end(), it.ops.begin(), it.ops.end());
      all_layers_.insert(all_layers_.end(), it.layers.begin(), it.layers.end());
      iteration_us_.push_back(it.iteration_us);
      peak_bytes_per_stage_.resize(std::max(peak_bytes_per_stage_.size(), it.peak_bytes_per_stage.size()), 0);
      for (size_t s = 0; s < it.peak_bytes_per_stage.size(); ++s)
        peak_bytes_per_stage_[s] = std::max(peak_bytes_per_stage_[s], it.peak_bytes_per_stage[s]);
    }
    RunSummary summary = MeasuredSummary(run_, all_ops_, iteration_us_, peak_bytes_per_stage_, engine_);
    summary.machine = machine_;
    summary.machine->load_avg_1m_end = LoadAverage1m();
    Status st = WriteMeasuredRun(rundir_, run_, summary, all_ops_, all_layers_);
    lock.lock();
    busy_ = false;
    ++writes_;
    if (st.ok())
      written_iterations_ = static_cast<int64_t>(iteration_us_.size());
    else if (first_error_.ok())
      first_error_ = std::move(st);
    if (pending_.empty()) idle_.notify_all();
  }
}

}  // namespace mmtwin::backend

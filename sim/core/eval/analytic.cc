// SPDX-License-Identifier: Apache-2.0
#include "core/eval/analytic.h"

#include "core/plan/mesh.h"

#include <algorithm>

namespace mmtwin {
namespace {

// Longest path in stored (topological) order. start may be null.
void Sweep(const OpGraph& g, const int32_t* deps, const double* dur, double* start, double* finish) {
  const int n = g.num_ops();
  const int32_t* db = g.dep_begin.data();
  const int32_t* lp = g.lane_prev.data();
  for (int i = 0; i < n; ++i) {
    const int32_t p = lp[i];
    double s = p >= 0 ? finish[p] : 0.0;
    for (int32_t j = db[i], e = db[i + 1]; j < e; ++j) s = std::max(s, finish[deps[j]]);
    if (start) start[i] = s;
    finish[i] = s + dur[i];
  }
}

}  // namespace

void EvaluateAnalytic(const OpGraph& g, IterationTiming* out) {
  const int n = g.num_ops();
  out->start_us.resize(n);
  out->finish_us.resize(n);
  Sweep(g, g.deps.data(), g.duration_us.data(), out->start_us.data(), out->finish_us.data());
  AttributeDevices(g, g.duration_us, out);
}

void AttributeDevices(const OpGraph& g, const std::vector<double>& alone_duration_us, IterationTiming* out) {
  const int n = g.num_ops();
  const DeviceMesh mesh(g.parallel);
  const int D = mesh.dp();
  const double* lf = out->finish_us.data();
  const int32_t* ldeps = g.deps.data();
  if (D > 1) {
    out->local_finish_us.resize(n);
    Sweep(g, g.local_deps.data(), alone_duration_us.data(), nullptr, out->local_finish_us.data());
    lf = out->local_finish_us.data();
    ldeps = g.local_deps.data();
  } else {
    out->local_finish_us.clear();
  }
  double T = 0;
  for (int i = 0; i < n; ++i) T = std::max(T, out->finish_us[i]);
  out->iteration_time_us = T;

  out->devices.assign(g.num_devices, DeviceTiming{});
  out->replica_time_us.assign(D, 0.0);
  // Scratch (alone timing): last compute finish per device; thread_local so reuse does not allocate.
  thread_local std::vector<double> last_compute;
  last_compute.assign(g.num_devices, 0.0);
  const int32_t* db = g.dep_begin.data();
  for (int i = 0; i < n; ++i) {
    const Op& op = g.ops[i];
    const int dev = op.device;
    if (dev < 0) continue;
    double& rt = out->replica_time_us[mesh.DpOfDevice(dev)];
    rt = std::max(rt, lf[i]);
    DeviceTiming& dt = out->devices[dev];
    if (op.kind == OpKind::kDispatch) {
      dt.dispatch_us += out->start_us.size() == static_cast<size_t>(n) ? out->finish_us[i] - out->start_us[i]
                                                                       : g.duration_us[i];
      if (op.pass == PassKind::kForward)
        ++dt.dispatch_ops;  // one per micro-batch (+ its backward all-to-all)
    }
    if (op.lane != Lane::kCompute) continue;
    const double dur = g.duration_us[i];
    dt.busy_us += dur;
    if (op.kind == OpKind::kRecompute) dt.recompute_us += dur;
    if (op.kind == OpKind::kTpCollective) dt.tp_us += dur;
    last_compute[dev] = lf[i];
    // Gap before this op in the alone timing, blamed on its binding dependency.
    const int32_t p = g.lane_prev[i];
    const double prev = p >= 0 ? lf[p] : 0.0;
    double s = prev;
    int32_t binding = -1;
    for (int32_t j = db[i], e = db[i + 1]; j < e; ++j)
      if (lf[ldeps[j]] > s) {
        s = lf[ldeps[j]];
        binding = ldeps[j];
      }
    if (binding >= 0 && (g.ops[binding].lane == Lane::kDp || g.ops[binding].lane == Lane::kDispatch) &&
        g.ops[binding].device == dev) {
      dt.exposed_comm_us += s - prev;
      if (g.ops[binding].lane == Lane::kDispatch) dt.exposed_dispatch_us += s - prev;
    }
  }
  // Last compute finish per replica (alone timing).
  thread_local std::vector<double> replica_compute_end;
  replica_compute_end.assign(D, 0.0);
  for (int dev = 0; dev < g.num_devices; ++dev)
    replica_compute_end[mesh.DpOfDevice(dev)] =
        std::max(replica_compute_end[mesh.DpOfDevice(dev)], last_compute[dev]);
  for (int dev = 0; dev < g.num_devices; ++dev) {
    DeviceTiming& dt = out->devices[dev];
    dt.local_time_us = out->replica_time_us[mesh.DpOfDevice(dev)];
    dt.exposed_comm_us += dt.local_time_us - replica_compute_end[mesh.DpOfDevice(dev)];
    dt.bubble_us = dt.local_time_us - dt.busy_us - dt.exposed_comm_us;
    dt.idle_us = T - dt.local_time_us;
  }
}

double AnalyticIterationTimeUs(const OpGraph& g, std::vector<double>* finish_us) {
  const int n = g.num_ops();
  finish_us->resize(n);
  double* finish = finish_us->data();
  // Sweep, with T = max of the finishes taken in the same pass (the same maxima in the same order).
  const int32_t* db = g.dep_begin.data();
  const int32_t* lp = g.lane_prev.data();
  const int32_t* deps = g.deps.data();
  const double* dur = g.duration_us.data();
  double T = 0;
  for (int i = 0; i < n; ++i) {
    const int32_t p = lp[i];
    double s = p >= 0 ? finish[p] : 0.0;
    for (int32_t j = db[i], e = db[i + 1]; j < e; ++j) s = std::max(s, finish[deps[j]]);
    finish[i] = s + dur[i];
    T = std::max(T, finish[i]);
  }
  return T;
}

IterationTiming EvaluateAnalytic(const OpGraph& graph) {
  IterationTiming t;
  EvaluateAnalytic(graph, &t);
  return t;
}

TimingTotals Totals(const IterationTiming& t) {
  TimingTotals r;
  const double denom = t.iteration_time_us * static_cast<double>(t.devices.size());
  if (denom <= 0) return r;
  for (const DeviceTiming& d : t.devices) {
    r.busy_ratio += d.busy_us;
    r.bubble_ratio += d.bubble_us;
    r.idle_ratio += d.idle_us;
    r.exposed_comm_ratio += d.exposed_comm_us;
    r.recompute_ratio += d.recompute_us;
  }
  r.busy_ratio /= denom;
  r.bubble_ratio /= denom;
  r.idle_ratio /= denom;
  r.exposed_comm_ratio /= denom;
  r.recompute_ratio /= denom;
  return r;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The SimGrid evaluator: checks, the isolated replay (isolate.h + replay.h) and the attribution. No SimGrid
// header here: see simgrid_engine.h.
#include "engine/simgrid_engine.h"

#include "core/plan/mesh.h"
#include "core/plan/pricing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "engine/isolate.h"
#include "engine/replay.h"

namespace mmtwin {

CommSpec PlatformComm(const ClusterSpec& cluster, const ParallelConfig& parallel) {
  return LayoutComm(cluster, parallel);  // the same links the analytic pricing uses (core/plan/pricing.h)
}

int NodeOfDevice(const ClusterSpec& cluster, const ParallelConfig& parallel, int device) {
  return DeviceMesh(parallel, cluster.gpus_per_node).NodeOfDevice(device);
}

namespace {

bool Same(double a, double b) {
  return a == b || std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

std::string Speed(double bytes_per_s, double latency_us) {
  std::ostringstream o;
  o << bytes_per_s << " B/s, " << latency_us << " us";
  return o.str();
}

}  // namespace

Status CheckPlatform(const ClusterSpec& cluster, const OpGraph& g) {
  const ParallelConfig& pc = g.parallel;
  if (cluster.gpus_per_node < 1 || cluster.nodes < 1)
    return Error("simgrid engine: cluster '" + cluster.name + "' needs nodes >= 1 and gpus_per_node >= 1");
  if (pc.world_size() > cluster.world_size())
    return Error("simgrid engine: the layout dp " + std::to_string(pc.dp) + " x tp " + std::to_string(pc.tp) +
                 " x pp " + std::to_string(pc.pp) + " needs " + std::to_string(pc.world_size()) +
                 " GPUs, cluster '" + cluster.name + "' has " + std::to_string(cluster.world_size()));
  if (g.num_devices != DeviceMesh(pc).num_devices())
    return Error::Internal("simgrid engine: malformed op graph (device count)");
  if (g.num_ops() == 0) return Status();
  const CommSpec want = PlatformComm(cluster, pc);
  const CommSpec& got = g.source.comm;
  bool p2p = false, dp = false;
  for (const Op& op : g.ops) {
    p2p = p2p || op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient;
    dp = dp || op.kind == OpKind::kDpCollective || op.kind == OpKind::kDpAllGather;
  }
  if (p2p &&
      !(Same(got.p2p_bytes_per_s, want.p2p_bytes_per_s) && Same(got.p2p_latency_us, want.p2p_latency_us)))
    return Error("simgrid engine: the op graph's pipeline sends were priced at " +
                 Speed(got.p2p_bytes_per_s, got.p2p_latency_us) + " but cluster '" + cluster.name +
                 "' gives " + Speed(want.p2p_bytes_per_s, want.p2p_latency_us) +
                 " (price the graph with Pricer::Comm())");
  if (dp && !(Same(got.dp_bytes_per_s, want.dp_bytes_per_s) && Same(got.dp_latency_us, want.dp_latency_us)))
    return Error("simgrid engine: the op graph's DP collectives were priced at " +
                 Speed(got.dp_bytes_per_s, got.dp_latency_us) + " but cluster '" + cluster.name + "' gives " +
                 Speed(want.dp_bytes_per_s, want.dp_latency_us) + " (price the graph with Pricer::Comm())");
  if (dp && got.dp_bucket_bytes <= 0) return Error("simgrid engine: dp_bucket_bytes must be > 0");
  if (!g.dispatch_transfers.empty() &&
      !(got.gpus_per_node == want.gpus_per_node && Same(got.nvlink_bytes_per_s, want.nvlink_bytes_per_s) &&
        Same(got.nvlink_latency_us, want.nvlink_latency_us) &&
        Same(got.nic_bytes_per_s, want.nic_bytes_per_s) && Same(got.nic_latency_us, want.nic_latency_us)))
    return Error("simgrid engine: the op graph's data dispatch was priced at NVLink " +
                 Speed(got.nvlink_bytes_per_s, got.nvlink_latency_us) + ", NIC " +
                 Speed(got.nic_bytes_per_s, got.nic_latency_us) + ", " + std::to_string(got.gpus_per_node) +
                 " GPUs per node but cluster '" + cluster.name + "' gives NVLink " +
                 Speed(want.nvlink_bytes_per_s, want.nvlink_latency_us) + ", NIC " +
                 Speed(want.nic_bytes_per_s, want.nic_latency_us) + ", " +
                 std::to_string(want.gpus_per_node) + " (price the graph with Pricer::Comm())");
  return Status();
}

Status EvaluateWithSimGrid(const ClusterSpec& cluster, const SimGridOptions& options, const OpGraph& graph,
                           IterationTiming* out, SimGridReplayStats* stats) {
  MMTWIN_RETURN_IF_ERROR(CheckPlatform(cluster, graph));
  const int n = graph.num_ops();
  out->start_us.resize(n);
  out->finish_us.resize(n);
  SimGridReplayStats local;
  if (options.isolate) {
    // Result region: start[n], finish[n], stats.
    const size_t bytes = sizeof(double) * 2 * static_cast<size_t>(n) + sizeof(SimGridReplayStats);
    std::vector<char> buf(bytes);
    MMTWIN_RETURN_IF_ERROR(RunIsolated(
        bytes,
        [&](void* r) {
          auto* d = static_cast<double*>(r);
          SimGridReplayStats st;
          Status s = ReplayInProcess(cluster, options, graph, d, d + n, &st);
          std::memcpy(d + 2 * static_cast<size_t>(n), &st, sizeof st);
          return s;
        },
        options.timeout_s, buf.data()));
    const auto* d = reinterpret_cast<const double*>(buf.data());
    std::copy(d, d + n, out->start_us.begin());
    std::copy(d + n, d + 2 * static_cast<size_t>(n), out->finish_us.begin());
    std::memcpy(static_cast<void*>(&local), d + 2 * static_cast<size_t>(n), sizeof local);
  } else {
    MMTWIN_RETURN_IF_ERROR(
        ReplayInProcess(cluster, options, graph, out->start_us.data(), out->finish_us.data(), &local));
  }
  if (stats) *stats = local;
  // The alone timing uses each op's simulated duration (contention included).
  thread_local std::vector<double> alone;
  alone.resize(n);
  for (int i = 0; i < n; ++i) alone[i] = std::max(0.0, out->finish_us[i] - out->start_us[i]);
  AttributeDevices(graph, alone, out);
  return Status();
}

namespace {

class SimGridEvaluator : public Evaluator {
 public:
  SimGridEvaluator(const ClusterSpec& cluster, SimGridOptions options)
      : cluster_(cluster), options_(std::move(options)) {}
  std::string name() const override { return "simgrid"; }
  Status Evaluate(const OpGraph& graph, IterationTiming* out) override {
    return EvaluateWithSimGrid(cluster_, options_, graph, out, nullptr);
  }

 private:
  ClusterSpec cluster_;
  SimGridOptions options_;
};

}  // namespace

std::unique_ptr<Evaluator> MakeSimGridEvaluator(const ClusterSpec& cluster, SimGridOptions options) {
  return std::make_unique<SimGridEvaluator>(cluster, std::move(options));
}

}  // namespace mmtwin

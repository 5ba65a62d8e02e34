// SPDX-License-Identifier: Apache-2.0
// Link calibration from measured runs (links.h).
#include "calibrate/links.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "core/plan/mesh.h"
#include "core/records/pingpong.h"
#include "core/records/run_folder.h"
#include "core/scenario/scenario.h"

namespace mmtwin {
namespace {

struct Samples {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
};

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string Quote(const std::string& s) {  // a YAML single-quoted scalar
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

}  // namespace

Result<LinkCalibration> CalibrateLinks(const std::vector<std::string>& rundirs, int64_t min_samples) {
  if (rundirs.empty()) return Error("no run folders to calibrate from");
  LinkCalibration out;
  out.runs = rundirs;
  std::map<std::string, Samples> classes;   // "intra-node" / "inter-node": training runs' P2P
  std::map<std::string, Samples> pingpong;  // the same classes from ping-pong runs (preferred when present)
  std::vector<double> dp_bus;
  // One machine at a time: the machine a measured summary records (issue 33, item 1: host and GPU), else (a
  // ping-pong run, or one from before machine records) the cluster its scenario names.
  std::string machine, machine_from;
  for (const std::string& dir : rundirs) {
    MMTWIN_ASSIGN_OR_RETURN(
        RunFolder run, ReadRunFolder(dir, {RunFile::kScenario}, {RunFile::kPingPong, RunFile::kSummary}));
    const std::string scenario_path = RunFilePath(dir, RunFile::kScenario);
    auto scenario = ScenarioOf(run);
    if (!scenario) return scenario.error().Wrap(dir);
    const bool recorded = run.summary && run.summary->machine && !run.summary->machine->host.empty();
    if (recorded) {
      const std::string here =
          run.summary->machine->host +
          (run.summary->machine->gpu.empty() ? "" : " (" + run.summary->machine->gpu + ")");
      if (machine.empty()) {
        machine = here;
        machine_from = dir;
      } else if (here != machine) {
        return Error(RunFilePath(dir, RunFile::kSummary) + ": machine: ran on " + here + ", but " +
                     machine_from + " ran on " + machine +
                     "; links are calibrated for one machine at a time");
      }
    }
    if (out.cluster.empty()) {
      out.cluster = scenario->cluster;
    } else if (scenario->cluster != out.cluster && !recorded) {
      return Error(scenario_path + ": cluster: '" + scenario->cluster + "', but " + rundirs.front() +
                   " ran on '" + out.cluster + "'; links are calibrated for one machine at a time");
    }
    auto cluster = LoadScenarioCluster(*scenario, scenario->nodes);
    if (!cluster) return cluster.error().Wrap(scenario_path);
    if (run.pingpong) {
      // A ping-pong run: each exchange times two transfers of the same message.
      const std::string pp_path = RunFilePath(dir, RunFile::kPingPong);
      const std::vector<PingPongSample>& rows = *run.pingpong;
      const DeviceMesh mesh(scenario->parallel, cluster->gpus_per_node);
      for (const PingPongSample& r : rows) {
        if (r.peer >= mesh.world_size())
          return Error::At(pp_path, r.line, "peer",
                           std::to_string(r.peer) + " is not a rank of the run's scenario (world size " +
                               std::to_string(mesh.world_size()) + ")");
        Samples& cls = pingpong[mesh.NodeOfRank(0) == mesh.NodeOfRank(r.peer) ? "intra-node" : "inter-node"];
        cls.x.push_back({1.0, static_cast<double>(r.bytes)});
        cls.y.push_back(r.round_trip_us / 2);
      }
      out.pingpong_samples += static_cast<int64_t>(rows.size());
      continue;
    }
    const std::string path = RunFilePath(dir, RunFile::kOps);
    auto with_ops = ReadRunFolder(dir, {RunFile::kOps});
    if (!with_ops)
      return Error(with_ops.error().message() +
                       " (link calibration reads the ops of a run of mmtwin-train, which keeps " +
                       RunFileName(RunFile::kOps) +
                       ", or the round trips of mmtwin-train launch --pingpong, " +
                       RunFileName(RunFile::kPingPong) + ")",
                   with_ops.error().kind());
    const std::vector<OpRecord>& ops = *with_ops->ops;
    const DeviceMesh mesh(scenario->parallel, cluster->gpus_per_node);
    const int devices = mesh.num_devices();
    std::vector<double> dp_run;
    const int dp = scenario->parallel.dp;
    // Receives by (iteration, dp replica, micro-batch, chunk, direction).
    std::map<std::tuple<int64_t, int, int, int, int>, const OpRecord*> recvs;
    for (const OpRecord& o : ops) {
      if (o.source != RecordSource::kMeasured)
        return Error(path + ": a simulated run; link calibration fits measured runs (mmtwin-train)");
      if (o.kind == OpKind::kP2pRecv && o.device >= 0 && o.device < devices)
        recvs[{o.iteration, mesh.DpOfDevice(o.device), o.micro_batch, o.chunk,
               o.lane == Lane::kP2pBackward ? 1 : 0}] = &o;
    }
    for (const OpRecord& o : ops) {
      if (o.bytes <= 0 || o.duration_us < 0 || o.device < 0 || o.device >= devices) continue;
      if (o.kind == OpKind::kP2pSendActivation || o.kind == OpKind::kP2pSendGradient) {
        // The activation of chunk c goes to chunk c + 1, the gradient of chunk c to chunk c - 1, on the same DP
        // replica. The transfer: from when both ends were ready (the send posted, the receive waiting) to the
        // receive's end.
        const bool grad = o.kind == OpKind::kP2pSendGradient;
        auto it = recvs.find(
            {o.iteration, mesh.DpOfDevice(o.device), o.micro_batch, o.chunk + (grad ? -1 : 1), grad ? 1 : 0});
        if (it == recvs.end() || it->second->bytes != o.bytes) continue;
        const OpRecord& r = *it->second;
        // Only receives already waiting when the send was posted: otherwise the bytes may have arrived before
        // the receive began, and its duration is a local copy, not the transfer.
        if (r.start_us > o.start_us) continue;
        const double transfer_us = r.start_us + r.duration_us - o.start_us;
        if (transfer_us <= 0) continue;
        const bool intra = mesh.NodeOfDevice(o.device) == mesh.NodeOfDevice(r.device);
        Samples& s = classes[intra ? "intra-node" : "inter-node"];
        s.x.push_back({1.0, static_cast<double>(o.bytes)});
        s.y.push_back(transfer_us);
      } else if (o.kind == OpKind::kDpCollective && dp > 1 && o.duration_us > 0) {
        dp_run.push_back(2.0 * (dp - 1) / dp * static_cast<double>(o.bytes) / (o.duration_us * 1e-6));
      }
    }
    // The fastest 10% of the collectives: the largest implied bandwidths.
    out.dp_collectives += static_cast<int64_t>(dp_run.size());
    std::sort(dp_run.begin(), dp_run.end(), std::greater<double>());
    const size_t keep = (dp_run.size() + 9) / 10;
    dp_bus.insert(dp_bus.end(), dp_run.begin(), dp_run.begin() + static_cast<std::ptrdiff_t>(keep));
  }
  for (const char* link : {"intra-node", "inter-node"}) {
    // A ping-pong run's round trips, when there are enough, rather than the training runs' sends: those span a
    // few message sizes and time packing and scheduling along with the wire.
    auto it = pingpong.find(link);
    if (it == pingpong.end() || static_cast<int64_t>(it->second.y.size()) < min_samples)
      it = classes.find(link);
    if (it == classes.end() || static_cast<int64_t>(it->second.y.size()) < min_samples) continue;
    auto fit = FitNonNegative(it->second.x, it->second.y);
    if (!fit) return fit.error().Wrap(std::string("link class ") + link);
    if (!fit->identified[1] || fit->coefficients[1] <= 0) continue;  // one message size: no bandwidth
    LinkClassFit f;
    f.link = link;
    f.latency_us = fit->coefficients[0];
    f.bytes_per_s = 1e6 / fit->coefficients[1];
    f.fit = std::move(*fit);
    out.p2p.push_back(std::move(f));
  }
  if (!dp_bus.empty()) {
    std::sort(dp_bus.begin(), dp_bus.end());
    out.dp_bus_bytes_per_s = dp_bus[dp_bus.size() / 2];
    out.dp_samples = static_cast<int64_t>(dp_bus.size());
  }
  if (out.p2p.empty() && out.dp_samples == 0)
    return Error("the runs' ops.csv hold fewer than " + std::to_string(min_samples) +
                 " point-to-point sends of varying size per link class and no DP collective: nothing to fit "
                 "(calibrate links from runs with pp > 1 or dp > 1, or from mmtwin-train launch --pingpong)");
  return out;
}

std::string FormatCalibratedCluster(const ClusterSpec& base, const LinkCalibration& links) {
  ClusterSpec c = base;
  std::string how;
  for (const LinkClassFit& f : links.p2p) {
    if (f.link == "intra-node") {
      c.nvlink_bytes_per_s = f.bytes_per_s;
      c.nvlink_latency_us = f.latency_us;
    } else {
      c.nic_bytes_per_s = f.bytes_per_s / std::max(1, c.nics_per_node);
      c.nic_latency_us = f.latency_us;
    }
    how += (how.empty() ? "" : "; ") + f.link + " from " + std::to_string(f.fit.samples) +
           " P2P transfers (R² " + Num(f.fit.r2) + ")";
  }
  if (links.dp_samples > 0)
    how += (how.empty() ? "" : "; ") + std::string("DP ring all-reduce bus bandwidth ") +
           Num(links.dp_bus_bytes_per_s) + " B/s (median of the fastest 10% of " +
           std::to_string(links.dp_collectives) + " collectives; a check, not applied)";
  std::string runs;
  for (const std::string& r : links.runs) runs += (runs.empty() ? "" : ", ") + r;
  std::string y;
  y += "# Written by `mmtwin calibrate --cluster-out`: " + base.name +
       " with the link figures fitted to measured runs (calibrate/links.h).\n";
  y += "name: " + base.name + "-calibrated\n";
  y += "description: " + Quote(base.description + " (links calibrated from measured runs)") + "\n";
  y += "reference: " +
       Quote("mmtwin calibrate: " + (how.empty() ? std::string("no link fitted") : how) + "; runs: " + runs) +
       "\n";
  y += "nodes: " + std::to_string(c.nodes) + "\n";
  y += "gpus_per_node: " + std::to_string(c.gpus_per_node) + "\n";
  y += "device:\n";
  y += "  name: " + Quote(c.device.name) + "\n";
  y += "  peak_flops: " + Num(c.device.peak_flops) + "\n";
  y += "  memory_bytes: " + std::to_string(c.device.memory_bytes) + "\n";
  y += "  hbm_bytes_per_s: " + Num(c.device.hbm_bytes_per_s) + "\n";
  y += "  efficiency: " + Num(c.device.efficiency) + "\n";
  y += "  reserved_bytes: " + std::to_string(c.device.reserved_bytes) + "\n";
  y += "  workspace_bytes: " + std::to_string(c.device.workspace_bytes) + "\n";
  y += "  fragmentation: " + Num(c.device.fragmentation) + "\n";
  y += "  kernel_overhead_us: " + Num(c.device.kernel_overhead_us) + "\n";
  if (c.device.has_compute_curve()) {
    y += "  gemm_peak_fraction: " + Num(c.device.gemm_peak_fraction) + "\n";
    y += "  gemm_half_dim: " + Num(c.device.gemm_half_dim) + "\n";
    y += "  attn_fwd_peak_fraction: " + Num(c.device.attn_fwd_peak_fraction) + "\n";
    y += "  attn_bwd_peak_fraction: " + Num(c.device.attn_bwd_peak_fraction) + "\n";
    y += "  attn_half_span: " + Num(c.device.attn_half_span) + "\n";
    y += "  attn_half_head_dim: " + Num(c.device.attn_half_head_dim) + "\n";
    y += "  hbm_peak_fraction: " + Num(c.device.hbm_peak_fraction) + "\n";
  }
  y += "nvlink_bytes_per_s: " + Num(c.nvlink_bytes_per_s) + "\n";
  y += "nvlink_latency_us: " + Num(c.nvlink_latency_us) + "\n";
  y += "nics_per_node: " + std::to_string(c.nics_per_node) + "\n";
  y += "nic_bytes_per_s: " + Num(c.nic_bytes_per_s) + "\n";
  y += "nic_latency_us: " + Num(c.nic_latency_us) + "\n";
  return y;
}

std::string FormatLinkTable(const LinkCalibration& links) {
  std::string out = "link        sends  latency_us   bandwidth_B/s    R^2   p50    p90  outl\n";
  for (const LinkClassFit& f : links.p2p) {
    char line[256];
    std::snprintf(line, sizeof line, "%-10s %6lld %11.4g %15.4g %6.4f %4.1f%% %5.1f%% %5lld\n",
                  f.link.c_str(), static_cast<long long>(f.fit.samples), f.latency_us, f.bytes_per_s,
                  f.fit.r2, 100 * f.fit.rel_residual_p50, 100 * f.fit.rel_residual_p90,
                  static_cast<long long>(f.fit.outliers));
    out += line;
  }
  if (links.dp_samples > 0)
    out += "DP ring all-reduce bus bandwidth (the fastest " + std::to_string(links.dp_samples) + " of " +
           std::to_string(links.dp_collectives) + " collectives): " + Num(links.dp_bus_bytes_per_s) +
           " B/s\n";
  return out;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Test helper: PyTorch profiler (Kineto) traces written from an mmtwin run's op records, as a framework's profiler
// would record them (tests/whatif/kineto_import_test.cc, tests/bench/whatif_bench.cc).
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/graph/op_graph.h"
#include "core/plan/mesh.h"
#include "core/records/records.h"
#include "whatif/kineto_import.h"

namespace mmtwin::testing {

using nlohmann::json;

// The annotation a framework would open around an op of `kind` (the defaults map the first group; the rest
// through the test's mapping).
inline std::string AnnotationOf(const OpRecord& op) {
  switch (op.kind) {
    case OpKind::kForward:
      return "## forward ##";
    case OpKind::kBackward:
      return "## backward ##";
    case OpKind::kOptimizer:
      return "## optimizer ##";
    case OpKind::kRecompute:
      return "forward-recompute";
    case OpKind::kDpCollective:
      return "nccl:all_reduce";
    case OpKind::kP2pSendActivation:
      return "forward-send";
    case OpKind::kP2pSendGradient:
      return "backward-send";
    default:
      return std::string("test:") + OpKindName(op.kind) + (op.pass == PassKind::kForward ? " fwd" : " bwd");
  }
}

// The records as a framework's profiler sees them: a pass the simulator splits into pieces (gradient buckets of a
// chunk's last backward, FSDP units) is one range, from its first piece's start to its last's end.
inline std::vector<OpRecord> AsFrameworkOps(const std::vector<OpRecord>& ops) {
  std::map<std::tuple<int64_t, int, int, int, int, int>, OpRecord> merged;
  std::vector<OpRecord> out;
  for (const OpRecord& op : ops) {
    if (op.device < 0 || op.duration_us <= 0) continue;
    const bool compute = op.kind == OpKind::kForward || op.kind == OpKind::kBackward ||
                         op.kind == OpKind::kBackwardWeight || op.kind == OpKind::kRecompute;
    if (!compute) {
      out.push_back(op);
      continue;
    }
    auto [it, fresh] = merged.try_emplace({op.iteration, static_cast<int>(op.kind), op.device, op.micro_batch,
                                           op.chunk, static_cast<int>(op.pass)},
                                          op);
    if (!fresh) {
      const double end = std::max(it->second.start_us + it->second.duration_us, op.start_us + op.duration_us);
      it->second.start_us = std::min(it->second.start_us, op.start_us);
      it->second.duration_us = end - it->second.start_us;
    }
  }
  for (const auto& [k, op] : merged) out.push_back(op);
  return out;
}

// One Kineto trace per global rank of `parallel` from the op records: each op an annotation on its lane's CPU
// thread, two kernels launched inside it that exactly cover the op on the GPU; backward kernels launched from
// another thread ("autograd") outside every annotation of that thread.
inline std::vector<KinetoTrace> TracesOf(const std::vector<OpRecord>& ops, const ParallelConfig& parallel) {
  const DeviceMesh mesh(parallel, 0, std::max(1, parallel.sp));
  std::vector<json> per_device(mesh.num_devices(), json::array());
  int64_t corr = 1;
  double lo = 1e300, hi = -1e300;
  for (const OpRecord& op : ops) {
    if (op.device < 0 || op.duration_us <= 0) continue;
    lo = std::min(lo, op.start_us);
    hi = std::max(hi, op.start_us + op.duration_us);
    json& ev = per_device[op.device];
    const double s = op.start_us, d = op.duration_us;
    const int cpu_tid = 100 + static_cast<int>(op.lane);
    ev.push_back({{"ph", "X"},
                  {"cat", "user_annotation"},
                  {"name", AnnotationOf(op)},
                  {"pid", 7},
                  {"tid", cpu_tid},
                  {"ts", s - 0.004},
                  {"dur", 0.003}});
    const int launch_tid = op.kind == OpKind::kBackward ? 999 : cpu_tid;
    for (int k = 0; k < 2; ++k) {
      ev.push_back({{"ph", "X"},
                    {"cat", "cuda_runtime"},
                    {"name", "cudaLaunchKernel"},
                    {"pid", 7},
                    {"tid", launch_tid},
                    {"ts", s - 0.0035 + 0.001 * k},
                    {"dur", 0.0001},
                    {"args", {{"correlation", corr}}}});
      ev.push_back({{"ph", "X"},
                    {"cat", "kernel"},
                    {"name", "k"},
                    {"pid", 0},
                    {"tid", 7 + static_cast<int>(op.lane)},
                    {"ts", s + k * d / 2},
                    {"dur", d / 2},
                    {"args", {{"correlation", corr}, {"stream", 7}}}});
      ++corr;
    }
  }
  std::vector<KinetoTrace> out;
  for (int rank = 0; rank < mesh.world_size(); ++rank) {
    json ev = per_device[mesh.DeviceOfRank(rank)];
    ev.push_back({{"ph", "X"},
                  {"cat", "user_annotation"},
                  {"name", "ProfilerStep#5"},
                  {"pid", 7},
                  {"tid", 100},
                  {"ts", lo - 1},
                  {"dur", hi - lo + 2}});
    json root = {{"schemaVersion", 1},
                 {"distributedInfo", {{"rank", rank}, {"world_size", mesh.world_size()}}},
                 {"traceEvents", ev}};
    out.push_back({"rank-" + std::to_string(rank) + ".json", root.dump()});
  }
  return out;
}

}  // namespace mmtwin::testing

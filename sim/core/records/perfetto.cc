// SPDX-License-Identifier: Apache-2.0
#include "core/records/perfetto.h"

#include <nlohmann/json.hpp>

#include "core/plan/mesh.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace mmtwin {
namespace {

int64_t Ns(double us) { return std::llround(us * 1000.0); }
double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

const char* kThreadNames[kNumLanes] = {"compute", "p2p send activation", "p2p send gradient",
                                       "dp collectives", "data dispatch"};

std::string EventName(const OpRecord& op) {
  const std::string mc = std::to_string(op.micro_batch) + ".c" + std::to_string(op.chunk);
  switch (op.kind) {
    case OpKind::kForward:
      return "F" + mc;
    case OpKind::kRecompute:
      return "R" + mc;
    case OpKind::kBackwardWeight:
      return "W" + mc;
    case OpKind::kBackward:
      return "B" + mc;
    case OpKind::kTpCollective:
      return std::string(op.pass == PassKind::kForward ? "TP fwd " : "TP bwd ") + mc;
    case OpKind::kP2pSendActivation:
      return op.chunk < 0 ? "send enc act " + std::to_string(op.micro_batch) : "send act " + mc;
    case OpKind::kP2pSendGradient:
      return op.chunk < 0 ? "send enc grad " + std::to_string(op.micro_batch) : "send grad " + mc;
    case OpKind::kDpCollective:
      return "grad sync c" + std::to_string(op.chunk) + " #" + std::to_string(op.bucket);
    case OpKind::kDpAllGather:
      return std::string(op.pass == PassKind::kForward ? "all-gather fwd c" : "all-gather bwd c") +
             std::to_string(op.chunk) +
             (op.micro_batch >= 0
                  ? " mb" + std::to_string(op.micro_batch) + " unit " + std::to_string(op.bucket)
                  : std::string());
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kDispatch:
      return "dispatch mb" + std::to_string(op.micro_batch);
    case OpKind::kP2pRecv:
      return std::string(op.pass == PassKind::kForward ? "wait act " : "wait grad ") + mc;
    case OpKind::kDpWait:
      return "wait grad sync";
    case OpKind::kOptimizer:
      return "optimizer";
    case OpKind::kSpCollective:
      return std::string(op.pass == PassKind::kForward ? "SP fwd " : "SP bwd ") + mc;
    case OpKind::kEncoderForward:
      return "EF" + std::to_string(op.micro_batch);
    case OpKind::kEncoderBackward:
      return "EB" + std::to_string(op.micro_batch);
    case OpKind::kEncoderGradSync:
      return "encoder grad sync";
  }
  return "?";
}

}  // namespace

std::string PerfettoTrace(const std::vector<OpRecord>& ops, const ParallelConfig& parallel,
                          const PerfettoOptions& options) {
  using nlohmann::json;
  const DeviceMesh mesh(parallel);
  const int num_devices = mesh.num_devices();
  const int devices =
      options.max_dp_replicas > 0
          ? std::min(num_devices, mesh.Device(std::min(options.max_dp_replicas, mesh.dp()), 0))
          : num_devices;
  json events = json::array();
  for (int dev = 0; dev < devices; ++dev) {
    const int pid = dev + 1;
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"name", "process_name"},
                      {"args", {{"name", mesh.DeviceName(dev)}}}});
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"name", "process_sort_index"},
                      {"args", {{"sort_index", dev}}}});
    for (int lane = 0; lane < kNumLanes; ++lane)
      events.push_back({{"ph", "M"},
                        {"pid", pid},
                        {"tid", lane + 1},
                        {"name", "thread_name"},
                        {"args", {{"name", kThreadNames[lane]}}}});
  }
  // (device, time ns, delta bytes)
  std::vector<std::tuple<int, int64_t, int64_t>> mem;
  bool have_memory = false;
  for (const OpRecord& op : ops) {
    if (op.device < 0 || op.device >= devices) continue;
    const int64_t ts = Ns(op.start_us), end = Ns(op.start_us + op.duration_us);
    const bool releases = (op.kind == OpKind::kBackward && op.pass != PassKind::kBackwardInput) ||
                          op.kind == OpKind::kBackwardWeight ||
                          op.kind == OpKind::kEncoderBackward;  // the pass that ends the backward
    const bool holds = op.kind == OpKind::kForward || op.kind == OpKind::kEncoderForward;
    if (op.micro_batch >= 0 && (holds || releases)) {
      have_memory = true;
      mem.emplace_back(op.device, end, holds ? op.activation_bytes : -op.activation_bytes);
    }
    if (end <= ts) continue;
    json args = {{"iteration", op.iteration},
                 {"micro_batch", op.micro_batch},
                 {"chunk", op.chunk},
                 {"bytes", op.bytes}};
    if (op.kind == OpKind::kDpCollective) args["bucket"] = op.bucket;
    events.push_back({{"ph", "X"},
                      {"pid", op.device + 1},
                      {"tid", IsWaitKind(op.kind) ? 1 : static_cast<int>(op.lane) + 1},
                      {"name", EventName(op)},
                      {"cat", OpKindName(op.kind)},
                      {"ts", Us(ts)},
                      {"dur", Us(end - ts)},
                      {"args", std::move(args)}});
  }
  std::sort(mem.begin(), mem.end());
  for (int dev = 0; dev < devices && have_memory; ++dev)
    events.push_back({{"ph", "C"},
                      {"pid", dev + 1},
                      {"tid", 1},
                      {"name", "activations"},
                      {"ts", 0.0},
                      {"args", {{"bytes", 0}}}});
  int64_t cur = 0;
  for (size_t i = 0; i < mem.size(); ++i) {
    const auto [dev, t, delta] = mem[i];
    if (i == 0 || std::get<0>(mem[i - 1]) != dev) cur = 0;
    cur += delta;
    const bool last_at_time =
        i + 1 == mem.size() || std::get<0>(mem[i + 1]) != dev || std::get<1>(mem[i + 1]) != t;
    if (!last_at_time) continue;
    events.push_back({{"ph", "C"},
                      {"pid", dev + 1},
                      {"tid", 1},
                      {"name", "activations"},
                      {"ts", Us(t)},
                      {"args", {{"bytes", cur}}}});
  }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump();
}

}  // namespace mmtwin

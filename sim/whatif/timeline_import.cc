// SPDX-License-Identifier: Apache-2.0
// Chrome / Perfetto trace-event JSON as op records (timeline_import.h).
#include "whatif/timeline_import.h"

#include "whatif/timeline_events.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <regex>
#include <tuple>

#include <yaml-cpp/yaml.h>
#ifdef MMTWIN_HAVE_ZLIB
#include <zlib.h>
#endif
#include <nlohmann/json.hpp>

#include "core/graph/op_graph.h"
#include "core/plan/mesh.h"
#include "core/util/csv.h"
#include "core/util/yaml_error.h"

namespace mmtwin {
namespace {

using nlohmann::json;

const std::vector<std::pair<std::string, std::string>>& DefaultMapping() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"forward-compute", "forward"},
      {"backward-compute", "backward"},
      {"forward-recompute", "recompute"},
      {"forward-send", "p2p_send_activation"},
      {"backward-send", "p2p_send_gradient"},
      {"forward-recv", "p2p_recv"},
      {"backward-recv", "p2p_recv"},
      {"grads-reduce-scatter", "dp_collective"},
      {"grads-all-reduce", "dp_collective"},
      {"params-all-gather", "dp_all_gather"},
      {"optimizer", "optimizer"},
      {"forward-backward", "ignore"},
      {"batch-generator", "ignore"},
      {"optimizer-*", "ignore"},
      {"train-step*", "ignore"},
      // PyTorch profiler (Kineto) traces (kineto_import.h): the record_function ranges of the training loop as
      // Holistic Trace Analysis's sample traces name them, c10d's collectives as the profiler records them
      // ("nccl:" + the collective; "gloo:" on CPU), torch.optim's step and zero_grad hooks
      // ("Optimizer.step#SGD.step").
      {"## forward ##", "forward"},
      {"## backward ##", "backward"},
      {"## optimizer ##", "optimizer"},
      {"Optimizer.step#*", "optimizer"},
      {"Optimizer.zero_grad#*", "ignore"},
      {"nccl:all_reduce", "dp_collective"},
      {"nccl:reduce_scatter", "dp_collective"},
      {"nccl:_reduce_scatter_base", "dp_collective"},
      {"nccl:all_gather", "dp_all_gather"},
      {"nccl:_all_gather_base", "dp_all_gather"},
      {"nccl:broadcast", "ignore"},
      {"gloo:all_reduce", "dp_collective"},
      {"gloo:broadcast", "ignore"},
  };
  return m;
}

bool KindByName(const std::string& name, OpKind& out) { return ParseOpKind(name, out); }

}  // namespace

std::string MappedKind(const std::string& name,
                       const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string best;
  size_t best_len = 0;
  for (const auto& [key, kind] : entries) {
    if (key == name) return kind;
    if (!key.empty() && key.back() == '*') {
      const std::string prefix = key.substr(0, key.size() - 1);
      if (name.rfind(prefix, 0) == 0 && prefix.size() + 1 > best_len) {
        best = kind;
        best_len = prefix.size() + 1;
      }
    }
  }
  return best;
}

std::vector<std::pair<std::string, std::string>> TimelineMappingEntries(const ImportOptions& options) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [k, v] : options.mapping) entries.push_back({k, v});
  for (const auto& e : DefaultMapping()) entries.push_back(e);
  return entries;
}

namespace {

Lane LaneOf(OpKind k, const std::string& name) {
  switch (k) {
    case OpKind::kP2pSendActivation:
      return Lane::kP2pForward;
    case OpKind::kP2pSendGradient:
      return Lane::kP2pBackward;
    case OpKind::kP2pRecv:
      return name.find("backward") != std::string::npos || name.find("grad") != std::string::npos
                 ? Lane::kP2pBackward
                 : Lane::kP2pForward;
    case OpKind::kDpCollective:
    case OpKind::kDpAllGather:
    case OpKind::kDpWait:
    case OpKind::kBarrier:
      return Lane::kDp;
    case OpKind::kDispatch:
      return Lane::kDispatch;
    default:
      return Lane::kCompute;
  }
}

const json* Arg(const json& e, std::initializer_list<const char*> keys) {
  auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return nullptr;
  for (const char* k : keys) {
    auto it = a->find(k);
    if (it != a->end() && it->is_number_integer()) return &*it;
  }
  return nullptr;
}

// The string at `key` of an object, "" when absent or not a string (events are any JSON: never throw).
std::string Str(const json& o, const char* key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

// A process-name number: its value up to 1e6 (a larger one is no device of any layout: 1e6).
int SmallInt(const std::string& digits) {
  if (digits.size() > 7) return 1000000;
  return std::stoi(digits);
}

std::string Describe(const std::string& name, size_t index, const json& e) {
  std::string s = name + ": event " + std::to_string(index);
  if (e.contains("name") && e["name"].is_string())
    s += " ('" + e["name"].get<std::string>() + "'";
  else
    s += " (";
  if (e.contains("pid") && e["pid"].is_number_integer())
    s += ", pid " + std::to_string(e["pid"].get<int64_t>());
  if (e.contains("tid") && e["tid"].is_number_integer())
    s += ", tid " + std::to_string(e["tid"].get<int64_t>());
  return s + ")";
}

}  // namespace

namespace {

Result<ImportedTimeline> Import(const std::string& json_text, const std::string& name,
                                const ParallelConfig& parallel, const ImportOptions& options) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return Error(name + ": not valid JSON: " + e.what());
  }
  const json* events = &root;
  if (root.is_object()) {
    auto it = root.find("traceEvents");
    if (it == root.end() || !it->is_array()) return Error(name + ": traceEvents: missing (a Chrome trace)");
    events = &*it;
  }
  if (!events->is_array()) return Error(name + ": expected a trace object or an array of events");
  return ImportTraceEvents(*events, name, parallel, options);
}

}  // namespace

Result<ImportedTimeline> ImportTraceEvents(const nlohmann::json& events_array, const std::string& name,
                                           const ParallelConfig& parallel, const ImportOptions& options) {
  const json* events = &events_array;
  const DeviceMesh mesh(parallel, 0, std::max(1, parallel.sp));
  const int devices = mesh.num_devices();
  const std::vector<std::pair<std::string, std::string>> entries = TimelineMappingEntries(options);

  // Process names first (metadata may follow the events).
  std::map<int64_t, int> device_of_pid;
  static const std::regex kDpStage(R"(dp (\d+) / stage (\d+))"), kRank(R"((?:rank|device) (\d+))");
  for (const json& e : *events) {
    if (!e.is_object() || Str(e, "ph") != "M" || Str(e, "name") != "process_name") continue;
    if (!e.contains("pid") || !e["pid"].is_number_integer()) continue;
    const std::string pname = e.contains("args") ? Str(e["args"], "name") : "";
    std::smatch m;
    if (std::regex_search(pname, m, kDpStage))
      device_of_pid[e["pid"].get<int64_t>()] = mesh.Device(SmallInt(m[1]), SmallInt(m[2]));
    else if (std::regex_search(pname, m, kRank))
      device_of_pid[e["pid"].get<int64_t>()] = SmallInt(m[1]);
  }

  ImportedTimeline out;
  std::map<std::string, int64_t> unknown;
  struct Span {
    double ts, end;
    size_t index;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> spans;     // (pid, tid)
  std::map<std::tuple<int, int, int32_t, int64_t>, int32_t> next_mb;  // (device, kind, chunk, iteration)
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object() || Str(e, "ph") != "X") continue;
    ++out.events;
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number())
      return Error(Describe(name, i, e) + ": ts and dur must be numbers (microseconds)");
    if (!e.contains("pid") || !e["pid"].is_number_integer())
      return Error(Describe(name, i, e) + ": pid: missing (the process is the device)");
    const std::string ename = Str(e, "name");
    OpKind kind;
    const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    if (!KindByName(cat, kind)) {
      const std::string mapped = MappedKind(ename, entries);
      if (mapped == "ignore") {
        ++out.ignored[ename];
        continue;
      }
      if (mapped.empty() || !KindByName(mapped, kind)) {
        ++unknown[ename];
        continue;
      }
    }
    const int64_t pid = e["pid"].get<int64_t>();
    const int64_t tid = e.contains("tid") && e["tid"].is_number_integer() ? e["tid"].get<int64_t>() : 0;
    auto dit = device_of_pid.find(pid);
    const int device = dit != device_of_pid.end() ? dit->second : static_cast<int>(pid - 1);
    if (device < 0 || device >= devices)
      return Error(Describe(name, i, e) + ": device " + std::to_string(device) + " is outside the layout's " +
                   std::to_string(devices) + " devices (name the process \"dp D / stage S\" or \"rank N\")");
    OpRecord r;
    r.source = RecordSource::kMeasured;
    r.kind = kind;
    r.lane = LaneOf(kind, ename);
    r.device = device;
    r.start_us = e["ts"].get<double>();
    r.duration_us = e["dur"].get<double>();
    if (!(r.duration_us >= 0 && r.duration_us <= 1e15) || !(std::abs(r.start_us) <= 1e18))
      return Error(Describe(name, i, e) + ": ts and dur must be finite, dur >= 0 and at most 1e15 us");
    const json* it_arg = Arg(e, {"iteration", "step"});
    if (it_arg && it_arg->get<int64_t>() < 0)
      return Error(Describe(name, i, e) + ": args.iteration " + it_arg->dump() + " is negative");
    r.iteration = it_arg ? it_arg->get<int64_t>() : options.iteration;
    const json* chunk = Arg(e, {"chunk", "model_chunk"});
    if (chunk && (chunk->get<int64_t>() < 0 || chunk->get<int64_t>() >= parallel.chunks()))
      return Error(Describe(name, i, e) + ": args.chunk " + chunk->dump() + " is outside the layout's " +
                   std::to_string(parallel.chunks()) + " chunks");
    // Without the argument, the device's own stage: its only chunk without interleaving (chunk c runs on
    // pipeline rank c % pp), its first with it.
    r.chunk = chunk ? chunk->get<int32_t>() : mesh.PpOfDevice(device);
    const bool per_micro_batch = kind == OpKind::kForward || kind == OpKind::kBackward ||
                                 kind == OpKind::kRecompute || kind == OpKind::kBackwardWeight ||
                                 kind == OpKind::kP2pSendActivation || kind == OpKind::kP2pSendGradient ||
                                 kind == OpKind::kTpCollective || kind == OpKind::kSpCollective ||
                                 kind == OpKind::kDispatch || kind == OpKind::kP2pRecv;
    std::string pass;
    if (auto a = e.find("args"); a != e.end()) pass = Str(*a, "pass");
    const bool backward =
        pass == "backward" || (pass.empty() && (ename.find("bwd") != std::string::npos ||
                                                ename.find("backward") != std::string::npos));
    r.pass = kind == OpKind::kBackward || kind == OpKind::kRecompute ? PassKind::kBackward
             : backward                                              ? PassKind::kBackward
                                                                     : PassKind::kForward;
    if (const json* mb = Arg(e, {"micro_batch", "microbatch", "mb"})) {
      if (mb->get<int64_t>() < -1 || mb->get<int64_t>() >= parallel.micro_batches)
        return Error(Describe(name, i, e) + ": args.micro_batch " + mb->dump() + " is outside the layout's " +
                     std::to_string(parallel.micro_batches) + " micro-batches");
      r.micro_batch = mb->get<int32_t>();
    } else if (per_micro_batch)  // in order per pass: a TP or SP collective runs once in each
      r.micro_batch = next_mb[{device, static_cast<int>(kind) * 2 + (r.pass == PassKind::kForward ? 0 : 1),
                               r.chunk, r.iteration}]++;
    else
      r.micro_batch = -1;
    if (const json* b = Arg(e, {"bytes"})) r.bytes = std::max<int64_t>(0, b->get<int64_t>());
    if (const json* b = Arg(e, {"bucket"}))
      r.bucket = static_cast<int32_t>(std::clamp<int64_t>(b->get<int64_t>(), 0, INT32_MAX));
    // A wait overlaps the transfer it waits for (a trace may draw both on one thread): not a span of work.
    if (!IsWaitKind(kind)) spans[{pid, tid}].push_back({r.start_us, r.start_us + r.duration_us, i});
    out.ops.push_back(r);
  }
  if (!unknown.empty()) {
    std::string list;
    for (const auto& [n, c] : unknown)
      list += (list.empty() ? "" : ", ") + ("'" + n + "' x" + std::to_string(c));
    return Error(name + ": event names that map to no op kind: " + list +
                 " (map them with --map NAME=KIND, or to ignore)");
  }
  for (auto& [key, v] : spans) {
    std::stable_sort(v.begin(), v.end(), [](const Span& a, const Span& b) { return a.ts < b.ts; });
    for (size_t k = 1; k < v.size(); ++k)
      if (v[k].ts < v[k - 1].end - 1e-3)  // ts and dur are written to the nanosecond
        return Error(Describe(name, v[k].index, (*events)[v[k].index]) + ": overlaps " +
                     Describe("", v[k - 1].index, (*events)[v[k - 1].index]).substr(2) +
                     " on the same process and thread");
  }
  std::stable_sort(out.ops.begin(), out.ops.end(), [](const OpRecord& a, const OpRecord& b) {
    return std::tie(a.iteration, a.start_us) < std::tie(b.iteration, b.start_us);
  });
  return out;
}

Result<ImportedTimeline> ImportTimeline(const std::string& json_text, const std::string& name,
                                        const ParallelConfig& parallel, const ImportOptions& options) {
  try {
    return Import(json_text, name, parallel, options);
  } catch (const std::exception& e) {  // a JSON value of an unexpected type the checks above did not catch
    return Error(name + ": not a timeline this reader understands: " + e.what());
  }
}

Result<std::string> ReadTimelineFile(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  if (text.size() < 2 || static_cast<unsigned char>(text[0]) != 0x1f ||
      static_cast<unsigned char>(text[1]) != 0x8b)
    return text;
#ifdef MMTWIN_HAVE_ZLIB
  constexpr uint64_t kMaxBytes = uint64_t{4} << 30;
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Error(path + ": cannot start zlib");  // gzip header, auto
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(text.data());
  z.avail_in = static_cast<uInt>(std::min<size_t>(text.size(), UINT_MAX));
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return Error(path + ": not a readable gzip file (" + (z.msg ? z.msg : "inflate failed") + ")");
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > kMaxBytes) {
      inflateEnd(&z);
      return Error(path + ": inflates to more than 4 GiB; unpack it first if that is right");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      return Error(path + ": the gzip stream ends early (a truncated file?)");
    }
  }
  inflateEnd(&z);
  return out;
#else
  return Error(path +
               ": gzip-compressed, and this mmtwin was built without zlib (Debian: zlib1g-dev); gunzip it "
               "first");
#endif
}

Result<std::map<std::string, std::string>> LoadTimelineMapping(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  MMTWIN_ASSIGN_OR_RETURN(YAML::Node root, LoadStrictYaml(text, path));
  if (!root.IsMap()) return Error(path + ": expected a mapping of event names to op kinds (or ignore)");
  std::map<std::string, std::string> out;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (!kv.second.IsScalar())
      return Error::At(path, LineOf(kv.second), key, "expected an op kind name or ignore");
    const std::string kind = kv.second.Scalar();
    OpKind k;
    if (kind != "ignore" && !KindByName(kind, k))
      return Error::At(
          path, LineOf(kv.second), key,
          "'" + kind +
              "' is not an op kind (forward, backward, recompute, p2p_send_activation, "
              "p2p_send_gradient, p2p_recv, dp_collective, dp_all_gather, dp_wait, tp_collective, "
              "optimizer, dispatch, ...) or ignore");
    out[key] = kind;
  }
  return out;
}

}  // namespace mmtwin

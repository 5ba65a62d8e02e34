// SPDX-License-Identifier: Apache-2.0
// PyTorch profiler (Kineto) traces as op records (kineto_import.h).
#include "whatif/kineto_import.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/graph/op_graph.h"
#include "core/plan/mesh.h"
#include "whatif/timeline_events.h"

namespace mmtwin {
namespace {

using nlohmann::json;

std::string Str(const json& o, const char* key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

bool Num(const json& o, const char* key, double* out) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return true;
}

// An integer argument (args.KEY), or -1.
int64_t IntArg(const json& e, const char* key) {
  auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return -1;
  auto it = a->find(key);
  return it != a->end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

// pid / tid as Kineto writes them: integers, or strings for a few named tracks.
std::string Track(const json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end()) return "";
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_string()) return it->get<std::string>();
  return "";
}

bool IsGpuActivity(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Kernel" ||
         cat == "Memcpy" || cat == "Memset";
}
bool IsLaunch(const std::string& cat) {
  return cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" || cat == "Driver";
}
bool IsGpuSide(const std::string& cat) {
  return IsGpuActivity(cat) || cat == "gpu_user_annotation" || cat == "ac2g" || cat == "gpu_instant";
}

bool IsStep(const std::string& name) { return name.rfind("ProfilerStep#", 0) == 0; }

struct Annotation {
  double ts = 0, end = 0;
  size_t index = 0;  // event index in its trace
  std::string name;
  std::string kind;  // mapped kind name, "ignore", or "" (transparent)
};

// One thread's annotations, sorted by start (an enclosing range before the ranges it holds), each with the
// innermost earlier one that contains it: record_function ranges nest on a thread (a stack), so the ranges that
// contain a time t are the chain of parents from the latest-starting range at or before t.
struct ThreadAnnotations {
  std::vector<Annotation> a;
  std::vector<int32_t> parent;  // index into a, -1 = none

  void Finish() {
    std::stable_sort(a.begin(), a.end(), [](const Annotation& x, const Annotation& y) {
      return x.ts < y.ts || (x.ts == y.ts && x.end > y.end);
    });
    parent.assign(a.size(), -1);
    std::vector<int32_t> stack;
    for (size_t i = 0; i < a.size(); ++i) {
      while (!stack.empty() && a[stack.back()].end < a[i].ts) stack.pop_back();
      parent[i] = stack.empty() ? -1 : stack.back();
      stack.push_back(static_cast<int32_t>(i));
    }
  }
  // The innermost annotation containing t whose kind satisfies `want` (nullptr = none); a mapped one is widened to
  // the outermost of the ranges of its kind directly around it ("## optimizer ##" around "Optimizer.step#..."
  // is one optimizer op).
  template <typename Want>
  const Annotation* Innermost(double t, Want want) const {
    auto it = std::upper_bound(a.begin(), a.end(), t, [](double x, const Annotation& y) { return x < y.ts; });
    for (int32_t k = static_cast<int32_t>(it - a.begin()) - 1; k >= 0; k = parent[k])
      if (a[k].end >= t && want(a[k])) {
        while (a[k].kind != "" && a[k].kind != "ignore" && parent[k] >= 0 && a[parent[k]].kind == a[k].kind)
          k = parent[k];
        return &a[k];
      }
    return nullptr;
  }
  // Whether annotation k sits directly inside a range of its own kind (the op is that range).
  bool InsideItsKind(size_t k) const {
    return a[k].kind != "ignore" && parent[k] >= 0 && a[parent[k]].kind == a[k].kind;
  }
};

struct Step {
  double ts = 0, end = 0;
};

struct OpAcc {
  int64_t iteration = 0;
  double first = std::numeric_limits<double>::infinity(), last = -std::numeric_limits<double>::infinity();
  int64_t activities = 0;
  const Annotation* annotation = nullptr;
};

std::string TraceName(const KinetoTrace& t, size_t i) {
  return t.name.empty() ? "trace " + std::to_string(i) : t.name;
}

std::string Ms(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", us / 1000);
  return b;
}

// One rank's trace as complete events (ImportTraceEvents' input), appended to `out`; counts into `summary`.
Status ConvertTrace(const json& root, const std::string& name, int device,
                    const std::vector<std::pair<std::string, std::string>>& entries,
                    const ImportOptions& options, json* out, ImportedTimeline* summary,
                    std::map<std::string, std::pair<int64_t, double>>* orphan) {
  const json& events = root["traceEvents"];
  std::vector<Step> steps;
  std::string step_pid, step_tid;  // the training loop's thread: the one that opens the profiler steps
  std::unordered_map<int64_t, size_t> launch_of;                                // correlation -> event index
  std::map<std::string, std::map<std::string, ThreadAnnotations>> annotations;  // pid -> tid -> sorted
  std::vector<size_t> activities;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object() || Str(e, "ph") != "X") continue;
    const std::string cat = Str(e, "cat");
    double ts = 0, dur = 0;
    if (!Num(e, "ts", &ts) || !Num(e, "dur", &dur))
      return Error(name + ": event " + std::to_string(i) + " ('" + Str(e, "name") +
                   "'): ts and dur must be numbers (microseconds)");
    if (!(dur >= 0 && dur <= 1e15) || !(std::abs(ts) <= 1e18))
      return Error(name + ": event " + std::to_string(i) + " ('" + Str(e, "name") +
                   "'): ts and dur must be finite, dur >= 0 and at most 1e15 us");
    if (IsGpuActivity(cat)) {
      activities.push_back(i);
    } else if (IsLaunch(cat)) {
      const int64_t c = IntArg(e, "correlation");
      if (c >= 0) launch_of.emplace(c, i);
    } else if (!IsGpuSide(cat)) {
      const std::string ename = Str(e, "name");
      const std::string kind = MappedKind(ename, entries);
      if (IsStep(ename)) {
        steps.push_back({ts, ts + dur});
        step_pid = Track(e, "pid");
        step_tid = Track(e, "tid");
        if (kind.empty()) continue;  // a step is an annotation only where mapped (ProfilerStep#*=ignore)
      }
      if (kind.empty() && cat != "user_annotation")
        continue;  // aten ops and the like: transparent, not listed
      annotations[Track(e, "pid")][Track(e, "tid")].a.push_back({ts, ts + dur, i, ename, kind});
    }
  }
  for (auto& [pid, threads] : annotations)
    for (auto& [tid, t] : threads) t.Finish();
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.ts < b.ts; });
  summary->steps = std::max<int64_t>(summary->steps, static_cast<int64_t>(steps.size()));
  if (!options.step_iterations.empty() && steps.size() > options.step_iterations.size())
    return Error(
        name + ": " + std::to_string(steps.size()) + " profiler steps, and the scenario replays " +
        std::to_string(options.step_iterations.size()) +
        " iterations: the k-th step is the k-th replayed iteration (set the scenario's iterations to " +
        std::to_string(steps.size()) + ")");
  auto iteration_of = [&](double t, int64_t* it) {
    if (steps.empty()) {
      *it = options.iteration;
      return true;
    }
    auto s =
        std::upper_bound(steps.begin(), steps.end(), t, [](double x, const Step& y) { return x < y.ts; });
    if (s == steps.begin() || std::prev(s)->end < t) return false;
    const size_t k = static_cast<size_t>(std::prev(s) - steps.begin());
    *it = k < options.step_iterations.size() ? options.step_iterations[k]
                                             : options.iteration + static_cast<int64_t>(k);
    return true;
  };
  auto mapped = [](const Annotation& a) { return !a.kind.empty(); };
  auto any = [](const Annotation&) { return true; };

  std::map<const Annotation*, OpAcc> ops;
  for (size_t i : activities) {
    const json& e = events[i];
    ++summary->gpu_activities;
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    summary->gpu_busy_us += dur;
    auto l = launch_of.find(IntArg(e, "correlation"));
    if (l == launch_of.end()) {
      ++summary->ignored["(no launch record)"];
      continue;
    }
    const json& launch = events[l->second];
    const double t = launch["ts"].get<double>();
    int64_t iteration = 0;
    if (!iteration_of(t, &iteration)) {
      ++summary->ignored["(outside a profiler step)"];
      continue;
    }
    const std::string pid = Track(launch, "pid"), tid = Track(launch, "tid");
    const Annotation* owner = nullptr;
    auto p = annotations.find(pid);
    if (p != annotations.end()) {
      if (auto th = p->second.find(tid); th != p->second.end()) owner = th->second.Innermost(t, mapped);
      if (!owner && !steps.empty() && pid == step_pid) {  // the training loop's range around the launch
        if (auto th = p->second.find(step_tid); th != p->second.end())
          owner = th->second.Innermost(t, mapped);
      } else if (!owner) {  // no profiler steps: the shortest range around it on any thread
        for (const auto& [other, th] : p->second) {
          if (other == tid) continue;
          const Annotation* c = th.Innermost(t, mapped);
          if (c && (!owner || c->end - c->ts < owner->end - owner->ts)) owner = c;
        }
      }
    }
    if (!owner) {
      // Name what the user would map: the innermost annotation around the launch on its own thread, else on any.
      const Annotation* inner = nullptr;
      if (p != annotations.end()) {
        if (auto th = p->second.find(tid); th != p->second.end()) inner = th->second.Innermost(t, any);
        if (!inner)
          for (const auto& [other, th] : p->second) {
            const Annotation* c = th.Innermost(t, any);
            if (c && (!inner || c->end - c->ts < inner->end - inner->ts)) inner = c;
          }
      }
      auto& o = (*orphan)[inner ? inner->name : "(no annotation)"];
      ++o.first;
      o.second += dur;
      continue;
    }
    if (owner->kind == "ignore") {
      ++summary->ignored[owner->name];
      continue;
    }
    OpAcc& acc = ops[owner];
    acc.annotation = owner;
    acc.iteration = iteration;
    acc.first = std::min(acc.first, ts);
    acc.last = std::max(acc.last, ts + dur);
    ++acc.activities;
  }

  auto emit = [&](const Annotation& a, int64_t iteration, double ts, double dur) {
    OpKind k = OpKind::kForward;
    ParseOpKind(a.kind, k);
    json ev = {{"ph", "X"},
               {"name", a.name + " @ " + name + " event " + std::to_string(a.index)},
               {"cat", a.kind},
               {"pid", device + 1},
               {"tid", static_cast<int>(k)},  // one track per op kind: kinds on different streams may overlap
               {"ts", ts},
               {"dur", dur},
               {"args", {{"iteration", iteration}}}};
    // The pass of a collective or gather from the annotation's own name (not the file's).
    if (a.name.find("backward") != std::string::npos || a.name.find("bwd") != std::string::npos)
      ev["args"]["pass"] = "backward";
    else
      ev["args"]["pass"] = "forward";
    out->push_back(std::move(ev));
  };
  if (activities.empty()) {  // a CPU-only trace: the mapped annotations are the ops
    for (const auto& [pid, threads] : annotations)
      for (const auto& [tid, th] : threads)
        for (size_t k = 0; k < th.a.size(); ++k) {
          const Annotation& a = th.a[k];
          if (a.kind.empty() || th.InsideItsKind(k)) continue;
          if (a.kind == "ignore") {
            ++summary->ignored[a.name];
            continue;
          }
          int64_t iteration = 0;
          if (!iteration_of(a.ts, &iteration)) {
            ++summary->ignored["(outside a profiler step)"];
            continue;
          }
          emit(a, iteration, a.ts, a.end - a.ts);
          summary->op_span_us += a.end - a.ts;
        }
    return Status();
  }
  std::vector<const OpAcc*> sorted;
  for (const auto& [a, acc] : ops) sorted.push_back(&acc);
  std::sort(sorted.begin(), sorted.end(), [](const OpAcc* x, const OpAcc* y) {
    return x->first < y->first || (x->first == y->first && x->annotation->index < y->annotation->index);
  });
  for (const OpAcc* acc : sorted) {
    emit(*acc->annotation, acc->iteration, acc->first, acc->last - acc->first);
    summary->attributed_activities += acc->activities;
    summary->op_span_us += acc->last - acc->first;
  }
  return Status();
}

Result<ImportedTimeline> Import(const std::vector<KinetoTrace>& traces, const ParallelConfig& parallel,
                                const ImportOptions& options) {
  if (traces.empty()) return Error("no PyTorch profiler trace given");
  const DeviceMesh mesh(parallel, 0, std::max(1, parallel.sp));
  const auto entries = TimelineMappingEntries(options);
  json events = json::array();
  ImportedTimeline summary;
  std::map<std::string, std::pair<int64_t, double>> orphan;  // innermost annotation -> activities, GPU us
  std::map<int, std::string> file_of_rank;
  std::set<int> devices_seen;
  int64_t skipped_tp = 0;
  for (size_t i = 0; i < traces.size(); ++i) {
    const std::string name = TraceName(traces[i], i);
    json root;
    try {
      root = json::parse(traces[i].text);
    } catch (const json::parse_error& e) {
      return Error(name + ": not valid JSON: " + e.what());
    }
    if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array())
      return Error(name + ": traceEvents: missing (a PyTorch profiler trace is an object with traceEvents)");
    int64_t rank = static_cast<int64_t>(i);
    if (auto d = root.find("distributedInfo"); d != root.end() && d->is_object()) {
      if (auto r = d->find("rank"); r != d->end()) {
        if (!r->is_number_integer()) return Error(name + ": distributedInfo.rank: expected an integer");
        rank = r->get<int64_t>();
      }
      if (auto w = d->find("world_size");
          w != d->end() && w->is_number_integer() && w->get<int64_t>() != mesh.world_size())
        return Error(name + ": distributedInfo.world_size " + std::to_string(w->get<int64_t>()) +
                     " is not the scenario's " + std::to_string(mesh.world_size()) + " ranks (tp " +
                     std::to_string(mesh.tp()) + " x sp " + std::to_string(mesh.sp()) + " x dp " +
                     std::to_string(mesh.dp()) + " x pp " + std::to_string(mesh.pp()) + ")");
    }
    if (rank < 0 || rank >= mesh.world_size())
      return Error(name + ": rank " + std::to_string(rank) + " is outside the scenario's " +
                   std::to_string(mesh.world_size()) + " ranks");
    const int r = static_cast<int>(rank);
    if (auto [it, fresh] = file_of_rank.emplace(r, name); !fresh)
      return Error(name + ": rank " + std::to_string(r) + " again (" + it->second + " is rank " +
                   std::to_string(r) + " too)");
    if (mesh.Coord(r).tp != 0) {  // the TP group's first rank stands for its device
      ++skipped_tp;
      continue;
    }
    const int device = mesh.DeviceOfRank(r);
    devices_seen.insert(device);
    MMTWIN_RETURN_IF_ERROR(ConvertTrace(root, name, device, entries, options, &events, &summary, &orphan));
  }
  if (!orphan.empty()) {
    std::string list;
    for (const auto& [n, c] : orphan)
      list += (list.empty() ? "" : ", ") +
              ("'" + n + "' x" + std::to_string(c.first) + " (" + Ms(c.second) + " ms)");
    return Error("GPU work under no mapped annotation, by the innermost range around its launch: " + list +
                 " (map them with --map NAME=KIND or NAME=ignore; ProfilerStep#*=ignore drops the rest)");
  }
  const std::string name = traces.size() == 1 ? TraceName(traces[0], 0)
                                              : std::to_string(traces.size()) + " PyTorch profiler traces";
  MMTWIN_ASSIGN_OR_RETURN(ImportedTimeline out, ImportTraceEvents(events, name, parallel, options));
  out.gpu_activities = summary.gpu_activities;
  out.attributed_activities = summary.attributed_activities;
  out.gpu_busy_us = summary.gpu_busy_us;
  out.op_span_us = summary.op_span_us;
  out.steps = summary.steps;
  out.devices_without_trace = mesh.num_devices() - static_cast<int64_t>(devices_seen.size());
  for (const auto& [n, c] : summary.ignored) out.ignored[n] += c;
  if (skipped_tp > 0) out.ignored["(tensor-parallel ranks other than the first)"] += skipped_tp;
  return out;
}

}  // namespace

bool LooksLikeKineto(const std::string& text) {
  const std::string head = text.substr(0, 1 << 16);
  if (head.find("traceEvents") == std::string::npos) return false;
  for (const char* key : {"\"schemaVersion\"", "\"deviceProperties\"", "\"distributedInfo\"",
                          "\"baseTimeNanoseconds\"", "\"cuda_runtime\"", "\"user_annotation\""})
    if (head.find(key) != std::string::npos) return true;
  return false;
}

Result<ImportedTimeline> ImportKineto(const std::vector<KinetoTrace>& traces, const ParallelConfig& parallel,
                                      const ImportOptions& options) {
  try {
    return Import(traces, parallel, options);
  } catch (const std::exception& e) {  // a JSON value of an unexpected type the checks did not catch
    return Error("not a PyTorch profiler trace this reader understands: " + std::string(e.what()));
  }
}

}  // namespace mmtwin

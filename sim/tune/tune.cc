// SPDX-License-Identifier: Apache-2.0
// Data-aware configuration search (tune.h).
#include "tune/tune.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <numeric>
#include <set>

#include "core/cluster/cluster.h"
#include "core/model/model.h"
#include "core/plan/memory.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "core/util/text.h"
#include "core/util/yaml_error.h"
#include "driver/planner.h"
#include "driver/time_bound.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

// The largest world a tune space may ask for (core/scenario's own limit is checked per candidate).
constexpr int64_t kMaxTuneGpus = int64_t{1} << 20;
// Candidates one space may enumerate: a bigger space is an error naming its size.
constexpr int64_t kMaxTuneCombinations = 1'000'000;

// "parallel.tp: 3 does not divide 8" -> "parallel.tp: N does not divide N": the checker's reason (ExpandRun's
// message after its "[run ...]: " prefix) with its numbers generalized, so equal reasons count together.
std::string Reason(const std::string& m) {
  std::string out;
  for (size_t i = 0; i < m.size();) {
    if (std::isdigit(static_cast<unsigned char>(m[i]))) {
      while (i < m.size() && (std::isdigit(static_cast<unsigned char>(m[i])) || m[i] == '.')) ++i;
      out += 'N';
    } else {
      out += m[i++];
    }
  }
  return out;
}

// The axis value of `key` for a candidate, else the base's value.
int64_t LayoutValue(const TuneSpace& space, const std::vector<size_t>& pick, const std::string& key,
                    int64_t base_value) {
  for (size_t a = 0; a < space.sweep.axes.size(); ++a)
    if (space.sweep.axes[a].key == key) {
      int64_t v = 0;
      return ParseInt64(space.sweep.axes[a].values[pick[a]], v) ? v : -1;
    }
  return base_value;
}

}  // namespace

const char* TuneObjectiveName(TuneObjective o) {
  switch (o) {
    case TuneObjective::kGpuDays:
      return "gpu_days";
    case TuneObjective::kTokensPerS:
      return "tokens_per_s";
    case TuneObjective::kIterationTime:
      return "iteration_time";
  }
  return "?";
}

bool TuneBetter(TuneObjective o, double a, double b) {
  return o == TuneObjective::kTokensPerS ? a > b : a < b;
}

Result<TuneSpace> ParseTuneSpace(const std::string& yaml_text, const std::string& name,
                                 const std::string& base_dir) {
  TuneSpace space;
  MMTWIN_ASSIGN_OR_RETURN(space.sweep,
                          ParseSweep(yaml_text, name, base_dir, {"gpus", "constraints", "objective"}));
  MMTWIN_ASSIGN_OR_RETURN(const YAML::Node root, LoadStrictYaml(yaml_text, name));
  if (space.sweep.zip)
    return Error::At(name, LineOf(root["mode"]), "mode",
                     "a tune space combines every axis (cartesian); leave mode out");
  for (const SweepAxis& a : space.sweep.axes)
    if (a.key == "parallel.dp" || a.key == "cluster.nodes" || a.key == "cluster")
      return Error::At(name, a.line, "axes",
                       a.key +
                           " is derived by the search (dp = gpus / (tp x pp x sp), nodes as needed); "
                           "give gpus instead");
  const YAML::Node g = root["gpus"];
  if (!g) return Error::At(name, LineOf(root), "gpus", "missing: the GPU counts to try, e.g. gpus: [16, 32]");
  std::vector<YAML::Node> items;
  if (g.IsScalar()) {
    items.push_back(g);
  } else if (g.IsSequence() && g.size() > 0) {
    for (size_t i = 0; i < g.size(); ++i) items.push_back(g[i]);
  } else {
    return Error::At(name, LineOf(g), "gpus", "expected a GPU count or a non-empty list of them");
  }
  for (const YAML::Node& n : items) {
    int64_t v = 0;
    if (!n.IsScalar() || !ParseInt64(n.Scalar(), v) || v < 1 || v > kMaxTuneGpus)
      return Error::At(name, LineOf(n), "gpus",
                       "'" + (n.IsScalar() ? Abbreviate(n.Scalar()) : std::string("?")) +
                           "' is not a GPU count (1 to " + std::to_string(kMaxTuneGpus) + ")");
    space.gpus.push_back(v);
  }
  std::sort(space.gpus.begin(), space.gpus.end());
  space.gpus.erase(std::unique(space.gpus.begin(), space.gpus.end()), space.gpus.end());
  if (const YAML::Node c = root["constraints"]) {
    MMTWIN_RETURN_IF_ERROR(CheckKeys(c, name, "constraints", {"memory_headroom", "micro_batches_per_step"}));
    if (const YAML::Node m = c["micro_batches_per_step"]) {
      int64_t v = 0;
      if (!m.IsScalar() || !ParseInt64(m.Scalar(), v) || v < 1 || v > (int64_t{1} << 24))
        return Error::At(name, LineOf(m), "constraints.micro_batches_per_step",
                         "expected the micro-batches of one step over all DP ranks (dp x micro_batches), a "
                         "positive whole number");
      for (const SweepAxis& a : space.sweep.axes)
        if (a.key == "parallel.micro_batches")
          return Error::At(
              name, a.line, "axes",
              "parallel.micro_batches is derived when constraints.micro_batches_per_step keeps the "
              "global batch (micro_batches = it / dp); drop the axis or the constraint");
      space.micro_batches_per_step = v;
    }
    if (const YAML::Node h = c["memory_headroom"]) {
      double v = 0;
      if (!h.IsScalar() || !ParseDouble(h.Scalar(), v) || !(v >= 0 && v <= 0.9))
        return Error::At(name, LineOf(h), "constraints.memory_headroom",
                         "expected the fraction of each GPU's memory to keep free, 0 to 0.9");
      space.memory_headroom = v;
    }
  }
  if (const YAML::Node o = root["objective"]) {
    const std::string v = o.IsScalar() ? o.Scalar() : "";
    if (v == "gpu_days")
      space.objective = TuneObjective::kGpuDays;
    else if (v == "tokens_per_s")
      space.objective = TuneObjective::kTokensPerS;
    else if (v == "iteration_time")
      space.objective = TuneObjective::kIterationTime;
    else
      return Error::At(name, LineOf(o), "objective",
                       "unknown objective '" + Abbreviate(v) +
                           "'; valid values are: gpu_days, tokens_per_s, iteration_time");
  }
  const int64_t per_gpus = SweepSize(space.sweep);
  if (per_gpus > kMaxTuneCombinations / static_cast<int64_t>(space.gpus.size()))
    return Error::At(name, LineOf(root["axes"]), "axes",
                     "the space has more than " + std::to_string(kMaxTuneCombinations) +
                         " combinations; narrow an axis or split the space");
  return space;
}

Result<TuneSpace> LoadTuneSpace(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Error(path + ": tune space not found");
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const std::string dir = fs::path(path).parent_path().string();
  return ParseTuneSpace(text, path, dir.empty() ? "." : dir);
}

Result<int64_t> MemoryLowerBoundBytes(const Scenario& scenario) {
  MMTWIN_ASSIGN_OR_RETURN(const ModelSpec model, LoadScenarioModel(scenario));
  MMTWIN_ASSIGN_OR_RETURN(const ClusterSpec cluster, LoadScenarioCluster(scenario));
  int64_t params = 0, frozen = 0;
  for (const Layer& l : Layers(model)) {
    params += l.params;
    if (l.frozen) frozen += l.params;
  }
  const int64_t pp = std::max(1, scenario.parallel.pp);
  const int64_t heaviest_at_least = (params + pp - 1) / pp;
  // A frozen parameter costs at most a trained one's bytes: the bound lets the heaviest rank hold as many of
  // them as there are.
  return ModelStateBytes(scenario.parallel, heaviest_at_least, std::min(frozen, heaviest_at_least)) +
         cluster.device.cuda_context_bytes;
}

Result<TuneEnumeration> EnumerateTune(const TuneSpace& space, bool prune) {
  TuneEnumeration e;
  const SweepSpec& sw = space.sweep;
  MMTWIN_ASSIGN_OR_RETURN(const Scenario base, ParseScenario(sw.base_text, sw.base_name, sw.base_dir));
  const int64_t per_gpus = SweepSize(sw);
  e.combinations = per_gpus * static_cast<int64_t>(space.gpus.size());
  // One zip sweep per candidate would re-read the base each time; instead each candidate is one run of a
  // one-run zip sweep over the same base (ExpandRun validates it exactly as the evaluation will).
  std::map<std::string, size_t> group;  // PreparedDataKey -> its group number
  std::vector<size_t> group_of;         // per e.evaluate entry
  for (size_t g = 0; g < space.gpus.size(); ++g) {
    const int64_t gpus = space.gpus[g];
    for (int64_t i = 0; i < per_gpus; ++i) {
      std::vector<size_t> pick(sw.axes.size(), 0);
      int64_t rest = i;
      for (size_t a = sw.axes.size(); a-- > 0;) {
        const int64_t len = static_cast<int64_t>(sw.axes[a].values.size());
        pick[a] = static_cast<size_t>(rest % len);
        rest /= len;
      }
      TuneCandidate c;
      c.index = static_cast<int64_t>(g) * per_gpus + i;
      c.gpus = gpus;
      for (size_t a = 0; a < sw.axes.size(); ++a) {
        c.values.push_back(sw.axes[a].values[pick[a]]);
        c.labels.push_back(sw.axes[a].labels[pick[a]]);
      }
      const int64_t tp = LayoutValue(space, pick, "parallel.tp", base.parallel.tp);
      const int64_t pp = LayoutValue(space, pick, "parallel.pp", base.parallel.pp);
      const int64_t sp = LayoutValue(space, pick, "parallel.sp", base.parallel.sp);
      if (tp < 1 || pp < 1 || sp < 1) {
        ++e.rejected["parallel.tp, pp or sp: not a positive whole number"];
        continue;
      }
      if (gpus % (tp * pp * sp) != 0) {
        ++e.rejected["gpus not divisible by tp x pp x sp"];
        continue;
      }
      c.dp = gpus / (tp * pp * sp);
      if (space.micro_batches_per_step > 0) {
        if (space.micro_batches_per_step % c.dp != 0) {
          ++e.rejected
                ["constraints.micro_batches_per_step not divisible by dp (the global batch cannot be kept)"];
          continue;
        }
        c.micro_batches = space.micro_batches_per_step / c.dp;
      }
      SweepSpec one = sw;
      one.zip = true;
      for (size_t a = 0; a < one.axes.size(); ++a) {
        one.axes[a].values = {c.values[a]};
        one.axes[a].labels = {c.labels[a]};
      }
      one.axes.push_back({"parallel.dp", "dp", {std::to_string(c.dp)}, {std::to_string(c.dp)}, 0});
      one.axes.push_back({"cluster.nodes", "nodes", {"0"}, {"0"}, 0});
      if (c.micro_batches > 0)
        one.axes.push_back({"parallel.micro_batches",
                            "micro_batches",
                            {std::to_string(c.micro_batches)},
                            {std::to_string(c.micro_batches)},
                            0});
      const SweepRun run = ExpandRun(one, 0);
      if (!run.error.empty()) {
        const std::string where = (sw.path.empty() ? sw.base_name : sw.path) + " [run 0";
        std::string reason = run.error;
        const size_t close = reason.find("]: ");
        if (reason.rfind(where, 0) == 0 && close != std::string::npos) reason = reason.substr(close + 3);
        ++e.rejected[Reason(reason)];
        continue;
      }
      c.run_key = run.key;
      const std::string data_key = PreparedDataKey(run.scenario);
      MMTWIN_ASSIGN_OR_RETURN(const ClusterSpec cluster, LoadScenarioCluster(run.scenario));
      // What a framework refuses although mmtwin can price it (a note there): Megatron-LM asserts that tp
      // divides the LLM's attention heads (and KV heads), and a TP group that straddles nodes runs its
      // collectives on the NICs, which no recipe does.
      MMTWIN_ASSIGN_OR_RETURN(const ModelSpec model, LoadScenarioModel(run.scenario));
      if (const Component* llm = model.Find(ComponentKind::kLlm);
          llm && !TpDividesHeads(llm->tf, static_cast<int>(tp))) {
        ++e.rejected["tp does not divide the LLM's attention (or KV) heads (Megatron-LM requires it)"];
        continue;
      }
      if (cluster.gpus_per_node % tp != 0) {
        ++e.rejected["tp does not divide the GPUs per node (a TP group would straddle nodes)"];
        continue;
      }
      MMTWIN_ASSIGN_OR_RETURN(c.memory_bound_bytes, MemoryLowerBoundBytes(run.scenario));
      c.memory_limit_bytes = static_cast<int64_t>(static_cast<double>(cluster.device.memory_bytes) *
                                                  (1 - space.memory_headroom));
      if (prune && c.memory_bound_bytes > c.memory_limit_bytes) {
        e.pruned.push_back(std::move(c));
      } else {
        c.data_group = static_cast<int64_t>(group.try_emplace(data_key, group.size()).first->second);
        group_of.push_back(static_cast<size_t>(c.data_group));
        e.evaluate.push_back(std::move(c));
      }
    }
  }
  // Evaluation order: by data-plan group (numbered in order of first appearance), enumeration order within.
  std::vector<size_t> order(e.evaluate.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return group_of[a] < group_of[b]; });
  std::vector<TuneCandidate> grouped;
  grouped.reserve(order.size());
  for (size_t k : order) grouped.push_back(std::move(e.evaluate[k]));
  e.evaluate = std::move(grouped);
  return e;
}

SweepSpec EvaluationSweep(const TuneSpace& space, const TuneEnumeration& e) {
  SweepSpec s = space.sweep;
  s.zip = true;
  for (size_t a = 0; a < s.axes.size(); ++a) {
    s.axes[a].values.clear();
    s.axes[a].labels.clear();
    for (const TuneCandidate& c : e.evaluate) {
      s.axes[a].values.push_back(c.values[a]);
      s.axes[a].labels.push_back(c.labels[a]);
    }
  }
  SweepAxis dp{"parallel.dp", "dp", {}, {}, 0}, nodes{"cluster.nodes", "nodes", {}, {}, 0};
  for (const TuneCandidate& c : e.evaluate) {
    dp.values.push_back(std::to_string(c.dp));
    dp.labels.push_back(std::to_string(c.dp));
    nodes.values.push_back("0");
    nodes.labels.push_back("0");
  }
  s.axes.push_back(std::move(dp));
  s.axes.push_back(std::move(nodes));
  if (space.micro_batches_per_step > 0) {  // as EnumerateTune added it, in the same place
    SweepAxis mb{"parallel.micro_batches", "micro_batches", {}, {}, 0};
    for (const TuneCandidate& c : e.evaluate) {
      mb.values.push_back(std::to_string(c.micro_batches));
      mb.labels.push_back(std::to_string(c.micro_batches));
    }
    s.axes.push_back(std::move(mb));
  }
  return s;
}

std::string TuneAxesLabel(const TuneSpace& space, const TuneCandidate& c) {
  std::string s;
  for (size_t a = 0; a < space.sweep.axes.size() && a < c.labels.size(); ++a)
    s += (a ? ", " : "") + space.sweep.axes[a].name + "=" + c.labels[a];
  return s;
}

std::string TuneCandidateLabel(const TuneSpace& space, const TuneCandidate& c) {
  std::string s = "gpus=" + std::to_string(c.gpus) + ", dp=" + std::to_string(c.dp);
  if (c.micro_batches > 0) s += ", micro_batches=" + std::to_string(c.micro_batches);
  const std::string axes = TuneAxesLabel(space, c);
  return axes.empty() ? s : s + ", " + axes;
}

double TuneObjectiveOf(TuneObjective o, const RunSummary& s) {
  switch (o) {
    case TuneObjective::kGpuDays:
      return s.gpu_days;
    case TuneObjective::kTokensPerS:
      return s.tokens_per_s;
    case TuneObjective::kIterationTime:
      return s.iteration_time_us.mean / 1e3;
  }
  return 0;
}

SweepSpec RecheckSweep(const TuneSpace& space, const std::vector<TuneRow>& rows, const std::string& engine) {
  TuneEnumeration e;
  for (const TuneRow& r : rows) e.evaluate.push_back(*r.candidate);
  SweepSpec s = EvaluationSweep(space, e);
  s.name += "-" + engine;
  SweepAxis axis{"engine", "engine", {}, {}, 0};
  for (size_t i = 0; i < rows.size(); ++i) {
    axis.values.push_back(engine);
    axis.labels.push_back(engine);
  }
  s.axes.push_back(std::move(axis));
  return s;
}

std::vector<double> RecheckObjectives(const TuneSpace& space, const SweepSpec& recheck,
                                      const std::vector<RunRecord>& records) {
  std::map<std::string, const RunRecord*> by_key;
  for (const RunRecord& r : records)
    if (r.status == "ok" && r.summary) by_key[r.run_key] = &r;
  std::vector<double> out;
  for (int64_t i = 0; i < SweepSize(recheck); ++i) {
    const SweepRun run = ExpandRun(recheck, i);
    auto it = by_key.find(run.key);
    out.push_back(it == by_key.end() ? std::numeric_limits<double>::quiet_NaN()
                                     : TuneObjectiveOf(space.objective, *it->second->summary));
  }
  return out;
}

namespace {

// A candidate's row from its run's summary: objective, worst stage's peak, and whether it fits.
TuneRow RowOf(const TuneSpace& space, const TuneCandidate& c, const RunSummary& summary) {
  TuneRow row;
  row.candidate = &c;
  row.summary = summary;
  row.objective = TuneObjectiveOf(space.objective, summary);
  row.fits = !summary.oom;
  for (const StageRecord& st : summary.stages) {
    row.peak_memory_bytes = std::max(row.peak_memory_bytes, st.peak_memory_bytes);
    if (st.peak_memory_bytes > c.memory_limit_bytes) row.fits = false;
  }
  return row;
}

// A time bound in the objective's unit (TuneCandidate::time_bound); NaN without one.
double ObjectiveBound(TuneObjective o, const TimeBound& b, int64_t gpus) {
  if (!b.bounded || !(b.iteration_us > 0)) return std::numeric_limits<double>::quiet_NaN();
  switch (o) {
    case TuneObjective::kGpuDays:  // as RunSummary: epoch_time_s * world / 86400
      return b.iteration_us * 1e-6 * static_cast<double>(b.iterations_in_epoch) * static_cast<double>(gpus) /
             86400.0;
    case TuneObjective::kTokensPerS:
      return b.tokens / (static_cast<double>(b.replayed) * b.iteration_us * 1e-6);
    case TuneObjective::kIterationTime:
      return b.iteration_us / 1e3;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// The fitting runs evaluated so far, for the skip test: objectives best first, and per prefix the least peak.
class Incumbents {
 public:
  explicit Incumbents(TuneObjective o) : o_(o) {}
  void Add(double objective, int64_t peak_bytes) {
    rows_.emplace_back(objective, peak_bytes);
    dirty_ = true;
  }
  // Whether a candidate with this bound and memory bound cannot change the best `keep` rows, the runner-up or
  // the Pareto front (EvaluateTune).
  bool Skips(double bound, int64_t memory_bound_bytes, int keep) {
    if (!std::isfinite(bound)) return false;
    if (dirty_) Sort();
    // Rows strictly better than the bound: a prefix of the sorted rows.
    size_t n = 0, lo = 0, hi = rows_.size();
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (TuneBetter(o_, rows_[mid].first, bound))
        lo = n = mid + 1;
      else
        hi = mid;
    }
    if (n < static_cast<size_t>(std::max(2, keep))) return false;
    if (rows_[0].first == rows_[n - 1].first) return false;  // all tied with the best: the runner-up is open
    return least_peak_[n - 1] < memory_bound_bytes;
  }

 private:
  void Sort() {
    std::stable_sort(rows_.begin(), rows_.end(),
                     [&](const auto& a, const auto& b) { return TuneBetter(o_, a.first, b.first); });
    least_peak_.resize(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i)
      least_peak_[i] = i ? std::min(least_peak_[i - 1], rows_[i].second) : rows_[i].second;
    dirty_ = false;
  }
  TuneObjective o_;
  std::vector<std::pair<double, int64_t>> rows_;
  std::vector<int64_t> least_peak_;
  bool dirty_ = false;
};

void AddOutcome(SweepOutcome& sum, const SweepOutcome& o) {
  sum.in_shard = o.in_shard;
  sum.expanded += o.expanded;
  sum.skipped += o.skipped;
  sum.executed += o.executed;
  sum.errors += o.errors;
  sum.stopped = o.stopped;
  sum.interrupted = o.interrupted;
  sum.prepared += o.prepared;
  sum.prepare_seconds += o.prepare_seconds;
  sum.shared_runs += o.shared_runs;
  sum.run_seconds += o.run_seconds;
}

}  // namespace

Result<TuneEvaluation> EvaluateTune(const TuneSpace& space, TuneEnumeration& e, ResultsDb& db,
                                    const TuneEvaluateOptions& o) {
  TuneEvaluation out;
  const SweepSpec spec = EvaluationSweep(space, e);
  const SweepRunOptions& so = o.sweep;
  if (!o.time_prune) {
    MMTWIN_ASSIGN_OR_RETURN(out.outcome, RunSweep(spec, db, so));
    out.waves = 1;
    out.interrupted = out.outcome.interrupted;
    MMTWIN_ASSIGN_OR_RETURN(out.records, db.Runs(spec.name));
    return out;
  }
  const size_t n = e.evaluate.size();
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // 1. Bounds: each data group's plan prepared once (on the trace of the one before), every member bounded.
  std::map<int64_t, std::vector<size_t>> groups;  // data_group -> members, enumeration order
  for (size_t i = 0; i < n; ++i)
    if (InShard(static_cast<int>(i), so.shard, so.shards)) groups[e.evaluate[i].data_group].push_back(i);
  std::shared_ptr<const PreparedData> last;
  for (auto& [g, members] : groups) {
    if (so.cancel && so.cancel->load()) {
      out.interrupted = true;
      return out;
    }
    std::vector<SweepRun> runs;
    for (size_t i : members) runs.push_back(ExpandRun(spec, static_cast<int64_t>(i)));
    if (!runs[0].error.empty()) continue;  // the evaluation records the error
    auto prepared = PrepareData(runs[0].scenario, so.cancel, last.get());
    if (!prepared) continue;  // likewise: no bound
    ++out.prepared;
    last = *prepared;
    TimeBoundCache cache;
    for (size_t k = 0; k < members.size(); ++k) {
      if (!runs[k].error.empty()) continue;
      auto b = IterationTimeLowerBound(runs[k].scenario, **prepared, &cache);
      if (!b) continue;
      TuneCandidate& c = e.evaluate[members[k]];
      c.time_bound = ObjectiveBound(space.objective, *b, c.gpus);
      if (std::isfinite(c.time_bound)) ++out.bounded;
    }
  }
  last.reset();
  out.bound_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  // 2. Order: groups by their best bound, members best bound first (no bound last; ties in enumeration order).
  auto before = [&](double a, double b) {
    if (!std::isfinite(b)) return std::isfinite(a);
    return std::isfinite(a) && TuneBetter(space.objective, a, b);
  };
  std::vector<std::vector<size_t>> order;
  for (auto& [g, members] : groups) {
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return before(e.evaluate[a].time_bound, e.evaluate[b].time_bound);
    });
    order.push_back(members);
  }
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return before(e.evaluate[a[0]].time_bound, e.evaluate[b[0]].time_bound);
  });
  // 3. Waves. The runs already in the database count from the start.
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < n; ++i) by_key[e.evaluate[i].run_key] = i;
  Incumbents incumbents(space.objective);
  std::vector<char> skipped(n, 0);
  auto take = [&](size_t i, const RunSummary& summary) {
    const TuneRow row = RowOf(space, e.evaluate[i], summary);
    if (row.fits) incumbents.Add(row.objective, row.peak_memory_bytes);
  };
  {
    MMTWIN_ASSIGN_OR_RETURN(const std::vector<RunRecord> known, db.Runs(spec.name));
    for (const RunRecord& r : known)
      if (auto it = by_key.find(r.run_key); it != by_key.end() && r.status == "ok" && r.summary)
        take(it->second, *r.summary);
  }
  int64_t undecided = 0;
  for (const auto& members : order) undecided += static_cast<int64_t>(members.size());
  int done = 0, errors = 0;
  const auto w0 = Clock::now();
  for (const std::vector<size_t>& members : order) {
    std::shared_ptr<const PreparedData> prepared;  // the group's, made at its first wave
    for (size_t next = 0; next < members.size();) {
      std::set<int64_t> wave;
      for (; next < members.size() && wave.size() < static_cast<size_t>(TuneWaveSize(so.jobs)); ++next) {
        const size_t i = members[next];
        --undecided;
        if (incumbents.Skips(e.evaluate[i].time_bound, e.evaluate[i].memory_bound_bytes, o.keep))
          skipped[i] = 1;
        else
          wave.insert(static_cast<int64_t>(i));
      }
      if (wave.empty()) continue;
      if (!prepared) {
        const SweepRun first = ExpandRun(spec, *wave.begin());
        if (first.error.empty())
          if (auto p = PrepareData(first.scenario, so.cancel); p) prepared = *p;
      }
      SweepRunOptions wo = so;
      if (so.stop_after > 0) wo.stop_after = std::max(1, so.stop_after - done);  // counted over the waves
      wo.include = [&wave](int64_t i) { return wave.count(i) > 0; };
      wo.prepared = prepared;
      const int done_before = done;
      const int64_t left_after = undecided;
      wo.progress = [&](const SweepProgress& p) {
        ++done;
        if (p.record->status != "ok") ++errors;
        if (auto it = by_key.find(p.run->key);
            it != by_key.end() && p.record->status == "ok" && p.record->summary)
          take(it->second, *p.record->summary);
        if (!so.progress) return;
        SweepProgress q = p;
        q.done = done;
        q.errors = errors;
        q.total = static_cast<int>(done_before + p.total + left_after);
        q.elapsed_seconds = std::chrono::duration<double>(Clock::now() - w0).count();
        q.eta_seconds = q.elapsed_seconds / q.done * (q.total - q.done);
        so.progress(q);
      };
      MMTWIN_ASSIGN_OR_RETURN(const SweepOutcome w, RunSweep(spec, db, wo));
      AddOutcome(out.outcome, w);
      ++out.waves;
      if (w.interrupted || w.stopped) {
        out.interrupted = w.interrupted;
        MMTWIN_ASSIGN_OR_RETURN(out.records, db.Runs(spec.name));
        return out;
      }
    }
  }
  // The skipped candidates leave e.evaluate (in their skip order: by group, best bound first).
  for (const auto& members : order)
    for (size_t i : members)
      if (skipped[i]) e.time_pruned.push_back(e.evaluate[i]);
  std::vector<TuneCandidate> kept;
  kept.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (!skipped[i]) kept.push_back(std::move(e.evaluate[i]));
  e.evaluate = std::move(kept);
  MMTWIN_ASSIGN_OR_RETURN(out.records, db.Runs(spec.name));
  return out;
}

TuneResult RankTune(const TuneSpace& space, const TuneEnumeration& e, const std::vector<RunRecord>& records) {
  std::map<std::string, const RunRecord*> by_key;
  for (const RunRecord& r : records)
    if (r.status == "ok" && r.summary) by_key[r.run_key] = &r;
  TuneResult out;
  std::vector<TuneRow> fitting;
  for (const TuneCandidate& c : e.evaluate) {
    auto it = by_key.find(c.run_key);
    if (it == by_key.end()) {
      ++out.missing;
      continue;
    }
    TuneRow row = RowOf(space, c, *it->second->summary);
    (row.fits ? fitting : out.infeasible).push_back(std::move(row));
  }
  // Best first; ties by fewer GPUs, then enumeration order (stable).
  std::stable_sort(fitting.begin(), fitting.end(), [&](const TuneRow& a, const TuneRow& b) {
    if (TuneBetter(space.objective, a.objective, b.objective)) return true;
    if (TuneBetter(space.objective, b.objective, a.objective)) return false;
    if (a.candidate->gpus != b.candidate->gpus) return a.candidate->gpus < b.candidate->gpus;
    return a.candidate->index < b.candidate->index;
  });
  out.ranked = fitting;
  // Pareto front over (objective, peak memory): ascending memory, keep a row when it beats every row with less.
  std::vector<TuneRow> by_memory = fitting;
  std::stable_sort(by_memory.begin(), by_memory.end(), [&](const TuneRow& a, const TuneRow& b) {
    if (a.peak_memory_bytes != b.peak_memory_bytes) return a.peak_memory_bytes < b.peak_memory_bytes;
    return TuneBetter(space.objective, a.objective, b.objective);
  });
  for (const TuneRow& r : by_memory)
    if (out.pareto.empty() || TuneBetter(space.objective, r.objective, out.pareto.back().objective))
      out.pareto.push_back(r);
  // The runner-up: the best configuration strictly worse than the best (those that tie with it are counted).
  size_t up = 1, ties = 0;
  while (up < out.ranked.size() &&
         !TuneBetter(space.objective, out.ranked[0].objective, out.ranked[up].objective)) {
    ++ties;
    ++up;
  }
  if (up < out.ranked.size()) {
    const RunSummary &a = out.ranked[0].summary, &b = out.ranked[up].summary;
    char buf[512];
    std::snprintf(
        buf, sizeof buf,
        "best vs runner-up (rank %zu): busy %.1f%% vs %.1f%% (recompute %.1f%% vs %.1f%%), bubble %.1f%% vs "
        "%.1f%%, "
        "idle %.1f%% vs %.1f%%, exposed comm %.1f%% vs %.1f%% of GPU time; peak memory %.1f vs %.1f GiB",
        up + 1, 100 * a.busy_ratio, 100 * b.busy_ratio, 100 * a.recompute_ratio, 100 * b.recompute_ratio,
        100 * a.bubble_ratio, 100 * b.bubble_ratio, 100 * a.idle_ratio, 100 * b.idle_ratio,
        100 * a.exposed_comm_ratio, 100 * b.exposed_comm_ratio,
        static_cast<double>(out.ranked[0].peak_memory_bytes) / (1 << 30),
        static_cast<double>(out.ranked[up].peak_memory_bytes) / (1 << 30));
    out.runner_up = static_cast<int>(up);
    out.why = buf;
    if (ties > 0) out.why += " (" + std::to_string(ties) + " more tie with the best)";
  }
  return out;
}

}  // namespace mmtwin

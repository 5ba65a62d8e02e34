// SPDX-License-Identifier: Apache-2.0
#include "driver/max_seq.h"

#include <algorithm>

#include "core/cluster/cluster.h"
#include "driver/planner.h"
#include "core/plan/seqpar.h"

namespace mmtwin {

namespace {

struct Probe {
  bool fits = false;
  int64_t peak_bytes = 0, capacity_bytes = 0;
};

Result<Probe> Fits(Scenario s, int64_t tokens) {
  s.trace = TraceSource{};
  s.trace.sequence_tokens = tokens;
  s.trace.samples = static_cast<int64_t>(s.parallel.dp) * s.parallel.micro_batches;
  s.data = {"random", {{"batch_size", "1"}}};
  s.epoch = false;
  s.iterations = 1;
  PlanOptions o;
  o.memory_report = true;
  MMTWIN_ASSIGN_OR_RETURN(PlannedRun run, BuildPlan(s, o));
  Probe p;
  p.fits = true;
  for (const StageMemory& m : run.memory) {
    p.fits = p.fits && m.fits;
    if (m.peak_bytes >= p.peak_bytes) {
      p.peak_bytes = m.peak_bytes;
      p.capacity_bytes = m.capacity_bytes;
    }
  }
  return p;
}

}  // namespace

Result<std::vector<MaxSeqRow>> MaxSequenceSearch(const Scenario& scenario, const MaxSeqOptions& options) {
  if (options.step_tokens < 1) return Error("max-seq: step_tokens must be >= 1");
  std::vector<std::string> policies = options.policies;
  if (policies.empty())
    for (const SpPolicyInfo& e : SpPolicyRegistry().entries()) policies.push_back(e.name);
  MMTWIN_ASSIGN_OR_RETURN(ModelSpec model, LoadScenarioModel(scenario));
  MMTWIN_ASSIGN_OR_RETURN(ClusterSpec cluster, LoadScenarioCluster(scenario));
  const Component* llm = model.Find(ComponentKind::kLlm);
  const TransformerConfig tf = llm ? llm->tf : TransformerConfig{};
  const int G = std::max(1, scenario.parallel.sp) * std::max(1, scenario.parallel.tp);
  std::vector<MaxSeqRow> rows;
  for (const std::string& policy : policies) {
    MMTWIN_RETURN_IF_ERROR(SpPolicyRegistry().Find(policy));
    Scenario s = scenario;
    s.sp = {policy, {}};
    s.parallel.sp_ulysses = 0;
    s.parallel.sp_ring = 0;
    if (policy == "none") {
      s.parallel.sp = 1;
      s.parallel.tp = 1;
      s.parallel.dp = scenario.parallel.dp * G;
    } else if (policy == "megatron-cp+tp") {
      s.parallel.tp = std::min(G, std::max(1, cluster.gpus_per_node));
      s.parallel.sp = G / s.parallel.tp;
    } else {
      s.parallel.sp = G;
      s.parallel.tp = 1;
    }
    MaxSeqRow row;
    row.policy = policy;
    if (policy == "ulysses") {
      // Beyond the heads Ulysses cannot shard further: the largest degree dividing G that the heads allow
      // (KV heads replicated), the rest of the G GPUs as data parallelism (LongVILA Figure 9's Ulysses at 256
      // GPUs runs SP 32).
      for (int u = G; u >= 1; --u) {
        if (G % u != 0) continue;
        ParallelConfig q = s.parallel;
        q.sp = u;
        if (ResolveSpLayout(policy, {}, q, cluster.gpus_per_node, tf).ok()) {
          s.parallel.sp = u;
          s.parallel.dp = scenario.parallel.dp * (G / u);
          break;
        }
      }
    }
    row.sp = s.parallel.sp;
    row.tp = s.parallel.tp;
    row.dp = s.parallel.dp;
    auto layout = ResolveSpLayout(policy, {}, s.parallel, cluster.gpus_per_node, tf);
    if (!layout) {
      row.unavailable = layout.error().message();
      rows.push_back(row);
      continue;
    }
    if (s.parallel.sp == 1 && policy != "none" && G > 1 && policy != "ulysses") {
      row.unavailable = "policies.sp: " + policy + " needs an SP degree > 1 (" + std::to_string(G) + " GPUs)";
      rows.push_back(row);
      continue;
    }
    row.ulysses = layout->ulysses;
    row.ring = layout->ring;
    const int64_t step = options.step_tokens;
    const int64_t max_k = std::max<int64_t>(1, options.limit_tokens / step);
    auto probe = [&](int64_t k) -> Result<Probe> {
      ++row.probes;
      return Fits(s, k * step);
    };
    // Exponential search for the first k that does not fit, then bisection on (good, bad).
    int64_t good = 0, bad = 0;
    Probe best;
    for (int64_t k = 1;; k = std::min(max_k, k * 2)) {
      MMTWIN_ASSIGN_OR_RETURN(Probe p, probe(k));
      if (!p.fits) {
        bad = k;
        break;
      }
      good = k;
      best = p;
      if (k == max_k) break;
    }
    if (bad == 0) {
      row.at_limit = true;
    } else {
      while (bad - good > 1) {
        const int64_t mid = good + (bad - good) / 2;
        MMTWIN_ASSIGN_OR_RETURN(Probe p, probe(mid));
        if (p.fits) {
          good = mid;
          best = p;
        } else {
          bad = mid;
        }
      }
    }
    row.max_tokens = good * step;
    row.peak_bytes = best.peak_bytes;
    row.capacity_bytes = best.capacity_bytes;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// A lower bound on the simulated mean iteration time before planning (time_bound.h).
#include "driver/time_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/plan/pricing.h"
#include "core/plan/schedule.h"

namespace mmtwin {

// Per replayed iteration and DP replica, over the layer prefixes k = 0 .. L (k layers), the sums the bound needs
// (time_bound.h): W, F, X over all micro-batches, and P, Q, Qx, the least over the micro-batches.
struct TimeBoundCache::Prefixes {
  int layers = 0;
  int replicas = 0;
  int64_t iterations_in_epoch = 0;
  double tokens = 0;
  // [((iteration * replicas + replica) * kFields + field) * (layers + 1) + k]
  enum Field { kW, kF, kX, kP, kQ, kQx, kFields };
  int iterations = 0;
  std::vector<double> v;
  const double* At(int it, int r, Field f) const {
    return &v[((static_cast<size_t>(it) * replicas + r) * kFields + f) * (layers + 1)];
  }
  double* At(int it, int r, Field f) {
    return &v[((static_cast<size_t>(it) * replicas + r) * kFields + f) * (layers + 1)];
  }
};

TimeBoundCache::TimeBoundCache() = default;
TimeBoundCache::~TimeBoundCache() = default;
void TimeBoundCache::Clear() {
  prefixes_.clear();
  bounds_.clear();
}

namespace {

using Prefixes = TimeBoundCache::Prefixes;

// The scenario as its layer costs see it: without the fields that do not change what one micro-batch costs a
// layer (the pipeline layout, ZeRO, the schedule, the partition and recompute policies, the engine, names).
std::string PricingKey(const Scenario& s, const PreparedData& data) {
  Scenario k = s;
  k.name = k.description = k.path = "";
  k.lines.clear();
  k.nodes = 0;
  k.parallel.pp = 1;
  k.parallel.vpp = 1;
  k.parallel.zero_stage = 0;
  k.partition = PolicyRef{"uniform", {}};
  k.recompute = PolicyRef{"none", {}};
  k.schedule = PolicyRef{"1f1b", {}};
  k.engine = "analytic";
  return data.key + "\n--\n" + FormatScenario(k);
}

Result<std::shared_ptr<const Prefixes>> ComputePrefixes(const Scenario& s, const PreparedData& data,
                                                        bool* bounded) {
  *bounded = false;
  auto out = std::make_shared<Prefixes>();
  const ParallelConfig& par = s.parallel;
  const int64_t steps = static_cast<int64_t>(data.data.steps.size());
  out->iterations_in_epoch = par.micro_batches > 0 ? steps / par.micro_batches : 0;
  if (par.sp > 1 || out->iterations_in_epoch < 1) return std::shared_ptr<const Prefixes>(std::move(out));
  MMTWIN_ASSIGN_OR_RETURN(const ModelSpec model, LoadScenarioModel(s));
  MMTWIN_ASSIGN_OR_RETURN(const ClusterSpec probe, LoadScenarioCluster(s));
  MMTWIN_ASSIGN_OR_RETURN(const ClusterSpec cluster,
                          LoadScenarioCluster(s, ScenarioNodes(s, probe.gpus_per_node)));
  auto cost = LoadScenarioCostModel(s, model, cluster);
  if (!cost) return ScenarioError(s, "cost", cost.error().message());
  const Pricer pricer(model, **cost, cluster, par);
  const Packing packing = data.data.packed ? Packing::kVarlen : Packing::kPadded;
  const int layers = static_cast<int>(pricer.layers().size());
  const std::vector<int64_t> replay = ReplayedIterations(s, out->iterations_in_epoch);
  out->layers = layers;
  out->replicas = par.dp;
  out->iterations = static_cast<int>(replay.size());
  out->v.assign(static_cast<size_t>(out->iterations) * par.dp * Prefixes::kFields * (layers + 1), 0.0);
  std::vector<int> slot(layers);
  std::vector<double> tp_factor(layers);
  for (int l = 0; l < layers; ++l) {
    slot[l] = pricer.SlotOfLayer(l);
    tp_factor[l] = pricer.layers()[l].backward == LayerBackward::kNone ? 0.0 : 1.0;
  }
  std::vector<Pricer::SlotCost> sc(pricer.NumSlots());
  std::vector<SampleTokens> mb;
  const double inf = std::numeric_limits<double>::infinity();
  for (int it = 0; it < out->iterations; ++it) {
    const IterationData x = EpochIteration(data.data, par.dp, par.micro_batches, replay[it]);
    for (int r = 0; r < par.dp; ++r) {
      double* W = out->At(it, r, Prefixes::kW);
      double* F = out->At(it, r, Prefixes::kF);
      double* X = out->At(it, r, Prefixes::kX);
      double* P = out->At(it, r, Prefixes::kP);
      double* Q = out->At(it, r, Prefixes::kQ);
      double* Qx = out->At(it, r, Prefixes::kQx);
      std::fill(P + 1, P + layers + 1, inf);
      std::fill(Q + 1, Q + layers + 1, inf);
      std::fill(Qx + 1, Qx + layers + 1, inf);
      for (const std::vector<uint32_t>& samples : x.micro_batches[r]) {
        mb.clear();
        for (uint32_t i : samples) {
          mb.push_back((*data.tokens)[i]);
          out->tokens += static_cast<double>((*data.tokens)[i].llm_tokens);
        }
        pricer.PriceSlots(mb, packing, sc.data());
        double sf = 0, sb = 0, sx = 0;
        for (int l = 0; l < layers; ++l) {
          const Pricer::SlotCost& c = sc[slot[l]];
          const double tp_b = c.tp_us * tp_factor[l];
          sf += c.fwd_us + c.tp_us;
          sb += c.bwd_us + tp_b;
          sx += c.bwd_us - c.bwd_weight_us + tp_b;
          W[l + 1] += c.fwd_us + c.tp_us + c.bwd_us + tp_b;
          F[l + 1] += c.fwd_us + c.tp_us;
          X[l + 1] += c.bwd_us - c.bwd_weight_us + tp_b;
          P[l + 1] = std::min(P[l + 1], sf);
          Q[l + 1] = std::min(Q[l + 1], sb);
          Qx[l + 1] = std::min(Qx[l + 1], sx);
        }
      }
      // W, F, X hold per-layer sums over the micro-batches so far: make them prefix sums.
      for (int l = 0; l < layers; ++l) {
        W[l + 1] += W[l];
        F[l + 1] += F[l];
        X[l + 1] += X[l];
      }
      for (double* row : {W, F, X, P, Q, Qx})
        for (int k = 0; k <= layers; ++k)
          if (!std::isfinite(row[k])) return std::shared_ptr<const Prefixes>(std::move(out));  // NaN cost
    }
  }
  *bounded = true;
  return std::shared_ptr<const Prefixes>(std::move(out));
}

// The figure of pipeline rank range [a, e) for replica r of iteration it (time_bound.h).
double RangeFigure(const Prefixes& p, int it, int r, int a, int e, bool split) {
  const double* W = p.At(it, r, Prefixes::kW);
  const double P = p.At(it, r, Prefixes::kP)[a];
  if (!split) return P + (W[e] - W[a]) + p.At(it, r, Prefixes::kQ)[a];
  const double* F = p.At(it, r, Prefixes::kF);
  const double* X = p.At(it, r, Prefixes::kX);
  return P + std::max(W[e] - W[a], (F[e] - F[a]) + (X[e] - X[a]) + p.At(it, r, Prefixes::kQx)[a]);
}

// Whether the layers split into pp contiguous (possibly empty) ranges whose figures are all <= t, for every
// replica: greedily, each range as long as it can be (optimal, as the figure shrinks with a and grows with e).
bool Feasible(const Prefixes& p, int it, int pp, bool split, double t) {
  int a = 0;
  for (int s = 0; s < pp; ++s) {
    auto fits = [&](int e) {
      for (int r = 0; r < p.replicas; ++r)
        if (RangeFigure(p, it, r, a, e, split) > t) return false;
      return true;
    };
    if (!fits(a)) return false;
    int e = a;
    while (e < p.layers && fits(e + 1)) ++e;
    a = e;
  }
  return a == p.layers;
}

double IterationBound(const Prefixes& p, int it, int pp, int vpp, bool split) {
  const int L = p.layers;
  double lo = 0, hi = 0;
  for (int r = 0; r < p.replicas; ++r) {
    const double* W = p.At(it, r, Prefixes::kW);
    const double* P = p.At(it, r, Prefixes::kP);
    const double* Q = p.At(it, r, Prefixes::kQ);
    if (vpp > 1 || pp == 1) {
      // The mean over the ranks (chunk s starts at layer s or later; P and Q grow with the layer).
      const double* F = p.At(it, r, Prefixes::kF);
      const double* X = p.At(it, r, Prefixes::kX);
      const double* Qx = p.At(it, r, Prefixes::kQx);
      double edge = 0, edge_x = 0;
      for (int s = 0; s < pp && s <= L; ++s) {
        edge += P[s] + (split ? 0 : Q[s]);
        edge_x += P[s] + Qx[s];
      }
      double b = (W[L] + edge) / pp;
      if (split) b = std::max(b, (F[L] + X[L] + edge_x) / pp);
      lo = std::max(lo, b);
    } else {
      lo = std::max(lo, W[L] / pp);
      hi = std::max(hi, P[L] + W[L] + Q[L] + p.At(it, r, Prefixes::kQx)[L] + 1.0);
    }
  }
  if (vpp > 1 || pp == 1) return lo;
  // Bisection: lo stays a proven bound (the mean rank's work, then a figure no split meets), hi a feasible one.
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (Feasible(p, it, pp, split, mid) ? hi : lo) = mid;
  }
  return lo;
}

}  // namespace

Result<TimeBound> IterationTimeLowerBound(const Scenario& s, const PreparedData& data,
                                          TimeBoundCache* cache) {
  if (data.key != PreparedDataKey(s))
    return Error("time bound: the prepared data is not the scenario's (another data plan, dp or trace)");
  // The encoders outside the pipeline (policies.encoder) break the per-rank figures above: no bound.
  if (s.encoder.name != "pipeline") return TimeBound{};
  const ParallelConfig& par = s.parallel;
  MMTWIN_ASSIGN_OR_RETURN(const Schedule schedule, BuildSchedule(s.schedule.name, par.pp, par.vpp,
                                                                 par.micro_batches, s.schedule.params));
  bool split = false;
  for (const std::vector<PipeOp>& ops : schedule.per_rank)
    for (const PipeOp& op : ops) split = split || op.kind == PassKind::kBackwardInput;
  const std::string pricing_key = PricingKey(s, data);
  const std::string bound_key = pricing_key + "\n--\npp=" + std::to_string(par.pp) +
                                " vpp=" + std::to_string(par.vpp) + " split=" + (split ? "1" : "0");
  if (cache)
    if (auto it = cache->bounds_.find(bound_key); it != cache->bounds_.end()) return it->second;
  std::shared_ptr<const Prefixes> prefixes;
  bool bounded = true;
  if (cache)
    if (auto it = cache->prefixes_.find(pricing_key); it != cache->prefixes_.end()) prefixes = it->second;
  if (!prefixes) {
    MMTWIN_ASSIGN_OR_RETURN(prefixes, ComputePrefixes(s, data, &bounded));
    if (!bounded) prefixes.reset();
    if (cache && prefixes) cache->prefixes_[pricing_key] = prefixes;
  }
  TimeBound out;
  if (prefixes && prefixes->iterations > 0) {
    double sum = 0;
    for (int it = 0; it < prefixes->iterations; ++it)
      sum += IterationBound(*prefixes, it, par.pp, par.vpp, split);
    out.bounded = true;
    out.iteration_us = sum / prefixes->iterations * (1 - 1e-6);
    out.iterations_in_epoch = prefixes->iterations_in_epoch;
    out.replayed = prefixes->iterations;
    out.tokens = prefixes->tokens;
  }
  if (cache) cache->bounds_[bound_key] = out;
  return out;
}

}  // namespace mmtwin

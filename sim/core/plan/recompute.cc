// SPDX-License-Identifier: Apache-2.0
#include "core/plan/recompute.h"
#include "core/util/numeric.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/plan/memory.h"

namespace mmtwin {
namespace {

bool Recomputable(const LayerProfile& p, int l) {
  return p.layers.empty() ||
         (p.layers[l].kind == LayerKind::kTransformer && p.layers[l].backward != LayerBackward::kNone);
}

RecomputePlan Empty(const RecomputeContext& ctx) {
  return RecomputePlan{std::vector<uint8_t>(ctx.profile.size(), 0)};
}

Result<RecomputePlan> RunNone(const RecomputeContext& ctx, const Params&) { return Empty(ctx); }

Result<RecomputePlan> RunFull(const RecomputeContext& ctx, const Params&) {
  RecomputePlan plan = Empty(ctx);
  for (int l = 0; l < ctx.profile.size(); ++l)
    if (Recomputable(ctx.profile, l)) plan.layers[l] = kRecomputeKeepInput;
  return plan;
}

Result<RecomputePlan> RunUniform(const RecomputeContext& ctx, const Params& params) {
  const int64_t n = params.Int("num_layers");
  RecomputePlan plan = Empty(ctx);
  const Partition& part = ctx.partition;
  for (int c = 0; c < part.chunks(); ++c) {
    int64_t in_group = 0;  // layers of the current group so far
    int prev = -1;         // previous layer of the group (a group is a run of one component's blocks)
    for (int l = part.bounds[c]; l < part.bounds[c + 1]; ++l) {
      if (!Recomputable(ctx.profile, l)) {
        in_group = 0;
        continue;
      }
      const bool same_component =
          prev == l - 1 && (ctx.profile.layers.empty() ||
                            ctx.profile.layers[l].component == ctx.profile.layers[prev].component);
      if (!same_component || in_group == n) in_group = 0;
      plan.layers[l] = in_group == 0 ? kRecomputeKeepInput : kRecomputeInGroup;
      ++in_group;
      prev = l;
    }
  }
  return plan;
}

Result<RecomputePlan> RunBlock(const RecomputeContext& ctx, const Params& params) {
  const int64_t n = params.Int("num_layers");
  RecomputePlan plan = Empty(ctx);
  const Partition& part = ctx.partition;
  for (int c = 0; c < part.chunks(); ++c) {
    int64_t taken = 0;
    for (int l = part.bounds[c]; l < part.bounds[c + 1] && taken < n; ++l)
      if (Recomputable(ctx.profile, l)) {
        plan.layers[l] = kRecomputeKeepInput;
        ++taken;
      }
  }
  return plan;
}

// Per-chunk in-flight count n_c = in_flight[rank] / vpp.
double ChunkInFlight(const RecomputeContext& ctx, int chunk) {
  const int pp = ctx.parallel.pp;
  const int vpp = std::max(1, ctx.partition.chunks() / std::max(1, pp));
  return static_cast<double>(ctx.in_flight[PipeRankOfChunk(chunk, pp)]) / vpp;
}

double Saving(const LayerProfile& p, int l) {
  return static_cast<double>(p.act_bytes[l] - p.act_bytes_recompute[l]);
}

Result<RecomputePlan> RunAdaptive(const RecomputeContext& ctx, const Params& params) {
  const int pp = ctx.parallel.pp;
  const LayerProfile& prof = ctx.profile;
  const Partition& part = ctx.partition;
  const int64_t reserve = params.Int("reserve_bytes");
  RecomputePlan plan = Empty(ctx);
  const std::vector<int64_t> base = EstimateRankMemory(ctx, plan);
  for (int r = 0; r < pp; ++r) {
    // The bound: transient(S) <= max_{l in S} t_l + the rank's largest working memory, against the transient
    // already in base (the working memory alone): the difference is added to what S must save.
    int64_t work_max = 0, base_transient = 0;
    for (int c = r; c < part.chunks(); c += pp) {
      BackwardTransient t;
      for (int l = part.bounds[c]; l < part.bounds[c + 1]; ++l) {
        t.Add(0, prof.act_bytes[l], prof.act_bytes_recompute[l], prof.WorkBytes(l));
        work_max = std::max(work_max, prof.WorkBytes(l));
      }
      base_transient = std::max(base_transient, t.Bytes());
    }
    const double need = static_cast<double>(base[r] + reserve - ctx.capacity_bytes);
    if (need <= 0) continue;
    const double slack = static_cast<double>(work_max - base_transient);
    struct Cand {
      int layer;
      double saving;     // e_l = n_c * t_l
      double transient;  // t_l = act - act_recompute, rematerialized before the layer's backward
      double ratio;      // e_l / fwd_us
    };
    std::vector<Cand> cands;
    std::vector<int> all;  // every recomputable layer of the rank
    for (int c = r; c < part.chunks(); c += pp)
      for (int l = part.bounds[c]; l < part.bounds[c + 1]; ++l) {
        if (!Recomputable(prof, l)) continue;
        all.push_back(l);
        const double e = ChunkInFlight(ctx, c) * Saving(prof, l);
        if (e <= 0) continue;
        const double ratio = prof.fwd_us[l] > 0 ? e / prof.fwd_us[l] : HUGE_VAL;
        cands.push_back({l, e, Saving(prof, l), ratio});
      }
    // A set S fits when sum_S e_l >= need + max_S t_l. For a cap T on the transient, the candidates with
    // t_l <= T fit once their savings cover need + T; the fewest layers over all caps (the distinct t_l) is
    // the exact minimum, since the optimal set fits under its own largest t_l.
    std::vector<double> caps;
    for (const Cand& c : cands) caps.push_back(c.transient);
    std::sort(caps.begin(), caps.end());
    caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
    std::vector<int> k_of_cap(caps.size(), 0);  // 0: cannot fit under this cap
    std::vector<double> by_saving;
    int k = 0;
    for (size_t ci = 0; ci < caps.size(); ++ci) {
      by_saving.clear();
      for (const Cand& c : cands)
        if (c.transient <= caps[ci]) by_saving.push_back(c.saving);
      std::sort(by_saving.begin(), by_saving.end(), std::greater<double>());
      double covered = 0;
      int n = 0;
      while (n < static_cast<int>(by_saving.size()) && covered < need + slack + caps[ci])
        covered += by_saving[n++];
      if (covered < need + slack + caps[ci]) continue;
      k_of_cap[ci] = n;
      if (k == 0 || n < k) k = n;
    }
    std::vector<int> best;
    if (k == 0) {  // not even every useful layer surely fits: full (step 4 prunes it if it fits after all)
      best = all;
      cands.clear();
    }
    std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
      if (a.ratio != b.ratio) return a.ratio > b.ratio;
      if (a.saving != b.saving) return a.saving > b.saving;
      return a.layer < b.layer;
    });
    // For every cap reaching k: greedy by ratio with look-ahead over the candidates under the cap (take a
    // layer only if the rest can still be covered by the largest savings among those not yet considered,
    // within the remaining slots; this always ends with k layers covering need + cap). Keep the cheapest set
    // (sum of fwd_us; ties: the smaller cap).
    double best_cost = HUGE_VAL;
    std::vector<int> chosen;
    std::vector<double> pool;
    for (size_t ci = 0; ci < caps.size() && k > 0; ++ci) {
      if (k_of_cap[ci] != k) continue;
      std::vector<const Cand*> under;
      for (const Cand& c : cands)
        if (c.transient <= caps[ci]) under.push_back(&c);
      double rest = need + slack + caps[ci], cost = 0;
      chosen.clear();
      for (size_t i = 0; i < under.size() && static_cast<int>(chosen.size()) < k; ++i) {
        pool.clear();
        for (size_t j = i + 1; j < under.size(); ++j) pool.push_back(under[j]->saving);
        const int slots = k - static_cast<int>(chosen.size()) - 1;
        std::partial_sort(pool.begin(), pool.begin() + std::min<size_t>(slots, pool.size()), pool.end(),
                          std::greater<double>());
        double best_rest = 0;
        for (int s = 0; s < slots && s < static_cast<int>(pool.size()); ++s) best_rest += pool[s];
        if (rest - under[i]->saving <= best_rest) {
          chosen.push_back(under[i]->layer);
          rest -= under[i]->saving;
          cost += prof.fwd_us[under[i]->layer];
        }
      }
      if (cost < best_cost) {
        best_cost = cost;
        best = chosen;
      }
    }
    for (int l : best) plan.layers[l] = kRecomputeKeepInput;
    // 4. The bound over-counts the transient (layers after a recomputed one free their activations before it
    //    is rematerialized): drop chosen layers, the most expensive first, while the exact estimate still fits.
    std::sort(best.begin(), best.end(), [&](int a, int b) {
      return prof.fwd_us[a] != prof.fwd_us[b] ? prof.fwd_us[a] > prof.fwd_us[b] : a > b;
    });
    for (int l : best) {
      plan.layers[l] = 0;
      if (EstimateRankMemory(ctx, plan)[r] + reserve > ctx.capacity_bytes)
        plan.layers[l] = kRecomputeKeepInput;
    }
  }
  return plan;
}

std::vector<RecomputePolicyInfo>& Registry() {
  static std::vector<RecomputePolicyInfo> r = {
      {"none", "nothing recomputed", {}, &RunNone},
      {"full", "every transformer layer recomputed, its input kept", {}, &RunFull},
      {"selective",
       "Megatron recompute_granularity=selective: only the attention core recomputed in the backward (no "
       "layer "
       "whole); without flash attention its score activations are not stored (core/cost/cost_model.h)",
       {},
       &RunNone},
      {"uniform",
       "Megatron recompute_method=uniform: each chunk's layers in groups of num_layers, only group inputs "
       "kept",
       {{"num_layers", ParamType::kInt, "1", "layers per recompute group", {}, 1, 1e9}},
       &RunUniform},
      {"block",
       "Megatron recompute_method=block: the first num_layers transformer layers of each chunk recomputed",
       {{"num_layers", ParamType::kInt, "1", "recomputed layers at the start of each chunk", {}, 0, 1e9}},
       &RunBlock},
      {"adaptive",
       "OmniBal adaptive: per stage the fewest recomputed layers that fit memory, best saving per cost first",
       {{"reserve_bytes",
         ParamType::kInt,
         "0",
         "memory kept free per GPU beyond the device's reserved, workspace and fragmentation terms",
         {},
         0,
         9e18}},
       &RunAdaptive},
  };
  return r;
}

}  // namespace

const PolicyRegistry<RecomputePolicyFn>& RecomputePolicyRegistry() {
  static const PolicyRegistry<RecomputePolicyFn> r("recompute policy", "recompute policy", Registry());
  return r;
}

const std::vector<RecomputePolicyInfo>& RecomputePolicies() { return RecomputePolicyRegistry().entries(); }

Result<const RecomputePolicyInfo*> FindRecomputePolicy(std::string_view name) {
  return RecomputePolicyRegistry().Find(name);
}

std::vector<int64_t> LayerHeldActBytes(const LayerProfile& profile, const RecomputePlan& plan) {
  std::vector<int64_t> out(profile.size(), 0);
  for (int l = 0; l < profile.size(); ++l) {
    const uint8_t v = l < static_cast<int>(plan.layers.size()) ? plan.layers[l] : 0;
    out[l] = v == 0 ? profile.act_bytes[l] : v == kRecomputeKeepInput ? profile.act_bytes_recompute[l] : 0;
  }
  return out;
}

std::vector<int64_t> ChunkHeldActBytes(const LayerProfile& profile, const Partition& partition,
                                       const RecomputePlan& plan) {
  const std::vector<int64_t> held = LayerHeldActBytes(profile, plan);
  std::vector<int64_t> out(partition.chunks(), 0);
  for (int c = 0; c < partition.chunks(); ++c)
    for (int l = partition.bounds[c]; l < partition.bounds[c + 1]; ++l) out[c] = AddBytes(out[c], held[l]);
  return out;
}

std::vector<int64_t> EstimateRankMemory(const RecomputeContext& ctx, const RecomputePlan& plan) {
  const int pp = ctx.parallel.pp;
  const LayerProfile& prof = ctx.profile;
  if (pp < 1 || static_cast<int>(ctx.in_flight.size()) != pp ||
      static_cast<int>(ctx.model_state_bytes.size()) != pp || ctx.partition.chunks() < 1 ||
      ctx.partition.bounds.back() > prof.size())
    return {};
  const std::vector<int64_t> held = ChunkHeldActBytes(prof, ctx.partition, plan);
  std::vector<double> mem(pp, 0.0);
  std::vector<int64_t> transient(pp, 0);
  for (int r = 0; r < pp; ++r) {
    mem[r] = static_cast<double>(ctx.model_state_bytes[r]);
    if (r < static_cast<int>(ctx.other_bytes.size())) mem[r] += static_cast<double>(ctx.other_bytes[r]);
  }
  for (int c = 0; c < ctx.partition.chunks(); ++c) {
    const int r = PipeRankOfChunk(c, pp);
    mem[r] += ChunkInFlight(ctx, c) * static_cast<double>(held[c]);
    // Transient: the backward's peak above the stored activations (rematerialized units and working
    // memory, BackwardTransient), max over the rank's chunks.
    BackwardTransient t;
    for (int l = ctx.partition.bounds[c]; l < ctx.partition.bounds[c + 1]; ++l) {
      const uint8_t flag = l < static_cast<int>(plan.layers.size()) ? plan.layers[l] : 0;
      t.Add(flag, prof.act_bytes[l], prof.act_bytes_recompute[l], prof.WorkBytes(l));
    }
    transient[r] = std::max(transient[r], t.Bytes());
  }
  std::vector<int64_t> out(pp);
  for (int r = 0; r < pp; ++r) out[r] = BytesOf(mem[r] + static_cast<double>(transient[r]));
  return out;
}

std::vector<int64_t> ProfileBoundaryBytes(const LayerProfile& profile, const Partition& partition,
                                          const ParallelConfig& parallel) {
  const int pp = std::max(1, parallel.pp);
  const int64_t tp = std::max(1, parallel.tp);
  const int chunks = partition.chunks();
  auto send = [&](int c) {
    return c + 1 < chunks ? profile.boundary_bytes[partition.bounds[c + 1] - 1] / tp : 0;
  };
  std::vector<int64_t> out(pp, 0);
  for (int r = 0; r < pp; ++r) {
    int64_t s = 0, recv = 0;
    for (int c = r; c < chunks; c += pp) {
      s = std::max(s, send(c));
      if (c > 0) recv = std::max(recv, send(c - 1));
    }
    out[r] = s + recv;
  }
  return out;
}

bool FitsWithFullRecompute(const LayerProfile& profile, const Partition& partition,
                           const ParallelConfig& parallel, const std::vector<int>& in_flight,
                           int64_t capacity_bytes) {
  if (static_cast<int>(in_flight.size()) != parallel.pp || partition.chunks() < 1 ||
      partition.bounds.back() != profile.size())
    return false;
  RecomputeContext ctx;
  ctx.profile = profile;
  ctx.partition = partition;
  ctx.parallel = parallel;
  ctx.in_flight = in_flight;
  ctx.model_state_bytes =
      RankModelStateBytes(parallel, partition, profile.params, FrozenLayerParams(profile.layers));
  ctx.other_bytes = ProfileBoundaryBytes(profile, partition, parallel);
  ctx.capacity_bytes = capacity_bytes;
  Result<RecomputePlan> full = RunFull(ctx, Params());
  for (int64_t m : EstimateRankMemory(ctx, *full))
    if (m > capacity_bytes) return false;
  return true;
}

Result<RecomputePlan> RunRecomputePolicy(std::string_view name_in,
                                         const std::map<std::string, std::string>& params_in,
                                         const RecomputeContext& ctx, RecomputeReport* report) {
  std::string name(name_in);
  std::map<std::string, std::string> params = params_in;
  const size_t colon = name.find(':');
  if (colon != std::string::npos) {
    const std::string n = name.substr(colon + 1);
    name = name.substr(0, colon);
    if (name != "uniform" && name != "block")
      return Error("recompute policy '" + std::string(name_in) +
                   "': only uniform:N and block:N take a ':N' suffix");
    auto it = params.find("num_layers");
    if (it != params.end() && it->second != n)
      return Error("recompute policy '" + std::string(name_in) + "': num_layers=" + it->second +
                   " disagrees with the ':" + n + "' suffix");
    params["num_layers"] = n;
  }
  MMTWIN_ASSIGN_OR_RETURN(const RecomputePolicyInfo* info, FindRecomputePolicy(name));
  MMTWIN_RETURN_IF_ERROR(ValidateLayerProfile(ctx.profile));
  MMTWIN_RETURN_IF_ERROR(ValidatePartition(ctx.partition, ctx.profile.size(), ctx.parallel.chunks(),
                                           ctx.partition.EncoderLayers()));
  const int pp = ctx.parallel.pp;
  const bool have_memory =
      static_cast<int>(ctx.in_flight.size()) == pp && static_cast<int>(ctx.model_state_bytes.size()) == pp;
  if (info->name == "adaptive") {
    if (!have_memory)
      return Error("recompute policy 'adaptive': needs in_flight and model_state_bytes for each of the " +
                   std::to_string(pp) + " pipeline ranks");
    if (ctx.capacity_bytes <= 0) return Error("recompute policy 'adaptive': capacity_bytes must be > 0");
  }
  if (!ctx.other_bytes.empty() && static_cast<int>(ctx.other_bytes.size()) != pp)
    return Error("recompute: other_bytes must be empty or have one entry per pipeline rank");
  MMTWIN_ASSIGN_OR_RETURN(Params p, RecomputePolicyRegistry().Validate(*info, params));
  MMTWIN_ASSIGN_OR_RETURN(RecomputePlan plan, info->run(ctx, p));
  if (report) {
    *report = RecomputeReport{};
    report->policy = info->name;
    report->params = p.values();
    if (have_memory) {
      report->estimated_peak_bytes = EstimateRankMemory(ctx, plan);
      report->recomputed_layers.assign(pp, 0);
      for (int c = 0; c < ctx.partition.chunks(); ++c)
        for (int l = ctx.partition.bounds[c]; l < ctx.partition.bounds[c + 1]; ++l)
          report->recomputed_layers[PipeRankOfChunk(c, pp)] += plan.layers[l] != 0;
      for (int r = 0; r < pp; ++r)
        report->fits.push_back(report->estimated_peak_bytes[r] +
                                   (info->name == "adaptive" ? p.Int("reserve_bytes") : 0) <=
                               ctx.capacity_bytes);
    }
  }
  return plan;
}

}  // namespace mmtwin

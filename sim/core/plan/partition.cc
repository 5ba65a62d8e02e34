// SPDX-License-Identifier: Apache-2.0
#include "core/plan/partition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/util/rng.h"

namespace mmtwin {
namespace {

std::vector<double> Prefix(const std::vector<double>& w) {
  std::vector<double> p(w.size() + 1, 0.0);
  for (size_t i = 0; i < w.size(); ++i) p[i + 1] = p[i] + w[i];
  return p;
}

std::vector<double> ToDouble(const std::vector<int64_t>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(v[i]);
  return out;
}

double PopulationVariance(const std::vector<double>& x) {
  if (x.empty()) return 0;
  double mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  return var / static_cast<double>(x.size());
}

std::vector<double> ChunkSums(const std::vector<double>& prefix, const Partition& p) {
  std::vector<double> s(p.chunks());
  for (int c = 0; c < p.chunks(); ++c) s[c] = prefix[p.bounds[c + 1]] - prefix[p.bounds[c]];
  return s;
}

// ---- Policies ----

Result<Partition> RunUniform(const PartitionContext& ctx, const Params&, PartitionReport&) {
  return UniformPartition(ctx.profile.size(), ctx.chunks);
}

// Megatron-LM's split (megatron/core/transformer/transformer_block.py, get_num_layers_to_build, core 0.9):
// the LLM's transformer blocks in equal counts per (virtual) chunk; whatever precedes them (encoders,
// projector, the LLM's embedding) rides on the first chunk, the final head on the last. `first_blocks` /
// `last_blocks` (0: the even count) are Megatron's --decoder-first-pipeline-num-layers /
// --decoder-last-pipeline-num-layers, applied here to the first and last chunk. `account_for_embedding` /
// `account_for_loss` are --account-for-embedding/loss-in-pipeline-split (the same function, Megatron-LM
// d98e8a64): the embedding / loss counts as a block, so the first / last chunk builds one block less and may
// hold the embedding / head alone. Megatron asserts that the blocks divide evenly; so does this policy (an
// error naming the counts).
Result<Partition> RunMegatron(const PartitionContext& ctx, const Params& params, PartitionReport&) {
  const auto& layers = ctx.profile.layers;
  const int L = ctx.profile.size(), C = ctx.chunks;
  if (layers.empty()) return Error("partition policy 'megatron': the layer profile carries no layer kinds");
  const int llm = layers.back().component;
  int b0 = -1, nb = 0;
  for (int l = 0; l < L; ++l) {
    if (layers[l].component != llm || layers[l].kind != LayerKind::kTransformer) continue;
    if (b0 < 0) b0 = l;
    if (l != b0 + nb)
      return Error("partition policy 'megatron': the LLM's transformer blocks are not contiguous");
    ++nb;
  }
  if (nb == 0)
    return Error("partition policy 'megatron': the model's last component has no transformer blocks");
  const int first = static_cast<int>(params.Int("first_blocks")),
            last = static_cast<int>(params.Int("last_blocks"));
  const int emb = params.Bool("account_for_embedding") ? 1 : 0,
            loss = params.Bool("account_for_loss") ? 1 : 0;
  if ((emb || loss) && (first > 0 || last > 0))
    return Error(
        "partition policy 'megatron': account_for_embedding / account_for_loss cannot be combined with "
        "first_blocks / last_blocks (Megatron-LM refuses the same combination)");
  std::vector<int> count(C, 0);
  if (C == 1) {
    count[0] = nb;
  } else if (emb || loss) {
    // Megatron-LM's --account-for-embedding/loss-in-pipeline-split: the embedding (the loss) counts as one more
    // block in the split and takes a block's place on the first (last) chunk.
    const int n = nb + emb + loss;
    if (n % C != 0)
      return Error("partition policy 'megatron': " + std::to_string(nb) + " LLM blocks" +
                   (emb ? " + the embedding" : "") + (loss ? " + the loss" : "") + " = " + std::to_string(n) +
                   " do not divide evenly into " + std::to_string(C) +
                   " chunks (pp * vpp); Megatron-LM requires it");
    for (int c = 0; c < C; ++c) count[c] = n / C;
    count[0] -= emb;
    count[C - 1] -= loss;
  } else {
    const int ends = (first > 0 ? 1 : 0) + (last > 0 ? 1 : 0);
    const int rest = nb - first - last, inner = C - ends;
    if (rest < 0 || (inner == 0 && rest != 0) || (inner > 0 && rest % inner != 0))
      return Error(
          "partition policy 'megatron': " + std::to_string(nb) + " LLM blocks" +
          (ends ? " less first_blocks " + std::to_string(first) + " and last_blocks " + std::to_string(last)
                : std::string()) +
          " do not divide evenly into " + std::to_string(inner) +
          " chunks (pp * vpp); Megatron-LM requires it: set first_blocks / last_blocks or use 'uniform'");
    const int each = inner > 0 ? rest / inner : 0;
    for (int c = 0; c < C; ++c) count[c] = each;
    if (first > 0) count[0] = first;
    if (last > 0) count[C - 1] = last;
  }
  for (int c = 0; c < C; ++c) {
    // The first chunk may hold only what precedes the blocks (the embedding), the last only the head, when
    // account_for_embedding / account_for_loss make room for them; every other chunk needs a block.
    const bool holds_other = (c == 0 && emb && b0 > 0) || (c == C - 1 && loss && b0 + nb < L);
    if (count[c] < 1 && !(count[c] == 0 && holds_other))
      return Error("partition policy 'megatron': chunk " + std::to_string(c) + " would hold no LLM block (" +
                   std::to_string(nb) + " blocks, " + std::to_string(C) + " chunks)");
  }
  Partition p;
  p.bounds.push_back(0);
  int at = b0;
  for (int c = 0; c + 1 < C; ++c) {
    at += count[c];
    p.bounds.push_back(at);
  }
  p.bounds.push_back(L);
  return p;
}

Result<Partition> RunParams(const PartitionContext& ctx, const Params&, PartitionReport&) {
  return MinMaxPartition(ToDouble(ctx.profile.params), ctx.chunks);
}

// The per-layer time a time-balancing policy balances (its `balance` parameter; partition.h).
std::vector<double> BalancedTimes(const LayerProfile& profile, const std::string& balance) {
  bool training = balance == "training";
  if (balance == "auto")
    for (const Layer& l : profile.layers) training = training || l.backward != LayerBackward::kFull;
  if (!training) return profile.fwd_us;
  std::vector<double> t(profile.fwd_us.size());
  for (size_t l = 0; l < t.size(); ++l) t[l] = profile.fwd_us[l] + profile.bwd_us[l];
  return t;
}

Result<Partition> RunProfile(const PartitionContext& ctx, const Params& params, PartitionReport&) {
  return MinMaxPartition(BalancedTimes(ctx.profile, params.Str("balance")), ctx.chunks);
}

// Scores BMP candidates incrementally from prefix sums (the mean chunk time is fixed: total / chunks).
struct BmpScorer {
  std::vector<double> prefix;
  std::vector<int64_t> boundary;
  int layers = 0, chunks = 1;
  double mean = 0, comm_norm = 0, comm_weight = 0;

  BmpScorer(const LayerProfile& profile, const std::vector<double>& times, int c, double w)
      : layers(profile.size()), chunks(c), comm_weight(w) {
    prefix = Prefix(times);
    boundary = profile.boundary_bytes;
    mean = prefix.back() / chunks;
    int64_t max_b = 0;
    for (int l = 0; l + 1 < layers; ++l) max_b = std::max(max_b, boundary[l]);
    comm_norm = static_cast<double>(chunks - 1) * static_cast<double>(max_b);
  }
  // cuts: bounds[1..chunks-1].
  double Score(const std::vector<int>& cuts, int64_t* comm_out = nullptr) const {
    double sq = 0, prev = 0;
    int64_t comm = 0;
    for (int k = 0; k <= static_cast<int>(cuts.size()); ++k) {
      const double end = k < static_cast<int>(cuts.size()) ? prefix[cuts[k]] : prefix[layers];
      const double x = end - prev - mean;
      sq += x * x;
      prev = end;
      if (k < static_cast<int>(cuts.size())) comm += boundary[cuts[k] - 1];
    }
    if (comm_out) *comm_out = comm;
    double score = 0;
    if (mean > 0) score += (sq / chunks) / (mean * mean);
    if (comm_norm > 0) score += comm_weight * static_cast<double>(comm) / comm_norm;
    return score;
  }
};

Partition FromCuts(const std::vector<int>& cuts, int layers) {
  Partition p;
  p.bounds.reserve(cuts.size() + 2);
  p.bounds.push_back(0);
  p.bounds.insert(p.bounds.end(), cuts.begin(), cuts.end());
  p.bounds.push_back(layers);
  return p;
}

Result<Partition> RunBmp(const PartitionContext& ctx, const Params& params, PartitionReport& report) {
  const int layers = ctx.profile.size();
  const int chunks = ctx.chunks;
  const int radius = static_cast<int>(params.Int("radius"));
  const size_t top_k = static_cast<size_t>(params.Int("top_k"));
  const double comm_weight = params.Double("comm_weight");
  const int64_t max_candidates = params.Int("max_candidates");
  const std::vector<double> times = BalancedTimes(ctx.profile, params.Str("balance"));
  const BmpScorer scorer(ctx.profile, times, chunks, comm_weight);

  const Partition anchor = GreedyAnchorPartition(times, chunks);
  report.anchor = anchor;
  const std::vector<int> anchor_cuts(anchor.bounds.begin() + 1, anchor.bounds.end() - 1);
  const int ncuts = chunks - 1;

  // Bounded max-heap of the best top_k valid candidates: (score, cuts), lexicographic.
  using Entry = std::pair<double, std::vector<int>>;
  std::vector<Entry> heap;
  std::vector<int> cuts(ncuts);
  auto consider = [&](const std::vector<int>& offsets) {
    for (int k = 0; k < ncuts; ++k) {
      cuts[k] = anchor_cuts[k] + offsets[k];
      if (cuts[k] < 1 || cuts[k] > layers - 1 || (k > 0 && cuts[k] <= cuts[k - 1])) return;
    }
    ++report.candidates;
    Entry e{scorer.Score(cuts), cuts};
    if (heap.size() >= top_k && !(e < heap.front())) return;
    for (const Entry& h : heap)
      if (h.second == e.second) return;  // sampled mode may draw a vector twice
    if (ctx.fits_with_full_recompute) {
      ++report.memory_checks;
      if (!ctx.fits_with_full_recompute(FromCuts(cuts, layers))) {
        ++report.memory_rejected;
        return;
      }
    }
    heap.push_back(std::move(e));
    std::push_heap(heap.begin(), heap.end());
    if (heap.size() > top_k) {
      std::pop_heap(heap.begin(), heap.end());
      heap.pop_back();
    }
  };

  std::vector<int> offsets(ncuts, -radius);
  const double space = std::pow(2.0 * radius + 1.0, ncuts);
  if (space <= static_cast<double>(max_candidates)) {
    // Odometer over every offset vector.
    while (true) {
      consider(offsets);
      int k = ncuts - 1;
      while (k >= 0 && offsets[k] == radius) offsets[k--] = -radius;
      if (k < 0) break;
      ++offsets[k];
    }
  } else {
    report.sampled = true;
    Rng rng(static_cast<uint64_t>(params.Int("seed")));
    std::fill(offsets.begin(), offsets.end(), 0);
    consider(offsets);
    for (int64_t i = 1; i < max_candidates; ++i) {
      for (int k = 0; k < ncuts; ++k) offsets[k] = static_cast<int>(rng.Below(2 * radius + 1)) - radius;
      consider(offsets);
    }
  }
  std::sort(heap.begin(), heap.end());

  bool anchor_fits = true;
  if (ctx.fits_with_full_recompute) {
    ++report.memory_checks;
    anchor_fits = ctx.fits_with_full_recompute(anchor);
  }
  if (heap.empty() && !anchor_fits) {
    report.memory_feasible = false;
    report.score = scorer.Score(anchor_cuts);
    return anchor;
  }
  if (!ctx.evaluate) {
    if (heap.empty()) {  // cannot happen (the anchor is a candidate), kept for safety
      report.score = scorer.Score(anchor_cuts);
      return anchor;
    }
    report.score = heap.front().first;
    return FromCuts(heap.front().second, layers);
  }

  std::vector<std::pair<double, std::vector<int>>> order;  // (score, cuts) in evaluation order
  if (anchor_fits) order.emplace_back(scorer.Score(anchor_cuts), anchor_cuts);
  for (const Entry& e : heap)
    if (!(anchor_fits && e.second == anchor_cuts)) order.push_back(e);
  size_t best = 0;
  double best_time = std::numeric_limits<double>::infinity();
  const bool prune = params.Bool("prune") && ctx.lower_bound;
  for (size_t i = 0; i < order.size(); ++i) {
    Partition p = FromCuts(order[i].second, layers);
    if (prune && i > 0) {
      Result<double> bound = ctx.lower_bound(p);
      if (!bound)
        return bound.error().Wrap("partition policy 'bmp': bounding candidate " + std::to_string(i));
      if (*bound >= best_time) {  // cannot be strictly faster than the best so far
        report.evaluated.push_back(std::move(p));
        report.evaluated_time_us.push_back(*bound);
        report.evaluated_pruned.push_back(1);
        ++report.pruned;
        continue;
      }
    }
    Result<double> t = ctx.evaluate(p);
    if (!t) return t.error().Wrap("partition policy 'bmp': evaluating candidate " + std::to_string(i));
    report.evaluated.push_back(p);
    report.evaluated_time_us.push_back(*t);
    report.evaluated_pruned.push_back(0);
    if (anchor_fits && i == 0) report.anchor_time_us = *t;
    if (*t < best_time) {
      best_time = *t;
      best = i;
    }
  }
  report.chosen_time_us = best_time;
  report.score = order[best].first;
  return FromCuts(order[best].second, layers);
}

const ParamSpec kBalanceParam{
    "balance",
    ParamType::kString,
    "auto",
    "per-layer time balanced: forward (OmniBal's FWD(l)), training (forward + backward: what a stage spends "
    "per micro-batch), auto (training when a component is frozen, its backward no longer a multiple of its "
    "forward; else forward)",
    {"auto", "forward", "training"}};

std::vector<PartitionPolicyInfo>& Registry() {
  static std::vector<PartitionPolicyInfo> r = {
      {"uniform", "equal layer counts per chunk, the remainder spread evenly", {}, &RunUniform},
      {"megatron",
       "Megatron-LM's split: the LLM's transformer blocks in equal counts per chunk, encoders and embedding "
       "on the first chunk, the head on the last",
       {
           {"first_blocks",
            ParamType::kInt,
            "0",
            "LLM blocks on the first chunk (Megatron's --decoder-first-pipeline-num-layers; 0: the even "
            "count)",
            {},
            0,
            1e6},
           {"last_blocks",
            ParamType::kInt,
            "0",
            "LLM blocks on the last chunk (Megatron's --decoder-last-pipeline-num-layers; 0: the even count)",
            {},
            0,
            1e6},
           {"account_for_embedding",
            ParamType::kBool,
            "false",
            "count the LLM's embedding as one block of the split: the first chunk holds one block less "
            "(Megatron's --account-for-embedding-in-pipeline-split; Llama 3's first chunk holds only the "
            "embedding)",
            {},
            0,
            1},
           {"account_for_loss",
            ParamType::kBool,
            "false",
            "count the head and loss as one block of the split: the last chunk holds one block less "
            "(Megatron's --account-for-loss-in-pipeline-split)",
            {},
            0,
            1},
       },
       &RunMegatron},
      {"params",
       "exact min-max of per-chunk parameter counts (DeepSpeed partition_method=parameters)",
       {},
       &RunParams},
      {"profile",
       "exact min-max of per-chunk forward time (profile-based; forward + backward with frozen components)",
       {kBalanceParam},
       &RunProfile},
      {"bmp",
       "OmniBal balanced model partition: greedy anchor, cuts jittered within +-radius, ranked by "
       "VAR(fwd)+SUM(comm), top K timed by the evaluator",
       {
           {"radius",
            ParamType::kInt,
            "2",
            "every cut of the anchor moves within +-radius layers",
            {},
            0,
            16},
           {"top_k",
            ParamType::kInt,
            "10",
            "best-scored candidates timed by the evaluator (plus the anchor)",
            {},
            1,
            1000},
           {"comm_weight",
            ParamType::kDouble,
            "0.1",
            "weight of SUM(comm)/((C-1)*max boundary) against VAR(fwd)/mean^2 in the score",
            {},
            0,
            1e6},
           {"max_candidates",
            ParamType::kInt,
            "2000000",
            "score at most this many candidates (a seeded sample beyond it)",
            {},
            1,
            1e9},
           {"seed",
            ParamType::kInt,
            "1",
            "seed of the candidate sample when the space exceeds max_candidates",
            {},
            0,
            9e18},
           {"prune", ParamType::kBool, "true",
            "skip timing a candidate whose lower bound (its slowest DP replicas timed alone) is no better "
            "than "
            "the fastest so far: the same choice for less work"},
           kBalanceParam,
       },
       &RunBmp},
  };
  return r;
}

}  // namespace

LayerProfile MakeLayerProfile(const std::vector<Layer>& layers, const std::vector<LayerCost>& costs) {
  LayerProfile p;
  p.layers = layers;
  const size_t n = std::min(layers.size(), costs.size());
  for (size_t i = 0; i < n; ++i) {
    p.fwd_us.push_back(costs[i].fwd_time_us);
    p.bwd_us.push_back(costs[i].bwd_time_us);
    p.params.push_back(layers[i].params);
    p.boundary_bytes.push_back(costs[i].boundary_bytes);
    p.act_bytes.push_back(costs[i].act_bytes);
    p.act_bytes_recompute.push_back(costs[i].act_bytes_recompute);
    p.bwd_work_bytes.push_back(costs[i].bwd_work_bytes);
  }
  p.layers.resize(n);
  return p;
}

Status ValidateLayerProfile(const LayerProfile& p) {
  const size_t n = p.fwd_us.size();
  auto check = [&](size_t size, const char* what) -> Status {
    if (size != n)
      return Error(std::string("layer profile: ") + what + " has " + std::to_string(size) +
                   " entries, expected " + std::to_string(n));
    return Status();
  };
  if (!p.layers.empty()) MMTWIN_RETURN_IF_ERROR(check(p.layers.size(), "layers"));
  MMTWIN_RETURN_IF_ERROR(check(p.bwd_us.size(), "bwd_us"));
  MMTWIN_RETURN_IF_ERROR(check(p.params.size(), "params"));
  MMTWIN_RETURN_IF_ERROR(check(p.boundary_bytes.size(), "boundary_bytes"));
  MMTWIN_RETURN_IF_ERROR(check(p.act_bytes.size(), "act_bytes"));
  MMTWIN_RETURN_IF_ERROR(check(p.act_bytes_recompute.size(), "act_bytes_recompute"));
  if (!p.bwd_work_bytes.empty()) MMTWIN_RETURN_IF_ERROR(check(p.bwd_work_bytes.size(), "bwd_work_bytes"));
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(p.fwd_us[i]) || p.fwd_us[i] < 0 || !std::isfinite(p.bwd_us[i]) || p.bwd_us[i] < 0)
      return Error("layer profile: layer " + std::to_string(i) + ": times must be finite and >= 0");
    if (p.params[i] < 0 || p.boundary_bytes[i] < 0 || p.act_bytes[i] < 0 || p.act_bytes_recompute[i] < 0 ||
        p.WorkBytes(static_cast<int>(i)) < 0)
      return Error("layer profile: layer " + std::to_string(i) + ": sizes must be >= 0");
  }
  return Status();
}

void PartitionMetrics(const LayerProfile& profile, const Partition& p, PartitionReport& out) {
  const std::vector<double> fwd = ChunkSums(Prefix(profile.fwd_us), p);
  out.var_fwd_us2 = PopulationVariance(fwd);
  out.mean_fwd_us = 0;
  out.max_fwd_us = 0;
  for (double f : fwd) {
    out.mean_fwd_us += f / static_cast<double>(fwd.size());
    out.max_fwd_us = std::max(out.max_fwd_us, f);
  }
  out.sum_comm_bytes = 0;
  for (int c = 0; c + 1 < p.chunks(); ++c) out.sum_comm_bytes += profile.boundary_bytes[p.bounds[c + 1] - 1];
  out.var_params = PopulationVariance(ChunkSums(Prefix(ToDouble(profile.params)), p));
  std::vector<double> counts(p.chunks());
  for (int c = 0; c < p.chunks(); ++c) counts[c] = p.LayersIn(c);
  out.var_layers = PopulationVariance(counts);
}

Partition UniformPartition(int layers, int chunks) {
  Partition p;
  if (chunks < 1 || chunks > layers) return p;
  for (int c = 0; c <= chunks; ++c)
    p.bounds.push_back(static_cast<int>(static_cast<int64_t>(c) * layers / chunks));
  return p;
}

double MaxChunkWeight(const std::vector<double>& weights, const Partition& p) {
  const std::vector<double> s = ChunkSums(Prefix(weights), p);
  return s.empty() ? 0 : *std::max_element(s.begin(), s.end());
}

Partition MinMaxPartition(const std::vector<double>& weights, int chunks) {
  const int n = static_cast<int>(weights.size());
  if (chunks < 1 || chunks > n) return Partition{};
  const std::vector<double> pre = Prefix(weights);
  const double inf = std::numeric_limits<double>::infinity();
  // Pass 1: f[c][i] = smallest possible max over the first i layers in c chunks.
  std::vector<std::vector<double>> f(chunks + 1, std::vector<double>(n + 1, inf));
  f[0][0] = 0;
  for (int c = 1; c <= chunks; ++c)
    for (int i = c; i <= n - (chunks - c); ++i)
      for (int j = c - 1; j < i; ++j) {
        if (f[c - 1][j] == inf) continue;
        const double v = std::max(f[c - 1][j], pre[i] - pre[j]);
        if (v < f[c][i]) f[c][i] = v;
      }
  const double best_max = f[chunks][n];
  // Pass 2: among partitions whose every chunk is <= best_max, the smallest sum of squares. Chunk sums are
  // the same expression (pre[i] - pre[j]) as in pass 1, so the optimal partition passes the comparison
  // exactly.
  std::vector<std::vector<double>> g(chunks + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> from(chunks + 1, std::vector<int>(n + 1, -1));
  g[0][0] = 0;
  for (int c = 1; c <= chunks; ++c)
    for (int i = c; i <= n - (chunks - c); ++i)
      for (int j = c - 1; j < i; ++j) {
        if (g[c - 1][j] == inf) continue;
        const double s = pre[i] - pre[j];
        if (s > best_max) continue;
        const double v = g[c - 1][j] + s * s;
        if (v < g[c][i]) {  // strict: ties keep the earliest cut j
          g[c][i] = v;
          from[c][i] = j;
        }
      }
  Partition p;
  p.bounds.assign(chunks + 1, 0);
  int i = n;
  for (int c = chunks; c >= 1; --c) {
    p.bounds[c] = i;
    i = from[c][i];
  }
  p.bounds[0] = 0;
  return p;
}

Partition GreedyAnchorPartition(const std::vector<double>& fwd_us, int chunks) {
  const int n = static_cast<int>(fwd_us.size());
  if (chunks < 1 || chunks > n) return Partition{};
  const std::vector<double> pre = Prefix(fwd_us);
  Partition p;
  p.bounds.push_back(0);
  int start = 0;
  for (int c = 0; c + 1 < chunks; ++c) {
    const int remaining = chunks - c;
    const double target = (pre[n] - pre[start]) / remaining;
    const int lo = start + 1, hi = n - (remaining - 1);  // end of this chunk, inclusive range
    int best = lo;
    double best_d = std::fabs(pre[lo] - pre[start] - target);
    for (int e = lo + 1; e <= hi; ++e) {
      const double d = std::fabs(pre[e] - pre[start] - target);
      if (d < best_d) {
        best_d = d;
        best = e;
      }
      if (pre[e] - pre[start] >= target) break;  // prefix sums only grow from here
    }
    p.bounds.push_back(best);
    start = best;
  }
  p.bounds.push_back(n);
  return p;
}

double BmpScore(const LayerProfile& profile, const Partition& p, double comm_weight) {
  const BmpScorer s(profile, BalancedTimes(profile, "auto"), p.chunks(), comm_weight);
  return s.Score(std::vector<int>(p.bounds.begin() + 1, p.bounds.end() - 1));
}

const PolicyRegistry<PartitionPolicyFn>& PartitionPolicyRegistry() {
  static const PolicyRegistry<PartitionPolicyFn> r("partition policy", "partition policy", Registry());
  return r;
}

const std::vector<PartitionPolicyInfo>& PartitionPolicies() { return PartitionPolicyRegistry().entries(); }

Result<const PartitionPolicyInfo*> FindPartitionPolicy(std::string_view name) {
  return PartitionPolicyRegistry().Find(name);
}

Result<Partition> RunPartitionPolicy(std::string_view name, const std::map<std::string, std::string>& params,
                                     const PartitionContext& ctx, PartitionReport* report) {
  MMTWIN_ASSIGN_OR_RETURN(const PartitionPolicyInfo* info, FindPartitionPolicy(name));
  MMTWIN_RETURN_IF_ERROR(ValidateLayerProfile(ctx.profile));
  const int layers = ctx.profile.size();
  if (ctx.pp < 1) return Error("partition: pp must be >= 1, got " + std::to_string(ctx.pp));
  if (ctx.chunks < 1 || ctx.chunks % ctx.pp != 0)
    return Error("partition: chunks must be a positive multiple of pp (" + std::to_string(ctx.pp) +
                 "), got " + std::to_string(ctx.chunks));
  if (ctx.chunks > layers)
    return Error("partition: " + std::to_string(ctx.chunks) +
                 " chunks need at least as many layers, the model has " + std::to_string(layers));
  MMTWIN_ASSIGN_OR_RETURN(Params p, PartitionPolicyRegistry().Validate(*info, params));
  PartitionReport local;
  PartitionReport& rep = report ? *report : local;
  rep = PartitionReport{};
  rep.policy = info->name;
  rep.params = p.values();
  MMTWIN_ASSIGN_OR_RETURN(Partition part, info->run(ctx, p, rep));
  MMTWIN_RETURN_IF_ERROR(ValidatePartition(part, layers, ctx.chunks));
  PartitionMetrics(ctx.profile, part, rep);
  if (info->name != "bmp") rep.score = BmpScore(ctx.profile, part, 0.1);
  return part;
}

std::vector<StageShape> StageShapes(const ParallelConfig& parallel, const Partition& partition,
                                    const RecomputePlan& recompute) {
  std::vector<StageShape> s(parallel.pp);
  for (int c = 0; c < partition.chunks(); ++c) {
    StageShape& x = s[PipeRankOfChunk(c, parallel.pp)];
    if (x.first_layer < 0) x.first_layer = partition.bounds[c];
    x.last_layer = partition.bounds[c + 1] - 1;
    x.layers += partition.LayersIn(c);
    for (int l = partition.bounds[c]; l < partition.bounds[c + 1]; ++l)
      x.recomputed += recompute.layers[l] != 0;
  }
  return s;
}

}  // namespace mmtwin

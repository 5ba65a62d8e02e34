// SPDX-License-Identifier: Apache-2.0
#include "core/balance/dynapipe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/balance/post_balance.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// (K + 1) x (n + 1) DP cells at most: 20 M (about 240 MB of cost and parent tables) for one iteration.
constexpr double kMaxCells = 2e7;

// DynapipeCost with the encoder tokens' prefix sums: O(1) per part.
struct Coster {
  const std::vector<DynapipeItem>& sorted;
  const DynapipeCosts& c;
  std::vector<double> enc_prefix;
  Coster(const std::vector<DynapipeItem>& s, const DynapipeCosts& costs) : sorted(s), c(costs) {
    enc_prefix.assign(s.size() + 1, 0);
    for (size_t i = 0; i < s.size(); ++i)
      enc_prefix[i + 1] = enc_prefix[i] + static_cast<double>(s[i].encoder_tokens);
  }
  double operator()(size_t i, size_t j) const {
    if (j <= i) return 0;
    const double len = static_cast<double>(sorted[i].llm_tokens);
    return static_cast<double>(j - i) * (c.per_token * len + c.per_pair * len * len) +
           c.per_encoder_token * (enc_prefix[j] - enc_prefix[i]) + c.per_micro_batch;
  }
};

struct CapResult {
  bool feasible = false;
  std::vector<size_t> ends;
  double sum = 0, max = 0;
};

// The least sum over exactly k consecutive parts of `sorted`, each of cost <= cap and padded tokens <= max_tokens.
CapResult SplitUnderCap(const Coster& cost, int k, int64_t max_tokens, size_t max_samples, double cap) {
  const std::vector<DynapipeItem>& sorted = cost.sorted;
  const size_t n = sorted.size();
  std::vector<double> f((static_cast<size_t>(k) + 1) * (n + 1), kInf);
  std::vector<uint32_t> parent(f.size(), 0);
  auto at = [&](int kk, size_t j) { return static_cast<size_t>(kk) * (n + 1) + j; };
  f[at(0, 0)] = 0;
  for (int kk = 1; kk <= k; ++kk) {
    // Part kk ends at j; the kk - 1 parts before it need kk - 1 items, the k - kk after it k - kk items.
    for (size_t j = static_cast<size_t>(kk); j + static_cast<size_t>(k - kk) <= n; ++j) {
      double best = kInf;
      uint32_t arg = 0;
      for (size_t i = j; i-- > static_cast<size_t>(kk - 1);) {
        const double t = cost(i, j);
        // Costs and padded tokens only grow as the part reaches back to longer items: stop at the first too large.
        if (t > cap || j - i > max_samples ||
            (max_tokens > 0 && static_cast<int64_t>(j - i) * sorted[i].llm_tokens > max_tokens))
          break;
        const double v = f[at(kk - 1, i)] + t;
        if (v < best) {
          best = v;
          arg = static_cast<uint32_t>(i);
        }
      }
      f[at(kk, j)] = best;
      parent[at(kk, j)] = arg;
    }
  }
  CapResult r;
  if (!std::isfinite(f[at(k, n)])) return r;
  r.feasible = true;
  r.sum = f[at(k, n)];
  r.ends.resize(static_cast<size_t>(k));
  size_t j = n;
  for (int kk = k; kk >= 1; --kk) {
    r.ends[static_cast<size_t>(kk - 1)] = j;
    const size_t i = parent[at(kk, j)];
    r.max = std::max(r.max, cost(i, j));
    j = i;
  }
  return r;
}

}  // namespace

DynapipeCosts DynapipeCosts::Of(const ModelSpec& model, double overhead_tokens) {
  DynapipeCosts c;
  double llm_matmul = 0, encoder_matmul = 0;
  for (const Component& comp : model.components) {
    const double matmul =
        static_cast<double>(comp.tf.layers) * static_cast<double>(BlockMatmulParams(comp.tf));
    if (comp.kind == ComponentKind::kLlm) {
      llm_matmul += matmul;
      c.per_pair = 2.0 * comp.tf.layers * comp.tf.heads * static_cast<double>(comp.tf.head_dim);
    } else if (comp.kind == ComponentKind::kVision || comp.kind == ComponentKind::kAudio) {
      encoder_matmul += matmul;
    }
  }
  c.per_token = std::max(1.0, 2.0 * llm_matmul);
  c.per_encoder_token = 2.0 * encoder_matmul;
  c.per_micro_batch = overhead_tokens * c.per_token;
  return c;
}

double DynapipeCost(const std::vector<DynapipeItem>& sorted, size_t i, size_t j, const DynapipeCosts& c) {
  if (j <= i) return 0;
  const double len = static_cast<double>(sorted[i].llm_tokens);
  double enc = 0;
  for (size_t s = i; s < j; ++s) enc += static_cast<double>(sorted[s].encoder_tokens);
  return static_cast<double>(j - i) * (c.per_token * len + c.per_pair * len * len) +
         c.per_encoder_token * enc + c.per_micro_batch;
}

Result<DynapipeSplit> SplitDynapipe(const std::vector<DynapipeItem>& sorted, int k, int pp,
                                    const DynapipeCosts& c, int64_t max_tokens, size_t max_samples) {
  const size_t n = sorted.size();
  if (k < 1 || static_cast<size_t>(k) > n)
    return Error("dynapipe: " + std::to_string(n) + " samples cannot make " + std::to_string(k) +
                 " micro-batches (at least one sample each)");
  if ((static_cast<double>(k) + 1) * (static_cast<double>(n) + 1) > kMaxCells)
    return Error(
        "dynapipe: " + std::to_string(n) + " samples into " + std::to_string(k) +
        " micro-batches per iteration is beyond the split's size limit (micro-batches x samples <= 2e7): "
        "fewer DP ranks, micro-batches or samples per micro-batch");
  for (size_t s = 1; s < n; ++s)
    if (sorted[s].llm_tokens > sorted[s - 1].llm_tokens)
      return Error("dynapipe: the samples are not sorted by length (internal)");
  const Coster cost(sorted, c);
  // The most items one part can hold: the others need one each, and at most max_samples (0 = no limit).
  const size_t longest = std::min(n - static_cast<size_t>(k) + 1, max_samples > 0 ? max_samples : n);
  if (longest * static_cast<size_t>(k) < n)
    return Error("dynapipe: " + std::to_string(n) + " samples do not fit " + std::to_string(k) +
                 " micro-batches of at most " + std::to_string(longest) + " samples (max_samples)");
  // The part costs in [a, b], sorted and distinct; false (and out incomplete) past `limit` of them.
  auto candidates_in = [&](double a, double b, size_t limit, std::vector<double>& out) {
    out.clear();
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j <= std::min(n, i + longest); ++j) {
        const double t = cost(i, j);
        if (t > b) break;
        if (t >= a) {
          out.push_back(t);
          if (out.size() > 4 * limit) return false;
        }
      }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out.size() <= limit;
  };
  DynapipeSplit best;
  best.objective = kInf;
  double sum_min = 0;  // the least sum of any split (no cap): every objective is >= (pp - 1) max + sum_min
  auto evaluate = [&](double cap) {
    const CapResult r = SplitUnderCap(cost, k, max_tokens, longest, cap);
    if (!r.feasible) return;
    const double obj = (pp - 1) * r.max + r.sum;
    if (obj < best.objective) {
      best.objective = obj;
      best.ends = r.ends;
    }
  };
  // 1. No cap: the least sum (pp 1's answer) and a first objective.
  evaluate(kInf);
  if (std::isfinite(best.objective) && pp > 1) {
    sum_min = best.objective - (pp - 1) * [&] {
      double mx = 0;
      size_t i = 0;
      for (size_t e : best.ends) mx = std::max(mx, cost(i, e)), i = e;
      return mx;
    }();
    // 2. A cap C can only help while (pp - 1) C + sum_min < the best objective: caps in [lo, upper()].
    double lo = sum_min / k;  // the slowest part is at least the mean
    for (size_t s = 0; s < n; ++s) lo = std::max(lo, cost(s, s + 1));
    auto upper = [&] { return (best.objective - sum_min) / (pp - 1); };
    std::vector<double> caps;
    if (candidates_in(lo, upper(), kDynapipeExactCaps, caps)) {
      for (double cap : caps) {
        if (cap >= upper()) break;
        evaluate(cap);  // exact: every cap that could improve is tried
      }
    } else {
      // A geometric grid of 13 caps, then around the best one: every candidate when few, else a finer grid.
      double a = lo, b = upper();
      for (int level = 0; level < 2 && b > a; ++level) {
        std::vector<double> grid;
        const int points = 12;
        for (int g = 0; g <= points; ++g)
          grid.push_back(a * std::pow(b / a, static_cast<double>(g) / points));
        size_t arg = 0;
        double before = best.objective;
        for (size_t g = 0; g < grid.size() && grid[g] < upper(); ++g) {
          evaluate(grid[g]);
          if (best.objective < before) {
            before = best.objective;
            arg = g;
          }
        }
        a = grid[arg > 0 ? arg - 1 : 0];
        b = std::min(upper(), grid[std::min(grid.size() - 1, arg + 1)]);
        if (candidates_in(a, b, 32, caps)) {
          for (double cap : caps) evaluate(cap);
          break;
        }
      }
    }
  }
  if (!std::isfinite(best.objective))
    return Error("dynapipe: no split of " + std::to_string(n) + " samples into " + std::to_string(k) +
                 " micro-batches keeps every micro-batch within max_tokens " + std::to_string(max_tokens) +
                 " padded tokens (the longest sample alone has " + std::to_string(sorted[0].llm_tokens) +
                 ")");
  size_t i = 0;
  for (size_t e : best.ends) {
    best.costs.push_back(cost(i, e));
    i = e;
  }
  return best;
}

const std::vector<ParamSpec> kDynapipeParams = {
    {"batch_size",
     ParamType::kInt,
     "4",
     "samples per micro-batch on average: each iteration draws dp x micro_batches x batch_size samples",
     {},
     1,
     1 << 20},
    {"max_samples",
     ParamType::kInt,
     "0",
     "samples per micro-batch at most (the split's width); 0 = 4 x batch_size",
     {},
     0,
     1 << 20},
    {"max_tokens",
     ParamType::kInt,
     "0",
     "padded LLM tokens per micro-batch at most (DynaPipe's memory limit); 0 = no limit",
     {},
     0,
     1e12},
    {"overhead_tokens",
     ParamType::kDouble,
     "0",
     "fixed cost of a micro-batch, in LLM tokens' worth (launches, the pipeline's per-micro-batch work)",
     {},
     0,
     1e9},
    {"order",
     ParamType::kString,
     "light-ends",
     "order of a rank's micro-batches: light-ends (Hydraulis: lightest at both ends), descending, ascending",
     {"light-ends", "descending", "ascending"}},
};

Result<DataPlan> RunDynapipePolicy(const DataPolicyContext& ctx, const Params& p) {
  const int dp = ctx.dp, m = std::max(1, ctx.micro_batches), pp = std::max(1, ctx.pp);
  const int64_t b = p.Int("batch_size");
  const int64_t max_tokens = p.Int("max_tokens");
  const size_t max_samples = static_cast<size_t>(p.Int("max_samples") > 0 ? p.Int("max_samples") : 4 * b);
  const DynapipeCosts costs = DynapipeCosts::Of(*ctx.model, p.Double("overhead_tokens"));
  const std::string order = p.Str("order");
  const SampleSizes& sz = *ctx.sizes;
  Rng rng = Rng(ctx.seed).Fork(17);
  std::vector<uint32_t> shuffled(ctx.trace->size());
  std::iota(shuffled.begin(), shuffled.end(), 0u);
  rng.Shuffle(shuffled);
  const size_t per_iteration = static_cast<size_t>(dp) * static_cast<size_t>(m) * static_cast<size_t>(b);
  const size_t iterations = per_iteration > 0 ? shuffled.size() / per_iteration : 0;
  DataPlan plan;
  plan.dp = dp;
  plan.packed = false;  // each micro-batch padded to its longest sample, as DynaPipe's cost model has it
  plan.steps.resize(iterations * static_cast<size_t>(m));
  double padded = 0, real = 0;
  std::vector<uint32_t> chunk;
  std::vector<DynapipeItem> items;
  for (size_t it = 0; it < iterations; ++it) {
    chunk.assign(shuffled.begin() + static_cast<std::ptrdiff_t>(it * per_iteration),
                 shuffled.begin() + static_cast<std::ptrdiff_t>((it + 1) * per_iteration));
    std::stable_sort(chunk.begin(), chunk.end(),
                     [&](uint32_t x, uint32_t y) { return sz.llm_tokens[x] > sz.llm_tokens[y]; });
    items.clear();
    for (uint32_t s : chunk)
      items.push_back({sz.llm_tokens[s], static_cast<int64_t>(sz.vit_tokens[s]) + sz.audio_tokens[s]});
    MMTWIN_ASSIGN_OR_RETURN(const DynapipeSplit split,
                            SplitDynapipe(items, dp * m, pp, costs, max_tokens, max_samples));
    // Karmarkar-Karp with equal counts: micro_batches parts per rank, the ranks' summed costs balanced.
    std::vector<int64_t> weights;
    for (double t : split.costs)
      weights.push_back(static_cast<int64_t>(std::llround(t / costs.per_token)) + 1);
    PostBalanceOptions o;
    o.algorithm = PostBalanceAlgorithm::kKk;
    o.equal_size = true;
    const std::vector<std::vector<uint32_t>> bins = PostBalance(weights, dp, o);
    for (int r = 0; r < dp; ++r) {
      std::vector<uint32_t> parts = bins[static_cast<size_t>(r)];
      std::sort(parts.begin(), parts.end(), [&](uint32_t x, uint32_t y) {
        return split.costs[x] != split.costs[y] ? split.costs[x] < split.costs[y] : x < y;
      });
      std::vector<uint32_t> placed(parts.size());
      if (order == "ascending") {
        placed = parts;
      } else if (order == "descending") {
        placed.assign(parts.rbegin(), parts.rend());
      } else {  // light-ends: lightest first and last, the heaviest in the middle
        size_t front = 0, back = parts.size();
        for (size_t q = 0; q < parts.size(); ++q) placed[q % 2 == 0 ? front++ : --back] = parts[q];
      }
      for (size_t q = 0; q < placed.size(); ++q) {
        const size_t part = placed[q];
        const size_t begin = part == 0 ? 0 : split.ends[part - 1], end = split.ends[part];
        DataStep& step = plan.steps[it * static_cast<size_t>(m) + q];
        step.ranks.resize(static_cast<size_t>(dp));
        auto& samples = step.ranks[static_cast<size_t>(r)].samples;
        samples.assign(chunk.begin() + static_cast<std::ptrdiff_t>(begin),
                       chunk.begin() + static_cast<std::ptrdiff_t>(end));
        padded += static_cast<double>(end - begin) * static_cast<double>(items[begin].llm_tokens);
        for (size_t s = begin; s < end; ++s) real += static_cast<double>(items[s].llm_tokens);
      }
    }
  }
  plan.dropped_remainder = static_cast<int64_t>(shuffled.size() - iterations * per_iteration);
  plan.metrics["dynapipe_padding_ratio"] = real > 0 ? padded / real : 1.0;
  return plan;
}

}  // namespace mmtwin

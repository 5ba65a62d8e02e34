// SPDX-License-Identifier: Apache-2.0
#include "core/balance/wlb.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include "core/balance/post_balance.h"
#include "core/util/rng.h"

namespace mmtwin {

WlbPacker::WlbPacker(WlbOptions o) : o_(std::move(o)) { queues_.resize(o_.thresholds.size()); }

double WlbPacker::Workload(const WlbItem& it) const {
  const double d = static_cast<double>(it.llm_tokens);
  return o_.costs.per_token * d + o_.costs.per_pair * d * d +
         o_.costs.per_encoder_token * static_cast<double>(it.encoder_tokens);
}

int64_t WlbPacker::Waiting() const {
  int64_t n = static_cast<int64_t>(remained_.size());
  for (const auto& q : queues_) n += static_cast<int64_t>(q.size());
  return n;
}

Result<std::vector<std::vector<uint32_t>>> WlbPacker::Pack(const std::vector<WlbItem>& draw, bool last) {
  const int64_t call = call_++;
  const size_t n_mb = static_cast<size_t>(std::max(1, o_.micro_batches));
  // Algorithm 1 lines 4-10: outliers to their queue, the others to this iteration.
  std::vector<Held> fresh;
  for (const WlbItem& it : draw) {
    if (!o_.thresholds.empty() && it.llm_tokens >= o_.thresholds[0]) {
      const size_t q =
          static_cast<size_t>(std::upper_bound(o_.thresholds.begin(), o_.thresholds.end(), it.llm_tokens) -
                              o_.thresholds.begin()) -
          1;
      queues_[q].push_back({it, call});
    } else {
      fresh.push_back({it, call});
    }
  }
  // Lines 11-15: a queue holding one outlier per micro-batch gives N of them (the oldest); the last iteration
  // takes everything.
  for (auto& q : queues_) {
    const size_t take = last ? q.size() : (q.size() >= n_mb ? n_mb : 0);
    fresh.insert(fresh.end(), q.begin(), q.begin() + static_cast<std::ptrdiff_t>(take));
    q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(take));
  }
  // No micro-batch may stay empty: release the oldest outliers early when the others are too few.
  while (remained_.size() + fresh.size() < n_mb) {
    std::vector<Held>* oldest = nullptr;
    for (auto& q : queues_)
      if (!q.empty() && (!oldest || q.front().drawn < oldest->front().drawn)) oldest = &q;
    if (!oldest)
      return Error("wlb-llm: " + std::to_string(remained_.size() + fresh.size()) + " samples for " +
                   std::to_string(n_mb) + " micro-batches");
    fresh.push_back(oldest->front());
    oldest->erase(oldest->begin());
  }
  // Line 16: the new samples longest first (equal lengths in draw order); the carried ones before them.
  std::stable_sort(fresh.begin(), fresh.end(),
                   [](const Held& a, const Held& b) { return a.item.llm_tokens > b.item.llm_tokens; });
  std::vector<Held> docs = std::move(remained_);
  remained_.clear();
  docs.insert(docs.end(), fresh.begin(), fresh.end());

  // Lines 20-31: the least-loaded micro-batch if the sample fits there, else the shortest if it fits there.
  std::vector<std::vector<uint32_t>> bins(n_mb);
  std::vector<double> load(n_mb, 0);
  std::vector<int64_t> len(n_mb, 0);
  std::set<std::pair<double, size_t>> by_load;
  std::set<std::pair<int64_t, size_t>> by_len;
  for (size_t b = 0; b < n_mb; ++b) {
    by_load.insert({0.0, b});
    by_len.insert({0, b});
  }
  auto fits = [&](size_t b, int64_t t) { return o_.max_tokens <= 0 || len[b] + t <= o_.max_tokens; };
  for (const Held& h : docs) {
    const int64_t t = h.item.llm_tokens;
    size_t b = by_load.begin()->second;
    if (!fits(b, t)) {
      b = by_len.begin()->second;
      if (!fits(b, t)) {
        remained_.push_back(h);
        ++carried_;
        continue;
      }
    }
    by_load.erase({load[b], b});
    by_len.erase({len[b], b});
    load[b] += Workload(h.item);
    len[b] += t;
    by_load.insert({load[b], b});
    by_len.insert({len[b], b});
    bins[b].push_back(h.item.sample);
    placed_.push_back({h.item, call - h.drawn});
  }
  double total = 0, mx = 0;
  for (size_t b = 0; b < n_mb; ++b) {
    if (bins[b].empty())
      return Error("wlb-llm: micro-batch " + std::to_string(b) + " of iteration " + std::to_string(call) +
                   " is empty (every sample waits under max_tokens " + std::to_string(o_.max_tokens) + ")");
    total += load[b];
    mx = std::max(mx, load[b]);
  }
  last_imbalance_ = total > 0 ? mx * static_cast<double>(n_mb) / total : 1.0;
  return bins;
}

const std::vector<ParamSpec> kWlbParams = {
    {"batch_size",
     ParamType::kInt,
     "4",
     "samples per micro-batch on average: each iteration draws dp x micro_batches x batch_size samples",
     {},
     1,
     1 << 20},
    {"max_tokens",
     ParamType::kInt,
     "0",
     "packed LLM tokens per micro-batch at most (WLB-LLM's S_max, the memory limit); 0 = no limit",
     {},
     0,
     1e12},
    {"outlier_tokens",
     ParamType::kInt,
     "0",
     "L_1: a sample with at least this many LLM tokens is an outlier and waits in a queue; "
     "0 = batch_size x the trace's mean",
     {},
     0,
     1e12},
    {"queues",
     ParamType::kInt,
     "2",
     "outlier queues, thresholds L_1, 2 L_1, 4 L_1, ... (the last open above); 0 = no outlier delay (packing "
     "only)",
     {},
     0,
     16},
};

Result<DataPlan> RunWlbPolicy(const DataPolicyContext& ctx, const Params& p) {
  const int dp = ctx.dp, m = std::max(1, ctx.micro_batches);
  const int64_t b = p.Int("batch_size"), max_tokens = p.Int("max_tokens");
  const int queues = static_cast<int>(p.Int("queues"));
  const SampleSizes& sz = *ctx.sizes;
  DataPlan plan;
  plan.dp = dp;
  plan.packed = true;  // varlen packing: every sample attends within itself
  // Samples no micro-batch can hold alone are skipped; the others are drawn in a seeded random order.
  std::vector<uint32_t> order;
  double sum_tokens = 0;
  for (uint32_t i = 0; i < static_cast<uint32_t>(sz.size()); ++i) {
    if (max_tokens > 0 && sz.llm_tokens[i] > max_tokens) {
      plan.skipped.push_back(i);
    } else {
      order.push_back(i);
      sum_tokens += static_cast<double>(sz.llm_tokens[i]);
    }
  }
  Rng rng = Rng(ctx.seed).Fork(19);
  rng.Shuffle(order);

  WlbOptions o;
  o.micro_batches = dp * m;
  o.max_tokens = max_tokens;
  o.costs = DynapipeCosts::Of(*ctx.model, 0);
  int64_t l1 = p.Int("outlier_tokens");
  if (l1 <= 0 && !order.empty())
    l1 = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(b) * sum_tokens /
                                                             static_cast<double>(order.size()))));
  for (int q = 0; q < queues; ++q) o.thresholds.push_back(l1 << q);
  WlbPacker packer(o);

  const size_t per_iteration = static_cast<size_t>(dp) * static_cast<size_t>(m) * static_cast<size_t>(b);
  const size_t iterations = per_iteration > 0 ? order.size() / per_iteration : 0;
  plan.steps.resize(iterations * static_cast<size_t>(m));
  std::vector<WlbItem> draw;
  double imbalance = 0;
  for (size_t it = 0; it < iterations; ++it) {
    draw.clear();
    for (size_t k = it * per_iteration; k < (it + 1) * per_iteration; ++k) {
      const uint32_t s = order[k];
      draw.push_back({s, sz.llm_tokens[s], static_cast<int64_t>(sz.vit_tokens[s]) + sz.audio_tokens[s]});
    }
    MMTWIN_ASSIGN_OR_RETURN(std::vector<std::vector<uint32_t>> bins,
                            packer.Pack(draw, /*last=*/it + 1 == iterations));
    imbalance += packer.LastImbalance();
    // Karmarkar-Karp with equal counts: micro_batches of them per rank, the ranks' workloads balanced; a rank's
    // micro-batches in packing order.
    std::vector<int64_t> weights;
    for (const auto& bin : bins) {
      double w = 0;
      for (uint32_t s : bin)
        w += packer.Workload(
            {s, sz.llm_tokens[s], static_cast<int64_t>(sz.vit_tokens[s]) + sz.audio_tokens[s]});
      weights.push_back(static_cast<int64_t>(std::llround(w / o.costs.per_token)) + 1);
    }
    PostBalanceOptions pb;
    pb.algorithm = PostBalanceAlgorithm::kKk;
    pb.equal_size = true;
    std::vector<std::vector<uint32_t>> ranks = PostBalance(weights, dp, pb);
    for (int r = 0; r < dp; ++r) {
      std::vector<uint32_t>& parts = ranks[static_cast<size_t>(r)];
      std::sort(parts.begin(), parts.end());
      for (size_t q = 0; q < parts.size(); ++q) {
        DataStep& step = plan.steps[it * static_cast<size_t>(m) + q];
        step.ranks.resize(static_cast<size_t>(dp));
        step.ranks[static_cast<size_t>(r)].samples = std::move(bins[parts[q]]);
      }
    }
  }
  plan.dropped_remainder = static_cast<int64_t>(order.size() - iterations * per_iteration) + packer.Waiting();
  double tokens = 0, token_delay = 0, delayed = 0;
  for (const auto& [item, waited] : packer.Placed()) {
    tokens += static_cast<double>(item.llm_tokens);
    token_delay += static_cast<double>(item.llm_tokens) * static_cast<double>(waited);
    delayed += waited > 0 ? 1 : 0;
  }
  plan.metrics["wlb_imbalance"] = iterations > 0 ? imbalance / static_cast<double>(iterations) : 1.0;
  plan.metrics["wlb_delayed_samples"] = delayed;
  plan.metrics["wlb_token_delay_iterations"] = tokens > 0 ? token_delay / tokens : 0.0;
  plan.metrics["wlb_carried_samples"] = static_cast<double>(packer.Carried());
  plan.metrics["wlb_outlier_tokens"] = static_cast<double>(queues > 0 ? l1 : 0);
  return plan;
}

}  // namespace mmtwin

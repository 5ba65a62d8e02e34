// SPDX-License-Identifier: Apache-2.0
// DynaPipe's micro-batching (Jiang et al., "DynaPipe: Optimizing Multi-task Training through Dynamic
// Pipelines", EuroSys'24, §4): the samples of one iteration, sorted by length, are cut by dynamic programming into
// consecutive micro-batches that minimise the pipeline's iteration time estimate
//     (pp - 1) * max_k T_k + sum_k T_k          (1F1B: the slowest micro-batch once per extra stage, then all)
// where micro-batch k is padded to its longest sample (T_k below), under a cap of padded tokens per micro-batch
// (the memory limit); the micro-batches are then dealt to the DP ranks by Karmarkar-Karp with equal counts
// (DynaPipe's balanced assignment across data-parallel groups).
//
// mmtwin's choices where the paper leaves a rule open (documented in scenarios/README.md):
// - The micro-batch count is the scenario's: exactly dp x micro_batches per iteration (mmtwin's plans hold a fixed
//   M per rank; DynaPipe and Hydraulis also choose the count).
// - T_k, in FLOPs of the LLM and its encoders (relative only: nothing here is a time):
//       T_k = n_k * (a * L_k + b * L_k^2) + e * (encoder tokens of its samples) + c
//   n_k samples padded to the longest LLM length L_k, a = 2 x the LLM's matmul parameters (FLOPs per token),
//   b = 2 x layers x heads x head_dim (causal attention per pair), e = 2 x the encoders' matmul parameters per
//   encoder token, c = `overhead_tokens` x a (a fixed cost per micro-batch).
// - The split: for a cap C on max T_k, the least sum under C over exactly K consecutive parts is a DP over
//   (parts, prefix), O(K n w) for parts of at most w samples under C. Without a cap it gives the least sum S (pp 1's
//   answer); with pp > 1 only caps C with (pp - 1) C + S below the best objective so far can improve, so the caps
//   tried are the parts' costs in [max(costliest sample, S / K), that bound]: all of them when there are at most
//   `kDynapipeExactCaps` (exact), else a geometric grid of 13 caps and, around the best, every candidate when at
//   most 32, else a finer grid (two levels) — exact in the tests' sizes, a search beyond (about 9 ms for an
//   iteration of 512 samples into 128 micro-batches: reports/benchmarks.md).
// - A micro-batch holds at most `max_samples` samples (default 4 x batch_size): the DP's width, which bounds its
//   cost (O(K n w)); the paper bounds micro-batches by memory only (`max_tokens`).
// - Order within a rank (`order`): light-ends (Hydraulis, Li et al. 2024: the lightest micro-batches at both ends
//   of the 1F1B order, shrinking warm-up and cool-down), or as dealt (heaviest first).
#pragma once

#include <cstdint>
#include <vector>

#include "core/balance/data_policy.h"

namespace mmtwin {

inline constexpr int kDynapipeExactCaps = 64;

// The relative cost model of one micro-batch (see above).
struct DynapipeCosts {
  double per_token = 1;          // a
  double per_pair = 0;           // b
  double per_encoder_token = 0;  // e
  double per_micro_batch = 0;    // c
  // a, b, e from the model's LLM and encoders, c = overhead_tokens x a.
  static DynapipeCosts Of(const ModelSpec& model, double overhead_tokens);
};

// One sample as the split sees it.
struct DynapipeItem {
  int64_t llm_tokens = 0;
  int64_t encoder_tokens = 0;
};

struct DynapipeSplit {
  std::vector<size_t> ends;   // part k is items [ends[k-1], ends[k]) of the sorted input (ends.back() = n)
  std::vector<double> costs;  // T_k
  double objective = 0;       // (pp - 1) max T + sum T
};

// The cost of items [i, j) of `sorted` (sorted by llm_tokens, descending) as one padded micro-batch.
double DynapipeCost(const std::vector<DynapipeItem>& sorted, size_t i, size_t j, const DynapipeCosts& c);

// The best split of `sorted` (llm_tokens descending) into exactly k consecutive parts, none above max_tokens padded
// LLM tokens (0 = no cap) or max_samples samples (0 = no limit). Error when k is not in [1, n] or no split meets
// the caps.
Result<DynapipeSplit> SplitDynapipe(const std::vector<DynapipeItem>& sorted, int k, int pp,
                                    const DynapipeCosts& c, int64_t max_tokens, size_t max_samples = 0);

// The registry entry's run function and parameters (data_policy.cc lists it).
Result<DataPlan> RunDynapipePolicy(const DataPolicyContext& ctx, const Params& p);
extern const std::vector<ParamSpec> kDynapipeParams;

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Data-balance policies: one explicit registry (name, one-line description, typed parameters, run function).
// Every policy is pure: same trace, model sizes, dp and seed -> same DataPlan.
//
//   DataPolicyContext ctx{&trace, &model, &sizes, /*dp=*/16};
//   MMTWIN_ASSIGN_OR_RETURN(DataPlan plan, RunDataPolicy("isf", {{"iterations", "10"}}, ctx));
//
// Built in (see DataPolicies() for parameters):
//   random        fixed batch size, random samples, padded to the longest in the mini-batch (OmniBal baseline),
//                 or packed into one varlen sequence (packed: true; OrchMLLM without balancing)
//   length-group  LLaVA's length-grouped sampler: similar sizes within a mini-batch, not across ranks
//   device-group  sizes matched across the ranks of one step (snake deal of a sorted mega-batch), not within
//   isf           OmniBal's iterative sampling and filtering: packed groups bounded by Q_v images and Q_t tokens;
//                 variant mmtwin (default) or omnibal-public (the published code's rounds, start point and quirks)
//   post-balance  OrchMLLM batch post-balancing of random mini-batches across DP ranks, node-wise placement
//   orchestrator  OrchMLLM multimodal global orchestrator: per-phase (encoders, LLM) post-balancing
//   dynapipe      DynaPipe's micro-batching: each iteration's samples sorted and split by dynamic programming into
//                 padded micro-batches minimising (pp - 1) max + sum of their costs, dealt by Karmarkar-Karp
//                 (core/balance/dynapipe.h); depends on pp and micro_batches (DataPolicyUsesPipeline)
//   wlb-llm       WLB-LLM's workload-aware variable-length packing with outlier delay: each iteration's samples
//                 packed longest first into the least-loaded of its dp x micro_batches micro-batches under a
//                 token cap, long samples held in length queues until every micro-batch can take one
//                 (core/balance/wlb.h); depends on micro_batches (DataPolicyUsesPipeline)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/balance/data_plan.h"
#include "core/util/params.h"
#include "core/util/registry.h"

namespace mmtwin {

struct DataPolicyContext {
  const Trace* trace = nullptr;
  const ModelSpec* model = nullptr;
  const SampleSizes* sizes = nullptr;
  int dp = 1;
  int ranks_per_node = 8;  // for node-wise placement and inter-node traffic
  uint64_t seed = 1;
  // The pipeline the mini-batches feed, for policies that shape micro-batches for it (dynapipe): pipeline
  // stages, and micro-batches per DP rank per iteration (consecutive groups of this many steps form an iteration).
  int pp = 1;
  int micro_batches = 1;
};

using DataPolicyFn = Result<DataPlan> (*)(const DataPolicyContext&, const Params&);

using DataPolicyInfo = RegistryEntry<DataPolicyFn>;

// The registry (core/util/registry.h), in a fixed order.
const PolicyRegistry<DataPolicyFn>& DataPolicyRegistry();
const std::vector<DataPolicyInfo>& DataPolicies();
// Error "unknown data policy 'x'; valid values are: random, ..." for an unknown name.
Result<const DataPolicyInfo*> FindDataPolicy(std::string_view name);
// Whether the policy's plan depends on the context's pp and micro_batches (the planner's data-plan cache keys on
// them then): dynapipe, wlb-llm.
bool DataPolicyUsesPipeline(std::string_view name);
// Validates parameters and runs the policy; the plan carries the resolved parameters.
Result<DataPlan> RunDataPolicy(std::string_view name, const std::map<std::string, std::string>& params,
                               const DataPolicyContext& ctx);

// ISF thresholds (OmniBal §5.1 and its public code), two start points (policy parameter `variant`):
// - mmtwin (AutoIsfThresholds): Q_t = max(longest LLM length, ceil(batch_size * mean LLM length)), so every sample
//   fits (nothing is skipped by default) and a mini-batch holds about batch_size samples even when the longest
//   sample is short (short-text data: Q_t = the longest sample alone gives about 2 per mini-batch);
//   ave = max(16, ((mean_t / max(mean_v, 1) + 1) / 16) * 16) (integer division); Q_v = max(1, Q_t / ave).
// - omnibal-public (OmnibalPublicIsfThresholds, test_balanced_dynamic_batch.py get_init_llm_vit_len):
//   Q_t = 4096; mean_t over LLM lengths rounded up to multiples of 256 (its collect_origin_info); Q_v = 4096 / ave
//   with ave as above but no floor: ave = 0 (mean_t < 15 mean vision units) is an error, as it divides by zero.
struct IsfThresholds {
  int64_t q_v = 0;  // max vision units (tiles + frames) per group
  int64_t q_t = 0;  // max LLM tokens per group
};
constexpr int64_t kOmnibalPublicQt = 4096;
IsfThresholds AutoIsfThresholds(const SampleSizes& sizes, int64_t batch_size);
IsfThresholds AutoIsfThresholds(const SampleSizes& sizes, int64_t batch_size,
                                const std::vector<uint32_t>& samples);
Result<IsfThresholds> OmnibalPublicIsfThresholds(const SampleSizes& sizes);
Result<IsfThresholds> OmnibalPublicIsfThresholds(const SampleSizes& sizes,
                                                 const std::vector<uint32_t>& samples);

// Policies implemented in post_balance_policy.cc.
Result<DataPlan> RunPostBalancePolicy(const DataPolicyContext& ctx, const Params& p);
Result<DataPlan> RunOrchestratorPolicy(const DataPolicyContext& ctx, const Params& p);
extern const std::vector<ParamSpec> kPostBalanceParams;
extern const std::vector<ParamSpec> kOrchestratorParams;

// Shared helper: random mini-batches of `batch_size` per rank (the draw post-balancing starts from).
DataPlan RandomBatches(const DataPolicyContext& ctx, int64_t batch_size, uint64_t seed_stream);

}  // namespace mmtwin

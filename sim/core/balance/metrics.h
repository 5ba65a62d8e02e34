// SPDX-License-Identifier: Apache-2.0
// Data-balance metrics of a DataPlan (OmniBal eq. 1 and 2), computed from model-dependent sample sizes.
//
// - pad_ratio: per mini-batch of B samples with LLM lengths t_i, sum(t_max - t_i) / (t_max * B); mean over
//   mini-batches. Packed plans (ISF, post-balancing) have no padding: 0.
// - dist_ratio_vit / dist_ratio_llm: per step over the d ranks' mini-batch totals T_i, sum(T_max - T_i) / (T_max * d);
//   mean over steps. ViT totals are sum of ViT tokens (tiles are batched, never padded); LLM totals are what the
//   device computes: B * t_max when padded, sum t_i when packed.
//
//   DataMetrics m = ComputeDataMetrics(plan, sizes);
//   std::cout << MetricsToJson(plan, m).dump(2);
#pragma once

#include <cstdint>

#include "core/balance/data_plan.h"

namespace mmtwin {

struct DataMetrics {
  double pad_ratio = 0;
  double dist_ratio_vit = 0;
  double dist_ratio_llm = 0;
  double mean_batch_size = 0;  // samples per non-empty mini-batch (OmniBal's AVE-BS)
  int64_t samples_placed = 0;
  int64_t samples_skipped = 0;
  int64_t samples_dropped = 0;  // incomplete last step
  int64_t steps = 0;
  int64_t max_vit_tokens = 0;        // largest mini-batch ViT tokens (OmniBal "Max-Seq-Len" ViT)
  int64_t max_llm_tokens = 0;        // largest mini-batch LLM tokens as computed (padded if padded)
  double mean_vit_tokens = 0;        // per mini-batch
  double mean_llm_tokens = 0;        // per mini-batch, as computed
  double llm_compute_over_real = 0;  // computed LLM tokens / real LLM tokens (1 = no padding)
};

DataMetrics ComputeDataMetrics(const DataPlan& plan, const SampleSizes& sizes);

// One JSON object: the metrics above plus the plan's policy, params and policy-specific metrics/details.
std::string MetricsToJson(const DataPlan& plan, const DataMetrics& m);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// WLB-LLM's workload-aware variable-length packing with outlier delay (Wang et al., "WLB-LLM: Workload-Balanced
// 4D Parallelism for Large Language Model Training", OSDI'25, §4, Algorithm 1): each iteration's samples are
// packed into the iteration's micro-batches, the longest first, each into the micro-batch with the least
// workload while it stays within a token cap (else the one with the fewest tokens; else the sample waits for the
// next iteration); samples longer than an outlier threshold wait in length queues until a queue holds one for
// every micro-batch, so that every micro-batch gets one instead of one micro-batch getting several.
//
// As the paper has it (§4.1-4.2, Algorithm 1):
// - A micro-batch's workload is the sum of its samples' W(d) = W_a(d) + W_l(d): attention, quadratic in the
//   sample's own length (packed varlen sequences attend within each sample), and everything linear in it.
// - Per iteration: the drawn outliers go to their queue (queue i holds L_i <= d < L_{i+1}); every queue holding at
//   least N (the iteration's micro-batches) gives its N oldest to this iteration; the samples the cap left out
//   of the iteration before are packed first, then the new ones sorted by length, longest first; each goes to
//   the least-loaded micro-batch when it fits under the cap, else to the shortest one when it fits there, else
//   it waits for the next iteration (the paper's strict "< S_max" is this "<= max_tokens" with S_max =
//   max_tokens + 1).
//
// mmtwin's choices where the paper is open (documented in scenarios/README.md):
// - W(d) is DynaPipe's relative FLOP model (core/balance/dynapipe.h DynapipeCosts, overhead 0): a d + b d^2 +
//   e (encoder tokens), a = 2 x the LLM's matmul parameters, b = 2 x layers x heads x head_dim, e = 2 x the
//   encoders' matmul parameters per encoder token; the paper profiles W_a and W_l and publishes no constants.
// - N = dp x micro_batches: the iteration's micro-batches over all DP ranks are packed together (the paper's
//   global batch, PP x DP micro-batches in its runs), then dealt to the ranks by Karmarkar-Karp with equal counts
//   (a rank's micro-batches in packing order). Each iteration draws N x batch_size samples (the dataloader's batch).
// - Thresholds: L_1 = `outlier_tokens`, by default ceil(batch_size x the trace's mean LLM tokens) (a sample
//   longer than an average micro-batch cannot be balanced by the others), L_{i+1} = 2 L_i, `queues` queues (the
//   last one open above); the paper picks them by running the packer on a sample of the data and publishes none.
//   Table 2 reaches its balance with 2 queues (1.05), the default; queues 0 turns the delay off (packing only).
// - The last iteration of the epoch releases every queue whatever it holds and packs what the cap left over
//   into it if it fits anywhere (what still does not is counted with the incomplete last draw,
//   DataPlan::dropped_remainder: it would be trained in the next epoch). A sample above max_tokens alone is
//   skipped (DataPlan::skipped). When the non-outliers of an iteration are fewer than N, queued outliers (oldest
//   first) are released early so that no micro-batch is empty.
// - Ties (equal workloads or lengths) go to the lowest micro-batch index; samples of equal length keep their
//   draw order.
// Metrics (DataPlan::metrics): wlb_imbalance (the paper's §7.4 degree on the cost model: max workload x N /
// total, the mean over iterations), wlb_delayed_samples (outliers that waited at least one iteration),
// wlb_token_delay_iterations (iterations a token waited, the mean over every placed token; the paper reports 0.5),
// wlb_carried_samples (placements the cap postponed).
#pragma once

#include <cstdint>
#include <vector>

#include "core/balance/data_policy.h"
#include "core/balance/dynapipe.h"

namespace mmtwin {

// One sample as the packer sees it.
struct WlbItem {
  uint32_t sample = 0;  // trace index
  int64_t llm_tokens = 0;
  int64_t encoder_tokens = 0;
};

struct WlbOptions {
  int micro_batches = 1;   // N
  int64_t max_tokens = 0;  // packed LLM tokens per micro-batch at most; 0 = no cap
  // Queue thresholds L_1 < L_2 < ...: queue i holds samples with L_i <= tokens < L_{i+1} (the last open above);
  // empty = no outlier delay.
  std::vector<int64_t> thresholds;
  DynapipeCosts costs;
};

// Algorithm 1 as a state machine over the dataloader's draws: Pack(draw) returns one iteration's N micro-batches
// (trace indices, each non-empty); queues and samples carried by the cap persist between calls.
class WlbPacker {
 public:
  explicit WlbPacker(WlbOptions o);
  double Workload(const WlbItem& it) const;
  // `last`: the epoch's last iteration (every queue released). Error when fewer than N samples are at hand.
  Result<std::vector<std::vector<uint32_t>>> Pack(const std::vector<WlbItem>& draw, bool last);
  // Samples still waiting (queued or carried) after the last Pack.
  int64_t Waiting() const;
  // Per packed sample so far: iterations waited (the Pack call it was drawn in to the one that placed it).
  const std::vector<std::pair<WlbItem, int64_t>>& Placed() const { return placed_; }
  int64_t Carried() const { return carried_; }
  // max workload x N / total workload of the last Pack's micro-batches.
  double LastImbalance() const { return last_imbalance_; }

 private:
  struct Held {
    WlbItem item;
    int64_t drawn = 0;  // the Pack call it was drawn in
  };
  WlbOptions o_;
  std::vector<std::vector<Held>> queues_;  // FIFO each
  std::vector<Held> remained_;
  std::vector<std::pair<WlbItem, int64_t>> placed_;
  int64_t call_ = 0, carried_ = 0;
  double last_imbalance_ = 0;
};

// The registry entry's run function and parameters (data_policy.cc lists it).
Result<DataPlan> RunWlbPolicy(const DataPolicyContext& ctx, const Params& p);
extern const std::vector<ParamSpec> kWlbParams;

}  // namespace mmtwin

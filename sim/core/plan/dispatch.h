// SPDX-License-Identifier: Apache-2.0
// The data-dispatch all-to-all of post-balancing (OrchMLLM): which bytes move from which DP rank to which
// before a micro-batch's forward. Filled by the post-balance and orchestrator data policies (core/balance),
// carried by IterationData and IterationCosts (core/plan/plan.h) and charged as dispatch ops by the op graph
// (core/graph/op_graph.h). Ranks are DP ranks (dp_idx); bytes per GPU (a TP group's ranks each receive the
// whole sample). Contract of a list after AggregateTransfers: sorted by (src_rank, dst_rank), one entry per
// pair, src_rank != dst_rank, bytes > 0.
//
//   std::vector<DispatchTransfer> t = {{0, 1, 10}, {0, 1, 5}, {2, 2, 7}};
//   AggregateTransfers(&t);  // t == {{0, 1, 15}}
#pragma once

#include <cstdint>
#include <vector>

namespace mmtwin {

struct DispatchTransfer {
  int32_t src_rank = 0;
  int32_t dst_rank = 0;
  int64_t bytes = 0;
  bool operator==(const DispatchTransfer& o) const {
    return src_rank == o.src_rank && dst_rank == o.dst_rank && bytes == o.bytes;
  }
};

// Sums the bytes per (src, dst) pair, drops transfers to the sender itself and empty ones, sorts by pair.
void AggregateTransfers(std::vector<DispatchTransfer>* transfers);

}  // namespace mmtwin

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
#include <span>
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

// The dispatcher's own work of one step besides moving the samples (OrchMLLM §5.2.1, §7), set by the data
// policy and priced by the op graph before the step's forward all-to-all:
// - length_gather_bytes: the all-gather of every rank's sample lengths (per rank, its output: dp x the largest
//   mini-batch x the phases' lengths x 8 bytes), priced by the cluster's collective model over the DP group;
// - host_us: the host time on the critical path between that all-gather and the all-to-all (unpacking the
//   gathered lengths, balancing, building the rearrangement), microseconds.
struct DispatchOverhead {
  int64_t length_gather_bytes = 0;
  double host_us = 0;
  bool empty() const { return length_gather_bytes <= 0 && host_us <= 0; }
  bool operator==(const DispatchOverhead&) const = default;
};

// One transfer of an all-to-all as the chains below see it: sender, receiver (any non-negative ids), whether it
// runs inside a node (NVLink) or across nodes (the NIC share), and its time alone, microseconds.
struct TimedTransfer {
  int32_t src = 0;
  int32_t dst = 0;
  bool in_node = false;
  double us = 0;
};

// The no-contention time of an all-to-all whose devices share their links (incast and NIC sharing): a device's
// sends across nodes share its NIC share, its sends inside the node its NVLink, and its receives likewise, so
// the all-to-all lasts the longest of these per-device, per-link chains, each the sum of its transfers' times:
//   us = max over devices v, links k of max(sum of t.us over v's sends on k, sum over v's receives on k).
// receive_bound: the longest chain is a receive chain (and no send chain is as long). An empty list takes 0.
// E.g. one device sending b bytes to each of k peers on other nodes: k (lat + b / nic), not lat + b / nic.
struct AllToAllTime {
  double us = 0;
  bool receive_bound = false;
};
AllToAllTime AllToAllChains(std::span<const TimedTransfer> transfers);

}  // namespace mmtwin

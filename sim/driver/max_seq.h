// SPDX-License-Identifier: Apache-2.0
// Max context search (issue 12): the longest sequence each sequence-parallel method can train on a scenario's
// GPUs, by bisection over the memory model (BuildPlan with the memory report: model states, activations and
// buffers per stage, core/plan/memory.h; nothing is timed). `mmtwin plan SCENARIO --max-seq` prints it.
//
// The SP group is the scenario's sp x tp GPUs (G), kept for every method, with its dp and pp:
//   none            sp 1, tp 1, dp x G replicas: every GPU holds a whole sequence (ZeRO shards over all of them)
//   megatron-cp+tp  tp = min(G, gpus_per_node) inside a node, sp = G / tp across
//   ulysses         sp = the largest divisor of G the heads allow (KV heads replicated), the rest of G as dp:
//                   Ulysses cannot shard beyond the heads (LongVILA §4.1, Figure 9 at 256 GPUs)
//   the others      sp = G, tp 1 (2d: its automatic Ulysses x ring split)
// A probe of N tokens plans `dp x micro_batches` text-only sequences of N tokens (trace.sequence_tokens), one
// per micro-batch (data policy random, batch size 1), one iteration, with the scenario's ZeRO stage, partition
// and recompute policies. It fits when every stage's peak fits the device's usable memory.
// Search: N = step, 2 step, 4 step, ... until one does not fit (or limit_tokens), then bisection between the last
// two, in multiples of step_tokens: O(log(max / step)) plans.
//
//   MMTWIN_ASSIGN_OR_RETURN(std::vector<MaxSeqRow> rows, MaxSequenceSearch(scenario, {}));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/scenario/scenario.h"
#include "core/util/status.h"

namespace mmtwin {

struct MaxSeqOptions {
  int64_t step_tokens = 1024;               // granularity of the answer
  int64_t limit_tokens = int64_t{1} << 31;  // search no further (the trace's 32-bit token counts)
  std::vector<std::string> policies;        // SP policies to search (empty: every registered one)
};

struct MaxSeqRow {
  std::string policy;
  int sp = 1, tp = 1, dp = 1, ulysses = 1, ring = 1;
  int64_t max_tokens = 0;  // longest fitting sequence, a multiple of step_tokens (0: not even one step fits)
  int64_t peak_bytes = 0;  // the worst stage's peak at max_tokens (per GPU)
  int64_t capacity_bytes = 0;
  int probes = 0;         // plans built
  bool at_limit = false;  // limit_tokens fits: the true maximum is larger
  std::string
      unavailable;  // why the method cannot use this layout ("parallel.sp: Ulysses degree 64 ..."); then
                    // max_tokens = 0 and nothing was planned
};

// Errors: the scenario's own (as BuildPlan), an unknown policy name, step_tokens < 1.
Result<std::vector<MaxSeqRow>> MaxSequenceSearch(const Scenario& scenario, const MaxSeqOptions& options);

}  // namespace mmtwin

// Chrome / Perfetto trace JSON of one evaluated iteration (open in https://ui.perfetto.dev or
// chrome://tracing).
//
//   {"traceEvents": [...], "displayTimeUnit": "ms"}
//   - one process per device: pid = device + 1 (device = dp_idx * pp + pp_idx; pid 0 is avoided because trace
//     viewers treat it as the kernel's swapper), "M" process_name "dp D / stage S" and process_sort_index
//   - one thread per lane: tid 1 compute, 2 p2p send activation, 3 p2p send gradient, 4 dp collectives ("M"
//     thread_name metadata for each)
//   - one "X" event per op with a positive duration (barriers are left out): name ("F3.c1" forward of
//     micro-batch 3 chunk 1, "R3.c1" recompute, "B3.c1" backward, "TP fwd 3.c1", "send act 3.c1",
//     "send grad 3.c1", "grad sync c1 #0" bucket 0, "all-gather fwd c1"), cat = OpKindName, ts / dur in
//     microseconds rounded to the nanosecond (ts + dur of an event <= ts of the next one on the same tid),
//     args {micro_batch, chunk, bytes} (+ bucket for DP collectives)
//   - "C" counter events "activations" per device (tid 1), args {bytes}: + act_bytes of (dp, mb, chunk) when
//   its
//     forward op finishes, - act_bytes when its backward op finishes; starts at 0 at ts 0.
//
//   nlohmann::json trace = PerfettoTrace(graph, EvaluateAnalytic(graph), costs, parallel);
//   WriteFileAtomic(dir + "/trace.json", trace.dump());
#pragma once

#include <nlohmann/json.hpp>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/plan.h"

namespace mmtwin {

struct PerfettoOptions {
  // Draw only DP replicas 0 .. max_dp_replicas-1 (0 = all): a 512-GPU iteration has ~10^5 ops, and replicas
  // of a balanced run look alike.
  int max_dp_replicas = 0;
};

nlohmann::json PerfettoTrace(const OpGraph& graph, const IterationTiming& timing, const IterationCosts& costs,
                             const ParallelConfig& parallel, const PerfettoOptions& options = {});

}  // namespace mmtwin

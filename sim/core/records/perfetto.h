// SPDX-License-Identifier: Apache-2.0
// Chrome / Perfetto trace JSON of one evaluated iteration (open in https://ui.perfetto.dev or
// chrome://tracing).
//
//   {"traceEvents": [...], "displayTimeUnit": "ms"}
//   - one process per device: pid = device + 1 (device = dp_idx * pp + pp_idx; pid 0 is avoided because trace
//     viewers treat it as the kernel's swapper), "M" process_name "dp D / stage S" and process_sort_index
//   - one thread per lane: tid 1 compute, 2 p2p send activation, 3 p2p send gradient, 4 dp collectives,
//     5 data dispatch ("M" thread_name metadata for each); a measured run's waits ("wait act 3.c1", "wait grad
//     3.c1", "wait grad sync": p2p_recv and dp_wait records, the compute thread blocked on a receive or on the
//     gradient collectives) on tid 1 whatever their lane, since they overlap the transfer they wait for
//   - one "X" event per op with a positive duration (barriers are left out): name ("F3.c1" forward of
//     micro-batch 3 chunk 1, "R3.c1" recompute, "B3.c1" backward, "TP fwd 3.c1", "send act 3.c1",
//     "send grad 3.c1", "grad sync c1 #0" bucket 0, "all-gather fwd c1", "dispatch mb3"), cat = OpKindName,
//     ts / dur in
//     microseconds rounded to the nanosecond (ts + dur of an event <= ts of the next one on the same tid),
//     args {iteration (the epoch index: an import maps the trace to its plan iteration), micro_batch, chunk,
//     bytes} (+ bucket for DP collectives)
//   - "C" counter events "activations" per device (tid 1), args {bytes}: + activation_bytes of a forward
//     record when it finishes, - activation_bytes of a backward record when it finishes; starts at 0 at ts 0
//     (drawn when any record is a forward or backward).
//
//   std::string trace = PerfettoTrace(OpRecordsOf(graph, timing, costs, iteration), parallel);
//   RunFolderWriter().AddTrace(trace + "\n").Write(dir);   // a run folder's trace.json (run_folder.h)
#pragma once

#include <string>
#include <vector>

#include "core/records/records.h"

namespace mmtwin {

struct PerfettoOptions {
  // Draw only DP replicas 0 .. max_dp_replicas-1 (0 = all): a 512-GPU iteration has ~10^5 ops, and replicas
  // of a balanced run look alike.
  int max_dp_replicas = 0;
};

// The trace of one iteration's op records (OpRecordsOf for a simulated iteration, or the backend's measured
// ops), as JSON text. Devices are the records' op-graph devices under `parallel`'s layout.
std::string PerfettoTrace(const std::vector<OpRecord>& ops, const ParallelConfig& parallel,
                          const PerfettoOptions& options = {});

}  // namespace mmtwin

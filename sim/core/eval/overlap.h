// SPDX-License-Identifier: Apache-2.0
// Compute slowed by the collectives it overlaps. NCCL runs a collective as CUDA blocks on the GPU's SMs (one per
// channel, 16-32 on A100 / H100: NCCL docs NCCL_MAX_CTAS, src/transport/nvls.cc) and shares its memory
// bandwidth, so a GEMM that runs while a collective does is slower: on A100 / H100 (and MI250 / MI210) GPT and
// LLaMA training, overlapped computation ran 18.9% slower on average, 40% at most (Lee et al., "Characterizing
// Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning", arXiv 2507.03114, abstract).
//
// Model: while a collective of the device's DP or dispatch lane runs, its compute lane progresses at 1 / (1 + s),
// s = DeviceSpec::overlap_slowdown. A compute op that overlaps such collectives for o microseconds of its
// (stretched) span lasts base + o · s / (1 + s). The overlap depends on the timing and the timing on the
// durations, so the stretch is found by fixed-point passes of the analytic evaluator (`passes`, 2 by default:
// the second pass moves iteration times by well under 1% on the shipped scenarios), then written into the
// graph's durations, before any engine evaluates it: the SimGrid engine replays the same stretched compute, and
// without contention both engines still agree exactly. Stated approximations: the overlap is the analytic
// engine's (with contention a collective lasts longer in SimGrid and would slow more compute); TP and SP
// collectives are serialized with compute (op_graph.h) and do not count; P2P sends use copy engines or few SMs and
// do not count either.
//
//   ApplyOverlapSlowdown(graph, cluster.device.overlap_slowdown, &scratch);   // after (re)pricing the graph
//   evaluator.Evaluate(graph, &timing);
#pragma once

#include <vector>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"

namespace mmtwin {

// Stretches the compute ops of `g` (forward, recompute, backward, backward-weight; OpGraph::duration_us and
// Op::duration_us) by the overlap with their device's DP and dispatch collectives; TP and SP collectives on the
// compute lane keep their durations. `slowdown` <= 0, or a graph without such collectives: unchanged.
// Returns the compute microseconds added over all devices. `scratch` is reused between calls.
double ApplyOverlapSlowdown(OpGraph& g, double slowdown, IterationTiming* scratch, int passes = 2);

// The time each compute op of `g` (as above) overlaps collectives of its own device's DP and dispatch lanes under
// `timing` (0 for every other op), microseconds.
std::vector<double> CollectiveOverlapUs(const OpGraph& g, const IterationTiming& timing);

}  // namespace mmtwin

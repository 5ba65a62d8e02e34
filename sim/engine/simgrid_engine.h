// SPDX-License-Identifier: Apache-2.0
// The SimGrid engine: times an iteration's OpGraph (core/graph/op_graph.h) with SimGrid 3.32's discrete-event
// simulation, so that concurrent transfers share links and DP collectives run as their real ring algorithms.
// The second Evaluator (core/eval/evaluator.h); name() is "simgrid". This header includes no SimGrid header
// (the library mmtwin_simgrid links SimGrid privately); see sim/engine/README.md for the platform, the
// network model, the replay and the process protocol.
//
// Contract:
//  - Platform: one SimGrid host per op-graph device (one TP group; its links are one GPU's: the TP ranks run
//    the same transfers in lockstep, each over its own links), placed on nodes in Megatron order. Per device
//    an NVLink port (up and down links, cluster.nvlink_bytes_per_s, nvlink_latency_us) into the node's
//    NVSwitch and a NIC port (up and down links, the GPU's share of the node's NICs, nic_latency_us) into a
//    non-blocking inter-node switch. Link speeds are exactly those of Pricer::Comm() (PlatformComm below);
//    the op graph must have been priced with them (else Evaluate returns an Error naming both).
//  - Replay: compute-lane ops are executions (flops = duration_us * host speed: exact durations); P2P sends are
//    communications between the two devices' hosts; DP collectives are rings (all-reduce 2(d-1) steps of
//    bytes/d to the ring successor; ZeRO reduce-scatter / all-gather (d-1) steps per bucket); barriers are
//    zero-work joins. Dependencies and per-lane order: each activity starts when its last predecessor
//    completes.
//  - contention = false: every link is a FATPIPE (each transfer gets the full bandwidth of every link it
//    crosses): the iteration time then equals the analytic evaluator's (to SimGrid's precision, 1e-9 s).
//    contention = true (default): links are SHARED (max-min fair sharing between the flows crossing them).
//  - Every Evaluate() runs SimGrid in a forked child process (a fresh SimGrid engine each time; an xbt_die or
//    abort in SimGrid becomes an Error carrying SimGrid's last stderr lines, never an abort of the caller).
//  - Times in microseconds in IterationTiming, as the analytic evaluator (AttributeDevices does the breakdown).
//
//   MMTWIN_ASSIGN_OR_RETURN(ClusterSpec cluster, LoadCluster("a100-4x200g", 2));
//   std::unique_ptr<Evaluator> sg = MakeSimGridEvaluator(cluster, SimGridOptions{.contention = false});
//   IterationTiming t;
//   MMTWIN_RETURN_IF_ERROR(sg->Evaluate(graph, &t));  // graph priced with Pricer::Comm() of the same cluster
//
//   // or the whole run (what `mmtwin simulate --engine simgrid` does): the driver makes this evaluator by name
//   // (driver/driver.h MakeEvaluator) for Simulate() with scenario.engine = "simgrid".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/eval/evaluator.h"
#include "core/plan/plan.h"
#include "core/util/status.h"

namespace mmtwin {

struct SimGridOptions {
  bool contention = true;  // false: FATPIPE links, every transfer at full bandwidth
  // Run SimGrid in a forked child (default). false runs it in this process: only for benchmarks and debugging
  // (a SimGrid abort then aborts the caller, and SimGrid's singleton engine allows one Evaluate per process).
  bool isolate = true;
  // Upper bound on the child's run time; 0 = none. A child past it is killed and Evaluate returns an Error.
  double timeout_s = 0;
  // Bucket merging: when the graph's DP rings would need more than this many transfers (ring steps x ranks),
  // consecutive gradient buckets of a chunk (and weight all-gather buckets) are merged k at a time into one
  // ring of summed bytes, with the merged steps' latencies added as a delay after it: the time without
  // contention is unchanged, the activity count drops k-fold, and under contention the merged flows are
  // larger and fewer. 0 = never merge. (512 GPUs, DP 64: ~5M transfers per iteration exact, ~7 s.)
  int64_t max_ring_transfers = 1000000;
  // Aggregated ring steps: a DP ring of more than this many steps (an all-reduce over D replicas takes 2(D - 1))
  // runs its steps in this many groups, each one flow per hop of the group's summed bytes, with the grouped
  // steps' latencies added as a delay after the ring: without contention the time is unchanged (every hop
  // carries the same bytes at the same pace), the transfers drop from 2(D - 1) to this many per hop, and under
  // contention a hop's share is averaged over its group's steps instead of re-paced at every step
  // (tests/engine/simgrid_engine_test.cc, AggregatedRingStepsKeepTheTime, compares both with contention). 0 = every step its own flow.
  int max_ring_steps = 16;
  // Extra SimGrid settings ("name:value", as --cfg=name:value), applied after the engine's own (for
  // experiments, e.g. "network/model:LV08"); an invalid one ends as an Error.
  std::vector<std::string> extra_config;
  // Platform layout (see replay.cc): pods of whole nodes of at most this many devices (TP groups) under one
  // star zone, so memory grows as devices x pod_devices instead of devices^2; 0 = one flat full zone. Both give
  // every talking pair the same two links, so the same times (tests/engine: flat and hierarchical agree).
  int pod_devices = 256;
};

// Counts of one replay (for benchmarks): SimGrid activities created and the wall time inside the child.
struct SimGridReplayStats {
  int64_t executions = 0;
  int64_t communications = 0;
  int64_t joins = 0;                   // zero-work executions and barriers (completed without SimGrid)
  int buckets_per_ring = 1;            // bucket merging factor used (see SimGridOptions::max_ring_transfers)
  bool hierarchical_platform = false;  // pods under a star zone (SimGridOptions::pod_devices), else one zone
  double simulate_seconds = 0;  // wall-clock seconds of platform + activities + Engine::run (in the child)
};

// The link speeds the platform gives the op graph's transfers: the same as Pricer::Comm() for this cluster
// and layout (pipeline sends over NVLink when 2 * tp * dp <= gpus_per_node, DP rings when tp * dp <=
// gpus_per_node, else over NICs at the node's NIC bandwidth / gpus_per_node per GPU). dp_bucket_bytes keeps
// its default.
CommSpec PlatformComm(const ClusterSpec& cluster, const ParallelConfig& parallel);

// The SimGrid evaluator for graphs priced on `cluster` (any parallel layout that fits it). name() =
// "simgrid".
std::unique_ptr<Evaluator> MakeSimGridEvaluator(const ClusterSpec& cluster, SimGridOptions options = {});

// Like Evaluate, also returning the replay's statistics.
Status EvaluateWithSimGrid(const ClusterSpec& cluster, const SimGridOptions& options, const OpGraph& graph,
                           IterationTiming* out, SimGridReplayStats* stats = nullptr);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Collectives as NCCL runs them: the time of one all-reduce, reduce-scatter or all-gather over a group of ranks,
// by algorithm (ring, tree, NVLS) and protocol (LL, LL128, Simple), with NCCL's own choice (the pair its tuning
// model predicts fastest). The one place that turns a collective call into microseconds for the "nccl" model of
// a cluster (cluster.h CollectiveSpec); core/plan/comm_cost.h calls it, and the SimGrid engine replays the
// choice it returns (sim/engine/README.md).
//
// The model is NCCL's tuning model (NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel; constants below name
// their source), time = latency + bytes / algorithm bandwidth, with the bandwidth taken from the cluster's links
// instead of NCCL's topology search:
//   group: n ranks on N nodes, g = n / N of them per node (Megatron order: the members of a DP group on one node
//          are consecutive, core/plan/mesh.h);
//   bus bandwidth (bytes/s), Simple protocol:
//     ring, tree: nvlink x nvlink_bus_fraction inside one node; across nodes at most g x nic_share x
//                 nic_bus_fraction (NCCL's rings cross each node once per channel, one channel per NIC: the
//                 group's g GPUs on a node drive g NICs; a rail-aligned group of one per node its own share);
//     NVLS:       nvlink x nvls_bus_fraction; NVLS_TREE across nodes at most the NIC bound (twice it on two
//                 nodes, tuning.cc line 320);
//   protocols (tuning.cc): ring LL x 1/4 (all-reduce or across nodes, else 1/3) at most llMaxBw (87.7 GB/s on
//     one node, 39.0 on two, 20.4 on more); ring LL128 x 0.92 (0.7 with one GPU per node); tree x 0.92, LL / 3.8
//     (at most llMaxBw), LL128 x 120/128, then treeCorrectionFactor by size; NVLS Simple only;
//   algorithm bandwidth: ring and NVLS all-reduce busBw x n / (2 (n - 1)); ring reduce-scatter / all-gather
//     busBw x n / (n - 1); tree all-reduce busBw / 2 (tuning.cc lines 376-382); the message is the collective's
//     buffer per rank (all-reduce: the tensor; reduce-scatter: its input; all-gather: its output), as nccl-tests
//     counts `size`;
//   latency (us), with baseLat / hwLat of tuning.cc for (algorithm, protocol), intra = hwLat[NVLINK], inter =
//     hwLat[NET]:
//     ring: baseLat + (steps - inter_steps) max(intra, net overhead) + inter_steps inter, steps = 2 (n - 1) for
//           all-reduce, n - 1 otherwise; inter_steps = 2 (N - 1) for all-reduce, N - 1 otherwise (one network
//           hop per node crossing); the net overhead (1 us, x 3 for Simple) only across nodes;
//     tree (all-reduce, N > 1): baseLat + 2 ((g - 1) intra + ceil(log2 N) inter);
//     NVLS (all-reduce, nvls): intra (one node; it replaces the base), NVLS_TREE across nodes: + 2 log2(N) inter;
//     plus, for LL128 and Simple, the pipeline's fill and drain that NCCL's model leaves out, fitted on nccl-tests
//     curves: pipeline_us x bytes / (bytes + pipeline_half_bytes) (nvls_pipeline_* for NVLS).
// Choice: the (algorithm, protocol) of least time among those NCCL enables for the call (tree and NVLS for
// all-reduce only; tree only across nodes: inside one node NCCL's tree is a chain of the node's GPUs, which mmtwin
// does not offer (a modelling choice: nccl-tests' one-node curves are the ring's or NVLS's); LL128 on the
// NVLink-class GPUs of the presets that use this model).
//
//   CollectiveGroup g{.ranks = 64, .ranks_per_node = 8};
//   CollectiveTime t = NcclCollective(CollectiveOp::kAllReduce, 1 << 30, g, links);
//   t.us;  t.algo;  t.latency_us;  t.bus_bytes_per_s;
#pragma once

#include <cstdint>

#include "core/cluster/cluster.h"

namespace mmtwin {

enum class CollectiveOp : uint8_t { kAllReduce, kReduceScatter, kAllGather };
enum class CollectiveAlgo : uint8_t { kRing, kTree, kNvls };
enum class CollectiveProto : uint8_t { kLL, kLL128, kSimple };
// "all_reduce" ...; "ring", "tree", "nvls"; "LL", "LL128", "Simple".
const char* CollectiveOpName(CollectiveOp op);
const char* CollectiveAlgoName(CollectiveAlgo a);
const char* CollectiveProtoName(CollectiveProto p);

// Who takes part: `ranks` ranks, `ranks_per_node` of them on each node (clamped to [1, ranks]; nodes =
// ceil(ranks / ranks_per_node)).
struct CollectiveGroup {
  int ranks = 1;
  int ranks_per_node = 1;
};

// The fabric as one GPU sees it (bytes/s per direction, microseconds): NVLink, its share of the node's NICs,
// and the cluster's collective parameters.
struct CollectiveLinks {
  double nvlink_bytes_per_s = 0;
  double nic_bytes_per_s = 0;  // one GPU's share of its node's NICs (ClusterSpec::gpu_nic_bytes_per_s)
  CollectiveSpec spec;
};
CollectiveLinks CollectiveLinksOf(const ClusterSpec& cluster);

// One priced call: the choice, its time split into the latency term and the volume term (us = latency_us +
// volume_us), the bus bandwidth it ran at and its ring steps (for the SimGrid replay: the number of sequential
// steps the algorithm takes, >= 1).
struct CollectiveTime {
  CollectiveAlgo algo = CollectiveAlgo::kRing;
  CollectiveProto proto = CollectiveProto::kSimple;
  double latency_us = 0;
  double volume_us = 0;
  double us = 0;
  double bus_bytes_per_s = 0;
  int64_t steps = 1;
};

// NCCL's choice for one call of `bytes` (>= 0) per rank. A group of one rank costs nothing. Never fails: links
// without bandwidth give an infinite volume term.
CollectiveTime NcclCollective(CollectiveOp op, int64_t bytes, CollectiveGroup group,
                              const CollectiveLinks& links);
// One (algorithm, protocol) priced whether or not NCCL would pick it; us = +inf where NCCL does not offer it for
// this call (tree / NVLS outside all-reduce, tree inside one node, NVLS without nvls).
CollectiveTime NcclCollectiveWith(CollectiveOp op, int64_t bytes, CollectiveGroup group,
                                  const CollectiveLinks& links, CollectiveAlgo algo, CollectiveProto proto);
// nccl-tests' bus bandwidth of a call (bytes/s): all-reduce 2 (n - 1) / n x bytes / time, reduce-scatter and
// all-gather (n - 1) / n x bytes / time (NVIDIA/nccl-tests doc/PERFORMANCE.md).
double BusBandwidth(CollectiveOp op, int64_t bytes, int ranks, double us);

}  // namespace mmtwin

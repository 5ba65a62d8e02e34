// SPDX-License-Identifier: Apache-2.0
// Collectives as NCCL runs them (collective.h).
#include "core/plan/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mmtwin {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// NVIDIA/nccl src/graph/tuning.cc: base latency per (algorithm, protocol), us. Rows: tree, ring, NVLS; columns
// LL, LL128, Simple (v2.30.7 lines 149-154; NVLS's 25 us is its NVLink hwLat, which replaces the base).
constexpr double kBaseLatUs[3][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0.0, 0.0, 0.0}};
// hwLatencies[NCCL_HW_NVLINK] and [NCCL_HW_NET] of the same file (lines 158-174): per-step latency on NVLink and
// on the network; NET NVLS is NVLS_TREE's 20.9.
constexpr double kNvlinkLatUs[3][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0.0, 0.0, 25.0}};
constexpr double kNetLatUs[3][3] = {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}, {0.0, 0.0, 20.9}};
// LL's bandwidth cap, bytes/s (llMaxBws, v2.18.3 as the published runs' NCCL: Ampere and Hopper one node 87.7
// GB/s; across nodes by CPU, Intel: 2 nodes 39.0, 4 or more 20.4).
double LlMaxBytesPerS(int nodes) { return nodes == 1 ? 87.7e9 : nodes <= 2 ? 39.0e9 : 20.4e9; }
// treeCorrectionFactor (tuning.cc lines 623-626): the tree all-reduce's bandwidth by log2(bytes / 64), 64 B to
// 256 MiB; rows LL, LL128, Simple.
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

int Row(CollectiveAlgo a) {
  switch (a) {
    case CollectiveAlgo::kTree:
      return 0;
    case CollectiveAlgo::kRing:
      return 1;
    case CollectiveAlgo::kNvls:
      return 2;
  }
  return 1;
}

int FloorLog2(int64_t x) {
  int k = -1;
  while (x > 0) {
    x >>= 1;
    ++k;
  }
  return k;
}

int CeilLog2(int n) {
  int k = 0;
  while ((1 << k) < n && k < 30) ++k;
  return k;
}

}  // namespace

const char* CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllGather:
      return "all_gather";
  }
  return "?";
}

const char* CollectiveAlgoName(CollectiveAlgo a) {
  switch (a) {
    case CollectiveAlgo::kRing:
      return "ring";
    case CollectiveAlgo::kTree:
      return "tree";
    case CollectiveAlgo::kNvls:
      return "nvls";
  }
  return "?";
}

const char* CollectiveProtoName(CollectiveProto p) {
  switch (p) {
    case CollectiveProto::kLL:
      return "LL";
    case CollectiveProto::kLL128:
      return "LL128";
    case CollectiveProto::kSimple:
      return "Simple";
  }
  return "?";
}

CollectiveLinks CollectiveLinksOf(const ClusterSpec& cluster) {
  return {cluster.nvlink_bytes_per_s, cluster.gpu_nic_bytes_per_s(), cluster.collectives};
}

CollectiveTime NcclCollectiveWith(CollectiveOp op, int64_t bytes, CollectiveGroup group,
                                  const CollectiveLinks& links, CollectiveAlgo algo, CollectiveProto proto) {
  CollectiveTime t;
  t.algo = algo;
  t.proto = proto;
  const int n = std::max(1, group.ranks);
  if (n == 1) return t;
  const int g = std::clamp(group.ranks_per_node, 1, n);
  const int nodes = (n + g - 1) / g;
  const bool all_reduce = op == CollectiveOp::kAllReduce;
  if ((algo != CollectiveAlgo::kRing && !all_reduce) || (algo == CollectiveAlgo::kTree && nodes == 1) ||
      (algo == CollectiveAlgo::kNvls && (!links.spec.nvls || proto != CollectiveProto::kSimple))) {
    t.us = t.latency_us = kInf;
    return t;
  }
  // Bus bandwidth of the Simple protocol: NVLink inside a node, the group's NICs of a node across nodes.
  const double link_intra = links.nvlink_bytes_per_s * links.spec.nvlink_bus_fraction;
  const double link_inter = g * links.nic_bytes_per_s * links.spec.nic_bus_fraction;
  double bus = nodes > 1 ? std::min(link_intra, link_inter) : link_intra;
  const int p = static_cast<int>(proto);
  switch (algo) {
    case CollectiveAlgo::kRing:
      // tuning.cc v2.18.3 line 178-179: LL x 1/4 (all-reduce or across nodes) else 1/3, at most llMaxBw; LL128
      // x 0.92 (0.7 with one GPU per node).
      if (proto == CollectiveProto::kLL)
        bus = std::min(LlMaxBytesPerS(nodes), bus * ((nodes > 1 || all_reduce) ? 0.25 : 1.0 / 3.0));
      else if (proto == CollectiveProto::kLL128)
        bus *= g < 2 ? 0.7 : 0.92;
      break;
    case CollectiveAlgo::kTree: {
      // tuning.cc v2.30.7 lines 330-335: x 0.92; LL / 3.8 (at most llMaxBw); LL128 x 120/128 across nodes; then
      // the size correction (lines 639-641).
      bus *= 0.92;
      if (proto == CollectiveProto::kLL) bus = std::min(LlMaxBytesPerS(nodes), bus / 3.8);
      if (proto == CollectiveProto::kLL128) bus *= 120.0 / 128.0;
      const int log_size = FloorLog2(bytes >> 6);
      if (log_size >= 0 && log_size < 24) bus *= kTreeCorrection[p][log_size];
      break;
    }
    case CollectiveAlgo::kNvls:
      // NVLS: the switch reduces (nvls_bus_fraction of NVLink, nccl-tests' ring-normalised figure); NVLS_TREE
      // across nodes is bounded by the NICs, twice their rate on two nodes (tuning.cc line 320).
      bus = links.nvlink_bytes_per_s * links.spec.nvls_bus_fraction;
      if (nodes > 1) bus = std::min(bus, link_inter * (nodes <= 2 ? 2.0 : 1.0));
      break;
  }
  t.bus_bytes_per_s = bus;
  // Algorithm bandwidth (tuning.cc lines 376-382: ring and NVLS x n / nsteps, tree x .5).
  const double nsteps = all_reduce ? 2.0 * (n - 1) : static_cast<double>(n - 1);
  const double alg = algo == CollectiveAlgo::kTree ? bus * 0.5 : bus * n / nsteps;
  t.volume_us = bytes <= 0 ? 0.0 : alg > 0 ? static_cast<double>(bytes) / alg * 1e6 : kInf;
  const int r = Row(algo);
  const double base = kBaseLatUs[r][p], inter_lat = kNetLatUs[r][p];
  double intra_lat = kNvlinkLatUs[r][p];
  switch (algo) {
    case CollectiveAlgo::kRing: {
      // Across nodes every step pays at least the network post overhead (tuning.cc lines 404-410: 1 us on Intel
      // hosts, x 3 for Simple).
      if (nodes > 1) intra_lat = std::max(intra_lat, proto == CollectiveProto::kSimple ? 3.0 : 1.0);
      const int64_t steps = all_reduce ? 2 * int64_t{n - 1} : int64_t{n - 1};
      const int64_t inter_steps = nodes > 1 ? (all_reduce ? 2 * int64_t{nodes - 1} : int64_t{nodes - 1}) : 0;
      t.latency_us = base + static_cast<double>(steps - inter_steps) * intra_lat +
                     static_cast<double>(inter_steps) * inter_lat;
      t.steps = steps;
      break;
    }
    case CollectiveAlgo::kTree:
      t.latency_us = base + 2.0 * ((g - 1) * intra_lat + CeilLog2(nodes) * inter_lat);
      t.steps = 2 * int64_t{g - 1 + CeilLog2(nodes)};
      break;
    case CollectiveAlgo::kNvls:  // NVLS (one node) replaces the base; NVLS_TREE adds 2 log2(N) network hops
      t.latency_us = intra_lat + (nodes > 1 ? 2.0 * CeilLog2(nodes) * inter_lat : 0.0);
      t.steps = nodes > 1 ? 2 * int64_t{CeilLog2(nodes)} + 1 : 1;
      break;
  }
  // The pipeline's fill and drain (cluster.h CollectiveSpec::pipeline_us): LL's fine-grained flags do not pay it.
  if (bytes > 0 && proto != CollectiveProto::kLL) {
    const double e = algo == CollectiveAlgo::kNvls ? links.spec.nvls_pipeline_us : links.spec.pipeline_us;
    const double half =
        algo == CollectiveAlgo::kNvls ? links.spec.nvls_pipeline_half_bytes : links.spec.pipeline_half_bytes;
    t.latency_us += e * static_cast<double>(bytes) / (static_cast<double>(bytes) + half);
  }
  t.steps = std::max<int64_t>(t.steps, 1);
  t.us = t.latency_us + t.volume_us;
  return t;
}

CollectiveTime NcclCollective(CollectiveOp op, int64_t bytes, CollectiveGroup group,
                              const CollectiveLinks& links) {
  CollectiveTime best;
  best.us = kInf;
  if (std::max(1, group.ranks) == 1) return CollectiveTime{};
  for (CollectiveAlgo a : {CollectiveAlgo::kRing, CollectiveAlgo::kTree, CollectiveAlgo::kNvls})
    for (CollectiveProto p : {CollectiveProto::kSimple, CollectiveProto::kLL128, CollectiveProto::kLL}) {
      const CollectiveTime t = NcclCollectiveWith(op, bytes, group, links, a, p);
      if (t.us < best.us) best = t;
    }
  return best;
}

double BusBandwidth(CollectiveOp op, int64_t bytes, int ranks, double us) {
  if (ranks <= 1 || us <= 0) return 0;
  const double frac = static_cast<double>(ranks - 1) / ranks;
  const double factor = op == CollectiveOp::kAllReduce ? 2 * frac : frac;
  return factor * static_cast<double>(bytes) / (us * 1e-6);
}

}  // namespace mmtwin

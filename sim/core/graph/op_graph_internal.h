// SPDX-License-Identifier: Apache-2.0
// Internal to core/graph: the pieces of op_graph.h's implementation that its files share. The op graph is built
// (op_graph_build.cc: BuildIterationGraph), re-priced (op_graph_reprice.cc: RepriceIterationGraph,
// RepriceDurations) and timed per DP replica (replica_timing.cc: ReplicaAloneTimeUs, ReplicaComputeEndUs) from
// the same pricing rules, which live here and in op_graph.cc (op and lane names, the shape flags, the checks of
// the costs and dispatch lists, the dispatch side table, FSDP units, gradient bucket groups). Nothing outside
// core/graph includes this header; the contracts are op_graph.h's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/graph/op_graph.h"
#include "core/plan/mesh.h"

namespace mmtwin::graph_detail {

// Shape flags layout: [0] tp forward, [1] tp backward, [2 .. 2+C) recompute per chunk, [2+C .. 2+2C) sends of
// boundary c -> c+1, [2+2C .. 2+2C+M) dispatch of micro-batch m, [2+2C+M .. 2+2C+2M) its backward all-to-all,
// [2+2C+2M] sp forward, [3+2C+2M] sp backward.
// `all_valid` (optional): set to whether every cost passes CheckCost (one pass over the costs for both).
// `times` (optional, costs.costs.size() entries): the timing fields of every cost, packed in the same pass.
std::vector<uint8_t> ShapeOf(const IterationCosts& costs, const CommSpec& comm, bool* all_valid = nullptr,
                             ChunkTimes* times = nullptr);

// Cost i finite and >= 0 in every time, send_bytes >= 0 (the error names its dp, micro-batch and chunk).
Status CheckCost(const IterationCosts& costs, size_t i);

// The dispatch lists: at most M per direction, ranks in [0, dp), bytes >= 0, a link speed for every transfer.
Status CheckDispatch(const ParallelConfig& pc, const IterationCosts& costs, const CommSpec& comm);

// Fills the graph's dispatch side table from the costs (checked by CheckDispatch): 2M slots, slot m the
// forward dispatch of micro-batch m, slot M + m its backward all-to-all; empty when neither has transfers.
void FillDispatch(const ParallelConfig& pc, const IterationCosts& costs, const CommSpec& comm,
                  const CommCostModel& cost, OpGraph* g);

// Bytes device `dev` sends in dispatch slot `slot` (OpGraph::DispatchSlot; transfers sorted by source).
int64_t DispatchSentBytes(const OpGraph& g, int slot, int dev);

// A pipeline hop's link: NVLink when the sender and receiver share a node (CommSpec::gpus_per_node), else the
// NIC; each boundary on its own (with DP x TP ranks per stage, a stage boundary can fall between nodes while
// its neighbours do not).
inline bool P2pInNode(const DeviceMesh& mesh, const CommSpec& comm, int from, int to) {
  return comm.gpus_per_node <= 0 || mesh.NodeOfDevice(from) == mesh.NodeOfDevice(to);
}

inline double P2pUs(int64_t bytes, const CommCostModel& cost, bool in_node) {
  return cost.Us({CommKind::kP2p, bytes, 2, in_node});
}

// DP rings stay inside a node when the whole DP group fits in one (the layout's DP link, CommSpec::dp_*).
inline bool DpInNode(const ParallelConfig& pc, const CommSpec& comm) {
  return DeviceMesh(pc, comm.gpus_per_node).DpGroupInNode();
}

// FSDP (ZeRO-3 with zero3_impl fsdp) on a graph's parallel config: per-unit all-gathers (op_graph.h).
inline bool IsFsdp(const ParallelConfig& pc) {
  return pc.dp > 1 && pc.zero_stage == 3 && pc.zero3_impl == "fsdp";
}

// FSDP units (parallel.zero3_impl fsdp, op_graph.h): the chunk's layers with parameters, in forward order,
// consecutive layers grouped when there are more than kMaxFsdpUnits of them (Op::pieces is 8 bits).
inline constexpr int kMaxFsdpUnits = 128;
struct FsdpUnit {
  int64_t bytes = 0;  // bf16 weights per GPU (all-gathered): its share of weight_bytes_per_gpu()
  int64_t grad_bytes =
      0;              // bf16 gradients per GPU (reduce-scattered): its trained share of grad_bytes_per_gpu
  double share = 1;   // its parameters' share of the chunk's: its share of every pass's compute time
};
std::vector<FsdpUnit> FsdpUnits(const ChunkStatic& s);

// Per chunk, the compute share of each FSDP unit (forward order); empty when the graph has no FSDP units.
using UnitShares = std::vector<std::vector<double>>;
UnitShares FsdpShares(const std::vector<ChunkStatic>& statics);

// The part of its pass's time a piece of a split pass takes: 1 / pieces (equal pieces of the chunk's last
// backward), or with FSDP units (`shares` non-empty) its unit's share; a backward runs the units last to first.
inline double PieceShare(const Op& op, const UnitShares& shares) {
  if (op.pieces <= 1) return 1.0;
  if (shares.empty()) return 1.0 / op.pieces;
  const int u = op.pass == PassKind::kForward ? op.bucket : op.pieces - 1 - op.bucket;
  return shares[op.chunk][u];
}

// The chunk's last backward is split into this many pieces at most (per-bucket readiness).
inline constexpr int kMaxPieces = 16;

inline int64_t NumBuckets(const ChunkStatic& s, const CommSpec& comm) {
  return s.grad_bytes_per_gpu > 0 ? (s.grad_bytes_per_gpu + comm.dp_bucket_bytes - 1) / comm.dp_bucket_bytes
                                  : 0;
}
// ZeRO-3's weight all-gather of a chunk in dp_bucket_bytes buckets: its trained and frozen weights.
inline int64_t NumWeightBuckets(const ChunkStatic& s, const CommSpec& comm) {
  const int64_t b = s.weight_bytes_per_gpu();
  return b > 0 ? (b + comm.dp_bucket_bytes - 1) / comm.dp_bucket_bytes : 0;
}
// Pieces of the chunk's last backward: one per bucket up to kMaxPieces (1 without gradients).
inline int NumPieces(int64_t buckets) {
  return static_cast<int>(std::clamp<int64_t>(buckets, 1, kMaxPieces));
}

// The run of a chunk's consecutive gradient buckets that one piece of its last backward completes (possibly
// none: count 0, an op of zero bytes and time that keeps the graph's shape the same for every partition with
// as many pieces): one dp_collective op per device and piece.
struct BucketGroup {
  int piece = 0;
  int64_t first = 0, count = 0, bytes = 0;
  double duration_us = 0;
};

// `dp_in_node`: the DP ring stays inside a node (priced on the DP link, CommSpec::dp_*).
std::vector<BucketGroup> ChunkBucketGroups(const ChunkStatic& s, int zero_stage, int D, bool dp_in_node,
                                           const CommSpec& comm, const CommCostModel& cost_model);

// FSDP: one reduce-scatter per unit, of its gradient bytes, released by the piece of the chunk's last backward
// that computes it (the backward runs the units last to first: piece q is unit U - 1 - q); bucket = q.
std::vector<BucketGroup> FsdpBucketGroups(const ChunkStatic& s, int D, bool dp_in_node,
                                          const CommCostModel& cost_model);

// ---- Re-pricing by recipe (op_graph_reprice.cc; replica_timing.cc reads the same recipe) ----

// OpGraph::Source::Recipe codes: how RepriceMode::kDurationsOnly prices an op (CostDuration's cases without FSDP
// shares; kRecipeGeneral: the op is priced in full, as kFull does).
enum : uint8_t {
  kRecipeNone = 0,  // no cost entry (DP ops, barriers): left as it is
  kRecipeGeneral,
  kRecipeForward,
  kRecipeRecompute,
  kRecipeBackward,
  kRecipeBackwardInput,
  kRecipeBackwardWeight,
  kRecipeTpForward,
  kRecipeTpBackward,
  kRecipeP2pInNode,
  kRecipeP2pCrossNode,
};

// The recipe and the DP op list (OpGraph::Source), made once per graph.
void EnsureRecipe(OpGraph& g, const DeviceMesh& mesh);

// New statics in place (RepriceIterationGraph): every chunk's bucket groups, false when some chunk's last
// backward would have another number of pieces (`error` set instead for statics that are invalid).
bool StaticsFitInPlace(const OpGraph& g, const std::vector<ChunkStatic>& statics,
                       std::vector<std::vector<BucketGroup>>* groups, std::string* error);

// What RepriceDurations checks of the packed times (ShapeOf's flags of the categories, the shape layout there,
// and CheckCost's test, in one pass): true when the graph's shape holds every category the times use, every
// time is finite and >= 0 and sends have a P2P speed. `chunk` of times[k] is k % C.
bool TimesFitShape(const OpGraph& g, std::span<const ChunkTimes> times);

// An op's duration by its recipe from its packed times: the same expressions as CostDuration (no FSDP shares).
// False for kRecipeNone and kRecipeGeneral (not priced from the times).
inline bool RecipeUs(OpGraph::Source::Recipe r, const ChunkTimes& k, const CommCostModel& comm_cost,
                     double* us) {
  switch (r.code) {
    case kRecipeForward:
      *us = k.fwd_us;
      return true;
    case kRecipeRecompute:
      *us = k.recompute_us;
      return true;
    case kRecipeBackward:
      *us = k.bwd_us / r.pieces;
      return true;
    case kRecipeBackwardInput:
      *us = (k.bwd_us - k.bwd_weight_us) / r.pieces;
      return true;
    case kRecipeBackwardWeight:
      *us = k.bwd_weight_us / r.pieces;
      return true;
    case kRecipeTpForward:
      *us = k.tp_fwd_us;
      return true;
    case kRecipeTpBackward:
      *us = k.tp_bwd_us;
      return true;
    case kRecipeP2pInNode:
      *us = P2pUs(k.send_bytes, comm_cost, true);
      return true;
    case kRecipeP2pCrossNode:
      *us = P2pUs(k.send_bytes, comm_cost, false);
      return true;
    default:
      return false;
  }
}

}  // namespace mmtwin::graph_detail

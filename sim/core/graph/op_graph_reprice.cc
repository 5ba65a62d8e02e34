// SPDX-License-Identifier: Apache-2.0
// Re-pricing an op graph in place for another iteration's costs or another partition's statics
// (RepriceIterationGraph, RepriceDurations; op_graph.h), or rebuilding it where its shape changes.
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/graph/op_graph.h"
#include "core/graph/op_graph_internal.h"
#include "core/plan/mesh.h"

namespace mmtwin {

using namespace graph_detail;

namespace {

// Duration of a compute or P2P op from its cost entry.
double CostDuration(const Op& op, const ChunkCost& k, const CommCostModel& comm, const DeviceMesh& mesh,
                    const CommSpec& spec, const UnitShares& shares) {
  switch (op.kind) {
    case OpKind::kForward:
      return op.pieces > 1 ? k.fwd_us * PieceShare(op, shares) : k.fwd_us;
    case OpKind::kRecompute:
      return op.pieces > 1 ? k.recompute_us * PieceShare(op, shares) : k.recompute_us;
    case OpKind::kBackward:
      if (shares.empty())
        return (op.pass == PassKind::kBackwardInput ? k.bwd_us - k.bwd_weight_us : k.bwd_us) / op.pieces;
      return (op.pass == PassKind::kBackwardInput ? k.bwd_us - k.bwd_weight_us : k.bwd_us) *
             PieceShare(op, shares);
    case OpKind::kBackwardWeight:
      return shares.empty() ? k.bwd_weight_us / op.pieces : k.bwd_weight_us * PieceShare(op, shares);
    case OpKind::kTpCollective:
      return op.pass == PassKind::kForward ? k.tp_fwd_us : k.tp_bwd_us;
    case OpKind::kSpCollective:
      return op.pass == PassKind::kForward ? k.sp_fwd_us : k.sp_bwd_us;
    case OpKind::kP2pSendActivation:
    case OpKind::kP2pSendGradient:
      return P2pUs(k.send_bytes, comm, P2pInNode(mesh, spec, op.device, op.peer));
    default:
      return op.duration_us;
  }
}

std::vector<OpGraph::Source::Recipe> PricingRecipe(const OpGraph& g, const DeviceMesh& mesh) {
  std::vector<OpGraph::Source::Recipe> out(g.ops.size());
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    OpGraph::Source::Recipe& r = out[i];
    r.pieces = op.pieces;
    if (op.kind == OpKind::kDispatch) {
      r.code = kRecipeGeneral;
      continue;
    }
    if (g.source.cost_index[i] < 0) {
      r.code = kRecipeNone;
      continue;
    }
    switch (op.kind) {
      case OpKind::kForward:
        r.code = op.pieces > 1 ? kRecipeGeneral : kRecipeForward;
        break;
      case OpKind::kRecompute:
        r.code = op.pieces > 1 ? kRecipeGeneral : kRecipeRecompute;
        break;
      case OpKind::kBackward:
        r.code = op.pass == PassKind::kBackwardInput ? kRecipeBackwardInput : kRecipeBackward;
        break;
      case OpKind::kBackwardWeight:
        r.code = kRecipeBackwardWeight;
        break;
      case OpKind::kTpCollective:
        r.code = op.pass == PassKind::kForward ? kRecipeTpForward : kRecipeTpBackward;
        break;
      case OpKind::kP2pSendActivation:
      case OpKind::kP2pSendGradient:
        r.code = P2pInNode(mesh, g.source.comm, op.device, op.peer) ? kRecipeP2pInNode : kRecipeP2pCrossNode;
        break;
      default:
        r.code = kRecipeGeneral;
    }
  }
  return out;
}

}  // namespace

namespace graph_detail {

void EnsureRecipe(OpGraph& g, const DeviceMesh& mesh) {
  const int n = g.num_ops();
  if (g.source.recipe.size() == static_cast<size_t>(n)) return;
  g.source.recipe = PricingRecipe(g, mesh);
  g.source.dp_ops.clear();
  g.source.recipe_general = 0;
  for (int i = 0; i < n; ++i) {
    if (g.ops[i].kind == OpKind::kDpCollective || g.ops[i].kind == OpKind::kDpAllGather)
      g.source.dp_ops.push_back(i);
    if (g.source.recipe[i].code == kRecipeGeneral) ++g.source.recipe_general;
  }
}

bool StaticsFitInPlace(const OpGraph& g, const std::vector<ChunkStatic>& statics,
                       std::vector<std::vector<BucketGroup>>* groups, std::string* error) {
  const ParallelConfig& pc = g.parallel;
  const int D = pc.dp, C = pc.chunks();
  const bool dp_in_node = DpInNode(pc, g.source.comm);
  if (static_cast<int>(statics.size()) != C) {
    *error = "op graph: " + std::to_string(statics.size()) + " chunk statics, expected " + std::to_string(C);
    return false;
  }
  groups->assign(C, {});
  for (int c = 0; c < C; ++c) {
    const ChunkStatic& st = statics[c];
    if (st.grad_bytes_per_gpu < 0 || st.frozen_bytes_per_gpu < 0) {
      *error = st.grad_bytes_per_gpu < 0 ? "op graph: grad_bytes_per_gpu must be >= 0"
                                         : "op graph: frozen_bytes_per_gpu must be >= 0";
      return false;
    }
    // ZeRO-3's weight all-gathers exist iff the chunk has weights: the same in both.
    if (pc.zero_stage == 3 &&
        (st.weight_bytes_per_gpu() > 0) != (g.source.statics[c].weight_bytes_per_gpu() > 0))
      return false;
    (*groups)[c] = ChunkBucketGroups(st, pc.zero_stage, D, dp_in_node, g.source.comm, *g.source.comm_cost);
    const std::vector<BucketGroup> old = ChunkBucketGroups(g.source.statics[c], pc.zero_stage, D, dp_in_node,
                                                           g.source.comm, *g.source.comm_cost);
    if (old.size() != (*groups)[c].size()) return false;  // as many pieces (one group each), or none in both
  }
  return true;
}

bool TimesFitShape(const OpGraph& g, std::span<const ChunkTimes> times) {
  const int C = g.parallel.chunks();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto ok = [](double v) { return static_cast<unsigned>(v >= 0) & static_cast<unsigned>(v < kInf); };
  unsigned tp_fwd = 0, tp_bwd = 0, valid = 1, sends = 0;
  std::vector<uint8_t> recompute(C, 0), send(C, 0);
  int c = 0;
  for (const ChunkTimes& k : times) {
    tp_fwd |= k.tp_fwd_us > 0;
    tp_bwd |= k.tp_bwd_us > 0;
    recompute[c] |= k.recompute_us > 0;
    send[c] |= k.send_bytes > 0;
    sends |= k.send_bytes > 0;
    valid &= ok(k.fwd_us) & ok(k.bwd_us) & ok(k.bwd_weight_us) & ok(k.recompute_us) & ok(k.tp_fwd_us) &
             ok(k.tp_bwd_us) & static_cast<unsigned>(k.send_bytes >= 0);
    if (++c == C) c = 0;
  }
  if (!valid || (sends && g.parallel.pp > 1 && !(g.source.comm.p2p_bytes_per_s > 0))) return false;
  const std::vector<uint8_t>& shape = g.source.shape;
  if ((tp_fwd && !shape[0]) || (tp_bwd && !shape[1])) return false;
  for (int k = 0; k < C; ++k)
    if ((recompute[k] && !shape[2 + k]) || (send[k] && !shape[2 + C + k])) return false;
  return true;
}

}  // namespace graph_detail

namespace {

// The DP ops' buckets, bytes and durations for new statics (their groups from StaticsFitInPlace); `listed`: visit
// the DP op list of the recipe instead of every op.
void ApplyStatics(OpGraph& g, const std::vector<ChunkStatic>& statics,
                  const std::vector<std::vector<BucketGroup>>& groups, bool listed) {
  const ParallelConfig& pc = g.parallel;
  const int D = pc.dp;
  const bool dp_in_node = DpInNode(pc, g.source.comm);
  g.source.statics = statics;
  if (D <= 1) return;
  const int count = listed ? static_cast<int>(g.source.dp_ops.size()) : g.num_ops();
  for (int k = 0; k < count; ++k) {
    const int i = listed ? g.source.dp_ops[k] : k;
    Op& op = g.ops[i];
    if (op.kind == OpKind::kDpCollective) {
      // Its one dependency is its group's barrier, whose bucket field is the releasing piece.
      const int q = g.ops[g.Deps(i)[0]].bucket;
      const BucketGroup& bg = groups[op.chunk][q];
      op.bucket = static_cast<int32_t>(bg.first);
      op.buckets = static_cast<int32_t>(bg.count);
      op.bytes = bg.bytes;
      op.duration_us = g.duration_us[i] = bg.duration_us;
    } else if (op.kind == OpKind::kDpAllGather) {
      const ChunkStatic& st = statics[op.chunk];
      op.bytes = st.weight_bytes_per_gpu();
      op.buckets = static_cast<int32_t>(NumWeightBuckets(st, g.source.comm));
      op.duration_us = g.duration_us[i] =
          g.source.comm_cost->Us({CommKind::kWeightAllGather, st.weight_bytes_per_gpu(), D, dp_in_node,
                                  NumWeightBuckets(st, g.source.comm)});
    }
  }
}

// duration_us by the recipe from the packed times (RecipeUs); `general(i)` prices the ops the recipe does not
// cover.
template <class General>
void PriceByRecipe(OpGraph& g, const ChunkTimes* kc, General&& general) {
  const int n = g.num_ops();
  const OpGraph::Source::Recipe* recipe = g.source.recipe.data();
  const int32_t* cost_index = g.source.cost_index.data();
  double* dur = g.duration_us.data();
  const CommCostModel& comm_cost = *g.source.comm_cost;
  for (int i = 0; i < n; ++i) {
    const OpGraph::Source::Recipe r = recipe[i];
    if (r.code == kRecipeNone) continue;
    if (r.code == kRecipeGeneral || !RecipeUs(r, kc[cost_index[i]], comm_cost, &dur[i])) general(i);
  }
}

}  // namespace

Status RepriceIterationGraph(OpGraph* graph, const Schedule& schedule, const IterationCosts& costs,
                             const std::vector<ChunkStatic>* statics, RepriceMode mode) {
  OpGraph& g = *graph;
  const ParallelConfig& pc = g.parallel;
  if (costs.dp != pc.dp || costs.micro_batches != pc.micro_batches || costs.chunks != pc.chunks() ||
      costs.costs.size() != static_cast<size_t>(pc.dp) * pc.micro_batches * pc.chunks())
    return Error("op graph: re-pricing with costs of another shape");
  bool costs_valid = false;
  // Durations only: the timing fields packed (one 64-byte line per cost instead of three), read per op below.
  ChunkTimes* packed = nullptr;
  if (mode == RepriceMode::kDurationsOnly) {
    g.source.times.resize(costs.costs.size());
    packed = g.source.times.data();
  }
  std::vector<uint8_t> shape = ShapeOf(costs, g.source.comm, &costs_valid, packed);
  bool same = shape == g.source.shape;
  if (!same) {
    // Ops present in the graph may take zero durations; only a category missing from the graph forces a
    // rebuild.
    same = true;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] && !g.source.shape[i]) same = false;
  }
  // Other chunk statics (another partition): the DP ops keep their places when every chunk's last backward has
  // as many pieces (one bucket group, possibly empty, per piece); their bytes and times change.
  const bool new_statics = statics != nullptr && *statics != g.source.statics;
  const int D = pc.dp;
  std::vector<std::vector<BucketGroup>> groups;
  // FSDP: the units (and so the ops) follow the partition's layers: other statics rebuild the graph.
  const bool fsdp = IsFsdp(pc);
  if (new_statics && fsdp) same = false;
  // Encoder passes outside the pipeline are priced from IterationCosts::encoder, not by cost index: rebuilt.
  if (g.encoder || schedule.HasEncoderPasses()) same = false;
  if (new_statics && D > 1 && same) {
    std::string error;
    same = StaticsFitInPlace(g, *statics, &groups, &error);
    if (!error.empty()) return Error(error);
  }
  if (!same) {
    ParallelConfig plan_pc = pc;
    if (g.sp_group > 1) {
      plan_pc.dp /= g.sp_group;
      plan_pc.sp = g.sp_group;
      plan_pc.sp_ulysses = g.sp_ulysses;
    }
    MMTWIN_ASSIGN_OR_RETURN(OpGraph rebuilt, BuildIterationGraph(plan_pc, schedule, costs,
                                                                 new_statics ? *statics : g.source.statics,
                                                                 g.source.comm, g.source.comm_cost));
    g = std::move(rebuilt);
    return Status();
  }
  const bool p2p_ok = pc.pp <= 1 || g.source.comm.p2p_bytes_per_s > 0;
  if (!costs_valid || !p2p_ok)
    for (size_t i = 0; i < costs.costs.size(); ++i) {
      MMTWIN_RETURN_IF_ERROR(CheckCost(costs, i));
      if (costs.costs[i].send_bytes > 0 && pc.pp > 1 && !(g.source.comm.p2p_bytes_per_s > 0))
        return Error("op graph: CommSpec.p2p_bytes_per_s must be > 0 when chunks send bytes");
    }
  MMTWIN_RETURN_IF_ERROR(CheckDispatch(pc, costs, g.source.comm));
  const bool had_dispatch = !g.dispatch_begin.empty();
  FillDispatch(pc, costs, g.source.comm, *g.source.comm_cost, &g);
  if (had_dispatch && g.dispatch_begin.empty()) {  // keep the table's shape: ops stay, with zero durations
    g.dispatch_begin.assign(2 * pc.micro_batches + 1, 0);
    g.dispatch_us.assign(2 * pc.micro_batches, 0.0);
    g.dispatch_overhead_us.assign(2 * pc.micro_batches, 0.0);
  }
  const int n = g.num_ops();
  const DeviceMesh mesh(pc, g.source.comm.gpus_per_node);
  const UnitShares shares = fsdp ? FsdpShares(g.source.statics) : UnitShares();
  const bool durations_only = mode == RepriceMode::kDurationsOnly && !fsdp;
  if (durations_only) EnsureRecipe(g, mesh);
  // The DP ops: every op scanned, or the list kept with the recipe (the ops are 64 bytes: most of the scan).
  if (new_statics) ApplyStatics(g, *statics, groups, durations_only);
  // One op priced in full (every field), as BuildIterationGraph would.
  const auto reprice_op = [&](int i) {
    const int32_t ci = g.source.cost_index[i];
    if (g.ops[i].kind == OpKind::kDispatch) {
      Op& op = g.ops[i];
      const int slot = g.DispatchSlot(op);
      op.duration_us = g.dispatch_us.empty() ? 0.0 : g.dispatch_us[slot];
      op.bytes = DispatchSentBytes(g, slot, op.device);
      g.duration_us[i] = op.duration_us;
      return;
    }
    if (ci < 0) return;
    Op& op = g.ops[i];
    const ChunkCost& k = costs.costs[ci];
    op.duration_us = CostDuration(op, k, *g.source.comm_cost, mesh, g.source.comm, shares);
    if (op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient) op.bytes = k.send_bytes;
    if (op.kind == OpKind::kSpCollective) {
      const bool fwd = op.pass == PassKind::kForward;
      op.bytes = fwd ? k.sp_a2a_fwd_bytes : k.sp_a2a_bwd_bytes;
      op.a2a_steps = fwd ? k.sp_a2a_fwd_steps : k.sp_a2a_bwd_steps;
      op.ring_bytes = fwd ? k.sp_ring_fwd_bytes : k.sp_ring_bwd_bytes;
    }
    g.duration_us[i] = op.duration_us;
  };
  if (!durations_only) {
    for (int i = 0; i < n; ++i) reprice_op(i);
    return Status();
  }
  // Durations only: the same expressions as CostDuration (shares empty), chosen by the op's recipe.
  PriceByRecipe(g, g.source.times.data(), reprice_op);
  return Status();
}

bool RepriceDurations(OpGraph* graph, const std::vector<ChunkTimes>& times,
                      const std::vector<ChunkStatic>* statics) {
  OpGraph& g = *graph;
  const ParallelConfig& pc = g.parallel;
  const int D = pc.dp, C = pc.chunks(), M = pc.micro_batches;
  if (times.size() != static_cast<size_t>(D) * M * C || C < 1 || g.sp_group > 1 || !g.dispatch_begin.empty())
    return false;
  if (IsFsdp(pc) || g.encoder) return false;
  if (!TimesFitShape(g, times)) return false;
  std::vector<std::vector<BucketGroup>> groups;
  const bool new_statics = statics != nullptr && *statics != g.source.statics;
  std::string error;
  if (new_statics && D > 1 && !StaticsFitInPlace(g, *statics, &groups, &error)) return false;
  EnsureRecipe(g, DeviceMesh(pc, g.source.comm.gpus_per_node));
  if (g.source.recipe_general > 0) return false;
  if (new_statics) ApplyStatics(g, *statics, groups, true);
  PriceByRecipe(g, times.data(), [](int) {});
  return true;
}

}  // namespace mmtwin

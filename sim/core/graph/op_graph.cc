// SPDX-License-Identifier: Apache-2.0
// The op graph's names and the pricing rules that its build (op_graph_build.cc), re-pricing
// (op_graph_reprice.cc) and replica timing (replica_timing.cc) share (op_graph_internal.h): the shape flags, the
// checks of the costs and dispatch lists, the dispatch side table, FSDP units and gradient bucket groups.
#include "core/graph/op_graph.h"

#include "core/plan/mesh.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/op_graph_internal.h"
#include "core/plan/collective.h"
#include "core/plan/dispatch.h"

namespace mmtwin {

bool ParseOpKind(const std::string& name, OpKind& out) {
  for (int k = 0; k <= static_cast<int>(kLastOpKind); ++k)
    if (name == OpKindName(static_cast<OpKind>(k))) {
      out = static_cast<OpKind>(k);
      return true;
    }
  return false;
}

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kForward:
      return "forward";
    case OpKind::kRecompute:
      return "recompute";
    case OpKind::kBackward:
      return "backward";
    case OpKind::kTpCollective:
      return "tp_collective";
    case OpKind::kP2pSendActivation:
      return "p2p_send_activation";
    case OpKind::kP2pSendGradient:
      return "p2p_send_gradient";
    case OpKind::kDpCollective:
      return "dp_collective";
    case OpKind::kDpAllGather:
      return "dp_all_gather";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kDispatch:
      return "dispatch";
    case OpKind::kBackwardWeight:
      return "backward_weight";
    case OpKind::kP2pRecv:
      return "p2p_recv";
    case OpKind::kDpWait:
      return "dp_wait";
    case OpKind::kOptimizer:
      return "optimizer";
    case OpKind::kSpCollective:
      return "sp_collective";
    case OpKind::kEncoderForward:
      return "encoder_forward";
    case OpKind::kEncoderBackward:
      return "encoder_backward";
    case OpKind::kEncoderGradSync:
      return "encoder_grad_sync";
  }
  return "?";
}

const char* LaneName(Lane l) {
  switch (l) {
    case Lane::kCompute:
      return "compute";
    case Lane::kP2pForward:
      return "p2p_fwd";
    case Lane::kP2pBackward:
      return "p2p_bwd";
    case Lane::kDp:
      return "dp";
    case Lane::kDispatch:
      return "dispatch";
  }
  return "?";
}

std::string OpGraph::Describe(int i) const {
  const Op& op = ops[i];
  std::string s = OpKindName(op.kind);
  if (op.kind == OpKind::kTpCollective || op.kind == OpKind::kDpAllGather || op.kind == OpKind::kSpCollective)
    s += op.pass == PassKind::kForward ? " (forward)" : " (backward)";
  if (op.micro_batch >= 0) s += " mb " + std::to_string(op.micro_batch);
  if (op.chunk >= 0)
    s += " chunk " + std::to_string(op.chunk);
  else if (op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient)
    s += " (encoder)";
  if (op.kind == OpKind::kDpCollective) s += " bucket " + std::to_string(op.bucket);
  if (op.kind == OpKind::kDpAllGather && op.micro_batch >= 0) s += " unit " + std::to_string(op.bucket);
  if (op.device >= 0) {
    const DeviceMesh mesh(parallel);
    s += " on device " + std::to_string(op.device) + " (dp " + std::to_string(mesh.DpOfDevice(op.device)) +
         ", stage " + std::to_string(mesh.PpOfDevice(op.device)) + ")";
  } else {
    s += " (all DP replicas)";
  }
  return s;
}

namespace graph_detail {
namespace {

// Node of the stage-0 device of DP replica d (every replica on its own node when gpus_per_node is unknown).
int DispatchNode(const ParallelConfig& pc, const CommSpec& comm, int d) {
  const DeviceMesh mesh(pc, comm.gpus_per_node);
  return comm.gpus_per_node > 0 ? mesh.NodeOfDevice(mesh.Device(d, 0)) : d;
}

// The all-gather of the sample lengths over the whole DP group (not a ZeRO-3 shard group): NCCL's choice
// (core/plan/collective.h) with the "nccl" collective model, else the flat ring over the DP link.
double LengthGatherUs(int64_t bytes, int ranks, bool in_node, const CommSpec& comm) {
  if (comm.collectives.model == "nccl") {
    const int per_node = in_node                      ? ranks
                         : comm.dp_ranks_per_node > 0 ? std::min(comm.dp_ranks_per_node, ranks)
                                                      : 1;
    const CollectiveLinks links{comm.nvlink_bytes_per_s, comm.nic_bytes_per_s, comm.collectives};
    return NcclCollective(CollectiveOp::kAllGather, bytes, {ranks, per_node}, links).us;
  }
  if (!(comm.dp_bytes_per_s > 0)) return 0;
  return (ranks - 1) * comm.dp_latency_us +
         static_cast<double>(ranks - 1) / ranks * static_cast<double>(bytes) / comm.dp_bytes_per_s * 1e6;
}

}  // namespace

std::vector<uint8_t> ShapeOf(const IterationCosts& costs, const CommSpec& comm, bool* all_valid,
                             ChunkTimes* times) {
  const int C = costs.chunks;
  const size_t M = static_cast<size_t>(std::max(0, costs.micro_batches));
  const size_t sp_at = 2 + 2 * static_cast<size_t>(C) + 2 * M;
  std::vector<uint8_t> shape(sp_at + 2, 0);
  for (size_t m = 0; m < costs.dispatch.size() && m < M; ++m)
    for (const DispatchTransfer& t : costs.dispatch[m])
      if (t.src_rank != t.dst_rank && t.bytes > 0) shape[2 + 2 * static_cast<size_t>(C) + m] = 1;
  for (size_t m = 0; m < costs.dispatch_backward.size() && m < M; ++m)
    for (const DispatchTransfer& t : costs.dispatch_backward[m])
      if (t.src_rank != t.dst_rank && t.bytes > 0) shape[2 + 2 * static_cast<size_t>(C) + M + m] = 1;
  // One pass, without branches: flags OR-ed in (c = i % C counted along), and CheckCost's test without its
  // message (finite and >= 0; NaN fails `>= 0`).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto ok = [](double v) { return static_cast<unsigned>(v >= 0) & static_cast<unsigned>(v < kInf); };
  unsigned tp_fwd = 0, tp_bwd = 0, sp_fwd = 0, sp_bwd = 0, valid = 1;
  int c = 0;
  for (const ChunkCost& k : costs.costs) {
    tp_fwd |= k.tp_fwd_us > 0;
    tp_bwd |= k.tp_bwd_us > 0;
    sp_fwd |= k.sp_fwd_us > 0;
    sp_bwd |= k.sp_bwd_us > 0;
    shape[2 + c] |= k.recompute_us > 0;
    shape[2 + C + c] |= k.send_bytes > 0;
    valid &= ok(k.fwd_us) & ok(k.bwd_us) & ok(k.recompute_us) & ok(k.tp_fwd_us) & ok(k.tp_bwd_us) &
             ok(k.sp_fwd_us) & ok(k.sp_bwd_us) & static_cast<unsigned>(k.send_bytes >= 0);
    if (++c == C) c = 0;
    if (times)
      *times++ = {k.fwd_us,    k.bwd_us,    k.bwd_weight_us, k.recompute_us,
                  k.tp_fwd_us, k.tp_bwd_us, k.send_bytes};
  }
  shape[0] |= tp_fwd;
  shape[1] |= tp_bwd;
  shape[sp_at] |= sp_fwd;
  shape[sp_at + 1] |= sp_bwd;
  if (all_valid) *all_valid = valid != 0;
  if (comm.p2p_latency_us > 0)
    for (int c = 0; c < C; ++c) shape[2 + C + c] = 1;
  return shape;
}

Status CheckCost(const IterationCosts& costs, size_t i) {
  const ChunkCost& k = costs.costs[i];
  const double v[] = {k.fwd_us, k.bwd_us, k.recompute_us, k.tp_fwd_us, k.tp_bwd_us, k.sp_fwd_us, k.sp_bwd_us};
  const char* names[] = {"fwd_us",    "bwd_us",    "recompute_us", "tp_fwd_us",
                         "tp_bwd_us", "sp_fwd_us", "sp_bwd_us"};
  for (int j = 0; j < 7; ++j)
    if (!(v[j] >= 0) || !std::isfinite(v[j])) {
      const int C = costs.chunks, M = costs.micro_batches;
      const size_t c = i % C, m = (i / C) % M, d = i / C / M;
      return Error("iteration costs: dp " + std::to_string(d) + " micro-batch " + std::to_string(m) +
                   " chunk " + std::to_string(c) + ": " + names[j] + " must be finite and >= 0, got " +
                   std::to_string(v[j]));
    }
  if (k.send_bytes < 0) return Error("iteration costs: send_bytes must be >= 0");
  return Status();
}

Status CheckDispatch(const ParallelConfig& pc, const IterationCosts& costs, const CommSpec& comm) {
  for (const bool backward : {false, true}) {
    const auto& lists = backward ? costs.dispatch_backward : costs.dispatch;
    const std::string what = backward ? "backward dispatch" : "dispatch";
    if (lists.size() > static_cast<size_t>(pc.micro_batches))
      return Error("op graph: " + std::to_string(lists.size()) + " " + what + " lists for " +
                   std::to_string(pc.micro_batches) + " micro-batches");
    for (size_t m = 0; m < lists.size(); ++m)
      for (const DispatchTransfer& t : lists[m]) {
        if (t.src_rank < 0 || t.src_rank >= pc.dp || t.dst_rank < 0 || t.dst_rank >= pc.dp || t.bytes < 0)
          return Error("op graph: micro-batch " + std::to_string(m) + ": " + what + " transfer " +
                       std::to_string(t.src_rank) + " -> " + std::to_string(t.dst_rank) + " of " +
                       std::to_string(t.bytes) + " bytes: ranks must be in [0, " + std::to_string(pc.dp) +
                       ") and bytes >= 0");
        if (t.src_rank == t.dst_rank || t.bytes == 0) continue;
        const bool nvlink = DispatchNode(pc, comm, t.src_rank) == DispatchNode(pc, comm, t.dst_rank);
        const double bw = nvlink ? comm.nvlink_bytes_per_s : comm.nic_bytes_per_s;
        const double lat = nvlink ? comm.nvlink_latency_us : comm.nic_latency_us;
        if (!(bw > 0) || !(lat >= 0) || !std::isfinite(bw) || !std::isfinite(lat))
          return Error(std::string("op graph: dispatch transfers need CommSpec.") +
                       (nvlink ? "nvlink_bytes_per_s > 0 and nvlink_latency_us"
                               : "nic_bytes_per_s > 0 and nic_latency_us") +
                       " >= 0");
      }
  }
  return Status();
}

void FillDispatch(const ParallelConfig& pc, const IterationCosts& costs, const CommSpec& comm,
                  const CommCostModel& cost, OpGraph* g) {
  const int M = pc.micro_batches;
  const DeviceMesh mesh(pc);
  g->dispatch_begin.clear();
  g->dispatch_transfers.clear();
  g->dispatch_us.clear();
  g->dispatch_overhead_us.clear();
  bool any = false;
  for (const auto& list : costs.dispatch) any = any || !list.empty();
  for (const auto& list : costs.dispatch_backward) any = any || !list.empty();
  if (!any) return;
  g->dispatch_begin.assign(2 * M + 1, 0);
  g->dispatch_us.assign(2 * M, 0.0);
  g->dispatch_overhead_us.assign(2 * M, 0.0);
  const DeviceMesh layout(pc, comm.gpus_per_node);
  std::vector<DispatchTransfer> list;
  std::vector<TimedTransfer> timed;
  for (int slot = 0; slot < 2 * M; ++slot) {
    g->dispatch_begin[slot] = static_cast<int32_t>(g->dispatch_transfers.size());
    const auto& lists = slot < M ? costs.dispatch : costs.dispatch_backward;
    const int m = slot < M ? slot : slot - M;
    if (m < static_cast<int>(lists.size())) {
      list = lists[m];
      AggregateTransfers(&list);
      timed.clear();
      for (const DispatchTransfer& t : list) {
        g->dispatch_transfers.push_back({mesh.Device(t.src_rank, 0), mesh.Device(t.dst_rank, 0), t.bytes});
        const bool nvlink = DispatchNode(pc, comm, t.src_rank) == DispatchNode(pc, comm, t.dst_rank);
        timed.push_back({t.src_rank, t.dst_rank, nvlink, cost.Us({CommKind::kDispatch, t.bytes, 2, nvlink})});
      }
      double overhead_us = 0;
      if (slot < M && !list.empty() && m < static_cast<int>(costs.dispatch_overhead.size())) {
        const DispatchOverhead& o = costs.dispatch_overhead[m];
        if (o.length_gather_bytes > 0 && pc.dp > 1)
          overhead_us += LengthGatherUs(o.length_gather_bytes, pc.dp, layout.DpGroupInNode(), comm);
        overhead_us += std::max(0.0, o.host_us);
      }
      g->dispatch_overhead_us[slot] = overhead_us;
      g->dispatch_us[slot] = overhead_us + AllToAllChains(timed).us;
    }
  }
  g->dispatch_begin[2 * M] = static_cast<int32_t>(g->dispatch_transfers.size());
}

int64_t DispatchSentBytes(const OpGraph& g, int slot, int dev) {
  const std::span<const DeviceTransfer> all = g.DispatchTransfers(slot);
  auto it = std::lower_bound(all.begin(), all.end(), dev,
                             [](const DeviceTransfer& t, int d) { return t.src_device < d; });
  int64_t b = 0;
  for (; it != all.end() && it->src_device == dev; ++it) b += it->bytes;
  return b;
}

std::vector<FsdpUnit> FsdpUnits(const ChunkStatic& s) {
  std::vector<int64_t> layers, trained_layers;
  for (size_t i = 0; i < s.layer_params.size(); ++i) {
    const int64_t p = s.layer_params[i];
    if (p <= 0) continue;
    layers.push_back(p);
    trained_layers.push_back(p - (i < s.layer_frozen_params.size() ? s.layer_frozen_params[i] : 0));
  }
  if (layers.empty()) return {FsdpUnit{s.weight_bytes_per_gpu(), s.grad_bytes_per_gpu, 1.0}};
  const size_t per = (layers.size() + kMaxFsdpUnits - 1) / kMaxFsdpUnits;
  std::vector<int64_t> params, trained;
  for (size_t i = 0; i < layers.size(); i += per) {
    int64_t sum = 0, sum_trained = 0;
    for (size_t j = i; j < std::min(layers.size(), i + per); ++j) {
      sum += layers[j];
      sum_trained += trained_layers[j];
    }
    params.push_back(sum);
    trained.push_back(sum_trained);
  }
  int64_t total = 0, total_trained = 0;
  for (size_t u = 0; u < params.size(); ++u) {
    total += params[u];
    total_trained += trained[u];
  }
  std::vector<FsdpUnit> units(params.size());
  // Bytes by cumulative share (rounded down at each boundary), so that the units' bytes sum to the chunk's.
  const auto split = [&](const std::vector<int64_t>& of, int64_t whole_params, int64_t whole_bytes,
                         int64_t FsdpUnit::*field) {
    int64_t done = 0, prev_bytes = 0;
    for (size_t u = 0; u < of.size(); ++u) {
      done += of[u];
      const int64_t end_bytes =
          u + 1 == of.size() || whole_params <= 0
              ? (whole_params <= 0 ? 0 : whole_bytes)
              : static_cast<int64_t>(static_cast<long double>(whole_bytes) * done / whole_params);
      units[u].*field = end_bytes - prev_bytes;
      prev_bytes = end_bytes;
    }
  };
  split(params, total, s.weight_bytes_per_gpu(), &FsdpUnit::bytes);
  split(trained, total_trained, s.grad_bytes_per_gpu, &FsdpUnit::grad_bytes);
  for (size_t u = 0; u < params.size(); ++u)
    units[u].share = static_cast<double>(params[u]) / static_cast<double>(total);
  return units;
}

UnitShares FsdpShares(const std::vector<ChunkStatic>& statics) {
  UnitShares out(statics.size());
  for (size_t c = 0; c < statics.size(); ++c)
    for (const FsdpUnit& u : FsdpUnits(statics[c])) out[c].push_back(u.share);
  return out;
}

std::vector<BucketGroup> ChunkBucketGroups(const ChunkStatic& s, int zero_stage, int D, bool dp_in_node,
                                           const CommSpec& comm, const CommCostModel& cost_model) {
  std::vector<BucketGroup> groups;
  const int64_t nb = NumBuckets(s, comm), total = s.grad_bytes_per_gpu;
  if (nb == 0) return groups;
  const int pieces = NumPieces(nb);
  // Ring algorithms: every step pays the link latency once (d - 1 steps per reduce-scatter or all-gather pass,
  // 2 (d - 1) per all-reduce), as the SimGrid engine's rings do.
  const CommKind kind = zero_stage == 0  ? CommKind::kAllReduce
                        : zero_stage < 3 ? CommKind::kReduceScatterAllGather
                                         : CommKind::kReduceScatter;
  const double full_us = cost_model.Us({kind, comm.dp_bucket_bytes, D, dp_in_node});
  groups.resize(pieces);
  for (int q = 0; q < pieces; ++q) groups[q].piece = q;
  int last_q = -1;
  for (int64_t j = 0; j < nb; ++j) {
    const int q = pieces > 1 ? BucketReadyPiece(s, comm.dp_bucket_bytes, j, pieces) : 0;
    const int64_t bytes = std::min(comm.dp_bucket_bytes, total - j * comm.dp_bucket_bytes);
    for (int e = last_q + 1; e <= q; ++e)
      groups[e].first = j;  // buckets complete in order: q never decreases
    last_q = q;
    BucketGroup& bg = groups[q];
    ++bg.count;
    bg.bytes += bytes;
    bg.duration_us += bytes == comm.dp_bucket_bytes ? full_us : cost_model.Us({kind, bytes, D, dp_in_node});
  }
  for (int e = last_q + 1; e < pieces; ++e) groups[e].first = nb;
  return groups;
}

std::vector<BucketGroup> FsdpBucketGroups(const ChunkStatic& s, int D, bool dp_in_node,
                                          const CommCostModel& cost_model) {
  std::vector<BucketGroup> groups;
  if (s.grad_bytes_per_gpu <= 0) return groups;
  const std::vector<FsdpUnit> units = FsdpUnits(s);
  const int U = static_cast<int>(units.size());
  groups.resize(U);
  for (int q = 0; q < U; ++q) {
    const int64_t bytes = units[U - 1 - q].grad_bytes;
    groups[q] = {q, q, bytes > 0 ? 1 : 0, bytes,
                 bytes > 0 ? cost_model.Us({CommKind::kReduceScatter, bytes, D, dp_in_node}) : 0.0};
  }
  return groups;
}

}  // namespace graph_detail

int BucketReadyPiece(const ChunkStatic& s, int64_t bucket_bytes, int64_t bucket, int pieces) {
  if (pieces <= 1 || s.grad_bytes_per_gpu <= 0) return std::max(0, pieces - 1);
  const double total = static_cast<double>(s.grad_bytes_per_gpu);
  // Gradient bytes the bucket needs, counted from the chunk's last layer (the backward's order).
  const double need = std::min(total, static_cast<double>(bucket + 1) * static_cast<double>(bucket_bytes));
  double f = need / total;  // without per-layer sizes: bytes appear evenly over the backward
  const int64_t trained = s.params - s.frozen_params;
  if (!s.layer_params.empty() && trained > 0) {
    f = 1.0;
    double done = 0, done_trained = 0;
    for (size_t i = s.layer_params.size(); i-- > 0;) {
      // The backward's pieces go by parameter share (frozen layers' time passes too); the gradient bytes by the
      // trained parameters only.
      done += static_cast<double>(s.layer_params[i]);
      done_trained += static_cast<double>(s.layer_params[i]) -
                      static_cast<double>(i < s.layer_frozen_params.size() ? s.layer_frozen_params[i] : 0);
      if (done_trained / static_cast<double>(trained) * total >= need * (1 - 1e-12)) {
        f = done / static_cast<double>(s.params);
        break;
      }
    }
  }
  const int q = static_cast<int>(std::ceil(f * pieces * (1 - 1e-12))) - 1;
  return std::clamp(q, 0, pieces - 1);
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/graph/op_graph.h"

#include "core/plan/mesh.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/graph/topo_order.h"
#include "core/plan/schedule.h"

namespace mmtwin {

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
  s += " chunk " + std::to_string(op.chunk);
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

namespace {

// Shape flags layout: [0] tp forward, [1] tp backward, [2 .. 2+C) recompute per chunk, [2+C .. 2+2C) sends of
// boundary c -> c+1, [2+2C .. 2+2C+M) dispatch of micro-batch m, [2+2C+M .. 2+2C+2M) its backward all-to-all,
// [2+2C+2M] sp forward, [3+2C+2M] sp backward.
// `all_valid` (optional): set to whether every cost passes CheckCost (one pass over the costs for both).
// `times` (optional, costs.costs.size() entries): the timing fields of every cost, packed in the same pass.
std::vector<uint8_t> ShapeOf(const IterationCosts& costs, const CommSpec& comm, bool* all_valid = nullptr,
                             ChunkTimes* times = nullptr) {
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

// Node of the stage-0 device of DP replica d (every replica on its own node when gpus_per_node is unknown).
int DispatchNode(const ParallelConfig& pc, const CommSpec& comm, int d) {
  const DeviceMesh mesh(pc, comm.gpus_per_node);
  return comm.gpus_per_node > 0 ? mesh.NodeOfDevice(mesh.Device(d, 0)) : d;
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

// Fills the graph's dispatch side table from the costs (checked by CheckDispatch): 2M slots, slot m the
// forward dispatch of micro-batch m, slot M + m its backward all-to-all; empty when neither has transfers.
void FillDispatch(const ParallelConfig& pc, const IterationCosts& costs, const CommSpec& comm,
                  const CommCostModel& cost, OpGraph* g) {
  const int M = pc.micro_batches;
  const DeviceMesh mesh(pc);
  g->dispatch_begin.clear();
  g->dispatch_transfers.clear();
  g->dispatch_us.clear();
  bool any = false;
  for (const auto& list : costs.dispatch) any = any || !list.empty();
  for (const auto& list : costs.dispatch_backward) any = any || !list.empty();
  if (!any) return;
  g->dispatch_begin.assign(2 * M + 1, 0);
  g->dispatch_us.assign(2 * M, 0.0);
  std::vector<DispatchTransfer> list;
  for (int slot = 0; slot < 2 * M; ++slot) {
    g->dispatch_begin[slot] = static_cast<int32_t>(g->dispatch_transfers.size());
    const auto& lists = slot < M ? costs.dispatch : costs.dispatch_backward;
    const int m = slot < M ? slot : slot - M;
    if (m < static_cast<int>(lists.size())) {
      list = lists[m];
      AggregateTransfers(&list);
      double us = 0;
      for (const DispatchTransfer& t : list) {
        g->dispatch_transfers.push_back({mesh.Device(t.src_rank, 0), mesh.Device(t.dst_rank, 0), t.bytes});
        const bool nvlink = DispatchNode(pc, comm, t.src_rank) == DispatchNode(pc, comm, t.dst_rank);
        us = std::max(us, cost.Us({CommKind::kDispatch, t.bytes, 2, nvlink}));
      }
      g->dispatch_us[slot] = us;
    }
  }
  g->dispatch_begin[2 * M] = static_cast<int32_t>(g->dispatch_transfers.size());
}

// Bytes device `dev` sends in dispatch slot `slot` (OpGraph::DispatchSlot; transfers sorted by source).
int64_t DispatchSentBytes(const OpGraph& g, int slot, int dev) {
  const std::span<const DeviceTransfer> all = g.DispatchTransfers(slot);
  auto it = std::lower_bound(all.begin(), all.end(), dev,
                             [](const DeviceTransfer& t, int d) { return t.src_device < d; });
  int64_t b = 0;
  for (; it != all.end() && it->src_device == dev; ++it) b += it->bytes;
  return b;
}

// A pipeline hop's link: NVLink when the sender and receiver share a node (CommSpec::gpus_per_node), else the
// NIC; each boundary on its own (with DP x TP ranks per stage, a stage boundary can fall between nodes while
// its neighbours do not).
bool P2pInNode(const DeviceMesh& mesh, const CommSpec& comm, int from, int to) {
  return comm.gpus_per_node <= 0 || mesh.NodeOfDevice(from) == mesh.NodeOfDevice(to);
}

double P2pUs(int64_t bytes, const CommCostModel& cost, bool in_node) {
  return cost.Us({CommKind::kP2p, bytes, 2, in_node});
}

// FSDP units (parallel.zero3_impl fsdp, op_graph.h): the chunk's layers with parameters, in forward order,
// consecutive layers grouped when there are more than kMaxFsdpUnits of them (Op::pieces is 8 bits).
constexpr int kMaxFsdpUnits = 128;
struct FsdpUnit {
  int64_t bytes = 0;  // bf16 weights (= gradients) per GPU: the unit's share of grad_bytes_per_gpu
  double share = 1;   // its parameters' share of the chunk's: its share of every pass's compute time
};
std::vector<FsdpUnit> FsdpUnits(const ChunkStatic& s) {
  std::vector<int64_t> layers;
  for (int64_t p : s.layer_params)
    if (p > 0) layers.push_back(p);
  if (layers.empty()) return {FsdpUnit{s.grad_bytes_per_gpu, 1.0}};
  const size_t per = (layers.size() + kMaxFsdpUnits - 1) / kMaxFsdpUnits;
  std::vector<int64_t> params;
  for (size_t i = 0; i < layers.size(); i += per) {
    int64_t sum = 0;
    for (size_t j = i; j < std::min(layers.size(), i + per); ++j) sum += layers[j];
    params.push_back(sum);
  }
  int64_t total = 0;
  for (int64_t p : params) total += p;
  std::vector<FsdpUnit> units(params.size());
  // Bytes by cumulative share (rounded down at each boundary), so that the units' bytes sum to the chunk's.
  int64_t done = 0, prev_bytes = 0;
  for (size_t u = 0; u < params.size(); ++u) {
    done += params[u];
    const int64_t end_bytes =
        u + 1 == params.size()
            ? s.grad_bytes_per_gpu
            : static_cast<int64_t>(static_cast<long double>(s.grad_bytes_per_gpu) * done / total);
    units[u].bytes = end_bytes - prev_bytes;
    units[u].share = static_cast<double>(params[u]) / static_cast<double>(total);
    prev_bytes = end_bytes;
  }
  return units;
}

// Per chunk, the compute share of each FSDP unit (forward order); empty when the graph has no FSDP units.
using UnitShares = std::vector<std::vector<double>>;
UnitShares FsdpShares(const std::vector<ChunkStatic>& statics) {
  UnitShares out(statics.size());
  for (size_t c = 0; c < statics.size(); ++c)
    for (const FsdpUnit& u : FsdpUnits(statics[c])) out[c].push_back(u.share);
  return out;
}

// The part of its pass's time a piece of a split pass takes: 1 / pieces (equal pieces of the chunk's last
// backward), or with FSDP units (`shares` non-empty) its unit's share; a backward runs the units last to first.
double PieceShare(const Op& op, const UnitShares& shares) {
  if (op.pieces <= 1) return 1.0;
  if (shares.empty()) return 1.0 / op.pieces;
  const int u = op.pass == PassKind::kForward ? op.bucket : op.pieces - 1 - op.bucket;
  return shares[op.chunk][u];
}

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

struct Builder {
  const ParallelConfig& pc;
  const Schedule& sched;
  const IterationCosts& costs;
  const std::vector<ChunkStatic>& statics;
  const CommSpec& comm;
  std::vector<uint8_t> shape;

  std::vector<Op> ops;
  std::vector<int32_t> lane_prev;
  std::vector<int32_t> cost_index;
  struct Edge {
    int32_t to, from, local_from;
  };
  std::vector<Edge> edges;
  std::vector<int32_t> last_on_lane;

  int32_t NewOp(const Op& op, int32_t cost_idx) {
    const int32_t id = static_cast<int32_t>(ops.size());
    ops.push_back(op);
    cost_index.push_back(cost_idx);
    if (op.device >= 0) {
      int32_t& last = last_on_lane[op.device * kNumLanes + static_cast<int>(op.lane)];
      lane_prev.push_back(last);
      last = id;
    } else {
      lane_prev.push_back(-1);
    }
    return id;
  }
  void AddEdge(int32_t to, int32_t from) { edges.push_back({to, from, from}); }
};

Status CheckInputs(const ParallelConfig& pc, const Schedule& s, const IterationCosts& costs,
                   const std::vector<ChunkStatic>& statics, const CommSpec& comm) {
  if (pc.dp < 1 || pc.pp < 1 || pc.vpp < 1 || pc.micro_batches < 1)
    return Error("op graph: dp, pp, vpp and micro_batches must be >= 1");
  if (s.pp != pc.pp || s.vpp != pc.vpp || s.micro_batches != pc.micro_batches)
    return Error("op graph: schedule '" + s.name + "' is for pp " + std::to_string(s.pp) + ", vpp " +
                 std::to_string(s.vpp) + ", M " + std::to_string(s.micro_batches) +
                 " but the parallel config has pp " + std::to_string(pc.pp) + ", vpp " +
                 std::to_string(pc.vpp) + ", M " + std::to_string(pc.micro_batches));
  MMTWIN_RETURN_IF_ERROR(ValidateSchedule(s));
  if (costs.dp != pc.dp || costs.micro_batches != pc.micro_batches || costs.chunks != pc.chunks() ||
      costs.costs.size() != static_cast<size_t>(pc.dp) * pc.micro_batches * pc.chunks())
    return Error("op graph: iteration costs are " + std::to_string(costs.dp) + " x " +
                 std::to_string(costs.micro_batches) + " x " + std::to_string(costs.chunks) +
                 " (dp x micro-batches x chunks), expected " + std::to_string(pc.dp) + " x " +
                 std::to_string(pc.micro_batches) + " x " + std::to_string(pc.chunks()));
  if (pc.zero_stage < 0 || pc.zero_stage > 3)
    return Error("op graph: zero_stage must be 0..3, got " + std::to_string(pc.zero_stage));
  if (pc.dp > 1) {
    if (static_cast<int>(statics.size()) != pc.chunks())
      return Error("op graph: " + std::to_string(statics.size()) + " chunk statics, expected " +
                   std::to_string(pc.chunks()));
    bool any = false;
    for (const ChunkStatic& st : statics) {
      if (st.grad_bytes_per_gpu < 0) return Error("op graph: grad_bytes_per_gpu must be >= 0");
      any = any || st.grad_bytes_per_gpu > 0;
    }
    if (any && !(comm.dp_bytes_per_s > 0)) return Error("op graph: CommSpec.dp_bytes_per_s must be > 0");
    if (any && comm.dp_bucket_bytes <= 0) return Error("op graph: CommSpec.dp_bucket_bytes must be > 0");
    if (!(comm.dp_latency_us >= 0)) return Error("op graph: CommSpec.dp_latency_us must be >= 0");
  }
  if (!(comm.p2p_latency_us >= 0)) return Error("op graph: CommSpec.p2p_latency_us must be >= 0");
  MMTWIN_RETURN_IF_ERROR(CheckDispatch(pc, costs, comm));
  for (size_t i = 0; i < costs.costs.size(); ++i) {
    MMTWIN_RETURN_IF_ERROR(CheckCost(costs, i));
    if (costs.costs[i].send_bytes > 0 && pc.pp > 1 && !(comm.p2p_bytes_per_s > 0))
      return Error("op graph: CommSpec.p2p_bytes_per_s must be > 0 when chunks send bytes");
  }
  return Status();
}

// Names up to 8 ops of a dependency cycle (Kahn residual, then a walk back along residual predecessors).
Error CycleError(const OpGraph& g_unsorted, const std::vector<std::vector<int32_t>>& preds) {
  const int n = g_unsorted.num_ops();
  std::vector<int32_t> indeg(n, 0);
  std::vector<std::vector<int32_t>> succ(n);
  for (int v = 0; v < n; ++v)
    for (int32_t u : preds[v]) {
      succ[u].push_back(v);
      ++indeg[v];
    }
  std::vector<int32_t> stack;
  for (int v = 0; v < n; ++v)
    if (indeg[v] == 0) stack.push_back(v);
  std::vector<uint8_t> done(n, 0);
  while (!stack.empty()) {
    const int32_t u = stack.back();
    stack.pop_back();
    done[u] = 1;
    for (int32_t v : succ[u])
      if (--indeg[v] == 0) stack.push_back(v);
  }
  int32_t v = -1;
  for (int i = 0; i < n && v < 0; ++i)
    if (!done[i]) v = i;
  if (v < 0) return Error("op graph: dependency cycle");
  std::vector<int32_t> pos(n, -1), path;
  while (pos[v] < 0) {
    pos[v] = static_cast<int32_t>(path.size());
    path.push_back(v);
    for (int32_t u : preds[v])
      if (!done[u]) {
        v = u;
        break;
      }
  }
  std::vector<int32_t> cycle(path.begin() + pos[v], path.end());
  std::reverse(cycle.begin(), cycle.end());  // in execution direction
  std::string msg = "op graph: dependency cycle (the schedule's order contradicts the data flow): ";
  for (size_t i = 0; i < cycle.size() && i < 8; ++i) msg += (i ? " -> " : "") + g_unsorted.Describe(cycle[i]);
  if (cycle.size() > 8) msg += " -> ... (" + std::to_string(cycle.size()) + " ops)";
  return Error(msg);
}

// The chunk's last backward is split into this many pieces at most (per-bucket readiness).
constexpr int kMaxPieces = 16;

int64_t NumBuckets(const ChunkStatic& s, const CommSpec& comm) {
  return s.grad_bytes_per_gpu > 0 ? (s.grad_bytes_per_gpu + comm.dp_bucket_bytes - 1) / comm.dp_bucket_bytes
                                  : 0;
}
// Pieces of the chunk's last backward: one per bucket up to kMaxPieces (1 without gradients).
int NumPieces(int64_t buckets) { return static_cast<int>(std::clamp<int64_t>(buckets, 1, kMaxPieces)); }

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

}  // namespace

int BucketReadyPiece(const ChunkStatic& s, int64_t bucket_bytes, int64_t bucket, int pieces) {
  if (pieces <= 1 || s.grad_bytes_per_gpu <= 0) return std::max(0, pieces - 1);
  const double total = static_cast<double>(s.grad_bytes_per_gpu);
  // Gradient bytes the bucket needs, counted from the chunk's last layer (the backward's order).
  const double need = std::min(total, static_cast<double>(bucket + 1) * static_cast<double>(bucket_bytes));
  double f = need / total;  // without per-layer sizes: bytes appear evenly over the backward
  if (!s.layer_params.empty() && s.params > 0) {
    f = 1.0;
    double done = 0;
    for (size_t i = s.layer_params.size(); i-- > 0;) {
      done += static_cast<double>(s.layer_params[i]);
      const double share = done / static_cast<double>(s.params);
      if (share * total >= need * (1 - 1e-12)) {
        f = share;
        break;
      }
    }
  }
  const int q = static_cast<int>(std::ceil(f * pieces * (1 - 1e-12))) - 1;
  return std::clamp(q, 0, pieces - 1);
}

namespace {

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

// FSDP: one reduce-scatter per unit, of its gradient bytes, released by the piece of the chunk's last backward
// that computes it (the backward runs the units last to first: piece q is unit U - 1 - q); bucket = q.
std::vector<BucketGroup> FsdpBucketGroups(const ChunkStatic& s, int D, bool dp_in_node,
                                          const CommCostModel& cost_model) {
  std::vector<BucketGroup> groups;
  if (s.grad_bytes_per_gpu <= 0) return groups;
  const std::vector<FsdpUnit> units = FsdpUnits(s);
  const int U = static_cast<int>(units.size());
  groups.resize(U);
  for (int q = 0; q < U; ++q) {
    const int64_t bytes = units[U - 1 - q].bytes;
    groups[q] = {q, q, bytes > 0 ? 1 : 0, bytes,
                 bytes > 0 ? cost_model.Us({CommKind::kReduceScatter, bytes, D, dp_in_node}) : 0.0};
  }
  return groups;
}

}  // namespace

Result<OpGraph> BuildIterationGraph(const ParallelConfig& pc_in, const Schedule& schedule,
                                    const IterationCosts& costs, const std::vector<ChunkStatic>& statics,
                                    const CommSpec& comm, std::shared_ptr<const CommCostModel> comm_cost) {
  const ParallelConfig pc = GraphParallel(pc_in);
  const int sp_group = std::max(1, pc_in.sp);
  MMTWIN_RETURN_IF_ERROR(CheckInputs(pc, schedule, costs, statics, comm));
  if (!comm_cost) comm_cost = std::make_shared<AnalyticCommCost>(comm);
  const CommCostModel& cost_model = *comm_cost;
  // DP rings stay inside a node when the whole DP group fits in one (the layout's DP link, CommSpec::dp_*).
  const bool dp_in_node = comm.gpus_per_node > 0 && pc.tp * pc.dp <= comm.gpus_per_node;
  const int D = pc.dp, P = pc.pp, M = pc.micro_batches, C = pc.chunks();
  const DeviceMesh mesh(pc, comm.gpus_per_node);
  Builder b{pc, schedule, costs, statics, comm, ShapeOf(costs, comm), {}, {}, {}, {}, {}};
  const bool has_dp = D > 1;
  const bool zero3 = has_dp && pc.zero_stage == 3;
  // FSDP: per-unit unshard / reshard with prefetch (op_graph.h); the other ZeRO-3 implementations gather a
  // chunk's weights at once.
  const bool fsdp = zero3 && pc.zero3_impl == "fsdp";
  auto key = [&](int d, int m, int c) {
    return static_cast<int32_t>((static_cast<int64_t>(d) * M + m) * C + c);
  };
  auto nbuckets = [&](int c) -> int64_t { return has_dp ? NumBuckets(statics[c], comm) : 0; };
  auto send_present = [&](int c) { return c + 1 < C && P > 1 && b.shape[2 + C + c] != 0; };
  const size_t sp_at = 2 + 2 * static_cast<size_t>(C) + 2 * static_cast<size_t>(M);
  // The next replica of the device's SP group (its ring successor), same stage; -1 without SP.
  auto sp_peer = [&](int dev) -> int32_t {
    return sp_group <= 1 ? -1 : mesh.SpGroupNeighbor(dev, sp_group, std::max(1, pc_in.sp_ulysses));
  };
  // Appends the pass's sp_collective (its all-to-all bytes in `steps` exchanges, its ring bytes to the ring
  // successor) to op `k`'s chain and returns it; `op` keeps its other fields.
  auto add_sp = [&](Op& op, int32_t k, int dev, double us, int64_t bytes, int32_t steps, int64_t ring) {
    op.kind = OpKind::kSpCollective;
    op.duration_us = us;
    op.bytes = bytes;
    op.a2a_steps = steps;
    op.ring_bytes = ring;
    op.peer = sp_peer(dev);
    const int32_t id = b.NewOp(op, k);
    op.bytes = op.ring_bytes = 0;
    op.a2a_steps = 0;
    op.peer = -1;
    return id;
  };
  // The chunk's last backward is split into this many pieces (per-bucket readiness; 1 = whole).
  std::vector<std::vector<FsdpUnit>> units(fsdp ? C : 0);
  for (int c = 0; fsdp && c < C; ++c) units[c] = FsdpUnits(statics[c]);
  const UnitShares shares = fsdp ? FsdpShares(statics) : UnitShares();
  // FSDP: every pass of chunk c runs as units[c].size() pieces (one per unit); else only the chunk's last
  // backward, one piece per gradient bucket up to kMaxPieces.
  auto npieces = [&](int c) { return fsdp ? static_cast<int>(units[c].size()) : NumPieces(nbuckets(c)); };
  int stride = kMaxPieces;  // piece_op / group_op slots per (replica, chunk)
  for (int c = 0; fsdp && c < C; ++c) stride = std::max(stride, npieces(c));

  std::vector<std::vector<BucketGroup>> groups(C);
  if (has_dp)
    for (int c = 0; c < C; ++c)
      groups[c] = fsdp ? FsdpBucketGroups(statics[c], D, dp_in_node, cost_model)
                       : ChunkBucketGroups(statics[c], pc.zero_stage, D, dp_in_node, comm, cost_model);

  // Schedule positions per chunk (the same for every replica).
  std::vector<int> first_f(C, -1), first_b(C, -1), last_b(C, -1), last_b_mb(C, -1);
  for (int r = 0; r < P; ++r) {
    const auto& ops = schedule.per_rank[r];
    for (int pos = 0; pos < static_cast<int>(ops.size()); ++pos) {
      const int c = ops[pos].chunk;
      if (ops[pos].kind == PassKind::kForward) {
        if (first_f[c] < 0) first_f[c] = pos;
      } else {
        if (StartsBackward(ops[pos].kind) && first_b[c] < 0) first_b[c] = pos;
        if (EndsBackward(ops[pos].kind)) {  // the chunk's gradients are complete after its last one
          last_b[c] = pos;
          last_b_mb[c] = ops[pos].micro_batch;
        }
      }
    }
  }

  const size_t nk = static_cast<size_t>(D) * M * C;
  std::vector<int32_t> fwd_first(nk, -1), fwd_last(nk, -1), bwd_first(nk, -1), bwd_last(nk, -1),
      send_act(nk, -1), send_grad(nk, -1), grad_done(nk, -1);
  // The gradient ops of (d, c), one per bucket group: group_op[(d * C + c) * stride + x].
  std::vector<int32_t> group_op(static_cast<size_t>(D) * C * stride, -1);
  std::vector<int32_t> dispatch_op(static_cast<size_t>(D) * M, -1);      // dispatch op of (d, m)
  std::vector<int32_t> bwd_dispatch_op(static_cast<size_t>(D) * M, -1);  // its backward all-to-all
  // Pieces of the chunk's last backward on replica d: piece_op[(d * C + c) * stride + q].
  std::vector<int32_t> piece_op(static_cast<size_t>(D) * C * stride, -1);
  OpGraph g;
  FillDispatch(pc, costs, comm, cost_model, &g);
  b.last_on_lane.assign(static_cast<size_t>(mesh.num_devices()) * kNumLanes, -1);
  size_t est = nk * 7 + static_cast<size_t>(D) * C * 4;
  b.ops.reserve(est);
  b.lane_prev.reserve(est);
  b.cost_index.reserve(est);
  b.edges.reserve(est);

  // ZeRO-3: all-gather a chunk's weights before its first forward and its first backward (-1 when not
  // needed).
  auto weight_all_gather = [&](int32_t dev, int c, PassKind pass) -> int32_t {
    if (statics[c].grad_bytes_per_gpu <= 0) return -1;
    Op g{OpKind::kDpAllGather,
         Lane::kDp,
         pass,
         dev,
         -1,
         c,
         0,
         cost_model.Us(
             {CommKind::kWeightAllGather, statics[c].grad_bytes_per_gpu, D, dp_in_node, nbuckets(c)}),
         statics[c].grad_bytes_per_gpu};
    g.buckets = static_cast<int32_t>(nbuckets(c));
    g.peer = mesh.DpNeighbor(dev, +1);
    return b.NewOp(g, -1);
  };
  // FSDP: every unit all-gather, for its barrier: the collective (stage, micro-batch, chunk, pass, unit), the
  // replica, the op and the compute op it waits for (-1: none).
  struct UnitGather {
    int64_t key;
    int32_t replica, id, ready;
  };
  std::vector<UnitGather> unit_gathers;
  // FSDP: the compute ops of the units the device has run so far (its last two: unit_done[dev][0] the older),
  // for the rate limit of at most two unsharded units.
  std::vector<std::array<int32_t, 2>> unit_done(fsdp ? static_cast<size_t>(mesh.num_devices()) : 0,
                                                std::array<int32_t, 2>{-1, -1});
  // FSDP: all-gather of unit u of chunk c for micro-batch m's pass [dp lane]: it waits for the compute of the
  // unit two before it on the device (limit_all_gathers: its buffer is then free), else only for the lane.
  auto unit_all_gather = [&](int32_t dev, int c, int m, int u, PassKind pass) -> int32_t {
    const int64_t bytes = units[c][u].bytes;
    if (bytes <= 0) return -1;
    Op g{OpKind::kDpAllGather,
         Lane::kDp,
         pass,
         dev,
         m,
         c,
         u,
         cost_model.Us({CommKind::kWeightAllGather, bytes, D, dp_in_node, 1}),
         bytes};
    g.buckets = 1;
    g.peer = mesh.DpNeighbor(dev, +1);
    const int32_t id = b.NewOp(g, -1);
    // Its barrier over the replicas is added after the loop (the other replicas' ops do not exist yet).
    const int64_t key =
        (((static_cast<int64_t>(mesh.PpOfDevice(dev)) * M + m) * C + c) * 2 + (pass != PassKind::kForward)) *
            256 +
        u;
    unit_gathers.push_back({key, mesh.DpOfDevice(dev), id, unit_done[dev][0]});
    return id;
  };
  // The dp_collective of one bucket group of chunk c on `dev` [dp lane]; its barrier is added below.
  auto add_group = [&](int32_t dev, int c, const BucketGroup& bg) {
    Op g;
    g.kind = OpKind::kDpCollective;
    g.lane = Lane::kDp;
    g.pass = PassKind::kBackward;
    g.device = dev;
    g.chunk = c;
    g.bucket = static_cast<int32_t>(bg.first);
    g.duration_us = bg.duration_us;
    g.bytes = bg.bytes;
    g.buckets = static_cast<int32_t>(bg.count);
    g.peer = mesh.DpNeighbor(dev, +1);
    return b.NewOp(g, -1);
  };
  // FSDP: a unit's compute op `id` (its forward, or its backward piece) has run on `dev`.
  auto unit_ran = [&](int32_t dev, int32_t id) {
    unit_done[dev][0] = unit_done[dev][1];
    unit_done[dev][1] = id;
  };
  for (int d = 0; d < D; ++d) {
    for (int r = 0; r < P; ++r) {
      const int dev = mesh.Device(d, r);
      const auto& sops = schedule.per_rank[r];
      if (r == 0)
        for (int m = 0; m < M; ++m) {
          if (!b.shape[2 + 2 * static_cast<size_t>(C) + m]) continue;
          Op x{OpKind::kDispatch,
               Lane::kDispatch,
               PassKind::kForward,
               dev,
               m,
               0,
               0,
               g.dispatch_us.empty() ? 0.0 : g.dispatch_us[m],
               DispatchSentBytes(g, m, dev)};
          dispatch_op[static_cast<size_t>(d) * M + m] = b.NewOp(x, -1);
        }
      for (int pos = 0; pos < static_cast<int>(sops.size()); ++pos) {
        const int m = sops[pos].micro_batch, c = sops[pos].chunk;
        const int32_t k = key(d, m, c);
        const ChunkCost& cost = costs.costs[k];
        Op op;
        op.device = dev;
        op.micro_batch = m;
        op.chunk = c;
        if (sops[pos].kind == PassKind::kForward) {
          const int32_t ag =
              zero3 && !fsdp && pos == first_f[c] ? weight_all_gather(dev, c, PassKind::kForward) : -1;
          op.kind = OpKind::kForward;
          op.duration_us = cost.fwd_us;
          int32_t f = -1, last = -1;
          if (fsdp) {  // unit by unit, each after its all-gather; the next unit's gather is issued meanwhile
            const int U = npieces(c);
            op.pieces = static_cast<uint8_t>(U);
            int32_t gather = unit_all_gather(dev, c, m, 0, PassKind::kForward);
            for (int u = 0; u < U; ++u) {
              op.bucket = u;
              op.duration_us = cost.fwd_us * units[c][u].share;
              last = b.NewOp(op, k);
              if (f < 0) f = last;
              if (gather >= 0) b.AddEdge(last, gather);
              unit_ran(dev, last);
              gather = u + 1 < U ? unit_all_gather(dev, c, m, u + 1, PassKind::kForward) : -1;
            }
            op.pieces = 1;
            op.bucket = 0;
          } else {
            f = last = b.NewOp(op, k);
          }
          if (ag >= 0) b.AddEdge(f, ag);
          if (b.shape[0]) {
            op.kind = OpKind::kTpCollective;
            op.pass = PassKind::kForward;
            op.duration_us = cost.tp_fwd_us;
            last = b.NewOp(op, k);
          }
          if (b.shape[sp_at]) {
            op.pass = PassKind::kForward;
            last = add_sp(op, k, dev, cost.sp_fwd_us, cost.sp_a2a_fwd_bytes, cost.sp_a2a_fwd_steps,
                          cost.sp_ring_fwd_bytes);
          }
          fwd_first[k] = f;
          fwd_last[k] = last;
          if (send_present(c) && PipeRankOfChunk(c + 1, P) != r) {
            const int to = mesh.DeviceOfChunk(d, c + 1);
            Op s{OpKind::kP2pSendActivation,
                 Lane::kP2pForward,
                 PassKind::kForward,
                 dev,
                 m,
                 c,
                 0,
                 P2pUs(cost.send_bytes, cost_model, P2pInNode(mesh, comm, dev, to)),
                 cost.send_bytes};
            s.peer = to;
            send_act[k] = b.NewOp(s, k);
            b.AddEdge(send_act[k], last);
          }
        } else if (sops[pos].kind == PassKind::kBackwardWeight) {
          // W of a split backward: after its B group (B precedes W on the rank, so bwd_last[k] is set). The
          // chunk's last W is split into pieces (per-bucket gradient readiness).
          op.kind = OpKind::kBackwardWeight;
          op.pass = PassKind::kBackwardWeight;
          const int pieces = has_dp && pos == last_b[c] ? npieces(c) : 1;
          op.pieces = static_cast<uint8_t>(pieces);
          op.duration_us = cost.bwd_weight_us / pieces;
          for (int q = 0; q < pieces; ++q) {
            op.bucket = q;
            if (fsdp) op.duration_us = cost.bwd_weight_us * PieceShare(op, shares);
            const int32_t id = b.NewOp(op, k);
            if (q == 0) b.AddEdge(id, bwd_last[k]);
            if (pieces > 1) piece_op[(static_cast<size_t>(d) * C + c) * stride + q] = id;
            grad_done[k] = id;
          }
        } else {
          const int32_t ag =
              zero3 && !fsdp && pos == first_b[c] ? weight_all_gather(dev, c, PassKind::kBackward) : -1;
          // The backward all-to-all of micro-batch m (encoder-output gradients back to the encoder ranks),
          // before chunk 0's backward of m [dispatch lane, schedule order]: it waits for that gradient to
          // arrive (the next chunk's gradient send, or for pp 1 the forward), and the backward waits for it.
          int32_t bwd_dispatch = -1;
          if (c == 0 && b.shape[2 + 2 * static_cast<size_t>(C) + M + m]) {
            Op x{OpKind::kDispatch,
                 Lane::kDispatch,
                 PassKind::kBackward,
                 dev,
                 m,
                 0,
                 0,
                 g.dispatch_us.empty() ? 0.0 : g.dispatch_us[M + m],
                 DispatchSentBytes(g, M + m, dev)};
            bwd_dispatch = b.NewOp(x, -1);
            bwd_dispatch_op[static_cast<size_t>(d) * M + m] = bwd_dispatch;
          }
          const bool split = sops[pos].kind == PassKind::kBackwardInput;
          op.pass = split ? PassKind::kBackwardInput : PassKind::kBackward;
          int32_t first = -1;
          int32_t last = -1;
          const double bwd_us = split ? cost.bwd_us - cost.bwd_weight_us : cost.bwd_us;
          if (fsdp) {
            // Unit by unit, last to first: piece q is unit U - 1 - q (its recompute, then its backward), after
            // its all-gather; the next unit's gather is issued before it runs (BACKWARD_PRE) and, in the chunk's
            // last (whole) backward, the unit's gradient reduce-scatter after it.
            const int U = npieces(c);
            const bool releases = has_dp && pos == last_b[c] && !split;
            op.pieces = static_cast<uint8_t>(U);
            int32_t gather = unit_all_gather(dev, c, m, U - 1, PassKind::kBackward);
            for (int q = 0; q < U; ++q) {
              const double share = units[c][U - 1 - q].share;
              op.bucket = q;
              int32_t unit_first = -1;
              if (b.shape[2 + c]) {
                op.kind = OpKind::kRecompute;
                op.duration_us = cost.recompute_us * share;
                unit_first = b.NewOp(op, k);
              }
              op.kind = OpKind::kBackward;
              op.duration_us = bwd_us * share;
              last = b.NewOp(op, k);
              if (unit_first < 0) unit_first = last;
              if (first < 0) first = unit_first;
              if (gather >= 0) b.AddEdge(unit_first, gather);
              unit_ran(dev, last);
              gather = q + 1 < U ? unit_all_gather(dev, c, m, U - 2 - q, PassKind::kBackward) : -1;
              if (releases) {
                piece_op[(static_cast<size_t>(d) * C + c) * stride + q] = last;
                if (q < static_cast<int>(groups[c].size()))
                  group_op[(static_cast<size_t>(d) * C + c) * stride + q] = add_group(dev, c, groups[c][q]);
              }
            }
          } else {
            if (b.shape[2 + c]) {
              op.kind = OpKind::kRecompute;
              op.duration_us = cost.recompute_us;
              first = b.NewOp(op, k);
            }
            op.kind = OpKind::kBackward;
            // The chunk's last whole backward is split into pieces (per-bucket gradient readiness).
            const int pieces = has_dp && pos == last_b[c] && !split ? npieces(c) : 1;
            op.pieces = static_cast<uint8_t>(pieces);
            op.duration_us = bwd_us / pieces;
            for (int q = 0; q < pieces; ++q) {
              op.bucket = q;
              last = b.NewOp(op, k);
              if (first < 0) first = last;
              if (pieces > 1) piece_op[(static_cast<size_t>(d) * C + c) * stride + q] = last;
            }
          }
          op.bucket = 0;
          op.pieces = 1;
          if (b.shape[1]) {
            op.kind = OpKind::kTpCollective;
            op.duration_us = cost.tp_bwd_us;
            last = b.NewOp(op, k);
          }
          if (b.shape[sp_at + 1])
            last = add_sp(op, k, dev, cost.sp_bwd_us, cost.sp_a2a_bwd_bytes, cost.sp_a2a_bwd_steps,
                          cost.sp_ring_bwd_bytes);
          bwd_first[k] = first;
          bwd_last[k] = last;
          grad_done[k] = last;
          b.AddEdge(first, fwd_last[k]);
          if (ag >= 0) b.AddEdge(first, ag);
          if (bwd_dispatch >= 0) b.AddEdge(first, bwd_dispatch);
          if (c > 0 && send_present(c - 1) && PipeRankOfChunk(c - 1, P) != r) {
            const int32_t kp = key(d, m, c - 1);
            const int64_t bytes = costs.costs[kp].send_bytes;
            const int to = mesh.DeviceOfChunk(d, c - 1);
            Op s{OpKind::kP2pSendGradient,
                 Lane::kP2pBackward,
                 PassKind::kBackward,
                 dev,
                 m,
                 c,
                 0,
                 P2pUs(bytes, cost_model, P2pInNode(mesh, comm, dev, to)),
                 bytes};
            s.peer = to;
            send_grad[k] = b.NewOp(s, kp);
            b.AddEdge(send_grad[k], last);
          }
        }
        const bool emitted = fsdp && sops[pos].kind == PassKind::kBackward;  // inside the unit loop
        if (sops[pos].kind != PassKind::kForward && has_dp && pos == last_b[c] && !emitted) {
          // One dp_collective per group of the chunk's buckets that the same piece releases.
          for (size_t x = 0; x < groups[c].size(); ++x)
            group_op[(static_cast<size_t>(d) * C + c) * stride + x] = add_group(dev, c, groups[c][x]);
        }
      }
    }
  }
  // Cross-device dependencies.
  for (int d = 0; d < D; ++d)
    for (int m = 0; m < M; ++m)
      for (int c = 0; c < C; ++c) {
        const int32_t k = key(d, m, c);
        if (c > 0) b.AddEdge(fwd_first[k], send_act[k - 1] >= 0 ? send_act[k - 1] : fwd_last[k - 1]);
        if (c == 0 && dispatch_op[static_cast<size_t>(d) * M + m] >= 0)
          b.AddEdge(fwd_first[k], dispatch_op[static_cast<size_t>(d) * M + m]);
        if (c + 1 < C) b.AddEdge(bwd_first[k], send_grad[k + 1] >= 0 ? send_grad[k + 1] : bwd_last[k + 1]);
      }
  // Backward all-to-alls: micro-batch m's starts on every replica once the gradient has reached chunk 0 on all
  // of them (a barrier, as a collective does; the replica-alone timing waits for its own gradient only).
  for (int m = 0; m < M; ++m) {
    if (bwd_dispatch_op[m] < 0) continue;  // replica 0 has the op iff every replica has it
    auto ready = [&](int d) {
      const int32_t k = key(d, m, 0);
      return C > 1 ? (send_grad[k + 1] >= 0 ? send_grad[k + 1] : bwd_last[k + 1]) : fwd_last[k];
    };
    if (D == 1) {
      b.AddEdge(bwd_dispatch_op[m], ready(0));
      continue;
    }
    Op bar{OpKind::kBarrier, Lane::kDispatch, PassKind::kBackward, -1, m, 0, 0, 0.0, 0};
    const int32_t id = b.NewOp(bar, -1);
    for (int d = 0; d < D; ++d) b.AddEdge(id, ready(d));
    for (int d = 0; d < D; ++d)
      b.edges.push_back({bwd_dispatch_op[static_cast<size_t>(d) * M + m], id, ready(d)});
  }
  // FSDP unit all-gathers are collectives: each starts on every replica of its DP ring together, once every
  // replica is ready to issue it (its lane predecessor and the compute two units back are done: a barrier;
  // the replica-alone timing waits for its own). The replicas' graphs are alike, so replica 0's shape says
  // whether a gather waits for anything.
  if (!unit_gathers.empty()) {
    std::stable_sort(unit_gathers.begin(), unit_gathers.end(),
                     [](const UnitGather& x, const UnitGather& y) { return x.key < y.key; });
    for (size_t i = 0; i < unit_gathers.size();) {
      size_t j = i;
      while (j < unit_gathers.size() && unit_gathers[j].key == unit_gathers[i].key) ++j;
      const Op& g0 = b.ops[unit_gathers[i].id];
      auto local_of = [&](const UnitGather& x) { return x.ready >= 0 ? x.ready : b.lane_prev[x.id]; };
      if (local_of(unit_gathers[i]) >= 0) {
        Op bar{OpKind::kBarrier, Lane::kDp, g0.pass, -1, g0.micro_batch, g0.chunk, g0.bucket, 0.0, 0};
        const int32_t id = b.NewOp(bar, -1);
        for (size_t k = i; k < j; ++k) {
          if (unit_gathers[k].ready >= 0) b.AddEdge(id, unit_gathers[k].ready);
          if (b.lane_prev[unit_gathers[k].id] >= 0) b.AddEdge(id, b.lane_prev[unit_gathers[k].id]);
        }
        for (size_t k = i; k < j; ++k)
          if (local_of(unit_gathers[k]) >= 0)
            b.edges.push_back({unit_gathers[k].id, id, local_of(unit_gathers[k])});
      }
      i = j;
    }
  }
  // DP barriers: per chunk with gradients, one per bucket group (one per chunk when the backward is whole); the
  // group's op on every replica depends on it.
  if (has_dp) {
    for (int c = 0; c < C; ++c) {
      const int pieces = npieces(c);
      for (size_t x = 0; x < groups[c].size(); ++x) {
        const int q = groups[c][x].piece;
        // What replica d's group waits for: that piece (or its last W / whole backward group).
        auto ready_of = [&](int d) {
          return pieces > 1 ? piece_op[(static_cast<size_t>(d) * C + c) * stride + q]
                            : grad_done[key(d, last_b_mb[c], c)];
        };
        Op g{OpKind::kBarrier, Lane::kDp, PassKind::kBackward, -1, -1, c, q, 0.0, 0};
        const int32_t bar = b.NewOp(g, -1);
        for (int d = 0; d < D; ++d) b.AddEdge(bar, ready_of(d));
        for (int d = 0; d < D; ++d)
          b.edges.push_back({group_op[(static_cast<size_t>(d) * C + c) * stride + x], bar, ready_of(d)});
      }
    }
  }

  // Topological order over dependencies + lane order: a CSR of out-edges, each op's dependency edges in the
  // order they were added, then its lane successor (the order Boost.Graph's adjacency_list held them in when it
  // sorted the graph: the op order is unchanged).
  const int n = static_cast<int>(b.ops.size());
  std::vector<int32_t> out_begin(static_cast<size_t>(n) + 1, 0);
  for (const auto& e : b.edges) ++out_begin[e.from + 1];
  for (int i = 0; i < n; ++i)
    if (b.lane_prev[i] >= 0) ++out_begin[b.lane_prev[i] + 1];
  for (int i = 0; i < n; ++i) out_begin[i + 1] += out_begin[i];
  std::vector<int32_t> out_targets(static_cast<size_t>(out_begin[n]));
  {
    std::vector<int32_t> fill(out_begin.begin(), out_begin.end() - 1);
    for (const auto& e : b.edges) out_targets[fill[e.from]++] = e.to;
    for (int i = 0; i < n; ++i)
      if (b.lane_prev[i] >= 0) out_targets[fill[b.lane_prev[i]]++] = i;
  }
  std::vector<int32_t> order;
  const bool cyclic = !TopologicalOrder(out_begin, out_targets, &order);
  std::vector<int32_t>().swap(out_targets);
  g.parallel = pc;
  g.sp_group = sp_group;
  g.sp_ulysses = std::max(1, pc_in.sp_ulysses);
  g.num_devices = mesh.num_devices();
  if (cyclic) {
    g.ops = b.ops;
    std::vector<std::vector<int32_t>> preds(n);
    for (const auto& e : b.edges) preds[e.to].push_back(e.from);
    for (int i = 0; i < n; ++i)
      if (b.lane_prev[i] >= 0) preds[i].push_back(b.lane_prev[i]);
    return CycleError(g, preds);
  }
  std::vector<int32_t> new_id(n);
  for (int i = 0; i < n; ++i) new_id[order[i]] = i;

  g.ops.resize(n);
  g.lane_prev.resize(n);
  g.duration_us.resize(n);
  g.source.cost_index.resize(n);
  for (int i = 0; i < n; ++i) {
    const int32_t o = order[i];
    g.ops[i] = b.ops[o];
    g.duration_us[i] = b.ops[o].duration_us;
    g.lane_prev[i] = b.lane_prev[o] >= 0 ? new_id[b.lane_prev[o]] : -1;
    g.source.cost_index[i] = b.cost_index[o];
  }
  g.dep_begin.assign(n + 1, 0);
  for (const auto& e : b.edges) ++g.dep_begin[new_id[e.to] + 1];
  for (int i = 0; i < n; ++i) g.dep_begin[i + 1] += g.dep_begin[i];
  g.deps.resize(b.edges.size());
  g.local_deps.resize(b.edges.size());
  std::vector<int32_t> fill(g.dep_begin.begin(), g.dep_begin.end() - 1);
  for (const auto& e : b.edges) {
    const int32_t slot = fill[new_id[e.to]]++;
    g.deps[slot] = new_id[e.from];
    g.local_deps[slot] = new_id[e.local_from];
  }
  g.source.comm = comm;
  g.source.comm_cost = comm_cost;
  g.source.statics = statics;
  g.source.shape = std::move(b.shape);
  return g;
}

namespace {

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

// The recipe and the DP op list (OpGraph::Source), made once per graph.
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

// New statics in place (RepriceIterationGraph): every chunk's bucket groups, false when some chunk's last
// backward would have another number of pieces (`error` set instead for statics that are invalid).
bool StaticsFitInPlace(const OpGraph& g, const std::vector<ChunkStatic>& statics,
                       std::vector<std::vector<BucketGroup>>* groups, std::string* error) {
  const ParallelConfig& pc = g.parallel;
  const int D = pc.dp, C = pc.chunks();
  const bool dp_in_node = g.source.comm.gpus_per_node > 0 && pc.tp * pc.dp <= g.source.comm.gpus_per_node;
  if (static_cast<int>(statics.size()) != C) {
    *error = "op graph: " + std::to_string(statics.size()) + " chunk statics, expected " + std::to_string(C);
    return false;
  }
  groups->assign(C, {});
  for (int c = 0; c < C; ++c) {
    const ChunkStatic& st = statics[c];
    if (st.grad_bytes_per_gpu < 0) {
      *error = "op graph: grad_bytes_per_gpu must be >= 0";
      return false;
    }
    (*groups)[c] = ChunkBucketGroups(st, pc.zero_stage, D, dp_in_node, g.source.comm, *g.source.comm_cost);
    const std::vector<BucketGroup> old = ChunkBucketGroups(g.source.statics[c], pc.zero_stage, D, dp_in_node,
                                                           g.source.comm, *g.source.comm_cost);
    if (old.size() != (*groups)[c].size()) return false;  // as many pieces (one group each), or none in both
  }
  return true;
}

// The DP ops' buckets, bytes and durations for new statics (their groups from StaticsFitInPlace); `listed`: visit
// the DP op list of the recipe instead of every op.
void ApplyStatics(OpGraph& g, const std::vector<ChunkStatic>& statics,
                  const std::vector<std::vector<BucketGroup>>& groups, bool listed) {
  const ParallelConfig& pc = g.parallel;
  const int D = pc.dp;
  const bool dp_in_node = g.source.comm.gpus_per_node > 0 && pc.tp * pc.dp <= g.source.comm.gpus_per_node;
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
      op.bytes = st.grad_bytes_per_gpu;
      op.buckets = static_cast<int32_t>(NumBuckets(st, g.source.comm));
      op.duration_us = g.duration_us[i] = g.source.comm_cost->Us(
          {CommKind::kWeightAllGather, st.grad_bytes_per_gpu, D, dp_in_node, NumBuckets(st, g.source.comm)});
    }
  }
}

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

// What RepriceDurations checks of the packed times (ShapeOf's flags of the categories, the shape layout there,
// and CheckCost's test, in one pass): true when the graph's shape holds every category the times use, every
// time is finite and >= 0 and sends have a P2P speed. `chunk` of times[k] is k % C.
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

// The ops of every DP replica in graph order (OpGraph::Source::replica_begin / replica_ops), made once per graph;
// replica_closed says whether each replica's ops depend (local_deps, lane order) on its own ops only.
void EnsureReplicaOps(OpGraph& g) {
  OpGraph::Source& src = g.source;
  const int D = g.parallel.dp, n = g.num_ops();
  if (src.replica_begin.size() == static_cast<size_t>(D) + 1) return;
  const DeviceMesh mesh(g.parallel);
  std::vector<int32_t> replica(n, -1);
  src.replica_begin.assign(D + 1, 0);
  for (int i = 0; i < n; ++i)
    if (g.ops[i].device >= 0) {
      replica[i] = mesh.DpOfDevice(g.ops[i].device);
      ++src.replica_begin[replica[i] + 1];
    }
  for (int d = 0; d < D; ++d) src.replica_begin[d + 1] += src.replica_begin[d];
  src.replica_ops.resize(src.replica_begin[D]);
  src.last_compute_op.assign(g.num_devices, -1);
  std::vector<int32_t> fill(src.replica_begin.begin(), src.replica_begin.end() - 1);
  src.replica_closed = true;
  for (int i = 0; i < n; ++i) {
    if (replica[i] < 0) continue;
    src.replica_ops[fill[replica[i]]++] = i;
    if (g.ops[i].lane == Lane::kCompute && g.ops[i].device < g.num_devices)
      src.last_compute_op[g.ops[i].device] = i;
    if (g.lane_prev[i] >= 0 && replica[g.lane_prev[i]] != replica[i]) src.replica_closed = false;
    for (int32_t j = g.dep_begin[i]; j < g.dep_begin[i + 1]; ++j)
      if (replica[g.local_deps[j]] != replica[i]) src.replica_closed = false;
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
  const bool fsdp = D > 1 && pc.zero_stage == 3 && pc.zero3_impl == "fsdp";
  if (new_statics && fsdp) same = false;
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
  if (D > 1 && pc.zero_stage == 3 && pc.zero3_impl == "fsdp") return false;
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

std::optional<double> ReplicaAloneTimeUs(OpGraph* graph, int replica, std::span<const ChunkTimes> times,
                                         const std::vector<ChunkStatic>& statics,
                                         std::vector<double>* finish_us) {
  OpGraph& g = *graph;
  const ParallelConfig& pc = g.parallel;
  const int D = pc.dp, C = pc.chunks(), M = pc.micro_batches;
  const int n = g.num_ops();
  // RepriceDurations' conditions (there for the whole iteration, here for this replica's times).
  if (replica < 0 || replica >= D || times.size() != static_cast<size_t>(M) * C || C < 1 || g.sp_group > 1 ||
      !g.dispatch_begin.empty() || n == 0)
    return std::nullopt;
  if (D > 1 && pc.zero_stage == 3 && pc.zero3_impl == "fsdp") return std::nullopt;
  if (!TimesFitShape(g, times)) return std::nullopt;
  std::vector<std::vector<BucketGroup>> groups;
  const bool new_statics = D > 1 && statics != g.source.statics;
  std::string error;
  if (new_statics && !StaticsFitInPlace(g, statics, &groups, &error)) return std::nullopt;
  const DeviceMesh mesh(pc, g.source.comm.gpus_per_node);
  EnsureRecipe(g, mesh);
  if (g.source.recipe_general > 0) return std::nullopt;
  EnsureReplicaOps(g);
  if (!g.source.replica_closed) return std::nullopt;

  const bool dp_in_node = g.source.comm.gpus_per_node > 0 && pc.tp * pc.dp <= g.source.comm.gpus_per_node;
  const CommCostModel& comm_cost = *g.source.comm_cost;
  const OpGraph::Source::Recipe* recipe = g.source.recipe.data();
  const int32_t* cost_index = g.source.cost_index.data();
  const int32_t* lp = g.lane_prev.data();
  const int32_t* db = g.dep_begin.data();
  const int32_t* ldeps = g.local_deps.data();
  const int64_t base = static_cast<int64_t>(replica) * M * C, count = static_cast<int64_t>(M) * C;
  finish_us->resize(n);
  double* finish = finish_us->data();
  double T = 0;
  for (int32_t k = g.source.replica_begin[replica]; k < g.source.replica_begin[replica + 1]; ++k) {
    const int32_t i = g.source.replica_ops[k];
    const OpGraph::Source::Recipe r = recipe[i];
    double dur = g.duration_us[i];  // ops without a cost entry keep theirs (as RepriceDurations leaves them)
    if (r.code != kRecipeNone) {
      const int64_t x = cost_index[i] - base;
      if (x < 0 || x >= count || !RecipeUs(r, times[x], comm_cost, &dur)) return std::nullopt;
    } else if (new_statics) {  // the DP ops' durations for the new statics, as ApplyStatics gives them
      const Op& op = g.ops[i];
      if (op.kind == OpKind::kDpCollective) {
        dur = groups[op.chunk][g.ops[g.Deps(i)[0]].bucket].duration_us;
      } else if (op.kind == OpKind::kDpAllGather) {
        const ChunkStatic& st = statics[op.chunk];
        dur = comm_cost.Us({CommKind::kWeightAllGather, st.grad_bytes_per_gpu, D, dp_in_node,
                            NumBuckets(st, g.source.comm)});
      }
    }
    double s = lp[i] >= 0 ? finish[lp[i]] : 0.0;
    for (int32_t j = db[i], e = db[i + 1]; j < e; ++j) s = std::max(s, finish[ldeps[j]]);
    finish[i] = s + dur;
    T = std::max(T, finish[i]);
  }
  return T;
}

void ReplicaComputeEndUs(OpGraph* graph, const std::vector<double>& finish_us, std::vector<double>* out) {
  OpGraph& g = *graph;
  EnsureReplicaOps(g);
  const DeviceMesh mesh(g.parallel);
  out->assign(g.parallel.dp, 0.0);
  if (finish_us.size() != static_cast<size_t>(g.num_ops())) return;
  for (int dev = 0; dev < g.num_devices; ++dev) {
    const int32_t i = g.source.last_compute_op[dev];
    if (i < 0) continue;
    double& e = (*out)[mesh.DpOfDevice(dev)];
    e = std::max(e, finish_us[i]);
  }
}

}  // namespace mmtwin

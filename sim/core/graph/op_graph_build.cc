// SPDX-License-Identifier: Apache-2.0
// Building the iteration's op graph (BuildIterationGraph, op_graph.h): GraphBuilder checks the inputs, emits
// every replica's ops in its ranks' schedule order (dispatch, forward, backward and split-backward groups with
// their TP, SP, P2P, ZeRO-3 and FSDP ops, the gradient collectives), links them across devices (pipeline
// boundaries, barriers of the collectives), then sorts them topologically and lays out the CSR.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/graph/op_graph.h"
#include "core/graph/op_graph_internal.h"
#include "core/graph/topo_order.h"
#include "core/plan/mesh.h"
#include "core/plan/schedule.h"

namespace mmtwin {

using namespace graph_detail;

namespace {

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
  const bool encoder = s.HasEncoderPasses();
  if (encoder) {
    if (pc.zero_stage == 3)
      return Error("op graph: encoder passes outside the pipeline with ZeRO-3 are not modelled");
    if (costs.encoder.size() != static_cast<size_t>(pc.dp) * pc.micro_batches)
      return Error("op graph: " + std::to_string(costs.encoder.size()) +
                   " encoder costs, expected dp x M = " +
                   std::to_string(static_cast<size_t>(pc.dp) * pc.micro_batches));
    for (size_t i = 0; i < costs.encoder.size(); ++i) {
      const ChunkCost& e = costs.encoder[i];
      for (double v : {e.fwd_us, e.bwd_us, e.recompute_us, e.tp_fwd_us, e.tp_bwd_us})
        if (!(v >= 0) || !std::isfinite(v))
          return Error("iteration costs: encoder of dp " + std::to_string(i / pc.micro_batches) +
                       " micro-batch " + std::to_string(i % pc.micro_batches) +
                       ": times must be finite and >= 0");
      if (e.send_bytes < 0) return Error("iteration costs: encoder send_bytes must be >= 0");
      if (e.send_bytes > 0 && pc.pp > 1 && !(comm.p2p_bytes_per_s > 0))
        return Error("op graph: CommSpec.p2p_bytes_per_s must be > 0 when the encoders send bytes");
    }
    for (const auto* lists : {&costs.dispatch, &costs.dispatch_backward})
      for (const auto& list : *lists)
        if (!list.empty())
          return Error(
              "op graph: a data dispatch with the encoders outside the pipeline is not modelled "
              "(policies.data dispatch: none)");
    // The encoders' static last (none given with dp 1: no gradient to synchronize is known).
    if ((pc.dp > 1 || !statics.empty()) && static_cast<int>(statics.size()) != pc.chunks() + 1)
      return Error("op graph: " + std::to_string(statics.size()) + " statics, expected " +
                   std::to_string(pc.chunks() + 1) + " (the chunks', then the encoders')");
    if (!statics.empty() && pc.dp * pc.pp > 1 && statics.back().grad_bytes_per_gpu > 0) {
      if (!(comm.dp_bytes_per_s > 0)) return Error("op graph: CommSpec.dp_bytes_per_s must be > 0");
      if (comm.dp_bucket_bytes <= 0) return Error("op graph: CommSpec.dp_bucket_bytes must be > 0");
    }
  }
  if (pc.dp > 1) {
    if (static_cast<int>(statics.size()) != pc.chunks() + (encoder ? 1 : 0))
      return Error("op graph: " + std::to_string(statics.size()) + " chunk statics, expected " +
                   std::to_string(pc.chunks() + (encoder ? 1 : 0)));
    bool any = false;
    for (const ChunkStatic& st : std::span(statics).first(static_cast<size_t>(pc.chunks()))) {
      if (st.grad_bytes_per_gpu < 0) return Error("op graph: grad_bytes_per_gpu must be >= 0");
      if (st.frozen_bytes_per_gpu < 0) return Error("op graph: frozen_bytes_per_gpu must be >= 0");
      any = any || st.grad_bytes_per_gpu > 0 || (pc.zero_stage == 3 && st.frozen_bytes_per_gpu > 0);
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

// Builds one iteration's graph (op_graph.h). Construct it on checked inputs (CheckInputs), then Build(): the
// ops are emitted replica by replica, rank by rank, in schedule order (EmitRank), then linked across devices
// (LinkPipeline, LinkBackwardAllToAll, LinkUnitGathers, LinkGradientBarriers) and laid out in topological order
// (Finish). Op ids below are emission order until Finish renumbers them.
class GraphBuilder {
 public:
  GraphBuilder(const ParallelConfig& pc_in, const Schedule& schedule, const IterationCosts& costs,
               const std::vector<ChunkStatic>& statics, const CommSpec& comm,
               std::shared_ptr<const CommCostModel> comm_cost);
  Result<OpGraph> Build();

 private:
  // A dependency `from` -> `to`; `local_from` is what the replica-alone timing (OpGraph::local_deps) waits
  // for instead: `from` itself, or for a barrier the replica's own op that the barrier waits for.
  struct Edge {
    int32_t to, from, local_from;
  };
  // FSDP: every unit all-gather, for its barrier: the collective (stage, micro-batch, chunk, pass, unit), the
  // replica, the op and the compute op it waits for (-1: none).
  struct UnitGather {
    int64_t key;
    int32_t replica, id, ready;
  };

  int32_t Key(int d, int m, int c) const {
    return static_cast<int32_t>((static_cast<int64_t>(d) * M_ + m) * C_ + c);
  }
  // Slot of (replica d, chunk c, piece or group x) in piece_op_ / group_op_.
  size_t PieceSlot(int d, int c, int x) const { return (static_cast<size_t>(d) * C_ + c) * stride_ + x; }
  int64_t NumBucketsOf(int c) const { return has_dp_ ? NumBuckets(statics_[c], comm_) : 0; }
  // FSDP: every pass of chunk c runs as units_[c].size() pieces (one per unit); else only the chunk's last
  // backward, one piece per gradient bucket up to kMaxPieces.
  int NumPiecesOf(int c) const {
    return fsdp_ ? static_cast<int>(units_[c].size()) : NumPieces(NumBucketsOf(c));
  }
  bool SendPresent(int c) const { return c + 1 < C_ && P_ > 1 && shape_[2 + C_ + c] != 0; }
  bool DispatchPresent(int m) const { return shape_[2 + 2 * static_cast<size_t>(C_) + m] != 0; }
  bool BackwardDispatchPresent(int m) const { return shape_[2 + 2 * static_cast<size_t>(C_) + M_ + m] != 0; }
  // The next replica of the device's SP group (its ring successor), same stage; -1 without SP.
  int32_t SpPeer(int dev) const {
    return sp_group_ <= 1 ? -1 : mesh_.SpGroupNeighbor(dev, sp_group_, sp_ulysses_);
  }

  void Prepare();
  // Appends an op (cost entry `cost_idx`, -1: none) after its device lane's last; returns its id.
  int32_t NewOp(const Op& op, int32_t cost_idx) {
    const int32_t id = static_cast<int32_t>(ops_.size());
    ops_.push_back(op);
    cost_index_.push_back(cost_idx);
    if (op.device >= 0) {
      int32_t& last = last_on_lane_[op.device * kNumLanes + static_cast<int>(op.lane)];
      lane_prev_.push_back(last);
      last = id;
    } else {
      lane_prev_.push_back(-1);
    }
    return id;
  }
  void AddEdge(int32_t to, int32_t from) { edges_.push_back({to, from, from}); }

  // Emission, in schedule order.
  void EmitRank(int d, int r);
  void EmitDispatch(int d, int dev);
  void EmitForward(int d, int r, int dev, int pos, int m, int c);
  void EmitBackwardWeight(int d, int dev, int pos, int m, int c);
  void EmitBackward(int d, int r, int dev, int pos, int m, int c, bool split);
  // The backward group's compute ops (recompute, backward pieces) into `op`'s chain; first and last op.
  void EmitFsdpBackwardUnits(Op& op, int d, int dev, int pos, int m, int c, bool split, double bwd_us,
                             int32_t k, int32_t* first, int32_t* last);
  void EmitBackwardPieces(Op& op, int d, int pos, int c, bool split, double bwd_us, int32_t k, int32_t* first,
                          int32_t* last);
  // The encoder passes of rank r placed before its schedule op `pos` (all remaining ones for pos = -1).
  void EmitEncoderPasses(int d, int r, int dev, int pos, size_t* next);
  void EmitEncoderForward(int d, int dev, int m);
  void EmitEncoderBackward(int d, int dev, int m);
  void EmitEncoderGradientSend(int d, int dev, int m, int32_t after);
  int32_t EncoderSend(bool forward, int dev, int to, int m, int64_t bytes, int32_t after);
  int32_t AddSp(Op& op, int32_t k, int dev, double us, int64_t bytes, int32_t steps, int64_t ring);
  int32_t WeightAllGather(int32_t dev, int c, PassKind pass);
  int32_t UnitAllGather(int32_t dev, int c, int m, int u, PassKind pass);
  int32_t AddGroup(int32_t dev, int c, const BucketGroup& bg);
  // FSDP: a unit's compute op `id` (its forward, or its backward piece) has run on `dev`.
  void UnitRan(int32_t dev, int32_t id) {
    unit_done_[dev][0] = unit_done_[dev][1];
    unit_done_[dev][1] = id;
  }

  // Cross-device links, after every op exists.
  void LinkPipeline();
  void LinkBackwardAllToAll();
  void LinkUnitGathers();
  void LinkGradientBarriers();
  void LinkEncoders();
  Result<OpGraph> Finish();

  // Inputs.
  const ParallelConfig pc_;  // GraphParallel of the plan's
  const Schedule& sched_;
  const IterationCosts& costs_;
  const std::vector<ChunkStatic>& statics_;
  const CommSpec& comm_;
  const std::shared_ptr<const CommCostModel> comm_cost_;
  const CommCostModel& cost_model_;
  const int sp_group_, sp_ulysses_;
  const bool dp_in_node_;
  const int D_, P_, M_, C_;
  const DeviceMesh mesh_;
  const bool has_dp_, zero3_;
  // FSDP: per-unit unshard / reshard with prefetch (op_graph.h); the other ZeRO-3 implementations gather a
  // chunk's weights at once.
  const bool fsdp_;
  const bool encoder_;          // encoder passes outside the pipeline (Schedule::encoder)
  std::vector<uint8_t> shape_;  // ShapeOf(costs, comm)
  const size_t sp_at_;          // shape_ index of the SP forward flag

  // Per chunk (Prepare).
  std::vector<std::vector<FsdpUnit>> units_;
  UnitShares shares_;
  int stride_ = kMaxPieces;  // piece_op_ / group_op_ slots per (replica, chunk)
  std::vector<std::vector<BucketGroup>> groups_;
  // Schedule positions per chunk (the same for every replica).
  std::vector<int> first_f_, first_b_, last_b_, last_b_mb_;

  // Ops of each (d, m, c) (Key), -1 when none.
  std::vector<int32_t> fwd_first_, fwd_last_, bwd_first_, bwd_last_, send_act_, send_grad_, grad_done_;
  // The gradient ops of (d, c), one per bucket group: group_op_[PieceSlot(d, c, x)].
  std::vector<int32_t> group_op_;
  // Encoders outside the pipeline (Schedule::encoder): the rank running micro-batch m's encoder passes, and per
  // (d, m) its forward, what the first chunk waits for (the forward, or its output's send), its backward and the
  // gradient's send to it from the first chunk's rank.
  std::vector<int> encoder_rank_;
  bool encoder_backward_ = false;  // the encoder passes include backwards
  std::vector<int32_t> enc_fwd_, enc_out_, enc_bwd_, enc_bwd_first_, enc_grad_send_;
  bool encoder_recompute_ =
      false;  // some encoder pass recomputes: a recompute op before every encoder backward
  std::vector<int32_t> dispatch_op_;      // dispatch op of (d, m)
  std::vector<int32_t> bwd_dispatch_op_;  // its backward all-to-all
  // Pieces of the chunk's last backward on replica d: piece_op_[PieceSlot(d, c, q)].
  std::vector<int32_t> piece_op_;
  std::vector<UnitGather> unit_gathers_;
  // FSDP: the compute ops of the units the device has run so far (its last two: unit_done_[dev][0] the older),
  // for the rate limit of at most two unsharded units.
  std::vector<std::array<int32_t, 2>> unit_done_;

  // The graph in emission order.
  OpGraph g_;  // its dispatch side table (FillDispatch) until Finish
  std::vector<Op> ops_;
  std::vector<int32_t> lane_prev_;
  std::vector<int32_t> cost_index_;
  std::vector<Edge> edges_;
  std::vector<int32_t> last_on_lane_;
};

GraphBuilder::GraphBuilder(const ParallelConfig& pc_in, const Schedule& schedule, const IterationCosts& costs,
                           const std::vector<ChunkStatic>& statics, const CommSpec& comm,
                           std::shared_ptr<const CommCostModel> comm_cost)
    : pc_(GraphParallel(pc_in)),
      sched_(schedule),
      costs_(costs),
      statics_(statics),
      comm_(comm),
      comm_cost_(comm_cost ? std::move(comm_cost) : std::make_shared<AnalyticCommCost>(comm)),
      cost_model_(*comm_cost_),
      sp_group_(std::max(1, pc_in.sp)),
      sp_ulysses_(std::max(1, pc_in.sp_ulysses)),
      dp_in_node_(DpInNode(pc_, comm)),
      D_(pc_.dp),
      P_(pc_.pp),
      M_(pc_.micro_batches),
      C_(pc_.chunks()),
      mesh_(pc_, comm.gpus_per_node),
      has_dp_(D_ > 1),
      zero3_(has_dp_ && pc_.zero_stage == 3),
      fsdp_(IsFsdp(pc_)),
      encoder_(schedule.HasEncoderPasses()),
      shape_(ShapeOf(costs, comm)),
      sp_at_(2 + 2 * static_cast<size_t>(C_) + 2 * static_cast<size_t>(M_)) {}

void GraphBuilder::Prepare() {
  if (fsdp_) {
    units_.resize(C_);
    for (int c = 0; c < C_; ++c) units_[c] = FsdpUnits(statics_[c]);
    shares_ = FsdpShares(statics_);
    for (int c = 0; c < C_; ++c) stride_ = std::max(stride_, NumPiecesOf(c));
  }
  groups_.resize(C_);
  if (has_dp_)
    for (int c = 0; c < C_; ++c)
      groups_[c] = fsdp_
                       ? FsdpBucketGroups(statics_[c], D_, dp_in_node_, cost_model_)
                       : ChunkBucketGroups(statics_[c], pc_.zero_stage, D_, dp_in_node_, comm_, cost_model_);

  first_f_.assign(C_, -1);
  first_b_.assign(C_, -1);
  last_b_.assign(C_, -1);
  last_b_mb_.assign(C_, -1);
  for (int r = 0; r < P_; ++r) {
    const auto& ops = sched_.per_rank[r];
    for (int pos = 0; pos < static_cast<int>(ops.size()); ++pos) {
      const int c = ops[pos].chunk;
      if (ops[pos].kind == PassKind::kForward) {
        if (first_f_[c] < 0) first_f_[c] = pos;
      } else {
        if (StartsBackward(ops[pos].kind) && first_b_[c] < 0) first_b_[c] = pos;
        if (EndsBackward(ops[pos].kind)) {  // the chunk's gradients are complete after its last one
          last_b_[c] = pos;
          last_b_mb_[c] = ops[pos].micro_batch;
        }
      }
    }
  }

  const size_t nk = static_cast<size_t>(D_) * M_ * C_;
  for (auto* v : {&fwd_first_, &fwd_last_, &bwd_first_, &bwd_last_, &send_act_, &send_grad_, &grad_done_})
    v->assign(nk, -1);
  group_op_.assign(static_cast<size_t>(D_) * C_ * stride_, -1);
  piece_op_.assign(static_cast<size_t>(D_) * C_ * stride_, -1);
  if (encoder_) {
    encoder_rank_.assign(M_, -1);
    for (int r = 0; r < P_; ++r)
      for (const EncoderPass& e : sched_.encoder[r]) {
        encoder_rank_[e.micro_batch] = r;
        encoder_backward_ = encoder_backward_ || e.kind != PassKind::kForward;
      }
    for (auto* v : {&enc_fwd_, &enc_out_, &enc_bwd_, &enc_bwd_first_, &enc_grad_send_})
      v->assign(static_cast<size_t>(D_) * M_, -1);
    for (const ChunkCost& e : costs_.encoder) encoder_recompute_ = encoder_recompute_ || e.recompute_us > 0;
  }
  dispatch_op_.assign(static_cast<size_t>(D_) * M_, -1);
  bwd_dispatch_op_.assign(static_cast<size_t>(D_) * M_, -1);
  unit_done_.assign(fsdp_ ? static_cast<size_t>(mesh_.num_devices()) : 0, std::array<int32_t, 2>{-1, -1});
  FillDispatch(pc_, costs_, comm_, cost_model_, &g_);
  last_on_lane_.assign(static_cast<size_t>(mesh_.num_devices()) * kNumLanes, -1);
  const size_t est = nk * 7 + static_cast<size_t>(D_) * C_ * 4;
  ops_.reserve(est);
  lane_prev_.reserve(est);
  cost_index_.reserve(est);
  edges_.reserve(est);
}

// Appends the pass's sp_collective (its all-to-all bytes in `steps` exchanges, its ring bytes to the ring
// successor) to op `k`'s chain and returns it; `op` keeps its other fields.
int32_t GraphBuilder::AddSp(Op& op, int32_t k, int dev, double us, int64_t bytes, int32_t steps,
                            int64_t ring) {
  op.kind = OpKind::kSpCollective;
  op.duration_us = us;
  op.bytes = bytes;
  op.a2a_steps = steps;
  op.ring_bytes = ring;
  op.peer = SpPeer(dev);
  const int32_t id = NewOp(op, k);
  op.bytes = op.ring_bytes = 0;
  op.a2a_steps = 0;
  op.peer = -1;
  return id;
}

// ZeRO-3: all-gather a chunk's weights before its first forward and its first backward (-1 when not needed).
int32_t GraphBuilder::WeightAllGather(int32_t dev, int c, PassKind pass) {
  const int64_t bytes = statics_[c].weight_bytes_per_gpu();
  if (bytes <= 0) return -1;
  const int64_t buckets = has_dp_ ? NumWeightBuckets(statics_[c], comm_) : 0;
  Op g{OpKind::kDpAllGather,
       Lane::kDp,
       pass,
       dev,
       -1,
       c,
       0,
       cost_model_.Us({CommKind::kWeightAllGather, bytes, D_, dp_in_node_, buckets}),
       bytes};
  g.buckets = static_cast<int32_t>(buckets);
  g.peer = mesh_.DpNeighbor(dev, +1);
  return NewOp(g, -1);
}

// FSDP: all-gather of unit u of chunk c for micro-batch m's pass [dp lane]: it waits for the compute of the unit
// two before it on the device (limit_all_gathers: its buffer is then free), else only for the lane.
int32_t GraphBuilder::UnitAllGather(int32_t dev, int c, int m, int u, PassKind pass) {
  const int64_t bytes = units_[c][u].bytes;
  if (bytes <= 0) return -1;
  Op g{OpKind::kDpAllGather,
       Lane::kDp,
       pass,
       dev,
       m,
       c,
       u,
       cost_model_.Us({CommKind::kWeightAllGather, bytes, D_, dp_in_node_, 1}),
       bytes};
  g.buckets = 1;
  g.peer = mesh_.DpNeighbor(dev, +1);
  const int32_t id = NewOp(g, -1);
  // Its barrier over the replicas is added after the loop (the other replicas' ops do not exist yet).
  const int64_t key =
      (((static_cast<int64_t>(mesh_.PpOfDevice(dev)) * M_ + m) * C_ + c) * 2 + (pass != PassKind::kForward)) *
          256 +
      u;
  unit_gathers_.push_back({key, mesh_.DpOfDevice(dev), id, unit_done_[dev][0]});
  return id;
}

// The dp_collective of one bucket group of chunk c on `dev` [dp lane]; its barrier is added by
// LinkGradientBarriers.
int32_t GraphBuilder::AddGroup(int32_t dev, int c, const BucketGroup& bg) {
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
  g.peer = mesh_.DpNeighbor(dev, +1);
  return NewOp(g, -1);
}

void GraphBuilder::EmitRank(int d, int r) {
  const int dev = mesh_.Device(d, r);
  const auto& sops = sched_.per_rank[r];
  if (r == 0) EmitDispatch(d, dev);
  size_t next_encoder = 0;
  for (int pos = 0; pos < static_cast<int>(sops.size()); ++pos) {
    if (encoder_) EmitEncoderPasses(d, r, dev, pos, &next_encoder);
    const int m = sops[pos].micro_batch, c = sops[pos].chunk;
    const PassKind kind = sops[pos].kind;
    if (kind == PassKind::kForward)
      EmitForward(d, r, dev, pos, m, c);
    else if (kind == PassKind::kBackwardWeight)
      EmitBackwardWeight(d, dev, pos, m, c);
    else
      EmitBackward(d, r, dev, pos, m, c, kind == PassKind::kBackwardInput);
    const bool emitted = fsdp_ && kind == PassKind::kBackward;  // inside the unit loop
    if (kind != PassKind::kForward && has_dp_ && pos == last_b_[c] && !emitted) {
      // One dp_collective per group of the chunk's buckets that the same piece releases.
      for (size_t x = 0; x < groups_[c].size(); ++x)
        group_op_[PieceSlot(d, c, static_cast<int>(x))] = AddGroup(dev, c, groups_[c][x]);
    }
  }
  if (encoder_) EmitEncoderPasses(d, r, dev, -1, &next_encoder);
}

void GraphBuilder::EmitEncoderPasses(int d, int r, int dev, int pos, size_t* next) {
  const auto& passes = sched_.encoder[r];
  for (; *next < passes.size() && (pos < 0 || passes[*next].before <= pos); ++*next) {
    const EncoderPass& e = passes[*next];
    if (e.kind == PassKind::kForward)
      EmitEncoderForward(d, dev, e.micro_batch);
    else
      EmitEncoderBackward(d, dev, e.micro_batch);
  }
}

// An op of micro-batch m's encoder passes (chunk -1) on `dev`.
Op EncoderOp(OpKind kind, Lane lane, PassKind pass, int dev, int m) {
  Op op;
  op.kind = kind;
  op.lane = lane;
  op.pass = pass;
  op.device = dev;
  op.micro_batch = m;
  op.chunk = -1;
  return op;
}

// The send of micro-batch m's encoder output (forward) or its gradient from `dev` to `to` [p2p lane], after
// `after`; returns it.
int32_t GraphBuilder::EncoderSend(bool forward, int dev, int to, int m, int64_t bytes, int32_t after) {
  Op s = EncoderOp(forward ? OpKind::kP2pSendActivation : OpKind::kP2pSendGradient,
                   forward ? Lane::kP2pForward : Lane::kP2pBackward,
                   forward ? PassKind::kForward : PassKind::kBackward, dev, m);
  s.duration_us = P2pUs(bytes, cost_model_, P2pInNode(mesh_, comm_, dev, to));
  s.bytes = bytes;
  s.peer = to;
  const int32_t id = NewOp(s, -1);
  AddEdge(id, after);
  return id;
}

// Micro-batch m's encoder forward [compute lane; its TP collectives included], then its output's send to the
// first chunk's rank [p2p_fwd lane] when that is another rank.
void GraphBuilder::EmitEncoderForward(int d, int dev, int m) {
  const size_t k = static_cast<size_t>(d) * M_ + m;
  const ChunkCost& e = costs_.encoder[k];
  Op op = EncoderOp(OpKind::kEncoderForward, Lane::kCompute, PassKind::kForward, dev, m);
  op.duration_us = e.fwd_us + e.tp_fwd_us;
  enc_fwd_[k] = enc_out_[k] = NewOp(op, -1);
  const int to = mesh_.DeviceOfChunk(d, 0);
  if (to != dev) enc_out_[k] = EncoderSend(/*forward=*/true, dev, to, m, e.send_bytes, enc_fwd_[k]);
}

// The gradient of micro-batch m's encoder output, from the first chunk's rank (after `after`, its backward there)
// to the rank running its encoder backward [p2p_bwd lane of the first chunk's device], unless that is the same.
void GraphBuilder::EmitEncoderGradientSend(int d, int dev, int m, int32_t after) {
  if (!encoder_backward_) return;
  const size_t k = static_cast<size_t>(d) * M_ + m;
  const int to = mesh_.Device(d, encoder_rank_[m]);
  if (to == dev) {
    enc_grad_send_[k] = after;
    return;
  }
  enc_grad_send_[k] = EncoderSend(/*forward=*/false, dev, to, m, costs_.encoder[k].send_bytes, after);
}

// Micro-batch m's encoder backward [compute lane; its TP collectives included], after its recompute op when the
// encoders recompute; it waits for its forward and for the gradient of its output (LinkEncoders).
void GraphBuilder::EmitEncoderBackward(int d, int dev, int m) {
  const size_t k = static_cast<size_t>(d) * M_ + m;
  const ChunkCost& e = costs_.encoder[k];
  Op op = EncoderOp(OpKind::kEncoderBackward, Lane::kCompute, PassKind::kBackward, dev, m);
  int32_t first = -1;
  if (encoder_recompute_) {  // the encoders' recompute, just before their backward (zero where none)
    op.kind = OpKind::kRecompute;
    op.duration_us = e.recompute_us;
    first = NewOp(op, -1);
  }
  op.kind = OpKind::kEncoderBackward;
  op.duration_us = e.bwd_us + e.tp_bwd_us;
  enc_bwd_[k] = NewOp(op, -1);
  enc_bwd_first_[k] = first >= 0 ? first : enc_bwd_[k];
  AddEdge(enc_bwd_first_[k], enc_fwd_[k]);
}

// The stage-0 device's dispatch op of every micro-batch with transfers [dispatch lane, micro-batch order].
void GraphBuilder::EmitDispatch(int d, int dev) {
  for (int m = 0; m < M_; ++m) {
    if (!DispatchPresent(m)) continue;
    Op x{OpKind::kDispatch,
         Lane::kDispatch,
         PassKind::kForward,
         dev,
         m,
         0,
         0,
         g_.dispatch_us.empty() ? 0.0 : g_.dispatch_us[m],
         DispatchSentBytes(g_, m, dev)};
    dispatch_op_[static_cast<size_t>(d) * M_ + m] = NewOp(x, -1);
  }
}

// The forward group of (d, m, c) (its ZeRO-3 weight all-gather first where it is the chunk's first forward;
// with FSDP unit by unit), its TP and SP ops, then the activation send to the next chunk's rank.
void GraphBuilder::EmitForward(int d, int r, int dev, int pos, int m, int c) {
  const int32_t k = Key(d, m, c);
  const ChunkCost& cost = costs_.costs[k];
  Op op;
  op.device = dev;
  op.micro_batch = m;
  op.chunk = c;
  const int32_t ag =
      zero3_ && !fsdp_ && pos == first_f_[c] ? WeightAllGather(dev, c, PassKind::kForward) : -1;
  op.kind = OpKind::kForward;
  op.duration_us = cost.fwd_us;
  int32_t f = -1, last = -1;
  if (fsdp_) {  // unit by unit, each after its all-gather; the next unit's gather is issued meanwhile
    const int U = NumPiecesOf(c);
    op.pieces = static_cast<uint8_t>(U);
    int32_t gather = UnitAllGather(dev, c, m, 0, PassKind::kForward);
    for (int u = 0; u < U; ++u) {
      op.bucket = u;
      op.duration_us = cost.fwd_us * units_[c][u].share;
      last = NewOp(op, k);
      if (f < 0) f = last;
      if (gather >= 0) AddEdge(last, gather);
      UnitRan(dev, last);
      gather = u + 1 < U ? UnitAllGather(dev, c, m, u + 1, PassKind::kForward) : -1;
    }
    op.pieces = 1;
    op.bucket = 0;
  } else {
    f = last = NewOp(op, k);
  }
  if (ag >= 0) AddEdge(f, ag);
  if (shape_[0]) {
    op.kind = OpKind::kTpCollective;
    op.pass = PassKind::kForward;
    op.duration_us = cost.tp_fwd_us;
    last = NewOp(op, k);
  }
  if (shape_[sp_at_]) {
    op.pass = PassKind::kForward;
    last = AddSp(op, k, dev, cost.sp_fwd_us, cost.sp_a2a_fwd_bytes, cost.sp_a2a_fwd_steps,
                 cost.sp_ring_fwd_bytes);
  }
  fwd_first_[k] = f;
  fwd_last_[k] = last;
  if (SendPresent(c) && PipeRankOfChunk(c + 1, P_) != r) {
    const int to = mesh_.DeviceOfChunk(d, c + 1);
    Op s{OpKind::kP2pSendActivation,
         Lane::kP2pForward,
         PassKind::kForward,
         dev,
         m,
         c,
         0,
         P2pUs(cost.send_bytes, cost_model_, P2pInNode(mesh_, comm_, dev, to)),
         cost.send_bytes};
    s.peer = to;
    send_act_[k] = NewOp(s, k);
    AddEdge(send_act_[k], last);
  }
}

// W of a split backward: after its B group (B precedes W on the rank, so bwd_last_[k] is set). The chunk's last
// W is split into pieces (per-bucket gradient readiness).
void GraphBuilder::EmitBackwardWeight(int d, int dev, int pos, int m, int c) {
  const int32_t k = Key(d, m, c);
  const ChunkCost& cost = costs_.costs[k];
  Op op;
  op.device = dev;
  op.micro_batch = m;
  op.chunk = c;
  op.kind = OpKind::kBackwardWeight;
  op.pass = PassKind::kBackwardWeight;
  const int pieces = has_dp_ && pos == last_b_[c] ? NumPiecesOf(c) : 1;
  op.pieces = static_cast<uint8_t>(pieces);
  op.duration_us = cost.bwd_weight_us / pieces;
  for (int q = 0; q < pieces; ++q) {
    op.bucket = q;
    if (fsdp_) op.duration_us = cost.bwd_weight_us * PieceShare(op, shares_);
    const int32_t id = NewOp(op, k);
    if (q == 0) AddEdge(id, bwd_last_[k]);
    if (pieces > 1) piece_op_[PieceSlot(d, c, q)] = id;
    grad_done_[k] = id;
  }
}

// The backward group of (d, m, c) (a whole backward, or B of a split one): its ZeRO-3 weight all-gather where it
// is the chunk's first, the backward all-to-all before chunk 0's, the compute ops, TP and SP, then the gradient
// send to the previous chunk's rank.
void GraphBuilder::EmitBackward(int d, int r, int dev, int pos, int m, int c, bool split) {
  const int32_t k = Key(d, m, c);
  const ChunkCost& cost = costs_.costs[k];
  Op op;
  op.device = dev;
  op.micro_batch = m;
  op.chunk = c;
  const int32_t ag =
      zero3_ && !fsdp_ && pos == first_b_[c] ? WeightAllGather(dev, c, PassKind::kBackward) : -1;
  // The backward all-to-all of micro-batch m (encoder-output gradients back to the encoder ranks), before chunk
  // 0's backward of m [dispatch lane, schedule order]: it waits for that gradient to arrive (the next chunk's
  // gradient send, or for pp 1 the forward), and the backward waits for it.
  int32_t bwd_dispatch = -1;
  if (c == 0 && BackwardDispatchPresent(m)) {
    Op x{OpKind::kDispatch,
         Lane::kDispatch,
         PassKind::kBackward,
         dev,
         m,
         0,
         0,
         g_.dispatch_us.empty() ? 0.0 : g_.dispatch_us[M_ + m],
         DispatchSentBytes(g_, M_ + m, dev)};
    bwd_dispatch = NewOp(x, -1);
    bwd_dispatch_op_[static_cast<size_t>(d) * M_ + m] = bwd_dispatch;
  }
  op.pass = split ? PassKind::kBackwardInput : PassKind::kBackward;
  int32_t first = -1;
  int32_t last = -1;
  const double bwd_us = split ? cost.bwd_us - cost.bwd_weight_us : cost.bwd_us;
  if (fsdp_)
    EmitFsdpBackwardUnits(op, d, dev, pos, m, c, split, bwd_us, k, &first, &last);
  else
    EmitBackwardPieces(op, d, pos, c, split, bwd_us, k, &first, &last);
  op.bucket = 0;
  op.pieces = 1;
  if (shape_[1]) {
    op.kind = OpKind::kTpCollective;
    op.duration_us = cost.tp_bwd_us;
    last = NewOp(op, k);
  }
  if (shape_[sp_at_ + 1])
    last = AddSp(op, k, dev, cost.sp_bwd_us, cost.sp_a2a_bwd_bytes, cost.sp_a2a_bwd_steps,
                 cost.sp_ring_bwd_bytes);
  bwd_first_[k] = first;
  bwd_last_[k] = last;
  grad_done_[k] = last;
  if (c == 0 && encoder_) EmitEncoderGradientSend(d, dev, m, last);
  AddEdge(first, fwd_last_[k]);
  if (ag >= 0) AddEdge(first, ag);
  if (bwd_dispatch >= 0) AddEdge(first, bwd_dispatch);
  if (c > 0 && SendPresent(c - 1) && PipeRankOfChunk(c - 1, P_) != r) {
    const int32_t kp = Key(d, m, c - 1);
    const int64_t bytes = costs_.costs[kp].send_bytes;
    const int to = mesh_.DeviceOfChunk(d, c - 1);
    Op s{OpKind::kP2pSendGradient,
         Lane::kP2pBackward,
         PassKind::kBackward,
         dev,
         m,
         c,
         0,
         P2pUs(bytes, cost_model_, P2pInNode(mesh_, comm_, dev, to)),
         bytes};
    s.peer = to;
    send_grad_[k] = NewOp(s, kp);
    AddEdge(send_grad_[k], last);
  }
}

// FSDP: unit by unit, last to first: piece q is unit U - 1 - q (its recompute, then its backward), after its
// all-gather; the next unit's gather is issued before it runs (BACKWARD_PRE) and, in the chunk's last (whole)
// backward, the unit's gradient reduce-scatter after it.
void GraphBuilder::EmitFsdpBackwardUnits(Op& op, int d, int dev, int pos, int m, int c, bool split,
                                         double bwd_us, int32_t k, int32_t* first, int32_t* last) {
  const ChunkCost& cost = costs_.costs[k];
  const int U = NumPiecesOf(c);
  const bool releases = has_dp_ && pos == last_b_[c] && !split;
  op.pieces = static_cast<uint8_t>(U);
  int32_t gather = UnitAllGather(dev, c, m, U - 1, PassKind::kBackward);
  for (int q = 0; q < U; ++q) {
    const double share = units_[c][U - 1 - q].share;
    op.bucket = q;
    int32_t unit_first = -1;
    if (shape_[2 + c]) {
      op.kind = OpKind::kRecompute;
      op.duration_us = cost.recompute_us * share;
      unit_first = NewOp(op, k);
    }
    op.kind = OpKind::kBackward;
    op.duration_us = bwd_us * share;
    *last = NewOp(op, k);
    if (unit_first < 0) unit_first = *last;
    if (*first < 0) *first = unit_first;
    if (gather >= 0) AddEdge(unit_first, gather);
    UnitRan(dev, *last);
    gather = q + 1 < U ? UnitAllGather(dev, c, m, U - 2 - q, PassKind::kBackward) : -1;
    if (releases) {
      piece_op_[PieceSlot(d, c, q)] = *last;
      if (q < static_cast<int>(groups_[c].size()))
        group_op_[PieceSlot(d, c, q)] = AddGroup(dev, c, groups_[c][q]);
    }
  }
}

// Without FSDP: the recompute op (if the chunk recomputes), then the backward, the chunk's last whole backward
// split into pieces (per-bucket gradient readiness).
void GraphBuilder::EmitBackwardPieces(Op& op, int d, int pos, int c, bool split, double bwd_us, int32_t k,
                                      int32_t* first, int32_t* last) {
  const ChunkCost& cost = costs_.costs[k];
  if (shape_[2 + c]) {
    op.kind = OpKind::kRecompute;
    op.duration_us = cost.recompute_us;
    *first = NewOp(op, k);
  }
  op.kind = OpKind::kBackward;
  const int pieces = has_dp_ && pos == last_b_[c] && !split ? NumPiecesOf(c) : 1;
  op.pieces = static_cast<uint8_t>(pieces);
  op.duration_us = bwd_us / pieces;
  for (int q = 0; q < pieces; ++q) {
    op.bucket = q;
    *last = NewOp(op, k);
    if (*first < 0) *first = *last;
    if (pieces > 1) piece_op_[PieceSlot(d, c, q)] = *last;
  }
}

// Pipeline boundaries: forward (m, c) after the activation send (or forward group) of (m, c-1), and after its
// dispatch for c = 0; backward (m, c) after the gradient send (or backward group) of (m, c+1).
void GraphBuilder::LinkPipeline() {
  for (int d = 0; d < D_; ++d)
    for (int m = 0; m < M_; ++m)
      for (int c = 0; c < C_; ++c) {
        const int32_t k = Key(d, m, c);
        if (c > 0) AddEdge(fwd_first_[k], send_act_[k - 1] >= 0 ? send_act_[k - 1] : fwd_last_[k - 1]);
        if (c == 0 && dispatch_op_[static_cast<size_t>(d) * M_ + m] >= 0)
          AddEdge(fwd_first_[k], dispatch_op_[static_cast<size_t>(d) * M_ + m]);
        if (c + 1 < C_) AddEdge(bwd_first_[k], send_grad_[k + 1] >= 0 ? send_grad_[k + 1] : bwd_last_[k + 1]);
      }
}

// Backward all-to-alls: micro-batch m's starts on every replica once the gradient has reached chunk 0 on all of
// them (a barrier, as a collective does; the replica-alone timing waits for its own gradient only).
void GraphBuilder::LinkBackwardAllToAll() {
  for (int m = 0; m < M_; ++m) {
    if (bwd_dispatch_op_[m] < 0) continue;  // replica 0 has the op iff every replica has it
    auto ready = [&](int d) {
      const int32_t k = Key(d, m, 0);
      return C_ > 1 ? (send_grad_[k + 1] >= 0 ? send_grad_[k + 1] : bwd_last_[k + 1]) : fwd_last_[k];
    };
    if (D_ == 1) {
      AddEdge(bwd_dispatch_op_[m], ready(0));
      continue;
    }
    Op bar{OpKind::kBarrier, Lane::kDispatch, PassKind::kBackward, -1, m, 0, 0, 0.0, 0};
    const int32_t id = NewOp(bar, -1);
    for (int d = 0; d < D_; ++d) AddEdge(id, ready(d));
    for (int d = 0; d < D_; ++d)
      edges_.push_back({bwd_dispatch_op_[static_cast<size_t>(d) * M_ + m], id, ready(d)});
  }
}

// FSDP unit all-gathers are collectives: each starts on every replica of its DP ring together, once every
// replica is ready to issue it (its lane predecessor and the compute two units back are done: a barrier; the
// replica-alone timing waits for its own). The replicas' graphs are alike, so replica 0's shape says whether a
// gather waits for anything.
void GraphBuilder::LinkUnitGathers() {
  if (unit_gathers_.empty()) return;
  std::stable_sort(unit_gathers_.begin(), unit_gathers_.end(),
                   [](const UnitGather& x, const UnitGather& y) { return x.key < y.key; });
  auto local_of = [&](const UnitGather& x) { return x.ready >= 0 ? x.ready : lane_prev_[x.id]; };
  for (size_t i = 0; i < unit_gathers_.size();) {
    size_t j = i;
    while (j < unit_gathers_.size() && unit_gathers_[j].key == unit_gathers_[i].key) ++j;
    const Op& g0 = ops_[unit_gathers_[i].id];
    if (local_of(unit_gathers_[i]) >= 0) {
      Op bar{OpKind::kBarrier, Lane::kDp, g0.pass, -1, g0.micro_batch, g0.chunk, g0.bucket, 0.0, 0};
      const int32_t id = NewOp(bar, -1);
      for (size_t k = i; k < j; ++k) {
        if (unit_gathers_[k].ready >= 0) AddEdge(id, unit_gathers_[k].ready);
        if (lane_prev_[unit_gathers_[k].id] >= 0) AddEdge(id, lane_prev_[unit_gathers_[k].id]);
      }
      for (size_t k = i; k < j; ++k)
        if (local_of(unit_gathers_[k]) >= 0)
          edges_.push_back({unit_gathers_[k].id, id, local_of(unit_gathers_[k])});
    }
    i = j;
  }
}

// DP barriers: per chunk with gradients, one per bucket group (one per chunk when the backward is whole); the
// group's op on every replica depends on it.
void GraphBuilder::LinkGradientBarriers() {
  if (!has_dp_) return;
  for (int c = 0; c < C_; ++c) {
    const int pieces = NumPiecesOf(c);
    for (size_t x = 0; x < groups_[c].size(); ++x) {
      const int q = groups_[c][x].piece;
      // What replica d's group waits for: that piece (or its last W / whole backward group); without overlap
      // (ParallelConfig::overlap_grad_reduce false) the device's last compute op of the iteration.
      auto ready_of = [&](int d) {
        if (!pc_.overlap_grad_reduce)
          return last_on_lane_[ops_[group_op_[PieceSlot(d, c, static_cast<int>(x))]].device * kNumLanes +
                               static_cast<int>(Lane::kCompute)];
        return pieces > 1 ? piece_op_[PieceSlot(d, c, q)] : grad_done_[Key(d, last_b_mb_[c], c)];
      };
      Op g{OpKind::kBarrier, Lane::kDp, PassKind::kBackward, -1, -1, c, q, 0.0, 0};
      const int32_t bar = NewOp(g, -1);
      for (int d = 0; d < D_; ++d) AddEdge(bar, ready_of(d));
      for (int d = 0; d < D_; ++d)
        edges_.push_back({group_op_[PieceSlot(d, c, static_cast<int>(x))], bar, ready_of(d)});
    }
  }
}

// The encoders outside the pipeline: the first chunk's forward of (d, m) waits for its encoder output, the
// encoder backward for its gradient. Every device holds an encoder replica (DP over dp x pp devices): after the
// device's last encoder backward, one encoder_grad_sync [dp lane, after the device's other gradient
// collectives] of the encoders' gradient bytes per GPU in buckets of dp_bucket_bytes, each bucket the
// collective of the ZeRO stage (all-reduce; reduce-scatter + all-gather for ZeRO-1/2) over all D x P devices,
// behind a barrier of every device's last encoder backward (a device that runs none: its last compute op).
void GraphBuilder::LinkEncoders() {
  if (!encoder_) return;
  for (int d = 0; d < D_; ++d)
    for (int m = 0; m < M_; ++m) {
      const size_t k = static_cast<size_t>(d) * M_ + m;
      AddEdge(fwd_first_[Key(d, m, 0)], enc_out_[k]);
      if (enc_bwd_[k] >= 0) AddEdge(enc_bwd_first_[k], enc_grad_send_[k]);
    }
  const int devices = mesh_.num_devices();
  const int64_t bytes = devices > 1 && encoder_backward_ && static_cast<int>(statics_.size()) > C_
                            ? statics_[C_].grad_bytes_per_gpu
                            : 0;
  if (bytes <= 0) return;
  std::vector<int32_t> ready(devices, -1);
  for (size_t k = 0; k < enc_bwd_.size(); ++k)
    if (enc_bwd_[k] >= 0) {
      const int dev = ops_[enc_bwd_[k]].device;
      ready[dev] = std::max(ready[dev], enc_bwd_[k]);  // emission order is the lane's order
    }
  for (int dev = 0; dev < devices; ++dev)
    if (ready[dev] < 0) ready[dev] = last_on_lane_[dev * kNumLanes + static_cast<int>(Lane::kCompute)];
  const CommKind kind = pc_.zero_stage == 0 ? CommKind::kAllReduce : CommKind::kReduceScatterAllGather;
  const int tp = std::max(1, pc_.tp), gpn = comm_.gpus_per_node;
  const bool in_node = gpn > 0 && static_cast<int64_t>(devices) * tp <= gpn;
  const int per_node = gpn > 0 ? std::max(1, std::min(devices, gpn / tp)) : 1;
  const int64_t bucket = comm_.dp_bucket_bytes, full = bytes / bucket, rest = bytes % bucket;
  auto call = [&](int64_t b) {
    CommCall x{kind, b, devices, in_node};
    x.ranks_per_node = per_node;
    return cost_model_.Us(x);
  };
  const double us =
      static_cast<double>(full) * (full > 0 ? call(bucket) : 0.0) + (rest > 0 ? call(rest) : 0.0);
  Op bar{OpKind::kBarrier, Lane::kDp, PassKind::kBackward, -1, -1, -1, 0, 0.0, 0};
  const int32_t barrier = NewOp(bar, -1);
  for (int dev = 0; dev < devices; ++dev)
    if (ready[dev] >= 0) AddEdge(barrier, ready[dev]);
  for (int dev = 0; dev < devices; ++dev) {
    Op g{OpKind::kEncoderGradSync, Lane::kDp, PassKind::kBackward, dev, -1, -1, 0, us, bytes};
    g.buckets = static_cast<int32_t>(full + (rest > 0 ? 1 : 0));
    const int32_t id = NewOp(g, -1);
    if (ready[dev] >= 0) edges_.push_back({id, barrier, ready[dev]});
  }
}

// Topological order over dependencies + lane order: a CSR of out-edges, each op's dependency edges in the order
// they were added, then its lane successor (the order Boost.Graph's adjacency_list held them in when it sorted
// the graph: the op order is unchanged). Then the ops, lanes and dependencies renumbered in that order.
Result<OpGraph> GraphBuilder::Finish() {
  const int n = static_cast<int>(ops_.size());
  std::vector<int32_t> out_begin(static_cast<size_t>(n) + 1, 0);
  for (const auto& e : edges_) ++out_begin[e.from + 1];
  for (int i = 0; i < n; ++i)
    if (lane_prev_[i] >= 0) ++out_begin[lane_prev_[i] + 1];
  for (int i = 0; i < n; ++i) out_begin[i + 1] += out_begin[i];
  std::vector<int32_t> out_targets(static_cast<size_t>(out_begin[n]));
  {
    std::vector<int32_t> fill(out_begin.begin(), out_begin.end() - 1);
    for (const auto& e : edges_) out_targets[fill[e.from]++] = e.to;
    for (int i = 0; i < n; ++i)
      if (lane_prev_[i] >= 0) out_targets[fill[lane_prev_[i]]++] = i;
  }
  std::vector<int32_t> order;
  const bool cyclic = !TopologicalOrder(out_begin, out_targets, &order);
  std::vector<int32_t>().swap(out_targets);
  OpGraph& g = g_;
  g.parallel = pc_;
  g.encoder = encoder_;
  g.sp_group = sp_group_;
  g.sp_ulysses = sp_ulysses_;
  g.num_devices = mesh_.num_devices();
  if (cyclic) {
    g.ops = ops_;
    std::vector<std::vector<int32_t>> preds(n);
    for (const auto& e : edges_) preds[e.to].push_back(e.from);
    for (int i = 0; i < n; ++i)
      if (lane_prev_[i] >= 0) preds[i].push_back(lane_prev_[i]);
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
    g.ops[i] = ops_[o];
    g.duration_us[i] = ops_[o].duration_us;
    g.lane_prev[i] = lane_prev_[o] >= 0 ? new_id[lane_prev_[o]] : -1;
    g.source.cost_index[i] = cost_index_[o];
  }
  g.dep_begin.assign(n + 1, 0);
  for (const auto& e : edges_) ++g.dep_begin[new_id[e.to] + 1];
  for (int i = 0; i < n; ++i) g.dep_begin[i + 1] += g.dep_begin[i];
  g.deps.resize(edges_.size());
  g.local_deps.resize(edges_.size());
  std::vector<int32_t> fill(g.dep_begin.begin(), g.dep_begin.end() - 1);
  for (const auto& e : edges_) {
    const int32_t slot = fill[new_id[e.to]]++;
    g.deps[slot] = new_id[e.from];
    g.local_deps[slot] = new_id[e.local_from];
  }
  g.source.comm = comm_;
  g.source.comm_cost = comm_cost_;
  g.source.statics = statics_;
  g.source.shape = std::move(shape_);
  return std::move(g);
}

Result<OpGraph> GraphBuilder::Build() {
  Prepare();
  for (int d = 0; d < D_; ++d)
    for (int r = 0; r < P_; ++r) EmitRank(d, r);
  LinkPipeline();
  LinkBackwardAllToAll();
  LinkUnitGathers();
  LinkGradientBarriers();
  LinkEncoders();
  return Finish();
}

}  // namespace

Result<OpGraph> BuildIterationGraph(const ParallelConfig& pc_in, const Schedule& schedule,
                                    const IterationCosts& costs, const std::vector<ChunkStatic>& statics,
                                    const CommSpec& comm, std::shared_ptr<const CommCostModel> comm_cost) {
  if (schedule.HasEncoderPasses() && pc_in.sp > 1)
    return Error("op graph: encoder passes outside the pipeline with sequence parallelism are not modelled");
  MMTWIN_RETURN_IF_ERROR(CheckInputs(GraphParallel(pc_in), schedule, costs, statics, comm));
  return GraphBuilder(pc_in, schedule, costs, statics, comm, std::move(comm_cost)).Build();
}

}  // namespace mmtwin

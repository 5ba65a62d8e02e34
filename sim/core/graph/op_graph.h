// SPDX-License-Identifier: Apache-2.0
// The iteration's op graph: a priced plan (schedule + IterationCosts + per-chunk statics + link speeds) as
// ops with durations, explicit dependencies and a per-(device, lane) order. The evaluators
// (core/eval/analytic.h, the SimGrid engine) time it; the Perfetto export draws it.
// Built by op_graph_build.cc, re-priced by op_graph_reprice.cc, one replica timed alone by replica_timing.cc;
// the pricing rules they share are in op_graph.cc.
//
// Devices: one TP group = one device, numbered by the device mesh (core/plan/mesh.h: DeviceMesh::Device). Each
// device has five lanes that run concurrently; the ops of one lane run one at a time, in the order the schedule
// gives:
//   compute  forward, recompute, backward and TP collectives (TP is serialized with compute)
//   p2p_fwd  activation sends to the next pipeline rank        p2p_bwd  gradient sends to the previous rank
//   dp       DP gradient collectives (and ZeRO-3 weight all-gathers)
//   dispatch the data-dispatch all-to-all of post-balancing (stage-0 devices only)
// Barriers (device -1, zero duration) join the DP replicas before a gradient collective, an FSDP unit
// all-gather and a backward all-to-all.
//
// Ops per DP replica d, micro-batch m, chunk c on device (d, c % pp), in the rank's schedule order:
//   forward groups:  forward (fwd_us), then tp_collective with pass forward (tp_fwd_us)    [compute lane]
//   backward groups: recompute (recompute_us), backward (bwd_us), then tp_collective with pass backward
//                    (tp_bwd_us: the TP of the backward and of the recompute, one figure in ChunkCost)
//   split backward (zero-bubble schedules list B = PassKind::kBackwardInput and W = kBackwardWeight): the B
//                    group is the backward group above with the backward op (pass kBackwardInput) taking
//                    bwd_us - bwd_weight_us; W is one backward_weight op (bwd_weight_us) at its own schedule
//                    position, after B of the same (m,c); the gradient send waits for B only, and a chunk's DP
//                    gradient barrier waits for its last W.
//   p2p_send_activation after the forward group of chunk c < chunks-1: send_bytes of (d,m,c), duration
//             latency + bytes / bandwidth (in us) of the hop's own link: nvlink_* when sender and receiver
//             share a node, else nic_* (CommSpec::gpus_per_node > 0; without it p2p_*, the layout's single
//             pipeline link) [p2p_fwd lane of the sender]; the next chunk's
//             forward depends on it. p2p_send_gradient after the backward group of chunk c > 0: send_bytes of
//             (d,m,c-1) (the gradient of that activation) [p2p_bwd lane]. The receive is not an op (the
//             receiver just depends on the send). No send when consecutive chunks share a rank (pp == 1).
//   sequence parallelism (parallel.sp > 1; the graph sees GraphParallel(parallel), dp * sp replicas): an
//             sp_collective op after the forward group's TP op (sp_fwd_us, bytes sp_bytes, peer = the next
//             replica of the SP ring, sp_ulysses replicas on) and one after the backward group's (sp_bwd_us)
//             [compute lane: the SP communication that compute does not hide is serialized with it, as TP's is].
//             The analytic evaluator times it as priced. The SimGrid engine replays its transfers on the platform:
//             the all-to-all as U - 1 pairwise-exchange steps to the device's Ulysses peers (bytes / (U - 1)
//             each, one after the other), then a delay making up the rest of the priced duration (the other
//             latencies, the exposed ring time, the two-stage redistribution) at the links' no-contention speed;
//             and the ring's KV bytes as one transfer to the ring successor that starts with the pass's first
//             compute op and that the op also waits for. Without contention that transfer never ends later than
//             the op (its priced time is at most the pass's attention compute plus its exposed part), so both
//             engines agree; with contention SP traffic shares the links with DP and pipeline traffic.
//   Presence: TP ops exist iff some cost has tp_*_us > 0, SP ops iff some cost has sp_*_us > 0; recompute ops for chunk c iff some cost of chunk c
//   has recompute_us > 0; sends of boundary c iff p2p_latency_us > 0 or some send_bytes of chunk c > 0. Such
//   ops may have zero duration for some micro-batches (this keeps the shape stable for re-pricing).
//   Dependencies: forward(m,c) <- the activation send (or the forward group) of (m,c-1); the first op of
//   the backward group of (m,c) <- its own forward group and the gradient send (or group) of (m,c+1).
// DP (dp > 1 only), per chunk c on every device holding it, B = grad_bytes_per_gpu split into buckets of
// dp_bucket_bytes (the last one smaller), d = dp, bw = dp_bytes_per_s, lat = dp_latency_us:
// Ring algorithms (d - 1 steps per reduce-scatter or all-gather pass, each step paying lat once; the SimGrid
// engine replays these rings step by step):
//   ZeRO-0    all-reduce per bucket: 2(d-1)/d * b / bw + 2(d-1) * lat
//   ZeRO-1/2  reduce-scatter + all-gather per bucket (same volume): 2 * ((d-1)/d * b / bw + (d-1) * lat)
//   ZeRO-3    reduce-scatter per bucket: (d-1)/d * b / bw + (d-1) * lat; plus one weight all-gather op (kind
//             dp_all_gather, Op::buckets = n_buckets of W) of the chunk's bf16 weights W =
//             ChunkStatic::weight_bytes_per_gpu() (its gradient bytes B plus its frozen parameters' weights, which
//             have no gradient) before its first forward and one before its first backward: n_buckets * (d-1) *
//             lat + (d-1)/d * W / bw each (also for a chunk of frozen layers without a backward: an upper bound), queued on the dp lane at the schedule position of that forward/backward,
//             with no other dependency (prefetch). This is parallel.zero3_impl simple and deepspeed (DeepSpeed's
//             per-module fetch with its prefetch bucket is counted in memory only, core/plan/memory.h).
//   ZeRO-3 with zero3_impl fsdp (PyTorch FSDP, FULL_SHARD: one FlatParameter per wrapped unit, unsharded just
//             before the unit runs and resharded after it, in every forward and every backward pass): the
//             chunk's units are its layers with parameters (ChunkStatic::layer_params; more than 128 are
//             grouped into 128 runs of consecutive layers; without layer sizes the chunk is one unit). Every
//             forward of chunk c is U ops (kind forward, Op::pieces = U, Op::bucket = unit u, duration fwd_us
//             times the unit's share of the chunk's parameters, the convention of the bucket pieces below);
//             every backward is U pieces, units last to first (piece q = unit U-1-q: its recompute piece if
//             the chunk recomputes, then its backward piece, each its share of recompute_us / bwd_us; a split
//             backward's B likewise, its W whole except the chunk's last W, in U pieces). Before each unit's
//             compute, a dp_all_gather of the unit's weight bytes (pass forward or backward, micro_batch m,
//             bucket u, Op::buckets = 1: one collective per FlatParameter) taking (d-1) * lat + (d-1)/d * b_u
//             / bw [dp lane, in the order the units run]; the unit's first compute op waits for it. Prefetch:
//             the gather of the next unit is issued before the current unit computes (FSDP's
//             BackwardPrefetch.BACKWARD_PRE; in the forward the CPU runs ahead and issues it as soon as the
//             rate limiter allows), and limit_all_gathers=True (FSDP's default) keeps at most two unsharded
//             units: the gather of the device's j-th unit computation waits for the end of its (j-2)-th
//             (across passes). An all-gather is a collective: one barrier per (stage, micro-batch, chunk, pass,
//             unit) waits for every replica's lane predecessor and (j-2)-th unit computation, and the replicas'
//             gathers start after it (the replica-alone timing: after its own). Gradients: in the chunk's last whole backward, one reduce-scatter of the unit's
//             gradient bytes (its trained parameters'; none for a frozen unit) after each unit (dp_collective, bucket = q, Op::buckets = 1, (d-1)/d * b_u / bw +
//             (d-1) * lat) [dp lane, after the next unit's gather], behind a barrier over the replicas as the
//             buckets below; dp_bucket_bytes does not apply. With a split backward the chunk's last W releases
//             them. For a uniform chain of U units with per-unit compute c and gather time a, a forward on an
//             otherwise idle device takes a + c + (U-1) max(a, c): only the first gather is exposed when a <= c.
//   Buckets become ready during the chunk's last backward, as PyTorch DDP and Megatron-LM's overlapped grad
//   reduce launch them: bucket j holds the gradient bytes [j B, (j+1) B) counted from the chunk's last layer
//   (the backward's order) and is complete when the backward has finished the layer holding its last byte. That
//   last backward (its W for split schedules) is built as P = min(n_buckets, 16) equal pieces (Op::pieces,
//   bucket = piece index; a layer's share of the time taken as its share of the chunk's parameters,
//   ChunkStatic::layer_params), and bucket j waits for the first piece that ends at or after its ready
//   fraction f_j (BucketReadyPiece). One barrier per (chunk, piece) waits for that piece on EVERY replica (deps
//   in replica order). The buckets one piece releases are one dp_collective op per device (bucket = the first,
//   Op::buckets = how many, bytes and duration their sums: on the serial dp lane, behind the same barrier,
//   consecutive buckets take exactly the sum of their times), which depends on that barrier. A piece that
//   completes no bucket still has its op, with Op::buckets = 0, zero bytes and zero duration (it changes no
//   time: the pieces end in order), so that every partition with as many pieces per chunk gives the same graph
//   shape (RepriceIterationGraph with statics); run records leave such ops out and the SimGrid engine replays
//   them as instants. With one bucket the chunk's gradients are ready at the end of its last backward.
//   With ParallelConfig::overlap_grad_reduce false every such barrier waits for the replica device's LAST
//   compute op of the iteration instead (Megatron-LM's default, DeepSpeed's pipeline engine): the collectives
//   run after the backward; ZeRO-0..2 only (checked by the scenario).
//   The optimizer step is not modelled.
// Dispatch (IterationCosts::dispatch, from the post-balance / orchestrator data policies): for every
// micro-batch m with transfers, one dispatch op per DP replica d on its stage-0 device (d * pp) [dispatch
// lane, in micro-batch order, no other dependency: later micro-batches' dispatch overlaps earlier compute];
// forward (m, chunk 0) of replica d depends on it. The op's transfers are the all-to-all of micro-batch m
// (OpGraph::DispatchTransfers(m), DP ranks mapped to stage-0 device indices; op.bytes = what replica d
// sends). No-contention duration, the same for every replica's op of m: the dispatcher's own work
// (IterationCosts::dispatch_overhead[m], core/plan/dispatch.h: the all-gather of the sample lengths priced by
// the comm model as one all-gather call over the DP group, CommKind::kWeightAllGather with one bucket, plus the
// host time), then the all-to-all, whose devices share their links (incast and NIC sharing: AllToAllChains):
//   dispatch_us(m) = overhead(m) + max over devices v and links k (NVLink, NIC share) of
//                    max(sum of lat(t) + bytes(t) / bw(t) * 1e6 over v's sends on k, the same over its receives),
// with bw, lat = nvlink_* when src and dst are on the same node (CommSpec::gpus_per_node), else nic_* (each
// transfer's time is the comm model's CommKind::kDispatch price). One device sending b bytes to k peers on
// other nodes takes k (lat + b / nic), not lat + b / nic.
// Backward all-to-all (IterationCosts::dispatch_backward: the orchestrator's encoder-output gradients going back
// to the encoder ranks): for every micro-batch m with transfers, one dispatch op with pass backward per replica
// on its stage-0 device [dispatch lane, at the schedule position of chunk 0's backward of m]; it waits for the
// gradient reaching chunk 0 on EVERY replica (a barrier of micro-batch m over the gradient send of chunk 1,
// or for pp 1 the forward of m, of each replica: an all-to-all is collective) and chunk 0's backward of m
// waits for it (on one serial device the makespan is the same as running it between the LLM's
// and the encoder's backward inside the chunk). Duration as above, from dispatch slot M + m.
// The SimGrid engine replays the overhead as a delay, then the transfers as chains, one transfer after the
// other per device and link: the senders' chains, or the receivers' when a receive chain is the longest
// (AllToAllTime::receive_bound); every replica's op ends when the whole all-to-all has, so without contention
// both engines give exactly this duration, and with it the flows that meet on a link (the receivers' down
// links of sender chains, the senders' up links of receiver chains) share it. Presence: ops of micro-batch m exist iff m had
// transfers when the graph was built (re-pricing keeps them, possibly with zero duration).
//
// Encoders outside the pipeline (Schedule::encoder, policies.encoder bubbles; core/plan/encoder.h): the chunks
// hold the LLM alone, and micro-batch m's encoder passes (IterationCosts::encoder) run whole on the rank the
// schedule names, each just before the rank's schedule op `before` [compute lane, in the schedule's order]:
//   encoder_forward  fwd_us + tp_fwd_us; then, when that rank is not the first chunk's, a p2p_send_activation of
//                    its output (chunk -1, send_bytes, priced as the pipeline's sends) to the first chunk's
//                    device [p2p_fwd lane]; the first chunk's forward of (d, m) waits for it.
//   encoder_backward (recompute_us in a recompute op before it, chunk -1, when some encoder pass recomputes)
//                    bwd_us + tp_bwd_us, after its forward and the gradient of its output: the first chunk's
//                    backward (or B) of (d, m), then a p2p_send_gradient (chunk -1) from that device [its p2p_bwd
//                    lane, right after that backward] when the encoder runs elsewhere.
//   encoder_grad_sync every device holds an encoder replica (DP over all dp x pp devices): after every device's
//                    last encoder backward (a barrier; a device that ran none: its last compute op), one op per
//                    device [dp lane, after its other gradient collectives] of ChunkStatic::grad_bytes_per_gpu of
//                    the encoders' static (statics[chunks], the last), in dp_bucket_bytes buckets, each the
//                    ZeRO stage's collective (all-reduce; reduce-scatter + all-gather for ZeRO-1/2) over the
//                    dp x pp devices as the comm model prices it (in a node iff they all share one). None when the
//                    encoders have no gradients or no backward. The SimGrid engine replays it as a delay of its
//                    priced time (it shares no link there).
// Re-pricing such a graph rebuilds it; RepriceDurations and ReplicaAloneTimeUs decline it. Not with SP, ZeRO-3
// or a data dispatch (errors).
//
// Ops are stored in a topological order (checked with Boost.Graph over dependencies + lane order): every
// dependency and lane predecessor of op i has an index < i, so an evaluator sweeps i = 0 .. n-1.
//
//   MMTWIN_ASSIGN_OR_RETURN(Schedule s, BuildSchedule("1f1b", pc.pp, pc.vpp, pc.micro_batches));
//   MMTWIN_ASSIGN_OR_RETURN(OpGraph g, BuildIterationGraph(pc, s, costs, statics, comm));
//   for (int i = 0; i < g.num_ops(); ++i) for (int32_t d : g.Deps(i)) ...
//   // next iteration: MMTWIN_RETURN_IF_ERROR(RepriceIterationGraph(&g, s, next_costs));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/plan/comm_cost.h"
#include "core/plan/plan.h"
#include "core/util/status.h"

namespace mmtwin {

enum class OpKind : uint8_t {
  kForward,
  kRecompute,
  kBackward,
  kTpCollective,
  kP2pSendActivation,
  kP2pSendGradient,
  kDpCollective,  // gradient all-reduce / reduce-scatter (+ all-gather) of consecutive buckets (Op::buckets)
  kDpAllGather,   // ZeRO-3 weight all-gather of one chunk
  kBarrier,       // zero-duration join of the DP replicas (device -1)
  kDispatch,      // data-dispatch all-to-all of one micro-batch (post-balancing), on a stage-0 device
  kBackwardWeight,  // weight-gradient part of a split backward (zero-bubble schedules: PassKind::kBackwardWeight)
  // Measured by the backend only (never in an op graph): the time a rank waited in a pipeline receive (lane
  // p2p_fwd for an activation, p2p_bwd for a gradient), the time it waited for its DP gradient collectives
  // after the last backward (lane dp), and its optimizer step (lane compute).
  kP2pRecv,
  kDpWait,
  kOptimizer,
  // Sequence-parallel communication of one chunk pass not hidden behind compute (ChunkCost::sp_fwd_us /
  // sp_bwd_us: Ulysses all-to-alls, ring KV steps whose transfer outlasts their compute), compute lane.
  kSpCollective,
  // The encoders outside the pipeline (Schedule::encoder, policies.encoder bubbles): a micro-batch's encoder
  // forward and backward, whole on one pipeline rank (compute lane), and the encoder replicas' gradient
  // synchronization over every device (dp lane).
  kEncoderForward,
  kEncoderBackward,
  kEncoderGradSync,
};
inline constexpr OpKind kLastOpKind = OpKind::kEncoderGradSync;
enum class Lane : uint8_t { kCompute = 0, kP2pForward = 1, kP2pBackward = 2, kDp = 3, kDispatch = 4 };
inline constexpr int kNumLanes = 5;

// "forward", "recompute", "backward", "tp_collective", "p2p_send_activation", "p2p_send_gradient",
// "dp_collective", "dp_all_gather", "barrier", "dispatch", "backward_weight", "p2p_recv", "dp_wait", "optimizer",
// "sp_collective", "encoder_forward", "encoder_backward", "encoder_grad_sync".
const char* OpKindName(OpKind k);
// The kind an OpKindName names; false for any other text (ops.csv and imported timelines read kinds with it).
bool ParseOpKind(const std::string& name, OpKind& out);
// "compute", "p2p_fwd", "p2p_bwd", "dp", "dispatch".
const char* LaneName(Lane l);
// A measured wait (p2p_recv, dp_wait): the compute thread blocked, overlapping the transfer it waits for.
inline bool IsWaitKind(OpKind k) { return k == OpKind::kP2pRecv || k == OpKind::kDpWait; }

struct Op {
  OpKind kind = OpKind::kForward;
  Lane lane = Lane::kCompute;
  PassKind pass = PassKind::kForward;  // tp_collective: which pass it belongs to; dp_all_gather: before which
  int32_t device = 0;                  // op-graph device (DeviceMesh::Device: one TP group); -1 for barriers
  int32_t micro_batch = -1;            // -1 for DP ops and barriers (FSDP unit all-gathers: their pass's)
  int32_t chunk = 0;
  // dp_collective: bucket index within the chunk; split passes: the piece; FSDP dp_all_gather: the unit
  int32_t bucket = 0;
  double duration_us = 0;
  int64_t bytes = 0;  // p2p: bytes sent; dp: bytes of the bucket (all-gather: of the chunk); dispatch: sent
  // The op's peer, named by the builder so that no evaluator re-derives it from chunk arithmetic: p2p sends,
  // the receiving device; dp_collective / dp_all_gather, the device's successor in its DP ring (the ring is
  // the device's DP group, DeviceMesh::DpNeighbor); -1 otherwise (compute, barriers, dispatch: an all-to-all
  // whose transfers are OpGraph::DispatchTransfers).
  int32_t peer = -1;
  // backward / backward_weight: this op is part `bucket` of `pieces` equal parts of its pass (the chunk's last
  // backward on a DP replica, split so that its gradient buckets become ready as the backward reaches them);
  // with FSDP units (above) forward / recompute / backward / backward_weight: piece `bucket` of `pieces`, its
  // unit's share of the pass.
  uint8_t pieces = 1;
  // dp_collective: the op stands for `buckets` consecutive gradient buckets (bucket .. bucket + buckets - 1),
  // the ones one piece of the chunk's last backward completes (0: none); bytes and duration are their sums.
  // dp_all_gather: the buckets it gathers in (each one ring all-gather; the SimGrid engine replays as many).
  int32_t buckets = 1;
  // sp_collective only (ChunkCost::sp_*): `bytes` are its Ulysses all-to-all bytes, sent in `a2a_steps`
  // pairwise-exchange latencies over the device's Ulysses group; ring_bytes go to `peer` (the ring successor)
  // while the pass computes.
  int32_t a2a_steps = 0;
  int64_t ring_bytes = 0;
};

// One transfer of a dispatch all-to-all, between op-graph devices (stage-0 devices of two DP replicas).
struct DeviceTransfer {
  int32_t src_device = 0;
  int32_t dst_device = 0;
  int64_t bytes = 0;
};

struct OpGraph {
  ParallelConfig parallel;  // GraphParallel of the plan's: dp counts dp * sp replicas, sp = 1
  bool encoder = false;     // it has encoder passes outside the pipeline (Schedule::encoder)
  int sp_group = 1;         // the plan's parallel.sp: consecutive replicas d * sp_group .. form an SP group
  int sp_ulysses = 1;       // its Ulysses (inner) degree: SP ranks k U .. k U + U - 1 exchange all-to-alls
  int num_devices = 0;      // dp * pp
  std::vector<Op> ops;      // topological order
  // CSR of explicit dependencies: deps of op i are deps[dep_begin[i] .. dep_begin[i+1]), all < i.
  std::vector<int32_t> dep_begin;
  std::vector<int32_t> deps;
  // Same layout, with every barrier dependency replaced by the one op of the op's own DP replica that the
  // barrier waits for: timing with these gives each replica "alone" (used for the idle attribution).
  std::vector<int32_t> local_deps;
  std::vector<int32_t> lane_prev;   // previous op on the same (device, lane), -1 if first or a barrier
  std::vector<double> duration_us;  // = ops[i].duration_us, contiguous for the evaluator
  // Dispatch side table (empty when no micro-batch has transfers), 2M slots: slot m = micro-batch m's
  // dispatch, slot M + m = its backward all-to-all; a slot's transfers are
  // dispatch_transfers[dispatch_begin[slot] .. dispatch_begin[slot+1]), sorted by (src, dst); dispatch_us[slot]
  // its no-contention duration (see above), of which dispatch_overhead_us[slot] is the dispatcher's own work
  // before the all-to-all (length all-gather and host time; forward slots only).
  std::vector<int32_t> dispatch_begin;
  std::vector<DeviceTransfer> dispatch_transfers;
  std::vector<double> dispatch_us;
  std::vector<double> dispatch_overhead_us;

  int num_ops() const { return static_cast<int>(ops.size()); }
  std::span<const int32_t> Deps(int i) const {
    return {deps.data() + dep_begin[i], static_cast<size_t>(dep_begin[i + 1] - dep_begin[i])};
  }
  // "backward mb 3 chunk 5 on device 9 (dp 1, stage 1)" etc.
  std::string Describe(int i) const;
  // The dispatch side table's slot of a dispatch op: its micro-batch m for the forward dispatch, M + m for the
  // backward all-to-all.
  int DispatchSlot(const Op& op) const {
    return op.pass == PassKind::kForward ? op.micro_batch : parallel.micro_batches + op.micro_batch;
  }
  // The transfers of a dispatch slot (micro-batch m's dispatch: slot m; its backward all-to-all: slot M + m;
  // empty if none).
  std::span<const DeviceTransfer> DispatchTransfers(int slot) const {
    if (slot < 0 || slot + 1 >= static_cast<int>(dispatch_begin.size())) return {};
    return {dispatch_transfers.data() + dispatch_begin[slot],
            static_cast<size_t>(dispatch_begin[slot + 1] - dispatch_begin[slot])};
  }

  // For RepriceIterationGraph: what the graph was built from. Not for general use.
  struct Source {
    CommSpec comm;
    std::shared_ptr<const CommCostModel> comm_cost;  // prices every transfer and collective (never null)
    std::vector<ChunkStatic> statics;
    std::vector<int32_t> cost_index;  // per op: index into IterationCosts::costs (-1: none)
    std::vector<uint8_t> shape;       // op presence flags the graph was built with
    // Per op, how RepriceMode::kDurationsOnly prices it (which ChunkCost field, the divisor of a split backward,
    // the P2P link class); derived from ops on first use, empty until then (a rebuilt graph starts empty).
    struct Recipe {
      uint8_t code = 0;
      uint8_t pieces = 1;
    };
    std::vector<Recipe> recipe;
    std::vector<int32_t> dp_ops;  // with the recipe: the indices of the dp_collective and dp_all_gather ops
    // kDurationsOnly's copy of the timing fields of the costs (per cost index), one cache line each.
    std::vector<ChunkTimes> times;
    int32_t recipe_general = 0;  // with the recipe: ops it prices in full (dispatch, SP, FSDP pieces)
    // For ReplicaAloneTimeUs, made on first use: the ops of DP replica d (device >= 0) in graph order are
    // replica_ops[replica_begin[d] .. replica_begin[d+1]); replica_closed: each replica's ops depend (local_deps,
    // lane order) on its own ops only.
    std::vector<int32_t> replica_begin, replica_ops;
    bool replica_closed = false;
    std::vector<int32_t> last_compute_op;  // per device, its last compute-lane op (-1: none)
  } source;
};

// Builds and checks the graph (pc may have sp > 1: the graph is built for GraphParallel(pc), and costs must have
// dp * sp replicas, as Pricer::PriceIteration gives them). Errors: schedule or costs not matching pc (sizes, invalid schedule), negative
// or non-finite durations, bytes > 0 over a link of speed <= 0, dp_bucket_bytes <= 0, dispatch transfers with
// ranks outside [0, dp) or negative bytes, more dispatch lists than micro-batches, a dependency cycle (names
// the ops on it).
// `comm_cost` prices every P2P send, dispatch transfer and DP collective (core/plan/comm_cost.h); nullptr = the
// analytic link model of `comm` (AnalyticCommCost), which gives the durations written above.
Result<OpGraph> BuildIterationGraph(const ParallelConfig& pc, const Schedule& schedule,
                                    const IterationCosts& costs, const std::vector<ChunkStatic>& statics,
                                    const CommSpec& comm,
                                    std::shared_ptr<const CommCostModel> comm_cost = nullptr);

// Index of the piece (of `pieces` equal parts of the chunk's last backward) after which DP gradient bucket
// `bucket` of a chunk with `s.grad_bytes_per_gpu` bytes in buckets of `bucket_bytes` is complete (see above).
int BucketReadyPiece(const ChunkStatic& s, int64_t bucket_bytes, int64_t bucket, int pieces);

// Re-prices the graph for another iteration's costs (same dp, M, chunks) and, when `statics` is given, for other
// chunk statics (another partition of the same layers: each chunk's parameters and gradient bytes): O(ops), in
// place when the op presence (see above) is unchanged and every chunk's gradient buckets form groups released
// by the same pieces of its last backward (then only the DP ops' bytes and durations change); otherwise it
// rebuilds the graph with `schedule` (always for new statics under zero3_impl fsdp: its units follow the
// partition's layers). Either way the result equals BuildIterationGraph with these costs and
// statics up to ops of zero duration (tested), so BMP's candidates re-price one graph instead of rebuilding.
//
// RepriceMode::kDurationsOnly (for callers that only time the graph analytically, AnalyticIterationTimeUs: the
// bmp candidates) updates duration_us and the DP ops but leaves the other ops' Op::duration_us and bytes as they
// were (stale: a later kFull re-pricing or rebuild restores them). duration_us is the same bit for bit as with
// kFull (tested); it reads a per-op pricing recipe (OpGraph::Source::recipe, derived from the ops once) instead
// of the 64-byte ops, about 4x less memory per re-pricing.
enum class RepriceMode { kFull, kDurationsOnly };
Status RepriceIterationGraph(OpGraph* graph, const Schedule& schedule, const IterationCosts& costs,
                             const std::vector<ChunkStatic>* statics = nullptr,
                             RepriceMode mode = RepriceMode::kFull);

// bmp's fastest path: RepriceMode::kDurationsOnly from the timing fields alone (`times` indexed as
// IterationCosts::costs; IterationTimingCache::PackedTimes) of an iteration without dispatch transfers. Returns
// true when done, with the same duration_us bit for bit as RepriceIterationGraph(graph, schedule, costs, statics,
// kDurationsOnly) for costs carrying these fields (tested); returns false, the graph untouched, where this path
// does not apply: other sizes, dispatch or SP ops, FSDP, a category of ops (TP, recompute, sends) the graph lacks,
// times that are not finite and >= 0, sends without a P2P speed, new statics that do not fit in place. The caller
// then re-prices with the full costs (which rebuilds the graph or names the error).
bool RepriceDurations(OpGraph* graph, const std::vector<ChunkTimes>& times,
                      const std::vector<ChunkStatic>* statics = nullptr);

// bmp's candidate bound: the analytic time of DP replica `replica` alone (AttributeDevices' replica_time_us: its
// ops timed with local_deps, every barrier dependency replaced by the replica's own op) in the graph that
// RepriceDurations(graph, times of every replica, &statics) would give, computed from that replica's times
// alone (`times`: its M * C entries, micro-batch m and chunk c at m * C + c; IterationTimingCache::
// PackedReplicaTimes) without re-pricing or changing the graph's ops (the pricing recipe and the per-replica op
// lists of OpGraph::Source are made on first use). Equal bit for bit to replica_time_us[replica] of
// EvaluateAnalytic on that re-priced graph (tested), hence never above its AnalyticIterationTimeUs: the full
// graph waits at each barrier for every replica, so each op finishes no earlier there. `finish_us` is scratch
// (resized to num_ops; only the replica's entries are written). nullopt where RepriceDurations would decline
// for these times (see there) or the replica's ops depend on other replicas' (dispatch, SP): no bound.
std::optional<double> ReplicaAloneTimeUs(OpGraph* graph, int replica, std::span<const ChunkTimes> times,
                                         const std::vector<ChunkStatic>& statics,
                                         std::vector<double>* finish_us);

// Per DP replica, when its pipeline's compute ends in a sweep of this graph (`finish_us`, e.g.
// AnalyticIterationTimeUs's): the latest finish of its devices' last compute-lane ops (all 0 when finish_us
// does not match the graph). bmp bounds candidates with the replicas that end last.
void ReplicaComputeEndUs(OpGraph* graph, const std::vector<double>& finish_us, std::vector<double>* out);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The plan: the shared core of the simulator and the backend. For every iteration, which samples each DP rank's
// micro-batches hold (from the data policies), the layer -> chunk partition and chunk -> pipeline-rank mapping,
// which layers recompute, and the pipeline schedule's op order per rank. Policies only produce plans; evaluators
// price and time them.
//
// Layout of devices: the device mesh (core/plan/mesh.h, Megatron order, TP fastest) maps ranks, op-graph
// devices, groups and nodes. A TP group acts in lockstep, so the evaluators treat one TP group as one
// "device" and fold TP into layer costs (divided by TP) and TP collectives.
//
// Pipeline chunks: the model's flattened layer list (Layers(model)) is cut into pp * vpp contiguous chunks;
// chunk c runs on pipeline rank c % pp as its virtual stage c / pp (Megatron's interleaved assignment; vpp = 1
// gives one chunk per rank).
//
// The plan is self-describing (schema version, trace identity, epoch index of every iteration, DP bucket
// size), so that rank 0 can write it (core/records/plan_codec.h) and every other rank, the backend or a later
// simulation read it back instead of re-planning (bmp compares floating-point timings: re-planning on each
// rank is fragile).
//
//   MMTWIN_ASSIGN_OR_RETURN(PlannedRun run, BuildPlan(scenario, {}));   // driver/planner.h
//   for (const PipeOp& op : run.plan.schedule.per_rank[0]) ...   // what pipeline rank 0 computes, in order
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/plan/dispatch.h"
#include "core/util/numeric.h"
#include "core/util/status.h"

namespace mmtwin {

struct ParallelConfig {
  int dp = 1;             // data-parallel replicas
  int tp = 1;             // tensor-parallel degree (inside a node)
  int pp = 1;             // pipeline ranks
  int vpp = 1;            // virtual stages (model chunks) per pipeline rank; > 1 only for interleaved-1f1b
  int micro_batches = 1;  // M: micro-batches per DP rank per iteration
  int zero_stage = 0;  // 0: none, 1: optimizer states, 2: + gradients, 3: + weights (FSDP), sharded over DP
  // ZeRO-3's implementation, for its transient unsharded buffers (core/plan/memory.h): "simple" (none counted),
  // "fsdp" (PyTorch FSDP, one flat parameter per layer) or "deepspeed" (DeepSpeed ZeRO-3 buckets).
  std::string zero3_impl = "simple";
  // Hybrid sharding (PyTorch HSDP / FSDP HYBRID_SHARD, DeepSpeed MiCS): ZeRO-3 shards model states within
  // groups of this many consecutive DP ranks (of the dp x sp ZeRO group) and replicates them across the groups;
  // weights are all-gathered and gradients reduce-scattered inside a group, then the gradient shards all-reduced
  // across the groups. 0 (or dp x sp): one group, plain ZeRO-3.
  int zero3_shard_group = 0;
  // Which model-state buffers the framework keeps (core/plan/memory.h OptimizerBytesFor): "simple" (bf16 weights
  // and grads, fp32 master and Adam moments), "megatron" (Megatron-LM bf16: fp32 main_grad instead of bf16
  // grads), "deepspeed" (DeepSpeed BF16_Optimizer / ZeRO: bf16 grads and fp32 grads), "fsdp" (PyTorch FSDP
  // mixed precision: fp32 sharded params and grads) or "auto" (fsdp / deepspeed for ZeRO-3 with that
  // zero3_impl, else megatron).
  std::string optimizer_memory = "auto";
  // Megatron sequence parallelism inside the TP group: activations outside attention/MLP also divided by TP.
  // (Sequence / context parallelism across GPUs is the device mesh's sp dimension, core/plan/mesh.h.)
  bool tp_sequence_parallel = true;
  // TP communication overlapped with the GEMMs next to it (Megatron-LM --tp-comm-overlap: Transformer Engine's
  // userbuffers, ring-exchange all-gathers before the QKV / FC1 GEMMs, pipelined reduce-scatters after the
  // projection / FC2 GEMMs in 4 splits; TransformerEngine transformer_engine/pytorch/module/base.py
  // initialize_ub). Needs tp_sequence_parallel. Pricing: core/plan/pricing.h TpExposedUs.
  bool tp_comm_overlap = false;
  // Gradient reduction overlapped with the backward (true: each bucket is reduced as soon as the backward has
  // produced it, as PyTorch DDP, FSDP, DeepSpeed ZeRO-3 and Megatron-LM with --overlap-grad-reduce do) or after
  // it (false: the device's DP collectives start once its last backward of the iteration has ended, as
  // Megatron-LM without --overlap-grad-reduce, its default, and Megatron-DeepSpeed / DeepSpeed ZeRO-1/2 without
  // overlap_comm). ZeRO-0..2 only.
  bool overlap_grad_reduce = true;
  // The dtype DP gradients are reduced in: "param" (the weights' 16-bit dtype, 2 bytes per weight) or "fp32"
  // (4 bytes: PyTorch FSDP2 with torchtitan's default mixed_precision_reduce float32, Megatron-LM with bf16,
  // which sets accumulate_allreduce_grads_in_fp32). Only the reducing collectives carry it: the all-reduce,
  // the reduce-scatter (and hybrid sharding's all-reduce of its shard); ZeRO-1/2's all-gather of the updated
  // weights and ZeRO-3's weight all-gathers stay 16-bit (CommSpec::grad_reduce_bytes_scale).
  std::string grad_reduce_dtype = "param";
  // Sequence / context parallelism across GPUs (core/plan/seqpar.h): sp ranks share one sequence; the device
  // mesh's sp dimension (core/plan/mesh.h). sp = sp_ulysses x sp_ring for 2D attention (0 = chosen by the
  // policy); sp_method is the resolved policy (policies.sp; none when sp == 1 and no policy is named).
  int sp = 1;
  int sp_ulysses = 0;
  int sp_ring = 0;
  std::string sp_method = "none";
  bool sp_one_stage = false;  // policies.sp params sharding: one-stage (core/plan/seqpar.h)
  // policies.sp params (the policy's typed parameters, core/plan/seqpar.h SpPolicyRegistry), as written.
  std::map<std::string, std::string> sp_params;

  int chunks() const { return pp * vpp; }
  int world_size() const { return dp * tp * pp * sp; }
  bool operator==(const ParallelConfig&) const = default;
};

// The op graph's view of a plan with sequence parallelism: the SP ranks of a replica run its micro-batches in
// lockstep (every attention layer waits for the group's slowest rank), so the graph, the evaluators and the memory
// walk treat the dp x sp ranks of a pipeline stage as dp * sp replicas, each with its SP rank's costs; their
// gradients (or ZeRO / FSDP shards) are synchronized over all dp * sp ranks, as Megatron-LM (DP x CP) and
// LongVILA's FSDP do. Devices keep the mesh's numbering: replica dp * SP + sp, device replica * pp + pp. Identity
// when sp == 1.
inline ParallelConfig GraphParallel(ParallelConfig p) {
  if (p.sp > 1) {
    p.dp *= p.sp;
    p.sp = 1;
  }
  return p;
}

// Chunk c holds layers [bounds[c], bounds[c + 1]) of Layers(model); bounds.back() = layer count, strictly
// increasing (every chunk holds at least one layer). bounds[0] = 0, or the encoder layers' count E when the
// encoders run outside the pipeline (policies.encoder bubbles, core/plan/encoder.h): layers [0, E) are then
// the encoder passes of Schedule::encoder, not any chunk's.
struct Partition {
  std::vector<int> bounds;
  int chunks() const { return static_cast<int>(bounds.size()) - 1; }
  int LayersIn(int chunk) const { return bounds[chunk + 1] - bounds[chunk]; }
  // Layers [0, EncoderLayers()) run outside the pipeline (0: none).
  int EncoderLayers() const { return bounds.empty() ? 0 : bounds.front(); }
  bool operator==(const Partition&) const = default;
};
// `first`: the layer the pipeline starts at (bounds[0]; 0 unless the encoders run outside it).
Status ValidatePartition(const Partition& p, int layers, int chunks, int first = 0);
inline int PipeRankOfChunk(int chunk, int pp) { return chunk % pp; }

// Per layer: 0 = activations kept; 1 = recomputed, only the layer input kept; 2 = recomputed inside a
// checkpointed group whose input is kept elsewhere (nothing kept; Megatron uniform:N). See core/plan/recompute.h.
struct RecomputePlan {
  std::vector<uint8_t> layers;
  int Count() const;
  bool operator==(const RecomputePlan&) const = default;
};

// The recompute transient, one checkpointed unit at a time (Megatron-LM and torch.utils.checkpoint recompute
// each unit just before its own backward): walking a chunk's layers in order, a kept layer (0) ends the
// current unit, a recomputed layer with a kept input (1) starts one holding act_bytes - act_bytes_recompute,
// an in-group layer (2) adds its act_bytes. Returns the unit's rematerialized bytes after `flag`'s layer; the
// chunk's transient is the maximum over its layers.
inline int64_t ExtendRecomputeUnit(int64_t unit_bytes, uint8_t flag, int64_t act_bytes,
                                   int64_t act_bytes_recompute) {
  if (flag == 0) return 0;
  if (flag == 1) return act_bytes > act_bytes_recompute ? act_bytes - act_bytes_recompute : 0;
  return AddBytes(unit_bytes, act_bytes > 0 ? act_bytes : 0);
}

// The backward transient of a chunk: how far above its stored activations the memory gets while its backward
// runs. The backward walks the layers last to first; the autograd engine frees a layer's saved activations as
// soon as its backward is done, and a checkpointed unit is rematerialized just before its own backward. During
// the backward of layer l the live activations are the stored bytes of layers first..l, the rematerialized
// bytes of l's unit up to l (ExtendRecomputeUnit), and l's backward working memory (LayerCost::bwd_work_bytes):
//   transient = max over l of (stored(first..l) + unit(l) + work(l)) - stored(first..last)   (>= 0)
// Feed the chunk's layers in forward order (flag as in RecomputePlan::layers), then read Bytes(). Without
// recomputation and working memory it is 0; with recomputation only, at most the largest unit's bytes (the
// layers stored after a unit are freed by the time it is rematerialized).
class BackwardTransient {
 public:
  void Add(uint8_t flag, int64_t act_bytes, int64_t act_bytes_recompute, int64_t bwd_work_bytes) {
    stored_ = AddBytes(stored_, flag == 0 ? act_bytes : flag == 1 ? act_bytes_recompute : 0);
    unit_ = ExtendRecomputeUnit(unit_, flag, act_bytes, act_bytes_recompute);
    peak_ = std::max(peak_, AddBytes(AddBytes(stored_, unit_), bwd_work_bytes > 0 ? bwd_work_bytes : 0));
  }
  int64_t Bytes() const { return peak_ > stored_ ? peak_ - stored_ : 0; }

 private:
  int64_t stored_ = 0, unit_ = 0, peak_ = 0;
};

// kBackward is a chunk's whole backward (input and weight gradients). Zero-bubble schedules (ZB-H1/H2, Qi et al.
// 2023) split it: kBackwardInput (B, the input gradient the previous chunk waits for) and kBackwardWeight (W,
// the weight gradient, which can fill bubbles later); a schedule lists either kBackward or both B and W of a
// (micro-batch, chunk), W after B on the same rank. Activations are held until the pass that ends the backward.
enum class PassKind : uint8_t { kForward, kBackward, kBackwardInput, kBackwardWeight };
// The pass that consumes the next chunk's gradient and sends one to the previous chunk (B, or the whole backward).
inline bool StartsBackward(PassKind k) { return k == PassKind::kBackward || k == PassKind::kBackwardInput; }
// The pass after which the chunk's weight gradient of the micro-batch is complete (W, or the whole backward).
inline bool EndsBackward(PassKind k) { return k == PassKind::kBackward || k == PassKind::kBackwardWeight; }

// One compute step of a pipeline rank: the forward or backward of one micro-batch through one chunk.
struct PipeOp {
  PassKind kind = PassKind::kForward;
  int32_t micro_batch = 0;
  int32_t chunk = 0;
  bool operator==(const PipeOp& o) const {
    return kind == o.kind && micro_batch == o.micro_batch && chunk == o.chunk;
  }
};

// One pass of a micro-batch's encoders run outside the pipeline (policies.encoder bubbles, core/plan/encoder.h):
// the forward (kForward) or backward (kBackward) of micro-batch m through the layers [0, Partition::
// EncoderLayers()), whole, on the pipeline rank that lists it, just before that rank's schedule op at index
// `before` (= the rank's op count: after its last op).
struct EncoderPass {
  PassKind kind = PassKind::kForward;
  int32_t micro_batch = 0;
  int32_t before = 0;
  bool operator==(const EncoderPass&) const = default;
};

// The order in which every pipeline rank runs its forwards and backwards (the same for every DP replica).
struct Schedule {
  std::string name;
  int pp = 1, vpp = 1, micro_batches = 1;
  std::vector<std::vector<PipeOp>> per_rank;  // size pp
  // The encoder passes outside the pipeline, per rank in the order it runs them (size pp, `before`
  // non-decreasing); empty: none (the encoders, if any, are layers of the pipeline's chunks). Every micro-batch
  // has one forward, and either every micro-batch one backward after it on the same rank or none has any (a
  // frozen encoder with nothing trained before it has no backward).
  std::vector<std::vector<EncoderPass>> encoder;
  bool HasEncoderPasses() const { return !encoder.empty(); }
  bool operator==(const Schedule&) const = default;
};

// One iteration's data: micro_batches[dp_idx][m] = trace sample indices of micro-batch m on DP rank dp_idx.
// dispatch[m] = the data-dispatch transfers (DP ranks) of micro-batch m (core/plan/dispatch.h); empty or
// shorter than M = none.
struct IterationData {
  int64_t epoch_index = 0;  // which iteration of the epoch this is (0-based; data steps epoch_index * M ..)
  std::vector<std::vector<std::vector<uint32_t>>> micro_batches;
  std::vector<std::vector<DispatchTransfer>> dispatch;
  // The backward all-to-all of micro-batch m: the gradients of the encoder outputs the forward dispatch moved
  // to other ranks, going back (orchestrator; empty or shorter than M = none).
  std::vector<std::vector<DispatchTransfer>> dispatch_backward;
  // The dispatcher's own work before micro-batch m's forward all-to-all (length all-gather, host time;
  // core/plan/dispatch.h); empty or shorter than M = none.
  std::vector<DispatchOverhead> dispatch_overhead;
  bool operator==(const IterationData&) const = default;
};

// Where the plan's samples come from: the same identity (and digest) on two machines means the same trace.
struct TraceIdentity {
  std::string file;     // the trace CSV as the scenario names it ("" for a generator preset)
  std::string preset;   // the generator preset ("" for a file)
  int64_t samples = 0;  // samples in the trace
  uint64_t seed = 0;    // generator seed (0 for a file)
  uint64_t digest = 0;  // TraceDigest() of the samples (FNV-1a 64 over every sample's fields)
  bool operator==(const TraceIdentity&) const = default;
};

inline constexpr int kPlanSchemaVersion = 1;

struct Plan {
  int schema_version = kPlanSchemaVersion;
  std::string scenario;  // scenario name
  std::string model;     // model zoo name (or model file) the plan was made for
  std::string cluster;   // cluster preset (or file) and its node count
  int nodes = 0;
  TraceIdentity trace;
  uint64_t seed = 0;                     // the policies' seed
  int64_t iterations_in_epoch = 0;       // iterations one epoch of the trace gives
  int64_t dp_bucket_bytes = 40ll << 20;  // DP gradient bucket size per GPU (CommSpec::dp_bucket_bytes)
  ParallelConfig parallel;
  Partition partition;
  RecomputePlan recompute;
  Schedule schedule;
  std::vector<IterationData> iterations;
  bool packed = true;  // micro-batches are packed (varlen) or padded to the longest sample
  bool operator==(const Plan&) const = default;
};
// Whether two plans run the same work: the same layout, partition, recompute, schedule and replayed iterations
// (their samples, dispatch lists); names, the trace's path and the other identity fields may differ. A measured
// run stands for its scenario's plan (validation reuse, `mmtwin replay`) only when this holds.
bool SameRunPlan(const Plan& a, const Plan& b);

// ---- Priced plan: what the op graph and the evaluators consume ----

// Cost of one chunk for one micro-batch on one device (TP group). Times in microseconds, bytes per GPU.
struct ChunkCost {
  double fwd_us = 0;  // forward compute
  double bwd_us = 0;  // backward compute (input and weight gradients), recompute excluded
  double bwd_weight_us =
      0;  // of bwd_us, the weight-gradient part (W) when a schedule splits the backward; the
          // input gradient (B) takes the rest (0: W costs nothing, B all of bwd_us)
  double recompute_us = 0;  // forward of the recomputed layers, run just before this backward
  double tp_fwd_us = 0;     // TP collectives inside the forward (serialized with compute)
  double tp_bwd_us = 0;     // TP collectives inside the backward (and the recompute)
  int64_t act_bytes = 0;    // activations held from this forward until its backward (recompute applied)
  int64_t act_bytes_no_recompute = 0;  // the same if nothing were recomputed
  // The backward transient of this chunk (BackwardTransient): the most its backward adds on top of act_bytes,
  // from the rematerialized checkpointed units (one at a time, each just before its own backward) and the
  // layers' backward working memory, less what the layers already done have freed (0 without recompute and
  // working memory).
  int64_t backward_transient_bytes = 0;
  // The forward transient: the most the forward adds on top of the activations held after it, e.g. Megatron
  // CP's per-step KV buffers and partial outputs (core/plan/pricing.cc SpAttentionOf); 0 otherwise.
  int64_t forward_transient_bytes = 0;
  int64_t send_bytes = 0;  // activation sent to the next chunk (and its gradient back); 0 for the last chunk
  double model_flops = 0;  // forward + backward FLOPs of the real tokens (no padding, no recompute), all TP
                           // ranks: the numerator of MFU
  int64_t llm_tokens = 0;  // LLM tokens of the micro-batch (set on every chunk; count once per micro-batch)
  // Sequence parallelism (core/plan/seqpar.h; 0 without): the SP communication of the chunk that is not hidden
  // behind compute, serialized with it (Ulysses all-to-alls, ring KV steps whose transfer outlasts their compute),
  // forward and backward (+ the recompute's forward), and the bytes one GPU sends for it per forward pass.
  double sp_fwd_us = 0;
  double sp_bwd_us = 0;
  int64_t sp_bytes = 0;
  // What the SimGrid engine replays of it (per GPU, per pass; the backward's include the recompute's forward):
  // the Ulysses all-to-all bytes sent and their pairwise-exchange latency count (4 (U - 1) per LLM block), and the
  // KV bytes sent to the ring successor while the pass computes (forward KV; backward KV and dKV).
  int64_t sp_a2a_fwd_bytes = 0, sp_a2a_bwd_bytes = 0;
  int32_t sp_a2a_fwd_steps = 0, sp_a2a_bwd_steps = 0;
  int64_t sp_ring_fwd_bytes = 0, sp_ring_bwd_bytes = 0;
};

// The fields of a ChunkCost that time an op graph without sequence parallelism, packed into one cache line
// (IterationTimingCache::PackedTimes; RepriceDurations in core/graph/op_graph.h): bmp times many partitions
// without writing and reading 160-byte ChunkCosts.
struct alignas(64) ChunkTimes {
  double fwd_us = 0, bwd_us = 0, bwd_weight_us = 0, recompute_us = 0, tp_fwd_us = 0, tp_bwd_us = 0;
  int64_t send_bytes = 0;
};

// Costs of one iteration, indexed [dp_idx][micro_batch][chunk]; dispatch[m] = micro-batch m's data-dispatch
// transfers among DP ranks (copied from IterationData; empty or shorter than M = none).
struct IterationCosts {
  int dp = 0, micro_batches = 0, chunks = 0;
  std::vector<ChunkCost> costs;
  // With the encoders outside the pipeline (Partition::EncoderLayers() > 0): micro-batch m's encoder passes on
  // replica d at [d * micro_batches + m], priced as a chunk of those layers (send_bytes: its output to the first
  // chunk); empty otherwise.
  std::vector<ChunkCost> encoder;
  const ChunkCost& EncoderAt(int d, int m) const {
    return encoder[static_cast<size_t>(d) * micro_batches + m];
  }
  std::vector<std::vector<DispatchTransfer>> dispatch;
  std::vector<std::vector<DispatchTransfer>> dispatch_backward;  // IterationData::dispatch_backward
  std::vector<DispatchOverhead> dispatch_overhead;               // IterationData::dispatch_overhead
  void Resize(int d, int m, int c) {
    dp = d;
    micro_batches = m;
    chunks = c;
    costs.assign(static_cast<size_t>(d) * m * c, ChunkCost{});
    encoder.clear();
    dispatch.clear();
    dispatch_backward.clear();
    dispatch_overhead.clear();
  }
  ChunkCost& At(int d, int m, int c) {
    return costs[(static_cast<size_t>(d) * micro_batches + m) * chunks + c];
  }
  const ChunkCost& At(int d, int m, int c) const {
    return costs[(static_cast<size_t>(d) * micro_batches + m) * chunks + c];
  }
};

// Static, per-chunk quantities (independent of the data).
struct ChunkStatic {
  int64_t params = 0;              // parameters in the chunk (whole, all TP ranks)
  int64_t grad_bytes_per_gpu = 0;  // bf16 gradients synchronized over DP per GPU ((params - frozen) * 2 / tp)
  // Parameters of each layer of the chunk, in forward order (empty: unknown, spread evenly): when a DP gradient
  // bucket is complete during the backward (op_graph.h).
  std::vector<int64_t> layer_params;
  // Frozen parameters (Component::frozen, core/model/model.h): how many of `params`, their bf16 weights per GPU
  // (ZeRO-3 all-gathers them with the trained ones; they have no gradient to reduce), and per layer of
  // layer_params (empty: none frozen).
  int64_t frozen_params = 0;
  int64_t frozen_bytes_per_gpu = 0;
  std::vector<int64_t> layer_frozen_params;
  // The bf16 weights ZeRO-3 all-gathers per GPU: the trained ones' (= grad_bytes_per_gpu) and the frozen ones'.
  int64_t weight_bytes_per_gpu() const { return grad_bytes_per_gpu + frozen_bytes_per_gpu; }
  bool operator==(const ChunkStatic&) const = default;
};

// Link speeds the op graph needs, derived from the cluster and the device layout.
struct CommSpec {
  // Between consecutive pipeline ranks by the layout's rule (NVLink iff 2·tp·dp fit a node). The op graph
  // prices each hop on its own link instead when gpus_per_node is set (nvlink_* inside a node, nic_* across);
  // these stay for hand-made specs without a layout.
  double p2p_bytes_per_s = 0;
  double p2p_latency_us = 0;
  double dp_bytes_per_s = 0;  // per GPU in the DP ring (NVLink inside a node, its NIC share across nodes)
  double dp_latency_us = 0;
  int64_t dp_bucket_bytes = 40ll << 20;  // gradient bucket size (per GPU)
  // The data-dispatch all-to-all between the stage-0 devices of the DP replicas: a transfer between two
  // devices on the same node (node = global rank of the TP group's first GPU / gpus_per_node; gpus_per_node
  // <= 0: every device on its own node) takes NVLink, any other one GPU's share of its node's NICs.
  int gpus_per_node = 0;
  double nvlink_bytes_per_s = 0;
  double nvlink_latency_us = 0;
  double nic_bytes_per_s = 0;  // per GPU: nics_per_node * nic_bytes_per_s / gpus_per_node
  double nic_latency_us = 0;
  // How collectives run (cluster.h CollectiveSpec; "ring" keeps the dp_* ring above) and how many members of a
  // stage's DP group (dp x sp replicas) share a node (DeviceMesh::DpRanksPerNode; 0: unknown, the whole group
  // when the ring is priced in a node, else 1).
  CollectiveSpec collectives;
  int dp_ranks_per_node = 0;
  // ParallelConfig::zero3_shard_group when it splits the DP group (ZeRO-3 only), else 0: ZeRO-3's weight
  // all-gathers and gradient reduce-scatters run over it, then an all-reduce across the replicas (comm_cost.h).
  int dp_shard_group = 0;
  // Bytes the reducing phase of a DP gradient collective moves per byte of CommCall::bytes (the 16-bit
  // gradients): 2 with ParallelConfig::grad_reduce_dtype fp32, else 1 (comm_cost.h).
  double grad_reduce_bytes_scale = 1.0;
};

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Memory model of a pipeline-parallel plan (sim/docs/algorithms.md §4): per pipeline rank (one GPU of its TP
// group, the worst DP replica), bytes.
//
//   allocated_peak_bytes = model_state_bytes + peak_activation_bytes + boundary_bytes + workspace_bytes
//   peak_bytes = allocated_peak_bytes + fragmentation_bytes + cuda_context_bytes + nccl_bytes + other_bytes
//
// (the last three and the workspaces are the runtime's, RuntimeMemoryOf; ComputeMemory with a capacity instead of
// a device counts none of them, as before issue 27).
//
// - Model states, by the framework's optimizer precision (parallel.optimizer_memory, OptimizerBytesFor): per
//   parameter of the rank's chunks / tp (ceil), bytes of
//     weights    bf16 weights                       sharded over DP by ZeRO-3
//     grads      bf16 gradients kept to the step    sharded from ZeRO-2
//     main_grads fp32 gradient accumulation / all-reduce buffer       sharded from ZeRO-2
//     master     fp32 master weights                sharded from ZeRO-1
//     moments    Adam m and v, fp32                 sharded from ZeRO-1
//   per framework (W, G, MG, M + moments):
//     simple     2, 2, 0, 4 + 8   the textbook mixed-precision Adam (16 bytes; mmtwin before issue 27)
//     megatron   2, 0, 4, 4 + 8   Megatron-LM bf16: --accumulate-allreduce-grads-in-fp32 is forced by --bf16,
//                                 gradient_accumulation_fusion accumulates the weight gradients into the fp32
//                                 main_grad buffer (no bf16 .grad kept); the distributed optimizer
//                                 (--use-distributed-optimizer = zero_stage 1) shards master and moments only:
//                                 "bf16 parameters, fp32 gradients: 18 bytes, distributed 6 + 12/d" (Megatron
//                                 Core developer guide, "Distributed Optimizer", core_r0.9+).
//     deepspeed  2, 2, 4, 4 + 8   DeepSpeed BF16_Optimizer (bf16 with ZeRO 0/1, grad_accum_dtype fp32, as
//                                 Megatron-DeepSpeed runs it): the fp32 gradient buffer fp32_groups_gradients is
//                                 not partitioned, and the pipeline engine keeps the bf16 grads through the
//                                 iteration (PipelineEngine._exec_backward_pass calls
//                                 update_hp_grads(clear_lp_grads=False); DeepSpeed 0.9-0.14). ZeRO-2/3
//                                 (DeepSpeedZeroOptimizer / Stage3) partition the grads: 2/d + 4/d.
//     fsdp       0, 0, 4, 4 + 8   PyTorch FSDP FULL_SHARD, MixedPrecision(param_dtype=bf16, reduce_dtype=fp32):
//                                 the sharded fp32 FlatParameter is the master, its sharded fp32 grad the main
//                                 grad; the bf16 weights exist only unsharded and transiently (below); below
//                                 ZeRO-3 (SHARD_GRAD_OP) the bf16 weights stay: W = 2.
//     auto       fsdp or deepspeed for ZeRO-3 with that zero3_impl, else megatron.
//   With sequence parallelism the shards span dp x sp ranks (GraphParallel), and costs have dp * sp replicas.
//   ZeRO-3 also holds unsharded transients, by implementation (parallel.zero3_impl; "simple" counts none, as
//   before), per GPU, bf16, per pipeline rank (Zero3TransientBytes):
//     fsdp       3 x 2 x largest layer params / tp: the layer being computed and the next one prefetched
//                (PyTorch 2.0-2.3 FSDP, one FlatParameter per wrapped layer, BackwardPrefetch.BACKWARD_PRE, and
//                limit_all_gathers=True allowing at most two all-gathered units in flight; pytorch.org/docs
//                torch.distributed.fsdp), plus the unsharded gradient of one unit before its reduce-scatter.
//     deepspeed  2 x (largest layer + stage3_prefetch_bucket_size) / tp + 2 x reduce_bucket_size / tp, at
//                DeepSpeed's defaults (deepspeed/runtime/zero/config.py, DeepSpeed 0.9-0.14):
//                stage3_prefetch_bucket_size 5e7 elements (the docs page's 5e8 is not the code's default),
//                reduce_bucket_size 5e8, each capped at the rank's parameters; stage3_max_live_parameters 1e9
//                bounds the live parameters above; stage3_param_persistence_threshold 1e5 keeps tensors below
//                1e5 elements unpartitioned (norms and biases: not counted, under 0.1% of a block).
//   This is why FSDP fits a length that ZeRO-3 cannot on the same GPUs (LongVILA chose FSDP, §5.1.1): its
//   transient is two layers, DeepSpeed's about 1.2 GB. The op graph times them differently (core/graph/op_graph.h):
//   fsdp unshards unit by unit (one all-gather per layer and pass, the next one prefetched, at most two
//   unsharded: the transient above) and reduce-scatters each unit's gradients after its backward; simple and
//   deepspeed all-gather a chunk's weights at once before its first forward and first backward and
//   reduce-scatter its gradients in dp_bucket_bytes buckets.
// - Activations: walk the rank's schedule order (Schedule::per_rank[r]) for every DP replica with that
//   replica's micro-batch costs. The forward of (mb, chunk) adds ChunkCost::act_bytes, its backward releases
//   it. During a backward the chunk's layers run last to first: the recomputed layers are rematerialized one
//   checkpointed unit at a time (a recomputed layer from its kept input, or a uniform:N group from the group's
//   input), each just before its own backward, as Megatron-LM and PyTorch checkpointing run it; each layer's
//   backward allocates its working memory (gradients of its intermediates: LayerCost::bwd_work_bytes,
//   measured by a calibrated profile, the closed forms of core/cost/cost_model.h in the analytic model); the
//   layers already done have freed their
//   saved activations. So the backward transiently adds ChunkCost::backward_transient_bytes
//   (BackwardTransient, core/plan/plan.h) on top of what is held, including its own stored activations. The
//   peak over the walk (max over DP replicas) is peak_activation_bytes. (The op graph still times the chunk's
//   recompute as one op before its backward.) A forward adds, on top of what it leaves held, its
//   ChunkCost::forward_transient_bytes (Megatron CP's per-step KV buffers; 0 otherwise).
// - Encoders outside the pipeline (Schedule::encoder, policies.encoder bubbles): every rank also holds the model
//   states of layers [0, Partition::EncoderLayers()) (their replicas span dp x pp: ModelStatesOf with dp x pp
//   replicas, one stage; RankModelStates), and its walk interleaves the encoder passes it runs at their positions (`before`):
//   a forward holds IterationCosts::encoder's act_bytes until its backward, which adds its transient first.
//   Their sends count in the boundary buffers (the first rank receives, the encoder's rank sends) and in the
//   per-micro-batch footprint of the rank that runs them.
// - Boundary buffers: one send buffer and one receive buffer: the largest send_bytes of the rank's own chunks
//   (activations out, and the same-sized gradients in) plus the largest send_bytes of the chunks feeding them
//   (chunk c - 1: activations in, gradients out), over DP replicas and micro-batches. For a uniform middle
//   stage this is 2 x send_bytes; the first rank has no receive buffer, the last no send buffer (vpp = 1).
// - Runtime (RuntimeMemoryOf, from the cluster preset's device and the plan's process groups):
//     cuda_context_bytes  device.cuda_context_bytes (the CUDA context with its loaded modules), outside the allocator
//     nccl_bytes          NcclBufferBytes: for every NCCL communicator the rank belongs to (TP, DP over dp x sp,
//                         PP, SP, each of more than one rank), channels x peers x NCCL_BUFFSIZE, peers = 2 (ring
//                         predecessor and successor; 1 in a group of two): NCCL allocates a buffer per channel
//                         and connected peer, NCCL_BUFFSIZE 4 MiB by default (NCCL docs, "Environment
//                         Variables"; the LL and LL128 protocols' smaller buffers and the tree connections are
//                         not counted)
//     workspace_bytes     device.workspace_bytes + cudnn_workspace_bytes (cuBLAS, cuDNN), inside the allocator
//     other_bytes         device.reserved_bytes
// - Fragmentation (FragmentationBytes): the caching allocator's reserved bytes exceed the allocated peak A by
//     max(A x f / (1 - f), c x (max - min) of the rank's per-micro-batch activation footprint)
//   f = device.fragmentation (the floor: at least that fraction of the reserved pool is not handed out), c =
//   device.fragmentation_spread. The footprint of one micro-batch is the activations its forwards leave held
//   on the rank plus its largest forward / backward transient; when sizes vary, blocks cut for one micro-batch's
//   tensors do not serve a larger one (PyTorch's CUDA caching allocator: 2 MiB small and 20 MiB+ large segments,
//   blocks split but never merged across segments; pytorch.org "CUDA semantics: memory management"), so up to
//   the spread stays reserved: c = 1 strands all of it, 0 none. Equal micro-batches give the floor alone.
//   MergeMemory keeps the footprint's max and min over iterations and recomputes the term.
// - fits = peak_bytes <= capacity_bytes (the device's memory_bytes; with the capacity overload the given bytes);
//   short_bytes = max(0, peak_bytes - capacity_bytes).
//
// With uniform per-micro-batch costs this reproduces the textbook in-flight counts: 1F1B holds
// min(pp - r, M) x act on rank r (warm-up min(pp - r - 1, M) forwards, plus the steady-state forward before
// the first backward), GPipe M x act.
//
//   std::vector<StageMemory> mem = ComputeMemory(parallel, partition, layer_params, schedule, costs, 80ll <<
//   30); for (int it = 1; it < n; ++it) mem = MergeMemory(mem, ComputeMemory(..., costs[it], ...)); if
//   (!mem[r].fits) report "stage r is short by mem[r].short_bytes"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/model/model.h"
#include "core/plan/caching_allocator.h"
#include "core/plan/plan.h"
#include "core/util/status.h"

namespace mmtwin {

struct StageMemory {
  int stage = 0;  // pipeline rank
  int64_t model_state_bytes = 0;  // sum of the five below
  int64_t weight_bytes = 0;       // bf16 weights (OptimizerBytesFor)
  int64_t grad_bytes = 0;         // bf16 gradients
  int64_t main_grad_bytes = 0;    // fp32 gradient buffer
  int64_t optimizer_bytes = 0;    // fp32 master weights and Adam moments
  int64_t zero3_transient_bytes = 0;
  int64_t peak_activation_bytes = 0;
  int64_t boundary_bytes = 0;
  int64_t workspace_bytes = 0;       // cuBLAS + cuDNN workspaces (runtime)
  int64_t allocated_peak_bytes = 0;  // model states + activations + boundary + workspaces
  int64_t fragmentation_bytes = 0;   // FragmentationBytes
  int64_t cuda_context_bytes = 0;    // runtime, outside the allocator
  int64_t nccl_bytes = 0;
  int64_t other_bytes = 0;  // device.reserved_bytes
  int64_t peak_bytes = 0;   // allocated_peak + fragmentation + context + nccl + other
  int64_t capacity_bytes = 0;
  bool fits = true;
  int64_t short_bytes = 0;  // how much is missing (0 when it fits)
  // Inputs of the fragmentation term, kept for MergeMemory: the per-micro-batch footprint's extremes (max over
  // DP replicas of max, min over them of min) and the device's two coefficients.
  int64_t mb_footprint_max_bytes = 0, mb_footprint_min_bytes = 0;
  double fragmentation_floor = 0, fragmentation_spread = 0;
  // With device.allocator_model replay: the replayed allocator's reserved peak less its allocated peak over the
  // rank's activations (ReplayActivationExcessBytes: the largest of the iteration's highest-peaking replica on an
  // empty allocator and, with a MemoryReplay, of the first replicas on their carried allocators; the max over
  // iterations); -1 when not replayed.
  int64_t replay_excess_bytes = -1;
};

// Bytes per parameter (per GPU after TP) of each model-state buffer, and from which ZeRO stage each is sharded
// over the data-parallel ranks (above).
struct OptimizerBytes {
  int weights = 2, grads = 2, main_grads = 0, master = 4, moments = 8;
};
// The buffers of parallel.optimizer_memory ("auto" resolved as above); an unknown name gives simple's.
OptimizerBytes OptimizerBytesFor(const ParallelConfig& parallel);
// "simple", "megatron", "deepspeed" or "fsdp": parallel.optimizer_memory with "auto" resolved.
std::string ResolvedOptimizerMemory(const ParallelConfig& parallel);
// Every accepted value of parallel.optimizer_memory.
const std::vector<std::string>& OptimizerMemoryNames();

// One rank's model states by buffer (StageMemory's five fields).
struct ModelStates {
  int64_t weights = 0, grads = 0, main_grads = 0, optimizer = 0, zero3_transient = 0;
  int64_t Total() const;
};
// The model states of `params` parameters (whole, all TP ranks) under `parallel` (tp, dp x sp, zero_stage,
// optimizer_memory), without the ZeRO-3 transient. `frozen_params` of them (clamped to [0, params]) belong to
// frozen components (Component::frozen, core/model/model.h): they have no gradients, no fp32 gradient buffer
// and no optimizer states (Megatron-LM builds main parameters and Adam states for parameters that require a
// gradient only, megatron/core/optimizer: _get_param_groups; DeepSpeed and torch.optim likewise skip them), only
// their weights, sharded as the trained weights are: `weights` bytes (bf16, from ZeRO-3), plus under fsdp the
// sharded fp32 FlatParameter that holds them (4 bytes from ZeRO-1: FSDP flattens frozen parameters with the
// others, use_orig_params=True, and keeps the flat parameter in fp32 under MixedPrecision).
ModelStates ModelStatesOf(const ParallelConfig& parallel, int64_t params, int64_t frozen_params = 0);

// Model-state bytes per GPU for `params` parameters (whole, all TP ranks) under `parallel` (tp, dp,
// zero_stage), `frozen_params` of them frozen (ModelStatesOf).
int64_t ModelStateBytes(const ParallelConfig& parallel, int64_t params, int64_t frozen_params = 0);
// ZeRO-3's transient unsharded bytes per GPU for implementation `impl` ("simple", "fsdp", "deepspeed"; above).
int64_t Zero3TransientBytes(const std::string& impl, int64_t largest_layer_params, int64_t rank_params,
                            int64_t tp);
// Parameters on each pipeline rank (its chunks c with c % pp == r), from per-layer parameter counts.
std::vector<int64_t> RankParams(const ParallelConfig& parallel, const Partition& partition,
                                const std::vector<int64_t>& layer_params);
// ModelStateBytes of every pipeline rank, plus the ZeRO-3 transient of parallel.zero3_impl (its gathered
// weights include frozen ones; its gradient buckets are counted as if every parameter trained, an upper bound),
// plus, with the encoders outside the pipeline (partition.EncoderLayers() > 0), their replica on every rank
// (ModelStatesOf with dp x pp replicas, one stage): what the recompute policies and the memory walk both count.
// `layer_frozen_params`: per layer, the parameters of a frozen layer (FrozenLayerParams, core/model/model.h),
// else 0; empty = nothing frozen.
std::vector<int64_t> RankModelStateBytes(const ParallelConfig& parallel, const Partition& partition,
                                         const std::vector<int64_t>& layer_params,
                                         const std::vector<int64_t>& layer_frozen_params = {});
// The same by buffer.
std::vector<ModelStates> RankModelStates(const ParallelConfig& parallel, const Partition& partition,
                                         const std::vector<int64_t>& layer_params,
                                         const std::vector<int64_t>& layer_frozen_params = {});

// The runtime's bytes per GPU (above), the same on every rank of a plan.
struct RuntimeMemory {
  int64_t cuda_context_bytes = 0, nccl_bytes = 0, workspace_bytes = 0, other_bytes = 0;
  double fragmentation_floor = 0, fragmentation_spread = 0;
  bool replay_allocator = false;  // device.allocator_model == "replay"
};
// The tensors a transformer block keeps for its backward, relative sizes per token (elements; bf16 alike): its
// input, the first norm's output, the fused QKV output ((q + 2 kv) x head_dim), the attention output
// (q x head_dim), the output projection's output, the residual sum, the second norm's output, FC1's output (2 x
// ffn gated, ffn plain), the activation's output (ffn), the gated product (ffn, gated MLPs only), FC2's output.
// As PyTorch eager training of such a block allocates them (the H200 allocator traces of
// backend/gpu/memory_probe.py show these tensors for Llama-3-8B's blocks). An empty config (layers == 0) gives
// Korthikanti et al. 2022's GPT block (34 s b h bytes: 1, 1, 1, 1, 1, 1, 0.5, 1, 1, 4, 4, 0.5 in units of s b h
// x 2 bytes).
std::vector<double> TransformerTensorShares(const TransformerConfig& tf);

// The walk replays Korthikanti's tensors (empty shares): on the H200 probe they predict the reserved peaks with a
// smaller worst error than the probe block's own (FragmentationProbeTest, reports/fidelity.md).
// The caching allocator's excess over its allocated peak when one pipeline rank's passes run in `ops` order on
// DP replica `replica` (core/plan/caching_allocator.h, from an empty allocator): each forward allocates, per
// layer of its chunk, the chunk's held activation bytes split evenly over the chunk's layers and by `shares`,
// then its forward transient (allocated and freed); the backward allocates and frees its transient, then per
// layer (last first) the gradient of the layer's largest tensor and an input gradient of the first share's size,
// and frees the temporary, the previous gradient and the layer's tensors.
// The walk's spread term's replacement under device.allocator_model replay; a model of the allocator fed a
// model of the tensors: on the H200 probe (traces/clusters/profiles) the reserved peaks within 3.4% MAPE with
// the block's own shares, 7.9% with Korthikanti's, against 18.0% for the spread term.
// With `allocator`, the replay continues on it (a GPU's allocator keeps its cache from one iteration to the
// next) and the excess is its reserved peak less its allocated peak since it began. `limit_bytes` > 0: what the
// device leaves the activations (CachingAllocatorModel::set_limit_bytes): a new segment past it releases the
// cached whole segments first, as PyTorch retries a failed cudaMalloc, so a job near its memory keeps less cached
// (the walk passes the device's memory less everything else of the stage; 0: no limit, the planner's reserve).
int64_t ReplayActivationExcessBytes(const std::vector<PipeOp>& ops, const IterationCosts& costs, int replica,
                                    const Partition& partition, const std::vector<double>& shares,
                                    CachingAllocatorModel* allocator = nullptr, int64_t limit_bytes = 0);
// The allocators of a run's replay across its iterations: per pipeline rank, those of the first
// kReplayedReplicas DP replicas (ComputeMemory's `replay`; the walk takes the largest of their excesses and of a
// fresh replay of the iteration's highest-peaking replica).
struct MemoryReplay {
  static constexpr int kReplayedReplicas = 4;
  std::vector<std::vector<CachingAllocatorModel>> allocators;  // [rank][replica]
};
// NCCL buffers of one GPU: sum over its communicators of more than one rank (tp, dp * sp, pp, sp) of
// device.nccl_channels x min(2, size - 1) x device.nccl_buffsize_bytes. `parallel` is the plan's (not
// GraphParallel's).
int64_t NcclBufferBytes(const DeviceSpec& device, const ParallelConfig& parallel);
RuntimeMemory RuntimeMemoryOf(const DeviceSpec& device, const ParallelConfig& parallel);
// The caching allocator's excess of reserved over allocated (above): max(allocated x f / (1 - f), c x spread),
// f clamped to [0, 0.9], negative inputs as 0.
int64_t FragmentationBytes(int64_t allocated_bytes, int64_t spread_bytes, double floor_fraction,
                           double spread_coefficient);
// What the model's states, activations and boundary buffers may take on one GPU of the plan so that the stage
// fits with the runtime and the fragmentation floor (the planners' capacity: adaptive recompute, bmp's fit test):
//   (memory - cuda_context - nccl - reserved) x (1 - f) - workspaces,  at least 0.
// The spread term is the walk's only (a profile does not know the micro-batches).
int64_t PlanUsableMemoryBytes(const DeviceSpec& device, const ParallelConfig& parallel);

// Checks that the inputs agree: partition has pp * vpp chunks over layer_params.size() layers, the schedule
// has pp ranks, costs are [dp][micro_batches][chunks] with chunks = pp * vpp, every schedule op's micro-batch
// and chunk are in range and its chunk lives on that rank.
Status ValidateMemoryInputs(const ParallelConfig& parallel, const Partition& partition,
                            const std::vector<int64_t>& layer_params, const Schedule& schedule,
                            const IterationCosts& costs);

// One StageMemory per pipeline rank (size pp), max over DP replicas. Precondition: ValidateMemoryInputs is OK
// (ops out of range are skipped, so bad input never reads out of bounds, but the answer is then meaningless).
// This overload counts no runtime and no fragmentation, against `capacity_bytes`. `layer_frozen_params` as for
// RankModelStates.
std::vector<StageMemory> ComputeMemory(const ParallelConfig& parallel, const Partition& partition,
                                       const std::vector<int64_t>& layer_params, const Schedule& schedule,
                                       const IterationCosts& costs, int64_t capacity_bytes,
                                       const std::vector<int64_t>& layer_frozen_params = {});
// The full model: the runtime of `device` for `parallel` (RuntimeMemoryOf), the fragmentation, against
// device.memory_bytes.
// With device.allocator_model replay and `replay`, the replicas' allocators carry over between the calls of one
// run (the planner's and the simulator's loops over the replayed iterations).
std::vector<StageMemory> ComputeMemory(const ParallelConfig& parallel, const Partition& partition,
                                       const std::vector<int64_t>& layer_params, const Schedule& schedule,
                                       const IterationCosts& costs, const DeviceSpec& device,
                                       const std::vector<int64_t>& layer_frozen_params = {},
                                       MemoryReplay* replay = nullptr);

// Worst case of two per-iteration results (same ranks): each component is the max of the two, the allocated peak
// the max of the two (each iteration's is a real simultaneous sum, the sum of merged components may not be), the
// footprint's max / min the max / min, the fragmentation recomputed from them, peak_bytes = merged allocated peak
// + fragmentation + runtime, fits / short_bytes recomputed against the capacity. An empty side returns the
// other.
std::vector<StageMemory> MergeMemory(const std::vector<StageMemory>& a, const std::vector<StageMemory>& b);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Memory model of a pipeline-parallel plan (sim/docs/algorithms.md §4): per pipeline rank (one GPU of its TP
// group, the worst DP replica), bytes.
//
//   peak_bytes = model_state_bytes + peak_activation_bytes + boundary_bytes
//
// - Model states (mixed-precision Adam): the rank's chunks' parameters / tp (ceil) times 2 (bf16 weights) +
//   2 (bf16 grads) + 12 (fp32 master weights, m, v) bytes. ZeRO shards over DP (ceil division): stage 1 the
//   12, stage 2 also the 2 bytes of gradients, stage 3 (FSDP) also the 2 bytes of weights. With sequence
//   parallelism the shards span dp x sp ranks (GraphParallel), and costs have dp * sp replicas.
//   ZeRO-3 also holds unsharded transients, by implementation (parallel.zero3_impl; "simple" counts none, as
//   before), per GPU, bf16, per pipeline rank (Zero3TransientBytes):
//     fsdp       3 x 2 x largest layer params / tp: the layer being computed and the next one prefetched
//                (PyTorch FSDP, one FlatParameter per wrapped layer, BackwardPrefetch.BACKWARD_PRE, and
//                limit_all_gathers=True allowing at most two all-gathered units in flight; pytorch.org/docs
//                torch.distributed.fsdp), plus the unsharded gradient of one unit before its reduce-scatter.
//     deepspeed  2 x (largest layer + stage3_prefetch_bucket_size) / tp + 2 x reduce_bucket_size / tp, the
//                prefetch and reduce buckets at DeepSpeed's defaults, 5e8 elements each (deepspeed.readthedocs.io
//                "ZeRO Configurations"; stage3_max_live_parameters 1e9 bounds the live parameters above), capped
//                at the rank's parameters.
//   This is why FSDP fits a length that ZeRO-3 cannot on the same GPUs (LongVILA chose FSDP, §5.1.1): its
//   transient is two layers, DeepSpeed's about 2 GB. The op graph times them differently (core/graph/op_graph.h):
//   fsdp unshards unit by unit (one all-gather per layer and pass, the next one prefetched, at most two
//   unsharded: the transient above) and reduce-scatters each unit's gradients after its backward; simple and
//   deepspeed all-gather a chunk's weights at once before its first forward and first backward and
//   reduce-scatter its gradients in dp_bucket_bytes buckets. Transient ZeRO-3
//   all-gather buffers are not modelled; the allocator's fragmentation, its workspaces and the memory outside it
//   are taken off the capacity instead (the caller passes UsableMemoryBytes, core/cluster/cluster.h).
// - Activations: walk the rank's schedule order (Schedule::per_rank[r]) for every DP replica with that
//   replica's micro-batch costs. The forward of (mb, chunk) adds ChunkCost::act_bytes, its backward releases
//   it. During a backward the chunk's layers run last to first: the recomputed layers are rematerialized one
//   checkpointed unit at a time (a recomputed layer from its kept input, or a uniform:N group from the group's
//   input), each just before its own backward, as Megatron-LM and PyTorch checkpointing run it; each layer's
//   backward allocates its working memory (gradients of its intermediates: LayerCost::bwd_work_bytes,
//   measured by a calibrated profile, 0 in the analytic model); the layers already done have freed their
//   saved activations. So the backward transiently adds ChunkCost::backward_transient_bytes
//   (BackwardTransient, core/plan/plan.h) on top of what is held, including its own stored activations. The
//   peak over the walk (max over DP replicas) is peak_activation_bytes. (The op graph still times the chunk's
//   recompute as one op before its backward.)
// - Boundary buffers: one send buffer and one receive buffer: the largest send_bytes of the rank's own chunks
//   (activations out, and the same-sized gradients in) plus the largest send_bytes of the chunks feeding them
//   (chunk c - 1: activations in, gradients out), over DP replicas and micro-batches. For a uniform middle
//   stage this is 2 x send_bytes; the first rank has no receive buffer, the last no send buffer (vpp = 1).
// - fits = peak_bytes <= capacity_bytes (the device's usable bytes); short_bytes = max(0, peak_bytes - capacity_bytes).
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

#include "core/plan/plan.h"
#include "core/util/status.h"

namespace mmtwin {

struct StageMemory {
  int stage = 0;  // pipeline rank
  int64_t model_state_bytes = 0;
  int64_t peak_activation_bytes = 0;
  int64_t boundary_bytes = 0;
  int64_t peak_bytes = 0;  // sum of the three
  int64_t capacity_bytes = 0;
  bool fits = true;
  int64_t short_bytes = 0;  // how much is missing (0 when it fits)
};

// Model-state bytes per GPU for `params` parameters (whole, all TP ranks) under `parallel` (tp, dp,
// zero_stage).
int64_t ModelStateBytes(const ParallelConfig& parallel, int64_t params);
// ZeRO-3's transient unsharded bytes per GPU for implementation `impl` ("simple", "fsdp", "deepspeed"; above).
int64_t Zero3TransientBytes(const std::string& impl, int64_t largest_layer_params, int64_t rank_params,
                            int64_t tp);
// Parameters on each pipeline rank (its chunks c with c % pp == r), from per-layer parameter counts.
std::vector<int64_t> RankParams(const ParallelConfig& parallel, const Partition& partition,
                                const std::vector<int64_t>& layer_params);
// ModelStateBytes of every pipeline rank, plus the ZeRO-3 transient of parallel.zero3_impl.
std::vector<int64_t> RankModelStateBytes(const ParallelConfig& parallel, const Partition& partition,
                                         const std::vector<int64_t>& layer_params);

// Checks that the inputs agree: partition has pp * vpp chunks over layer_params.size() layers, the schedule
// has pp ranks, costs are [dp][micro_batches][chunks] with chunks = pp * vpp, every schedule op's micro-batch
// and chunk are in range and its chunk lives on that rank.
Status ValidateMemoryInputs(const ParallelConfig& parallel, const Partition& partition,
                            const std::vector<int64_t>& layer_params, const Schedule& schedule,
                            const IterationCosts& costs);

// One StageMemory per pipeline rank (size pp), max over DP replicas. Precondition: ValidateMemoryInputs is OK
// (ops out of range are skipped, so bad input never reads out of bounds, but the answer is then meaningless).
std::vector<StageMemory> ComputeMemory(const ParallelConfig& parallel, const Partition& partition,
                                       const std::vector<int64_t>& layer_params, const Schedule& schedule,
                                       const IterationCosts& costs, int64_t capacity_bytes);

// Worst case of two per-iteration results (same ranks): each component is the max of the two, peak_bytes the
// max of the two peaks (each iteration's peak is a real simultaneous sum, the sum of merged components may
// not be), fits / short_bytes recomputed against the capacity. An empty side returns the other.
std::vector<StageMemory> MergeMemory(const std::vector<StageMemory>& a, const std::vector<StageMemory>& b);

}  // namespace mmtwin

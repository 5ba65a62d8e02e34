// SPDX-License-Identifier: Apache-2.0
// Pricing: turns a plan's micro-batches into per-chunk costs (ChunkCost) with a cost model, plus the static
// per-chunk quantities and the link speeds of the device layout. The glue between the plan and the op graph.
//
// Per micro-batch, every component gets one LayerWorkload (core/cost: ViT tiles as separate spans, LLM
// samples varlen or padded); layers of one component and kind cost the same, so each (component, kind) is
// priced once. TP: layer times, parameters and activations are per GPU (divided by TP in the cost model);
// every transformer block adds Megatron's in-layer collectives, 2 in the forward and 2 in the backward
// (all-reduce, or with sequence parallelism all-gather + reduce-scatter of the same volume), each of
// tokens * hidden * 2 bytes inside the node: as NCCL runs them (core/plan/collective.h) on a cluster whose
// collectives are "nccl", else a flat ring, 2 (tp-1)/tp * bytes / nvlink_bytes_per_s + latency.
// Recomputed layers repeat their forward collectives.
// Sequence parallelism (parallel.sp > 1, core/plan/seqpar.h): the micro-batch is priced for one SP rank in
// lockstep with its group. Vision encoders and projectors get ceil(units / S) of the micro-batch's tiles/frames
// (MM-SP stage one); the LLM's samples are padded with dummy tokens to SpPadUnits and sharded evenly (stage two),
// tokens_per_rank = padded / S. The SP group holds the micro-batch as one packed sequence whatever the plan's
// packing (a padded data policy pads nothing under SP): one-stage and two-stage sharding price the same tokens. An LLM block's time is its linear part at tokens_per_rank plus its attention:
//   ring (contiguous / zigzag over R ring ranks, heads / U per rank after the Ulysses all-to-all): per step s of
//   rank r, the attention kernel = (RankStepPairs[r][s] x the cost model's time per square pair + the step's
//   query rows (RankStepRows) x its time per query row) / U, plus the implementation's per-step kernels and
//   launches (seqpar.h "ring implementations": ring-flash-attention, TransformerEngine P2P or all-gather);
//   transfer = latency + the step's bytes / bw (KV; the backward's dKV in fp32 for ring-flash-attention, bf16
//   for TransformerEngine); pass time = RingScheduleUs (slowest rank, steps overlapped with their transfers,
//   the exposed tail) -- its compute goes to fwd_us / bwd_us, its exposed transfer to sp_fwd_us / sp_bwd_us;
//   megatron-cp-ag: the KV all-gather (and the backward's all-gather and dKV reduce-scatter) exposed, priced as
//   NCCL runs them inside a node where the cluster's collectives are "nccl" (SpRingCollectiveUs in pricing.cc);
//   cornstarch-cp: the busiest rank of the makespan split (MakespanSplit: its tokens for the linear work, its
//   pairs for the attention), the KV gathers pipelined with the head groups' attention (PipelinedGatherUs), the
//   backward's reduce-scatters exposed;
//   Ulysses (U > 1): four all-to-alls per pass as pairwise exchanges, 4 (U - 1) latencies +
//   UlyssesAllToAllBytes / bw, added to sp_fwd_us and sp_bwd_us.
// bw: NVLink when the sub-group sits in a node (SpLayout::ulysses_in_node / ring_in_node), else the GPU's NIC
// share. Activations are those of the rank's tokens; ring attention's buffers (the KV block and its dKV, sent and
// received: 4 x RingStepKvBytes) are added to the backward's transient (ChunkCost::backward_transient_bytes).
// model_flops and llm_tokens are the micro-batch's divided by S (summing the S ranks gives the whole).
// PriceIteration then repeats each DP rank's costs for its S SP ranks (GraphParallel, core/plan/plan.h):
// costs.dp = dp * sp, replica dp * S + s; dispatch transfers name replica dp * S. With sp == 1 none of this runs.
// P2P: an activation crossing a chunk boundary is split
// over the TP ranks (Megatron's scatter/gather optimization): send_bytes = boundary_bytes / tp per GPU.
//
//   Pricer pricer(model, cost_model, cluster, parallel);
//   IterationCosts costs = pricer.PriceIteration(iteration, tokens, Packing::kVarlen, partition, recompute);
#pragma once

#include <vector>

#include "core/cluster/cluster.h"
#include "core/cost/cost_model.h"
#include "core/model/model.h"
#include "core/plan/collective.h"
#include "core/plan/plan.h"
#include "core/plan/seqpar.h"

namespace mmtwin {

// Link speeds of the Megatron layout (TP fastest, then DP, then PP) on `cluster`: DP peers share a node when
// tp*dp fits in a node (NVLink), else each GPU uses its share of the node's NICs; pipeline neighbours
// likewise; plus the per-link figures the dispatch all-to-all needs. The analytic pricing and the SimGrid
// platform both use it, so their links are the same by construction.
CommSpec LayoutComm(const ClusterSpec& cluster, const ParallelConfig& parallel);

class Pricer {
 public:
  // `cost` must outlive the Pricer.
  Pricer(const ModelSpec& model, const CostModel& cost, const ClusterSpec& cluster,
         const ParallelConfig& parallel);

  const std::vector<Layer>& layers() const { return layers_; }
  const SpLayout& sp_layout() const { return sp_; }
  const ParallelConfig& parallel() const { return parallel_; }

  // Costs of every layer for one micro-batch (given by its samples' tokens).
  void LayerCosts(const std::vector<SampleTokens>& micro_batch, Packing packing,
                  std::vector<LayerCost>& out) const;
  // TP collective time of one transformer layer's forward for a micro-batch with `tokens` positions of width
  // `hidden` (0 when tp == 1).
  double TpLayerForwardUs(int64_t tokens, int64_t hidden) const;
  // The time a layer's TP collectives add to its pass, from their time `comm_us` (TpLayerForwardUs) and the
  // layer's weight GEMMs `gemm_us` (one pass's: LayerCost::bwd_weight_time_us, the forward GEMMs' FLOPs). Without
  // parallel.tp_comm_overlap: comm_us (the collectives run between the GEMMs). With it, as Transformer Engine's
  // userbuffers run Megatron-LM's --tp-comm-overlap (ring-exchange all-gathers split into tp steps, each under
  // the GEMM of the chunk already received; reduce-scatters pipelined in 4 splits after the GEMM's chunks, the
  // last split exposed): exposed = max(comm_us - gemm_us, comm_us / 8) (half of comm_us is reduce-scatters, a
  // quarter of them left after the last split), plus the device's overlap_slowdown s (cluster.h) on the GEMM
  // time spent under the rest: exposed + s (comm_us - exposed). The backward's collectives are taken as
  // exposed as the forward's (AddLayer: TpBackwardFactor copies of the forward's), an upper bound: its dgrad
  // and wgrad GEMMs give them twice the forward's GEMM time to hide behind. A frozen layer (no weight
  // gradients, gemm_us 0) hides nothing.
  double TpExposedUs(double comm_us, double gemm_us) const;

  // Per-chunk costs of one micro-batch; `out` has partition.chunks() entries. With the encoders outside the
  // pipeline (partition.EncoderLayers() > 0) and `encoder` given, their pass (layers [0, EncoderLayers())) is
  // priced into it as a chunk of those layers, send_bytes its output to the first chunk (sp == 1 only).
  void PriceMicroBatch(const std::vector<SampleTokens>& micro_batch, Packing packing,
                       const Partition& partition, const RecomputePlan& recompute, ChunkCost* out,
                       ChunkCost* encoder = nullptr) const;
  // All micro-batches of one iteration (and IterationCosts::encoder when the partition starts after the
  // encoders). `tokens` holds every trace sample's tokens (TokensFor).
  IterationCosts PriceIteration(const IterationData& iteration, const std::vector<SampleTokens>& tokens,
                                Packing packing, const Partition& partition,
                                const RecomputePlan& recompute) const;

  // ---- Timing many partitions of the same micro-batches (IterationTimingCache) ----
  // A micro-batch's distinct layer costs: one slot per component's transformer block (all its blocks cost the
  // same) and one per other layer; SlotOfLayer(l) names layer l's. tp_us is a block's TP forward collective
  // time (0 for other layers).
  struct SlotCost {
    double fwd_us = 0, bwd_us = 0, bwd_weight_us = 0, tp_us = 0;
    int64_t boundary_bytes = 0;
  };
  int NumSlots() const { return num_slots_; }
  int SlotOfLayer(int layer) const { return slot_of_layer_[layer]; }
  // The micro-batch's slots (out has NumSlots() entries). sp == 1 only.
  void PriceSlots(const std::vector<SampleTokens>& micro_batch, Packing packing, SlotCost* out) const;

  // Per chunk; with the encoders outside the pipeline one more, last: theirs (layers [0, EncoderLayers())).
  std::vector<ChunkStatic> Static(const Partition& partition) const;
  // Link speeds for the Megatron layout (TP fastest, then DP, then PP): DP peers share a node when tp*dp fits
  // in a node (NVLink), else each GPU uses its share of the node's NICs; pipeline neighbours likewise.
  CommSpec Comm() const;

 private:
  void LayerCostsFor(const std::vector<LayerWorkload>& work, std::vector<LayerCost>& out) const;
  // The SP path of PriceMicroBatch (sp > 1).
  void PriceMicroBatchSp(const std::vector<SampleTokens>& micro_batch, Packing packing,
                         const Partition& partition, const RecomputePlan& recompute, ChunkCost* out) const;

  const ModelSpec& model_;
  const CostModel& cost_;
  ClusterSpec cluster_;
  ParallelConfig parallel_;
  std::vector<Layer> layers_;
  std::vector<int64_t> hidden_of_layer_;  // width of a layer's component (for TP collectives)
  bool nccl_tp_ = false;                  // TP collectives by NCCL's model (cluster collectives "nccl")
  CollectiveLinks tp_links_;              // CollectiveLinksOf(cluster_), made once
  SpLayout sp_;                           // resolved from parallel.sp_method (none when sp == 1)
  int llm_component_ = -1;
  std::vector<int> slot_of_layer_;  // NumSlots / SlotOfLayer
  std::vector<int> layer_of_slot_;  // a layer of each slot (the first)
  int num_slots_ = 0;
};

// The layer costs of some iterations' micro-batches, priced once (per micro-batch, Pricer::NumSlots() slots), to
// time many partitions and recompute plans of the same layers: BMP's candidates. Times(i, ...) equals
// PriceIteration(iterations[i], ...) in every field the op graph times (fwd, bwd, bwd_weight, recompute, TP,
// send_bytes; llm_tokens), bit for bit; the memory fields (activations, transient, FLOPs) are 0, so it is for
// timing only. Only without sequence
// parallelism (Supported). Memory: NumSlots() x 40 bytes per micro-batch (about 320 MB for 4 iterations at
// 102,400 GPUs).
class IterationTimingCache {
 public:
  static bool Supported(const Pricer& pricer) { return pricer.parallel().sp <= 1; }
  // `pricer` must outlive the cache.
  IterationTimingCache(const Pricer& pricer, const std::vector<IterationData>& iterations,
                       const std::vector<SampleTokens>& tokens, Packing packing);
  size_t size() const { return iterations_.size(); }
  IterationCosts Times(size_t iteration, const Partition& partition, const RecomputePlan& recompute) const;
  // The same into `out`, whose storage is reused when it has the right size (no allocation per candidate).
  void Times(size_t iteration, const Partition& partition, const RecomputePlan& recompute,
             IterationCosts* out) const;
  // The same timing fields packed (ChunkTimes, indexed as IterationCosts::costs), bit for bit; for
  // RepriceDurations. `out` is resized (its storage reused).
  void PackedTimes(size_t iteration, const Partition& partition, const RecomputePlan& recompute,
                   std::vector<ChunkTimes>* out) const;
  // The same for DP replica `replica` alone: its M * chunks entries (micro-batch m, chunk c at m * chunks + c),
  // equal bit for bit to that replica's entries of PackedTimes (for ReplicaAloneTimeUs, bmp's candidate bound).
  void PackedReplicaTimes(size_t iteration, int replica, const Partition& partition,
                          const RecomputePlan& recompute, std::vector<ChunkTimes>* out) const;
  // Whether the iteration has data-dispatch transfers (Times copies them into IterationCosts; PackedTimes has
  // none).
  bool HasDispatch(size_t iteration) const;

 private:
  const Pricer& pricer_;
  // Micro-batches in blocks of kBlock (j = d * M + m; block j / kBlock, lane j % kBlock): the time sums of
  // kBlock micro-batches run side by side (independent chains, vectorized), each in PriceMicroBatch's order.
  static constexpr int kBlock = 4;
  struct Iteration {
    int dp = 0, micro_batches = 0;
    // [((block * NumSlots() + slot) * 4 + field) * kBlock + lane], field: fwd_us, bwd_us, bwd_weight_us, tp_us
    // (zero for the lanes past the last micro-batch)
    std::vector<double> slot_times;
    std::vector<int64_t> boundary_bytes;  // [j * NumSlots() + slot]
    std::vector<int64_t> llm_tokens;      // [j]
    std::vector<std::vector<DispatchTransfer>> dispatch, dispatch_backward;
    std::vector<DispatchOverhead> dispatch_overhead;
  };
  std::vector<Iteration> iterations_;
  // The chunk sums of the micro-batches j = d * M + m in [j_begin, j_end) of iteration x: write(j, c,
  // ChunkTimes).
  template <class Write>
  void SumChunks(const Iteration& x, const Partition& partition, const RecomputePlan& recompute,
                 size_t j_begin, size_t j_end, Write&& write) const;
};

}  // namespace mmtwin

// Pricing: turns a plan's micro-batches into per-chunk costs (ChunkCost) with a cost model, plus the static
// per-chunk quantities and the link speeds of the device layout. The glue between the plan and the op graph.
//
// Per micro-batch, every component gets one LayerWorkload (core/cost: ViT tiles as separate spans, LLM
// samples varlen or padded); layers of one component and kind cost the same, so each (component, kind) is
// priced once. TP: layer times, parameters and activations are per GPU (divided by TP in the cost model);
// every transformer block adds Megatron's in-layer collectives, 2 in the forward and 2 in the backward
// (all-reduce, or with sequence parallelism all-gather + reduce-scatter of the same volume), each moving
// tokens * hidden * 2 bytes over NVLink: ring time 2 (tp-1)/tp * bytes / nvlink_bytes_per_s + latency.
// Recomputed layers repeat their forward collectives. P2P: an activation crossing a chunk boundary is split
// over the TP ranks (Megatron's scatter/gather optimization): send_bytes = boundary_bytes / tp per GPU.
//
//   Pricer pricer(model, cost_model, cluster, parallel);
//   IterationCosts costs = pricer.PriceIteration(iteration, tokens, Packing::kVarlen, partition, recompute);
#pragma once

#include <vector>

#include "core/cluster/cluster.h"
#include "core/cost/cost_model.h"
#include "core/model/model.h"
#include "core/plan/plan.h"

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
  const ParallelConfig& parallel() const { return parallel_; }

  // Costs of every layer for one micro-batch (given by its samples' tokens).
  void LayerCosts(const std::vector<SampleTokens>& micro_batch, Packing packing,
                  std::vector<LayerCost>& out) const;
  // TP collective time of one transformer layer's forward for a micro-batch with `tokens` positions of width
  // `hidden` (0 when tp == 1).
  double TpLayerForwardUs(int64_t tokens, int64_t hidden) const;

  // Per-chunk costs of one micro-batch; `out` has partition.chunks() entries.
  void PriceMicroBatch(const std::vector<SampleTokens>& micro_batch, Packing packing,
                       const Partition& partition, const RecomputePlan& recompute, ChunkCost* out) const;
  // All micro-batches of one iteration. `tokens` holds every trace sample's tokens (TokensFor).
  IterationCosts PriceIteration(const IterationData& iteration, const std::vector<SampleTokens>& tokens,
                                Packing packing, const Partition& partition,
                                const RecomputePlan& recompute) const;

  std::vector<ChunkStatic> Static(const Partition& partition) const;
  // Link speeds for the Megatron layout (TP fastest, then DP, then PP): DP peers share a node when tp*dp fits
  // in a node (NVLink), else each GPU uses its share of the node's NICs; pipeline neighbours likewise.
  CommSpec Comm() const;

 private:
  void LayerCostsFor(const std::vector<LayerWorkload>& work, std::vector<LayerCost>& out) const;

  const ModelSpec& model_;
  const CostModel& cost_;
  ClusterSpec cluster_;
  ParallelConfig parallel_;
  std::vector<Layer> layers_;
  std::vector<int64_t> hidden_of_layer_;  // width of a layer's component (for TP collectives)
};

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/plan/pricing.h"
#include "core/plan/collective.h"
#include "core/plan/mesh.h"
#include "core/util/numeric.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace mmtwin {
namespace {

// TP collectives of a layer's backward per forward's: 2 when it is recomputed (the rerun forward's and the
// backward's), 1 otherwise, 0 without a backward (Layer::backward kNone; such a layer is never recomputed).
double TpBackwardFactor(uint8_t recompute_flag, LayerBackward backward) {
  if (backward == LayerBackward::kNone) return 0.0;
  return recompute_flag != 0 ? 2.0 : 1.0;
}

// Adds layer `x` to its chunk: times, model FLOPs (`model_flops`, of the real tokens), stored activations under
// the recompute flag (1: recomputed from its kept input; 2: inside a checkpointed group, nothing kept;
// recompute.h), the backward transient, and `tp_us` of TP collectives per forward (TpBackwardFactor times that
// in the backward).
void AddLayer(const LayerCost& x, double model_flops, uint8_t flag, double tp_us, LayerBackward backward,
              ChunkCost& cc, BackwardTransient& transient) {
  const bool rc = flag != 0 && backward != LayerBackward::kNone;
  cc.fwd_us += x.fwd_time_us;
  cc.bwd_us += x.bwd_time_us;
  cc.bwd_weight_us += x.bwd_weight_time_us;
  cc.model_flops += model_flops;
  cc.act_bytes_no_recompute = AddBytes(cc.act_bytes_no_recompute, x.act_bytes);
  cc.act_bytes = AddBytes(cc.act_bytes, flag == 0 ? x.act_bytes : flag == 1 ? x.act_bytes_recompute : 0);
  transient.Add(flag, x.act_bytes, x.act_bytes_recompute, x.bwd_work_bytes);
  cc.tp_fwd_us += tp_us;
  cc.tp_bwd_us += tp_us * TpBackwardFactor(flag, backward);
  if (rc) cc.recompute_us += x.fwd_time_us;
}

}  // namespace

Pricer::Pricer(const ModelSpec& model, const CostModel& cost, const ClusterSpec& cluster,
               const ParallelConfig& parallel)
    : model_(model), cost_(cost), cluster_(cluster), parallel_(parallel), layers_(Layers(model)) {
  for (const Layer& l : layers_) hidden_of_layer_.push_back(model.components[l.component].tf.hidden);
  nccl_tp_ = cluster_.collectives.model == "nccl";
  if (nccl_tp_) tp_links_ = CollectiveLinksOf(cluster_);
  // Timing slots: a component's transformer blocks share one (LayerCostsFor prices them once).
  std::vector<int> block_slot(model.components.size(), -1);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    int slot = -1;
    if (l.kind == LayerKind::kTransformer) {
      if (block_slot[l.component] < 0) {
        block_slot[l.component] = num_slots_++;
        layer_of_slot_.push_back(static_cast<int>(i));
      }
      slot = block_slot[l.component];
    } else {
      slot = num_slots_++;
      layer_of_slot_.push_back(static_cast<int>(i));
    }
    slot_of_layer_.push_back(slot);
  }
  for (size_t c = 0; c < model.components.size(); ++c)
    if (model.components[c].kind == ComponentKind::kLlm) llm_component_ = static_cast<int>(c);
  if (parallel.sp > 1 && llm_component_ >= 0) {
    // The planner validated the layout (ResolveSpLayout errors name the scenario field); a failure here
    // leaves SP off.
    auto l = ResolveSpLayout(parallel.sp_method, parallel.sp_params, parallel, cluster.gpus_per_node,
                             model.components[llm_component_].tf);
    if (l.ok()) sp_ = *l;
  }
}

double Pricer::TpLayerForwardUs(int64_t tokens, int64_t hidden) const {
  const int tp = parallel_.tp;
  if (tp <= 1 || tokens <= 0 || cluster_.nvlink_bytes_per_s <= 0) return 0;
  const double bytes = static_cast<double>(tokens) * static_cast<double>(hidden) * 2;
  double one = 0;
  if (nccl_tp_) {
    // As NCCL runs them inside the node (the TP group never leaves it): with sequence parallelism an all-gather
    // and a reduce-scatter of the whole tensor, else one all-reduce (core/plan/collective.h).
    const CollectiveGroup group{tp, tp};
    const auto b = static_cast<int64_t>(bytes);
    one = parallel_.tp_sequence_parallel
              ? NcclCollective(CollectiveOp::kAllGather, b, group, tp_links_).us +
                    NcclCollective(CollectiveOp::kReduceScatter, b, group, tp_links_).us
              : NcclCollective(CollectiveOp::kAllReduce, b, group, tp_links_).us;
  } else {
    one = 2.0 * (tp - 1) / tp * bytes / cluster_.nvlink_bytes_per_s * 1e6 + cluster_.nvlink_latency_us;
  }
  return 2 * one;  // two collective points per block (attention output, MLP output)
}

double Pricer::TpExposedUs(double comm_us, double gemm_us) const {
  if (!parallel_.tp_comm_overlap || comm_us <= 0) return comm_us;
  // TE's pipelined reduce-scatter (num_splits 4, initialize_ub's default): half of the layer's collective time
  // is reduce-scatters, the last of their 4 splits runs after the last GEMM chunk.
  constexpr double kExposedFloor = 1.0 / 8.0;
  const double exposed = std::max(comm_us - std::max(gemm_us, 0.0), comm_us * kExposedFloor);
  return exposed + cluster_.device.overlap_slowdown * (comm_us - exposed);
}

void Pricer::LayerCosts(const std::vector<SampleTokens>& mb, Packing packing,
                        std::vector<LayerCost>& out) const {
  std::vector<LayerWorkload> work(model_.components.size());
  for (size_t c = 0; c < work.size(); ++c)
    work[c] = ComponentWorkload(model_, static_cast<int>(c), mb, packing);
  LayerCostsFor(work, out);
}

void Pricer::LayerCostsFor(const std::vector<LayerWorkload>& work, std::vector<LayerCost>& out) const {
  out.resize(layers_.size());
  // Identical layers (a component's transformer blocks; embedding/head are single) share one pricing: the
  // index in `out` of the component's first block, -1 before it is priced.
  thread_local std::vector<int> first_block;
  first_block.assign(model_.components.size(), -1);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    if (l.kind == LayerKind::kTransformer) {
      int& k = first_block[l.component];
      if (k < 0) {
        k = static_cast<int>(i);
        out[i] = cost_.Cost(model_, l, work[l.component]);
      } else {
        out[i] = out[k];
      }
    } else {
      out[i] = cost_.Cost(model_, l, work[l.component]);
    }
  }
}

void Pricer::PriceMicroBatch(const std::vector<SampleTokens>& mb, Packing packing, const Partition& partition,
                             const RecomputePlan& recompute, ChunkCost* out, ChunkCost* encoder) const {
  if (sp_.sp > 1) return PriceMicroBatchSp(mb, packing, partition, recompute, out);
  // Scratch reused across calls (BMP prices millions of micro-batches at scale): no allocation per call.
  thread_local std::vector<LayerWorkload> work, real;
  thread_local std::vector<LayerCost> lc, useful;
  work.resize(model_.components.size());
  for (size_t c = 0; c < work.size(); ++c)
    work[c] = ComponentWorkload(model_, static_cast<int>(c), mb, packing);
  LayerCostsFor(work, lc);
  // MFU counts useful FLOPs: a padded micro-batch computes its padding, but the model FLOPs are those of the
  // real tokens (the varlen workload).
  if (packing == Packing::kPadded) {
    real.resize(model_.components.size());
    for (size_t c = 0; c < real.size(); ++c)
      real[c] = ComponentWorkload(model_, static_cast<int>(c), mb, Packing::kVarlen);
    LayerCostsFor(real, useful);
  }
  const std::vector<LayerCost>& flops = packing == Packing::kPadded ? useful : lc;
  int64_t llm_tokens = 0;
  for (const SampleTokens& t : mb) llm_tokens += t.llm_tokens;
  const int chunks = partition.chunks();
  // A component's blocks share their TP collectives' time (its tokens and width): priced once per component.
  thread_local std::vector<double> tp_of_component;
  tp_of_component.assign(model_.components.size(), -1.0);
  // Layers [first, end) as one pass: chunk c's, or the encoders' outside the pipeline.
  auto price_range = [&](int first, int end, ChunkCost& cc) {
    cc = ChunkCost{};
    BackwardTransient transient;
    for (int i = first; i < end; ++i) {
      const LayerCost& x = lc[i];
      const uint8_t flag = i < static_cast<int>(recompute.layers.size()) ? recompute.layers[i] : 0;
      double tp_us = 0;
      if (layers_[i].kind == LayerKind::kTransformer) {
        double& t = tp_of_component[layers_[i].component];
        if (t < 0)
          t = TpExposedUs(TpLayerForwardUs(work[layers_[i].component].tokens, hidden_of_layer_[i]),
                          x.bwd_weight_time_us);
        tp_us = t;
      }
      AddLayer(x, flops[i].fwd_flops + flops[i].bwd_flops, flag, tp_us, layers_[i].backward, cc, transient);
    }
    cc.backward_transient_bytes = transient.Bytes();
  };
  for (int c = 0; c < chunks; ++c) {
    ChunkCost& cc = out[c];
    price_range(partition.bounds[c], partition.bounds[c + 1], cc);
    const int last = partition.bounds[c + 1] - 1;
    cc.send_bytes = c + 1 < chunks ? lc[last].boundary_bytes / std::max(1, parallel_.tp) : 0;
    cc.llm_tokens = llm_tokens;
  }
  // The encoders outside the pipeline: their output goes to the first chunk (split over TP, as a boundary).
  if (encoder && partition.EncoderLayers() > 0) {
    price_range(0, partition.EncoderLayers(), *encoder);
    encoder->send_bytes = lc[partition.EncoderLayers() - 1].boundary_bytes / std::max(1, parallel_.tp);
  }
}

void Pricer::PriceSlots(const std::vector<SampleTokens>& mb, Packing packing, SlotCost* out) const {
  thread_local std::vector<LayerWorkload> work;
  work.resize(model_.components.size());
  for (size_t c = 0; c < work.size(); ++c)
    work[c] = ComponentWorkload(model_, static_cast<int>(c), mb, packing);
  for (int k = 0; k < num_slots_; ++k) {
    const int i = layer_of_slot_[k];
    // The slot's layer priced as LayerCostsFor prices it (a component's first block, or the layer itself),
    // without the copies to every other block.
    const LayerCost x = cost_.Cost(model_, layers_[i], work[layers_[i].component]);
    SlotCost& y = out[k];
    y.fwd_us = x.fwd_time_us;
    y.bwd_us = x.bwd_time_us;
    y.bwd_weight_us = x.bwd_weight_time_us;
    y.boundary_bytes = x.boundary_bytes;
    y.tp_us = layers_[i].kind == LayerKind::kTransformer
                  ? TpExposedUs(TpLayerForwardUs(work[layers_[i].component].tokens, hidden_of_layer_[i]),
                                x.bwd_weight_time_us)
                  : 0.0;
  }
}

IterationTimingCache::IterationTimingCache(const Pricer& pricer, const std::vector<IterationData>& iterations,
                                           const std::vector<SampleTokens>& tokens, Packing packing)
    : pricer_(pricer) {
  const int slots = pricer.NumSlots();  // per micro-batch
  std::vector<SampleTokens> mb;
  std::vector<Pricer::SlotCost> sc(slots);
  for (const IterationData& it : iterations) {
    Iteration x;
    x.dp = static_cast<int>(it.micro_batches.size());
    x.micro_batches = x.dp ? static_cast<int>(it.micro_batches[0].size()) : 0;
    const size_t count = static_cast<size_t>(x.dp) * x.micro_batches;
    const size_t blocks = (count + kBlock - 1) / kBlock;
    x.slot_times.assign(blocks * slots * 4 * kBlock, 0.0);
    x.boundary_bytes.resize(count * slots);
    x.llm_tokens.resize(count);
    for (int r = 0; r < x.dp; ++r)
      for (int k = 0; k < x.micro_batches; ++k) {
        mb.clear();
        int64_t llm = 0;
        for (uint32_t s : it.micro_batches[r][k]) {
          mb.push_back(tokens[s]);
          llm += tokens[s].llm_tokens;
        }
        const size_t j = static_cast<size_t>(r) * x.micro_batches + k;
        pricer.PriceSlots(mb, packing, sc.data());
        const size_t b = j / kBlock, lane = j % kBlock;
        for (int q = 0; q < slots; ++q) {
          double* t = &x.slot_times[((b * slots + q) * 4) * kBlock + lane];
          t[0 * kBlock] = sc[q].fwd_us;
          t[1 * kBlock] = sc[q].bwd_us;
          t[2 * kBlock] = sc[q].bwd_weight_us;
          t[3 * kBlock] = sc[q].tp_us;
          x.boundary_bytes[j * slots + q] = sc[q].boundary_bytes;
        }
        x.llm_tokens[j] = llm;
      }
    x.dispatch = it.dispatch;
    x.dispatch_backward = it.dispatch_backward;
    x.dispatch_overhead = it.dispatch_overhead;
    iterations_.push_back(std::move(x));
  }
}

IterationCosts IterationTimingCache::Times(size_t iteration, const Partition& partition,
                                           const RecomputePlan& recompute) const {
  IterationCosts costs;
  Times(iteration, partition, recompute, &costs);
  return costs;
}

template <class Write>
void IterationTimingCache::SumChunks(const Iteration& x, const Partition& partition,
                                     const RecomputePlan& recompute, size_t j_begin, size_t j_end,
                                     Write&& write) const {
  const int slots = pricer_.NumSlots();
  const int chunks = partition.chunks();
  const size_t count = std::min(j_end, static_cast<size_t>(x.dp) * x.micro_batches);
  const int tp = std::max(1, pricer_.parallel().tp);
  const size_t nrc = recompute.layers.size();
  // The timing fields of ChunkCost (fwd_us, bwd_us, bwd_weight_us, recompute_us, tp_fwd_us, tp_bwd_us,
  // send_bytes) from the slots: the same sums, in the same layer order, as PriceMicroBatch (so equal bit for
  // bit), for kBlock micro-batches at once (one independent chain per lane).
  for (size_t b = j_begin / kBlock; b * kBlock < count; ++b) {
    const double* block = &x.slot_times[b * slots * 4 * kBlock];
    const size_t lanes = std::min<size_t>(kBlock, count - b * kBlock);
    const size_t first_lane = b * kBlock < j_begin ? j_begin - b * kBlock : 0;
    for (int c = 0; c < chunks; ++c) {
      double fwd[kBlock] = {}, bwd[kBlock] = {}, bwd_w[kBlock] = {}, tp_f[kBlock] = {}, tp_b[kBlock] = {},
             rec[kBlock] = {};
      for (int i = partition.bounds[c]; i < partition.bounds[c + 1]; ++i) {
        const double* t = block + pricer_.SlotOfLayer(i) * 4 * kBlock;
        const LayerBackward backward = pricer_.layers()[i].backward;
        const uint8_t flag = static_cast<size_t>(i) < nrc ? recompute.layers[i] : 0;
        const bool rc = flag != 0 && backward != LayerBackward::kNone;
        const double tp_factor = TpBackwardFactor(flag, backward);
        for (int l = 0; l < kBlock; ++l) {
          fwd[l] += t[l];
          bwd[l] += t[kBlock + l];
          bwd_w[l] += t[2 * kBlock + l];
          tp_f[l] += t[3 * kBlock + l];
          tp_b[l] += t[3 * kBlock + l] * tp_factor;
        }
        if (rc)
          for (int l = 0; l < kBlock; ++l) rec[l] += t[l];
      }
      const int last = partition.bounds[c + 1] - 1;
      for (size_t l = first_lane; l < lanes; ++l) {
        const size_t j = b * kBlock + l;
        ChunkTimes k;
        k.fwd_us = fwd[l];
        k.bwd_us = bwd[l];
        k.bwd_weight_us = bwd_w[l];
        k.recompute_us = rec[l];
        k.tp_fwd_us = tp_f[l];
        k.tp_bwd_us = tp_b[l];
        k.send_bytes = c + 1 < chunks ? x.boundary_bytes[j * slots + pricer_.SlotOfLayer(last)] / tp : 0;
        write(j, c, k);
      }
    }
  }
}

void IterationTimingCache::Times(size_t iteration, const Partition& partition, const RecomputePlan& recompute,
                                 IterationCosts* out) const {
  const Iteration& x = iterations_[iteration];
  IterationCosts& costs = *out;
  const int chunks = partition.chunks();
  const size_t count = static_cast<size_t>(x.dp) * x.micro_batches;
  // Every ChunkCost is overwritten whole below: a buffer of the right size is reused as it is.
  if (costs.dp != x.dp || costs.micro_batches != x.micro_batches || costs.chunks != chunks ||
      costs.costs.size() != count * chunks)
    costs.Resize(x.dp, x.micro_batches, chunks);
  costs.dispatch = x.dispatch;
  costs.dispatch_backward = x.dispatch_backward;
  costs.dispatch_overhead = x.dispatch_overhead;
  SumChunks(x, partition, recompute, 0, count, [&](size_t j, int c, const ChunkTimes& k) {
    ChunkCost& cc = costs.costs[j * chunks + c];
    cc = ChunkCost{};
    cc.fwd_us = k.fwd_us;
    cc.bwd_us = k.bwd_us;
    cc.bwd_weight_us = k.bwd_weight_us;
    cc.recompute_us = k.recompute_us;
    cc.tp_fwd_us = k.tp_fwd_us;
    cc.tp_bwd_us = k.tp_bwd_us;
    cc.send_bytes = k.send_bytes;
    cc.llm_tokens = x.llm_tokens[j];
  });
}

bool IterationTimingCache::HasDispatch(size_t iteration) const {
  const Iteration& x = iterations_[iteration];
  for (const auto* lists : {&x.dispatch, &x.dispatch_backward})
    for (const std::vector<DispatchTransfer>& list : *lists)
      if (!list.empty()) return true;
  return false;
}

void IterationTimingCache::PackedTimes(size_t iteration, const Partition& partition,
                                       const RecomputePlan& recompute, std::vector<ChunkTimes>* out) const {
  const Iteration& x = iterations_[iteration];
  const int chunks = partition.chunks();
  out->resize(static_cast<size_t>(x.dp) * x.micro_batches * chunks);
  ChunkTimes* o = out->data();
  SumChunks(x, partition, recompute, 0, out->size() / std::max(1, chunks),
            [&](size_t j, int c, const ChunkTimes& k) { o[j * chunks + c] = k; });
}

void IterationTimingCache::PackedReplicaTimes(size_t iteration, int replica, const Partition& partition,
                                              const RecomputePlan& recompute,
                                              std::vector<ChunkTimes>* out) const {
  const Iteration& x = iterations_[iteration];
  const int chunks = partition.chunks();
  const size_t m = static_cast<size_t>(x.micro_batches), first = static_cast<size_t>(replica) * m;
  out->resize(m * chunks);
  ChunkTimes* o = out->data();
  SumChunks(x, partition, recompute, first, first + m,
            [&](size_t j, int c, const ChunkTimes& k) { o[(j - first) * chunks + c] = k; });
}

IterationCosts Pricer::PriceIteration(const IterationData& it, const std::vector<SampleTokens>& tokens,
                                      Packing packing, const Partition& partition,
                                      const RecomputePlan& recompute) const {
  IterationCosts costs;
  const int d = static_cast<int>(it.micro_batches.size());
  const int m = d ? static_cast<int>(it.micro_batches[0].size()) : 0;
  costs.Resize(d, m, partition.chunks());
  costs.dispatch = it.dispatch;
  costs.dispatch_backward = it.dispatch_backward;
  costs.dispatch_overhead = it.dispatch_overhead;
  const bool encoder = partition.EncoderLayers() > 0 && sp_.sp <= 1;
  if (encoder) costs.encoder.assign(static_cast<size_t>(d) * m, ChunkCost{});
  std::vector<SampleTokens> mb;
  for (int r = 0; r < d; ++r)
    for (int k = 0; k < m; ++k) {
      mb.clear();
      for (uint32_t s : it.micro_batches[r][k]) mb.push_back(tokens[s]);
      PriceMicroBatch(mb, packing, partition, recompute, &costs.At(r, k, 0),
                      encoder ? &costs.encoder[static_cast<size_t>(r) * m + k] : nullptr);
    }
  if (sp_.sp <= 1) return costs;
  // Every SP rank of DP rank r runs r's micro-batches in lockstep (GraphParallel): replica r * S + s.
  const int S = sp_.sp, C = partition.chunks();
  IterationCosts out;
  out.Resize(d * S, m, C);
  for (int r = 0; r < d; ++r)
    for (int k = 0; k < m; ++k)
      for (int c = 0; c < C; ++c) {
        const ChunkCost& x = costs.At(r, k, c);
        for (int s = 0; s < S; ++s) {
          ChunkCost& y = out.At(r * S + s, k, c);
          y = x;
          // The micro-batch's tokens shared out (the first ranks take the remainder): the S ranks sum to it.
          y.llm_tokens = x.llm_tokens / S + (s < x.llm_tokens % S ? 1 : 0);
        }
      }
  auto remap = [S](std::vector<std::vector<DispatchTransfer>> v) {
    for (auto& list : v)
      for (DispatchTransfer& t : list) {
        t.src_rank *= S;
        t.dst_rank *= S;
      }
    return v;
  };
  out.dispatch = remap(it.dispatch);
  out.dispatch_backward = remap(it.dispatch_backward);
  out.dispatch_overhead = it.dispatch_overhead;
  return out;
}

namespace {

// How sequence parallelism shards one micro-batch (pricing.h): stage one spreads the vision units, stage two
// pads and shards the LLM samples.
struct SpShards {
  int64_t llm_tokens = 0;         // the micro-batch's (all ranks)
  double unit_share = 0;          // the busiest rank's share of the vision units: ceil(units / S) / units
  std::vector<int64_t> lens;      // the LLM samples' tokens, padded to the layout's units
  std::vector<int64_t> spans;     // per sample of `lens`, its bidirectional vision span (empty: causal)
  SpMakespan makespan;            // cornstarch-cp: the blocks' split (SpSplit::kMakespan)
  int64_t padded = 0;             // their sum
  int64_t rank_tokens = 0;        // LLM tokens on the busiest rank
  double f = 1;                   // one-stage sharding: the busiest rank's LLM tokens over the mean
  double redistribute_bytes = 0;  // two-stage: the vision embeddings' all-to-all per GPU
};

SpShards ShardForSp(const ModelSpec& model, const SpLayout& sp, int llm_component, int tp,
                    const std::vector<SampleTokens>& mb) {
  const int S = sp.sp;
  SpShards out;
  int64_t units = 0;
  for (const SampleTokens& t : mb) {
    units += t.vision_units;
    out.llm_tokens += t.llm_tokens;
  }
  // MM-SP stage one: tiles / frames spread evenly, ceil(units / S) on the busiest rank.
  out.unit_share = units > 0 ? static_cast<double>((units + S - 1) / S) / static_cast<double>(units) : 0;
  // Stage two: every LLM sample padded to the layout's units and sharded evenly. The SP group holds the
  // micro-batch as one packed sequence (seqpar.h) whatever the data policy's packing: a sample is padded to the
  // layout's units only, never to the micro-batch's longest sample, under both shardings.
  const int64_t pad_units = SpPadUnits(sp);
  std::vector<int64_t> sample_len(mb.size(), 0);  // each sample's padded LLM tokens (0: none)
  for (size_t j = 0; j < mb.size(); ++j)
    if (mb[j].llm_tokens > 0) {
      sample_len[j] = SpPaddedTokens(mb[j].llm_tokens, pad_units);
      out.lens.push_back(sample_len[j]);
      if (model.bidirectional_vision) out.spans.push_back(VisionSpanTokens(mb[j]));
      out.padded += sample_len[j];
    }
  out.rank_tokens = out.padded / S;
  if (sp.split == SpSplit::kMakespan) {  // the busiest rank by tokens (its linear work and activations)
    out.makespan = MakespanSplit(sp.ring, sp.block_tokens, out.lens, out.spans);
    out.rank_tokens = *std::max_element(out.makespan.tokens.begin(), out.makespan.tokens.end());
  }  // (two-stage only, ResolveSpLayout: the vision embeddings' redistribution below applies)
  // One-stage sharding (SpLayout::one_stage): the sequence is cut where the frames are. Frames are dealt
  // round-robin over the S ranks (global frame g on rank g mod S), sample j's text (and its padding to the
  // layout's units) goes to rank j mod S; the busiest rank's LLM tokens n_max against the mean n = padded / S
  // (the same tokens two-stage shards): its linear work, its ring blocks (attention and KV bytes) and its
  // all-to-all bytes scale by f = n_max / n. Two-stage: the vision embeddings move from the
  // frame layout to the even token shards, an all-to-all of (S - 1) / S of each rank's vision tokens x LLM
  // hidden x 2 bytes (and their gradients back), charged before the LLM.
  // Each unit of a sample carries its share of the sample's vision LLM tokens (equal for tiles and frames at
  // one resolution; an if_larger image carries what its size gives).
  double vision_llm = 0;
  std::vector<double> load(S, 0.0);
  int64_t g = 0;
  for (size_t j = 0; j < mb.size(); ++j) {
    const double vis =
        std::min(static_cast<double>(mb[j].llm_tokens), static_cast<double>(mb[j].vision_llm_tokens));
    vision_llm += vis;
    const double tpf = mb[j].vision_units > 0 ? static_cast<double>(mb[j].vision_llm_tokens) /
                                                    static_cast<double>(mb[j].vision_units)
                                              : 0;
    for (int64_t u = 0; u < mb[j].vision_units; ++u) load[(g++) % S] += tpf;
    load[j % S] += static_cast<double>(sample_len[j]) - vis;
  }
  const double total = std::accumulate(load.begin(), load.end(), 0.0);
  if (sp.one_stage && total > 0) {
    out.f = *std::max_element(load.begin(), load.end()) / (total / S);
    out.rank_tokens = static_cast<int64_t>(std::ceil(static_cast<double>(out.padded) / S * out.f));
  } else if (llm_component >= 0) {
    const double h = static_cast<double>(model.components[llm_component].tf.hidden);
    out.redistribute_bytes = vision_llm / S * h * 2.0 * (S - 1) / S / tp;
  }
  return out;
}

// One SP rank's workload of each component: the LLM's sharded tokens (its attention priced per ring step,
// SpAttentionOf), the vision encoder's and projector's share of the units, an even share of the rest.
std::vector<LayerWorkload> RankWorkloads(const ModelSpec& model, const std::vector<LayerWorkload>& whole,
                                         const SpShards& sh, int S) {
  std::vector<LayerWorkload> rank(whole.size());
  for (size_t c = 0; c < whole.size(); ++c) {
    const Component& comp = model.components[c];
    LayerWorkload w = whole[c];
    if (comp.kind == ComponentKind::kLlm) {
      w.tokens = sh.rank_tokens;
      w.attn_pairs = 0;  // priced below, per ring step
    } else if (comp.kind == ComponentKind::kVision || comp.kind == ComponentKind::kProjector) {
      w.tokens = static_cast<int64_t>(std::ceil(static_cast<double>(w.tokens) * sh.unit_share));
      w.attn_pairs *= sh.unit_share;
      w.sequences = (w.sequences + S - 1) / S;
    } else {  // audio and the rest: an even share
      w.tokens = (w.tokens + S - 1) / S;
      w.attn_pairs /= S;
      w.sequences = (w.sequences + S - 1) / S;
    }
    rank[c] = w;
  }
  return rank;
}

// A GPU's link to its SP peers: NVLink inside a node, else its share of the node's NICs.
void SpLink(const ClusterSpec& cluster, bool in_node, double* bw, double* lat) {
  *bw = in_node ? cluster.nvlink_bytes_per_s : cluster.gpu_nic_bytes_per_s();
  *lat = in_node ? cluster.nvlink_latency_us : cluster.nic_latency_us;
}

// One all-gather (or reduce-scatter) over the SP ring group, `bytes` per rank (the gathered output, or the
// reduce-scatter's input, as nccl-tests counts them): NCCL's choice (core/plan/collective.h, its ring inside one
// node) where the cluster's collectives are "nccl" and the ring sits in one node; else a flat ring of R - 1 steps
// over the SP link (bw, lat: across nodes the GPU's NIC share). Across nodes NCCL's rings would drive every NIC
// of a node, but the SimGrid engine replays an SP collective's bytes as one transfer to the ring successor
// (sim/engine/replay.cc AddSpCollective), which the flat ring's time bounds: the engines agree without
// contention only so (tests/engine/seqpar_engine_slow_test.cc).
double SpRingCollectiveUs(CollectiveOp op, const ClusterSpec& cluster, const SpLayout& sp, double bytes,
                          double bw, double lat) {
  const int R = sp.ring;
  if (R <= 1 || bytes <= 0) return 0;
  if (cluster.collectives.model == "nccl" && sp.ring_in_node)
    return NcclCollective(op, static_cast<int64_t>(bytes), {R, R}, CollectiveLinksOf(cluster)).us;
  return (R - 1) * lat + (bw > 0 ? (R - 1) * bytes / R / bw * 1e6 : 0);
}

// One LLM block's attention on the busiest SP rank and its SP communication, per layer.
struct SpAttention {
  double attn_fwd_us = 0, attn_bwd_us = 0;  // attention compute (into fwd_us / bwd_us)
  double sp_fwd_us = 0, sp_bwd_us = 0;      // exposed ring transfer + Ulysses all-to-alls
  int64_t sp_bytes = 0, ring_layer_bytes = 0, ring_bwd_layer_bytes = 0, a2a_layer_bytes = 0;
  SpBufferBytes buffers;  // the layer's SP buffers (SpAttentionBufferBytes)
  int32_t a2a_layer_steps = 0;
};

// The LLM block's attention on this rank, priced per ring step and implementation (seqpar.h, "ring
// implementations"): each step's attention kernel from the cost model's time per square pair and per query row
// (`block`: an LLM transformer layer; `w0`: its rank workload without attention), plus the implementation's
// memory-bound kernels and launches, scheduled by RingScheduleUs.
SpAttention SpAttentionOf(const ModelSpec& model, const CostModel& cost, const ClusterSpec& cluster,
                          const SpLayout& sp, const Layer& block, const LayerWorkload& w0, int tp,
                          const SpShards& sh) {
  const int U = sp.ulysses, R = sp.ring;
  const TransformerConfig& tf = model.components[block.component].tf;
  SpAttention a;
  const bool makespan = sp.split == SpSplit::kMakespan;
  std::vector<std::vector<double>> steps;
  SpStepRows rows;
  if (makespan) {  // no ring steps: a rank's blocks against the gathered KV, in column 0
    steps.assign(R, std::vector<double>(R, 0.0));
    rows.q = rows.kv = steps;
    for (int r = 0; r < R; ++r) {
      steps[r][0] = sh.makespan.pairs[r];
      rows.q[r][0] = static_cast<double>(sh.makespan.tokens[r]);
      rows.kv[r][0] = static_cast<double>(sh.padded);
    }
  } else {
    steps = RankStepPairs(sp.split, R, sh.lens, sh.spans);
    rows = RankStepRows(sp.split, R, sh.lens);
  }
  for (auto* m : {&steps, &rows.q, &rows.kv})
    for (auto& row : *m)
      for (double& v : row) v *= sh.f;
  double ref_pairs = 0;
  for (const auto& row : steps)
    for (double v : row) ref_pairs = std::max(ref_pairs, v);
  ref_pairs = std::max(ref_pairs / U, 1.0);
  // The cost model's attention on the rank's w0.tokens query rows: c1 at ref_pairs, c2 at twice that. Per
  // square pair (c2 - c1) / ref_pairs; what c1 - c0 holds beyond the pairs is the per-query-row term (the
  // analytic curve's attn_half_span x T), per row of all heads: / T. Both are per GPU with all its heads; a
  // ring step computes heads / U of them (pairs and rows / U).
  LayerWorkload w1 = w0, w2 = w0;
  w1.attn_pairs = ref_pairs;
  w2.attn_pairs = 2 * ref_pairs;
  const LayerCost c0 = cost.Cost(model, block, w0), c1 = cost.Cost(model, block, w1),
                  c2 = cost.Cost(model, block, w2);
  auto attn_bwd = [](const LayerCost& c) { return c.bwd_time_us - c.bwd_weight_time_us; };
  const double per_pair_fwd = std::max(0.0, c2.fwd_time_us - c1.fwd_time_us) / ref_pairs;
  const double per_pair_bwd = std::max(0.0, attn_bwd(c2) - attn_bwd(c1)) / ref_pairs;
  const double T0 = std::max<double>(1.0, static_cast<double>(w0.tokens));
  const double per_row_fwd = std::max(0.0, c1.fwd_time_us - c0.fwd_time_us - per_pair_fwd * ref_pairs) / T0;
  const double per_row_bwd = std::max(0.0, attn_bwd(c1) - attn_bwd(c0) - per_pair_bwd * ref_pairs) / T0;
  // Memory-bound kernels and launches (the cost model's device figures: hbm x hbm_peak_fraction, the fixed
  // time per kernel).
  const DeviceSpec& dev = cluster.device;
  const double hbm = dev.hbm_bytes_per_s * (dev.hbm_peak_fraction > 0 ? dev.hbm_peak_fraction : 1.0);
  const double launch_us = dev.kernel_overhead_us;
  auto mem_us = [&](double bytes, int kernels) {
    return (hbm > 0 ? bytes / hbm * 1e6 : 0.0) + kernels * launch_us;
  };
  // Elements per row on this GPU: the output (and dq) of its heads, the K and V (and dK, dV) of its KV heads.
  const int kv_heads = tf.kv_heads > 0 ? tf.kv_heads : tf.heads;
  const double hd =
      tf.head_dim > 0 ? tf.head_dim : (tf.heads > 0 ? static_cast<double>(tf.hidden) / tf.heads : 0);
  const double q_elems = tf.heads * hd / (U * std::max(1, tp));
  const double kv_elems =
      2.0 * (sp.replicate_kv ? std::max(kv_heads, U) : kv_heads) * hd / (U * std::max(1, tp));
  double bw = 0, lat = 0;
  if (R > 1) {
    SpLink(cluster, sp.ring_in_node, &bw, &lat);
    const double kv = static_cast<double>(
        BytesOf(static_cast<double>(RingStepKvBytes(tf, sh.padded / R, U, tp, sp.replicate_kv)) * sh.f));
    auto xfer = [&](double bytes) { return bytes > 0 ? lat + (bw > 0 ? bytes / bw * 1e6 : 0) : 0.0; };
    const SpRingImpl impl = SpRingImplOf(sp.method);
    std::vector<std::vector<double>> cf(R, std::vector<double>(R, 0.0)), cb = cf, sf = cf, sb = cf;
    std::vector<double> tf_us(R, 0.0), tb_us(R, 0.0);
    double tail_b = 0;
    double ex_f = 0, ex_b = 0, pf = 0, pb = 0;
    // The step's attention kernel at its block: pairs and query rows over U.
    auto kernel_f = [&](int r, int s) {
      return (steps[r][s] * per_pair_fwd + rows.q[r][s] * per_row_fwd) / U;
    };
    auto kernel_b = [&](int r, int s) {
      return (steps[r][s] * per_pair_bwd + rows.q[r][s] * per_row_bwd) / U;
    };
    const double T = rows.q[0][0];  // the rank's query rows (step 0 covers them all)
    if (impl == SpRingImpl::kCornstarchAllGather) {
      // The busiest rank's attention (its blocks against the whole gathered KV), in G head groups; each
      // group's K and V (repeated to every query head) all-gathered on a side stream, pipelined with the
      // groups' attention (PipelinedGatherUs); the backward gathers again and reduce-scatters each group's dK,
      // dV on the compute stream, exposed.
      const int G = std::max(1, tf.heads / std::max(1, tp) / std::max(1, sp.heads_stride));
      double att_f = 0, att_b = 0, T_max = 0;
      for (int r = 0; r < R; ++r) {
        att_f = std::max(att_f, steps[r][0] * per_pair_fwd + rows.q[r][0] * per_row_fwd);
        att_b = std::max(att_b, steps[r][0] * per_pair_bwd + rows.q[r][0] * per_row_bwd);
        T_max = std::max(T_max, rows.q[r][0]);
      }
      const double q_all = tf.heads * hd / std::max(1, tp);      // elements per row of Q (and of K, V
      const double kv_rank = 2.0 * sh.padded / R * q_all * 2.0;  // repeated): one rank's K, V bytes
      // K and V of the group's heads, each an all-gather of R x kv_rank / (2 G) bytes per rank; the backward's
      // reduce-scatters of dK, dV the same sizes.
      const double group_bytes = R * kv_rank / (2.0 * G);
      const double gather_us =
          2.0 * SpRingCollectiveUs(CollectiveOp::kAllGather, cluster, sp, group_bytes, bw, lat);
      const double scatter_us =
          2.0 * SpRingCollectiveUs(CollectiveOp::kReduceScatter, cluster, sp, group_bytes, bw, lat);
      // Per group: q, k, v made contiguous and the output kept (bf16 copies); one kernel each.
      const double copy_f = mem_us(kBf16CopyBytes * T_max * q_all * 3.0 / G, 3);
      const double copy_b = mem_us(kBf16CopyBytes * T_max * q_all * 4.0 / G, 4) +
                            mem_us(kBf16CopyBytes / 2 * R * kv_rank / 2.0 / G, 1);  // the zeroed full dK, dV
      const double group_f = att_f / G + launch_us + copy_f;
      const double group_b = att_b / G + kFlashBwdKernels * launch_us + copy_b;
      const double fwd_us = PipelinedGatherUs(G, gather_us, group_f, 0.0);
      const double bwd_us = PipelinedGatherUs(G, gather_us, group_b, scatter_us);  // + the reduce-scatter
      a.attn_fwd_us = G * group_f - launch_us;  // the layer's own kernel launch is the cost model's
      a.attn_bwd_us = G * group_b - 2 * launch_us;
      a.sp_fwd_us += fwd_us - G * group_f;
      a.sp_bwd_us += bwd_us - G * group_b;
      a.ring_layer_bytes = BytesOf((R - 1) * kv_rank);
      a.ring_bwd_layer_bytes = BytesOf(2.0 * (R - 1) * kv_rank);
    } else if (impl == SpRingImpl::kTeAllGather) {
      // KV all-gathered once (K and V: two ring collectives), exposed; then the rank's two chunks attend to their
      // causal prefixes: the same pairs as the ring's steps, T query rows, one extra kernel.
      // K and V gathered as two collectives of R x kv / 2 bytes per rank (NCCL's choice, or the ring).
      const double ag_us =
          2.0 * SpRingCollectiveUs(CollectiveOp::kAllGather, cluster, sp, R * kv / 2.0, bw, lat);
      const double rs_us =
          2.0 * SpRingCollectiveUs(CollectiveOp::kReduceScatter, cluster, sp, R * kv / 2.0, bw, lat);
      double pairs_f = 0, pairs_b = 0;
      for (int r = 0; r < R; ++r) {
        double f = 0, g = 0;
        for (int s = 0; s < R; ++s) {
          f += steps[r][s] * per_pair_fwd / U;
          g += steps[r][s] * per_pair_bwd / U;
        }
        pairs_f = std::max(pairs_f, f);
        pairs_b = std::max(pairs_b, g);
      }
      const double gathered = R * kv / 2.0;  // bf16 elements of the gathered K and V
      pf = pairs_f + T * per_row_fwd / U + launch_us + mem_us(kBf16CopyBytes * gathered, 2) +
           mem_us(2.0 * kBf16CopyBytes * T * q_elems, 4);  // q halves made contiguous, outputs merged
      pb = pairs_b + T * per_row_bwd / U + kFlashBwdKernels * 2 * launch_us - 2 * launch_us +
           mem_us(kBf16CopyBytes * gathered, 2) + mem_us(kBf16CopyBytes * T * q_elems, 2) +
           mem_us(kBf16AddBytes * kv_elems * T * (2.0 * R + 1) / 2.0, 4);  // dK, dV over the two prefixes
      a.attn_fwd_us = pf;
      a.attn_bwd_us = pb;
      a.sp_fwd_us += ag_us;
      a.sp_bwd_us += ag_us + rs_us;  // all-gather again, reduce-scatter dK, dV
      a.ring_layer_bytes = BytesOf((R - 1) * kv);
      a.ring_bwd_layer_bytes = BytesOf(2.0 * (R - 1) * kv);
    } else {
      const bool rfa = impl == SpRingImpl::kRingFlashAttn;
      for (int r = 0; r < R; ++r)
        for (int s = 0; s < R; ++s) {
          const bool work = rows.q[r][s] > 0;
          const double qe = rows.q[r][s] * q_elems, kve = rows.kv[r][s] * kv_elems;
          // Forward: the step's kernel (step 0's is the layer's own), then its update.
          cf[r][s] = work ? kernel_f(r, s) + (s > 0 ? launch_us : 0.0) : 0.0;
          // Backward: the step's kernels and dq's accumulation.
          cb[r][s] =
              work ? kernel_b(r, s) + (s > 0 ? kFlashBwdKernels : kFlashBwdKernels - 2) * launch_us : 0.0;
          if (rfa) {
            if (work) {
              if (s == 0) {
                cf[r][s] += mem_us(kCastBytes * qe, 1);          // out = block_out.to(fp32)
                cb[r][s] += mem_us(kCastBytes * (qe + kve), 3);  // dq, dk, dv .to(fp32)
              } else {
                cf[r][s] += sp.fused_update ? mem_us(kRfaUpdateFusedBytes * qe, 1)
                                            : mem_us(kRfaUpdateUnfusedBytes * qe, kRfaUpdateUnfusedKernels);
                if (sp.split == SpSplit::kZigzag && s > r) cf[r][s] += mem_us(kRfaSliceCopyBytes * qe, 2);
                cb[r][s] += mem_us(kFp32AccumBytes * qe, 1);  // dq += dq_buffer
                sb[r][s] = mem_us(kFp32AccumBytes * kve, 2);  // dk, dv += after the dKV wait
              }
            }
          } else {  // TransformerEngine P2P
            if (work) {
              cb[r][s] += mem_us((s == 0 ? kBf16CopyBytes : kBf16AddBytes) * qe, 1);  // dq copy_ / add_
              sb[r][s] = mem_us((s == 0 ? kBf16CopyBytes : kBf16AddBytes) * kve, 2);  // dk, dv
            }
          }
        }
      // Transfers per step. ring-flash-attention: forward KV (bf16) on every step but the last; backward KV on
      // every step but the last and the previous step's dK, dV in fp32 (2 kv) on every step but the first, the
      // last step's dK, dV after the loop (exposed). TransformerEngine: KV then KV + dKV in one bf16 buffer, the
      // last step dKV only; nothing after the loop.
      for (int s = 0; s < R; ++s) {
        tf_us[s] = s + 1 < R ? xfer(kv) : 0.0;
        const double bytes_b = rfa ? (s + 1 < R ? kv : 0.0) + (s > 0 ? 2.0 * kv : 0.0)
                                   : (s + 1 < R ? kv : 0.0) + (s > 0 ? kv : 0.0);
        tb_us[s] = xfer(bytes_b);
      }
      tail_b = rfa ? xfer(2.0 * kv) : 0.0;
      // Per-layer work before and after the loop, on every rank.
      for (int r = 0; r < R; ++r) {
        const double qe = T * q_elems, kve = rows.kv[r][0] * kv_elems;
        if (rfa) {
          sf[r][R - 1] += mem_us(kCastBytes * qe, 1);          // out.to(q.dtype)
          sb[r][R - 1] += mem_us(kCastBytes * (qe + kve), 3);  // dq, dk, dv .to(q.dtype)
        } else {
          sf[r][0] += mem_us(kBf16CopyBytes * kve, 1);  // torch.cat of K and V into the P2P buffer
          double corr = 0;  // the output corrections after the loop, one fused kernel per step
          for (int s = 0; s < R; ++s)
            if (rows.q[r][s] > 0)
              corr += mem_us((s == 0 ? kBf16CopyBytes : kBf16AddBytes) * rows.q[r][s] * q_elems, 1);
          sf[r][R - 1] += corr;
        }
      }
      pf = RingScheduleUs(cf, sf, tf_us, 0.0, &ex_f);
      pb = RingScheduleUs(cb, sb, tb_us, tail_b, &ex_b);
      a.attn_fwd_us = pf - ex_f;
      a.attn_bwd_us = pb - ex_b;
      a.sp_fwd_us += ex_f;
      a.sp_bwd_us += ex_b;
      a.ring_layer_bytes = BytesOf((R - 1) * kv);
      a.ring_bwd_layer_bytes = BytesOf(rfa ? (R - 1) * kv + R * 2.0 * kv : 2.0 * (R - 1) * kv);
    }
    a.sp_bytes += a.ring_layer_bytes;
  } else {
    a.attn_fwd_us = (steps[0][0] * per_pair_fwd + rows.q[0][0] * per_row_fwd) / U;
    a.attn_bwd_us = (steps[0][0] * per_pair_bwd + rows.q[0][0] * per_row_bwd) / U;
  }
  a.buffers = SpAttentionBufferBytes(
      sp, tf, makespan ? sh.rank_tokens : BytesOf(static_cast<double>(sh.padded / R) * sh.f), tp);
  if (U > 1) {
    SpLink(cluster, sp.ulysses_in_node, &bw, &lat);
    const int64_t a2a =
        UlyssesAllToAllBytes(tf, sh.rank_tokens, U, tp, sp.replicate_kv);  // rank_tokens has f
    const double t = 4.0 * (U - 1) * lat + (bw > 0 ? a2a / bw * 1e6 : 0);
    a.sp_fwd_us += t;
    a.sp_bwd_us += t;
    a.sp_bytes += a2a;
    a.a2a_layer_bytes = a2a;
    a.a2a_layer_steps = 4 * (U - 1);
  }
  return a;
}

// Two-stage sharding's redistribution all-to-all: (S - 1) latencies + bytes / bw over the ring's link.
double RedistributeUs(const ClusterSpec& cluster, const SpLayout& sp, double bytes) {
  if (!(bytes > 0)) return 0;
  double bw = 0, lat = 0;
  SpLink(cluster, sp.ring_in_node, &bw, &lat);
  return (sp.sp - 1) * lat + (bw > 0 ? bytes / bw * 1e6 : 0);
}

// An LLM block's SP communication added to its chunk (the recompute repeats the forward's).
void AddSpBlock(const SpAttention& a, bool rc, ChunkCost& cc) {
  cc.sp_fwd_us += a.sp_fwd_us;
  cc.sp_bwd_us += a.sp_bwd_us + (rc ? a.sp_fwd_us : 0);  // the recompute repeats the forward's
  cc.sp_bytes = AddBytes(cc.sp_bytes, a.sp_bytes);
  cc.sp_ring_fwd_bytes = AddBytes(cc.sp_ring_fwd_bytes, a.ring_layer_bytes);
  cc.sp_ring_bwd_bytes =  // KV + dKV (+ the recompute's KV)
      AddBytes(cc.sp_ring_bwd_bytes, AddBytes(a.ring_bwd_layer_bytes, rc ? a.ring_layer_bytes : 0));
  cc.sp_a2a_fwd_bytes = AddBytes(cc.sp_a2a_fwd_bytes, a.a2a_layer_bytes);
  cc.sp_a2a_bwd_bytes = AddBytes(cc.sp_a2a_bwd_bytes, a.a2a_layer_bytes * (rc ? 2 : 1));
  cc.sp_a2a_fwd_steps += a.a2a_layer_steps;
  cc.sp_a2a_bwd_steps += a.a2a_layer_steps * (rc ? 2 : 1);
}

}  // namespace

void Pricer::PriceMicroBatchSp(const std::vector<SampleTokens>& mb, Packing /*packing*/,
                               const Partition& partition, const RecomputePlan& recompute,
                               ChunkCost* out) const {
  const int S = sp_.sp, tp = std::max(1, parallel_.tp);
  const int nc = static_cast<int>(model_.components.size());
  const SpShards sh = ShardForSp(model_, sp_, llm_component_, tp, mb);  // packed whatever `packing`
  // Whole micro-batch (for the useful FLOPs) and per-rank workloads.
  std::vector<LayerWorkload> whole(nc);
  for (int c = 0; c < nc; ++c) whole[c] = ComponentWorkload(model_, c, mb, Packing::kVarlen);
  const std::vector<LayerWorkload> rank = RankWorkloads(model_, whole, sh, S);
  std::vector<LayerCost> lc, full;
  LayerCostsFor(rank, lc);
  LayerCostsFor(whole, full);
  SpAttention attn;
  if (llm_component_ >= 0 && sh.rank_tokens > 0) {
    Layer block{llm_component_, LayerKind::kTransformer};
    for (const Layer& l : layers_)
      if (l.component == llm_component_ && l.kind == LayerKind::kTransformer) block = l;
    attn = SpAttentionOf(model_, cost_, cluster_, sp_, block, rank[llm_component_], tp, sh);
  }
  const double redistribute_us = RedistributeUs(cluster_, sp_, sh.redistribute_bytes);
  thread_local std::vector<double> tp_of_component;  // as PriceMicroBatch: per component, once
  tp_of_component.assign(model_.components.size(), -1.0);
  const int chunks = partition.chunks();
  for (int c = 0; c < chunks; ++c) {
    ChunkCost& cc = out[c];
    cc = ChunkCost{};
    BackwardTransient transient;
    bool has_block = false, recomputes_block = false;
    for (int i = partition.bounds[c]; i < partition.bounds[c + 1]; ++i) {
      LayerCost x = lc[i];
      const bool llm = layers_[i].component == llm_component_;
      if (llm && layers_[i].kind == LayerKind::kEmbedding && redistribute_us > 0) {
        cc.sp_fwd_us += redistribute_us;
        cc.sp_bwd_us += redistribute_us;
        cc.sp_bytes = AddBytes(cc.sp_bytes, BytesOf(sh.redistribute_bytes));
      }
      const uint8_t flag = i < static_cast<int>(recompute.layers.size()) ? recompute.layers[i] : 0;
      if (llm && layers_[i].kind == LayerKind::kTransformer) {
        x.fwd_time_us += attn.attn_fwd_us;
        x.bwd_time_us += attn.attn_bwd_us;
        AddSpBlock(attn, flag != 0, cc);
        has_block = true;
        recomputes_block = recomputes_block || flag != 0;
      }
      double tp_us = 0;
      if (layers_[i].kind == LayerKind::kTransformer) {
        double& t = tp_of_component[layers_[i].component];
        if (t < 0)
          t = TpExposedUs(TpLayerForwardUs(rank[layers_[i].component].tokens, hidden_of_layer_[i]),
                          x.bwd_weight_time_us);
        tp_us = t;
      }
      AddLayer(x, (full[i].fwd_flops + full[i].bwd_flops) / S, flag, tp_us, layers_[i].backward, cc,
               transient);
    }
    // The SP buffers of one attention layer at a time (SpAttentionBufferBytes): the forward's on top of the
    // activations held after it, the backward's (or a recomputed layer's forward's) with the backward's
    // transient.
    cc.backward_transient_bytes = transient.Bytes();
    if (has_block) {
      cc.forward_transient_bytes = attn.buffers.forward;
      cc.backward_transient_bytes =
          AddBytes(cc.backward_transient_bytes,
                   std::max(attn.buffers.backward, recomputes_block ? attn.buffers.forward : int64_t{0}));
    }
    const int last = partition.bounds[c + 1] - 1;
    cc.send_bytes = c + 1 < chunks ? lc[last].boundary_bytes / tp : 0;
    cc.llm_tokens = sh.llm_tokens;
  }
}

std::vector<ChunkStatic> Pricer::Static(const Partition& partition) const {
  const int chunks = partition.chunks();
  const bool encoder = partition.EncoderLayers() > 0;
  std::vector<ChunkStatic> out(chunks + (encoder ? 1 : 0));
  for (int c = 0; c < static_cast<int>(out.size()); ++c) {
    // The encoders outside the pipeline last (every device holds a replica of them).
    const int first = c < chunks ? partition.bounds[c] : 0;
    const int end = c < chunks ? partition.bounds[c + 1] : partition.EncoderLayers();
    bool any_frozen = false;
    for (int i = first; i < end; ++i) any_frozen |= layers_[i].frozen;
    for (int i = first; i < end; ++i) {
      out[c].params += layers_[i].params;
      out[c].layer_params.push_back(layers_[i].params);
      if (layers_[i].frozen) out[c].frozen_params += layers_[i].params;
      if (any_frozen) out[c].layer_frozen_params.push_back(layers_[i].frozen ? layers_[i].params : 0);
    }
    const int tp = std::max(1, parallel_.tp);
    out[c].grad_bytes_per_gpu = (out[c].params - out[c].frozen_params) * 2 / tp;
    out[c].frozen_bytes_per_gpu = out[c].frozen_params * 2 / tp;
  }
  return out;
}

CommSpec LayoutComm(const ClusterSpec& cluster, const ParallelConfig& parallel) {
  CommSpec s;
  const int per_node = std::max(1, cluster.gpus_per_node);
  const double nic_share = cluster.gpu_nic_bytes_per_s();
  // With sequence parallelism the gradient group is dp x sp (GraphParallel) and pipeline neighbours are
  // tp * sp * dp ranks apart.
  const DeviceMesh mesh(parallel, per_node, std::max(1, parallel.sp));
  const int64_t group = static_cast<int64_t>(mesh.tp()) * mesh.sp() * mesh.dp();
  const bool dp_in_node = mesh.DpGroupInNode();
  s.dp_bytes_per_s = dp_in_node ? cluster.nvlink_bytes_per_s : nic_share;
  s.dp_latency_us = dp_in_node ? cluster.nvlink_latency_us : cluster.nic_latency_us;
  // Pipeline neighbours are tp*dp ranks apart.
  const bool pp_in_node = FitsInNode(2 * group, per_node);
  s.p2p_bytes_per_s = pp_in_node ? cluster.nvlink_bytes_per_s : nic_share;
  s.p2p_latency_us = pp_in_node ? cluster.nvlink_latency_us : cluster.nic_latency_us;
  s.gpus_per_node = per_node;
  s.nvlink_bytes_per_s = cluster.nvlink_bytes_per_s;
  s.nvlink_latency_us = cluster.nvlink_latency_us;
  s.nic_bytes_per_s = nic_share;
  s.nic_latency_us = cluster.nic_latency_us;
  s.collectives = cluster.collectives;
  s.dp_ranks_per_node = mesh.DpRanksPerNode();
  if (parallel.zero_stage == 3 && parallel.zero3_shard_group > 0 &&
      parallel.zero3_shard_group < mesh.dp() * mesh.sp())
    s.dp_shard_group = parallel.zero3_shard_group;
  if (parallel.grad_reduce_dtype == "fp32") s.grad_reduce_bytes_scale = 2.0;
  return s;
}

CommSpec Pricer::Comm() const { return LayoutComm(cluster_, parallel_); }

}  // namespace mmtwin

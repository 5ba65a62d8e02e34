#include "core/plan/pricing.h"
#include "core/util/numeric.h"

#include <algorithm>
#include <map>

namespace mmtwin {

Pricer::Pricer(const ModelSpec& model, const CostModel& cost, const ClusterSpec& cluster,
               const ParallelConfig& parallel)
    : model_(model), cost_(cost), cluster_(cluster), parallel_(parallel), layers_(Layers(model)) {
  for (const Layer& l : layers_) hidden_of_layer_.push_back(model.components[l.component].tf.hidden);
}

double Pricer::TpLayerForwardUs(int64_t tokens, int64_t hidden) const {
  const int tp = parallel_.tp;
  if (tp <= 1 || tokens <= 0 || cluster_.nvlink_bytes_per_s <= 0) return 0;
  const double bytes = static_cast<double>(tokens) * static_cast<double>(hidden) * 2;
  const double one =
      2.0 * (tp - 1) / tp * bytes / cluster_.nvlink_bytes_per_s * 1e6 + cluster_.nvlink_latency_us;
  return 2 * one;  // two collectives per block (attention output, MLP output)
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
  // Identical layers (same component and kind; embedding/head are single) share one pricing.
  std::map<std::pair<int, int>, LayerCost> cache;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    if (l.kind == LayerKind::kTransformer) {
      auto key = std::make_pair(l.component, static_cast<int>(l.kind));
      auto it = cache.find(key);
      if (it == cache.end()) it = cache.emplace(key, cost_.Cost(model_, l, work[l.component])).first;
      out[i] = it->second;
    } else {
      out[i] = cost_.Cost(model_, l, work[l.component]);
    }
  }
}

void Pricer::PriceMicroBatch(const std::vector<SampleTokens>& mb, Packing packing, const Partition& partition,
                             const RecomputePlan& recompute, ChunkCost* out) const {
  std::vector<LayerWorkload> work(model_.components.size());
  for (size_t c = 0; c < work.size(); ++c)
    work[c] = ComponentWorkload(model_, static_cast<int>(c), mb, packing);
  std::vector<LayerCost> lc;
  LayerCostsFor(work, lc);
  // MFU counts useful FLOPs: a padded micro-batch computes its padding, but the model FLOPs are those of the
  // real tokens (the varlen workload).
  std::vector<LayerCost> useful;
  if (packing == Packing::kPadded) {
    std::vector<LayerWorkload> real(model_.components.size());
    for (size_t c = 0; c < real.size(); ++c)
      real[c] = ComponentWorkload(model_, static_cast<int>(c), mb, Packing::kVarlen);
    LayerCostsFor(real, useful);
  }
  const std::vector<LayerCost>& flops = packing == Packing::kPadded ? useful : lc;
  int64_t llm_tokens = 0;
  for (const SampleTokens& t : mb) llm_tokens += t.llm_tokens;
  const int chunks = partition.chunks();
  for (int c = 0; c < chunks; ++c) {
    ChunkCost& cc = out[c];
    cc = ChunkCost{};
    BackwardTransient transient;
    for (int i = partition.bounds[c]; i < partition.bounds[c + 1]; ++i) {
      const LayerCost& x = lc[i];
      const uint8_t flag = i < static_cast<int>(recompute.layers.size()) ? recompute.layers[i] : 0;
      const bool rc = flag != 0;
      cc.fwd_us += x.fwd_time_us;
      cc.bwd_us += x.bwd_time_us;
      cc.bwd_weight_us += x.bwd_weight_time_us;
      cc.model_flops += flops[i].fwd_flops + flops[i].bwd_flops;
      cc.act_bytes_no_recompute = AddBytes(cc.act_bytes_no_recompute, x.act_bytes);
      // 1: recomputed from its kept input; 2: recomputed inside a checkpointed group (nothing kept,
      // recompute.h).
      cc.act_bytes = AddBytes(cc.act_bytes, flag == 0 ? x.act_bytes : flag == 1 ? x.act_bytes_recompute : 0);
      transient.Add(flag, x.act_bytes, x.act_bytes_recompute, x.bwd_work_bytes);
      if (layers_[i].kind == LayerKind::kTransformer) {
        const double tp_us = TpLayerForwardUs(work[layers_[i].component].tokens, hidden_of_layer_[i]);
        cc.tp_fwd_us += tp_us;
        cc.tp_bwd_us += tp_us * (rc ? 2 : 1);
      }
      if (rc) cc.recompute_us += x.fwd_time_us;
    }
    cc.backward_transient_bytes = transient.Bytes();
    const int last = partition.bounds[c + 1] - 1;
    cc.send_bytes = c + 1 < chunks ? lc[last].boundary_bytes / std::max(1, parallel_.tp) : 0;
    cc.llm_tokens = llm_tokens;
  }
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
  std::vector<SampleTokens> mb;
  for (int r = 0; r < d; ++r)
    for (int k = 0; k < m; ++k) {
      mb.clear();
      for (uint32_t s : it.micro_batches[r][k]) mb.push_back(tokens[s]);
      PriceMicroBatch(mb, packing, partition, recompute, &costs.At(r, k, 0));
    }
  return costs;
}

std::vector<ChunkStatic> Pricer::Static(const Partition& partition) const {
  std::vector<ChunkStatic> out(partition.chunks());
  for (int c = 0; c < partition.chunks(); ++c) {
    for (int i = partition.bounds[c]; i < partition.bounds[c + 1]; ++i) {
      out[c].params += layers_[i].params;
      out[c].layer_params.push_back(layers_[i].params);
    }
    out[c].grad_bytes_per_gpu = out[c].params * 2 / std::max(1, parallel_.tp);
  }
  return out;
}

CommSpec LayoutComm(const ClusterSpec& cluster, const ParallelConfig& parallel) {
  CommSpec s;
  const int per_node = std::max(1, cluster.gpus_per_node);
  const double nic_share =
      cluster.nics_per_node > 0 ? cluster.node_nic_bytes_per_s() / per_node : cluster.nic_bytes_per_s;
  const bool dp_in_node = parallel.tp * parallel.dp <= per_node;
  s.dp_bytes_per_s = dp_in_node ? cluster.nvlink_bytes_per_s : nic_share;
  s.dp_latency_us = dp_in_node ? cluster.nvlink_latency_us : cluster.nic_latency_us;
  // Pipeline neighbours are tp*dp ranks apart.
  const bool pp_in_node = parallel.tp * parallel.dp * 2 <= per_node;
  s.p2p_bytes_per_s = pp_in_node ? cluster.nvlink_bytes_per_s : nic_share;
  s.p2p_latency_us = pp_in_node ? cluster.nvlink_latency_us : cluster.nic_latency_us;
  s.gpus_per_node = per_node;
  s.nvlink_bytes_per_s = cluster.nvlink_bytes_per_s;
  s.nvlink_latency_us = cluster.nvlink_latency_us;
  s.nic_bytes_per_s = nic_share;
  s.nic_latency_us = cluster.nic_latency_us;
  return s;
}

CommSpec Pricer::Comm() const { return LayoutComm(cluster_, parallel_); }

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/plan/memory.h"
#include "core/util/numeric.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "core/plan/caching_allocator.h"

namespace mmtwin {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 1 ? a : (a + b - 1) / b; }

void Finish(StageMemory& m) {
  m.fits = m.peak_bytes <= m.capacity_bytes;
  m.short_bytes = m.fits ? 0 : m.peak_bytes - m.capacity_bytes;
}

}  // namespace

const std::vector<std::string>& OptimizerMemoryNames() {
  static const std::vector<std::string> names = {"auto", "simple", "megatron", "deepspeed", "fsdp"};
  return names;
}

std::string ResolvedOptimizerMemory(const ParallelConfig& parallel) {
  const std::string& m = parallel.optimizer_memory;
  if (m != "auto") return m;
  if (parallel.zero_stage >= 3 && (parallel.zero3_impl == "fsdp" || parallel.zero3_impl == "deepspeed"))
    return parallel.zero3_impl;
  return "megatron";
}

OptimizerBytes OptimizerBytesFor(const ParallelConfig& parallel) {
  const std::string m = ResolvedOptimizerMemory(parallel);
  OptimizerBytes b;  // simple: 2 + 2 + 4 + 8
  if (m == "megatron") {
    b.grads = 0;
    b.main_grads = 4;
  } else if (m == "deepspeed") {
    b.main_grads = 4;
  } else if (m == "fsdp") {
    b.weights = parallel.zero_stage >= 3 ? 0 : 2;
    b.grads = 0;
    b.main_grads = 4;
  }
  return b;
}

int64_t ModelStates::Total() const {
  return AddBytes(AddBytes(AddBytes(weights, grads), AddBytes(main_grads, optimizer)), zero3_transient);
}

ModelStates ModelStatesOf(const ParallelConfig& parallel, int64_t params, int64_t frozen_params) {
  frozen_params = std::clamp<int64_t>(frozen_params, 0, std::max<int64_t>(params, 0));
  const int64_t tp = std::max(1, parallel.tp);
  int64_t dp =
      static_cast<int64_t>(std::max(1, parallel.dp)) * std::max(1, parallel.sp);  // ZeRO over dp x sp
  if (parallel.zero_stage == 3 && parallel.zero3_shard_group > 0 && parallel.zero3_shard_group < dp)
    dp = parallel.zero3_shard_group;  // hybrid sharding: states sharded within the group
  const OptimizerBytes b = OptimizerBytesFor(parallel);
  auto shard = [&](int bytes, int64_t per_gpu, int from_stage) {
    const int64_t whole = bytes * per_gpu;
    return parallel.zero_stage >= from_stage ? CeilDiv(whole, dp) : whole;
  };
  const int64_t trained = CeilDiv(params - frozen_params, tp);
  ModelStates s;
  s.weights = shard(b.weights, trained, 3);
  s.grads = shard(b.grads, trained, 2);
  s.main_grads = shard(b.main_grads, trained, 2);
  s.optimizer = shard(b.master + b.moments, trained, 1);
  if (frozen_params > 0) {
    // Frozen parameters: their weights only, as the framework keeps them (memory.h).
    const int64_t frozen = CeilDiv(frozen_params, tp);
    s.weights = AddBytes(s.weights, shard(b.weights, frozen, 3));
    if (ResolvedOptimizerMemory(parallel) == "fsdp") s.weights = AddBytes(s.weights, shard(4, frozen, 1));
  }
  return s;
}

int64_t ModelStateBytes(const ParallelConfig& parallel, int64_t params, int64_t frozen_params) {
  return ModelStatesOf(parallel, params, frozen_params).Total();
}

int64_t Zero3TransientBytes(const std::string& impl, int64_t largest_layer_params, int64_t rank_params,
                            int64_t tp) {
  tp = std::max<int64_t>(1, tp);
  if (impl == "fsdp") return 3 * 2 * CeilDiv(largest_layer_params, tp);
  if (impl == "deepspeed") {
    // deepspeed/runtime/zero/config.py defaults (DeepSpeed 0.9-0.14): stage3_prefetch_bucket_size 5e7,
    // reduce_bucket_size 5e8 elements.
    constexpr int64_t kPrefetchBucket = 50'000'000, kReduceBucket = 500'000'000;
    const int64_t gathered = largest_layer_params + std::min(kPrefetchBucket, rank_params);
    return 2 * CeilDiv(gathered, tp) + 2 * CeilDiv(std::min(kReduceBucket, rank_params), tp);
  }
  return 0;
}

std::vector<int64_t> RankParams(const ParallelConfig& parallel, const Partition& partition,
                                const std::vector<int64_t>& layer_params) {
  const int pp = std::max(1, parallel.pp);
  std::vector<int64_t> out(pp, 0);
  const int n = static_cast<int>(layer_params.size());
  for (int c = 0; c < partition.chunks(); ++c)
    for (int l = std::max(0, partition.bounds[c]); l < std::min(n, partition.bounds[c + 1]); ++l)
      out[PipeRankOfChunk(c, pp)] += layer_params[l];
  return out;
}

std::vector<ModelStates> RankModelStates(const ParallelConfig& parallel, const Partition& partition,
                                         const std::vector<int64_t>& layer_params,
                                         const std::vector<int64_t>& layer_frozen_params) {
  const std::vector<int64_t> params = RankParams(parallel, partition, layer_params);
  const std::vector<int64_t> frozen = layer_frozen_params.empty()
                                          ? std::vector<int64_t>(params.size(), 0)
                                          : RankParams(parallel, partition, layer_frozen_params);
  // The encoders outside the pipeline (Partition::EncoderLayers(), policies.encoder bubbles): every rank holds a
  // replica of them, sharded over the dp x pp replicas as the ZeRO stage says.
  ModelStates encoder;
  const int e = std::min<int>(partition.EncoderLayers(), static_cast<int>(layer_params.size()));
  if (e > 0) {
    int64_t p = 0, f = 0;
    for (int l = 0; l < e; ++l) {
      p += layer_params[l];
      if (l < static_cast<int>(layer_frozen_params.size())) f += layer_frozen_params[l];
    }
    ParallelConfig replicas = parallel;
    replicas.dp = parallel.dp * std::max(1, parallel.pp);
    replicas.pp = replicas.vpp = 1;
    encoder = ModelStatesOf(replicas, p, f);
  }
  std::vector<ModelStates> out;
  for (size_t r = 0; r < params.size(); ++r) {
    ModelStates st = ModelStatesOf(parallel, params[r], frozen[r]);
    st.weights = AddBytes(st.weights, encoder.weights);
    st.grads = AddBytes(st.grads, encoder.grads);
    st.main_grads = AddBytes(st.main_grads, encoder.main_grads);
    st.optimizer = AddBytes(st.optimizer, encoder.optimizer);
    out.push_back(st);
  }
  if (parallel.zero_stage == 3 && parallel.zero3_impl != "simple") {
    const int pp = std::max(1, parallel.pp);
    const int64_t tp = std::max(1, parallel.tp);
    const int n = static_cast<int>(layer_params.size());
    std::vector<int64_t> largest(pp, 0), total(pp, 0);
    for (int c = 0; c < partition.chunks(); ++c)
      for (int l = std::max(0, partition.bounds[c]); l < std::min(n, partition.bounds[c + 1]); ++l) {
        largest[PipeRankOfChunk(c, pp)] = std::max(largest[PipeRankOfChunk(c, pp)], layer_params[l]);
        total[PipeRankOfChunk(c, pp)] += layer_params[l];
      }
    for (int r = 0; r < pp && r < static_cast<int>(out.size()); ++r)
      out[r].zero3_transient = Zero3TransientBytes(parallel.zero3_impl, largest[r], total[r], tp);
  }
  return out;
}

std::vector<int64_t> RankModelStateBytes(const ParallelConfig& parallel, const Partition& partition,
                                         const std::vector<int64_t>& layer_params,
                                         const std::vector<int64_t>& layer_frozen_params) {
  std::vector<int64_t> out;
  for (const ModelStates& s : RankModelStates(parallel, partition, layer_params, layer_frozen_params))
    out.push_back(s.Total());
  return out;
}

int64_t NcclBufferBytes(const DeviceSpec& device, const ParallelConfig& parallel) {
  const int64_t per_peer = static_cast<int64_t>(std::max(0, device.nccl_channels)) *
                           std::max<int64_t>(0, device.nccl_buffsize_bytes);
  const int64_t groups[] = {std::max(1, parallel.tp),
                            static_cast<int64_t>(std::max(1, parallel.dp)) * std::max(1, parallel.sp),
                            std::max(1, parallel.pp), std::max(1, parallel.sp)};
  int64_t total = 0;
  for (int64_t n : groups)
    if (n > 1) total = AddBytes(total, per_peer * std::min<int64_t>(2, n - 1));
  return total;
}

RuntimeMemory RuntimeMemoryOf(const DeviceSpec& device, const ParallelConfig& parallel) {
  RuntimeMemory r;
  r.cuda_context_bytes = std::max<int64_t>(0, device.cuda_context_bytes);
  r.nccl_bytes = NcclBufferBytes(device, parallel);
  r.workspace_bytes = AddBytes(std::max<int64_t>(0, device.workspace_bytes),
                               std::max<int64_t>(0, device.cudnn_workspace_bytes));
  r.other_bytes = std::max<int64_t>(0, device.reserved_bytes);
  r.fragmentation_floor = device.fragmentation;
  r.fragmentation_spread = device.fragmentation_spread;
  r.replay_allocator = device.allocator_model == "replay";
  return r;
}

std::vector<double> TransformerTensorShares(const TransformerConfig& tf) {
  if (tf.layers <= 0 || tf.hidden <= 0) return {1, 1, 1, 1, 1, 1, 0.5, 1, 1, 4, 4, 0.5};
  const double h = static_cast<double>(tf.hidden);
  const double d = static_cast<double>(tf.head_dim > 0 ? tf.head_dim : tf.hidden / std::max(1, tf.heads));
  const double q = static_cast<double>(std::max(1, tf.heads));
  const double kv = static_cast<double>(tf.kv_heads > 0 ? tf.kv_heads : tf.heads);
  const double f = static_cast<double>(tf.ffn > 0 ? tf.ffn : 4 * tf.hidden);
  const bool gated = tf.mlp != MlpKind::kGelu;
  std::vector<double> s = {h, h, (q + 2 * kv) * d, q * d, h, h, h, gated ? 2 * f : f, f};
  if (gated) s.push_back(f);
  s.push_back(h);
  return s;
}

int64_t ReplayActivationExcessBytes(const std::vector<PipeOp>& ops, const IterationCosts& costs, int replica,
                                    const Partition& partition, const std::vector<double>& shares_in,
                                    CachingAllocatorModel* allocator, int64_t limit_bytes) {
  const std::vector<double> shares =
      shares_in.empty() ? TransformerTensorShares(TransformerConfig{}) : shares_in;
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  if (total <= 0 || replica < 0 || replica >= costs.dp) return 0;
  CachingAllocatorModel fresh;
  CachingAllocatorModel& a = allocator != nullptr ? *allocator : fresh;
  a.set_limit_bytes(limit_bytes);
  // Per (micro-batch, chunk) in flight: the addresses of its layers' tensors, layer by layer.
  std::map<std::pair<int, int>, std::vector<std::vector<int64_t>>> held;
  const auto bytes = [](double b) { return static_cast<int64_t>(std::llround(std::max(0.0, b))); };
  for (const PipeOp& op : ops) {
    if (op.micro_batch < 0 || op.micro_batch >= costs.micro_batches || op.chunk < 0 || op.chunk >= costs.chunks)
      continue;
    const ChunkCost& cc = costs.At(replica, op.micro_batch, op.chunk);
    const int layers = op.chunk < partition.chunks() ? std::max(1, partition.LayersIn(op.chunk)) : 1;
    const double per_layer = static_cast<double>(std::max<int64_t>(0, cc.act_bytes)) / layers;
    const std::pair<int, int> key{op.micro_batch, op.chunk};
    if (op.kind == PassKind::kForward) {
      auto& tensors = held[key];
      tensors.assign(layers, {});
      if (per_layer > 0)
        for (int l = 0; l < layers; ++l)
          for (double s : shares) tensors[l].push_back(a.Allocate(bytes(per_layer * s / total)));
      if (cc.forward_transient_bytes > 0) (void)a.Free(a.Allocate(cc.forward_transient_bytes));
      continue;
    }
    auto it = held.find(key);
    if (StartsBackward(op.kind) && cc.backward_transient_bytes > 0)
      (void)a.Free(a.Allocate(cc.backward_transient_bytes));
    if (!EndsBackward(op.kind) || it == held.end()) continue;
    // Autograd's order per layer, last first: the gradient of the layer's largest intermediate, its input
    // gradient, then the temporary, the output gradient and the layer's saved tensors are released.
    const double largest = *std::max_element(shares.begin(), shares.end());
    int64_t grad = per_layer > 0 ? a.Allocate(bytes(per_layer * shares.front() / total)) : -1;
    for (int l = layers - 1; l >= 0; --l) {
      if (per_layer > 0) {
        const int64_t temp = a.Allocate(bytes(per_layer * largest / total));
        const int64_t next = a.Allocate(bytes(per_layer * shares.front() / total));
        (void)a.Free(temp);
        (void)a.Free(grad);
        grad = next;
      }
      for (int64_t t : it->second[l]) (void)a.Free(t);
    }
    if (grad >= 0) (void)a.Free(grad);
    held.erase(it);
  }
  return std::max<int64_t>(0, a.peak_reserved_bytes() - a.peak_allocated_bytes());
}

int64_t FragmentationBytes(int64_t allocated_bytes, int64_t spread_bytes, double floor_fraction,
                           double spread_coefficient) {
  const double f = std::clamp(floor_fraction, 0.0, 0.9);
  const double floor = static_cast<double>(std::max<int64_t>(0, allocated_bytes)) * f / (1.0 - f);
  const double spread =
      static_cast<double>(std::max<int64_t>(0, spread_bytes)) * std::max(0.0, spread_coefficient);
  return BytesOf(std::max(floor, spread));
}

int64_t PlanUsableMemoryBytes(const DeviceSpec& device, const ParallelConfig& parallel) {
  const RuntimeMemory r = RuntimeMemoryOf(device, parallel);
  const double outside =
      static_cast<double>(device.memory_bytes - r.cuda_context_bytes - r.nccl_bytes - r.other_bytes);
  const double left =
      outside * (1.0 - std::clamp(device.fragmentation, 0.0, 0.9)) - static_cast<double>(r.workspace_bytes);
  return left <= 0 ? 0 : static_cast<int64_t>(left);
}

Status ValidateMemoryInputs(const ParallelConfig& parallel_in, const Partition& partition,
                            const std::vector<int64_t>& layer_params, const Schedule& schedule,
                            const IterationCosts& costs) {
  const ParallelConfig parallel = GraphParallel(parallel_in);
  const int chunks = parallel.chunks();
  MMTWIN_RETURN_IF_ERROR(
      ValidatePartition(partition, static_cast<int>(layer_params.size()), chunks, partition.EncoderLayers()));
  if (static_cast<int>(schedule.per_rank.size()) != parallel.pp)
    return Error("memory: schedule has " + std::to_string(schedule.per_rank.size()) +
                 " ranks, expected pp = " + std::to_string(parallel.pp));
  if (costs.chunks != chunks || costs.dp < 1 || costs.micro_batches < 1 ||
      costs.costs.size() != static_cast<size_t>(costs.dp) * costs.micro_batches * costs.chunks)
    return Error("memory: iteration costs are not [dp][micro_batches][" + std::to_string(chunks) + "]");
  if (schedule.HasEncoderPasses() &&
      costs.encoder.size() != static_cast<size_t>(costs.dp) * costs.micro_batches)
    return Error("memory: the schedule places encoder passes but the costs have none of them");
  for (int r = 0; r < parallel.pp; ++r)
    for (const PipeOp& op : schedule.per_rank[r]) {
      if (op.micro_batch < 0 || op.micro_batch >= costs.micro_batches || op.chunk < 0 || op.chunk >= chunks ||
          PipeRankOfChunk(op.chunk, parallel.pp) != r)
        return Error("memory: rank " + std::to_string(r) + " schedules micro-batch " +
                     std::to_string(op.micro_batch) + " chunk " + std::to_string(op.chunk) + " out of range");
    }
  return Status();
}

namespace {

// The floor, and above it the replayed excess (device.allocator_model replay) or the spread term.
int64_t StageFragmentationBytes(const StageMemory& m) {
  if (m.replay_excess_bytes < 0)
    return FragmentationBytes(m.allocated_peak_bytes, m.mb_footprint_max_bytes - m.mb_footprint_min_bytes,
                              m.fragmentation_floor, m.fragmentation_spread);
  return std::max(FragmentationBytes(m.allocated_peak_bytes, 0, m.fragmentation_floor, 0),
                  m.replay_excess_bytes);
}

// Sums the parts of `m` into allocated_peak_bytes, fragmentation_bytes and peak_bytes.
void Total(StageMemory& m) {
  m.allocated_peak_bytes = AddBytes(AddBytes(m.model_state_bytes, m.peak_activation_bytes),
                                    AddBytes(m.boundary_bytes, m.workspace_bytes));
  m.fragmentation_bytes = StageFragmentationBytes(m);
  m.peak_bytes = AddBytes(AddBytes(m.allocated_peak_bytes, m.fragmentation_bytes),
                          AddBytes(m.cuda_context_bytes, AddBytes(m.nccl_bytes, m.other_bytes)));
}

std::vector<StageMemory> Walk(const ParallelConfig& parallel_in, const Partition& partition,
                              const std::vector<int64_t>& layer_params, const Schedule& schedule,
                              const IterationCosts& costs, int64_t capacity_bytes,
                              const RuntimeMemory& runtime, const std::vector<int64_t>& layer_frozen_params,
                              MemoryReplay* replay = nullptr) {
  const ParallelConfig parallel = GraphParallel(parallel_in);
  const int pp = std::max(1, parallel.pp);
  const int chunks = costs.chunks;
  const std::vector<ModelStates> states =
      RankModelStates(parallel, partition, layer_params, layer_frozen_params);
  // The encoders outside the pipeline (Schedule::encoder): their model states are in RankModelStates; their
  // passes on the rank that runs them.
  const int encoder_layers = std::min<int>(partition.EncoderLayers(), static_cast<int>(layer_params.size()));
  const bool encoder = encoder_layers > 0 && schedule.HasEncoderPasses() && !costs.encoder.empty();
  std::vector<StageMemory> out(pp);
  for (int r = 0; r < pp; ++r) {
    StageMemory& m = out[r];
    m.stage = r;
    m.capacity_bytes = capacity_bytes;
    const ModelStates st = r < static_cast<int>(states.size()) ? states[r] : ModelStates{};
    m.weight_bytes = st.weights;
    m.grad_bytes = st.grads;
    m.main_grad_bytes = st.main_grads;
    m.optimizer_bytes = st.optimizer;
    m.zero3_transient_bytes = st.zero3_transient;
    m.model_state_bytes = st.Total();
    m.workspace_bytes = runtime.workspace_bytes;
    m.cuda_context_bytes = runtime.cuda_context_bytes;
    m.nccl_bytes = runtime.nccl_bytes;
    m.other_bytes = runtime.other_bytes;
    m.fragmentation_floor = runtime.fragmentation_floor;
    m.fragmentation_spread = runtime.fragmentation_spread;
    const std::vector<PipeOp> empty;
    const std::vector<PipeOp>& ops =
        r < static_cast<int>(schedule.per_rank.size()) ? schedule.per_rank[r] : empty;
    const std::vector<EncoderPass> no_passes;
    const std::vector<EncoderPass>& passes =
        encoder && r < static_cast<int>(schedule.encoder.size()) ? schedule.encoder[r] : no_passes;
    int64_t send = 0, recv = 0;
    int64_t fp_max = 0, fp_min = -1;
    int64_t replay_peak = -1;
    int replay_replica = -1;
    for (int d = 0; d < costs.dp; ++d) {
      for (int k = 0; k < costs.micro_batches; ++k) {
        // The micro-batch's footprint on this rank: what its forwards leave held plus its largest transient.
        int64_t held_k = 0, transient_k = 0;
        for (int c = r; c < chunks; c += pp) {
          const ChunkCost& cc = costs.At(d, k, c);
          send = std::max(send, cc.send_bytes);
          if (c > 0) recv = std::max(recv, costs.At(d, k, c - 1).send_bytes);
          held_k = AddBytes(held_k, cc.act_bytes);
          transient_k = std::max({transient_k, cc.backward_transient_bytes, cc.forward_transient_bytes});
        }
        if (encoder && r == 0) recv = std::max(recv, costs.EncoderAt(d, k).send_bytes);
        for (const EncoderPass& e : passes)
          if (e.micro_batch == k && e.kind == PassKind::kForward) {
            const ChunkCost& ec = costs.EncoderAt(d, k);
            if (r != 0) send = std::max(send, ec.send_bytes);
            held_k = AddBytes(held_k, ec.act_bytes);
            transient_k = std::max({transient_k, ec.backward_transient_bytes, ec.forward_transient_bytes});
          }
        const int64_t fp = AddBytes(held_k, transient_k);
        fp_max = std::max(fp_max, fp);
        fp_min = fp_min < 0 ? fp : std::min(fp_min, fp);
      }
      int64_t held = 0, peak = 0;
      // A pass that holds `cc.act_bytes` from its forward to its backward (a pipeline chunk's or an encoder's).
      auto walk = [&](PassKind kind, const ChunkCost& cc) {
        if (kind == PassKind::kForward) {
          held = AddBytes(held, cc.act_bytes);
          peak = std::max(peak, AddBytes(held, cc.forward_transient_bytes));
        } else {
          // The recompute transient of the backward: one checkpointed unit at a time (ChunkCost); the
          // activations are freed when the backward ends (a split backward keeps them through its
          // weight-gradient pass).
          if (StartsBackward(kind)) peak = std::max(peak, AddBytes(held, cc.backward_transient_bytes));
          if (EndsBackward(kind)) held -= cc.act_bytes;
        }
      };
      size_t next_pass = 0;
      auto walk_passes = [&](size_t before) {
        for (; next_pass < passes.size() && static_cast<size_t>(passes[next_pass].before) <= before;
             ++next_pass)
          walk(passes[next_pass].kind, costs.EncoderAt(d, passes[next_pass].micro_batch));
      };
      for (size_t i = 0; i < ops.size(); ++i) {
        walk_passes(i);
        const PipeOp& op = ops[i];
        if (op.micro_batch < 0 || op.micro_batch >= costs.micro_batches || op.chunk < 0 || op.chunk >= chunks)
          continue;
        walk(op.kind, costs.At(d, op.micro_batch, op.chunk));
      }
      walk_passes(ops.size());
      if (peak > replay_peak || replay_replica < 0) {
        replay_peak = peak;
        replay_replica = d;
      }
      m.peak_activation_bytes = std::max(m.peak_activation_bytes, peak);
    }
    // The replica whose activations peak highest sets the stage's peak: its allocator is the one replayed, with
    // what the device leaves the activations as its limit (at least 1 byte: a stage whose other terms alone do
    // not fit releases at every new segment).
    m.boundary_bytes = AddBytes(send, recv);
    if (runtime.replay_allocator && replay_replica >= 0) {
      const int64_t others = AddBytes(
          AddBytes(m.model_state_bytes, m.boundary_bytes),
          AddBytes(AddBytes(m.workspace_bytes, m.cuda_context_bytes), AddBytes(m.nccl_bytes, m.other_bytes)));
      const int64_t limit = std::max<int64_t>(1, capacity_bytes - others);
      m.replay_excess_bytes =
          ReplayActivationExcessBytes(ops, costs, replay_replica, partition, {}, nullptr, limit);
      if (replay != nullptr) {
        if (static_cast<int>(replay->allocators.size()) < pp) replay->allocators.resize(pp);
        auto& mine = replay->allocators[r];
        const int n = std::min(costs.dp, MemoryReplay::kReplayedReplicas);
        if (static_cast<int>(mine.size()) < n) mine.resize(n);
        for (int d = 0; d < n; ++d)
          m.replay_excess_bytes =
              std::max(m.replay_excess_bytes,
                       ReplayActivationExcessBytes(ops, costs, d, partition, {}, &mine[d], limit));
      }
    }
    m.mb_footprint_max_bytes = fp_max;
    m.mb_footprint_min_bytes = std::max<int64_t>(0, fp_min);
    Total(m);
    Finish(m);
  }
  return out;
}

}  // namespace

std::vector<StageMemory> ComputeMemory(const ParallelConfig& parallel, const Partition& partition,
                                       const std::vector<int64_t>& layer_params, const Schedule& schedule,
                                       const IterationCosts& costs, int64_t capacity_bytes,
                                       const std::vector<int64_t>& layer_frozen_params) {
  return Walk(parallel, partition, layer_params, schedule, costs, capacity_bytes, RuntimeMemory{},
              layer_frozen_params);
}

std::vector<StageMemory> ComputeMemory(const ParallelConfig& parallel, const Partition& partition,
                                       const std::vector<int64_t>& layer_params, const Schedule& schedule,
                                       const IterationCosts& costs, const DeviceSpec& device,
                                       const std::vector<int64_t>& layer_frozen_params, MemoryReplay* replay) {
  return Walk(parallel, partition, layer_params, schedule, costs, device.memory_bytes,
              RuntimeMemoryOf(device, parallel), layer_frozen_params, replay);
}

std::vector<StageMemory> MergeMemory(const std::vector<StageMemory>& a, const std::vector<StageMemory>& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  std::vector<StageMemory> out = a;
  for (size_t r = 0; r < out.size() && r < b.size(); ++r) {
    StageMemory& m = out[r];
    const StageMemory& o = b[r];
    for (auto f :
         {&StageMemory::model_state_bytes, &StageMemory::weight_bytes, &StageMemory::grad_bytes,
          &StageMemory::main_grad_bytes, &StageMemory::optimizer_bytes, &StageMemory::zero3_transient_bytes,
          &StageMemory::peak_activation_bytes, &StageMemory::boundary_bytes, &StageMemory::workspace_bytes,
          &StageMemory::allocated_peak_bytes, &StageMemory::cuda_context_bytes, &StageMemory::nccl_bytes,
          &StageMemory::other_bytes, &StageMemory::mb_footprint_max_bytes})
      m.*f = std::max(m.*f, o.*f);
    m.mb_footprint_min_bytes = std::min(m.mb_footprint_min_bytes, o.mb_footprint_min_bytes);
    m.fragmentation_floor = std::max(m.fragmentation_floor, o.fragmentation_floor);
    m.fragmentation_spread = std::max(m.fragmentation_spread, o.fragmentation_spread);
    m.replay_excess_bytes = std::max(m.replay_excess_bytes, o.replay_excess_bytes);
    m.fragmentation_bytes = StageFragmentationBytes(m);
    // Each iteration's allocated peak is a real simultaneous sum (the sum of merged components may not be).
    m.peak_bytes =
        std::max({m.peak_bytes, o.peak_bytes,
                  AddBytes(AddBytes(m.allocated_peak_bytes, m.fragmentation_bytes),
                           AddBytes(m.cuda_context_bytes, AddBytes(m.nccl_bytes, m.other_bytes)))});
    m.capacity_bytes = std::min(m.capacity_bytes, b[r].capacity_bytes);
    Finish(m);
  }
  return out;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/plan/memory.h"
#include "core/util/numeric.h"

#include <algorithm>
#include <string>

namespace mmtwin {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 1 ? a : (a + b - 1) / b; }

void Finish(StageMemory& m) {
  m.fits = m.peak_bytes <= m.capacity_bytes;
  m.short_bytes = m.fits ? 0 : m.peak_bytes - m.capacity_bytes;
}

}  // namespace

int64_t ModelStateBytes(const ParallelConfig& parallel, int64_t params) {
  const int64_t per_gpu = CeilDiv(params, std::max(1, parallel.tp));
  const int64_t dp =
      static_cast<int64_t>(std::max(1, parallel.dp)) * std::max(1, parallel.sp);  // ZeRO over dp x sp
  const int64_t weights = 2 * per_gpu, grads = 2 * per_gpu, optimizer = 12 * per_gpu;
  return (parallel.zero_stage >= 3 ? CeilDiv(weights, dp) : weights) +
         (parallel.zero_stage >= 2 ? CeilDiv(grads, dp) : grads) +
         (parallel.zero_stage >= 1 ? CeilDiv(optimizer, dp) : optimizer);
}

int64_t Zero3TransientBytes(const std::string& impl, int64_t largest_layer_params, int64_t rank_params,
                            int64_t tp) {
  tp = std::max<int64_t>(1, tp);
  if (impl == "fsdp") return 3 * 2 * CeilDiv(largest_layer_params, tp);
  if (impl == "deepspeed") {
    constexpr int64_t kPrefetchBucket = 500'000'000,
                      kReduceBucket = 500'000'000;  // elements (DeepSpeed defaults)
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

std::vector<int64_t> RankModelStateBytes(const ParallelConfig& parallel, const Partition& partition,
                                         const std::vector<int64_t>& layer_params) {
  std::vector<int64_t> out = RankParams(parallel, partition, layer_params);
  for (int64_t& b : out) b = ModelStateBytes(parallel, b);
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
      out[r] = AddBytes(out[r], Zero3TransientBytes(parallel.zero3_impl, largest[r], total[r], tp));
  }
  return out;
}

Status ValidateMemoryInputs(const ParallelConfig& parallel_in, const Partition& partition,
                            const std::vector<int64_t>& layer_params, const Schedule& schedule,
                            const IterationCosts& costs) {
  const ParallelConfig parallel = GraphParallel(parallel_in);
  const int chunks = parallel.chunks();
  MMTWIN_RETURN_IF_ERROR(ValidatePartition(partition, static_cast<int>(layer_params.size()), chunks));
  if (static_cast<int>(schedule.per_rank.size()) != parallel.pp)
    return Error("memory: schedule has " + std::to_string(schedule.per_rank.size()) +
                 " ranks, expected pp = " + std::to_string(parallel.pp));
  if (costs.chunks != chunks || costs.dp < 1 || costs.micro_batches < 1 ||
      costs.costs.size() != static_cast<size_t>(costs.dp) * costs.micro_batches * costs.chunks)
    return Error("memory: iteration costs are not [dp][micro_batches][" + std::to_string(chunks) + "]");
  for (int r = 0; r < parallel.pp; ++r)
    for (const PipeOp& op : schedule.per_rank[r]) {
      if (op.micro_batch < 0 || op.micro_batch >= costs.micro_batches || op.chunk < 0 || op.chunk >= chunks ||
          PipeRankOfChunk(op.chunk, parallel.pp) != r)
        return Error("memory: rank " + std::to_string(r) + " schedules micro-batch " +
                     std::to_string(op.micro_batch) + " chunk " + std::to_string(op.chunk) + " out of range");
    }
  return Status();
}

std::vector<StageMemory> ComputeMemory(const ParallelConfig& parallel_in, const Partition& partition,
                                       const std::vector<int64_t>& layer_params, const Schedule& schedule,
                                       const IterationCosts& costs, int64_t capacity_bytes) {
  const ParallelConfig parallel = GraphParallel(parallel_in);
  const int pp = std::max(1, parallel.pp);
  const int chunks = costs.chunks;
  const std::vector<int64_t> states = RankModelStateBytes(parallel, partition, layer_params);
  std::vector<StageMemory> out(pp);
  for (int r = 0; r < pp; ++r) {
    StageMemory& m = out[r];
    m.stage = r;
    m.capacity_bytes = capacity_bytes;
    m.model_state_bytes = states[r];
    const std::vector<PipeOp> empty;
    const std::vector<PipeOp>& ops =
        r < static_cast<int>(schedule.per_rank.size()) ? schedule.per_rank[r] : empty;
    int64_t send = 0, recv = 0;
    for (int d = 0; d < costs.dp; ++d) {
      for (int k = 0; k < costs.micro_batches; ++k)
        for (int c = r; c < chunks; c += pp) {
          send = std::max(send, costs.At(d, k, c).send_bytes);
          if (c > 0) recv = std::max(recv, costs.At(d, k, c - 1).send_bytes);
        }
      int64_t held = 0, peak = 0;
      for (const PipeOp& op : ops) {
        if (op.micro_batch < 0 || op.micro_batch >= costs.micro_batches || op.chunk < 0 || op.chunk >= chunks)
          continue;
        const ChunkCost& cc = costs.At(d, op.micro_batch, op.chunk);
        if (op.kind == PassKind::kForward) {
          held = AddBytes(held, cc.act_bytes);
          peak = std::max(peak, held);
        } else {
          // The recompute transient of the backward: one checkpointed unit at a time (ChunkCost); the
          // activations are freed when the backward ends (a split backward keeps them through its
          // weight-gradient pass).
          if (StartsBackward(op.kind)) peak = std::max(peak, AddBytes(held, cc.backward_transient_bytes));
          if (EndsBackward(op.kind)) held -= cc.act_bytes;
        }
      }
      m.peak_activation_bytes = std::max(m.peak_activation_bytes, peak);
    }
    m.boundary_bytes = AddBytes(send, recv);
    m.peak_bytes = AddBytes(AddBytes(m.model_state_bytes, m.peak_activation_bytes), m.boundary_bytes);
    Finish(m);
  }
  return out;
}

std::vector<StageMemory> MergeMemory(const std::vector<StageMemory>& a, const std::vector<StageMemory>& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  std::vector<StageMemory> out = a;
  for (size_t r = 0; r < out.size() && r < b.size(); ++r) {
    StageMemory& m = out[r];
    m.model_state_bytes = std::max(m.model_state_bytes, b[r].model_state_bytes);
    m.peak_activation_bytes = std::max(m.peak_activation_bytes, b[r].peak_activation_bytes);
    m.boundary_bytes = std::max(m.boundary_bytes, b[r].boundary_bytes);
    m.peak_bytes = std::max(m.peak_bytes, b[r].peak_bytes);
    m.capacity_bytes = std::min(m.capacity_bytes, b[r].capacity_bytes);
    Finish(m);
  }
  return out;
}

}  // namespace mmtwin

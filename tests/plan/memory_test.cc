// SPDX-License-Identifier: Apache-2.0
#include "core/plan/memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/plan/schedule.h"
#include "core/util/csv.h"

namespace mmtwin {
namespace {

// Schedules built by hand (vpp = 1), as in sim/docs/algorithms.md §5.
Schedule OneFOneB(int pp, int m) {
  Schedule s;
  s.name = "1f1b";
  s.pp = pp;
  s.micro_batches = m;
  s.per_rank.resize(pp);
  for (int r = 0; r < pp; ++r) {
    auto& ops = s.per_rank[r];
    const int warm = std::min(pp - r - 1, m);
    for (int i = 0; i < warm; ++i) ops.push_back({PassKind::kForward, i, r});
    for (int i = 0; i < m - warm; ++i) {
      ops.push_back({PassKind::kForward, warm + i, r});
      ops.push_back({PassKind::kBackward, i, r});
    }
    for (int i = m - warm; i < m; ++i) ops.push_back({PassKind::kBackward, i, r});
  }
  return s;
}

Schedule GPipe(int pp, int m) {
  Schedule s;
  s.name = "gpipe";
  s.pp = pp;
  s.micro_batches = m;
  s.per_rank.resize(pp);
  for (int r = 0; r < pp; ++r) {
    for (int i = 0; i < m; ++i) s.per_rank[r].push_back({PassKind::kForward, i, r});
    for (int i = 0; i < m; ++i) s.per_rank[r].push_back({PassKind::kBackward, i, r});
  }
  return s;
}

IterationCosts Uniform(int dp, int m, int chunks, int64_t act, int64_t act_no_rc, int64_t send) {
  IterationCosts c;
  c.Resize(dp, m, chunks);
  for (int d = 0; d < dp; ++d)
    for (int k = 0; k < m; ++k)
      for (int ch = 0; ch < chunks; ++ch) {
        ChunkCost& x = c.At(d, k, ch);
        x.act_bytes = act;
        x.act_bytes_no_recompute = act_no_rc;
        x.send_bytes = ch + 1 < chunks ? send : 0;
      }
  return c;
}

ParallelConfig Par(int dp, int tp, int pp, int m, int zero = 0) {
  ParallelConfig p;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.micro_batches = m;
  p.zero_stage = zero;
  p.optimizer_memory = "simple";  // the textbook 16 bytes per parameter (OptimizerBytesFor tests the others)
  return p;
}

Partition Even(int layers, int chunks) {
  Partition p;
  for (int c = 0; c <= chunks; ++c) p.bounds.push_back(layers * c / chunks);
  return p;
}

TEST(ModelStateTest, ZeroTpDivisionHandChecked) {
  // 1000 params, tp 2 -> 500 per GPU; dp 4.
  EXPECT_EQ(ModelStateBytes(Par(4, 2, 1, 1, 0), 1000), 500 * 16);
  EXPECT_EQ(ModelStateBytes(Par(4, 2, 1, 1, 1), 1000), 500 * 2 + 500 * 2 + 500 * 12 / 4);      // 3500
  EXPECT_EQ(ModelStateBytes(Par(4, 2, 1, 1, 2), 1000), 500 * 2 + 500 * 2 / 4 + 500 * 12 / 4);  // 2750
  EXPECT_EQ(ModelStateBytes(Par(4, 2, 1, 1, 3), 1000), (500 * 2 + 500 * 2 + 500 * 12) / 4);    // 2000
  // dp = 1: ZeRO changes nothing.
  EXPECT_EQ(ModelStateBytes(Par(1, 1, 1, 1, 3), 1000), 16000);
  // 20B parameters, TP 2, ZeRO-1 over 16: 10e9 * (4 + 12/16) = 47.5e9 bytes.
  EXPECT_EQ(ModelStateBytes(Par(16, 2, 1, 1, 1), 20'000'000'000), 47'500'000'000);
}

TEST(ModelStateTest, PipelineRanksSumTheirChunks) {
  const std::vector<int64_t> params = {10, 20, 30, 40, 50, 60, 70, 80};
  // pp 2, vpp 1: layers 0-3 and 4-7.
  EXPECT_EQ(RankParams(Par(1, 1, 2, 1), Even(8, 2), params), (std::vector<int64_t>{100, 260}));
  // pp 2, vpp 2: chunks {0,1},{2,3},{4,5},{6,7}; rank 0 holds chunks 0 and 2.
  ParallelConfig p = Par(1, 1, 2, 1);
  p.vpp = 2;
  EXPECT_EQ(RankParams(p, Even(8, 4), params), (std::vector<int64_t>{30 + 110, 70 + 150}));
  const std::vector<int64_t> states = RankModelStateBytes(Par(2, 1, 2, 1, 1), Even(8, 2), params);
  EXPECT_EQ(states, (std::vector<int64_t>{100 * 4 + 100 * 6, 260 * 4 + 260 * 6}));
}

TEST(ComputeMemoryTest, OneFOneBInFlightIsMinOfPpMinusRankAndM) {
  for (int pp : {1, 2, 4, 8})
    for (int m : {1, 2, 3, 4, 8, 16}) {
      const ParallelConfig par = Par(2, 1, pp, m);
      const std::vector<int64_t> params(pp * 2, 0);
      const IterationCosts costs = Uniform(2, m, pp, 1000, 1000, 0);
      const std::vector<StageMemory> mem =
          ComputeMemory(par, Even(pp * 2, pp), params, OneFOneB(pp, m), costs, 1 << 30);
      ASSERT_EQ(mem.size(), static_cast<size_t>(pp));
      for (int r = 0; r < pp; ++r) {
        EXPECT_EQ(mem[r].stage, r);
        EXPECT_EQ(mem[r].peak_activation_bytes, std::min(pp - r, m) * 1000)
            << "pp " << pp << " m " << m << " r " << r;
      }
    }
}

TEST(ComputeMemoryTest, BuiltSchedulesPeakIsMaxInFlightTimesAct) {
  struct Case {
    const char* name;
    int pp, vpp, m;
  };
  for (const Case& c : {Case{"gpipe", 4, 1, 6}, Case{"1f1b", 4, 1, 8}, Case{"1f1b", 8, 1, 3},
                        Case{"interleaved-1f1b", 4, 2, 8}, Case{"interleaved-1f1b", 2, 3, 4}}) {
    Result<Schedule> s = BuildSchedule(c.name, c.pp, c.vpp, c.m);
    ASSERT_TRUE(s.ok()) << c.name << ": " << s.error().message();
    ParallelConfig par = Par(1, 1, c.pp, c.m);
    par.vpp = c.vpp;
    const int chunks = c.pp * c.vpp;
    const IterationCosts costs = Uniform(1, c.m, chunks, 1000, 1000, 0);
    const std::vector<int64_t> params(chunks, 0);
    ASSERT_TRUE(ValidateMemoryInputs(par, Even(chunks, chunks), params, *s, costs).ok());
    const auto mem = ComputeMemory(par, Even(chunks, chunks), params, *s, costs, 1 << 30);
    const std::vector<int> in_flight = MaxInFlight(*s);
    for (int r = 0; r < c.pp; ++r)
      EXPECT_EQ(mem[r].peak_activation_bytes, in_flight[r] * 1000) << c.name << " rank " << r;
    if (std::string(c.name) == "1f1b") {
      for (int r = 0; r < c.pp; ++r) EXPECT_EQ(in_flight[r], std::min(c.pp - r, c.m));
    }
    if (std::string(c.name) == "gpipe") {
      for (int r = 0; r < c.pp; ++r) EXPECT_EQ(in_flight[r], c.m);
    }
  }
}

TEST(ComputeMemoryTest, GPipeHoldsEveryMicroBatch) {
  for (int pp : {1, 3, 4})
    for (int m : {1, 5, 8}) {
      const IterationCosts costs = Uniform(1, m, pp, 700, 700, 0);
      const auto mem = ComputeMemory(Par(1, 1, pp, m), Even(pp, pp), std::vector<int64_t>(pp, 0),
                                     GPipe(pp, m), costs, 1 << 30);
      for (int r = 0; r < pp; ++r) EXPECT_EQ(mem[r].peak_activation_bytes, m * 700);
    }
}

TEST(ComputeMemoryTest, RecomputeTransientDuringBackward) {
  // Held 100 per micro-batch with recompute; the backward adds its transient, 300 bytes, on top of what is
  // held, its own stored 100 included (pricing_test and recompute_test check the transient's bytes).
  const int pp = 4, m = 8;
  IterationCosts costs = Uniform(1, m, pp, 100, 1000, 0);
  for (ChunkCost& c : costs.costs) c.backward_transient_bytes = 300;
  const auto mem = ComputeMemory(Par(1, 1, pp, m), Even(pp, pp), std::vector<int64_t>(pp, 0), OneFOneB(pp, m),
                                 costs, 1 << 30);
  for (int r = 0; r < pp; ++r) EXPECT_EQ(mem[r].peak_activation_bytes, (pp - r) * 100 + 300);
}

TEST(ComputeMemoryTest, DataDependentWorstReplicaAndBoundary) {
  const int pp = 3, m = 4;
  IterationCosts costs = Uniform(2, m, pp, 100, 100, 50);
  costs.At(1, 0, 0).act_bytes = costs.At(1, 0, 0).act_bytes_no_recompute = 400;  // replica 1, mb 0 is big
  costs.At(0, 2, 1).send_bytes = 80;  // bigger activation out of chunk 1
  const std::vector<int64_t> params = {30, 30, 30};
  const auto mem = ComputeMemory(Par(2, 1, pp, m), Even(3, 3), params, OneFOneB(pp, m), costs, 1000);
  // Rank 0 holds 3 micro-batches at the first backward; replica 1 holds mb 0 (400) + 2 x 100.
  EXPECT_EQ(mem[0].peak_activation_bytes, 600);
  EXPECT_EQ(mem[1].peak_activation_bytes, 200);
  EXPECT_EQ(mem[2].peak_activation_bytes, 100);
  // Boundary: send of own chunk + send of the chunk feeding it.
  EXPECT_EQ(mem[0].boundary_bytes, 50);
  EXPECT_EQ(mem[1].boundary_bytes, 80 + 50);
  EXPECT_EQ(mem[2].boundary_bytes, 80);
  // Model states: 30 params * 16 bytes (ZeRO-0).
  for (const StageMemory& s : mem) {
    EXPECT_EQ(s.model_state_bytes, 480);
    EXPECT_EQ(s.peak_bytes, s.model_state_bytes + s.peak_activation_bytes + s.boundary_bytes);
    EXPECT_EQ(s.capacity_bytes, 1000);
    EXPECT_EQ(s.fits, s.peak_bytes <= 1000);
    EXPECT_EQ(s.short_bytes, std::max<int64_t>(0, s.peak_bytes - 1000));
  }
  EXPECT_FALSE(mem[0].fits);
  EXPECT_EQ(mem[0].short_bytes, 480 + 600 + 50 - 1000);
  EXPECT_TRUE(mem[2].fits);
}

TEST(ComputeMemoryTest, InterleavedChunksOnOneRank) {
  // pp 2, vpp 2, M 2: rank 0 runs chunks 0 and 2; a hand-written order F(0,0) F(1,0) F(0,2) F(1,2) B... .
  ParallelConfig par = Par(1, 1, 2, 2);
  par.vpp = 2;
  Schedule s;
  s.pp = 2;
  s.vpp = 2;
  s.micro_batches = 2;
  s.per_rank.resize(2);
  for (int r = 0; r < 2; ++r) {
    for (int c : {r, r + 2})
      for (int k = 0; k < 2; ++k) s.per_rank[r].push_back({PassKind::kForward, k, c});
    for (int c : {r + 2, r})
      for (int k = 0; k < 2; ++k) s.per_rank[r].push_back({PassKind::kBackward, k, c});
  }
  IterationCosts costs = Uniform(1, 2, 4, 10, 10, 1);
  for (int k = 0; k < 2; ++k) costs.At(0, k, 2).act_bytes = costs.At(0, k, 2).act_bytes_no_recompute = 30;
  const std::vector<int64_t> params(4, 1);
  ASSERT_TRUE(ValidateMemoryInputs(par, Even(4, 4), params, s, costs).ok());
  const auto mem = ComputeMemory(par, Even(4, 4), params, s, costs, 1 << 20);
  EXPECT_EQ(mem[0].peak_activation_bytes, 2 * 10 + 2 * 30);
  EXPECT_EQ(mem[1].peak_activation_bytes, 4 * 10);
  EXPECT_EQ(mem[0].model_state_bytes, 2 * 16);
}

TEST(ComputeMemoryTest, ValidateRejectsMismatches) {
  const ParallelConfig par = Par(1, 1, 2, 2);
  const IterationCosts costs = Uniform(1, 2, 2, 1, 1, 1);
  const std::vector<int64_t> params(4, 1);
  EXPECT_TRUE(ValidateMemoryInputs(par, Even(4, 2), params, OneFOneB(2, 2), costs).ok());
  EXPECT_FALSE(ValidateMemoryInputs(par, Even(4, 3), params, OneFOneB(2, 2), costs).ok());
  EXPECT_FALSE(ValidateMemoryInputs(par, Even(4, 2), params, OneFOneB(3, 2), costs).ok());
  EXPECT_FALSE(
      ValidateMemoryInputs(par, Even(4, 2), params, OneFOneB(2, 3), costs).ok());  // mb 2 out of range
  Schedule wrong_rank = OneFOneB(2, 2);
  wrong_rank.per_rank[0][0].chunk = 1;
  EXPECT_FALSE(ValidateMemoryInputs(par, Even(4, 2), params, wrong_rank, costs).ok());
  // Out-of-range ops are skipped rather than read out of bounds.
  const auto mem = ComputeMemory(par, Even(4, 2), params, OneFOneB(2, 3), costs, 100);
  EXPECT_EQ(mem.size(), 2u);
}

TEST(MergeMemoryTest, ComponentwiseMaxAndPeakOfPeaks) {
  StageMemory a, b;
  a.model_state_bytes = b.model_state_bytes = 100;
  a.peak_activation_bytes = 50;
  b.peak_activation_bytes = 80;
  a.boundary_bytes = 10;
  b.boundary_bytes = 5;
  a.peak_bytes = 160;
  b.peak_bytes = 185;
  a.capacity_bytes = b.capacity_bytes = 170;
  b.fits = false;
  b.short_bytes = 15;
  const auto m = MergeMemory({a}, {b});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].peak_activation_bytes, 80);
  EXPECT_EQ(m[0].boundary_bytes, 10);
  EXPECT_EQ(m[0].peak_bytes, 185);
  EXPECT_FALSE(m[0].fits);
  EXPECT_EQ(m[0].short_bytes, 15);
  EXPECT_EQ(MergeMemory({}, {b})[0].peak_bytes, 185);
  EXPECT_EQ(MergeMemory({a}, {})[0].peak_bytes, 160);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// ZeRO-3 transients by implementation (core/plan/memory.h): closed forms, and "simple" adds nothing.
TEST(MemoryTest, Zero3TransientBytesByImplementation) {
  EXPECT_EQ(Zero3TransientBytes("simple", 1000, 10000, 1), 0);
  EXPECT_EQ(Zero3TransientBytes("fsdp", 1000, 10000, 1), 3 * 2 * 1000);  // current + prefetched layer + grads
  EXPECT_EQ(Zero3TransientBytes("fsdp", 1001, 10000, 2), 3 * 2 * 501);
  // DeepSpeed: the prefetch bucket (stage3_prefetch_bucket_size, 5e7 elements in deepspeed/runtime/zero/config.py)
  // and the reduce bucket (reduce_bucket_size, 5e8), each capped at the rank's parameters.
  EXPECT_EQ(Zero3TransientBytes("deepspeed", 1000, 10000, 1), 2 * (1000 + 10000) + 2 * 10000);
  EXPECT_EQ(Zero3TransientBytes("deepspeed", 200'000'000, 8'000'000'000, 1),
            2 * (200'000'000 + 50'000'000) + 2 * int64_t{500'000'000});
  ParallelConfig pc;
  pc.optimizer_memory = "simple";
  pc.zero_stage = 3;
  pc.dp = 4;
  const Partition part{{0, 2}};
  const std::vector<int64_t> layers = {100, 300};
  const int64_t simple = RankModelStateBytes(pc, part, layers)[0];
  pc.zero3_impl = "fsdp";
  EXPECT_EQ(RankModelStateBytes(pc, part, layers)[0], simple + 3 * 2 * 300);
  pc.zero_stage = 2;  // only ZeRO-3 holds them
  EXPECT_EQ(RankModelStateBytes(pc, part, layers)[0], ModelStateBytes(pc, 400));
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// Optimizer precision (OptimizerBytesFor): bytes per parameter by framework, closed forms from the sources the
// header names. 1000 parameters, tp 2 -> 500 per GPU, dp 4.
TEST(OptimizerMemoryTest, BytesPerParameterByFramework) {
  ParallelConfig p = Par(4, 2, 1, 1, 1);
  p.optimizer_memory = "megatron";  // Megatron docs: bf16 params, fp32 grads, distributed optimizer 6 + 12/d
  EXPECT_EQ(ModelStateBytes(p, 1000), 500 * 6 + 500 * 12 / 4);
  ModelStates s = ModelStatesOf(p, 1000);
  EXPECT_EQ(s.weights, 1000);
  EXPECT_EQ(s.grads, 0);
  EXPECT_EQ(s.main_grads, 2000);  // fp32 main_grad, not sharded by the distributed optimizer
  EXPECT_EQ(s.optimizer, 1500);
  p.zero_stage = 0;  // Megatron docs: 18 bytes without the distributed optimizer
  EXPECT_EQ(ModelStateBytes(p, 1000), 500 * 18);
  // fp32 gradients add 2 bytes per parameter unsharded over the textbook 16 (ZeRO-1).
  p.zero_stage = 1;
  ParallelConfig simple = p;
  simple.optimizer_memory = "simple";
  EXPECT_EQ(ModelStateBytes(p, 1000) - ModelStateBytes(simple, 1000), 500 * 2);
  p.optimizer_memory = "deepspeed";  // BF16_Optimizer: bf16 grads kept + fp32 grads, 8 + 12/d
  EXPECT_EQ(ModelStateBytes(p, 1000), 500 * 8 + 500 * 12 / 4);
  p.zero_stage = 2;  // ZeRO-2 partitions both gradients
  EXPECT_EQ(ModelStateBytes(p, 1000), 500 * 2 + 500 * (2 + 4 + 12) / 4);
  p.zero_stage = 3;
  p.optimizer_memory = "fsdp";  // FSDP mixed precision: fp32 sharded params, grads and moments
  EXPECT_EQ(ModelStateBytes(p, 1000), 500 * 16 / 4);
  // auto: ZeRO-3's implementation, else Megatron.
  p.optimizer_memory = "auto";
  p.zero3_impl = "fsdp";
  EXPECT_EQ(ResolvedOptimizerMemory(p), "fsdp");
  p.zero3_impl = "deepspeed";
  EXPECT_EQ(ResolvedOptimizerMemory(p), "deepspeed");
  p.zero3_impl = "simple";
  EXPECT_EQ(ResolvedOptimizerMemory(p), "megatron");
  p.zero_stage = 1;
  p.zero3_impl = "fsdp";
  EXPECT_EQ(ResolvedOptimizerMemory(p), "megatron");
}

// Hybrid sharding: ZeRO-3 states shard over the shard group, not the whole DP group.
TEST(OptimizerMemoryTest, HybridShardingShardsWithinTheGroup) {
  ParallelConfig p = Par(8, 1, 1, 1, 3);
  p.optimizer_memory = "simple";
  const int64_t all = ModelStateBytes(p, 8000);
  p.zero3_shard_group = 2;
  EXPECT_EQ(ModelStateBytes(p, 8000), 8000 * 16 / 2);
  EXPECT_EQ(all, 8000 * 16 / 8);
  p.zero3_shard_group = 8;  // one group of all ranks: plain ZeRO-3
  EXPECT_EQ(ModelStateBytes(p, 8000), all);
}

// NCCL buffers: communicators x channels x peers x NCCL_BUFFSIZE.
TEST(RuntimeMemoryTest, NcclBuffersPerProcessGroup) {
  DeviceSpec d;
  d.nccl_channels = 16;
  d.nccl_buffsize_bytes = 4 << 20;
  const int64_t per_peer = 16LL * (4 << 20);
  ParallelConfig p = Par(16, 2, 4, 1, 1);  // tp 2: one peer; dp 16, pp 4: two
  EXPECT_EQ(NcclBufferBytes(d, p), per_peer * (1 + 2 + 2));
  p.sp = 8;  // an SP group of 8, and the gradient group spans dp x sp
  EXPECT_EQ(NcclBufferBytes(d, p), per_peer * (1 + 2 + 2 + 2));
  EXPECT_EQ(NcclBufferBytes(d, Par(1, 1, 1, 1)), 0);  // one GPU: no communicator
  d.nccl_channels = 0;
  EXPECT_EQ(NcclBufferBytes(d, p), 0);
}

// The allocator term: the floor alone for equal micro-batches, growing with their spread.
TEST(RuntimeMemoryTest, FragmentationFloorAndSpread) {
  EXPECT_EQ(FragmentationBytes(950, 0, 0.05, 1.0), 50);  // reserved 1000, 5% not handed out
  EXPECT_EQ(FragmentationBytes(950, 0, 0.0, 1.0), 0);
  EXPECT_EQ(FragmentationBytes(950, 200, 0.05, 1.0), 200);
  EXPECT_EQ(FragmentationBytes(950, 200, 0.05, 0.5), 100);
  EXPECT_EQ(FragmentationBytes(950, 80, 0.05, 0.5), 50);  // below the floor
  EXPECT_EQ(FragmentationBytes(950, 400, 0.05, 0.5), 200);
}

// The walk against a device: the peak is the sum of every term, the capacity the device's memory, and the
// fragmentation grows with the per-micro-batch spread (the floor alone for equal micro-batches).
TEST(RuntimeMemoryTest, WalkPeakIncludesEveryTerm) {
  DeviceSpec d;
  d.memory_bytes = 1LL << 40;
  d.cuda_context_bytes = 500;
  d.nccl_channels = 2;
  d.nccl_buffsize_bytes = 10;
  d.workspace_bytes = 30;
  d.cudnn_workspace_bytes = 7;
  d.reserved_bytes = 11;
  d.fragmentation = 0.5;  // floor = allocated
  d.fragmentation_spread = 5;
  const int pp = 2, m = 4;
  const ParallelConfig par = Par(2, 1, pp, m, 1);
  const std::vector<int64_t> params = {100, 100};
  IterationCosts costs = Uniform(2, m, pp, 1000, 1000, 40);
  for (ChunkCost& c : costs.costs) c.backward_transient_bytes = 5;
  auto mem = ComputeMemory(par, Even(2, pp), params, OneFOneB(pp, m), costs, d);
  const int64_t nccl = NcclBufferBytes(d, par);
  EXPECT_EQ(nccl, 2 * 10 * (1 + 1));  // dp 2 and pp 2: one peer each
  for (const StageMemory& s : mem) {
    EXPECT_EQ(s.capacity_bytes, d.memory_bytes);
    EXPECT_EQ(s.workspace_bytes, 37);
    EXPECT_EQ(s.nccl_bytes, nccl);
    EXPECT_EQ(s.cuda_context_bytes, 500);
    EXPECT_EQ(s.other_bytes, 11);
    EXPECT_EQ(s.model_state_bytes, s.weight_bytes + s.grad_bytes + s.main_grad_bytes + s.optimizer_bytes +
                                       s.zero3_transient_bytes);
    EXPECT_EQ(s.allocated_peak_bytes, s.model_state_bytes + s.peak_activation_bytes + s.boundary_bytes + 37);
    EXPECT_EQ(s.fragmentation_bytes, s.allocated_peak_bytes);  // equal micro-batches: the floor
    EXPECT_EQ(s.peak_bytes, 2 * s.allocated_peak_bytes + 500 + nccl + 11);
  }
  EXPECT_EQ(mem[0].peak_activation_bytes, pp * 1000 + 5);  // 1F1B rank 0 holds pp forwards + the transient
  // One micro-batch of rank 1 twice as large: spread 1000, x 5 beats the floor.
  for (int k = 0; k < 2; ++k) {
    costs.At(k, 1, 1).act_bytes = 2000;
    costs.At(k, 1, 1).act_bytes_no_recompute = 2000;
  }
  mem = ComputeMemory(par, Even(2, pp), params, OneFOneB(pp, m), costs, d);
  EXPECT_EQ(mem[1].mb_footprint_max_bytes - mem[1].mb_footprint_min_bytes, 1000);
  EXPECT_EQ(mem[1].fragmentation_bytes, std::max<int64_t>(5000, mem[1].allocated_peak_bytes));
  // The capacity overload counts no runtime and no fragmentation (as before).
  const auto bare = ComputeMemory(par, Even(2, pp), params, OneFOneB(pp, m), costs, d.memory_bytes);
  EXPECT_EQ(bare[1].peak_bytes,
            bare[1].model_state_bytes + bare[1].peak_activation_bytes + bare[1].boundary_bytes);
  // MergeMemory keeps the spread over iterations: an iteration of small micro-batches widens it.
  IterationCosts small = Uniform(2, m, pp, 100, 100, 40);
  const auto merged = MergeMemory(mem, ComputeMemory(par, Even(2, pp), params, OneFOneB(pp, m), small, d));
  EXPECT_EQ(merged[1].mb_footprint_min_bytes, 100);
  EXPECT_EQ(merged[1].fragmentation_bytes, std::max<int64_t>(5 * 1905, merged[1].allocated_peak_bytes));
  EXPECT_EQ(merged[1].peak_bytes,
            merged[1].allocated_peak_bytes + merged[1].fragmentation_bytes + 500 + nccl + 11);
}

// A forward's transient (Megatron CP's per-step buffers) adds to what the forward leaves held.
TEST(RuntimeMemoryTest, ForwardTransientAddsToHeldActivations) {
  const int pp = 1, m = 2;
  IterationCosts costs = Uniform(1, m, 1, 1000, 1000, 0);
  auto peak = [&] {
    return ComputeMemory(Par(1, 1, pp, m), Even(1, 1), {0}, GPipe(pp, m), costs, 1 << 30)[0]
        .peak_activation_bytes;
  };
  EXPECT_EQ(peak(), 2000);
  costs.At(0, 1, 0).forward_transient_bytes = 700;
  EXPECT_EQ(peak(), 2700);
  costs.At(0, 0, 0).forward_transient_bytes = 1500;  // during the first forward: 1000 + 1500
  EXPECT_EQ(peak(), 2700);
  costs.At(0, 0, 0).forward_transient_bytes = 1800;
  EXPECT_EQ(peak(), 2800);
}

// The planners' capacity leaves room for the runtime and the floor: a stage whose model bytes equal it fits.
TEST(RuntimeMemoryTest, PlanUsableMemoryLeavesTheRuntime) {
  DeviceSpec d;
  d.memory_bytes = 80LL << 30;
  d.cuda_context_bytes = 512LL << 20;
  d.nccl_channels = 16;
  d.nccl_buffsize_bytes = 4 << 20;
  d.workspace_bytes = 8 << 20;
  d.fragmentation = 0.05;
  const ParallelConfig par = Par(16, 2, 4, 1, 1);
  const int64_t usable = PlanUsableMemoryBytes(d, par);
  const double outside = static_cast<double>(d.memory_bytes - d.cuda_context_bytes - NcclBufferBytes(d, par));
  EXPECT_EQ(usable, static_cast<int64_t>(outside * 0.95 - (8 << 20)));
  const int64_t allocated = usable + (8 << 20);
  EXPECT_LE(
      allocated + FragmentationBytes(allocated, 0, 0.05, 0) + d.cuda_context_bytes + NcclBufferBytes(d, par),
      d.memory_bytes);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// ---- The allocator's fragmentation against a measured table ----

// traces/clusters/profiles/h200-allocator-fragmentation.csv (backend/gpu/memory_probe.py on an H200): Llama-3-8B
// blocks trained on micro-batches of growing size spread; per run the allocated and reserved peaks and the
// per-micro-batch footprint's extremes, as memory.h defines them. The H200 preset's two constants (assumptions
// before the table existed: none was fitted on it) predict each run's reserved peak from its allocated peak and
// its footprint spread; the errors are those reports/fidelity.md states.
struct ProbeRun {
  std::string name, alloc_conf;
  int64_t allocated = 0, reserved = 0, footprint_min = 0, footprint_max = 0, held_max = 0;
};

// The rows of a profile table under traces/clusters/profiles/, each as column name -> value.
std::vector<std::map<std::string, std::string>> ReadProfileTable(const std::string& file) {
  auto csv = CsvReader::Open(std::string(MMTWIN_SOURCE_DIR) + "/traces/clusters/profiles/" + file);
  EXPECT_TRUE(csv.ok()) << file;
  std::vector<std::map<std::string, std::string>> rows;
  if (!csv.ok()) return rows;
  std::vector<std::string_view> f;
  std::vector<std::string> header;
  while (csv->Next(f)) {
    if (header.empty()) {
      header.assign(f.begin(), f.end());
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < f.size() && i < header.size(); ++i) row[header[i]] = std::string(f[i]);
    rows.push_back(std::move(row));
  }
  EXPECT_TRUE(csv->status().ok()) << csv->status().error().message();
  return rows;
}

std::vector<ProbeRun> ReadProbe() {
  std::vector<ProbeRun> runs;
  for (auto& r : ReadProfileTable("h200-allocator-fragmentation.csv"))
    runs.push_back({r["run"], r["alloc_conf"], std::stoll(r["allocated_peak_bytes"]),
                    std::stoll(r["reserved_peak_bytes"]), std::stoll(r["footprint_min_bytes"]),
                    std::stoll(r["footprint_max_bytes"]), std::stoll(r["held_max_bytes"])});
  return runs;
}

double ReservedError(const ProbeRun& r, double floor, double spread) {
  const int64_t predicted =
      r.allocated + FragmentationBytes(r.allocated, r.footprint_max - r.footprint_min, floor, spread);
  return static_cast<double>(predicted) / static_cast<double>(r.reserved) - 1.0;
}

TEST(FragmentationProbeTest, ThePresetPredictsTheMeasuredReservedPeaks) {
  const std::vector<ProbeRun> runs = ReadProbe();
  ASSERT_EQ(runs.size(), 18u);
  auto h200 = LoadCluster("h200-8x400g");
  ASSERT_TRUE(h200.ok()) << h200.error().message();
  const double f = h200->device.fragmentation, c = h200->device.fragmentation_spread;
  double model = 0, none = 0;
  int n = 0;
  for (const ProbeRun& r : runs) {
    if (!r.alloc_conf.empty()) continue;  // the expandable-segments runs: below
    ++n;
    model += std::abs(ReservedError(r, f, c));
    none += std::abs(ReservedError(r, 0, 0));
    // Equal micro-batches: the floor alone, within 5% of the reserved peak.
    if (r.footprint_max == r.footprint_min) {
      EXPECT_LT(std::abs(ReservedError(r, f, c)), 0.05) << r.name;
    }
  }
  ASSERT_EQ(n, 15);
  model /= n;
  none /= n;
  // Measured: 18.0% with the preset's terms, 22.9% without any (per run -33% .. +61%: the order in which sizes
  // arrive matters, which one spread figure cannot see; reports/fidelity.md).
  EXPECT_LT(model, 0.19);
  EXPECT_LT(model, none - 0.04);
}

// The same runs through the allocator replay (device.allocator_model replay): each run's 32 micro-batches
// (h200-allocator-fragmentation-tokens.csv, in the order the probe trained them) as one rank's passes, held
// activations and backward transients per token from the table's largest micro-batch, replayed by
// ReplayActivationExcessBytes; the reserved peak predicted as the measured allocated peak plus the larger of the
// floor and the replayed excess, with Korthikanti's generic tensors (what the walk replays) and with
// Llama-3-8B's own (TransformerTensorShares).
double ReplayMape(const TransformerConfig& tf, double* worst) {
  std::map<std::string, std::vector<int64_t>> tokens;
  for (auto& r : ReadProfileTable("h200-allocator-fragmentation-tokens.csv"))
    tokens[r["run"]].push_back(std::stoll(r["tokens"]));
  const std::vector<double> shares = TransformerTensorShares(tf);
  double sum = 0;
  int n = 0;
  *worst = 0;
  for (const ProbeRun& r : ReadProbe()) {
    if (!r.alloc_conf.empty()) continue;
    const std::vector<int64_t>& t = tokens.at(r.name);
    EXPECT_EQ(t.size(), 32u) << r.name;
    const int in_flight = r.name.ends_with("-k4") ? 4 : 1;
    const int64_t t_max = *std::max_element(t.begin(), t.end());
    // Per token: the held activations and the backward's transient of the largest micro-batch.
    const double held_per_token = static_cast<double>(r.held_max) / static_cast<double>(t_max);
    const double transient_per_token = static_cast<double>(r.footprint_max - r.held_max) / t_max;
    IterationCosts costs;
    costs.Resize(1, static_cast<int>(t.size()), 1);
    for (size_t m = 0; m < t.size(); ++m) {
      costs.At(0, static_cast<int>(m), 0).act_bytes = static_cast<int64_t>(held_per_token * t[m]);
      costs.At(0, static_cast<int>(m), 0).backward_transient_bytes =
          static_cast<int64_t>(transient_per_token * t[m]);
    }
    // 1F1B on the first of `in_flight` stages, per iteration of 8 micro-batches.
    std::vector<PipeOp> ops;
    for (int it = 0; it < 4; ++it) {
      const int w = std::min(in_flight - 1, 8), base = it * 8;
      for (int j = 0; j < w; ++j) ops.push_back({PassKind::kForward, base + j, 0});
      for (int j = w; j < 8; ++j) {
        ops.push_back({PassKind::kForward, base + j, 0});
        ops.push_back({PassKind::kBackward, base + j - w, 0});
      }
      for (int j = 8 - w; j < 8; ++j) ops.push_back({PassKind::kBackward, base + j, 0});
    }
    const int64_t excess = ReplayActivationExcessBytes(ops, costs, 0, Partition{{0, 4}}, shares);
    const int64_t predicted = r.allocated + std::max(FragmentationBytes(r.allocated, 0, 0.05, 0), excess);
    const double e = static_cast<double>(predicted) / static_cast<double>(r.reserved) - 1.0;
    if (std::getenv("MMTWIN_PRINT_REPLAY")) std::printf("  %-24s %+.1f%%\n", r.name.c_str(), 100 * e);
    sum += std::abs(e);
    *worst = std::max(*worst, std::abs(e));
    ++n;
  }
  EXPECT_EQ(n, 15);
  return sum / std::max(1, n);
}

// The walk with device.allocator_model replay: each stage's fragmentation is the larger of the floor and the
// replay of the replica whose activations peak highest, the spread term unused; equal micro-batches replay to
// no excess (every block is reused).
TEST(RuntimeMemoryTest, ReplayReplacesTheSpreadTerm) {
  DeviceSpec d;
  d.memory_bytes = 1LL << 40;
  d.fragmentation = 0.01;
  d.fragmentation_spread = 1;
  const int pp = 2, m = 6;
  const ParallelConfig par = Par(2, 1, pp, m, 1);
  const std::vector<int64_t> params = {100, 100, 100, 100};
  IterationCosts costs = Uniform(2, m, pp, 1000, 1000, 0);
  // Activations that creep upward on replica 1 (40 to 70 MiB, each micro-batch larger than the last), equal on
  // replica 0.
  for (int k = 0; k < m; ++k)
    for (int c = 0; c < pp; ++c) {
      costs.At(0, k, c).act_bytes = int64_t{80} << 20;
      costs.At(1, k, c).act_bytes = (int64_t{40} + 6 * k) << 20;
    }
  const Partition part = Even(4, pp);
  const Schedule sched = OneFOneB(pp, m);
  d.allocator_model = "spread";
  const auto spread = ComputeMemory(par, part, params, sched, costs, d);
  d.allocator_model = "replay";
  const auto replay = ComputeMemory(par, part, params, sched, costs, d);
  for (int r = 0; r < pp; ++r) {
    // Replica 0 (80 MiB each) peaks highest: its replay is the one taken, and equal sizes leave no excess.
    EXPECT_EQ(replay[r].replay_excess_bytes,
              ReplayActivationExcessBytes(sched.per_rank[r], costs, 0, part, {}));
    EXPECT_GE(replay[r].replay_excess_bytes, 0);
    EXPECT_EQ(replay[r].fragmentation_bytes,
              std::max(FragmentationBytes(replay[r].allocated_peak_bytes, 0, 0.01, 0),
                       replay[r].replay_excess_bytes));
    EXPECT_EQ(spread[r].replay_excess_bytes, -1);
    EXPECT_GT(spread[r].fragmentation_bytes, replay[r].fragmentation_bytes);  // the spread term: 30 MiB x 1
  }
  // The order sizes arrive in decides the excess: one micro-batch in flight, sizes 40 .. 90 MiB rising (each
  // larger than every cached block: new segments each time) against the same sizes falling (the first cuts
  // blocks that serve every later one).
  IterationCosts rising = Uniform(1, m, 1, 0, 0, 0), falling = rising;
  for (int k = 0; k < m; ++k) {
    rising.At(0, k, 0).act_bytes = (int64_t{40} + 10 * k) << 20;
    falling.At(0, k, 0).act_bytes = (int64_t{90} - 10 * k) << 20;
  }
  const Schedule ga = OneFOneB(1, m);
  const int64_t up = ReplayActivationExcessBytes(ga.per_rank[0], rising, 0, Partition{{0, 1}}, {});
  const int64_t down = ReplayActivationExcessBytes(ga.per_rank[0], falling, 0, Partition{{0, 1}}, {});
  EXPECT_GT(up, 2 * down) << up << " vs " << down;
  // Merging keeps the larger replayed excess.
  std::vector<StageMemory> a = replay, b = replay;
  b[0].replay_excess_bytes = int64_t{1} << 30;
  const auto merged = MergeMemory(a, b);
  EXPECT_EQ(merged[0].replay_excess_bytes, int64_t{1} << 30);
  EXPECT_EQ(merged[0].fragmentation_bytes, int64_t{1} << 30);
}

// Near its memory a job keeps less cached: the walk's replay runs under the device's limit (memory less the
// stage's other terms), where a new segment first releases the whole free segments, as PyTorch retries a failed
// cudaMalloc. Micro-batches of rising size (each needs a new segment) leave a large excess without a limit; with
// the memory set between the allocated peak and that, the stage fits and its excess shrinks to what releasing
// cannot free.
TEST(RuntimeMemoryTest, ReplayUnderTheDeviceLimitReleasesCachedSegments) {
  DeviceSpec d;
  d.memory_bytes = 1LL << 40;
  d.allocator_model = "replay";
  const int m = 6;
  const ParallelConfig par = Par(1, 1, 1, m, 1);
  const std::vector<int64_t> params = {100, 100};
  const Partition part = Even(2, 1);
  const Schedule sched = OneFOneB(1, m);
  IterationCosts rising = Uniform(1, m, 1, 0, 0, 0);
  for (int k = 0; k < m; ++k) rising.At(0, k, 0).act_bytes = (int64_t{400} + 100 * k) << 20;
  const auto unlimited = ComputeMemory(par, part, params, sched, rising, d);
  const StageMemory& u = unlimited[0];
  ASSERT_GT(u.replay_excess_bytes, int64_t{500} << 20) << u.replay_excess_bytes;
  // Memory that holds the allocated peak and half the unlimited excess.
  const int64_t others = u.peak_bytes - u.allocated_peak_bytes - u.fragmentation_bytes + u.model_state_bytes +
                         u.boundary_bytes + u.workspace_bytes;
  d.memory_bytes = u.allocated_peak_bytes + u.cuda_context_bytes + u.nccl_bytes + u.other_bytes +
                   u.replay_excess_bytes / 2;
  const auto limited = ComputeMemory(par, part, params, sched, rising, d);
  const StageMemory& l = limited[0];
  EXPECT_FALSE(u.peak_bytes <= d.memory_bytes);  // the unlimited replay would not fit this device
  EXPECT_TRUE(l.fits) << l.peak_bytes << " > " << d.memory_bytes;
  EXPECT_LT(l.replay_excess_bytes, u.replay_excess_bytes);
  EXPECT_EQ(l.allocated_peak_bytes, u.allocated_peak_bytes);
  // It is the replay with that limit: the device's memory less everything but the activations.
  EXPECT_EQ(l.replay_excess_bytes,
            ReplayActivationExcessBytes(sched.per_rank[0], rising, 0, part, {}, nullptr, d.memory_bytes - others));
}

// A run's replay carries each replica's allocator from one iteration to the next (MemoryReplay): an iteration of
// larger micro-batches than the last cannot use the blocks the last one cut, which a replay that starts empty
// does not see.
TEST(RuntimeMemoryTest, ReplayCarriesTheAllocatorAcrossIterations) {
  DeviceSpec d;
  d.memory_bytes = 1LL << 40;
  d.fragmentation = 0.01;
  d.allocator_model = "replay";
  const int m = 4;
  const ParallelConfig par = Par(2, 1, 1, m, 1);
  const std::vector<int64_t> params = {100, 100};
  const Partition part = Even(2, 1);
  const Schedule sched = OneFOneB(1, m);
  IterationCosts small = Uniform(2, m, 1, 0, 0, 0), large = small;
  for (int dp = 0; dp < 2; ++dp)
    for (int k = 0; k < m; ++k) {
      small.At(dp, k, 0).act_bytes = int64_t{400} << 20;  // tensors of 8-50 MiB: segments of their own size
      large.At(dp, k, 0).act_bytes = int64_t{700} << 20;
    }
  MemoryReplay replay;
  const auto first = ComputeMemory(par, part, params, sched, small, d, {}, &replay);
  const auto second = ComputeMemory(par, part, params, sched, large, d, {}, &replay);
  ASSERT_EQ(replay.allocators.size(), 1u);
  EXPECT_EQ(replay.allocators[0].size(), 2u);  // both replicas (at most kReplayedReplicas)
  const auto fresh = ComputeMemory(par, part, params, sched, large, d);
  // Most of the first iteration's blocks are too small for the second's tensors and stay cached: more than a
  // tenth of a small micro-batch's activations above what an empty allocator strands.
  EXPECT_GT(second[0].replay_excess_bytes, fresh[0].replay_excess_bytes + (int64_t{40} << 20))
      << second[0].replay_excess_bytes << " vs " << fresh[0].replay_excess_bytes;
  EXPECT_GE(MergeMemory(first, second)[0].fragmentation_bytes, second[0].replay_excess_bytes);
}

TEST(FragmentationProbeTest, TheAllocatorReplayPredictsTheMeasuredReservedPeaks) {
  TransformerConfig llama;  // Llama-3-8B's block, as the probe trained it
  llama.layers = 4;
  llama.hidden = 4096;
  llama.ffn = 14336;
  llama.heads = 32;
  llama.kv_heads = 8;
  llama.head_dim = 128;
  llama.mlp = MlpKind::kSwiGlu;
  double worst_llama = 0, worst_generic = 0;
  const double llama_mape = ReplayMape(llama, &worst_llama);
  const double generic_mape = ReplayMape(TransformerConfig{}, &worst_generic);
  std::printf(
      "allocator replay: reserved-peak MAPE %.1f%% (worst %.1f%%) with Llama-3-8B's tensors, %.1f%% (worst "
      "%.1f%%) with Korthikanti's\n",
      100 * llama_mape, 100 * worst_llama, 100 * generic_mape, 100 * worst_generic);
  // Measured: 3.8% (worst 9.9%) with Korthikanti's tensors, what the walk replays; 5.0% (worst 21.2%, the
  // slowly creeping uniform +-25% sizes with one micro-batch in flight) with the block's own. Both a fraction
  // of the spread term's 18.0% (ThePresetPredictsTheMeasuredReservedPeaks).
  EXPECT_LT(generic_mape, 0.045);
  EXPECT_LT(worst_generic, 0.11);
  EXPECT_LT(llama_mape, 0.06);
  EXPECT_LT(worst_llama, 0.25);
}

// Four runs of 40 iterations (h200-allocator-long.csv: the peaks after every iteration): a job's reserved peak
// keeps growing as larger micro-batches arrive (lognormal sizes, 4 in flight: 2.7 GiB above the allocated peak
// after one iteration, 17 GiB after sixteen). Replayed with one allocator carried across the iterations
// (MemoryReplay), the predicted reserved peak after each iteration follows; an allocator that starts empty every
// iteration (the largest of its excesses so far) does not.
struct LongReplay {
  double carried_mape = 0, fresh_mape = 0, carried_last_mape = 0, spread_last_mape = 0;
};

LongReplay ReplayLongRuns() {
  std::map<std::string, ProbeRun> runs;
  for (auto& r : ReadProfileTable("h200-allocator-long-runs.csv"))
    runs[r["run"]] = {r["run"],
                      "",
                      std::stoll(r["allocated_peak_bytes"]),
                      std::stoll(r["reserved_peak_bytes"]),
                      std::stoll(r["footprint_min_bytes"]),
                      std::stoll(r["footprint_max_bytes"]),
                      std::stoll(r["held_max_bytes"])};
  std::map<std::string, int64_t> t_max;
  const auto rows = ReadProfileTable("h200-allocator-long.csv");
  for (const auto& row : rows) {
    std::stringstream ss(row.at("tokens"));
    int64_t t = 0;
    while (ss >> t) t_max[row.at("run")] = std::max(t_max[row.at("run")], t);
  }
  std::map<std::string, CachingAllocatorModel> carried;
  std::map<std::string, int64_t> fresh_excess;
  LongReplay out;
  int n = 0, last = 0;
  for (const auto& row : rows) {
    const std::string& name = row.at("run");
    const ProbeRun& r = runs.at(name);
    const int in_flight = name.ends_with("-k4") ? 4 : 1;
    const double held_per_token = static_cast<double>(r.held_max) / static_cast<double>(t_max[name]);
    const double transient_per_token = static_cast<double>(r.footprint_max - r.held_max) / t_max[name];
    std::vector<int64_t> t;
    std::stringstream ss(row.at("tokens"));
    for (int64_t v = 0; ss >> v;) t.push_back(v);
    const int m = static_cast<int>(t.size());
    IterationCosts costs;
    costs.Resize(1, m, 1);
    for (int k = 0; k < m; ++k) {
      costs.At(0, k, 0).act_bytes = static_cast<int64_t>(held_per_token * t[k]);
      costs.At(0, k, 0).backward_transient_bytes = static_cast<int64_t>(transient_per_token * t[k]);
    }
    std::vector<PipeOp> ops;
    const int w = std::min(in_flight - 1, m);
    for (int j = 0; j < w; ++j) ops.push_back({PassKind::kForward, j, 0});
    for (int j = w; j < m; ++j) {
      ops.push_back({PassKind::kForward, j, 0});
      ops.push_back({PassKind::kBackward, j - w, 0});
    }
    for (int j = m - w; j < m; ++j) ops.push_back({PassKind::kBackward, j, 0});
    const int64_t carried_excess =
        ReplayActivationExcessBytes(ops, costs, 0, Partition{{0, 4}}, {}, &carried[name]);
    fresh_excess[name] =
        std::max(fresh_excess[name], ReplayActivationExcessBytes(ops, costs, 0, Partition{{0, 4}}, {}));
    const int64_t allocated = std::stoll(row.at("allocated_peak_bytes"));
    const double reserved = static_cast<double>(std::stoll(row.at("reserved_peak_bytes")));
    const auto error = [&](int64_t excess) {
      return std::abs(
          static_cast<double>(allocated + std::max(FragmentationBytes(allocated, 0, 0.05, 0), excess)) /
              reserved -
          1.0);
    };
    out.carried_mape += error(carried_excess);
    out.fresh_mape += error(fresh_excess[name]);
    ++n;
    if (row.at("iteration") == "39") {
      out.carried_last_mape += error(carried_excess);
      // The spread term of the whole run: 1 x the footprint's max - min (and the floor).
      out.spread_last_mape += error(r.footprint_max - r.footprint_min);
      ++last;
    }
  }
  EXPECT_EQ(n, 160);
  EXPECT_EQ(last, 4);
  out.carried_mape /= std::max(1, n);
  out.fresh_mape /= std::max(1, n);
  out.carried_last_mape /= std::max(1, last);
  out.spread_last_mape /= std::max(1, last);
  return out;
}

TEST(FragmentationProbeTest, AnAllocatorCarriedAcrossIterationsFollowsALongJob) {
  const LongReplay r = ReplayLongRuns();
  std::printf(
      "long runs: reserved-peak MAPE over every iteration %.1f%% carried, %.1f%% fresh; after 40 "
      "iterations %.1f%% carried, %.1f%% the spread term\n",
      100 * r.carried_mape, 100 * r.fresh_mape, 100 * r.carried_last_mape, 100 * r.spread_last_mape);
  // Measured: 3.7% carried against 9.2% fresh; after 40 iterations 4.5% against the spread term's (printed).
  EXPECT_LT(r.carried_mape, 0.05);
  EXPECT_LT(r.carried_mape, r.fresh_mape / 2);
  EXPECT_LT(r.carried_last_mape, r.spread_last_mape);
}

// With PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the allocator maps pages into one growing segment: the
// measured excess is 1.0-1.7% of the reserved peak whatever the spread, which a floor of 1.5% and no spread term
// (traces/clusters/README.md's override for such jobs) reproduce within 1%; the default constants would not.
TEST(FragmentationProbeTest, ExpandableSegmentsLeaveTheFloorOnly) {
  int n = 0;
  for (const ProbeRun& r : ReadProbe()) {
    if (r.alloc_conf != "expandable_segments:True") continue;
    ++n;
    EXPECT_LT(std::abs(ReservedError(r, 0.015, 0)), 0.01) << r.name;
    if (r.footprint_max > r.footprint_min * 2) {
      EXPECT_GT(ReservedError(r, 0.05, 1.0), 0.2) << r.name;
    }
  }
  EXPECT_EQ(n, 3);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/plan/memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/plan/schedule.h"

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
  StageMemory a{0, 100, 50, 10, 160, 170, true, 0};
  StageMemory b{0, 100, 80, 5, 185, 170, false, 15};
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
  // DeepSpeed: the buckets (5e8 elements each) capped at the rank's parameters.
  EXPECT_EQ(Zero3TransientBytes("deepspeed", 1000, 10000, 1), 2 * (1000 + 10000) + 2 * 10000);
  EXPECT_EQ(Zero3TransientBytes("deepspeed", 200'000'000, 8'000'000'000, 1),
            2 * (200'000'000 + 500'000'000) + 2 * int64_t{500'000'000});
  ParallelConfig pc;
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

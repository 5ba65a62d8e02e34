// SPDX-License-Identifier: Apache-2.0
// DP gradient buckets become ready during the chunk's last backward, layer by layer from the chunk's end
// (op_graph.h), not all at its end. Oracles: BucketReadyPiece by hand, and a DP2 iteration timed by hand.
#include <gtest/gtest.h>

#include <vector>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

using fixtures::MustBuild;
using fixtures::Pc;

// 4 layers of 10, 10, 30, 50 parameters (forward order), 200 gradient bytes in buckets of 50. Counted from the
// chunk's end the layers complete 0.5, 0.8, 0.9 and 1.0 of the parameters; the buckets need 0.25, 0.5, 0.75
// and 1.0 of the bytes, so they are complete after the layers ending at 0.5, 0.5, 0.8 and 1.0.
ChunkStatic Chunk() {
  ChunkStatic s;
  s.params = 100;
  s.grad_bytes_per_gpu = 200;
  s.layer_params = {10, 10, 30, 50};
  return s;
}

// DP2 costs of m micro-batches: forward 10 us, backward 40 us each.
IterationCosts Dp2Costs(int m) {
  IterationCosts c;
  c.Resize(2, m, 1);
  for (ChunkCost& k : c.costs) {
    k.fwd_us = 10;
    k.bwd_us = 40;
  }
  return c;
}

// Buckets of 50 bytes at 5e6 B/s without latency: 10 us per bucket all-reduced over DP2.
CommSpec Comm50() {
  CommSpec comm;
  comm.dp_bytes_per_s = 5e6;
  comm.dp_latency_us = 0;
  comm.dp_bucket_bytes = 50;
  return comm;
}

TEST(GradientBucketsTest, ReadyPieceByHand) {
  const ChunkStatic s = Chunk();
  // 4 pieces of a quarter each: 0.5 ends piece 1, 0.8 falls in piece 3, 1.0 ends piece 3.
  EXPECT_EQ(BucketReadyPiece(s, 50, 0, 4), 1);
  EXPECT_EQ(BucketReadyPiece(s, 50, 1, 4), 1);
  EXPECT_EQ(BucketReadyPiece(s, 50, 2, 4), 3);
  EXPECT_EQ(BucketReadyPiece(s, 50, 3, 4), 3);
  // 10 pieces: 0.5 ends piece 4, 0.8 ends piece 7.
  EXPECT_EQ(BucketReadyPiece(s, 50, 0, 10), 4);
  EXPECT_EQ(BucketReadyPiece(s, 50, 2, 10), 7);
  // Without per-layer sizes the bytes appear evenly: 0.25 ends piece 0 of 4.
  ChunkStatic even = s;
  even.layer_params.clear();
  EXPECT_EQ(BucketReadyPiece(even, 50, 0, 4), 0);
  EXPECT_EQ(BucketReadyPiece(even, 50, 2, 4), 2);
  // One piece: everything at the end.
  EXPECT_EQ(BucketReadyPiece(s, 50, 0, 1), 0);
}

// DP2, pp 1, one micro-batch: forward 10 us, backward 40 us (pieces of 10 us, 10..50), buckets of 50 bytes
// all-reduced in 2(d-1)/d * 50 B / 5e6 B/s = 10 us each, no latency. Buckets 0 and 1 start when the backward
// is half done (30 us) and run 30-40, 40-50; bucket 2 is ready at 50 (50-60), bucket 3 at 50 too (60-70): the
// iteration ends at 70 us. With all buckets ready at the end of the backward it would end at 50 + 4 x 10 = 90.
TEST(GradientBucketsTest, BucketsOverlapTheBackwardThatProducesThem) {
  const ParallelConfig pc = Pc(/*dp=*/2, /*pp=*/1, /*vpp=*/1, /*m=*/1, /*zero=*/0);
  IterationCosts c = Dp2Costs(1);
  const CommSpec comm = Comm50();
  const OpGraph g = MustBuild(pc, "1f1b", c, {Chunk()}, comm);
  const IterationTiming t = EvaluateAnalytic(g);
  EXPECT_NEAR(t.iteration_time_us, 70, 1e-9);
  int pieces = 0, groups = 0;
  for (int i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.ops[i];
    if (op.kind == OpKind::kBackward) {
      ++pieces;
      EXPECT_EQ(op.pieces, 4);
      EXPECT_NEAR(t.finish_us[i] - t.start_us[i], 10, 1e-9);
    }
    // Buckets 0 and 1 (released by piece 1) are one op of 20 us, buckets 2 and 3 (piece 3) another; pieces 0
    // and 2 release none (empty ops of zero time).
    if (op.kind == OpKind::kDpCollective && op.buckets > 0) {
      ++groups;
      EXPECT_EQ(op.buckets, 2);
      EXPECT_NEAR(t.start_us[i], op.bucket == 0 ? 30 : 50, 1e-9) << g.Describe(i);
      EXPECT_NEAR(t.finish_us[i] - t.start_us[i], 20, 1e-9) << g.Describe(i);
    }
  }
  EXPECT_EQ(groups, 2 * 2);
  EXPECT_EQ(pieces, 2 * 4);  // 4 pieces per replica
  // Re-pricing keeps the pieces: a backward twice as long moves every bucket (pieces of 20 us).
  for (ChunkCost& k : c.costs) k.bwd_us = 80;
  auto s = BuildSchedule("1f1b", 1, 1, 1);
  ASSERT_TRUE(s.ok());
  OpGraph h = g;
  ASSERT_TRUE(RepriceIterationGraph(&h, *s, c).ok());
  // Buckets 0, 1 after piece 1 (10 + 40 = 50): 50-60, 60-70; buckets 2, 3 at the end (90): 90-100, 100-110.
  EXPECT_NEAR(EvaluateAnalytic(h).iteration_time_us, 110, 1e-9);
  // A chunk without gradients to synchronize (frozen, or 0 bytes) keeps its backward whole (it had none at all).
  ChunkStatic frozen;
  const OpGraph z = MustBuild(pc, "1f1b", c, {frozen}, comm);
  int backwards = 0;
  for (const Op& op : z.ops) backwards += op.kind == OpKind::kBackward && op.pieces == 1;
  EXPECT_EQ(backwards, 2);
  EXPECT_NEAR(EvaluateAnalytic(z).iteration_time_us, 10 + 80, 1e-9);
}

// Without overlap (ParallelConfig::overlap_grad_reduce false: Megatron-LM's default) the same buckets wait for
// the device's last backward: 50 + 4 x 10 = 90 us. With two micro-batches the first one's backward releases
// nothing: forwards and backwards 2 x (10 + 40) = 100, then the four buckets: 140 us.
TEST(GradientBucketsTest, WithoutOverlapTheBucketsWaitForTheWholeBackward) {
  ParallelConfig pc = Pc(/*dp=*/2, /*pp=*/1, /*vpp=*/1, /*m=*/1, /*zero=*/0);
  pc.overlap_grad_reduce = false;
  const CommSpec comm = Comm50();
  const OpGraph g = MustBuild(pc, "1f1b", Dp2Costs(1), {Chunk()}, comm);
  const IterationTiming t = EvaluateAnalytic(g);
  EXPECT_NEAR(t.iteration_time_us, 90, 1e-9);
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.ops[i].kind == OpKind::kDpCollective && g.ops[i].buckets > 0) {
      EXPECT_GE(t.start_us[i], 50 - 1e-9) << g.Describe(i);
    }
  pc.micro_batches = 2;
  const IterationCosts c2 = Dp2Costs(2);
  EXPECT_NEAR(EvaluateAnalytic(MustBuild(pc, "1f1b", c2, {Chunk()}, comm)).iteration_time_us, 140, 1e-9);
  pc.overlap_grad_reduce = true;  // overlapped: the last backward's buckets as above, 100 - 50 + 70 = 120
  EXPECT_NEAR(EvaluateAnalytic(MustBuild(pc, "1f1b", c2, {Chunk()}, comm)).iteration_time_us, 120, 1e-9);
}

}  // namespace
}  // namespace mmtwin

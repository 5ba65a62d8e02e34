// SPDX-License-Identifier: Apache-2.0
// The op recorder (backend/op_recorder.h, no Torch): records only measured iterations, turns marks into times on
// rank 0's clock when the iteration is resolved, gives compute ops their micro-batch's features (and no other
// op), splits a backward that recomputed into its recompute and its backward, and fills each layer's backward
// into its forward's row.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "backend/op_recorder.h"

namespace mmtwin::backend {
namespace {

// A timeline stand-in: each mark is the time it was made with.
struct Clock {
  std::vector<double> us;
  Mark At(double t) {
    us.push_back(t);
    return Mark{static_cast<int32_t>(us.size() - 1)};
  }
  double operator()(Mark m) const { return us.at(static_cast<size_t>(m.i)); }
};

TEST(OpRecorder, RecordsNothingInAnIterationThatIsNotMeasured) {
  Clock c;
  OpRecorder r(3);
  r.BeginIteration(7, false, {{100, 5.0, 2}});
  EXPECT_EQ(r.Record(OpKind::kForward, Lane::kCompute, 0, 0, c.At(10), c.At(20)), nullptr);
  OpRecord dp;
  r.RecordTimed(dp);
  LayerTiming row;
  r.AddLayer(row, c.At(1), c.At(2));
  r.RecordBackward(0, 0, c.At(3), {{c.At(3), c.At(4)}}, c.At(5));
  r.Resolve(c);
  EXPECT_TRUE(r.ops().empty());
  EXPECT_TRUE(r.layers().empty());
  EXPECT_FALSE(r.measuring());
  EXPECT_EQ(r.iteration(), 7);
}

TEST(OpRecorder, StampsTheIterationDeviceAndRankZerosClock) {
  Clock c;
  OpRecorder r(3);
  r.set_clock_offset_us(1000);
  r.BeginIteration(7, true, {{100, 5.0, 2}, {40, 1.5, 1}});
  OpRecord* fwd = r.Record(OpKind::kForward, Lane::kCompute, 1, 2, c.At(10), c.At(25));
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->source, RecordSource::kMeasured);
  EXPECT_EQ(fwd->iteration, 7);
  EXPECT_EQ(fwd->device, 3);
  EXPECT_EQ(fwd->micro_batch, 1);
  EXPECT_EQ(fwd->chunk, 2);
  EXPECT_EQ(fwd->tokens, 40);  // micro-batch 1's features
  EXPECT_DOUBLE_EQ(fwd->attention_pairs, 1.5);
  EXPECT_EQ(fwd->spans, 1);
  // A send carries bytes and no features; a span that runs backwards records 0.
  OpRecord* send = r.Record(OpKind::kP2pSendActivation, Lane::kP2pForward, 0, 0, c.At(30), c.At(29), 4096);
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->bytes, 4096);
  EXPECT_EQ(send->tokens, 0);
  send->peer = 5;  // the returned record is the stored one
  // A DP op timed by its owner on the host clock.
  OpRecord bucket;
  bucket.kind = OpKind::kDpCollective;
  bucket.lane = Lane::kDp;
  bucket.bucket = 2;
  bucket.start_us = 50;
  bucket.duration_us = 8;
  r.RecordTimed(bucket);
  r.Resolve(c);
  ASSERT_EQ(r.ops().size(), 3u);
  EXPECT_DOUBLE_EQ(r.ops()[0].start_us, 1010);
  EXPECT_DOUBLE_EQ(r.ops()[0].duration_us, 15);
  EXPECT_EQ(r.ops()[1].peer, 5);
  EXPECT_DOUBLE_EQ(r.ops()[1].start_us, 1030);
  EXPECT_DOUBLE_EQ(r.ops()[1].duration_us, 0);
  EXPECT_EQ(r.ops()[2].source, RecordSource::kMeasured);
  EXPECT_EQ(r.ops()[2].iteration, 7);
  EXPECT_EQ(r.ops()[2].device, 3);
  EXPECT_EQ(r.ops()[2].bucket, 2);
  EXPECT_DOUBLE_EQ(r.ops()[2].start_us, 1050);
  EXPECT_DOUBLE_EQ(r.ops()[2].duration_us, 8);
  // The next iteration starts empty.
  r.BeginIteration(8, true, {});
  EXPECT_TRUE(r.ops().empty());
  EXPECT_EQ(r.Record(OpKind::kBackward, Lane::kCompute, 0, 0, c.At(0), c.At(1))->tokens, 0);  // no such mb
}

TEST(OpRecorder, ABackwardThatRecomputedIsSplitIntoItsRecomputeAndItsBackward) {
  Clock c;
  OpRecorder r(0);
  r.BeginIteration(1, true, {{64, 2.0, 1}});
  // Backward from 100 to 200; recompute spans 100..120 and 150..155 inside it: 25 us of recompute.
  const Mark t0 = c.At(100), a = c.At(100), b = c.At(120), d = c.At(150), e = c.At(155), t1 = c.At(200);
  r.RecordBackward(0, 1, t0, {{a, b}, {d, e}}, t1);
  // Without recompute: the backward alone.
  r.RecordBackward(0, 0, c.At(300), {}, c.At(340));
  r.Resolve(c);
  ASSERT_EQ(r.ops().size(), 3u);
  EXPECT_EQ(r.ops()[0].kind, OpKind::kRecompute);
  EXPECT_DOUBLE_EQ(r.ops()[0].start_us, 100);
  EXPECT_DOUBLE_EQ(r.ops()[0].duration_us, 25);
  EXPECT_EQ(r.ops()[0].tokens, 64);
  EXPECT_EQ(r.ops()[1].kind, OpKind::kBackward);
  EXPECT_EQ(r.ops()[1].pass, PassKind::kBackward);
  EXPECT_DOUBLE_EQ(r.ops()[1].start_us, 125);
  EXPECT_DOUBLE_EQ(r.ops()[1].duration_us, 75);
  EXPECT_EQ(r.ops()[1].chunk, 1);
  EXPECT_EQ(r.ops()[2].kind, OpKind::kBackward);
  EXPECT_DOUBLE_EQ(r.ops()[2].start_us, 300);
  EXPECT_DOUBLE_EQ(r.ops()[2].duration_us, 40);
}

TEST(OpRecorder, LayerBackwardsFillTheirForwardsRows) {
  Clock c;
  OpRecorder r(1);
  r.BeginIteration(4, true, {{}, {}});
  for (int m = 0; m < 2; ++m)
    for (int layer = 3; layer < 6; ++layer) {
      LayerTiming row;
      row.micro_batch = m;
      row.layer = layer;
      // Layer 5 of micro-batch 0 ran in a group of two sharing 20 us.
      const bool grouped = m == 0 && layer == 5;
      r.AddLayer(row, c.At(1000), c.At(1000 + (grouped ? 20 : 10 * layer + m)), grouped ? 2 : 1);
    }
  // Micro-batch 1's backward over layers [3, 5): layer 4 recomputed (twice, 2 + 2.5 us) and its backward in two
  // spans; layer 5 belongs to another chunk.
  std::map<int, OpRecorder::Spans> bwd = {{3, {{c.At(0), c.At(30)}}},
                                          {4, {{c.At(0), c.At(15)}, {c.At(50), c.At(75)}}},
                                          {5, {{c.At(0), c.At(99)}}}};
  std::map<int, OpRecorder::Spans> rc = {{4, {{c.At(7), c.At(9)}, {c.At(10), c.At(12.5)}}}};
  r.SetLayerBackward(1, 3, 5, bwd, rc, {{3, 300}, {4, 400}, {5, 999}});
  r.Resolve(c);
  ASSERT_EQ(r.layers().size(), 6u);
  for (const LayerTiming& row : r.layers()) {
    EXPECT_EQ(row.iteration, 4);
    EXPECT_EQ(row.device, 1);
    const bool grouped = row.micro_batch == 0 && row.layer == 5;
    EXPECT_DOUBLE_EQ(row.fwd_us, grouped ? 10 : 10 * row.layer + row.micro_batch);
    const bool done = row.micro_batch == 1 && row.layer < 5;
    EXPECT_DOUBLE_EQ(row.bwd_us, done ? 10.0 * row.layer : 0) << row.micro_batch << " " << row.layer;
    EXPECT_DOUBLE_EQ(row.recompute_us, done && row.layer == 4 ? 4.5 : 0);
    EXPECT_EQ(row.bwd_work_bytes, done ? 100 * row.layer : 0);
  }
}

}  // namespace
}  // namespace mmtwin::backend

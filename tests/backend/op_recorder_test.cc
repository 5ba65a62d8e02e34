// SPDX-License-Identifier: Apache-2.0
// The op recorder (backend/op_recorder.h, no Torch): records only measured iterations, moves times to rank 0's
// clock, gives compute ops their micro-batch's features (and no other op), and fills each layer's backward
// into its forward's row.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "backend/op_recorder.h"

namespace mmtwin::backend {
namespace {

TEST(OpRecorder, RecordsNothingInAnIterationThatIsNotMeasured) {
  OpRecorder r(3);
  r.BeginIteration(7, false, {{100, 5.0, 2}});
  EXPECT_EQ(r.Record(OpKind::kForward, Lane::kCompute, 0, 0, 10, 20), nullptr);
  OpRecord dp;
  r.RecordTimed(dp);
  LayerTiming row;
  r.AddLayer(row);
  EXPECT_TRUE(r.ops().empty());
  EXPECT_TRUE(r.layers().empty());
  EXPECT_FALSE(r.measuring());
  EXPECT_EQ(r.iteration(), 7);
}

TEST(OpRecorder, StampsTheIterationDeviceAndRankZerosClock) {
  OpRecorder r(3);
  r.set_clock_offset_us(1000);
  r.BeginIteration(7, true, {{100, 5.0, 2}, {40, 1.5, 1}});
  OpRecord* fwd = r.Record(OpKind::kForward, Lane::kCompute, 1, 2, 10, 25);
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->source, RecordSource::kMeasured);
  EXPECT_EQ(fwd->iteration, 7);
  EXPECT_EQ(fwd->device, 3);
  EXPECT_EQ(fwd->micro_batch, 1);
  EXPECT_EQ(fwd->chunk, 2);
  EXPECT_DOUBLE_EQ(fwd->start_us, 1010);
  EXPECT_DOUBLE_EQ(fwd->duration_us, 15);
  EXPECT_EQ(fwd->tokens, 40);  // micro-batch 1's features
  EXPECT_DOUBLE_EQ(fwd->attention_pairs, 1.5);
  EXPECT_EQ(fwd->spans, 1);
  // A send carries bytes and no features; a span that runs backwards records 0.
  OpRecord* send = r.Record(OpKind::kP2pSendActivation, Lane::kP2pForward, 0, 0, 30, 29, 4096);
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->bytes, 4096);
  EXPECT_EQ(send->tokens, 0);
  EXPECT_DOUBLE_EQ(send->duration_us, 0);
  send->peer = 5;  // the returned record is the stored one
  // A DP op timed by its owner.
  OpRecord bucket;
  bucket.kind = OpKind::kDpCollective;
  bucket.lane = Lane::kDp;
  bucket.bucket = 2;
  bucket.start_us = 50;
  bucket.duration_us = 8;
  r.RecordTimed(bucket);
  ASSERT_EQ(r.ops().size(), 3u);
  EXPECT_EQ(r.ops()[1].peer, 5);
  EXPECT_EQ(r.ops()[2].source, RecordSource::kMeasured);
  EXPECT_EQ(r.ops()[2].iteration, 7);
  EXPECT_EQ(r.ops()[2].device, 3);
  EXPECT_EQ(r.ops()[2].bucket, 2);
  EXPECT_DOUBLE_EQ(r.ops()[2].start_us, 1050);
  EXPECT_DOUBLE_EQ(r.ops()[2].duration_us, 8);
  // The next iteration starts empty.
  r.BeginIteration(8, true, {});
  EXPECT_TRUE(r.ops().empty());
  EXPECT_EQ(r.Record(OpKind::kBackward, Lane::kCompute, 0, 0, 0, 1)->tokens, 0);  // no such micro-batch
}

TEST(OpRecorder, LayerBackwardsFillTheirForwardsRows) {
  OpRecorder r(1);
  r.BeginIteration(4, true, {{}, {}});
  for (int m = 0; m < 2; ++m)
    for (int layer = 3; layer < 6; ++layer) {
      LayerTiming row;
      row.micro_batch = m;
      row.layer = layer;
      row.fwd_us = 10 * layer + m;
      r.AddLayer(row);
    }
  // Micro-batch 1's backward over layers [3, 5): layer 4 recomputed; layer 5 belongs to another chunk.
  r.SetLayerBackward(1, 3, 5, {{3, 30.0}, {4, 40.0}, {5, 99.0}}, {{4, 4.5}}, {{3, 300}, {4, 400}, {5, 999}});
  ASSERT_EQ(r.layers().size(), 6u);
  for (const LayerTiming& row : r.layers()) {
    EXPECT_EQ(row.iteration, 4);
    EXPECT_EQ(row.device, 1);
    EXPECT_DOUBLE_EQ(row.fwd_us, 10 * row.layer + row.micro_batch);
    const bool done = row.micro_batch == 1 && row.layer < 5;
    EXPECT_DOUBLE_EQ(row.bwd_us, done ? 10.0 * row.layer : 0) << row.micro_batch << " " << row.layer;
    EXPECT_DOUBLE_EQ(row.recompute_us, done && row.layer == 4 ? 4.5 : 0);
    EXPECT_EQ(row.bwd_work_bytes, done ? 100 * row.layer : 0);
  }
}

}  // namespace
}  // namespace mmtwin::backend

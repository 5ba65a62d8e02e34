// SPDX-License-Identifier: Apache-2.0
// The op recorder of a rank (no Torch): every op the rank runs, timed by its owner with marks of this rank's
// timeline (timeline.h: host clock on CPU ranks, CUDA events on GPU ranks), becomes a measured record (core/records/records.h: OpRecord, source "measured") on
// rank 0's clock, and every layer's forward, backward and recompute a row of the per-layer profile
// (core/records/layer_timings.h: LayerTiming, the calibration input). Rank 0 gathers the records of every
// rank after each measured iteration (rank.cc: Publish) for the run folder (measure.h: RecordWriter).
//
// One iteration at a time: BeginIteration drops the previous iteration's records. Ops and layer rows are
// recorded with marks; Resolve (after the iteration's last op, once the timeline can say when each mark was)
// turns them into times, before ops() and layers() are read. While the iteration is not
// measured (a warm-up iteration, or --no-measure) every call records nothing, so callers time unconditionally
// and record without checking.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "backend/timeline.h"

#include "core/records/layer_timings.h"
#include "core/records/records.h"

namespace mmtwin::backend {

// What the compute ops of one micro-batch carry (OpRecord::tokens, attention_pairs, spans).
struct MicroBatchFeatures {
  int64_t tokens = 0;  // LLM tokens
  double attention_pairs = 0;
  int32_t spans = 0;  // samples
};

class OpRecorder {
 public:
  // `device`: the op-graph device of this rank (one TP group), the records' device.
  explicit OpRecorder(int device) : device_(device) {}

  // Added to this rank's times to get rank 0's (Cristian's algorithm, rank.cc: AlignClocks).
  void set_clock_offset_us(double offset_us) { clock_offset_us_ = offset_us; }
  double clock_offset_us() const { return clock_offset_us_; }

  // Starts the iteration of epoch index `iteration`: the records of the previous one are dropped;
  // `micro_batches` are this rank's micro-batches of it, in plan order.
  void BeginIteration(int64_t iteration, bool measuring, std::vector<MicroBatchFeatures> micro_batches);
  bool measuring() const { return measuring_; }
  int64_t iteration() const { return iteration_; }

  // An op from mark t0 to mark t1 (a negative span records 0). Forward, backward and recompute ops of a
  // micro-batch m of the iteration carry its features. Returns the record, to set more fields (a bucket, a peer)
  // before the next call; nullptr when the iteration is not measured.
  OpRecord* Record(OpKind kind, Lane lane, int m, int chunk, Mark t0, Mark t1, int64_t bytes = 0,
                   PassKind pass = PassKind::kForward);
  // The backward of micro-batch m's chunk from t0 to t1, which recomputed its groups first in `recompute` (spans
  // inside it): a recompute op from t0 as long as the spans together (none when there are none), then the
  // backward for the rest.
  using Spans = std::vector<std::pair<Mark, Mark>>;
  void RecordBackward(int m, int chunk, Mark t0, Spans recompute, Mark t1);
  // An op its owner filled in and timed itself on this rank's host clock (a DP bucket: kind, lane, chunk,
  // bucket, bytes, micro-batch, peer, start and duration): stamped measured, with the iteration and the
  // device, and moved to rank 0's clock.
  void RecordTimed(OpRecord r);

  // A profile row of a layer's forward (micro_batch, layer, act_bytes, out_bytes and the workload filled in by
  // the caller): fwd_us is (f1 - f0) / share (a group of `share` layers run as one); the iteration and the
  // device are stamped here.
  void AddLayer(LayerTiming row, Mark f0, Mark f1, int share = 1);
  // The backward of micro-batch m over layers [first, last): each row's bwd_us and recompute_us the sums of its
  // layer's spans, and bwd_work_bytes from the map (0 for a layer a map lacks).
  void SetLayerBackward(int m, int first, int last, std::map<int, Spans> bwd, std::map<int, Spans> recompute,
                        const std::map<int, int64_t>& work_bytes);

  // The times of every mark of this iteration (`us`: this rank's clock, microseconds; timeline.h:
  // Timeline::Us): fills in the records' and rows' times.
  void Resolve(const std::function<double(Mark)>& us);

  const std::vector<OpRecord>& ops() const { return ops_; }
  const std::vector<LayerTiming>& layers() const { return layers_; }

 private:
  const int device_;
  double clock_offset_us_ = 0;
  bool measuring_ = false;
  int64_t iteration_ = 0;
  std::vector<MicroBatchFeatures> micro_batches_;
  std::vector<OpRecord> ops_;
  std::vector<LayerTiming> layers_;
  // What Resolve fills in.
  struct PendingOp {
    size_t op;
    Mark t0, t1;
  };
  struct PendingBackward {
    size_t recompute_op, backward_op;  // recompute_op: SIZE_MAX when there was none
    Mark t0, t1;
    Spans recompute;
  };
  struct PendingForwardRow {
    size_t row;
    Mark f0, f1;
    int share;
  };
  struct PendingBackwardRows {
    int m, first, last;
    std::map<int, Spans> bwd, recompute;
  };
  std::vector<PendingOp> pending_ops_;
  std::vector<PendingBackward> pending_backwards_;
  std::vector<PendingForwardRow> pending_forward_rows_;
  std::vector<PendingBackwardRows> pending_backward_rows_;
};

}  // namespace mmtwin::backend

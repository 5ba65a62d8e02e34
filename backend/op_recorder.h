// SPDX-License-Identifier: Apache-2.0
// The op recorder of a rank (no Torch): every op the rank runs, timed by its owner on this rank's clock
// (rank_support.h: NowUs), becomes a measured record (core/records/records.h: OpRecord, source "measured") on
// rank 0's clock, and every layer's forward, backward and recompute a row of the per-layer profile
// (core/records/layer_timings.h: LayerTiming, the calibration input). Rank 0 gathers the records of every
// rank after each measured iteration (rank.cc: Publish) for the run folder (measure.h: RecordWriter).
//
// One iteration at a time: BeginIteration drops the previous iteration's records. While the iteration is not
// measured (a warm-up iteration, or --no-measure) every call records nothing, so callers time unconditionally
// and record without checking.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

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

  // An op from t0_us to t1_us (this rank's clock; a negative span records 0). Forward, backward and recompute
  // ops of a micro-batch m of the iteration carry its features. Returns the record, to set more fields (a
  // bucket, a peer) before the next call; nullptr when the iteration is not measured.
  OpRecord* Record(OpKind kind, Lane lane, int m, int chunk, double t0_us, double t1_us, int64_t bytes = 0,
                   PassKind pass = PassKind::kForward);
  // An op its owner filled in and timed itself (a DP bucket: kind, lane, chunk, bucket, bytes, micro-batch,
  // peer, start and duration on this rank's clock): stamped measured, with the iteration and the device, and
  // moved to rank 0's clock.
  void RecordTimed(OpRecord r);

  // A profile row of a layer's forward (micro_batch, layer, fwd_us, act_bytes, out_bytes and the workload
  // filled in by the caller); the iteration and the device are stamped here.
  void AddLayer(LayerTiming row);
  // The backward of micro-batch m over layers [first, last): each row's bwd_us, recompute_us and
  // bwd_work_bytes from the maps by layer (0 for a layer a map lacks).
  void SetLayerBackward(int m, int first, int last, const std::map<int, double>& bwd_us,
                        const std::map<int, double>& recompute_us, const std::map<int, int64_t>& work_bytes);

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
};

}  // namespace mmtwin::backend

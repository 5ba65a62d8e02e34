// SPDX-License-Identifier: Apache-2.0
// Measured op records and the per-layer profile of a rank (op_recorder.h).
#include "backend/op_recorder.h"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace mmtwin::backend {

void OpRecorder::BeginIteration(int64_t iteration, bool measuring,
                                std::vector<MicroBatchFeatures> micro_batches) {
  iteration_ = iteration;
  measuring_ = measuring;
  micro_batches_ = std::move(micro_batches);
  ops_.clear();
  layers_.clear();
}

OpRecord* OpRecorder::Record(OpKind kind, Lane lane, int m, int chunk, double t0_us, double t1_us,
                             int64_t bytes, PassKind pass) {
  if (!measuring_) return nullptr;
  OpRecord r;
  r.source = RecordSource::kMeasured;
  r.iteration = iteration_;
  r.kind = kind;
  r.lane = lane;
  r.device = device_;
  r.micro_batch = m;
  r.chunk = chunk;
  r.start_us = t0_us + clock_offset_us_;
  r.duration_us = std::max(0.0, t1_us - t0_us);
  r.bytes = bytes;
  r.pass = pass;
  if (m >= 0 && m < static_cast<int>(micro_batches_.size()) &&
      (kind == OpKind::kForward || kind == OpKind::kBackward || kind == OpKind::kRecompute)) {
    r.tokens = micro_batches_[m].tokens;
    r.attention_pairs = micro_batches_[m].attention_pairs;
    r.spans = micro_batches_[m].spans;
  }
  ops_.push_back(r);
  return &ops_.back();
}

void OpRecorder::RecordTimed(OpRecord r) {
  if (!measuring_) return;
  r.source = RecordSource::kMeasured;
  r.iteration = iteration_;
  r.device = device_;
  r.start_us += clock_offset_us_;
  ops_.push_back(r);
}

void OpRecorder::AddLayer(LayerTiming row) {
  if (!measuring_) return;
  row.iteration = iteration_;
  row.device = device_;
  layers_.push_back(std::move(row));
}

void OpRecorder::SetLayerBackward(int m, int first, int last, const std::map<int, double>& bwd_us,
                                  const std::map<int, double>& recompute_us,
                                  const std::map<int, int64_t>& work_bytes) {
  if (!measuring_) return;
  auto at = [](const auto& by_layer, int layer) {
    const auto it = by_layer.find(layer);
    return it == by_layer.end() ? typename std::decay_t<decltype(by_layer)>::mapped_type{0} : it->second;
  };
  for (LayerTiming& p : layers_)
    if (p.iteration == iteration_ && p.micro_batch == m && p.layer >= first && p.layer < last) {
      p.bwd_us = at(bwd_us, p.layer);
      p.recompute_us = at(recompute_us, p.layer);
      p.bwd_work_bytes = at(work_bytes, p.layer);
    }
}

}  // namespace mmtwin::backend

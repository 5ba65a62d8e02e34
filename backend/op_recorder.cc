// SPDX-License-Identifier: Apache-2.0
// Measured op records and the per-layer profile of a rank (op_recorder.h).
#include "backend/op_recorder.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace mmtwin::backend {

void OpRecorder::BeginIteration(int64_t iteration, bool measuring,
                                std::vector<MicroBatchFeatures> micro_batches) {
  iteration_ = iteration;
  measuring_ = measuring;
  micro_batches_ = std::move(micro_batches);
  ops_.clear();
  layers_.clear();
  pending_ops_.clear();
  pending_backwards_.clear();
  pending_forward_rows_.clear();
  pending_backward_rows_.clear();
}

OpRecord* OpRecorder::Record(OpKind kind, Lane lane, int m, int chunk, Mark t0, Mark t1, int64_t bytes,
                             PassKind pass) {
  if (!measuring_) return nullptr;
  OpRecord r;
  r.source = RecordSource::kMeasured;
  r.iteration = iteration_;
  r.kind = kind;
  r.lane = lane;
  r.device = device_;
  r.micro_batch = m;
  r.chunk = chunk;
  r.bytes = bytes;
  r.pass = pass;
  if (m >= 0 && m < static_cast<int>(micro_batches_.size()) &&
      (kind == OpKind::kForward || kind == OpKind::kBackward || kind == OpKind::kRecompute)) {
    r.tokens = micro_batches_[m].tokens;
    r.attention_pairs = micro_batches_[m].attention_pairs;
    r.spans = micro_batches_[m].spans;
  }
  ops_.push_back(r);
  pending_ops_.push_back({ops_.size() - 1, t0, t1});
  return &ops_.back();
}

void OpRecorder::RecordBackward(int m, int chunk, Mark t0, Spans recompute, Mark t1) {
  if (!measuring_) return;
  PendingBackward p{SIZE_MAX, 0, t0, t1, std::move(recompute)};
  if (!p.recompute.empty()) {
    Record(OpKind::kRecompute, Lane::kCompute, m, chunk, t0, t0);
    pending_ops_.pop_back();  // timed below
    p.recompute_op = ops_.size() - 1;
  }
  Record(OpKind::kBackward, Lane::kCompute, m, chunk, t0, t1, 0, PassKind::kBackward);
  pending_ops_.pop_back();
  p.backward_op = ops_.size() - 1;
  pending_backwards_.push_back(std::move(p));
}

void OpRecorder::RecordTimed(OpRecord r) {
  if (!measuring_) return;
  r.source = RecordSource::kMeasured;
  r.iteration = iteration_;
  r.device = device_;
  r.start_us += clock_offset_us_;
  ops_.push_back(r);
}

void OpRecorder::AddLayer(LayerTiming row, Mark f0, Mark f1, int share) {
  if (!measuring_) return;
  row.iteration = iteration_;
  row.device = device_;
  layers_.push_back(std::move(row));
  pending_forward_rows_.push_back({layers_.size() - 1, f0, f1, std::max(1, share)});
}

void OpRecorder::SetLayerBackward(int m, int first, int last, std::map<int, Spans> bwd,
                                  std::map<int, Spans> recompute, const std::map<int, int64_t>& work_bytes) {
  if (!measuring_) return;
  for (LayerTiming& p : layers_)
    if (p.iteration == iteration_ && p.micro_batch == m && p.layer >= first && p.layer < last) {
      const auto it = work_bytes.find(p.layer);
      p.bwd_work_bytes = it == work_bytes.end() ? 0 : it->second;
    }
  pending_backward_rows_.push_back({m, first, last, std::move(bwd), std::move(recompute)});
}

void OpRecorder::Resolve(const std::function<double(Mark)>& us) {
  auto span_sum = [&](const Spans& spans) {
    double total = 0;
    for (const auto& [a, b] : spans) total += us(b) - us(a);
    return std::max(0.0, total);
  };
  for (const PendingOp& p : pending_ops_) {
    OpRecord& r = ops_[p.op];
    const double t0 = us(p.t0);
    r.start_us = t0 + clock_offset_us_;
    r.duration_us = std::max(0.0, us(p.t1) - t0);
  }
  for (const PendingBackward& p : pending_backwards_) {
    const double t0 = us(p.t0), rc = span_sum(p.recompute);
    if (p.recompute_op != SIZE_MAX) {
      ops_[p.recompute_op].start_us = t0 + clock_offset_us_;
      ops_[p.recompute_op].duration_us = rc;
    }
    ops_[p.backward_op].start_us = t0 + rc + clock_offset_us_;
    ops_[p.backward_op].duration_us = std::max(0.0, us(p.t1) - t0 - rc);
  }
  for (const PendingForwardRow& p : pending_forward_rows_)
    layers_[p.row].fwd_us = std::max(0.0, us(p.f1) - us(p.f0)) / p.share;
  for (const PendingBackwardRows& p : pending_backward_rows_)
    for (LayerTiming& row : layers_)
      if (row.iteration == iteration_ && row.micro_batch == p.m && row.layer >= p.first &&
          row.layer < p.last) {
        const auto b = p.bwd.find(row.layer), r = p.recompute.find(row.layer);
        row.bwd_us = b == p.bwd.end() ? 0 : span_sum(b->second);
        row.recompute_us = r == p.recompute.end() ? 0 : span_sum(r->second);
      }
  pending_ops_.clear();
  pending_backwards_.clear();
  pending_forward_rows_.clear();
  pending_backward_rows_.clear();
}

}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// Run records built from an evaluated op graph (records.h).
#include "core/records/records.h"

#include <algorithm>
#include <cmath>

#include "core/plan/mesh.h"
#include "core/util/text.h"

namespace mmtwin {

IterationTimeStats IterationTimeStatsOf(const std::vector<double>& times_us, int64_t iterations_in_epoch) {
  if (times_us.empty()) return {};
  const double n = static_cast<double>(times_us.size());
  double total = 0;
  for (double t : times_us) total += t;
  const double mean = total / n;
  double var = 0;
  for (double t : times_us) var += (t - mean) * (t - mean);
  var = times_us.size() > 1 ? var / (n - 1) : 0;
  const int64_t epoch = iterations_in_epoch;
  const double fpc = epoch > 1 ? std::sqrt(std::max(0.0, (epoch - n) / (epoch - 1.0))) : 0;
  const double half = 1.96 * std::sqrt(var / n) * fpc;
  return {mean,
          Percentile(times_us, 0.5),
          Percentile(times_us, 0.99),
          *std::min_element(times_us.begin(), times_us.end()),
          *std::max_element(times_us.begin(), times_us.end()),
          mean - half,
          mean + half};
}

std::vector<OpRecord> OpRecordsOf(const OpGraph& graph, const IterationTiming& timing,
                                  const IterationCosts& costs, int64_t iteration) {
  std::vector<OpRecord> out;
  const int n = graph.num_ops();
  if (static_cast<int>(timing.start_us.size()) < n || static_cast<int>(timing.finish_us.size()) < n)
    return out;
  out.reserve(n);
  const DeviceMesh mesh(graph.parallel);
  for (int i = 0; i < n; ++i) {
    const Op& op = graph.ops[i];
    if (op.kind == OpKind::kDpCollective && op.buckets == 0) continue;  // a piece's empty gradient op
    OpRecord r;
    r.source = RecordSource::kSimulated;
    r.iteration = iteration;
    r.kind = op.kind;
    r.lane = op.lane;
    r.pass = op.pass;
    r.bucket = op.bucket;
    r.device = op.device;
    r.peer = op.peer;
    r.micro_batch = op.micro_batch;
    r.chunk = op.chunk;
    r.start_us = timing.start_us[i];
    r.duration_us = timing.finish_us[i] - timing.start_us[i];
    r.bytes = op.bytes;
    if ((op.kind == OpKind::kEncoderForward || op.kind == OpKind::kEncoderBackward) && op.device >= 0 &&
        !costs.encoder.empty()) {
      const int d = mesh.DpOfDevice(op.device);
      if (d < costs.dp && op.micro_batch >= 0 && op.micro_batch < costs.micro_batches)
        r.activation_bytes = costs.EncoderAt(d, op.micro_batch).act_bytes;
    }
    const int32_t ci = i < static_cast<int>(graph.source.cost_index.size()) ? graph.source.cost_index[i] : -1;
    if (ci >= 0 && ci < static_cast<int32_t>(costs.costs.size())) {
      const ChunkCost& c = costs.costs[ci];
      const bool compute = op.kind == OpKind::kForward || op.kind == OpKind::kBackward ||
                           op.kind == OpKind::kRecompute || op.kind == OpKind::kTpCollective ||
                           op.kind == OpKind::kBackwardWeight || op.kind == OpKind::kSpCollective;
      if (compute) r.tokens = c.llm_tokens;
      if (op.kind == OpKind::kForward || op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardWeight)
        r.activation_bytes = c.act_bytes;
      // A pass split into pieces (per-bucket gradient readiness, FSDP units) holds or releases its activations
      // piece by piece; the last piece takes the remainder, so the pieces sum to the whole.
      if (op.pieces > 1 && r.activation_bytes > 0) {
        const int64_t share = c.act_bytes / op.pieces;
        r.activation_bytes = op.bucket == op.pieces - 1 ? c.act_bytes - share * (op.pieces - 1) : share;
      }
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace mmtwin

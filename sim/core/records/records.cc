// SPDX-License-Identifier: Apache-2.0
// Run records built from an evaluated op graph (records.h).
#include "core/records/records.h"

namespace mmtwin {

std::vector<OpRecord> OpRecordsOf(const OpGraph& graph, const IterationTiming& timing,
                                  const IterationCosts& costs, int64_t iteration) {
  std::vector<OpRecord> out;
  const int n = graph.num_ops();
  if (static_cast<int>(timing.start_us.size()) < n || static_cast<int>(timing.finish_us.size()) < n)
    return out;
  out.reserve(n);
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

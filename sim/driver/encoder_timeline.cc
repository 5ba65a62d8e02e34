// SPDX-License-Identifier: Apache-2.0
#include "driver/encoder_timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "core/plan/mesh.h"

namespace mmtwin {

EncoderTimeline EncoderTimelineOf(const OpGraph& g, const IterationTiming& t, const Schedule& s,
                                  const IterationCosts& costs, const CommCostModel& comm, bool backward) {
  const int P = s.pp, M = s.micro_batches;
  const DeviceMesh mesh(g.parallel);
  EncoderTimeline tl;
  tl.backward = backward;
  tl.iteration_us = t.iteration_time_us;
  tl.op_start_us.assign(P, {});
  tl.op_end_us.assign(P, {});
  std::vector<std::vector<double>>& op_end = tl.op_end_us;
  // Schedule position of (pass class, micro-batch, chunk) per rank: 0 forward, 1 backward or its B, 2 its W.
  auto key = [M](int cls, int m, int c) { return (static_cast<int64_t>(c) * M + m) * 3 + cls; };
  std::vector<std::map<int64_t, int>> pos(P);
  for (int r = 0; r < P; ++r) {
    const auto& ops = s.per_rank[r];
    tl.op_start_us[r].assign(ops.size(), std::numeric_limits<double>::infinity());
    op_end[r].assign(ops.size(), 0.0);
    for (size_t i = 0; i < ops.size(); ++i) {
      const int cls = ops[i].kind == PassKind::kForward          ? 0
                      : ops[i].kind == PassKind::kBackwardWeight ? 2
                                                                 : 1;
      pos[r][key(cls, ops[i].micro_batch, ops[i].chunk)] = static_cast<int>(i);
    }
  }
  for (int i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.ops[i];
    if (op.device < 0 || op.lane != Lane::kCompute) continue;
    const int r = mesh.PpOfDevice(op.device);
    const int cls = op.kind == OpKind::kBackwardWeight || op.pass == PassKind::kBackwardWeight ? 2
                    : op.pass == PassKind::kForward                                            ? 0
                                                                                               : 1;
    const auto it = pos[r].find(key(cls, op.micro_batch, op.chunk));
    if (it == pos[r].end()) continue;
    tl.op_start_us[r][it->second] = std::min(tl.op_start_us[r][it->second], t.start_us[i]);
    op_end[r][it->second] = std::max(op_end[r][it->second], t.finish_us[i]);
  }
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < tl.op_start_us[r].size(); ++i)
      if (!std::isfinite(tl.op_start_us[r][i])) tl.op_start_us[r][i] = op_end[r][i];  // no compute op (none)
  tl.first_forward_start_us.assign(M, 0);
  tl.first_backward_end_us.assign(M, 0);
  tl.forward_us.assign(M, 0);
  tl.backward_us.assign(M, 0);
  tl.output_send_us.assign(M, 0);
  tl.gradient_send_us.assign(M, 0);
  for (int m = 0; m < M; ++m) {
    if (const auto it = pos[0].find(key(0, m, 0)); it != pos[0].end())
      tl.first_forward_start_us[m] = tl.op_start_us[0][it->second];
    if (const auto it = pos[0].find(key(1, m, 0)); it != pos[0].end())
      tl.first_backward_end_us[m] = op_end[0][it->second];
    for (int d = 0; d < costs.dp; ++d) {
      const ChunkCost& e = costs.EncoderAt(d, m);
      tl.forward_us[m] = std::max(tl.forward_us[m], e.fwd_us + e.tp_fwd_us);
      tl.backward_us[m] = std::max(tl.backward_us[m], e.recompute_us + e.bwd_us + e.tp_bwd_us);
      const double send = e.send_bytes > 0 ? comm.Us({CommKind::kP2p, e.send_bytes, 2, false}) : 0.0;
      tl.output_send_us[m] = tl.gradient_send_us[m] = std::max(tl.output_send_us[m], send);
    }
  }
  return tl;
}

}  // namespace mmtwin

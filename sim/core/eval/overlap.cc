// SPDX-License-Identifier: Apache-2.0
// Compute slowed by the collectives it overlaps (overlap.h).
#include "core/eval/overlap.h"

#include <algorithm>
#include <utility>

namespace mmtwin {
namespace {

bool IsCollectiveLane(Lane l) { return l == Lane::kDp || l == Lane::kDispatch; }

// The compute the slowdown applies to: the passes' kernels, not the TP / SP communication on the compute lane.
bool IsComputeKind(OpKind k) {
  return k == OpKind::kForward || k == OpKind::kRecompute || k == OpKind::kBackward ||
         k == OpKind::kBackwardWeight || k == OpKind::kEncoderForward || k == OpKind::kEncoderBackward;
}

}  // namespace

std::vector<double> CollectiveOverlapUs(const OpGraph& g, const IterationTiming& timing) {
  const int n = g.num_ops();
  std::vector<double> overlap(n, 0.0);
  // Per device: the union of its collectives' spans, as sorted disjoint intervals.
  std::vector<std::vector<std::pair<double, double>>> spans(std::max(0, g.num_devices));
  for (int i = 0; i < n; ++i) {
    const Op& op = g.ops[i];
    if (op.device < 0 || op.device >= g.num_devices || !IsCollectiveLane(op.lane)) continue;
    if (timing.finish_us[i] > timing.start_us[i])
      spans[op.device].push_back({timing.start_us[i], timing.finish_us[i]});
  }
  for (auto& v : spans) {
    std::sort(v.begin(), v.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto& s : v) {
      if (!merged.empty() && s.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, s.second);
      else
        merged.push_back(s);
    }
    v = std::move(merged);
  }
  for (int i = 0; i < n; ++i) {
    const Op& op = g.ops[i];
    if (op.lane != Lane::kCompute || !IsComputeKind(op.kind) || op.device < 0 || op.device >= g.num_devices)
      continue;
    const auto& v = spans[op.device];
    if (v.empty()) continue;
    const double a = timing.start_us[i], b = timing.finish_us[i];
    // First span ending after a.
    auto it = std::upper_bound(v.begin(), v.end(), a,
                               [](double x, const std::pair<double, double>& s) { return x < s.second; });
    double o = 0;
    for (; it != v.end() && it->first < b; ++it) o += std::min(b, it->second) - std::max(a, it->first);
    overlap[i] = std::max(0.0, o);
  }
  return overlap;
}

double ApplyOverlapSlowdown(OpGraph& g, double slowdown, IterationTiming* scratch, int passes) {
  if (!(slowdown > 0) || passes <= 0) return 0.0;
  bool any = false;
  for (const Op& op : g.ops) any = any || (IsCollectiveLane(op.lane) && op.device >= 0);
  if (!any) return 0.0;
  const std::vector<double> base = g.duration_us;
  const double factor = slowdown / (1.0 + slowdown);
  double added = 0;
  for (int p = 0; p < passes; ++p) {
    EvaluateAnalytic(g, scratch);
    const std::vector<double> o = CollectiveOverlapUs(g, *scratch);
    added = 0;
    for (int i = 0; i < g.num_ops(); ++i) {
      if (g.ops[i].lane != Lane::kCompute || !IsComputeKind(g.ops[i].kind)) continue;
      const double d = base[i] + o[i] * factor;
      added += d - base[i];
      g.duration_us[i] = d;
      g.ops[i].duration_us = d;
    }
  }
  return added;
}

}  // namespace mmtwin

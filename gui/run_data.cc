// SPDX-License-Identifier: Apache-2.0
#include "run_data.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/plan/mesh.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"

namespace mmtwin::gui {
namespace {

bool ParseNumber(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v);
}

}  // namespace

Result<RunData> LoadRunDir(const std::string& dir) {
  MMTWIN_ASSIGN_OR_RETURN(RunFolder folder, ReadRunFolder(RunFolderOf(dir), {RunFile::kSummary},
                                                          {RunFile::kOps, RunFile::kScenario}));
  RunData run;
  run.summary = std::move(*folder.summary);
  if (folder.ops) run.ops = std::move(*folder.ops);
  if (folder.scenario_yaml) run.scenario_yaml = std::move(*folder.scenario_yaml);
  run.dir = std::move(folder.dir);
  return run;
}

Status WriteRunDir(const std::string& dir, const RunData& run) {
  RunFolderWriter w;
  w.AddSummary(run.summary).AddOps(run.ops);
  if (!run.trace_json.empty()) w.AddTrace(run.trace_json);
  if (!run.scenario_yaml.empty()) w.AddScenario(run.scenario_yaml);
  return w.Write(dir);
}

RunData RunDataOf(SimulationResult&& r) {
  RunData run;
  run.summary = std::move(r.summary);
  run.ops = std::move(r.ops);
  run.trace_json = std::move(r.trace_json);
  run.scenario_yaml = std::move(r.resolved_yaml);
  return run;
}

// ---- Timeline ----

TimelineModel::TimelineModel(const std::vector<OpRecord>& ops, const ParallelConfig& parallel) : ops_(&ops) {
  // Lanes used per device.
  std::map<int32_t, std::vector<bool>> lanes;
  for (const OpRecord& op : ops) {
    if (op.device < 0 || !(op.duration_us > 0)) continue;
    auto& l = lanes[op.device];
    if (l.empty()) l.assign(kNumLanes, false);
    l[static_cast<int>(op.lane)] = true;
  }
  const DeviceMesh mesh(parallel);
  for (const auto& [device, used] : lanes) {
    for (int lane = 0; lane < kNumLanes; ++lane) {
      if (lane != 0 && !used[lane]) continue;
      TimelineRow row;
      row.device = device;
      row.lane = static_cast<Lane>(lane);
      if (lane == 0) {
        const bool in_mesh = device < mesh.num_devices();
        row.label = in_mesh ? "dp " + std::to_string(mesh.DpOfDevice(device)) + " / stage " +
                                  std::to_string(mesh.PpOfDevice(device))
                            : "device " + std::to_string(device);
      } else {
        row.label = std::string("  ") + LaneName(row.lane);
      }
      row_of_[{device, lane}] = static_cast<int>(rows_.size());
      rows_.push_back(std::move(row));
    }
  }
  row_ops_.assign(rows_.size(), {});
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const int r = RowOf(ops[i]);
    if (r < 0) continue;
    row_ops_[r].push_back(i);
    end_us_ = std::max(end_us_, ops[i].start_us + ops[i].duration_us);
    ++drawn_ops_;
  }
  row_max_end_.resize(rows_.size());
  for (size_t r = 0; r < rows_.size(); ++r) {
    auto& idx = row_ops_[r];
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return ops[a].start_us < ops[b].start_us; });
    double m = -1e300;
    row_max_end_[r].reserve(idx.size());
    for (int i : idx) {
      m = std::max(m, ops[i].start_us + ops[i].duration_us);
      row_max_end_[r].push_back(m);
    }
  }
}

int TimelineModel::RowOf(int32_t device, Lane lane) const {
  auto it = row_of_.find({device, static_cast<int>(lane)});
  return it == row_of_.end() ? -1 : it->second;
}

int TimelineModel::RowOf(const OpRecord& op) const {
  if (op.device < 0 || !(op.duration_us > 0)) return -1;
  return RowOf(op.device, op.lane);
}

int TimelineModel::HitTest(int row, double t_us, double tolerance_us) const {
  if (ops_ == nullptr || row < 0 || row >= static_cast<int>(rows_.size())) return -1;
  const auto& idx = row_ops_[row];
  const auto& ops = *ops_;
  // Last op starting at or before t + tolerance; walk back while an earlier op may still reach t.
  auto it = std::upper_bound(idx.begin(), idx.end(), t_us + tolerance_us,
                             [&](double t, int i) { return t < ops[i].start_us; });
  int best = -1;
  double best_dist = 1e300;
  for (ptrdiff_t k = (it - idx.begin()) - 1; k >= 0; --k) {
    if (row_max_end_[row][k] < t_us - tolerance_us) break;
    const OpRecord& op = ops[idx[k]];
    const double end = op.start_us + op.duration_us;
    if (t_us >= op.start_us && t_us < end) return idx[k];  // inside: exact hit
    const double dist = t_us < op.start_us ? op.start_us - t_us : t_us - end;
    if (dist <= tolerance_us && dist < best_dist) {
      best = idx[k];
      best_dist = dist;
    }
  }
  return best;
}

void TimelineModel::Layout(double t0_us, double t1_us, int width_px, std::vector<TimelineItem>& out) const {
  out.clear();
  if (ops_ == nullptr || width_px <= 0 || !(t1_us > t0_us)) return;
  const auto& ops = *ops_;
  const double px_per_us = width_px / (t1_us - t0_us);
  for (int r = 0; r < static_cast<int>(rows_.size()); ++r) {
    const auto& idx = row_ops_[r];
    // First op that may end after t0 (running max of ends is non-decreasing).
    size_t k =
        std::upper_bound(row_max_end_[r].begin(), row_max_end_[r].end(), t0_us) - row_max_end_[r].begin();
    // The aggregate being filled: one pixel column.
    int agg_col = -1, agg_count = 0;
    double agg_busy_us = 0;
    std::map<OpKind, double> agg_kind_us;
    auto flush = [&]() {
      if (agg_count == 0) return;
      TimelineItem it;
      it.row = r;
      it.start_us = t0_us + agg_col / px_per_us;
      it.end_us = t0_us + (agg_col + 1) / px_per_us;
      it.op = -1;
      it.count = agg_count;
      it.fill = static_cast<float>(std::min(1.0, agg_busy_us * px_per_us));
      it.kind = std::max_element(agg_kind_us.begin(), agg_kind_us.end(), [](const auto& a, const auto& b) {
                  return a.second < b.second;
                })->first;
      out.push_back(it);
      agg_count = 0;
      agg_busy_us = 0;
      agg_kind_us.clear();
    };
    double wide_end_col = -1e300;  // first free pixel column after the last op drawn on its own
    for (; k < idx.size(); ++k) {
      const OpRecord& op = ops[idx[k]];
      if (op.start_us >= t1_us) break;
      const double end = op.start_us + op.duration_us;
      if (end <= t0_us) continue;  // ended before the window (an earlier, longer op kept k back)
      const double x0 = (op.start_us - t0_us) * px_per_us, x1 = (end - t0_us) * px_per_us;
      // An op that starts inside the column where the previous wide op ended is drawn from the next free
      // column (issue 33: a backward right after its recompute started mid-pixel and was folded into a
      // one-pixel aggregate, so the whole op showed as "no compute").
      const double x0_free = std::max(x0, wide_end_col);
      if (x1 - x0_free >= 1.0) {
        TimelineItem it;
        it.row = r;
        it.start_us = x0_free > x0 ? t0_us + x0_free / px_per_us : op.start_us;
        it.end_us = end;
        it.kind = op.kind;
        it.op = idx[k];
        out.push_back(it);
        wide_end_col = std::ceil(x1);
        continue;
      }
      const int col = std::clamp(static_cast<int>(std::floor(x0)), 0, width_px - 1);
      if (col != agg_col) {
        flush();
        agg_col = col;
      }
      ++agg_count;
      const double visible_us = std::min(end, t1_us) - std::max(op.start_us, t0_us);
      agg_busy_us += visible_us;
      agg_kind_us[op.kind] += op.duration_us;
    }
    flush();
  }
}

uint32_t OpKindColor(OpKind k) {
  switch (k) {
    case OpKind::kForward:
      return 0x3b78c3;
    case OpKind::kBackward:
      return 0x3c9a4a;
    case OpKind::kBackwardWeight:
      return 0x1f6a2c;
    case OpKind::kRecompute:
      return 0xf0922b;
    case OpKind::kTpCollective:
    case OpKind::kSpCollective:
      return 0x2aa6a6;
    case OpKind::kP2pSendActivation:
    case OpKind::kP2pSendGradient:
    case OpKind::kP2pRecv:
      return 0x8a5cc2;
    case OpKind::kDpCollective:
    case OpKind::kDpAllGather:
    case OpKind::kDpWait:
    case OpKind::kEncoderGradSync:
      return 0xd2453c;
    case OpKind::kEncoderForward:
      return 0x8fb3e0;  // a lighter forward / backward: the encoder passes outside the pipeline
    case OpKind::kEncoderBackward:
      return 0x8cc995;
    case OpKind::kDispatch:
      return 0x9a6b3f;
    case OpKind::kOptimizer:
    case OpKind::kBarrier:
      return 0x7f7f7f;
  }
  return 0x7f7f7f;
}

const std::vector<LegendEntry>& OpKindLegend() {
  static const std::vector<LegendEntry> kLegend = {
      {"forward", OpKindColor(OpKind::kForward)},
      {"backward", OpKindColor(OpKind::kBackward)},
      {"recompute", OpKindColor(OpKind::kRecompute)},
      {"TP collective", OpKindColor(OpKind::kTpCollective)},
      {"P2P send / recv", OpKindColor(OpKind::kP2pSendActivation)},
      {"DP collective", OpKindColor(OpKind::kDpCollective)},
      {"dispatch", OpKindColor(OpKind::kDispatch)},
      {"optimizer", OpKindColor(OpKind::kOptimizer)},
      {"encoder forward", OpKindColor(OpKind::kEncoderForward)},
      {"encoder backward", OpKindColor(OpKind::kEncoderBackward)},
  };
  return kLegend;
}

std::vector<std::pair<double, int64_t>> ActivationCounter(const std::vector<OpRecord>& ops, int32_t device) {
  std::vector<std::pair<double, int64_t>> events;
  for (const OpRecord& op : ops) {
    if (op.device != device || op.activation_bytes == 0) continue;
    if (op.kind == OpKind::kForward || op.kind == OpKind::kEncoderForward)
      events.emplace_back(op.start_us + op.duration_us, op.activation_bytes);
    else if (op.kind == OpKind::kBackward || op.kind == OpKind::kEncoderBackward)
      events.emplace_back(op.start_us + op.duration_us, -op.activation_bytes);
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<double, int64_t>> out = {{0.0, 0}};
  int64_t level = 0;
  for (const auto& [t, d] : events) {
    level += d;
    out.emplace_back(t, level);
  }
  return out;
}

// ---- Heatmap ----

std::vector<std::string> HeatmapMetrics() {
  std::vector<std::string> out;
  for (const SummaryColumn& c : SummaryColumns())
    if (std::string(c.sql_type) != "TEXT") out.emplace_back(c.name);
  return out;
}

bool SummaryMetric(const RunSummary& s, const std::string& column, double& value) {
  for (const SummaryColumn& c : SummaryColumns()) {
    if (column != c.name) continue;
    const SummaryValue v = c.get(s);
    if (const auto* i = std::get_if<int64_t>(&v)) {
      value = static_cast<double>(*i);
      return true;
    }
    if (const auto* d = std::get_if<double>(&v)) {
      value = *d;
      return true;
    }
    return false;
  }
  return false;
}

std::vector<std::pair<std::string, std::vector<std::string>>> SweepAxes(const std::vector<RunRecord>& runs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const RunRecord& r : runs) {
    for (const auto& axis_value : r.axes) {
      const std::string &name = axis_value.first, &label = axis_value.second;
      auto it = std::find_if(axes.begin(), axes.end(), [&](const auto& a) { return a.first == name; });
      if (it == axes.end()) {
        axes.emplace_back(name, std::vector<std::string>{});
        it = axes.end() - 1;
      }
      if (std::find(it->second.begin(), it->second.end(), label) == it->second.end())
        it->second.push_back(label);
    }
  }
  for (auto& [name, values] : axes) {
    bool numeric = true;
    double v = 0;
    for (const std::string& s : values) numeric = numeric && ParseNumber(s, v);
    if (numeric)
      std::stable_sort(values.begin(), values.end(), [](const std::string& a, const std::string& b) {
        return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr);
      });
  }
  return axes;
}

Result<Heatmap> BuildHeatmap(const std::vector<RunRecord>& runs, const std::string& metric,
                             const std::string& x_axis, const std::string& y_axis,
                             const std::map<std::string, std::string>& filters) {
  const std::vector<std::string> metrics = HeatmapMetrics();
  if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end())
    return Error("unknown metric '" + metric + "'");
  Heatmap h;
  h.metric = metric;
  h.x_axis = x_axis;
  h.y_axis = y_axis;
  for (const auto& [name, values] : SweepAxes(runs)) {
    if (name == x_axis) h.x_values = values;
    if (name == y_axis) h.y_values = values;
  }
  if (h.x_values.empty()) return Error("unknown axis '" + x_axis + "'");
  if (!y_axis.empty() && h.y_values.empty()) return Error("unknown axis '" + y_axis + "'");
  if (y_axis.empty()) h.y_values = {""};
  auto index_of = [](const std::vector<std::string>& v, const std::string& s) {
    return static_cast<int>(std::find(v.begin(), v.end(), s) - v.begin());
  };
  std::set<std::pair<int, int>> taken;
  bool first = true;
  for (int i = 0; i < static_cast<int>(runs.size()); ++i) {
    const RunRecord& r = runs[i];
    std::string xv, yv;
    bool match = true;
    for (const auto& [name, label] : r.axes) {
      if (name == x_axis) xv = label;
      if (name == y_axis) yv = label;
      if (name == x_axis || name == y_axis) continue;
      auto f = filters.find(name);
      if (f != filters.end() && f->second != label) match = false;
    }
    if (!match) continue;
    const int x = index_of(h.x_values, xv), y = y_axis.empty() ? 0 : index_of(h.y_values, yv);
    if (x >= static_cast<int>(h.x_values.size()) || y >= static_cast<int>(h.y_values.size())) continue;
    if (!taken.insert({x, y}).second) continue;
    HeatmapCell c;
    c.x = x;
    c.y = y;
    c.run = i;
    c.ok = r.status == "ok" && r.summary.has_value() && SummaryMetric(*r.summary, metric, c.value);
    if (!c.ok) c.value = 0;
    if (c.ok) {
      h.min = first ? c.value : std::min(h.min, c.value);
      h.max = first ? c.value : std::max(h.max, c.value);
      first = false;
    }
    h.cells.push_back(c);
  }
  return h;
}

Heatmap ReplayHeatmap(const ReplayReport& report) {
  Heatmap h;
  h.metric = "slowdown";
  h.x_axis = "iteration";
  h.y_axis = "device";
  const ParallelConfig& par = report.parallel;
  const int pp = std::max(1, par.pp), sp = std::max(1, par.sp);
  for (const ReplayIteration& it : report.iterations) h.x_values.push_back(std::to_string(it.iteration));
  for (int d = 0; d < report.devices; ++d) {
    const int stage = d % pp, replica = d / pp / sp, sp_rank = (d / pp) % sp;
    h.y_values.push_back("dp " + std::to_string(replica) + " pp " + std::to_string(stage) +
                         (sp > 1 ? " sp " + std::to_string(sp_rank) : ""));
  }
  bool first = true;
  for (int x = 0; x < static_cast<int>(report.iterations.size()); ++x) {
    const std::vector<double>& s = report.iterations[x].device_slowdown;
    for (int y = 0; y < static_cast<int>(s.size()); ++y) {
      if (!(s[y] > 0)) continue;
      h.cells.push_back({x, y, s[y], -1, true});
      h.min = first ? s[y] : std::min(h.min, s[y]);
      h.max = first ? s[y] : std::max(h.max, s[y]);
      first = false;
    }
  }
  return h;
}

}  // namespace mmtwin::gui

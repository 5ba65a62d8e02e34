// SPDX-License-Identifier: Apache-2.0
// mmtwin compare RUN_A RUN_B [--json]: side-by-side summaries of two runs (folders written by
// `mmtwin simulate -o`, or their summary.json files): A, B, B - A and B / A for the key metrics, then the
// same per pipeline stage. Exit 0, or 2 on bad input (a missing or unreadable summary).
#include <cmath>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/records/run_folder.h"

namespace mmtwin::cli {
namespace {

using nlohmann::json;

struct Metric {
  const char* key;    // name in the --json output (the field's path in summary.json)
  const char* label;  // text table label
  double scale;       // display = value * scale
  int prec;
  double (*get)(const RunSummary&);
};

using S = const RunSummary&;
const std::vector<Metric> kMetrics = {
    {"/iteration_time_us/p50", "iteration p50 (ms)", 1e-3, 2, [](S s) { return s.iteration_time_us.p50; }},
    {"/iteration_time_us/p99", "iteration p99 (ms)", 1e-3, 2, [](S s) { return s.iteration_time_us.p99; }},
    {"/iteration_time_us/mean", "iteration mean (ms)", 1e-3, 2, [](S s) { return s.iteration_time_us.mean; }},
    {"/gpu_days", "GPU-days (epoch)", 1, 3, [](S s) { return s.gpu_days; }},
    {"/tokens_per_s", "tokens/s", 1, 0, [](S s) { return s.tokens_per_s; }},
    {"/samples_per_s", "samples/s", 1, 2, [](S s) { return s.samples_per_s; }},
    {"/mfu", "MFU", 1, 4, [](S s) { return s.mfu; }},
    {"/busy_ratio", "busy ratio", 1, 4, [](S s) { return s.busy_ratio; }},
    {"/bubble_ratio", "bubble ratio", 1, 4, [](S s) { return s.bubble_ratio; }},
    {"/idle_ratio", "idle ratio", 1, 4, [](S s) { return s.idle_ratio; }},
    {"/recompute_ratio", "recompute ratio", 1, 4, [](S s) { return s.recompute_ratio; }},
    {"/exposed_comm_ratio", "exposed comm ratio", 1, 4, [](S s) { return s.exposed_comm_ratio; }},
    {"/recomputed_layers", "recomputed layers", 1, 0, [](S s) { return double(s.recomputed_layers); }},
    {"/data/pad_ratio", "pad ratio", 1, 4, [](S s) { return s.data.pad_ratio; }},
    {"/data/dist_ratio_vit", "dist ratio ViT", 1, 4, [](S s) { return s.data.dist_ratio_vit; }},
    {"/data/dist_ratio_llm", "dist ratio LLM", 1, 4, [](S s) { return s.data.dist_ratio_llm; }},
    {"/data/mean_batch_size", "mean batch size", 1, 3, [](S s) { return s.data.mean_batch_size; }},
    {"/oom", "OOM (1 = yes)", 1, 0, [](S s) { return s.oom ? 1.0 : 0.0; }},
};

struct StageMetric {
  const char* key;
  const char* label;
  double scale;
  int prec;
  double (*get)(const StageRecord&);
};

using T = const StageRecord&;
const std::vector<StageMetric> kStageMetrics = {
    {"/layers", "layers", 1, 0, [](T s) { return double(s.layers); }},
    {"/fwd_us_mean", "fwd (ms)", 1e-3, 2, [](T s) { return s.fwd_us_mean; }},
    {"/bwd_us_mean", "bwd (ms)", 1e-3, 2, [](T s) { return s.bwd_us_mean; }},
    {"/recompute_us_mean", "recompute (ms)", 1e-3, 2, [](T s) { return s.recompute_us_mean; }},
    {"/busy_ratio", "busy", 1, 4, [](T s) { return s.busy_ratio; }},
    {"/bubble_ratio", "bubble", 1, 4, [](T s) { return s.bubble_ratio; }},
    {"/idle_ratio", "idle", 1, 4, [](T s) { return s.idle_ratio; }},
    {"/peak_memory_bytes", "peak mem (GiB)", 1.0 / (1024.0 * 1024 * 1024), 2,
     [](T s) { return double(s.peak_memory_bytes); }},
};

json Row(double a, double b) {
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  return {{"a", num(a)}, {"b", num(b)}, {"delta", num(b - a)}, {"ratio", num(a != 0 ? b / a : std::nan(""))}};
}

std::string Cell(double x, int prec, bool sign = false) {
  if (!std::isfinite(x)) return "n/a";
  std::string s = Fixed(x, prec);
  if (sign && x > 0) s = "+" + s;
  return s;
}

std::string PadL(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}
std::string PadR(const std::string& s, size_t w) {
  return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

std::string Policies(const RunSummary& j) {
  return std::string(RecordSourceName(j.source)) + " by " + (j.engine.empty() ? "?" : j.engine) + "; data " +
         j.data_policy.name + ", partition " + j.partition_policy.name + ", recompute " +
         j.recompute_policy.name + ", schedule " + j.schedule_policy.name;
}

}  // namespace

int RunCompare(const CompareArgs& args, std::ostream& out, std::ostream& err) {
  const std::vector<std::string>& runs = args.runs;
  const bool as_json = args.json;
  if (runs.size() != 2) {
    err << "mmtwin compare: give two runs (run folders or " << RunFileName(RunFile::kSummary) << " files)\n";
    return 2;
  }
  auto a = LoadSummary(runs[0]);
  auto b = LoadSummary(runs[1]);
  for (const auto* r : {&a, &b})
    if (!*r) {
      err << "mmtwin compare: " << r->error().message() << "\n";
      return 2;
    }
  const RunSummary& A = *a;
  const RunSummary& B = *b;
  const std::vector<StageRecord>& sa = A.stages;
  const std::vector<StageRecord>& sb = B.stages;
  const size_t common = std::min(sa.size(), sb.size());

  if (as_json) {
    json j;
    j["a"] = {{"run", runs[0]}, {"scenario", A.scenario}, {"source", RecordSourceName(A.source)}};
    j["b"] = {{"run", runs[1]}, {"scenario", B.scenario}, {"source", RecordSourceName(B.source)}};
    json m = json::object();
    for (const Metric& x : kMetrics) m[std::string(x.key).substr(1)] = Row(x.get(A), x.get(B));
    j["metrics"] = m;
    json st = json::array();
    for (size_t i = 0; i < common; ++i) {
      json s = {{"stage", i}};
      for (const StageMetric& x : kStageMetrics)
        s[std::string(x.key).substr(1)] = Row(x.get(sa[i]), x.get(sb[i]));
      st.push_back(s);
    }
    j["stages"] = st;
    j["stages_a"] = sa.size();
    j["stages_b"] = sb.size();
    out << j.dump(2) << "\n";
    return 0;
  }

  out << "A  " << runs[0] << ": " << A.scenario << " (" << Policies(A) << ")\n";
  out << "B  " << runs[1] << ": " << B.scenario << " (" << Policies(B) << ")\n\n";
  const size_t w0 = 20, w = 14;
  out << PadR("metric", w0) << PadL("A", w) << PadL("B", w) << PadL("B - A", w) << PadL("B / A", w) << "\n";
  for (const Metric& x : kMetrics) {
    const double va = x.get(A) * x.scale, vb = x.get(B) * x.scale;
    out << PadR(x.label, w0) << PadL(Cell(va, x.prec), w) << PadL(Cell(vb, x.prec), w)
        << PadL(Cell(vb - va, x.prec, true), w) << PadL(va != 0 ? Cell(vb / va, 3) + "x" : "n/a", w) << "\n";
  }
  if (sa.size() != sb.size())
    out << "\nstages: A has " << sa.size() << ", B has " << sb.size() << "; comparing the first " << common
        << "\n";
  if (common > 0) {
    out << "\nper stage\n"
        << PadR("stage metric", w0) << PadL("A", w) << PadL("B", w) << PadL("B - A", w) << PadL("B / A", w)
        << "\n";
    for (size_t i = 0; i < common; ++i)
      for (const StageMetric& x : kStageMetrics) {
        const double va = x.get(sa[i]) * x.scale, vb = x.get(sb[i]) * x.scale;
        out << PadR("s" + std::to_string(i) + " " + x.label, w0) << PadL(Cell(va, x.prec), w)
            << PadL(Cell(vb, x.prec), w) << PadL(Cell(vb - va, x.prec, true), w)
            << PadL(va != 0 ? Cell(vb / va, 3) + "x" : "n/a", w) << "\n";
      }
  }
  return 0;
}

}  // namespace mmtwin::cli

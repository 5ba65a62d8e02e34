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
#include "core/util/csv.h"

namespace mmtwin::cli {
namespace {

using nlohmann::json;

constexpr const char* kCompareUsage =
    R"(usage: mmtwin compare RUN_A RUN_B [--json]

Compares two runs of `mmtwin simulate` (their run folders, or summary.json files): the scenario and policies of
each, then A, B, the delta B - A and the ratio B / A for iteration time (p50, p99, mean), GPU-days, throughput,
MFU, busy/bubble/idle/recompute ratios and data-balance metrics, then per pipeline stage (forward, backward and
recompute time, bubble and idle ratios, peak memory). --json prints the same as JSON.
)";

struct Metric {
  const char* key;    // JSON pointer into summary.json (or a stage object)
  const char* label;  // text table label
  double scale;       // display = value * scale
  int prec;
};

const std::vector<Metric> kMetrics = {
    {"/iteration_time_us/p50", "iteration p50 (ms)", 1e-3, 2},
    {"/iteration_time_us/p99", "iteration p99 (ms)", 1e-3, 2},
    {"/iteration_time_us/mean", "iteration mean (ms)", 1e-3, 2},
    {"/gpu_days", "GPU-days (epoch)", 1, 3},
    {"/tokens_per_s", "tokens/s", 1, 0},
    {"/samples_per_s", "samples/s", 1, 2},
    {"/mfu", "MFU", 1, 4},
    {"/busy_ratio", "busy ratio", 1, 4},
    {"/bubble_ratio", "bubble ratio", 1, 4},
    {"/idle_ratio", "idle ratio", 1, 4},
    {"/recompute_ratio", "recompute ratio", 1, 4},
    {"/exposed_comm_ratio", "exposed comm ratio", 1, 4},
    {"/recomputed_layers", "recomputed layers", 1, 0},
    {"/data/pad_ratio", "pad ratio", 1, 4},
    {"/data/dist_ratio_vit", "dist ratio ViT", 1, 4},
    {"/data/dist_ratio_llm", "dist ratio LLM", 1, 4},
    {"/data/mean_batch_size", "mean batch size", 1, 3},
    {"/oom", "OOM (1 = yes)", 1, 0},
};

const std::vector<Metric> kStageMetrics = {
    {"/layers", "layers", 1, 0},
    {"/fwd_us_mean", "fwd (ms)", 1e-3, 2},
    {"/bwd_us_mean", "bwd (ms)", 1e-3, 2},
    {"/recompute_us_mean", "recompute (ms)", 1e-3, 2},
    {"/busy_ratio", "busy", 1, 4},
    {"/bubble_ratio", "bubble", 1, 4},
    {"/idle_ratio", "idle", 1, 4},
    {"/peak_memory_bytes", "peak mem (GiB)", 1.0 / (1024.0 * 1024 * 1024), 2},
};

double Value(const json& j, const char* pointer) {
  const json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return std::nan("");
  const json& v = j.at(p);
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return v.is_number() ? v.get<double>() : std::nan("");
}

Result<json> LoadSummary(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string path = arg;
  if (fs::is_directory(arg, ec)) path = (fs::path(arg) / "summary.json").string();
  if (!fs::is_regular_file(path, ec))
    return Error(path + ": no such summary (give a run folder or a summary.json)");
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error(path + ": not a summary.json (JSON object expected)");
  return j;
}

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

std::string Policies(const json& j) {
  if (!j.contains("policies") || !j["policies"].is_object()) return "n/a";
  std::string s;
  for (const char* k : {"data", "partition", "recompute", "schedule"}) {
    std::string v = "n/a";
    if (j["policies"].contains(k)) {
      const json& p = j["policies"][k];
      v = p.is_string()                                                  ? p.get<std::string>()
          : p.is_object() && p.contains("name") && p["name"].is_string() ? p["name"].get<std::string>()
                                                                         : p.dump();
    }
    s += (s.empty() ? "" : ", ") + std::string(k) + " " + v;
  }
  return s;
}

}  // namespace

int RunCompare(const Args& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> runs;
  bool as_json = false;
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      out << kCompareUsage;
      return 0;
    }
    if (a == "--json")
      as_json = true;
    else if (a.size() > 1 && a[0] == '-') {
      err << "mmtwin compare: unknown option '" << a << "'\n" << kCompareUsage;
      return 2;
    } else
      runs.push_back(a);
  }
  if (runs.size() != 2) {
    err << "mmtwin compare: give two runs (run folders or summary.json files)\n" << kCompareUsage;
    return 2;
  }
  auto a = LoadSummary(runs[0]);
  auto b = LoadSummary(runs[1]);
  for (const auto* r : {&a, &b})
    if (!*r) {
      err << "mmtwin compare: " << r->error().message() << "\n";
      return 2;
    }
  const json& A = *a;
  const json& B = *b;
  const json empty = json::array();
  const json& sa = A.contains("stages") && A["stages"].is_array() ? A["stages"] : empty;
  const json& sb = B.contains("stages") && B["stages"].is_array() ? B["stages"] : empty;
  const size_t common = std::min(sa.size(), sb.size());

  if (as_json) {
    json j;
    j["a"] = {{"run", runs[0]}, {"scenario", A.value("scenario", "")}};
    j["b"] = {{"run", runs[1]}, {"scenario", B.value("scenario", "")}};
    json m = json::object();
    for (const Metric& x : kMetrics) m[std::string(x.key).substr(1)] = Row(Value(A, x.key), Value(B, x.key));
    j["metrics"] = m;
    json st = json::array();
    for (size_t i = 0; i < common; ++i) {
      json s = {{"stage", i}};
      for (const Metric& x : kStageMetrics)
        s[std::string(x.key).substr(1)] = Row(Value(sa[i], x.key), Value(sb[i], x.key));
      st.push_back(s);
    }
    j["stages"] = st;
    j["stages_a"] = sa.size();
    j["stages_b"] = sb.size();
    out << j.dump(2) << "\n";
    return 0;
  }

  out << "A  " << runs[0] << ": " << JStr(A, "scenario") << " (" << Policies(A) << ")\n";
  out << "B  " << runs[1] << ": " << JStr(B, "scenario") << " (" << Policies(B) << ")\n\n";
  const size_t w0 = 20, w = 14;
  out << PadR("metric", w0) << PadL("A", w) << PadL("B", w) << PadL("B - A", w) << PadL("B / A", w) << "\n";
  for (const Metric& x : kMetrics) {
    const double va = Value(A, x.key) * x.scale, vb = Value(B, x.key) * x.scale;
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
      for (const Metric& x : kStageMetrics) {
        const double va = Value(sa[i], x.key) * x.scale, vb = Value(sb[i], x.key) * x.scale;
        out << PadR("s" + std::to_string(i) + " " + x.label, w0) << PadL(Cell(va, x.prec), w)
            << PadL(Cell(vb, x.prec), w) << PadL(Cell(vb - va, x.prec, true), w)
            << PadL(va != 0 ? Cell(vb / va, 3) + "x" : "n/a", w) << "\n";
      }
  }
  return 0;
}

}  // namespace mmtwin::cli

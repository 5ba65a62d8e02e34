#include "cli/cli_format.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace mmtwin::cli {
namespace {

using nlohmann::json;

const json* Find(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// A layer label pair: "layer_labels": ["vision.embed", "vision.block.11"] (or a single string).
std::string Labels(const json& st) {
  const json* l = Find(st, "layer_labels");
  if (!l) return "";
  if (l->is_string()) return l->get<std::string>();
  if (l->is_array() && !l->empty()) {
    std::string a = (*l)[0].is_string() ? (*l)[0].get<std::string>() : (*l)[0].dump();
    std::string b = l->back().is_string() ? l->back().get<std::string>() : l->back().dump();
    return l->size() == 1 || a == b ? a : a + " .. " + b;
  }
  return "";
}

std::string LayerRange(const json& st) {
  const double f = JNum(st, "first_layer"), l = JNum(st, "last_layer");
  if (std::isnan(f) || std::isnan(l)) return "n/a";
  return Count(f) + ".." + Count(l);
}

std::string Params(double p) {
  if (std::isnan(p)) return "n/a";
  return Fixed(p / 1e9, 2) + "B";
}

std::string Percent(double r) { return std::isnan(r) ? "n/a" : Fixed(100 * r, 1) + "%"; }

}  // namespace

double JNum(const json& j, const char* key) {
  const json* v = Find(j, key);
  return v && v->is_number() ? v->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

bool JBool(const json& j, const char* key) {
  const json* v = Find(j, key);
  return v && v->is_boolean() && v->get<bool>();
}

std::string JStr(const json& j, const char* key) {
  const json* v = Find(j, key);
  if (!v || v->is_null()) return "n/a";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number_integer() || v->is_number_unsigned()) return Count(v->get<double>());
  if (v->is_array()) return Count(static_cast<double>(v->size()));
  return v->dump();
}

std::string Fixed(double x, int prec) {
  if (std::isnan(x)) return "n/a";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, x);
  return b;
}

std::string GiB(double bytes) { return std::isnan(bytes) ? "n/a" : Fixed(bytes / (1024.0 * 1024 * 1024), 1); }

std::string Count(double x) {
  if (std::isnan(x)) return "n/a";
  char b[64];
  std::snprintf(b, sizeof b, "%.0f", std::fabs(x));
  std::string digits = b, s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return (x < 0 ? "-" : "") + s;
}

std::string PolicyText(const PolicyRef& p) {
  if (p.params.empty()) return p.name;
  std::string s = p.name + "(";
  bool first = true;
  for (const auto& [k, v] : p.params) {
    s += (first ? "" : ", ") + k + "=" + v;
    first = false;
  }
  return s + ")";
}

void WriteHeader(const Scenario& s, const json& j, std::ostream& out) {
  const ParallelConfig& p = s.parallel;
  out << "scenario        " << s.name << (s.description.empty() ? "" : ": " + s.description) << "\n";
  out << "model           " << s.model << "\n";
  out << "cluster         " << s.cluster << ", " << s.nodes << " node" << (s.nodes == 1 ? "" : "s") << "; "
      << p.world_size() << " GPUs = dp " << p.dp << " x tp " << p.tp << " x pp " << p.pp;
  if (p.vpp > 1) out << " (vpp " << p.vpp << ")";
  out << ", " << p.micro_batches << " micro-batches, ZeRO-" << p.zero_stage << "\n";
  out << "policies        data " << PolicyText(s.data) << ", partition " << PolicyText(s.partition)
      << ", recompute " << PolicyText(s.recompute) << ", schedule " << PolicyText(s.schedule) << "\n";
  out << "trace           ";
  if (!s.trace.file.empty())
    out << s.trace.file;
  else
    out << s.trace.preset << ", " << Count(static_cast<double>(s.trace.samples)) << " samples, seed "
        << s.trace.seed;
  out << "\n";
}

void WritePlanStages(const json& plan, std::ostream& out) {
  const json* stages = Find(plan, "stages");
  if (!stages || !stages->is_array() || stages->empty()) {
    out << "(no stages)\n";
    return;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-9s %-40s %8s %7s %9s %9s %8s %9s %8s %5s\n", "stage", "layers",
                "first .. last", "params", "recomp", "fwd ms", "states", "act", "peak", "capacity", "fits");
  out << line;
  out << std::string(5 + 9 + 40 + 8 + 7 + 9 + 9 + 8 + 9 + 8 + 5 + 10, '-') << "\n";
  for (const json& st : *stages) {
    const double cap = JNum(st, "memory_capacity_bytes"), peak = JNum(st, "peak_memory_bytes");
    bool fits = true;
    if (const json* f = Find(st, "fits"); f && f->is_boolean())
      fits = f->get<bool>();
    else if (!std::isnan(cap) && !std::isnan(peak))
      fits = peak <= cap;
    std::snprintf(line, sizeof line, "%-5s %-9s %-40s %8s %7s %9s %9s %8s %9s %8s %5s\n",
                  JStr(st, "stage").c_str(), LayerRange(st).c_str(), Labels(st).c_str(),
                  Params(JNum(st, "params")).c_str(), JStr(st, "recomputed_layers").c_str(),
                  Fixed(JNum(st, "fwd_us_mean") / 1e3, 1).c_str(), GiB(JNum(st, "model_state_bytes")).c_str(),
                  GiB(JNum(st, "peak_activation_bytes")).c_str(), GiB(peak).c_str(), GiB(cap).c_str(),
                  fits ? "yes" : "OOM");
    out << line;
  }
  out << "(memory in GiB per GPU: model states (weights, gradients, optimizer after TP/PP/ZeRO division), "
         "peak\n"
         " in-flight activations, peak total; fwd ms = mean forward time of one micro-batch through the "
         "stage)\n";
}

void WriteSimStages(const json& summary, std::ostream& out) {
  const json* stages = Find(summary, "stages");
  if (!stages || !stages->is_array() || stages->empty()) {
    out << "(no stages)\n";
    return;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-9s %8s %7s %8s %8s %9s %7s %7s %7s %8s %8s %8s\n", "stage",
                "layers", "params", "recomp", "fwd ms", "bwd ms", "recomp ms", "busy", "bubble", "idle",
                "states", "peak", "capacity");
  out << line;
  out << std::string(5 + 9 + 8 + 7 + 8 + 8 + 9 + 7 + 7 + 7 + 8 + 8 + 8 + 12, '-') << "\n";
  for (const json& st : *stages) {
    std::snprintf(line, sizeof line, "%-5s %-9s %8s %7s %8s %8s %9s %7s %7s %7s %8s %8s %8s\n",
                  JStr(st, "stage").c_str(), LayerRange(st).c_str(), Params(JNum(st, "params")).c_str(),
                  JStr(st, "recomputed_layers").c_str(), Fixed(JNum(st, "fwd_us_mean") / 1e3, 1).c_str(),
                  Fixed(JNum(st, "bwd_us_mean") / 1e3, 1).c_str(),
                  Fixed(JNum(st, "recompute_us_mean") / 1e3, 1).c_str(),
                  Percent(JNum(st, "busy_ratio")).c_str(), Percent(JNum(st, "bubble_ratio")).c_str(),
                  Percent(JNum(st, "idle_ratio")).c_str(), GiB(JNum(st, "model_state_bytes")).c_str(),
                  GiB(JNum(st, "peak_memory_bytes")).c_str(), GiB(JNum(st, "memory_capacity_bytes")).c_str());
    out << line;
  }
  out << "(times per micro-batch, means over the replayed iterations; memory in GiB per GPU)\n";
}

void WriteOom(const json& j, std::ostream& out) {
  if (!JBool(j, "oom")) return;
  const json* list = Find(j, "oom_stages");
  if (!list || !list->is_array() || list->empty()) {
    out << "OOM: the plan does not fit device memory\n";
    return;
  }
  for (const json& o : *list)
    out << "OOM: stage " << JStr(o, "stage") << " is short by " << GiB(JNum(o, "short_bytes"))
        << " GiB of device memory\n";
}

}  // namespace mmtwin::cli

// SPDX-License-Identifier: Apache-2.0
// Scenario files (yaml-cpp): parsing (ReadScenario: unknown keys, types, ranges, shapes -> `file:line: key:
// reason`; every yaml-cpp exception becomes an Error), resolution of defaults and relative paths, and the resolved
// YAML. The values are checked on the struct (check.cc: CheckScenario).
#include "core/scenario/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <filesystem>

#include "core/scenario/schema.h"
#include "core/trace/generate.h"
#include "core/util/csv.h"
#include "core/util/text.h"
#include "core/util/yaml_error.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using namespace scenario_schema;  // NOLINT: the key lists and ranges

std::string Field(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

// Model and cluster arguments name a preset unless they look like a file (the loaders' own rule).
bool LooksLikePath(const std::string& s) {
  auto ends = [&](const char* suf) {
    const std::string x(suf);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  return s.find('/') != std::string::npos || ends(".yaml") || ends(".yml");
}

// Reads values of the right type into the struct; every error `file:line: field: reason` at the value's line.
class Parser {
 public:
  Parser(std::string file, std::string base_dir) : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  Error At(const YAML::Node& n, const std::string& field, const std::string& reason) const {
    return Error::At(file_, LineOf(n), field, reason);
  }

  // A mapping whose keys are all in `allowed` (the one key check, core/util/yaml_error.h).
  Status Keys(const YAML::Node& map, const std::string& where,
              const std::vector<std::string>& allowed) const {
    return CheckKeys(map, file_, where, allowed);
  }

  // A string (possibly empty: whether it may be is CheckScenario's); `~` is "" where allow_null.
  Result<std::string> Str(const YAML::Node& n, const std::string& field, bool allow_null = false) const {
    if (n.IsNull() && allow_null) return std::string();
    if (!n.IsScalar()) return At(n, field, "expected a string");
    if (!ValidUtf8(n.Scalar())) return At(n, field, "not valid UTF-8");
    return n.Scalar();
  }

  Result<int64_t> Int(const YAML::Node& n, const std::string& field, int64_t lo, int64_t hi) const {
    if (!n.IsScalar()) return At(n, field, "expected an integer");
    int64_t v = 0;
    if (!ParseInt64(n.Scalar(), v)) return At(n, field, "'" + Abbreviate(n.Scalar()) + "' is not an integer");
    if (v < lo || v > hi) return At(n, field, OutOfRange(v, lo, hi));
    return v;
  }

  Result<bool> Bool(const YAML::Node& n, const std::string& field) const {
    if (n.IsScalar() && n.Scalar() == "true") return true;
    if (n.IsScalar() && n.Scalar() == "false") return false;
    return At(n, field, "expected true or false");
  }

  // A bare name ("1f1b", "block:4", kept verbatim) or {name: ..., params: {k: v}} (values kept as strings).
  Result<PolicyRef> Policy(const YAML::Node& n, const std::string& field) const {
    PolicyRef p;
    if (n.IsScalar()) {
      MMTWIN_ASSIGN_OR_RETURN(p.name, Str(n, field));
      return p;
    }
    if (!n.IsMap()) return At(n, field, "expected a policy name or a mapping {name: ..., params: {...}}");
    MMTWIN_RETURN_IF_ERROR(Keys(n, field, kPolicyKeys));
    if (!n["name"]) return At(n, Field(field, "name"), "missing");
    MMTWIN_ASSIGN_OR_RETURN(p.name, Str(n["name"], Field(field, "name")));
    const YAML::Node params = n["params"];
    if (!params || params.IsNull()) return p;  // `params:` with nothing after it
    const std::string where = Field(field, "params");
    if (!params.IsMap()) return At(params, where, "expected a mapping of parameter names to values");
    for (auto it = params.begin(); it != params.end(); ++it) {
      if (!it->first.IsScalar() || it->first.Scalar().empty())
        return At(it->first, where, "expected a parameter name");
      const std::string key = it->first.Scalar();
      if (!ValidUtf8(key)) return At(it->first, where, "parameter name is not valid UTF-8");
      if (!it->second.IsScalar()) return At(it->second, Field(where, key), "expected a scalar value");
      if (!ValidUtf8(it->second.Scalar())) return At(it->second, Field(where, key), "not valid UTF-8");
      p.params[key] = it->second.Scalar();
    }
    return p;
  }

  // Relative paths resolve against the scenario's folder; the result is absolute and normalized.
  std::string Resolve(const std::string& path) const {
    fs::path p(path);
    if (p.is_relative()) p = fs::path(base_dir_.empty() ? "." : base_dir_) / p;
    std::error_code ec;
    fs::path abs = fs::absolute(p, ec);
    return (ec ? p : abs).lexically_normal().string();
  }

 private:
  std::string file_;
  std::string base_dir_;
};

Status ParseName(const Parser& r, const YAML::Node& root, const std::string& file, Scenario& s) {
  if (const YAML::Node v = root["name"]) {
    MMTWIN_ASSIGN_OR_RETURN(s.name, r.Str(v, "name"));
  } else {
    s.name = fs::path(file).stem().string();
    if (!IsPlainName(s.name)) s.name = "scenario";
  }
  if (const YAML::Node v = root["description"]) {
    MMTWIN_ASSIGN_OR_RETURN(s.description, r.Str(v, "description", /*allow_null=*/true));
  }
  return Status();
}

Status ParseTrace(const Parser& r, const YAML::Node& n, TraceSource& t) {
  MMTWIN_RETURN_IF_ERROR(r.Keys(n, "trace", kTraceKeys));
  const bool has_file = static_cast<bool>(n["file"]), has_preset = static_cast<bool>(n["preset"]);
  const bool has_seq = static_cast<bool>(n["sequence_tokens"]);
  if (static_cast<int>(has_file) + static_cast<int>(has_preset) + static_cast<int>(has_seq) != 1)
    return r.At(n, "trace",
                "give exactly one of file (a trace CSV) and preset (a generator preset), or sequence_tokens "
                "(synthetic text-only sequences of that length)");
  if (has_seq) {
    if (n["seed"]) return r.At(n["seed"], "trace.seed", "only with preset");
    MMTWIN_ASSIGN_OR_RETURN(t.sequence_tokens,
                            r.Int(n["sequence_tokens"], "trace.sequence_tokens", 1, kMaxSequenceTokens));
    t.samples = 1;
    if (n["samples"]) {
      MMTWIN_ASSIGN_OR_RETURN(t.samples, r.Int(n["samples"], "trace.samples", 1, kMaxTraceSamples));
    }
    return Status();
  }
  if (has_file) {
    for (const char* k : {"samples", "seed"})
      if (n[k])
        return r.At(n[k], std::string("trace.") + k, "only with preset (a trace file holds its own samples)");
    MMTWIN_ASSIGN_OR_RETURN(std::string f, r.Str(n["file"], "trace.file"));
    if (f.empty()) return r.At(n["file"], "trace.file", "must not be empty");
    t.file = r.Resolve(f);
    return Status();
  }
  MMTWIN_ASSIGN_OR_RETURN(t.preset, r.Str(n["preset"], "trace.preset"));
  if (n["samples"]) {
    MMTWIN_ASSIGN_OR_RETURN(t.samples, r.Int(n["samples"], "trace.samples", 0, kMaxTraceSamples));
  }
  if (t.samples == 0)  // the preset's default size (an unknown preset is CheckScenario's)
    for (const GeneratorPreset& p : GeneratorPresets())
      if (p.name == t.preset) t.samples = p.default_samples;
  if (n["seed"]) {
    MMTWIN_ASSIGN_OR_RETURN(int64_t v, r.Int(n["seed"], "trace.seed", 0, INT64_MAX));
    t.seed = static_cast<uint64_t>(v);
  }
  return Status();
}

// `model.kernels`: fused | eager, or {default: fused|eager, FAMILY: fused|eager (projections: fused|split;
// logits: whole|chunked)}.
Status ParseKernels(const Parser& r, const YAML::Node& n, KernelImpl& out) {
  const auto word = [&](const YAML::Node& v, const std::string& field, const char* eager_word,
                        const char* off_word = "fused") -> Result<bool> {
    MMTWIN_ASSIGN_OR_RETURN(std::string w, r.Str(v, field));
    if (w == off_word) return false;
    if (w == eager_word) return true;
    return r.At(v, field, "'" + w + "': expected " + off_word + " or " + eager_word);
  };
  auto set_all = [&](bool eager) { out = eager ? EagerKernels() : KernelImpl(); };
  if (n.IsScalar()) {
    MMTWIN_ASSIGN_OR_RETURN(bool eager, word(n, "model.kernels", "eager"));
    set_all(eager);
    return Status();
  }
  if (!n.IsMap())
    return r.At(n, "model.kernels", "expected fused, eager or a mapping {default: eager, norm: fused, ...}");
  std::vector<std::string> allowed = {"default"};
  for (const KernelImplFamily& f : KernelImplFamilies()) allowed.push_back(f.key);
  MMTWIN_RETURN_IF_ERROR(r.Keys(n, "model.kernels", allowed));
  set_all(false);
  if (const YAML::Node d = n["default"]) {
    MMTWIN_ASSIGN_OR_RETURN(bool eager, word(d, "model.kernels.default", "eager"));
    set_all(eager);
  }
  for (const KernelImplFamily& f : KernelImplFamilies())
    if (const YAML::Node v = n[f.key]) {
      MMTWIN_ASSIGN_OR_RETURN(out.*f.flag,
                              word(v, std::string("model.kernels.") + f.key, f.on_word, f.off_word));
    }
  return Status();
}

Status ParseModel(const Parser& r, const YAML::Node& root, Scenario& s) {
  const YAML::Node model = root["model"];
  if (!model)
    return r.At(root, "model", "missing (a model zoo name such as internvl-1.5-6b-20b, or a spec file)");
  if (model.IsMap()) {
    // {name: ZOO-NAME-OR-FILE, image_px: N}: the model with its vision encoders fed N-px tiles.
    MMTWIN_RETURN_IF_ERROR(r.Keys(model, "model", kModelKeys));
    if (!model["name"]) return r.At(model, "model.name", "missing (a model zoo name or a spec file)");
    MMTWIN_ASSIGN_OR_RETURN(s.model, r.Str(model["name"], "model.name"));
    if (const YAML::Node v = model["image_px"]) {
      MMTWIN_ASSIGN_OR_RETURN(int64_t px, r.Int(v, "model.image_px", 1, kMaxImagePx));
      s.image_px = static_cast<int>(px);
    }
    if (const YAML::Node v = model["token_merge"]) {
      MMTWIN_ASSIGN_OR_RETURN(int64_t merge, r.Int(v, "model.token_merge", 1, 64));
      s.token_merge = static_cast<int>(merge);
    }
    if (const YAML::Node v = model["frozen"]) {
      // A list of component names; a single name is accepted as a list of one.
      if (v.IsScalar()) {
        MMTWIN_ASSIGN_OR_RETURN(std::string name, r.Str(v, "model.frozen"));
        s.frozen.push_back(name);
      } else if (v.IsSequence()) {
        for (const YAML::Node& e : v) {
          MMTWIN_ASSIGN_OR_RETURN(std::string name, r.Str(e, "model.frozen"));
          s.frozen.push_back(name);
        }
      } else if (!v.IsNull()) {
        return r.At(v, "model.frozen", "expected a list of component names (e.g. [vision])");
      }
    }
    if (const YAML::Node v = model["image_attention"]) {
      MMTWIN_ASSIGN_OR_RETURN(s.image_attention, r.Str(v, "model.image_attention"));
      if (s.image_attention != "causal" && s.image_attention != "bidirectional")
        return r.At(v, "model.image_attention",
                    "'" + s.image_attention + "': expected causal or bidirectional");
    }
    if (const YAML::Node v = model["attention"]) {
      MMTWIN_ASSIGN_OR_RETURN(s.attention, r.Str(v, "model.attention"));
      if (s.attention != "flash" && s.attention != "unfused")
        return r.At(v, "model.attention", "'" + s.attention + "': expected flash or unfused");
    }
    if (const YAML::Node v = model["kernels"]) MMTWIN_RETURN_IF_ERROR(ParseKernels(r, v, s.kernels));
  } else {
    MMTWIN_ASSIGN_OR_RETURN(s.model, r.Str(model, "model"));
  }
  if (LooksLikePath(s.model)) s.model = r.Resolve(s.model);
  return Status();
}

Status ParseCluster(const Parser& r, const YAML::Node& n, Scenario& s) {
  if (n.IsScalar()) {
    MMTWIN_ASSIGN_OR_RETURN(s.cluster, r.Str(n, "cluster"));
  } else {
    if (!n.IsMap())
      return r.At(n, "cluster", "expected a cluster preset name or a mapping {preset: NAME, nodes: N}");
    MMTWIN_RETURN_IF_ERROR(r.Keys(n, "cluster", kClusterKeys));
    if (const YAML::Node v = n["preset"]) {
      MMTWIN_ASSIGN_OR_RETURN(s.cluster, r.Str(v, "cluster.preset"));
    }
    if (const YAML::Node v = n["nodes"]) {
      MMTWIN_ASSIGN_OR_RETURN(int64_t x, r.Int(v, "cluster.nodes", 0, kMaxWorld));
      s.nodes = static_cast<int>(x);
    }
    if (const YAML::Node d = n["device"]) {
      if (!d.IsMap()) return r.At(d, "cluster.device", "expected a mapping {KEY: number} of device keys");
      s.device.clear();
      s.device_text.clear();
      for (const auto& kv : d) {
        const std::string key = kv.first.Scalar();
        if (std::find(kDeviceTextKeys.begin(), kDeviceTextKeys.end(), key) != kDeviceTextKeys.end()) {
          MMTWIN_ASSIGN_OR_RETURN(s.device_text[key], r.Str(kv.second, "cluster.device." + key));
          continue;
        }
        double x = 0;
        try {
          if (!kv.second.IsScalar()) throw YAML::Exception(kv.second.Mark(), "not a scalar");
          x = kv.second.as<double>();
        } catch (const YAML::Exception&) {
          return r.At(kv.second, "cluster.device." + key,
                      "expected a number (words only for " + Join(kDeviceTextKeys) + ")");
        }
        s.device[key] = x;
      }
    }
  }
  if (LooksLikePath(s.cluster)) s.cluster = r.Resolve(s.cluster);
  return Status();
}

Status ParseParallel(const Parser& r, const YAML::Node& n, ParallelConfig& p) {
  // Renamed key: Megatron's sequence parallelism inside a TP group, not the sequence / context parallelism of
  // long-context training (a dimension of its own in the device mesh).
  if (n.IsMap() && n["sequence_parallel"])
    return r.At(
        n["sequence_parallel"], "parallel.sequence_parallel",
        "renamed to parallel.tp_sequence_parallel (Megatron's sequence parallelism inside a TP group)");
  MMTWIN_RETURN_IF_ERROR(r.Keys(n, "parallel", kParallelKeys));
  for (const ParallelInt& f : kParallelInts)
    if (const YAML::Node v = n[f.key]) {
      MMTWIN_ASSIGN_OR_RETURN(int64_t x, r.Int(v, std::string("parallel.") + f.key, f.lo, f.hi));
      p.*f.field = static_cast<int>(x);
    }
  if (const YAML::Node v = n["tp_sequence_parallel"]) {
    MMTWIN_ASSIGN_OR_RETURN(p.tp_sequence_parallel, r.Bool(v, "parallel.tp_sequence_parallel"));
  }
  if (const YAML::Node v = n["overlap_grad_reduce"]) {
    MMTWIN_ASSIGN_OR_RETURN(p.overlap_grad_reduce, r.Bool(v, "parallel.overlap_grad_reduce"));
  }
  if (const YAML::Node v = n["tp_comm_overlap"]) {
    MMTWIN_ASSIGN_OR_RETURN(p.tp_comm_overlap, r.Bool(v, "parallel.tp_comm_overlap"));
  }
  if (const YAML::Node v = n["grad_reduce_dtype"]) {
    MMTWIN_ASSIGN_OR_RETURN(p.grad_reduce_dtype, r.Str(v, "parallel.grad_reduce_dtype"));
  }
  if (const YAML::Node v = n["optimizer_memory"]) {
    MMTWIN_ASSIGN_OR_RETURN(p.optimizer_memory, r.Str(v, "parallel.optimizer_memory"));
  }
  if (const YAML::Node v = n["zero3_impl"]) {
    MMTWIN_ASSIGN_OR_RETURN(p.zero3_impl, r.Str(v, "parallel.zero3_impl"));
  }
  return Status();
}

Status ParsePolicies(const Parser& r, const YAML::Node& n, Scenario& s) {
  MMTWIN_RETURN_IF_ERROR(r.Keys(n, "policies", kPolicyKinds));
  const std::pair<const char*, PolicyRef*> kinds[] = {
      {"data", &s.data}, {"partition", &s.partition}, {"recompute", &s.recompute}, {"schedule", &s.schedule},
      {"sp", &s.sp},     {"encoder", &s.encoder}};
  for (const auto& [key, out] : kinds)
    if (const YAML::Node v = n[key]) {
      MMTWIN_ASSIGN_OR_RETURN(*out, r.Policy(v, std::string("policies.") + key));
    }
  return Status();
}

// iterations, seed, engine, cost.
Status ParseRun(const Parser& r, const YAML::Node& root, Scenario& s) {
  if (const YAML::Node v = root["iterations"]) {
    if (v.IsScalar() && v.Scalar() == "epoch") {
      s.epoch = true;
    } else {
      if (!v.IsScalar()) return r.At(v, "iterations", "expected a positive integer or \"epoch\"");
      int64_t x = 0;
      if (!ParseInt64(v.Scalar(), x) || x < 1 || x > kMaxIterations)
        return r.At(v, "iterations", BadIterations(Abbreviate(v.Scalar())));
      s.iterations = x;
    }
  }
  if (const YAML::Node v = root["seed"]) {
    MMTWIN_ASSIGN_OR_RETURN(int64_t x, r.Int(v, "seed", 0, INT64_MAX));
    s.seed = static_cast<uint64_t>(x);
  }
  if (const YAML::Node v = root["engine"]) {
    MMTWIN_ASSIGN_OR_RETURN(s.engine, r.Str(v, "engine"));
  }
  if (const YAML::Node v = root["cost"]) {
    MMTWIN_ASSIGN_OR_RETURN(s.cost, r.Str(v, "cost"));
    if (!s.cost.empty() && s.cost != "analytic") s.cost = r.Resolve(s.cost);
  }
  return Status();
}

Status ParseBackend(const Parser& r, const YAML::Node& n, BackendConfig& b) {
  MMTWIN_RETURN_IF_ERROR(r.Keys(n, "backend", kBackendKeys));
  if (const YAML::Node v = n["width_divisor"]) {
    MMTWIN_ASSIGN_OR_RETURN(int64_t x, r.Int(v, "backend.width_divisor", 1, kMaxWidthDivisor));
    b.shrink.width_divisor = static_cast<int>(x);
  }
  if (const YAML::Node v = n["layers"]) {
    if (!v.IsMap()) return r.At(v, "backend.layers", "expected a mapping {component: blocks}");
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it->first.IsScalar()) return r.At(it->first, "backend.layers", "keys must be component names");
      const std::string key = it->first.Scalar();
      MMTWIN_ASSIGN_OR_RETURN(int64_t x, r.Int(it->second, "backend.layers." + key, 1, kMaxShrunkLayers));
      b.shrink.layers[key] = static_cast<int>(x);
    }
  }
  for (const BackendInt& f : kBackendInts)
    if (const YAML::Node v = n[f.key]) {
      MMTWIN_ASSIGN_OR_RETURN(int64_t x, r.Int(v, std::string("backend.") + f.key, f.lo, f.hi));
      b.*f.field = static_cast<int>(x);
    }
  if (const YAML::Node v = n["timeout_s"]) {
    double x = 0;
    if (!v.IsScalar() || !ParseDouble(v.Scalar(), x) || !(x >= 1) || !(x <= kMaxTimeoutS))
      return r.At(v, "backend.timeout_s", kBadTimeout);
    b.timeout_s = x;
  }
  if (const YAML::Node v = n["device"]) {
    MMTWIN_ASSIGN_OR_RETURN(b.device, r.Str(v, "backend.device"));
    if (std::find(kBackendDevices.begin(), kBackendDevices.end(), b.device) == kBackendDevices.end())
      return r.At(v, "backend.device", "'" + b.device + "' is not cpu or cuda");
  }
  if (const YAML::Node v = n["autocast"]) {
    MMTWIN_ASSIGN_OR_RETURN(b.autocast, r.Str(v, "backend.autocast"));
    if (std::find(kBackendAutocasts.begin(), kBackendAutocasts.end(), b.autocast) == kBackendAutocasts.end())
      return r.At(v, "backend.autocast", "'" + b.autocast + "' is not none or bf16");
  }
  return Status();
}

// Every mapping key's line, by dotted path (sequences are not descended: no scenario key lives in one).
void RecordLines(const YAML::Node& n, const std::string& prefix, std::map<std::string, long>& out) {
  if (!n.IsMap()) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    const std::string key = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    out.emplace(key, LineOf(it->first));
    RecordLines(it->second, key, out);
  }
}

Result<Scenario> ReadImpl(const std::string& text, const std::string& name, const std::string& base_dir) {
  const Parser r(name, base_dir);
  Scenario s;
  s.path = name;
  MMTWIN_ASSIGN_OR_RETURN(const YAML::Node root, LoadStrictYaml(text, name));
  if (!root.IsMap()) return r.At(root, "", "a scenario is a mapping with keys " + Join(kTopKeys));
  MMTWIN_RETURN_IF_ERROR(r.Keys(root, "", kTopKeys));
  RecordLines(root, "", s.lines);
  MMTWIN_RETURN_IF_ERROR(ParseName(r, root, name, s));
  const YAML::Node trace = root["trace"];
  if (!trace)
    return r.At(root, "trace", "missing (give {file: TRACE.csv} or {preset: NAME, samples: N, seed: S})");
  MMTWIN_RETURN_IF_ERROR(ParseTrace(r, trace, s.trace));
  MMTWIN_RETURN_IF_ERROR(ParseModel(r, root, s));
  if (const YAML::Node v = root["cluster"]) MMTWIN_RETURN_IF_ERROR(ParseCluster(r, v, s));
  if (const YAML::Node v = root["parallel"]) MMTWIN_RETURN_IF_ERROR(ParseParallel(r, v, s.parallel));
  if (const YAML::Node v = root["policies"]) MMTWIN_RETURN_IF_ERROR(ParsePolicies(r, v, s));
  MMTWIN_RETURN_IF_ERROR(ParseRun(r, root, s));
  if (const YAML::Node v = root["backend"]) MMTWIN_RETURN_IF_ERROR(ParseBackend(r, v, s.backend));
  return s;
}

void EmitPolicy(YAML::Emitter& e, const PolicyRef& p) {
  if (p.params.empty()) {
    e << p.name;
    return;
  }
  e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p.name << YAML::Key << "params" << YAML::Value
    << YAML::BeginMap;
  for (const auto& [k, v] : p.params) e << YAML::Key << k << YAML::Value << v;
  e << YAML::EndMap << YAML::EndMap;
}

}  // namespace

const std::vector<std::string>& ScenarioEngines() {
  static const std::vector<std::string> kEngines = {"analytic", "simgrid"};
  return kEngines;
}

Status CheckEngine(const std::string& engine) {
  for (const auto& e : ScenarioEngines())
    if (e == engine) return Status();
  return Error("unknown engine '" + engine + "'; valid values are: " + Join(ScenarioEngines()));
}

Result<Scenario> ReadScenario(const std::string& yaml_text, const std::string& name,
                              const std::string& base_dir) {
  return GuardYaml(name, [&] { return ReadImpl(yaml_text, name, base_dir); });
}

Result<Scenario> ParseScenario(const std::string& yaml_text, const std::string& name,
                               const std::string& base_dir) {
  MMTWIN_ASSIGN_OR_RETURN(Scenario s, ReadScenario(yaml_text, name, base_dir));
  return CheckAndResolveScenario(std::move(s));
}

Result<Scenario> LoadScenario(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Error(path + ": scenario file not found");
  if (fs::is_directory(path, ec)) return Error(path + ": is a directory, not a scenario file");
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::string dir = fs::path(path).parent_path().string();
  return ParseScenario(text, path, dir.empty() ? "." : dir);
}

Scenario WithoutPricingKeys(Scenario s) {
  s.attention = Scenario().attention;
  s.kernels = KernelImpl();
  return s;
}

Scenario WithPathsRelativeTo(Scenario s, const std::string& base_dir) {
  std::error_code ec;
  const fs::path base = fs::absolute(base_dir.empty() ? "." : base_dir, ec).lexically_normal();
  auto relative = [&](std::string& p) {
    if (p.empty() || !fs::path(p).is_absolute()) return;
    const fs::path r = fs::path(p).lexically_normal().lexically_relative(base);
    if (!r.empty()) p = r.generic_string();
  };
  relative(s.trace.file);
  relative(s.model);
  relative(s.cluster);
  relative(s.cost);
  return s;
}

std::string FormatScenario(const Scenario& s) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << s.name;
  e << YAML::Key << "description" << YAML::Value << s.description;
  e << YAML::Key << "trace" << YAML::Value << YAML::BeginMap;
  if (!s.trace.file.empty()) {
    e << YAML::Key << "file" << YAML::Value << s.trace.file;
  } else if (s.trace.sequence_tokens > 0) {
    e << YAML::Key << "sequence_tokens" << YAML::Value << s.trace.sequence_tokens;
    e << YAML::Key << "samples" << YAML::Value << std::max<int64_t>(1, s.trace.samples);
  } else {
    e << YAML::Key << "preset" << YAML::Value << s.trace.preset;
    e << YAML::Key << "samples" << YAML::Value << s.trace.samples;
    e << YAML::Key << "seed" << YAML::Value << s.trace.seed;
  }
  e << YAML::EndMap;
  e << YAML::Key << "model" << YAML::Value;
  if (s.image_px > 0 || s.token_merge > 0 || s.attention != "flash" || s.kernels.any() ||
      s.image_attention != "causal" || !s.frozen.empty()) {
    e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s.model;
    if (s.image_px > 0) e << YAML::Key << "image_px" << YAML::Value << s.image_px;
    if (s.token_merge > 0) e << YAML::Key << "token_merge" << YAML::Value << s.token_merge;
    if (s.attention != "flash") e << YAML::Key << "attention" << YAML::Value << s.attention;
    if (s.kernels == EagerKernels()) {
      e << YAML::Key << "kernels" << YAML::Value << "eager";
    } else if (s.kernels.any()) {
      e << YAML::Key << "kernels" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const KernelImplFamily& f : KernelImplFamilies())
        if (s.kernels.*f.flag) e << YAML::Key << f.key << YAML::Value << f.on_word;
      e << YAML::EndMap;
    }
    if (s.image_attention != "causal")
      e << YAML::Key << "image_attention" << YAML::Value << s.image_attention;
    if (!s.frozen.empty()) e << YAML::Key << "frozen" << YAML::Value << YAML::Flow << s.frozen;
    e << YAML::EndMap;
  } else {
    e << s.model;
  }
  e << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap << YAML::Key << "preset" << YAML::Value
    << s.cluster << YAML::Key << "nodes" << YAML::Value << s.nodes;
  if (!s.device.empty() || !s.device_text.empty()) {
    e << YAML::Key << "device" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : s.device) e << YAML::Key << key << YAML::Value << value;
    for (const auto& [key, value] : s.device_text) e << YAML::Key << key << YAML::Value << value;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  const ParallelConfig& p = s.parallel;
  e << YAML::Key << "parallel" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "dp" << YAML::Value << p.dp << YAML::Key << "tp" << YAML::Value << p.tp;
  e << YAML::Key << "pp" << YAML::Value << p.pp << YAML::Key << "vpp" << YAML::Value << p.vpp;
  e << YAML::Key << "micro_batches" << YAML::Value << p.micro_batches;
  e << YAML::Key << "zero_stage" << YAML::Value << p.zero_stage;
  e << YAML::Key << "tp_sequence_parallel" << YAML::Value << (p.tp_sequence_parallel ? "true" : "false");
  if (p.zero3_impl != "simple") e << YAML::Key << "zero3_impl" << YAML::Value << p.zero3_impl;
  if (p.optimizer_memory != "auto") e << YAML::Key << "optimizer_memory" << YAML::Value << p.optimizer_memory;
  if (p.zero3_shard_group != 0) e << YAML::Key << "zero3_shard_group" << YAML::Value << p.zero3_shard_group;
  if (!p.overlap_grad_reduce) e << YAML::Key << "overlap_grad_reduce" << YAML::Value << "false";
  if (p.tp_comm_overlap) e << YAML::Key << "tp_comm_overlap" << YAML::Value << "true";
  if (p.grad_reduce_dtype != "param")
    e << YAML::Key << "grad_reduce_dtype" << YAML::Value << p.grad_reduce_dtype;
  // Sequence parallelism only when used, so that existing run keys and resolved scenarios stay the same.
  if (p.sp != 1 || p.sp_ulysses != 0 || p.sp_ring != 0) {
    e << YAML::Key << "sp" << YAML::Value << p.sp;
    if (p.sp_ulysses) e << YAML::Key << "sp_ulysses" << YAML::Value << p.sp_ulysses;
    if (p.sp_ring) e << YAML::Key << "sp_ring" << YAML::Value << p.sp_ring;
  }
  e << YAML::EndMap;
  e << YAML::Key << "policies" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "data" << YAML::Value;
  EmitPolicy(e, s.data);
  e << YAML::Key << "partition" << YAML::Value;
  EmitPolicy(e, s.partition);
  e << YAML::Key << "recompute" << YAML::Value;
  EmitPolicy(e, s.recompute);
  e << YAML::Key << "schedule" << YAML::Value;
  EmitPolicy(e, s.schedule);
  if (s.sp.name != "none" || !s.sp.params.empty()) {
    e << YAML::Key << "sp" << YAML::Value;
    EmitPolicy(e, s.sp);
  }
  if (s.encoder.name != "pipeline" || !s.encoder.params.empty()) {
    e << YAML::Key << "encoder" << YAML::Value;
    EmitPolicy(e, s.encoder);
  }
  e << YAML::EndMap;
  e << YAML::Key << "iterations" << YAML::Value;
  if (s.epoch)
    e << "epoch";
  else
    e << s.iterations;
  e << YAML::Key << "seed" << YAML::Value << s.seed;
  e << YAML::Key << "engine" << YAML::Value << s.engine;
  // Written only when not the default, so that sweep run keys (a hash of this text) stay stable.
  if (s.cost != "analytic") e << YAML::Key << "cost" << YAML::Value << s.cost;
  static const BackendConfig kDefaultBackend;  // a named default: GCC 12 warns (falsely) on a temporary's map
  if (s.backend != kDefaultBackend) {
    const BackendConfig& b = s.backend;
    e << YAML::Key << "backend" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "width_divisor" << YAML::Value << b.shrink.width_divisor;
    if (!b.shrink.layers.empty()) {
      e << YAML::Key << "layers" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : b.shrink.layers) e << YAML::Key << k << YAML::Value << v;
      e << YAML::EndMap;
    }
    e << YAML::Key << "warmup_iterations" << YAML::Value << b.warmup_iterations;
    e << YAML::Key << "timeout_s" << YAML::Value << b.timeout_s;
    e << YAML::Key << "threads" << YAML::Value << b.threads;
    if (b.device != "cpu") e << YAML::Key << "device" << YAML::Value << b.device;
    if (b.autocast != "none") e << YAML::Key << "autocast" << YAML::Value << b.autocast;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  return "# Resolved scenario (mmtwin): every default filled in, paths absolute.\n" + std::string(e.c_str()) +
         "\n";
}

bool operator==(const PolicyRef& a, const PolicyRef& b) { return a.name == b.name && a.params == b.params; }

bool operator==(const TraceSource& a, const TraceSource& b) {
  return a.file == b.file && a.preset == b.preset && a.samples == b.samples && a.seed == b.seed &&
         a.sequence_tokens == b.sequence_tokens;
}

Error ScenarioError(const Scenario& s, const std::string& dotted_key, const std::string& reason) {
  if (s.path.empty())
    return Error("scenario" + (s.name.empty() ? "" : " " + s.name) + ": " + dotted_key + ": " + reason);
  std::string k = dotted_key;
  while (!k.empty()) {
    if (auto it = s.lines.find(k); it != s.lines.end())
      return Error::At(s.path, it->second, dotted_key, reason);
    const size_t dot = k.rfind('.');
    k = dot == std::string::npos ? "" : k.substr(0, dot);
  }
  return Error(s.path + ": " + dotted_key + ": " + reason);
}

bool operator==(const Scenario& a, const Scenario& b) {
  const ParallelConfig &p = a.parallel, &q = b.parallel;
  const bool same_parallel =
      p.dp == q.dp && p.tp == q.tp && p.pp == q.pp && p.vpp == q.vpp && p.micro_batches == q.micro_batches &&
      p.zero_stage == q.zero_stage && p.tp_sequence_parallel == q.tp_sequence_parallel && p.sp == q.sp &&
      p.sp_ulysses == q.sp_ulysses && p.sp_ring == q.sp_ring && p.zero3_impl == q.zero3_impl &&
      p.optimizer_memory == q.optimizer_memory && p.zero3_shard_group == q.zero3_shard_group &&
      p.overlap_grad_reduce == q.overlap_grad_reduce && p.grad_reduce_dtype == q.grad_reduce_dtype &&
      p.tp_comm_overlap == q.tp_comm_overlap;
  return a.name == b.name && a.description == b.description && a.trace == b.trace && a.model == b.model &&
         a.image_px == b.image_px && a.token_merge == b.token_merge && a.attention == b.attention &&
         a.kernels == b.kernels && a.image_attention == b.image_attention && a.frozen == b.frozen &&
         a.cluster == b.cluster && a.nodes == b.nodes && a.device == b.device &&
         a.device_text == b.device_text && same_parallel && a.data == b.data && a.partition == b.partition &&
         a.recompute == b.recompute && a.schedule == b.schedule && a.sp == b.sp && a.encoder == b.encoder &&
         a.epoch == b.epoch && (a.epoch || a.iterations == b.iterations) && a.seed == b.seed &&
         a.engine == b.engine && a.cost == b.cost && a.backend == b.backend;
}

}  // namespace mmtwin

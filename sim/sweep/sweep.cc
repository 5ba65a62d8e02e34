// SPDX-License-Identifier: Apache-2.0
// Sweep files (yaml-cpp): strict parsing with `file:line: key: reason` errors, and deterministic expansion
// into runs through the scenario overrides.
#include "sweep/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/util/csv.h"
#include "core/util/text.h"
#include "core/util/yaml_error.h"
#include "sweep/results_db.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

std::string Flow(const YAML::Node& n) {
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

std::string Block(const YAML::Node& n) {
  YAML::Emitter e;
  e << n;
  return std::string(e.c_str()) + "\n";
}

// `base:`: a scenario file (relative to the sweep's folder) or an inline scenario mapping, as text.
Status ParseBase(const YAML::Node& root, const std::string& file, const std::string& base_dir,
                 SweepSpec& spec) {
  const YAML::Node base = root["base"];
  if (!base)
    return Error::At(file, LineOf(root), "base", "missing (a scenario file or an inline scenario mapping)");
  if (base.IsScalar()) {
    fs::path p(base.Scalar());
    if (p.is_relative()) p = fs::path(base_dir.empty() ? "." : base_dir) / p;
    const std::string path = p.lexically_normal().string();
    auto t = ReadFile(path);
    if (!t) return Error::At(file, LineOf(base), "base", "cannot read scenario '" + path + "'");
    spec.base_text = *t;
    spec.base_name = path;
    const std::string dir = fs::path(path).parent_path().string();
    spec.base_dir = dir.empty() ? "." : dir;
  } else if (base.IsMap()) {
    spec.base_text = Block(base);
    spec.base_name = file + ":" + std::to_string(LineOf(base)) + " (base)";
    spec.base_dir = base_dir.empty() ? "." : base_dir;
  } else {
    return Error::At(file, LineOf(base), "base", "expected a scenario file path or a scenario mapping");
  }
  MMTWIN_ASSIGN_OR_RETURN(const YAML::Node b, LoadStrictYaml(spec.base_text, spec.base_name));
  if (b.IsMap() && !b["name"])
    spec.base_default_name = base.IsMap() ? spec.name : fs::path(spec.base_name).stem().string();
  return Status();
}

// One entry of `axes:`, the i-th.
Result<SweepAxis> ParseAxis(const YAML::Node& a, const std::string& file, size_t i) {
  const std::string where = "axes[" + std::to_string(i) + "]";
  MMTWIN_RETURN_IF_ERROR(CheckKeys(a, file, where, {"key", "values", "name", "labels"}));
  SweepAxis axis;
  axis.line = LineOf(a);
  const YAML::Node key = a["key"];
  if (!key || !key.IsScalar() || key.Scalar().empty())
    return Error::At(file, LineOf(key ? key : a), where + ".key", "missing (a dotted scenario key)");
  axis.key = key.Scalar();
  if (Status st = CheckOverrideKey(axis.key); !st.ok())
    return Error::At(file, LineOf(key), axis.key, st.error().message());
  const YAML::Node values = a["values"];
  if (!values || !values.IsSequence() || values.size() == 0)
    return Error::At(file, LineOf(values ? values : a), where + ".values", "expected a non-empty list");
  for (size_t k = 0; k < values.size(); ++k) {
    const YAML::Node val = values[k];
    if (val.IsNull())
      return Error::At(file, LineOf(val), where + ".values", "empty value at position " + std::to_string(k));
    axis.values.push_back(Flow(val));
    axis.labels.push_back(val.IsScalar() ? val.Scalar() : Flow(val));
  }
  if (const YAML::Node l = a["labels"]) {
    if (!l.IsSequence() || l.size() != values.size())
      return Error::At(file, LineOf(l), where + ".labels",
                       "expected a list of " + std::to_string(values.size()) + " labels, one per value");
    for (size_t k = 0; k < l.size(); ++k) {
      if (!l[k].IsScalar() || l[k].Scalar().empty())
        return Error::At(file, LineOf(l[k]), where + ".labels", "expected a non-empty label");
      axis.labels[k] = l[k].Scalar();
    }
  }
  if (const YAML::Node n = a["name"]) {
    if (!n.IsScalar() || n.Scalar().empty())
      return Error::At(file, LineOf(n), where + ".name", "expected a column name");
    axis.name = n.Scalar();
  }
  return axis;
}

// Default axis names (the key's last component, unless two axes would share it), distinct names, and zip's
// equal lengths.
Status NameAxes(const std::string& file, SweepSpec& spec) {
  std::map<std::string, int> count;
  auto last = [](const std::string& k) {
    return k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1);
  };
  for (const auto& a : spec.axes) count[a.name.empty() ? last(a.key) : a.name]++;
  std::set<std::string> names;
  for (auto& a : spec.axes) {
    if (a.name.empty()) {
      a.name = last(a.key);
      if (count[a.name] > 1) {
        a.name = a.key;
        std::replace(a.name.begin(), a.name.end(), '.', '_');
      }
    }
    if (!names.insert(a.name).second)
      return Error::At(file, a.line, "axes", "two axes are named '" + a.name + "'; give them distinct names");
  }
  // Each axis gets its own results-database column (AxisColumn; SQLite column names ignore case): names that
  // differ only in characters the column cannot hold, or in case, would share one (issue 34: 'a-b' and 'a_b').
  std::map<std::string, std::string> column_of;  // lower-cased column -> the axis name that has it
  for (const auto& a : spec.axes) {
    std::string col = AxisColumn(a.name);
    std::transform(col.begin(), col.end(), col.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto [it, fresh] = column_of.emplace(col, a.name);
    if (!fresh)
      return Error::At(file, a.line, "axes",
                       "axes '" + it->second + "' and '" + a.name + "' would share the database column " +
                           AxisColumn(a.name) + "; give them names that differ in letters, digits or '_'");
  }
  if (spec.zip)
    for (const auto& a : spec.axes)
      if (a.values.size() != spec.axes[0].values.size())
        return Error::At(file, a.line, a.key,
                         "mode zip needs every axis to have the same number of values: " +
                             std::to_string(a.values.size()) + " here, " +
                             std::to_string(spec.axes[0].values.size()) + " for " + spec.axes[0].key);
  return Status();
}

Result<SweepSpec> ParseImpl(const std::string& text, const std::string& file, const std::string& base_dir,
                            const std::vector<std::string>& extra_keys) {
  SweepSpec spec;
  spec.path = file;
  MMTWIN_ASSIGN_OR_RETURN(const YAML::Node root, LoadStrictYaml(text, file));
  if (!root.IsMap())
    return Error::At(file, LineOf(root), "", "a sweep is a mapping with keys base, mode, axes, ...");
  std::vector<std::string> keys = {"name", "description", "base", "mode", "axes", "iterations"};
  keys.insert(keys.end(), extra_keys.begin(), extra_keys.end());
  MMTWIN_RETURN_IF_ERROR(CheckKeys(root, file, "", keys));

  if (const YAML::Node v = root["name"]) {
    if (!v.IsScalar() || v.Scalar().empty()) return Error::At(file, LineOf(v), "name", "expected a name");
    spec.name = v.Scalar();
    // The name becomes the default database NAME.sqlite: it must not lead elsewhere.
    if (!IsPlainName(spec.name))
      return Error::At(
          file, LineOf(v), "name",
          "'" + Abbreviate(spec.name) +
              "' must work as a file name (NAME.sqlite): no '/', '\\', control characters, '.' or '..'");
  } else {
    spec.name = fs::path(file).stem().string();
    if (!IsPlainName(spec.name)) spec.name = "sweep";
  }
  if (const YAML::Node v = root["description"]) {
    if (!v.IsScalar() && !v.IsNull()) return Error::At(file, LineOf(v), "description", "expected text");
    if (v.IsScalar()) spec.description = v.Scalar();
  }
  MMTWIN_RETURN_IF_ERROR(ParseBase(root, file, base_dir, spec));

  if (const YAML::Node v = root["mode"]) {
    if (!v.IsScalar() || (v.Scalar() != "cartesian" && v.Scalar() != "zip"))
      return Error::At(file, LineOf(v), "mode",
                       "unknown mode '" + (v.IsScalar() ? v.Scalar() : std::string("?")) +
                           "'; valid values are: cartesian, zip");
    spec.zip = v.Scalar() == "zip";
  }

  if (const YAML::Node v = root["iterations"]) {
    int64_t x = 0;
    if (!v.IsScalar() || (v.Scalar() != "epoch" && (!ParseInt64(v.Scalar(), x) || x < 1)))
      return Error::At(file, LineOf(v), "iterations", "expected a positive integer or \"epoch\"");
    spec.iterations = v.Scalar();
  }

  if (const YAML::Node axes = root["axes"]) {
    if (!axes.IsSequence() && !axes.IsNull())
      return Error::At(file, LineOf(axes), "axes", "expected a list of {key: ..., values: [...], name: ...}");
    for (size_t i = 0; i < axes.size(); ++i) {
      MMTWIN_ASSIGN_OR_RETURN(SweepAxis axis, ParseAxis(axes[i], file, i));
      spec.axes.push_back(std::move(axis));
    }
    MMTWIN_RETURN_IF_ERROR(NameAxes(file, spec));
  }
  if (SweepSize(spec) > kMaxSweepRuns)
    return Error::At(file, LineOf(root["axes"]), "axes",
                     std::to_string(SweepSize(spec)) + " runs is more than " + std::to_string(kMaxSweepRuns));
  return spec;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

Result<SweepSpec> ParseSweep(const std::string& yaml_text, const std::string& name,
                             const std::string& base_dir, const std::vector<std::string>& extra_keys) {
  return GuardYaml(name, [&] { return ParseImpl(yaml_text, name, base_dir, extra_keys); });
}

Result<SweepSpec> LoadSweep(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Error(path + ": sweep file not found");
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const std::string dir = fs::path(path).parent_path().string();
  return ParseSweep(text, path, dir.empty() ? "." : dir);
}

int64_t SweepSize(const SweepSpec& spec) {
  if (spec.axes.empty()) return 1;
  if (spec.zip) return static_cast<int64_t>(spec.axes[0].values.size());
  int64_t n = 1;
  for (const auto& a : spec.axes) {
    n *= static_cast<int64_t>(a.values.size());
    if (n > kMaxSweepRuns) return kMaxSweepRuns + 1;
  }
  return n;
}

std::string RunKey(const std::string& resolved_yaml) { return Hex(Fnv1a(resolved_yaml)); }

std::string PortableRunKey(Scenario scenario, const std::string& base_dir) {
  return RunKey(FormatScenario(WithPathsRelativeTo(std::move(scenario), base_dir)));
}

std::string AxesJson(const std::vector<std::pair<std::string, std::string>>& axes) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, label] : axes) {
    int64_t i = 0;
    double d = 0;
    if (ParseInt64(label, i))
      j[name] = i;
    else if (ParseDouble(label, d))
      j[name] = d;
    else if (label == "true" || label == "false")
      j[name] = label == "true";
    else
      j[name] = label;
  }
  return j.dump();
}

SweepRun ExpandRun(const SweepSpec& spec, int64_t i) {
  SweepRun run;
  run.index = static_cast<int>(i);
  // Value index per axis: zip -> i; cartesian -> mixed radix, the last axis fastest.
  std::vector<size_t> pick(spec.axes.size(), 0);
  int64_t rest = i;
  for (size_t a = spec.axes.size(); a-- > 0;) {
    const int64_t len = static_cast<int64_t>(spec.axes[a].values.size());
    pick[a] = spec.zip ? static_cast<size_t>(i) : static_cast<size_t>(rest % len);
    if (!spec.zip) rest /= len;
  }
  if (!spec.base_default_name.empty()) run.overrides.push_back({"name", spec.base_default_name});
  if (!spec.iterations.empty()) run.overrides.push_back({"iterations", spec.iterations});
  for (size_t a = 0; a < spec.axes.size(); ++a) {
    run.overrides.push_back({spec.axes[a].key, spec.axes[a].values[pick[a]]});
    run.axes.emplace_back(spec.axes[a].name, spec.axes[a].labels[pick[a]]);
  }
  std::string label;
  for (const auto& [k, v] : run.axes) label += (label.empty() ? "" : ", ") + k + "=" + v;
  const std::string where = (spec.path.empty() ? spec.base_name : spec.path) + " [run " + std::to_string(i) +
                            (label.empty() ? "" : ": " + label) + "]";
  auto s = ParseScenarioWithOverrides(spec.base_text, where, spec.base_dir, run.overrides);
  if (s) {
    run.scenario = std::move(*s);
    run.scenario.path = spec.base_name;
    run.scenario.lines.clear();  // lines of the generated (overridden) text, not of a file the user has
    run.resolved_yaml = FormatScenario(run.scenario);
    run.key = PortableRunKey(run.scenario, spec.base_dir);
  } else {
    // Line numbers would point into the generated (overridden) text: drop them, keep `where: key: reason`.
    run.error = s.error().message();
    if (run.error.rfind(where + ":", 0) == 0) {
      size_t p = where.size() + 1;
      while (p < run.error.size() && std::isdigit(static_cast<unsigned char>(run.error[p]))) ++p;
      if (p > where.size() + 1 && p < run.error.size() && run.error[p] == ':')
        run.error = where + run.error.substr(p);
    }
    std::string text = "invalid\n" + spec.base_text;
    for (const auto& o : run.overrides) text += "\n" + o.key + "=" + o.yaml_value;
    run.key = RunKey(text);
  }
  return run;
}

Result<std::vector<SweepRun>> ExpandSweep(const SweepSpec& spec) {
  const int64_t n = SweepSize(spec);
  if (n > kMaxSweepRuns)
    return Error(spec.path + ": " + std::to_string(n) + " runs is more than " +
                 std::to_string(kMaxSweepRuns));
  std::vector<SweepRun> runs;
  runs.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) runs.push_back(ExpandRun(spec, i));
  return runs;
}

std::string SweepDigest(const SweepSpec& spec) {
  std::string text = "sweep\n" + spec.base_text + "\n" + spec.base_dir + "\n" + spec.base_default_name +
                     "\n" + (spec.zip ? "zip" : "cartesian") + "\n" + spec.iterations + "\n";
  for (const SweepAxis& a : spec.axes) {
    text += a.key + "\x1f" + a.name;
    for (const auto& v : a.values) text += "\x1f" + v;
    for (const auto& l : a.labels) text += "\x1e" + l;
    text += "\n";
  }
  return RunKey(text);
}

}  // namespace mmtwin

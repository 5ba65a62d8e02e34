// SPDX-License-Identifier: Apache-2.0
// Scenario overrides (yaml-cpp): set any scenario key by its dotted name on the scenario's YAML text, then
// let ParseScenario check the result. Used by sweeps (one override per axis) and by ApplyOverride.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <filesystem>

#include "core/cluster/cluster.h"
#include "core/plan/mesh.h"
#include "core/scenario/scenario.h"
#include "core/scenario/schema.h"
#include "core/util/text.h"
#include "core/util/yaml_error.h"

namespace mmtwin {
namespace {

std::vector<std::string> Split(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

// The key lists are the parser's (schema.h).
const std::vector<std::string>& kTop = scenario_schema::kTopKeys;
const std::vector<std::string>& kTrace = scenario_schema::kTraceKeys;
const std::vector<std::string>& kCluster = scenario_schema::kClusterKeys;
const std::vector<std::string>& kParallel = scenario_schema::kParallelKeys;
const std::vector<std::string>& kModel = scenario_schema::kModelKeys;
const std::vector<std::string>& kPolicies = scenario_schema::kPolicyKinds;
const std::vector<std::string>& kPolicy = scenario_schema::kPolicyKeys;
const std::vector<std::string>& kBackend = scenario_schema::kBackendKeys;

bool In(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Error Unknown(const std::string& key, const std::string& prefix, const std::vector<std::string>& valid) {
  std::vector<std::string> full;
  for (const auto& v : valid) full.push_back(prefix + v);
  return Error("unknown key '" + key + "'; valid keys are: " + Join(full));
}

// A scalar where a mapping is needed on the way down: a bare policy name, cluster preset or model name.
YAML::Node Expand(const YAML::Node& scalar, const std::vector<std::string>& path, size_t depth) {
  YAML::Node m(YAML::NodeType::Map);
  if (depth == 1 && path[0] == "cluster") m["preset"] = scalar.Scalar();
  if (depth == 1 && path[0] == "model") m["name"] = scalar.Scalar();
  if (depth == 2 && path[0] == "policies") m["name"] = scalar.Scalar();
  return m;
}

}  // namespace

Status CheckOverrideKey(const std::string& dotted_key) {
  const std::vector<std::string> p = Split(dotted_key);
  for (const auto& part : p)
    if (part.empty()) return Error("unknown key '" + dotted_key + "': empty component");
  if (!In(kTop, p[0])) return Unknown(dotted_key, "", kTop);
  if (p.size() == 1) return Status();
  const std::string& top = p[0];
  if (top == "trace" || top == "cluster" || top == "parallel") {
    const auto& valid = top == "trace" ? kTrace : top == "cluster" ? kCluster : kParallel;
    if (p.size() == 2 && In(valid, p[1])) return Status();
    if (top == "cluster" && p.size() == 3 && p[1] == "device") return Status();  // cluster.device.KEY
    return Unknown(dotted_key, top + ".", valid);
  }
  if (top == "model") {  // model.name, model.image_px (a bare `model: NAME` is expanded on the way)
    if (p.size() == 2 && In(kModel, p[1])) return Status();
    return Unknown(dotted_key, "model.", kModel);
  }
  if (top == "backend") {
    if (p.size() == 2 && In(kBackend, p[1])) return Status();
    if (p.size() == 3 && p[1] == "layers") return Status();  // backend.layers.COMPONENT
    return Unknown(dotted_key, "backend.", kBackend);
  }
  if (top == "policies") {
    if (!In(kPolicies, p[1])) return Unknown(dotted_key, "policies.", kPolicies);
    if (p.size() == 2) return Status();
    const std::string prefix = "policies." + p[1] + ".";
    if (!In(kPolicy, p[2])) return Unknown(dotted_key, prefix, kPolicy);
    if (p.size() == 3) return Status();
    if (p[2] == "params" && p.size() == 4) return Status();
    return Error("unknown key '" + dotted_key + "'; valid keys are: " + prefix + "name, " + prefix +
                 "params, " + prefix + "params.NAME");
  }
  return Error("unknown key '" + dotted_key + "': '" + top + "' has no sub-keys");
}

Result<std::string> OverrideScenarioYaml(const std::string& yaml_text,
                                         const std::vector<ScenarioOverride>& overrides) {
  try {
    MMTWIN_ASSIGN_OR_RETURN(YAML::Node root, LoadStrictYaml(yaml_text, "scenario"));
    if (!root.IsMap()) return Error("a scenario is a mapping of keys to values");
    for (const ScenarioOverride& o : overrides) {
      MMTWIN_RETURN_IF_ERROR(CheckOverrideKey(o.key));
      const std::vector<std::string> path = Split(o.key);
      MMTWIN_ASSIGN_OR_RETURN(YAML::Node value, LoadStrictYaml(o.yaml_value, o.key));
      YAML::Node cur;
      cur.reset(root);
      for (size_t d = 0; d + 1 < path.size(); ++d) {
        YAML::Node next = cur[path[d]];
        if (!next.IsDefined() || next.IsNull()) {
          cur[path[d]] = YAML::Node(YAML::NodeType::Map);
          next.reset(cur[path[d]]);
        } else if (next.IsScalar()) {
          cur[path[d]] = Expand(next, path, d + 1);
          next.reset(cur[path[d]]);
        } else if (!next.IsMap()) {
          return Error(o.key + ": '" + path[d] + "' is not a mapping");
        }
        cur.reset(next);
      }
      cur[path.back()] = value;
    }
    YAML::Emitter e;
    e << root;
    if (!e.good()) return Error("cannot write the overridden scenario: " + e.GetLastError());
    return std::string(e.c_str()) + "\n";
  } catch (const YAML::Exception& e) {
    return Error("override: " + e.msg);
  } catch (const std::exception& e) {
    return Error(std::string("override: ") + e.what());
  }
}

Result<Scenario> ParseScenarioWithOverrides(const std::string& yaml_text, const std::string& name,
                                            const std::string& base_dir,
                                            const std::vector<ScenarioOverride>& overrides) {
  if (overrides.empty()) return ParseScenario(yaml_text, name, base_dir);
  // Duplicate keys are checked on the text as written (yaml-cpp would keep one of them while overriding).
  MMTWIN_RETURN_IF_ERROR(
      GuardYaml(name, [&]() -> Status { return LoadStrictYaml(yaml_text, name).status(); }));
  auto text = OverrideScenarioYaml(yaml_text, overrides);
  if (!text) return text.error().Wrap(name);
  return ParseScenario(*text, name, base_dir);
}

Status ApplyOverride(Scenario& s, const std::string& dotted_key, const std::string& yaml_value) {
  MMTWIN_RETURN_IF_ERROR(CheckOverrideKey(dotted_key));
  std::vector<ScenarioOverride> overrides;
  // Keep an automatic node count automatic: nodes == ceil(world / gpus per node) of the current layout.
  if (dotted_key != "cluster.nodes") {
    if (auto c = LoadCluster(s.cluster); c && c->gpus_per_node > 0) {
      if (s.nodes == NodesFor(s.parallel.world_size(), c->gpus_per_node))
        overrides.push_back({"cluster.nodes", "0"});
    }
  }
  overrides.push_back({dotted_key, yaml_value});
  std::string dir = s.path.empty() ? "." : std::filesystem::path(s.path).parent_path().string();
  if (dir.empty()) dir = ".";
  const std::string name = s.path.empty() ? s.name : s.path;
  MMTWIN_ASSIGN_OR_RETURN(Scenario t, ParseScenarioWithOverrides(FormatScenario(s), name, dir, overrides));
  t.path = s.path;
  s = std::move(t);
  return Status();
}

}  // namespace mmtwin

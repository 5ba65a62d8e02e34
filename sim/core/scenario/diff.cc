// SPDX-License-Identifier: Apache-2.0
// Scenario differences (diff.h).
#include "core/scenario/diff.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "core/util/yaml_error.h"

namespace mmtwin {
namespace {

// Every scalar (and empty collection) of `n` under its dotted path.
void Flatten(const YAML::Node& n, const std::string& path, std::map<std::string, std::string>& out) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      if (n.size() == 0) out[path] = "{}";
      for (const auto& kv : n) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
        Flatten(kv.second, path.empty() ? key : path + "." + key, out);
      }
      break;
    case YAML::NodeType::Sequence:
      if (n.size() == 0) out[path] = "[]";
      for (size_t i = 0; i < n.size(); ++i) Flatten(n[i], path + "[" + std::to_string(i) + "]", out);
      break;
    case YAML::NodeType::Scalar:
      out[path] = n.Scalar().empty() ? "''" : n.Scalar();  // an empty string, not an absent key
      break;
    default:  // null, undefined
      out[path] = "null";
  }
}

}  // namespace

Result<std::vector<ScenarioChange>> ScenarioChanges(const std::string& before_yaml,
                                                    const std::string& after_yaml) {
  MMTWIN_ASSIGN_OR_RETURN(const YAML::Node a, LoadStrictYaml(before_yaml, "before"));
  MMTWIN_ASSIGN_OR_RETURN(const YAML::Node b, LoadStrictYaml(after_yaml, "after"));
  std::map<std::string, std::string> fa, fb;
  Flatten(a, "", fa);
  Flatten(b, "", fb);
  std::vector<ScenarioChange> out;
  auto ia = fa.begin();
  auto ib = fb.begin();
  while (ia != fa.end() || ib != fb.end()) {
    if (ib == fb.end() || (ia != fa.end() && ia->first < ib->first)) {
      out.push_back({ia->first, ia->second, ""});
      ++ia;
    } else if (ia == fa.end() || ib->first < ia->first) {
      out.push_back({ib->first, "", ib->second});
      ++ib;
    } else {
      if (ia->second != ib->second) out.push_back({ia->first, ia->second, ib->second});
      ++ia;
      ++ib;
    }
  }
  return out;
}

std::string FormatChanges(const std::vector<ScenarioChange>& changes, size_t max_items) {
  if (changes.empty()) return "no change";
  std::string s;
  const size_t n = std::min(changes.size(), max_items);
  for (size_t i = 0; i < n; ++i) {
    const ScenarioChange& c = changes[i];
    if (!s.empty()) s += "; ";
    s += c.key + ": " + (c.before.empty() ? "(none)" : c.before) + " -> " +
         (c.after.empty() ? "(none)" : c.after);
  }
  if (changes.size() > n) s += "; and " + std::to_string(changes.size() - n) + " more";
  return s;
}

}  // namespace mmtwin

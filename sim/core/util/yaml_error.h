// SPDX-License-Identifier: Apache-2.0
// yaml-cpp errors as mmtwin errors (core-internal: only .cc files of the core include it; yaml-cpp is a
// private dependency). yaml-cpp throws on syntax errors and bad conversions; the core turns them into
// `file:line: reason`.
//
//   Result<Scenario> ParseScenario(...) { return GuardYaml(name, [&] { return ParseImpl(text, name, dir); });
//   }
#pragma once

#include <yaml-cpp/yaml.h>

#include <exception>
#include <map>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

// `name:line: message` for a yaml-cpp exception (the line is left out when yaml-cpp gives none).
inline Error YamlError(const std::string& name, const YAML::Exception& e) {
  return Error::At(name, e.mark.is_null() ? 0 : e.mark.line + 1, "", e.msg);
}

// The 1-based line of a node (0 when it is undefined or has no position): what every `file:line: key` error
// of the YAML readers cites.
inline long LineOf(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  const YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

// Runs `parse` (returning a Result or Status) and turns any exception escaping it into an Error naming
// `name`.
template <class F>
auto GuardYaml(const std::string& name, F&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const YAML::Exception& e) {
    return YamlError(name, e);
  } catch (const std::exception& e) {
    return Error(name + ": " + e.what());
  }
}

// Refuses a YAML text with an alias (`*name`; LoadStrictYaml's first step, which every YAML text of mmtwin goes
// through): `name:line: aliases (*x) are not supported ...`. mmtwin's files are
// plain data; yaml-cpp resolves an alias into a shared node, so `&a [*a]` is a cycle that crashed every walk of the
// tree, and nested aliases ("billion laughs") expand exponentially. The scan reads yaml-cpp's event stream, which
// reports each alias once without expanding it, so it takes time linear in the text. Syntax errors are left to
// the loader (an unparsable text passes here).
Status RefuseYamlAliases(const std::string& text, const std::string& name);

// The one strict YAML loader of models, clusters, scenarios and sweeps: yaml-cpp keeps one of two equal keys
// silently, so every mapping anywhere in the document is checked for distinct keys:
// `name:line: path.to.key: duplicate key (first at line N)`. Syntax errors become `name:line: reason`; aliases are
// refused first (RefuseYamlAliases).
//
//   MMTWIN_ASSIGN_OR_RETURN(YAML::Node root, LoadStrictYaml(text, "cluster.yaml"));
Status CheckDuplicateKeys(const YAML::Node& node, const std::string& name, const std::string& path = "");

// The one unknown-key check of every YAML reader (scenarios, sweeps, model and cluster specs, validation suites):
// OK when `map` is a mapping whose keys are all in `allowed`. Errors name the file, the key's line and its dotted
// path under `where` ("" = the document's root):
//   `name:line: where.key: unknown key; valid keys are: a, b, c`
//   `name:line: where: expected a mapping with keys a, b, c`      (not a mapping)
//   `name:line: where: keys must be plain names`                    (a sequence or mapping as a key)
// Duplicate keys are LoadStrictYaml's (every reader loads through it).
//
//   MMTWIN_RETURN_IF_ERROR(CheckKeys(root["trace"], "s.yaml", "trace", {"file", "preset", "samples", "seed"}));
Status CheckKeys(const YAML::Node& map, const std::string& name, const std::string& where,
                 const std::vector<std::string>& allowed);

// YAML files larger than this are refused before parsing: yaml-cpp holds ~55 bytes per byte of text (a 43 MB
// file took 2.4 GB), and scenarios, sweeps, model and cluster specs are a few kB (data belongs in trace files).
constexpr size_t kMaxYamlBytes = size_t{16} << 20;

inline Result<YAML::Node> LoadStrictYaml(const std::string& text, const std::string& name) {
  if (text.size() > kMaxYamlBytes)
    return Error(name + ": " + std::to_string(text.size() >> 20) + " MiB is more than the " +
                 std::to_string(kMaxYamlBytes >> 20) +
                 " MiB a YAML file may have (scenarios, sweeps, model and cluster specs are small; samples "
                 "belong in a trace file)");
  MMTWIN_RETURN_IF_ERROR(RefuseYamlAliases(text, name));
  try {
    YAML::Node root = YAML::Load(text);
    MMTWIN_RETURN_IF_ERROR(CheckDuplicateKeys(root, name));
    return root;
  } catch (const YAML::Exception& e) {
    return YamlError(name, e);
  }
}

}  // namespace mmtwin

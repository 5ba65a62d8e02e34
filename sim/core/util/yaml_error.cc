// SPDX-License-Identifier: Apache-2.0
// The strict YAML loader's duplicate-key check and the one unknown-key check (yaml_error.h).
#include "core/util/yaml_error.h"

#include <algorithm>
#include <map>
#include <sstream>

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "core/util/text.h"

namespace mmtwin {

namespace {

// Records the first alias of the event stream.
class AliasFinder : public YAML::EventHandler {
 public:
  bool found = false;
  YAML::Mark mark;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    if (!found) {
      found = true;
      mark = m;
    }
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
  }
  void OnMapEnd() override {}
};

}  // namespace

Status RefuseYamlAliases(const std::string& text, const std::string& name) {
  if (text.find('*') == std::string::npos) return Status();  // no alias can be written without one
  std::istringstream in(text);
  AliasFinder finder;
  try {
    // The first document only, as YAML::Load reads it (the loaders ignore later ones; and on some malformed
    // streams yaml-cpp's parser hands out empty documents without end, which a loop over them never left).
    YAML::Parser parser(in);
    parser.HandleNextDocument(finder);
  } catch (const YAML::Exception&) {
    // A syntax error: the loader reports it with its line (an alias before it has been recorded already).
  }
  if (!finder.found) return Status();
  return Error::At(
      name, finder.mark.is_null() ? 0 : finder.mark.line + 1, "",
      "aliases (*name) are not supported: mmtwin's YAML files are plain data; write the value out "
      "where the alias stands");
}

Status CheckDuplicateKeys(const YAML::Node& node, const std::string& name, const std::string& path) {
  if (node.IsMap()) {
    std::map<std::string, long> first_line;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      const std::string field = path.empty() ? key : path + "." + key;
      const long line = it->first.Mark().is_null() ? 0 : it->first.Mark().line + 1;
      if (it->first.IsScalar()) {
        auto [pos, fresh] = first_line.emplace(key, line);
        if (!fresh)
          return Error::At(name, line, field,
                           "duplicate key (first at line " + std::to_string(pos->second) + ")");
      }
      MMTWIN_RETURN_IF_ERROR(CheckDuplicateKeys(it->second, name, field));
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i)
      MMTWIN_RETURN_IF_ERROR(CheckDuplicateKeys(node[i], name, path + "[" + std::to_string(i) + "]"));
  }
  return Status();
}

Status CheckKeys(const YAML::Node& map, const std::string& name, const std::string& where,
                 const std::vector<std::string>& allowed) {
  if (!map.IsMap())
    return Error::At(name, LineOf(map), where, "expected a mapping with keys " + Join(allowed));
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) return Error::At(name, LineOf(it->first), where, "keys must be plain names");
    const std::string& key = it->first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      return Error::At(name, LineOf(it->first), where.empty() ? key : where + "." + key,
                       "unknown key; valid keys are: " + Join(allowed));
  }
  return Status();
}

}  // namespace mmtwin

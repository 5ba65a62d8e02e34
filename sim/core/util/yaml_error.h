// yaml-cpp errors as mmtwin errors (core-internal: only .cc files of the core include it; yaml-cpp is a
// private dependency). yaml-cpp throws on syntax errors and bad conversions; the core turns them into
// `file:line: reason`.
//
//   Result<Scenario> ParseScenario(...) { return GuardYaml(name, [&] { return ParseImpl(text, name, dir); });
//   }
#pragma once

#include <yaml-cpp/yaml.h>

#include <exception>
#include <string>

#include "core/util/status.h"

namespace mmtwin {

// `name:line: message` for a yaml-cpp exception (the line is left out when yaml-cpp gives none).
inline Error YamlError(const std::string& name, const YAML::Exception& e) {
  return Error::At(name, e.mark.is_null() ? 0 : e.mark.line + 1, "", e.msg);
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

}  // namespace mmtwin

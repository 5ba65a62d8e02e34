// SPDX-License-Identifier: Apache-2.0
// The head every validation suite file shares (measured suites, validate.h; published-runs suites, published.h):
// a YAML mapping with only the allowed keys, its name (a plain name; the file's stem when missing), description
// and notes. One reader for both, so the two kinds say the same things the same way.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

struct SuiteFileHead {
  YAML::Node root;  // the whole file, for the kind's own keys
  std::string name, description, notes;
};

// Errors name file:line: key (a file that is not a mapping, an unknown key, a name that is not a plain name).
// YAML exceptions are the caller's to guard (GuardYaml).
Result<SuiteFileHead> ReadSuiteHead(const std::string& text, const std::string& file,
                                    const std::vector<std::string>& keys);

}  // namespace mmtwin

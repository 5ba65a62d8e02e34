// SPDX-License-Identifier: Apache-2.0
// Typed policy parameters: every policy declares its parameters (name, type, default, description) as data; user
// input (`--param k=v`, scenario files) is validated against the declaration before the policy runs.
//
//   static const std::vector<ParamSpec> kSpecs = {{"batch_size", ParamType::kInt, "4", "samples per mini-batch"}};
//   MMTWIN_ASSIGN_OR_RETURN(Params p, Params::Validate("random", kSpecs, {{"batch_size", "8"}}));
//   int64_t b = p.Int("batch_size");
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

enum class ParamType { kInt, kDouble, kBool, kString };
const char* ParamTypeName(ParamType t);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  std::string default_value;
  std::string description;
  std::vector<std::string> choices;  // for kString: the valid values (empty = any)
  double min = -1e300;               // for kInt / kDouble: inclusive range
  double max = 1e300;
};

class Params {
 public:
  // Checks names (unknown -> error listing the valid ones), types, ranges and choices; fills defaults.
  // `owner` names the policy in messages: "policy 'isf': parameter 'iterations': 'x' is not an integer".
  static Result<Params> Validate(const std::string& owner, const std::vector<ParamSpec>& specs,
                                 const std::map<std::string, std::string>& given);
  int64_t Int(const std::string& name) const;
  double Double(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& Str(const std::string& name) const;
  // Resolved values (defaults filled), for reports and resolved scenarios.
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Parses "k=v" into a map; error names the offending text.
Status ParseKeyValue(const std::string& text, std::map<std::string, std::string>& out);
// Formats a parameter table for --help and `mmtwin policies`.
std::string DescribeParams(const std::vector<ParamSpec>& specs, const std::string& indent);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/util/params.h"
#include "core/util/text.h"

#include "core/util/csv.h"

namespace mmtwin {

const char* ParamTypeName(ParamType t) {
  switch (t) {
    case ParamType::kInt:
      return "int";
    case ParamType::kDouble:
      return "double";
    case ParamType::kBool:
      return "bool";
    case ParamType::kString:
      return "string";
  }
  return "?";
}

static Status CheckValue(const std::string& owner, const ParamSpec& s, const std::string& v) {
  auto bad = [&](const std::string& why) {
    return Error(owner + ": parameter '" + s.name + "': '" + v + "' " + why);
  };
  switch (s.type) {
    case ParamType::kInt: {
      int64_t x;
      if (!ParseInt64(v, x)) return bad("is not an integer");
      if (x < s.min || x > s.max)
        return bad("is out of range [" + std::to_string(static_cast<int64_t>(s.min)) + ", " +
                   std::to_string(static_cast<int64_t>(s.max)) + "]");
      break;
    }
    case ParamType::kDouble: {
      double x;
      if (!ParseDouble(v, x)) return bad("is not a number");
      if (x < s.min || x > s.max) return bad("is out of range");
      break;
    }
    case ParamType::kBool:
      if (v != "true" && v != "false" && v != "1" && v != "0") return bad("is not a boolean (true or false)");
      break;
    case ParamType::kString:
      if (!s.choices.empty()) {
        bool ok = false;
        for (auto& c : s.choices) ok |= c == v;
        if (!ok) return bad("is not valid; valid values are: " + Join(s.choices));
      }
      break;
  }
  return Status();
}

Result<Params> Params::Validate(const std::string& owner, const std::vector<ParamSpec>& specs,
                                const std::map<std::string, std::string>& given) {
  Params p;
  for (const auto& [k, v] : given) {
    const ParamSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == k) spec = &s;
    if (!spec) {
      std::vector<std::string> names;
      for (const auto& s : specs) names.push_back(s.name);
      return Error(owner + ": unknown parameter '" + k +
                   "'; valid parameters are: " + (names.empty() ? std::string("(none)") : Join(names)));
    }
    MMTWIN_RETURN_IF_ERROR(CheckValue(owner, *spec, v));
    p.values_[k] = v;
  }
  for (const auto& s : specs)
    if (!p.values_.count(s.name)) p.values_[s.name] = s.default_value;
  return p;
}

int64_t Params::Int(const std::string& name) const {
  int64_t x = 0;
  ParseInt64(values_.at(name), x);
  return x;
}
double Params::Double(const std::string& name) const {
  double x = 0;
  ParseDouble(values_.at(name), x);
  return x;
}
bool Params::Bool(const std::string& name) const {
  const std::string& v = values_.at(name);
  return v == "true" || v == "1";
}
const std::string& Params::Str(const std::string& name) const { return values_.at(name); }

Status ParseKeyValue(const std::string& text, std::map<std::string, std::string>& out) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return Error("expected key=value, got '" + text + "'");
  out[text.substr(0, eq)] = text.substr(eq + 1);
  return Status();
}

std::string DescribeParams(const std::vector<ParamSpec>& specs, const std::string& indent) {
  std::string o;
  for (const auto& s : specs) {
    o += indent + s.name + " (" + ParamTypeName(s.type) + ", default " +
         (s.default_value.empty() ? "\"\"" : s.default_value) + "): " + s.description;
    if (!s.choices.empty()) o += " [" + Join(s.choices) + "]";
    o += "\n";
  }
  return o;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// paper.yaml (paper.h), read with the strict YAML loader.
#include "report/paper.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <initializer_list>

#include "core/util/csv.h"
#include "core/util/yaml_error.h"

namespace mmtwin::report {
namespace {

// Every key of mapping `node` (at `path`) is one of `keys`.
Status OnlyKeys(const YAML::Node& node, const std::string& file, const std::string& path,
                std::initializer_list<const char*> keys) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string k = it->first.Scalar();
    bool known = false;
    std::string valid;
    for (const char* x : keys) {
      known = known || k == x;
      valid += (valid.empty() ? "" : ", ") + std::string(x);
    }
    if (!known)
      return Error::At(file, LineOf(it->first), path.empty() ? k : path + "." + k,
                       "unknown key; valid keys are: " + valid);
  }
  return Status();
}

Result<YAML::Node> Mapping(const YAML::Node& node, const std::string& file, const std::string& path) {
  if (!node.IsMap()) return Error::At(file, LineOf(node), path, "expected a mapping");
  return node;
}

// A non-empty scalar; `parent_line` is cited when the key is missing.
Result<std::string> Text(const YAML::Node& node, const std::string& file, const std::string& path,
                         long parent_line = 0) {
  if (!node.IsDefined()) return Error::At(file, parent_line, path, "missing");
  if (!node.IsScalar() || node.Scalar().empty())
    return Error::At(file, LineOf(node), path, "expected a text");
  return node.Scalar();
}

Result<double> Number(const YAML::Node& node, const std::string& file, const std::string& path,
                      long parent_line) {
  MMTWIN_ASSIGN_OR_RETURN(std::string s, Text(node, file, path, parent_line));
  if (s == ".inf" || s == ".Inf" || s == ".INF") return HUGE_VAL;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (!end || *end != '\0' || std::isnan(v) || v == -HUGE_VAL)
    return Error::At(file, LineOf(node), path, "'" + s + "' is not a number (or .inf)");
  return v;
}

// A value: the text as printed, or {value: TEXT, source: TEXT}.
Result<PaperValue> ParseValue(const YAML::Node& node, const std::string& file, const std::string& path) {
  PaperValue v;
  v.line = LineOf(node);
  if (node.IsMap()) {
    MMTWIN_RETURN_IF_ERROR(OnlyKeys(node, file, path, {"value", "source"}));
    MMTWIN_ASSIGN_OR_RETURN(v.text, Text(node["value"], file, path + ".value", v.line));
    if (node["source"]) {
      MMTWIN_ASSIGN_OR_RETURN(v.source, Text(node["source"], file, path + ".source"));
    }
    return v;
  }
  MMTWIN_ASSIGN_OR_RETURN(v.text, Text(node, file, path));
  return v;
}

Result<PaperTable> ParseTable(const std::string& name, const YAML::Node& node, const std::string& file) {
  const std::string path = "tables." + name;
  MMTWIN_RETURN_IF_ERROR(Mapping(node, file, path).status());
  MMTWIN_RETURN_IF_ERROR(OnlyKeys(node, file, path, {"ref", "rows", "source", "values"}));
  PaperTable t;
  t.name = name;
  t.line = LineOf(node);
  MMTWIN_ASSIGN_OR_RETURN(t.ref, Text(node["ref"], file, path + ".ref", t.line));
  MMTWIN_ASSIGN_OR_RETURN(t.row_header, Text(node["rows"], file, path + ".rows", t.line));
  if (node["source"]) {
    MMTWIN_ASSIGN_OR_RETURN(t.source, Text(node["source"], file, path + ".source"));
  }
  const YAML::Node values = node["values"];
  if (!values) return Error::At(file, t.line, path + ".values", "missing (an empty mapping {} when none)");
  MMTWIN_RETURN_IF_ERROR(Mapping(values, file, path + ".values").status());
  for (auto row = values.begin(); row != values.end(); ++row) {
    const std::string rpath = path + ".values." + row->first.Scalar();
    MMTWIN_RETURN_IF_ERROR(Mapping(row->second, file, rpath).status());
    auto& figures = t.values[row->first.Scalar()];
    for (auto fig = row->second.begin(); fig != row->second.end(); ++fig) {
      MMTWIN_ASSIGN_OR_RETURN(figures[fig->first.Scalar()],
                              ParseValue(fig->second, file, rpath + "." + fig->first.Scalar()));
    }
  }
  return t;
}

Result<PaperClaim> ParseClaim(const std::string& name, const YAML::Node& node, const std::string& file) {
  const std::string path = "claims." + name;
  MMTWIN_RETURN_IF_ERROR(Mapping(node, file, path).status());
  MMTWIN_RETURN_IF_ERROR(OnlyKeys(node, file, path, {"low", "high", "parity", "source"}));
  PaperClaim c;
  const long line = LineOf(node);
  MMTWIN_ASSIGN_OR_RETURN(c.low, Number(node["low"], file, path + ".low", line));
  MMTWIN_ASSIGN_OR_RETURN(c.high, Number(node["high"], file, path + ".high", line));
  if (!std::isfinite(c.low)) return Error::At(file, LineOf(node["low"]), path + ".low", "must be finite");
  if (c.high < c.low) return Error::At(file, LineOf(node["high"]), path + ".high", "below low");
  if (node["parity"]) {
    MMTWIN_ASSIGN_OR_RETURN(c.parity, Number(node["parity"], file, path + ".parity", line));
  }
  MMTWIN_ASSIGN_OR_RETURN(c.source, Text(node["source"], file, path + ".source", line));
  return c;
}

Result<Paper> ParseRoot(const std::string& text, const std::string& file) {
  MMTWIN_ASSIGN_OR_RETURN(const YAML::Node root, LoadStrictYaml(text, file));
  MMTWIN_RETURN_IF_ERROR(Mapping(root, file, "").status());
  MMTWIN_RETURN_IF_ERROR(OnlyKeys(root, file, "", {"paper", "source", "tables", "claims", "facts"}));
  Paper p;
  p.file = file;
  if (root["paper"]) {
    MMTWIN_ASSIGN_OR_RETURN(p.title, Text(root["paper"], file, "paper"));
  }
  if (root["source"]) {
    MMTWIN_ASSIGN_OR_RETURN(p.source, Text(root["source"], file, "source"));
  }
  if (const YAML::Node tables = root["tables"]) {
    MMTWIN_RETURN_IF_ERROR(Mapping(tables, file, "tables").status());
    for (auto it = tables.begin(); it != tables.end(); ++it) {
      MMTWIN_ASSIGN_OR_RETURN(p.tables[it->first.Scalar()], ParseTable(it->first.Scalar(), it->second, file));
    }
  }
  if (const YAML::Node claims = root["claims"]) {
    MMTWIN_RETURN_IF_ERROR(Mapping(claims, file, "claims").status());
    for (auto it = claims.begin(); it != claims.end(); ++it) {
      MMTWIN_ASSIGN_OR_RETURN(p.claims[it->first.Scalar()], ParseClaim(it->first.Scalar(), it->second, file));
    }
  }
  if (const YAML::Node facts = root["facts"]) {
    MMTWIN_RETURN_IF_ERROR(Mapping(facts, file, "facts").status());
    for (auto it = facts.begin(); it != facts.end(); ++it) {
      MMTWIN_ASSIGN_OR_RETURN(p.facts[it->first.Scalar()],
                              Text(it->second, file, "facts." + it->first.Scalar()));
    }
  }
  return p;
}

}  // namespace

std::string PaperTable::Value(const std::string& row, const std::string& figure) const {
  for (const std::string& r : {row, std::string("*")}) {
    auto it = values.find(r);
    if (it == values.end()) continue;
    auto f = it->second.find(figure);
    if (f != it->second.end()) return f->second.text;
  }
  return "";
}

Result<const PaperTable*> Paper::Table(const std::string& name) const {
  auto it = tables.find(name);
  if (it == tables.end())
    return Error(file + ": tables." + name + ": not defined (the report's code needs it)");
  return &it->second;
}

Result<PaperClaim> Paper::Claim(const std::string& name) const {
  auto it = claims.find(name);
  if (it == claims.end())
    return Error(file + ": claims." + name + ": not defined (the report's code needs it)");
  return it->second;
}

Result<std::string> Paper::Fact(const std::string& name) const {
  auto it = facts.find(name);
  if (it == facts.end())
    return Error(file + ": facts." + name + ": not defined (the report's code needs it)");
  return it->second;
}

Result<Paper> ParsePaper(const std::string& text, const std::string& file) {
  return GuardYaml(file, [&] { return ParseRoot(text, file); });
}

Result<Paper> LoadPaper(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParsePaper(text, path);
}

}  // namespace mmtwin::report

// SPDX-License-Identifier: Apache-2.0
// One registry template for every policy kind (data policies, post-balance algorithms, partition, recompute,
// schedules): entries with a name, a one-line description, typed parameters (core/util/params.h) and the
// function that runs them; lookups with an error listing the valid names, and parameter validation that
// rejects unknown parameters with the valid ones. `mmtwin policies`, scenario parsing and the planner all read
// the same registries.
//
//   const PolicyRegistry<ScheduleFn>& reg = Schedules();
//   MMTWIN_ASSIGN_OR_RETURN(const RegistryEntry<ScheduleFn>* e, reg.Find("1f1b"));
//   MMTWIN_ASSIGN_OR_RETURN(Params p, reg.Validate(*e, {{"bogus", "7"}}));   // error: unknown parameter
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/params.h"
#include "core/util/status.h"

namespace mmtwin {

template <class Fn>
struct RegistryEntry {
  std::string name;
  std::string description;  // one line, shown by `mmtwin policies` and --help
  std::vector<ParamSpec> params;
  Fn run{};  // the function that runs it (or, for post-balance algorithms, the enum value that selects it)
};

template <class Fn>
class PolicyRegistry {
 public:
  // kind: what an entry is called in messages ("data policy", "schedule"); owner_prefix: how parameter errors
  // name an entry ("policy 'isf'", "schedule '1f1b'": owner_prefix + " '" + name + "'").
  PolicyRegistry(std::string kind, std::string owner_prefix, std::vector<RegistryEntry<Fn>> entries)
      : kind_(std::move(kind)), owner_prefix_(std::move(owner_prefix)), entries_(std::move(entries)) {}

  // In a fixed order (the order given).
  const std::vector<RegistryEntry<Fn>>& entries() const { return entries_; }

  // Error "unknown <kind> 'x'; valid values are: a, b, c" for an unknown name.
  Result<const RegistryEntry<Fn>*> Find(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return Error("unknown " + kind_ + " '" + std::string(name) + "'; valid values are: " + Names());
  }

  // Checks names (unknown -> error with the valid ones), types, ranges and choices; fills defaults.
  Result<Params> Validate(const RegistryEntry<Fn>& e, const std::map<std::string, std::string>& given) const {
    return Params::Validate(owner_prefix_ + " '" + e.name + "'", e.params, given);
  }
  Result<Params> Validate(std::string_view name, const std::map<std::string, std::string>& given) const {
    MMTWIN_ASSIGN_OR_RETURN(const RegistryEntry<Fn>* e, Find(name));
    return Validate(*e, given);
  }

  // "a, b, c".
  std::string Names() const {
    std::string s;
    for (const auto& e : entries_) s += (s.empty() ? "" : ", ") + e.name;
    return s;
  }

 private:
  std::string kind_, owner_prefix_;
  std::vector<RegistryEntry<Fn>> entries_;
};

}  // namespace mmtwin

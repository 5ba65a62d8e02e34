// SPDX-License-Identifier: Apache-2.0
// What changed between two scenarios, key by key: the GUI's run history says how each run differs from the one
// before it (gui/views.h HistoryView). Both sides are scenario YAML texts (a run's resolved scenario.yaml, or any
// scenario file); mappings are walked into dotted keys ("parallel.dp", "policies.data.params.batch_size"),
// sequences into indices ("components[1].use"), and scalars compared as written. Keys come out sorted.
//
//   MMTWIN_ASSIGN_OR_RETURN(auto changes, ScenarioChanges(before_yaml, after_yaml));
//   FormatChanges(changes, 3);   // "parallel.dp: 2 -> 1; policies.recompute: none -> full"
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

struct ScenarioChange {
  std::string key;     // dotted path
  std::string before;  // the value as written; "" when the key is absent on that side
  std::string after;
};

// Errors (a text that is not YAML) name the side: "before: ..." or "after: ...".
Result<std::vector<ScenarioChange>> ScenarioChanges(const std::string& before_yaml,
                                                    const std::string& after_yaml);

// "key: before -> after" joined by "; ", an absent side written "(none)"; at most `max_items` changes, then
// "; and N more". "no change" for an empty list.
std::string FormatChanges(const std::vector<ScenarioChange>& changes, size_t max_items);

}  // namespace mmtwin

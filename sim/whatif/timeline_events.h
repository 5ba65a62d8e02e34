// SPDX-License-Identifier: Apache-2.0
// whatif-internal: the trace-event reader that timeline_import.cc owns, shared with the PyTorch profiler front end
// (kineto_import.cc), which turns kernels into one complete event per op and hands them to it. Not installed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "whatif/timeline_import.h"

namespace mmtwin {

// The name -> kind entries ImportTimeline applies: the options' mapping first, then the defaults
// (timeline_import.h: Megatron-LM's timer names, the PyTorch profiler's names).
std::vector<std::pair<std::string, std::string>> TimelineMappingEntries(const ImportOptions& options);

// The kind name `name` maps to ("" = none): an exact entry first, then the longest matching PREFIX* entry.
std::string MappedKind(const std::string& name,
                       const std::vector<std::pair<std::string, std::string>>& entries);

// ImportTimeline on an already parsed array of trace events (may throw nlohmann::json exceptions on values of
// unexpected types: callers catch them).
Result<ImportedTimeline> ImportTraceEvents(const nlohmann::json& events, const std::string& name,
                                           const ParallelConfig& parallel, const ImportOptions& options);

}  // namespace mmtwin

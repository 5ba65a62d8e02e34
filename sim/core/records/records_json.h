// SPDX-License-Identifier: Apache-2.0
// The JSON pieces the record codecs share, with the JSON type in the interface: for the .cc files that write or
// read JSON (records_codec.cc, plan_codec.cc, driver/planner.cc), never for a header (records_codec.h and
// plan_codec.h pass JSON as text).
//
//   json j = PlannedStageJson(record);   // `mmtwin plan --json`'s stage (the planner adds boundary_bytes)
//   json k = StageJson(record);          // summary.json's stage: the planned side and the measured or replayed times
//   MMTWIN_ASSIGN_OR_RETURN(json doc, ParseJsonObject(text, "runs/a/summary.json", "a summary.json"));
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/plan/memory.h"
#include "core/records/records.h"
#include "core/util/status.h"

namespace mmtwin {

// The planned side of a stage: stage, first_layer, last_layer, layer_labels [first, last], layers, params,
// recomputed_layers, fwd_us_mean, model_state_bytes, peak_activation_bytes, peak_memory_bytes,
// memory_capacity_bytes, fragmentation_bytes, runtime_bytes, fits.
nlohmann::json PlannedStageJson(const StageRecord& s);
// A stage of summary.json: PlannedStageJson and bwd_us_mean, recompute_us_mean, busy_ratio, bubble_ratio,
// idle_ratio, dispatch_us_mean, exposed_dispatch_ratio.
nlohmann::json StageJson(const StageRecord& s);
// Every term of a stage's planned peak (core/plan/memory.h), `mmtwin plan --json`'s per-stage `memory`: weight,
// grad, main_grad, optimizer, zero3_transient (summing to model_state), peak_activation, boundary, workspace
// (with the states: allocated_peak), fragmentation, cuda_context, nccl, other (with allocated_peak: peak),
// microbatch_footprint_min / max, capacity; all _bytes.
nlohmann::json StageMemoryJson(const StageMemory& m);

// A parallel layout: dp, tp, pp, vpp, micro_batches, zero_stage, world_size (summary.json adds the ZeRO-3
// implementation and sequence parallelism when they are not the defaults).
nlohmann::json ParallelJson(const ParallelConfig& p);

// Parses `text` as one JSON object. Errors (invalid input) name the file `name` and, for a syntax error, its
// line: "runs/a/summary.json:3: not valid JSON: syntax error while parsing object - unexpected '}'"; a document
// that is not an object: "runs/a/summary.json: not WHAT (JSON object expected)".
Result<nlohmann::json> ParseJsonObject(const std::string& text, const std::string& name,
                                       const std::string& what);

}  // namespace mmtwin

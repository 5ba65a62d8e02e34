// SPDX-License-Identifier: Apache-2.0
// The plan's JSON codec: rank 0 plans (BuildPlan) and writes the plan; every other rank, the backend, or a
// later simulation reads it back and gets an equal Plan (operator==), instead of re-planning (bmp compares
// floating-point timings, so a re-plan on another machine may choose differently).
//
//   std::string text = PlanToJson(run.plan);     // a run folder's plan.json (RunFolderWriter::AddPlan, run_folder.h)
//   MMTWIN_ASSIGN_OR_RETURN(Plan plan, PlanFromJson(text, RunFilePath(dir, RunFile::kPlan)));
//
// Format (schema_version 1; 64-bit digests and seeds as decimal strings, since JSON numbers are doubles to
// many readers): {schema_version, scenario, model, cluster, nodes, trace {file, preset, samples, seed,
// digest}, seed, iterations_in_epoch, dp_bucket_bytes, packed, parallel {dp, tp, pp, vpp, micro_batches,
// zero_stage, tp_sequence_parallel}, partition [bounds], recompute [per layer 0/1/2], schedule {name, pp, vpp,
// micro_batches, per_rank [[[PASS, micro_batch, chunk], ...], ...]}, iterations [{epoch_index, micro_batches
// [dp][m][sample indices], dispatch [m][[src, dst, bytes], ...], and when set dispatch_backward (the same
// shape) and dispatch_overhead [m][length_gather_bytes, host_us]}]}. PASS: "F" forward, "B" whole backward,
// "BI" / "BW" the input / weight gradient of a split backward.
#pragma once

#include <string>

#include "core/plan/plan.h"
#include "core/util/status.h"

namespace mmtwin {

// Compact JSON text (no indentation: a plan holds every sample index of the replayed iterations).
std::string PlanToJson(const Plan& plan);
// Parses and checks (types, sizes consistent with parallel, a known schema version; ValidatePartition,
// ValidateSchedule); errors name `name` and the field ("plan.json: iterations[3].micro_batches: expected dp = 4
// ranks"), or for a syntax error `name` and its line.
Result<Plan> PlanFromJson(const std::string& text, const std::string& name);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Text rendering shared by `mmtwin plan`, `simulate`, `compare` and `sweep`: number formats, the scenario
// header, the per-stage tables and the OOM list, all from the typed records (core/records, the planner's
// PlanStage). Units: times in the records are microseconds (printed as ms), memory bytes (printed as GiB).
//
//   WriteHeader(scenario, out);
//   WriteSimStages(summary.stages, out);
#pragma once

#include <ostream>
#include <string>

#include <vector>

#include "core/records/records.h"
#include "core/scenario/scenario.h"
#include "driver/planner.h"

namespace mmtwin::cli {

// printf("%.*f") or "n/a" for NaN; bytes as GiB with 1 decimal; a count with thousands separators.
std::string Fixed(double x, int prec);
// x with at least `digits` significant digits (0.373, 12.3, 3618): GPU-days of small and large runs alike.
std::string Significant(double x, int digits = 3);
std::string GiB(double bytes);
std::string Count(double x);
// `s` padded with spaces to `w` characters, on the right (left-aligned) or, with `right`, on the left.
std::string Pad(const std::string& s, size_t w, bool right = false);
// A plain-text table: each column as wide as its widest cell, two spaces apart; columns from `right_from` on
// right-aligned (numbers), the ones before it left-aligned (names).
void WriteTextTable(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                    std::ostream& out, size_t right_from = 1);
// A policy as written in a scenario: "isf" or "random(batch_size=4)".
std::string PolicyText(const PolicyRef& p);

// scenario / model / cluster / layout / policies lines.
void WriteHeader(const Scenario& s, std::ostream& out);
// The per-stage table of `mmtwin plan`.
void WritePlanStages(const std::vector<PlanStage>& stages, std::ostream& out);
// `mmtwin plan --memory`: every term of each stage's planned peak in GiB (weights, gradients, fp32 main
// gradients, optimizer, ZeRO-3 transients, activations, boundary buffers, workspaces, allocated, fragmentation,
// CUDA context, NCCL, other, peak, capacity), and a legend saying how they sum.
void WritePlanMemory(const std::vector<PlanStage>& stages, std::ostream& out);
// The per-stage table of `mmtwin simulate` (summary.json's stages).
void WriteSimStages(const std::vector<StageRecord>& stages, std::ostream& out);
// "OOM: stage 2 is short by 3.4 GiB ..." lines, one per stage that does not fit.
void WriteOom(const std::vector<OomStage>& oom_stages, std::ostream& out);

}  // namespace mmtwin::cli

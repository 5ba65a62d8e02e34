// Text rendering shared by `mmtwin plan` and `mmtwin simulate`: tolerant JSON field access (a missing or
// mistyped field prints "n/a" instead of throwing) and the scenario header, per-stage tables and OOM list.
// Units: times in the JSON are microseconds (printed as ms), memory in bytes (printed as GiB).
//
//   WriteHeader(scenario, summary, out);
//   WriteSimStages(summary, out);
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/scenario/scenario.h"

namespace mmtwin::cli {

// j[key] as a number (NaN when missing or not a number), a bool (false when missing), or text.
double JNum(const nlohmann::json& j, const char* key);
bool JBool(const nlohmann::json& j, const char* key);
std::string JStr(const nlohmann::json& j, const char* key);
// printf("%.*f") or "n/a" for NaN; bytes as GiB with 1 decimal; a count with thousands separators.
std::string Fixed(double x, int prec);
std::string GiB(double bytes);
std::string Count(double x);
// A policy as written in a scenario: "isf" or "random(batch_size=4)".
std::string PolicyText(const PolicyRef& p);

// scenario / model / cluster / layout / policies lines.
void WriteHeader(const Scenario& s, const nlohmann::json& j, std::ostream& out);
// The per-stage table of `mmtwin plan` (PlanScenario's stages).
void WritePlanStages(const nlohmann::json& plan, std::ostream& out);
// The per-stage table of `mmtwin simulate` (summary.json's stages).
void WriteSimStages(const nlohmann::json& summary, std::ostream& out);
// "OOM: stage 2 is short by 3.4 GiB ..." lines when j["oom"] is true.
void WriteOom(const nlohmann::json& j, std::ostream& out);

}  // namespace mmtwin::cli

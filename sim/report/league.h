// SPDX-License-Identifier: Apache-2.0
// The policies league table's ranking (`mmtwin-report policies`, policies_report.cc; issue 31 item 7): the runs of
// one workload at one scale, each labelled by its sweep KIND/POLICY (one policy kind changed from the workload's
// baseline, the sweep's first run) or recipe/NAME (several), ranked by GPU-time per trained sample
// (GpuSecondsPerSample, what `mmtwin sweep`'s speed-up compares). A run that does not fit device memory
// (RunSummary::oom) is listed after the ranked ones, unranked: its time is no option the user has.
//
// Where each policy comes from is the report's data (paper.yaml facts "origin LABEL": "ORIGIN; SOURCE", ORIGIN one
// of baseline, framework, seed, since): the seeds' best is the fastest fitting run whose label is a seed paper's
// (OmniBal, OrchMLLM, LongVILA), the league's best the fastest of all, and the report states the best's margin
// over the seeds' best.
//
//   MMTWIN_ASSIGN_OR_RETURN(League l, RankLeague(rows, [&](const std::string& label) {
//     return ParsePolicyOrigin(*paper.Fact("origin " + label)); }));
//   l.entries[0].rank;  // 1: the fastest that fits
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "sweep/results_db.h"

namespace mmtwin::report {

enum class PolicyOrigin { kBaseline, kFramework, kSeed, kSince };
// "baseline", "framework", "seed", "since".
const char* PolicyOriginName(PolicyOrigin o);
// What the league table's origin column shows: "baseline", "framework default", "seed paper", "since the seeds".
const char* PolicyOriginLabel(PolicyOrigin o);

struct PolicyOriginInfo {
  PolicyOrigin origin = PolicyOrigin::kBaseline;
  std::string source;  // the paper, framework or practice it follows
};
// "ORIGIN; SOURCE" (SOURCE not empty). Errors say what is expected.
Result<PolicyOriginInfo> ParsePolicyOrigin(const std::string& text);

struct LeagueEntry {
  std::string label;  // the run's `policy` axis label: KIND/POLICY or recipe/NAME
  PolicyOriginInfo origin;
  const RunRecord* run = nullptr;
  double gpu_seconds_per_sample = 0;
  double speedup = 0;  // the baseline's GPU-seconds per sample / this run's (NaN without throughput)
  bool fits = false;
  int rank =
      0;  // 1-based among the runs that fit, by GPU-seconds per sample (ties: run order); 0 = does not fit
};

struct League {
  std::vector<LeagueEntry> entries;  // the ranked runs first (rank 1, 2, ...), then the others in run order
  int baseline = -1;                 // index into entries of the sweep's first run
  int best = -1;                     // index of rank 1; -1 when nothing fits
  int seeds_best = -1;               // the best-ranked seed entry; -1 when no seed policy fits
};

// Ranks one sweep's rows (ok rows in run order, each with the axis `policy`). `origin_of` gives a label's origin.
// Errors: no rows, a row without a summary or a `policy` axis, a label twice, an origin_of error.
Result<League> RankLeague(const std::vector<RunRecord>& rows,
                          const std::function<Result<PolicyOriginInfo>(const std::string&)>& origin_of);

}  // namespace mmtwin::report

// SPDX-License-Identifier: Apache-2.0
// The league table's ranking (league.h).
#include "report/league.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/records/headline_metrics.h"

namespace mmtwin::report {

namespace {

struct OriginName {
  PolicyOrigin origin;
  const char* name;
  const char* label;
};
constexpr OriginName kOrigins[] = {{PolicyOrigin::kBaseline, "baseline", "baseline"},
                                   {PolicyOrigin::kFramework, "framework", "framework default"},
                                   {PolicyOrigin::kSeed, "seed", "seed paper"},
                                   {PolicyOrigin::kSince, "since", "since the seeds"}};

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") + 1 - a);
}

}  // namespace

const char* PolicyOriginName(PolicyOrigin o) {
  for (const OriginName& n : kOrigins)
    if (n.origin == o) return n.name;
  return "?";
}

const char* PolicyOriginLabel(PolicyOrigin o) {
  for (const OriginName& n : kOrigins)
    if (n.origin == o) return n.label;
  return "?";
}

Result<PolicyOriginInfo> ParsePolicyOrigin(const std::string& text) {
  const size_t semi = text.find(';');
  const std::string head = Trim(text.substr(0, semi));
  const std::string source = semi == std::string::npos ? "" : Trim(text.substr(semi + 1));
  for (const OriginName& n : kOrigins)
    if (head == n.name) {
      if (source.empty())
        return Error("'" + text + "': expected \"" + head + "; SOURCE\" (the paper, framework or practice)");
      return PolicyOriginInfo{n.origin, source};
    }
  return Error("'" + text +
               "': expected \"ORIGIN; SOURCE\" with ORIGIN one of baseline, framework, seed, since");
}

Result<League> RankLeague(const std::vector<RunRecord>& rows,
                          const std::function<Result<PolicyOriginInfo>(const std::string&)>& origin_of) {
  if (rows.empty()) return Error("no runs to rank");
  std::vector<LeagueEntry> all;
  std::set<std::string> seen;
  for (const RunRecord& r : rows) {
    const std::string where = r.sweep + "#" + std::to_string(r.run_index);
    if (r.status != "ok" || !r.summary) return Error(where + ": the run has no summary");
    LeagueEntry e;
    for (const auto& [name, label] : r.axes)
      if (name == "policy") e.label = label;
    if (e.label.empty()) return Error(where + ": the run has no `policy` axis");
    if (!seen.insert(e.label).second) return Error(where + ": the label '" + e.label + "' appears twice");
    auto origin = origin_of(e.label);
    if (!origin.ok()) return Error(where + ": " + origin.error().message());
    e.origin = *origin;
    e.run = &r;
    e.gpu_seconds_per_sample = GpuSecondsPerSample(*r.summary);
    e.fits = !r.summary->oom && std::isfinite(e.gpu_seconds_per_sample);
    all.push_back(std::move(e));
  }
  const double base = all.front().gpu_seconds_per_sample;
  for (LeagueEntry& e : all) e.speedup = base / e.gpu_seconds_per_sample;

  League l;
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Fitting runs by GPU-seconds per sample (run order breaks ties), then the others in run order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (all[a].fits != all[b].fits) return all[a].fits;
    if (!all[a].fits) return false;
    return all[a].gpu_seconds_per_sample < all[b].gpu_seconds_per_sample;
  });
  int rank = 0;
  for (size_t i : order) {
    LeagueEntry e = all[i];
    if (e.fits) e.rank = ++rank;
    const int at = static_cast<int>(l.entries.size());
    if (i == 0) l.baseline = at;
    if (e.rank == 1) l.best = at;
    if (e.fits && e.origin.origin == PolicyOrigin::kSeed && l.seeds_best < 0) l.seeds_best = at;
    l.entries.push_back(std::move(e));
  }
  return l;
}

}  // namespace mmtwin::report

// SPDX-License-Identifier: Apache-2.0
// The policies league table's ranking (report/league.h): the order is brute-force checked on small random leagues
// (every fitting run ranked by GPU-seconds per sample, ties by run order, the runs that do not fit after them
// unranked), the speed-ups are the baseline's GPU-seconds per sample over each run's, the seeds' best is the fastest
// fitting seed entry, and bad labels and origins are errors that say what is wrong. The shipped origins cover
// every label of the shipped league sweeps.
#include "report/league.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "report/paper.h"
#include "sweep/sweep.h"

namespace mmtwin::report {
namespace {

namespace fs = std::filesystem;

// A run of `world` GPUs training `samples_per_s`, labelled `label`.
RunRecord MakeRun(int index, const std::string& label, double samples_per_s, bool oom, int world = 8) {
  RunRecord r;
  r.sweep = "league";
  r.run_index = index;
  r.axes = {{"samples", "100"}, {"policy", label}};
  RunSummary s;
  s.parallel.dp = world;
  s.samples_per_s = samples_per_s;
  s.oom = oom;
  r.summary = s;
  return r;
}

// Origins by the label's prefix: "seed-..." a seed paper's, "base..." the baseline, else since the seeds.
Result<PolicyOriginInfo> OriginByName(const std::string& label) {
  if (label.rfind("seed", 0) == 0) return PolicyOriginInfo{PolicyOrigin::kSeed, "a seed"};
  if (label.rfind("base", 0) == 0) return PolicyOriginInfo{PolicyOrigin::kBaseline, "practice"};
  return PolicyOriginInfo{PolicyOrigin::kSince, "a newer paper"};
}

TEST(LeagueTest, RankingIsTheBruteForceOrderOnRandomLeagues) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 9);
    std::vector<RunRecord> rows;
    for (int i = 0; i < n; ++i) {
      const std::string label = (i == 0 ? "base" : (rng() % 2 ? "seed-" : "new-")) + std::to_string(i);
      // Few distinct speeds, so that ties happen.
      rows.push_back(MakeRun(i, label, 1.0 + static_cast<double>(rng() % 4), rng() % 4 == 0));
    }
    auto l = RankLeague(rows, OriginByName);
    ASSERT_TRUE(l.ok()) << l.error().message();
    ASSERT_EQ(l->entries.size(), rows.size());
    // Brute force: the fitting runs sorted by (GPU-seconds per sample, run index), then the others by index.
    std::vector<const RunRecord*> expect;
    for (const RunRecord& r : rows)
      if (!r.summary->oom) expect.push_back(&r);
    std::sort(expect.begin(), expect.end(), [](const RunRecord* a, const RunRecord* b) {
      const double ta = 8 / a->summary->samples_per_s, tb = 8 / b->summary->samples_per_s;
      return ta != tb ? ta < tb : a->run_index < b->run_index;
    });
    const size_t fitting = expect.size();
    for (const RunRecord& r : rows)
      if (r.summary->oom) expect.push_back(&r);
    int seeds_best = -1;
    for (size_t i = 0; i < expect.size(); ++i) {
      const LeagueEntry& e = l->entries[i];
      EXPECT_EQ(e.run, expect[i]) << "trial " << trial << " position " << i;
      EXPECT_EQ(e.rank, i < fitting ? static_cast<int>(i) + 1 : 0);
      EXPECT_EQ(e.fits, i < fitting);
      EXPECT_DOUBLE_EQ(e.speedup, expect[i]->summary->samples_per_s / rows[0].summary->samples_per_s);
      if (seeds_best < 0 && i < fitting && e.label.rfind("seed", 0) == 0) seeds_best = static_cast<int>(i);
      if (expect[i]->run_index == 0) {
        EXPECT_EQ(l->baseline, static_cast<int>(i));
      }
    }
    EXPECT_EQ(l->best, fitting > 0 ? 0 : -1);
    EXPECT_EQ(l->seeds_best, seeds_best) << "trial " << trial;
  }
}

TEST(LeagueTest, SpeedupIsPerSampleNotPerRun) {
  // The baseline trains 10 samples/s on 8 GPUs (0.8 GPU-s per sample); a run on 16 GPUs at 40 samples/s takes
  // 0.4 GPU-s per sample: 2x, although it runs 4x the samples per second.
  const std::vector<RunRecord> rows = {MakeRun(0, "base", 10, false, 8), MakeRun(1, "new", 40, false, 16)};
  auto l = RankLeague(rows, OriginByName);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->entries[0].label, "new");
  EXPECT_DOUBLE_EQ(l->entries[0].speedup, 2.0);
  EXPECT_DOUBLE_EQ(l->entries[0].gpu_seconds_per_sample, 0.4);
  EXPECT_EQ(l->seeds_best, -1);  // no seed entry
}

TEST(LeagueTest, BadRowsAndOriginsAreErrors) {
  auto message = [](const std::vector<RunRecord>& rows) {
    auto l = RankLeague(rows, OriginByName);
    return l.ok() ? std::string("(no error)") : l.error().message();
  };
  EXPECT_EQ(message({}), "no runs to rank");
  RunRecord unlabelled = MakeRun(0, "base", 1, false);
  unlabelled.axes = {{"samples", "100"}};
  EXPECT_EQ(message({unlabelled}), "league#0: the run has no `policy` axis");
  EXPECT_EQ(message({MakeRun(0, "base", 1, false), MakeRun(1, "base", 2, false)}),
            "league#1: the label 'base' appears twice");
  RunRecord failed = MakeRun(0, "base", 1, false);
  failed.status = "error";
  EXPECT_EQ(message({failed}), "league#0: the run has no summary");
  auto refuse = [](const std::string&) -> Result<PolicyOriginInfo> { return Error("no origin"); };
  auto l = RankLeague({MakeRun(0, "base", 1, false)}, refuse);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().message(), "league#0: no origin");

  EXPECT_EQ(ParsePolicyOrigin("seed; OmniBal")->origin, PolicyOrigin::kSeed);
  EXPECT_EQ(ParsePolicyOrigin("  since ;  DynaPipe ")->source, "DynaPipe");
  EXPECT_EQ(ParsePolicyOrigin("seed").error().message(),
            "'seed': expected \"seed; SOURCE\" (the paper, framework or practice)");
  EXPECT_EQ(ParsePolicyOrigin("new; X").error().message(),
            "'new; X': expected \"ORIGIN; SOURCE\" with ORIGIN one of baseline, framework, seed, since");
  for (PolicyOrigin o :
       {PolicyOrigin::kBaseline, PolicyOrigin::kFramework, PolicyOrigin::kSeed, PolicyOrigin::kSince})
    EXPECT_EQ(ParsePolicyOrigin(std::string(PolicyOriginName(o)) + "; s")->origin, o);
}

// Every label of every shipped league sweep has a well-formed origin in the report's data, and each sweep's first
// run is a baseline or a framework default (the reference the speed-ups are taken against).
TEST(LeagueTest, ShippedSweepsLabelsHaveOrigins) {
  auto paper = LoadPaper(std::string(MMTWIN_SOURCE_DIR) + "/sim/report/data/policies/paper.yaml");
  ASSERT_TRUE(paper.ok()) << paper.error().message();
  int sweeps = 0;
  for (const auto& e : fs::directory_iterator(fs::path(MMTWIN_SOURCE_DIR) / "scenarios" / "sweeps")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("policies-", 0) != 0 || name.rfind("policies-paper-", 0) == 0) continue;
    ++sweeps;
    auto spec = LoadSweep(e.path().string());
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    const SweepAxis* policy = nullptr;
    for (const SweepAxis& a : spec->axes)
      if (a.name == "policy") policy = &a;
    ASSERT_NE(policy, nullptr) << name;
    ASSERT_FALSE(policy->labels.empty()) << name;
    for (size_t i = 0; i < policy->labels.size(); ++i) {
      const std::string& label = policy->labels[i];
      auto fact = paper->Fact("origin " + label);
      ASSERT_TRUE(fact.ok()) << name << ": " << fact.error().message();
      auto origin = ParsePolicyOrigin(*fact);
      ASSERT_TRUE(origin.ok()) << name << ": " << label << ": " << origin.error().message();
      if (i == 0) {
        EXPECT_TRUE(origin->origin == PolicyOrigin::kBaseline || origin->origin == PolicyOrigin::kFramework)
            << name << ": the first run " << label << " is the speed-ups' reference";
      }
    }
  }
  EXPECT_EQ(sweeps, 8);
}

}  // namespace
}  // namespace mmtwin::report

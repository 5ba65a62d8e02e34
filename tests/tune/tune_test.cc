// SPDX-License-Identifier: Apache-2.0
// The configuration search (sim/tune/tune.h): space errors name file:line: field; the candidates and rejections
// of a small space by hand; the memory lower bound is below every candidate's simulated peak and rules out only
// candidates that run out of memory; with pruning the best and the Pareto front equal an exhaustive evaluation's;
// ranking and the Pareto front by hand on synthetic records.
#include "tune/tune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/util/csv.h"
#include "sweep/runner.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

// A folder of the running test's own, with a small base scenario: LLaVA-1.5-7B on 256 samples, one iteration, on
// A100s whose memory is cut to 40 GB, so layouts without enough model parallelism cannot fit.
fs::path Dir() {
  const fs::path dir = fs::path(::testing::TempDir()) / "tune_test" /
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::create_directories(dir);
  std::ofstream(dir / "base.yaml") << "name: base\n"
                                      "trace: {preset: llava-665k, samples: 256, seed: 1}\n"
                                      "model: llava-1.5-7b\n"
                                      "cluster: {preset: a100-4x200g, device: {memory_bytes: 40e9}}\n"
                                      "parallel: {dp: 1, tp: 1, pp: 1, micro_batches: 4}\n"
                                      "policies: {data: {name: random, params: {batch_size: 4}}}\n"
                                      "iterations: 1\nseed: 1\n";
  return dir;
}

Result<TuneSpace> Space(const fs::path& dir, const std::string& body) {
  std::ofstream(dir / "space.yaml") << "name: t\nbase: base.yaml\n" << body;
  return LoadTuneSpace((dir / "space.yaml").string());
}

std::string SpaceError(const std::string& body) {
  auto s = Space(Dir(), body);
  return s.ok() ? "ok" : s.error().message();
}

TEST(TuneSpaceTest, ErrorsNameFileLineAndField) {
  const std::string axes = "axes:\n  - {key: parallel.tp, values: [1, 2]}\n";
  EXPECT_EQ(SpaceError("gpus: [8]\n" + axes), "ok");
  EXPECT_NE(SpaceError(axes).find("space.yaml:1: gpus: missing"), std::string::npos) << SpaceError(axes);
  EXPECT_NE(SpaceError("gpus: [8, 0]\n" + axes).find("space.yaml:3: gpus: '0' is not a GPU count"),
            std::string::npos);
  EXPECT_NE(SpaceError("gpus: 8\naxes:\n  - {key: parallel.dp, values: [1, 2]}\n")
                .find("space.yaml:5: axes: parallel.dp is derived by the search"),
            std::string::npos);
  EXPECT_NE(
      SpaceError("gpus: 8\nmode: zip\n" + axes).find("space.yaml:4: mode: a tune space combines every axis"),
      std::string::npos);
  EXPECT_NE(SpaceError("gpus: 8\nobjective: speed\n" + axes)
                .find("space.yaml:4: objective: unknown objective 'speed'; valid values are: gpu_days, "
                      "tokens_per_s, iteration_time"),
            std::string::npos);
  EXPECT_NE(SpaceError("gpus: 8\nconstraints: {memory_headroom: 1.5}\n" + axes)
                .find("space.yaml:4: constraints.memory_headroom: expected the fraction"),
            std::string::npos);
  EXPECT_NE(SpaceError("gpus: 8\nconstraints: {budget: 3}\n" + axes).find("constraints.budget: unknown key"),
            std::string::npos);
  EXPECT_NE(SpaceError("gpus: 8\naxes:\n  - {key: parallel.nope, values: [1]}\n").find("parallel.nope"),
            std::string::npos);
}

// gpus 8 and 12 x tp {1, 2, 3} x pp {1, 2}: 12 combinations. Not a whole dp: 8 / 3 and 8 / 6 (12 divides by all
// of 1, 2, 3, 2, 4, 6): 2 rejections. tp 3 at 12 GPUs does not divide Vicuna-7B's 32 heads:
// rejected by the heads rule (2 more; a100-4x200g has 8 GPUs per node); 8 candidates are left.
TEST(TuneEnumerationTest, CandidatesAndRejectionsByHand) {
  auto space = Space(Dir(),
                     "gpus: [12, 8]\naxes:\n  - {key: parallel.tp, values: [1, 2, 3]}\n"
                     "  - {key: parallel.pp, values: [1, 2]}\n");
  ASSERT_TRUE(space.ok()) << space.error().message();
  EXPECT_EQ(space->gpus, (std::vector<int64_t>{8, 12}));
  auto e = EnumerateTune(*space, /*prune=*/false);
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->combinations, 12);
  EXPECT_EQ(e->rejected.at("gpus not divisible by tp x pp x sp"), 2);
  EXPECT_EQ(e->rejected.at("tp does not divide the LLM's attention (or KV) heads (Megatron-LM requires it)"),
            2);
  int64_t rejected = 0;
  for (const auto& [reason, n] : e->rejected) rejected += n;
  EXPECT_EQ(rejected, 4);
  EXPECT_EQ(e->evaluate.size() + e->pruned.size(), 8u);
  EXPECT_TRUE(e->pruned.empty());  // prune = false
  for (const TuneCandidate& c : e->evaluate) {
    int64_t tp = 0, pp = 0;
    ASSERT_TRUE(ParseInt64(c.values[0], tp) && ParseInt64(c.values[1], pp));
    EXPECT_EQ(c.dp * tp * pp, c.gpus);
    EXPECT_NE(tp, 3);
    EXPECT_FALSE(c.run_key.empty());
  }
}

// A value the scenario checker refuses is a rejection with the checker's reason (its numbers written N), not an
// error of the search.
TEST(TuneEnumerationTest, TheCheckersRefusalsAreReasons) {
  auto space = Space(Dir(), "gpus: 8\naxes:\n  - {key: parallel.zero_stage, values: [1, 7]}\n");
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto e = EnumerateTune(*space, false);
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->evaluate.size(), 1u);
  ASSERT_EQ(e->rejected.size(), 1u);
  const auto& [reason, n] = *e->rejected.begin();
  EXPECT_EQ(n, 1);
  EXPECT_EQ(reason.rfind("parallel.zero_stage: ", 0), 0u) << reason;
  EXPECT_EQ(reason.find_first_of("0123456789"), std::string::npos) << reason;
}

// constraints.micro_batches_per_step keeps the global batch: micro_batches = 16 / dp for each candidate (gpus 8:
// tp 1, 2, 4 -> dp 8, 4, 2 -> 2, 4, 8 micro-batches), a dp that does not divide it is a rejection (gpus 8 with
// tp 1 and a step of 4: dp 8), and a micro_batches axis with the constraint is an error.
TEST(TuneEnumerationTest, MicroBatchesPerStepKeepsTheGlobalBatch) {
  const fs::path dir = Dir();
  auto space = Space(dir,
                     "gpus: 8\nconstraints: {micro_batches_per_step: 16}\naxes:\n"
                     "  - {key: parallel.tp, values: [1, 2, 4]}\n");
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto e = EnumerateTune(*space, false);
  ASSERT_TRUE(e.ok()) << e.error().message();
  ASSERT_EQ(e->evaluate.size(), 3u);
  for (const TuneCandidate& c : e->evaluate) EXPECT_EQ(c.dp * c.micro_batches, 16) << c.dp;
  // How every client writes a candidate (TuneCandidateLabel, TuneAxesLabel).
  EXPECT_EQ(TuneCandidateLabel(*space, e->evaluate[0]), "gpus=8, dp=8, micro_batches=2, tp=1");
  EXPECT_EQ(TuneAxesLabel(*space, e->evaluate[1]), "tp=2");
  const SweepSpec sweep = EvaluationSweep(*space, *e);
  for (int64_t i = 0; i < 3; ++i) {
    const SweepRun run = ExpandRun(sweep, i);
    ASSERT_TRUE(run.error.empty()) << run.error;
    EXPECT_EQ(run.key, e->evaluate[i].run_key);
    EXPECT_EQ(run.scenario.parallel.dp * run.scenario.parallel.micro_batches, 16);
  }
  auto four = Space(dir,
                    "gpus: 8\nconstraints: {micro_batches_per_step: 4}\naxes:\n"
                    "  - {key: parallel.tp, values: [1, 2, 4]}\n");
  ASSERT_TRUE(four.ok());
  auto e4 = EnumerateTune(*four, false);
  ASSERT_TRUE(e4.ok());
  EXPECT_EQ(e4->evaluate.size(), 2u);
  EXPECT_EQ(
      e4->rejected.at("constraints.micro_batches_per_step not divisible by dp (the global batch cannot be "
                      "kept)"),
      1);
  EXPECT_NE(SpaceError("gpus: 8\nconstraints: {micro_batches_per_step: 16}\naxes:\n"
                       "  - {key: parallel.micro_batches, values: [2, 4]}\n")
                .find("space.yaml:6: axes: parallel.micro_batches is derived"),
            std::string::npos);
}

// Every valid candidate simulated: its worst stage's peak is at least its bound; the pruned ones all run out of
// memory; and ranking the pruned enumeration gives the exhaustive one's best and Pareto front.
TEST(TuneBoundTest, TheBoundIsBelowEveryPeakAndPruningLosesNothing) {
  auto space = Space(Dir(),
                     "gpus: [4, 8]\naxes:\n  - {key: parallel.tp, values: [1, 2, 4]}\n"
                     "  - {key: parallel.pp, values: [1, 2]}\n"
                     "  - {key: parallel.zero_stage, values: [0, 1]}\n");
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto all = EnumerateTune(*space, false), pruned = EnumerateTune(*space, true);
  ASSERT_TRUE(all.ok() && pruned.ok());
  ASSERT_EQ(all->evaluate.size(), pruned->evaluate.size() + pruned->pruned.size());
  ASSERT_FALSE(pruned->pruned.empty());  // tp 1, pp 1: 7B of states alone is more than 40 GB
  ASSERT_FALSE(pruned->evaluate.empty());
  const SweepSpec sweep = EvaluationSweep(*space, *all);
  std::vector<RunRecord> records;
  std::set<std::string> oom;
  for (size_t i = 0; i < all->evaluate.size(); ++i) {
    const SweepRun run = ExpandRun(sweep, static_cast<int64_t>(i));
    ASSERT_TRUE(run.error.empty()) << run.error;
    ASSERT_EQ(run.key, all->evaluate[i].run_key);
    auto summary = RunScenario(run.scenario);
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    int64_t peak = 0;
    for (const StageRecord& st : summary->stages) peak = std::max(peak, st.peak_memory_bytes);
    EXPECT_LE(all->evaluate[i].memory_bound_bytes, peak) << run.key;
    if (summary->oom) oom.insert(run.key);
    RunRecord r;
    r.run_key = run.key;
    r.summary = *summary;
    records.push_back(std::move(r));
  }
  for (const TuneCandidate& c : pruned->pruned) EXPECT_TRUE(oom.count(c.run_key)) << c.run_key;
  const TuneResult a = RankTune(*space, *all, records), b = RankTune(*space, *pruned, records);
  ASSERT_FALSE(a.ranked.empty());
  ASSERT_EQ(a.ranked.size(), b.ranked.size());
  for (size_t i = 0; i < a.ranked.size(); ++i)
    EXPECT_EQ(a.ranked[i].candidate->run_key, b.ranked[i].candidate->run_key);
  ASSERT_EQ(a.pareto.size(), b.pareto.size());
  for (size_t i = 0; i < a.pareto.size(); ++i)
    EXPECT_EQ(a.pareto[i].candidate->run_key, b.pareto[i].candidate->run_key);
  EXPECT_EQ(b.missing, 0);
}

// Frozen parameters keep only their weights: the bound lets the heaviest rank hold them (LLaVA-1.5-7B stage 1,
// only the 21M-parameter projector trained: counting all 7B as trained would put the bound above the real peak).
TEST(TuneBoundTest, FrozenComponentsKeepTheBoundBelowThePeak) {
  auto s = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/llava/llava-1.5-7b-pretrain.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message();
  s->iterations = 2;
  auto bound = MemoryLowerBoundBytes(*s);
  ASSERT_TRUE(bound.ok()) << bound.error().message();
  auto summary = RunScenario(*s);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_LE(*bound, summary->stages.at(0).peak_memory_bytes);
  Scenario trained = *s;
  trained.frozen.clear();
  auto trained_bound = MemoryLowerBoundBytes(trained);
  ASSERT_TRUE(trained_bound.ok());
  EXPECT_GT(*trained_bound, summary->stages.at(0).peak_memory_bytes);  // what the bound was without frozen
}

// Five synthetic results (GPU-days, peak GiB): A (1.0, 60), B (0.8, 70), C (0.9, 50), D (0.8, 75: ties B, more
// memory), E (0.7, 80, over a 76 GiB limit). Ranked: B, D, C, A (E does not fit); Pareto by memory: C (0.9, 50),
// B (0.8, 70); A is beaten by C on both.
TEST(TuneRankTest, RankingAndParetoFrontByHand) {
  auto space = Space(Dir(), "gpus: 8\nconstraints: {memory_headroom: 0.05}\n");
  ASSERT_TRUE(space.ok()) << space.error().message();
  TuneEnumeration e;
  const double days[] = {1.0, 0.8, 0.9, 0.8, 0.7};
  const double gib[] = {60, 70, 50, 75, 80};
  std::vector<RunRecord> records;
  for (int i = 0; i < 5; ++i) {
    TuneCandidate c;
    c.index = i;
    c.gpus = 8;
    c.run_key = std::string(1, static_cast<char>('A' + i));
    c.memory_limit_bytes = static_cast<int64_t>(80.0 * (1 << 30) * 0.95);
    e.evaluate.push_back(c);
    RunRecord r;
    r.run_key = c.run_key;
    RunSummary s;
    s.gpu_days = days[i];
    StageRecord st;
    st.peak_memory_bytes = static_cast<int64_t>(gib[i] * (1 << 30));
    s.stages.push_back(st);
    r.summary = s;
    records.push_back(r);
  }
  const TuneResult r = RankTune(*space, e, records);
  std::string ranked, pareto;
  for (const TuneRow& x : r.ranked) ranked += x.candidate->run_key;
  for (const TuneRow& x : r.pareto) pareto += x.candidate->run_key;
  EXPECT_EQ(ranked, "BDCA");
  EXPECT_EQ(pareto, "CB");
  ASSERT_EQ(r.infeasible.size(), 1u);
  EXPECT_EQ(r.infeasible[0].candidate->run_key, "E");
  EXPECT_EQ(r.runner_up, 2);  // D ties B; C is the first strictly worse
  EXPECT_NE(r.why.find("(1 more tie with the best)"), std::string::npos) << r.why;
  // Ties go by enumeration index, not by the evaluation order: the same candidates evaluated in reverse.
  std::reverse(e.evaluate.begin(), e.evaluate.end());
  std::string reversed;
  for (const TuneRow& x : RankTune(*space, e, records).ranked) reversed += x.candidate->run_key;
  EXPECT_EQ(reversed, "BDCA");
}

// The evaluation order groups the candidates that share a data plan (PreparedDataKey: here dp, set by tp, and
// the data policy, the innermost axes but one), enumeration order within a group, so a sweep prepares each
// plan once; every candidate is still there once, run i of the evaluation sweep is candidate i, and the index
// is the enumeration position.
TEST(TuneEnumerationTest, CandidatesSharingADataPlanAreEvaluatedTogether) {
  auto space = Space(Dir(),
                     "gpus: 8\naxes:\n  - {key: parallel.tp, values: [1, 2]}\n"
                     "  - {key: policies.data, values: [random, isf]}\n"
                     "  - {key: policies.schedule, values: [1f1b, gpipe]}\n");
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto e = EnumerateTune(*space, false);
  ASSERT_TRUE(e.ok()) << e.error().message();
  ASSERT_EQ(e->evaluate.size(), 8u);
  std::vector<int64_t> index;
  for (const TuneCandidate& c : e->evaluate) index.push_back(c.index);
  // Enumeration: tp 1 {random 1f1b, random gpipe, isf 1f1b, isf gpipe}, tp 2 {...}: already grouped.
  EXPECT_EQ(index, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // With the schedule outside the data policy the enumeration alternates the plans; the evaluation does not.
  auto swapped = Space(Dir(),
                       "gpus: 8\naxes:\n  - {key: parallel.tp, values: [1, 2]}\n"
                       "  - {key: policies.schedule, values: [1f1b, gpipe]}\n"
                       "  - {key: policies.data, values: [random, isf]}\n");
  ASSERT_TRUE(swapped.ok()) << swapped.error().message();
  auto f = EnumerateTune(*swapped, false);
  ASSERT_TRUE(f.ok()) << f.error().message();
  index.clear();
  for (const TuneCandidate& c : f->evaluate) index.push_back(c.index);
  EXPECT_EQ(index, (std::vector<int64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  const SweepSpec sweep = EvaluationSweep(*swapped, *f);
  for (size_t i = 0; i < f->evaluate.size(); ++i) {
    const SweepRun run = ExpandRun(sweep, static_cast<int64_t>(i));
    ASSERT_TRUE(run.error.empty()) << run.error;
    EXPECT_EQ(run.key, f->evaluate[i].run_key);
    EXPECT_EQ(run.scenario.data.name, f->evaluate[i].values[2]);
  }
}

// Acceptance 1 of issue 30 with the time bound on: a space of 288 combinations searched by EvaluateTune (waves,
// skipping what cannot beat the runs evaluated) against every candidate simulated. Every bound is valid (no
// better than the candidate's simulated objective), some candidates are skipped, and the best, the runner-up,
// the first `keep` rows and the Pareto front are the exhaustive search's.
TEST(TuneBoundTest, TheTimeBoundIsValidAndSkippingLosesNothing) {
  auto space = Space(Dir(),
                     "gpus: [4, 8]\naxes:\n  - {key: parallel.tp, values: [1, 2, 4]}\n"
                     "  - {key: parallel.pp, values: [1, 2, 4]}\n"
                     "  - {key: parallel.micro_batches, values: [2, 4]}\n"
                     "  - {key: parallel.zero_stage, values: [1, 2]}\n"
                     "  - {key: policies.schedule, values: [1f1b, gpipe]}\n"
                     "  - {key: policies.data, values: [random, isf]}\n");
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto e = EnumerateTune(*space, true);
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->combinations, 288);
  const TuneEnumeration all = *e;
  // Exhaustive: every candidate simulated in this process.
  const SweepSpec sweep = EvaluationSweep(*space, all);
  std::vector<RunRecord> exhaustive;
  std::map<std::string, double> objective;
  for (size_t i = 0; i < all.evaluate.size(); ++i) {
    const SweepRun run = ExpandRun(sweep, static_cast<int64_t>(i));
    ASSERT_TRUE(run.error.empty()) << run.error;
    auto summary = RunScenario(run.scenario);
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    objective[run.key] = TuneObjectiveOf(space->objective, *summary);
    RunRecord r;
    r.run_key = run.key;
    r.summary = *summary;
    exhaustive.push_back(std::move(r));
  }
  const TuneResult a = RankTune(*space, all, exhaustive);
  // The search, in a fresh database of its own.
  for (const char* f : {"t.sqlite", "t.sqlite-wal", "t.sqlite-shm"}) fs::remove(Dir() / f);
  auto db = ResultsDb::Open((Dir() / "t.sqlite").string());
  ASSERT_TRUE(db.ok()) << db.error().message();
  TuneEvaluateOptions o;
  o.sweep.jobs = 2;
  o.keep = 3;
  auto ev = EvaluateTune(*space, *e, **db, o);
  ASSERT_TRUE(ev.ok()) << ev.error().message();
  EXPECT_FALSE(ev->interrupted);
  EXPECT_EQ(ev->bounded, static_cast<int64_t>(all.evaluate.size()));
  EXPECT_EQ(e->evaluate.size() + e->time_pruned.size(), all.evaluate.size());
  EXPECT_FALSE(e->time_pruned.empty());
  EXPECT_EQ(ev->outcome.executed, static_cast<int>(e->evaluate.size()));
  for (const TuneCandidate& c : e->evaluate) {
    ASSERT_TRUE(std::isfinite(c.time_bound)) << c.run_key;
    EXPECT_LE(c.time_bound, objective.at(c.run_key)) << c.run_key;
  }
  for (const TuneCandidate& c : e->time_pruned) EXPECT_LE(c.time_bound, objective.at(c.run_key)) << c.run_key;
  const TuneResult b = RankTune(*space, *e, ev->records);
  EXPECT_EQ(b.missing, 0);
  ASSERT_GE(a.ranked.size(), 3u);
  ASSERT_GE(b.ranked.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(a.ranked[i].candidate->run_key, b.ranked[i].candidate->run_key) << i;
  ASSERT_GE(a.runner_up, 0);
  ASSERT_EQ(a.runner_up, b.runner_up);
  EXPECT_EQ(a.why, b.why);
  ASSERT_EQ(a.pareto.size(), b.pareto.size());
  for (size_t i = 0; i < a.pareto.size(); ++i)
    EXPECT_EQ(a.pareto[i].candidate->run_key, b.pareto[i].candidate->run_key) << i;
  std::printf("%zu candidates: %zu evaluated, %zu skipped by the time bound, %d waves\n", all.evaluate.size(),
              e->evaluate.size(), e->time_pruned.size(), ev->waves);
}

}  // namespace
}  // namespace mmtwin

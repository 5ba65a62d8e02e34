// SPDX-License-Identifier: Apache-2.0
// Data-aware configuration search (`mmtwin tune`, issue 30): which parallel layout and policies, for this dataset,
// model and cluster. A tune space is a sweep file (sweep/sweep.h: name, description, base, iterations, axes; the
// axes always combined, cartesian) plus what a search needs:
//
//   name: default-16gpu
//   base: ../default.yaml
//   gpus: [16]                       # GPU counts to try; each candidate's dp = gpus / (tp x pp x sp)
//   axes:
//     - {key: parallel.tp, values: [1, 2, 4, 8]}
//     - {key: parallel.pp, values: [1, 2, 4]}
//     - {key: policies.recompute, values: [none, adaptive, full]}
//   constraints: {memory_headroom: 0.05}   # keep 5% of every GPU's memory free (default 0); and optionally
//                                          # micro_batches_per_step: 128, the global batch kept: each candidate
//                                          # gets micro_batches = 128 / dp (no micro_batches axis then)
//   objective: gpu_days              # gpu_days (default) | tokens_per_s | iteration_time
//
// The search: every combination of gpus and axis values is a candidate; those whose dp is not a whole number,
// whose scenario does not validate, or whose tp does not divide the LLM's heads or the GPUs per node (what
// Megatron-LM refuses and no recipe runs, although mmtwin prices it) are rejected with the reason (counted by
// reason, not errors); a proven memory
// lower bound (MemoryLowerBoundBytes) rules out the ones that cannot fit before they are planned; the rest are
// evaluated as one sweep (RunSweep: worker processes, SQLite, resumable, shardable), in waves that skip the
// candidates whose time lower bound (driver/time_bound.h, from each data plan's per-layer costs) cannot beat the
// runs already evaluated (EvaluateTune), and ranked. Pure: the same space gives the same candidates, bounds and,
// through the simulator, the same ranking.
//
//   MMTWIN_ASSIGN_OR_RETURN(TuneSpace space, LoadTuneSpace("scenarios/tune/default-16gpu.yaml"));
//   MMTWIN_ASSIGN_OR_RETURN(TuneEnumeration e, EnumerateTune(space, /*prune=*/true));
//   MMTWIN_ASSIGN_OR_RETURN(TuneEvaluation ev, EvaluateTune(space, e, *db, {}));  // e.time_pruned: skipped
//   TuneResult r = RankTune(space, e, ev.records);          // ranked, Pareto front, best and runner-up
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/records/records.h"
#include "core/util/status.h"
#include "sweep/results_db.h"
#include "sweep/runner.h"
#include "sweep/sweep.h"

namespace mmtwin {

enum class TuneObjective { kGpuDays, kTokensPerS, kIterationTime };
const char* TuneObjectiveName(TuneObjective o);

struct TuneSpace {
  SweepSpec sweep;             // base, axes (cartesian), iterations; name and description
  std::vector<int64_t> gpus;   // world sizes tried, ascending, distinct
  double memory_headroom = 0;  // fraction of each GPU's memory that must stay free, [0, 0.9]
  // dp x micro_batches of every candidate (the global batch kept, as the data policy's micro-batch is one size);
  // 0 = micro_batches from the base or an axis, so the global batch varies with dp.
  int64_t micro_batches_per_step = 0;
  TuneObjective objective = TuneObjective::kGpuDays;
};

// Errors name `file:line: field` (the sweep format's own, plus gpus, constraints, objective); a space with an
// axis on parallel.dp (derived) or mode zip is refused.
Result<TuneSpace> LoadTuneSpace(const std::string& path);
Result<TuneSpace> ParseTuneSpace(const std::string& yaml_text, const std::string& name,
                                 const std::string& base_dir);

struct TuneCandidate {
  int64_t index = 0;  // its place in the enumeration (gpus, then the axes, last axis fastest)
  int64_t gpus = 0;
  int64_t dp = 0;
  int64_t micro_batches = 0;        // derived from constraints.micro_batches_per_step; 0 = the axis or base's
  std::vector<std::string> values;  // one per axis of the space, as YAML text
  std::vector<std::string> labels;  // one per axis, as tables show them
  std::string run_key;              // its run key in the results database (sweep/sweep.h PortableRunKey)
  int64_t memory_bound_bytes = 0;   // MemoryLowerBoundBytes
  int64_t memory_limit_bytes = 0;   // device memory x (1 - headroom)
  // EvaluateTune's time bound in the objective's unit (driver/time_bound.h): no better than the candidate's
  // simulated objective (a lower bound on GPU-days or iteration time, an upper one on tokens/s); NaN = none.
  double time_bound = std::numeric_limits<double>::quiet_NaN();
  int64_t data_group = 0;  // candidates with one PreparedDataKey share it (numbered in order of appearance)
};

struct TuneEnumeration {
  int64_t combinations = 0;  // gpus x the axes' product
  // Valid and not ruled out: to be simulated, in evaluation order: the candidates that share a data plan
  // (driver/planner.h PreparedDataKey: the same dp, data policy, ...) consecutive, so that a sweep prepares each
  // plan once; enumeration order within a group and between the groups' first members.
  std::vector<TuneCandidate> evaluate;
  std::vector<TuneCandidate> pruned;        // valid, ruled out by the memory bound
  // Valid and skipped by EvaluateTune: their time bound cannot beat what was evaluated (below); in skip order.
  std::vector<TuneCandidate> time_pruned;
  std::map<std::string, int64_t> rejected;  // reason -> candidates (not a whole dp; the scenario checker's
                                            // message with numbers written N)
};

// A lower bound on the worst pipeline stage's planned peak memory (core/plan/memory.h), bytes: the model states
// of ceil(P / pp) parameters (P = the model's layer parameters: some rank holds at least that many) under the
// scenario's tp, dp x sp, ZeRO stage and optimizer precision, plus the CUDA context every GPU holds. The planned
// peak adds activations, buffers, transients and the rest of the runtime, never less.
Result<int64_t> MemoryLowerBoundBytes(const Scenario& scenario);

// Every candidate of the space: rejected with its reason, pruned (prune = true and its bound above its limit), or
// kept for evaluation. Errors only for a base scenario that does not load.
Result<TuneEnumeration> EnumerateTune(const TuneSpace& space, bool prune);

// The sweep that evaluates e.evaluate: the space's base, zip axes (each tuned key, then parallel.dp, cluster.nodes
// = 0, automatic, and parallel.micro_batches when derived), run i = candidate i. Its name is the space's.
SweepSpec EvaluationSweep(const TuneSpace& space, const TuneEnumeration& e);

// Evaluates e.evaluate into `db` as the sweep EvaluationSweep(space, e) (run i = candidate i, resumable and
// shardable like any sweep), and returns the sweep's records. With `time_prune` it first prepares each data plan
// once and bounds every candidate's objective (IterationTimeLowerBound, driver/time_bound.h), then evaluates the
// data groups best bound first, each best bound first, in waves of TuneWaveSize runs; before every wave it skips
// (moves from e.evaluate to e.time_pruned) each candidate that cannot change what RankTune shows, as proven by the
// runs evaluated so far (this invocation's and the database's):
//   - `keep` fitting runs beat its bound strictly, not all tied (so the best `keep` rows, the runner-up among
//     them, are exact), and
//   - one fitting run beats its bound and peaks below its memory bound (so it is not on the Pareto front, and
//     nothing it would hide from the front is on it).
// The best, the Pareto front and the top `keep` rows are then those of an exhaustive evaluation; the other rows
// of the ranking are the evaluated ones. The order is fixed and a wave holds TuneWaveSize(jobs) runs: up to
// 16 jobs, the same space and database skip the same candidates whatever --jobs is.
struct TuneEvaluateOptions {
  SweepRunOptions sweep;  // jobs, shard, cancel; its progress counts over all waves (done, total left)
  bool time_prune = true;
  int keep = 10;  // at least 2
};
struct TuneEvaluation {
  SweepOutcome outcome;  // summed over the waves (in_shard, expanded: the last wave's)
  std::vector<RunRecord> records;
  int64_t bounded = 0;  // candidates with a time bound
  int waves = 0;
  int prepared = 0;          // data plans prepared for the bounds
  double bound_seconds = 0;  // wall time of preparing them and bounding
  bool interrupted = false;
};
// Runs per wave: 32, or 2 x jobs with more than 16 jobs (so that the workers stay busy).
inline int TuneWaveSize(int jobs) { return jobs > 16 ? 2 * jobs : 32; }
Result<TuneEvaluation> EvaluateTune(const TuneSpace& space, TuneEnumeration& e, ResultsDb& db,
                                    const TuneEvaluateOptions& options);

struct TuneRow {
  const TuneCandidate* candidate = nullptr;
  RunSummary summary;
  double objective = 0;           // in the objective's unit (GPU-days, tokens/s, ms)
  int64_t peak_memory_bytes = 0;  // the worst stage's planned peak
  bool fits = false;              // no OOM and every stage within the memory limit
};

struct TuneResult {
  std::vector<TuneRow> ranked;      // fitting runs, best first (ties: fewer GPUs, then TuneCandidate::index)
  std::vector<TuneRow> pareto;      // fitting runs no other beats on both the objective and peak memory, by
                                    // ascending peak memory
  std::vector<TuneRow> infeasible;  // evaluated but out of memory or over the headroom
  int64_t missing = 0;              // candidates without an ok record (errors, or another shard's)
  // The runner-up: the first ranked row strictly worse than the best (rows that tie with it are not one); -1
  // when there is none. `why`: what separates the two, their time split and peak memory ("" without one).
  int runner_up = -1;
  std::string why;
};

// Ranks the evaluated candidates from their records (matched by run key).
TuneResult RankTune(const TuneSpace& space, const TuneEnumeration& e, const std::vector<RunRecord>& records);

// The re-check of the best configurations with another engine (`mmtwin tune --recheck K`: SimGrid's shared links
// and real rings, where the analytic engine prices each transfer alone): a zip sweep named NAME-ENGINE over the
// candidates of `rows` with `engine` set, run like the evaluation. RecheckObjectives reads back, per row, the
// objective it gave (NaN where no ok record is found).
SweepSpec RecheckSweep(const TuneSpace& space, const std::vector<TuneRow>& rows, const std::string& engine);
std::vector<double> RecheckObjectives(const TuneSpace& space, const SweepSpec& recheck,
                                      const std::vector<RunRecord>& records);
// How a candidate is written in tables, plots and messages (the CLI, the tune report, the GUI):
// TuneCandidateLabel "gpus=16, dp=2, micro_batches=8, tp=4, pp=2, recompute=adaptive" (micro_batches only when
// derived from constraints.micro_batches_per_step), TuneAxesLabel its axis values alone ("tp=4, pp=2,
// recompute=adaptive"), each axis by its name and the value's label.
std::string TuneCandidateLabel(const TuneSpace& space, const TuneCandidate& c);
std::string TuneAxesLabel(const TuneSpace& space, const TuneCandidate& c);

// The objective of a run summary, in the objective's unit.
double TuneObjectiveOf(TuneObjective o, const RunSummary& s);

// Whether `a` is better than `b` on the objective (strictly).
bool TuneBetter(TuneObjective o, double a, double b);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Runs a sweep's runs on worker processes and records each result in the results database as soon as it
// finishes. One forked process per run (at most `jobs` at a time): a run that crashes, aborts or returns an
// error is recorded with status 'error' and its message, and the sweep goes on. Only this (parent) process
// writes the database, one transaction per run. Runs whose key is already recorded with status ok are
// skipped (resume); runs recorded with status error are retried.
//
//   SweepRunOptions o;
//   o.jobs = 2;
//   o.progress = [](const SweepProgress& p) { std::cerr << p.done << "/" << p.total << "\n"; };
//   MMTWIN_ASSIGN_OR_RETURN(SweepOutcome r, RunSweep(spec, runs, *db, o));
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "driver/planner.h"
#include "core/records/records.h"
#include "core/scenario/scenario.h"
#include "sweep/results_db.h"
#include "sweep/sweep.h"
#include "core/util/status.h"

namespace mmtwin {

// Evaluates one scenario and returns its summary. This is the single place where a sweep runs a scenario:
// Simulate() with the driver's evaluator for scenario.engine (driver/driver.h; an engine this build
// lacks is an error naming it).
// `prepared`: the scenario's trace and data plan when already made (PrepareData); may be null.
Result<RunSummary> RunScenario(const Scenario& scenario, const EngineOptions& engine = {},
                               std::shared_ptr<const PreparedData> prepared = nullptr);
using RunFunction = std::function<Result<RunSummary>(const Scenario&)>;

// Slurm-style sharding: run `index` belongs to shard index % shards.
inline bool InShard(int index, int shard, int shards) { return shards <= 1 || index % shards == shard; }
// "i/N" with 0 <= i < N.
Status ParseShard(const std::string& text, int& shard, int& shards);

struct SweepProgress {
  int done = 0;   // runs finished in this invocation (ok or error)
  int total = 0;  // runs to execute in this invocation
  int errors = 0;
  double elapsed_seconds = 0;
  double eta_seconds = 0;             // remaining, from the mean pace so far
  const SweepRun* run = nullptr;      // the run that just finished
  const RunRecord* record = nullptr;  // its record
};

struct SweepRunOptions {
  int jobs = 1;  // worker processes
  // With the default run function: this (parent) process prepares the trace and data plan (PrepareData) once
  // for consecutive runs with the same PreparedDataKey and the forked workers share it, instead of every
  // worker regenerating it. false: every worker prepares its own (the results are the same).
  bool share_prepared = true;
  int shard = 0;
  int shards = 1;
  // Only the runs whose index it accepts (with the shard's): the others are left out of this invocation as if
  // they belonged to another shard (not expanded, run, recorded or counted). Empty = every run. `mmtwin tune`
  // runs one sweep in waves this way, so that the run indices (and resume by index) stay the sweep's.
  std::function<bool(int64_t index)> include;
  // A preparation the caller already made (PrepareData): the parent uses it, instead of preparing again, for
  // the runs whose PreparedDataKey is its key (with share_prepared and the default run function).
  std::shared_ptr<const PreparedData> prepared;
  RunFunction run;      // empty = RunScenario (tests inject others)
  std::string session;  // stored with each record; empty = host:pid:start time
  // Stop after this many runs finished in this invocation (killing the workers still running), as if the
  // process had been interrupted; 0 = never. For resume tests (MMTWIN_SWEEP_STOP_AFTER in the CLI).
  int stop_after = 0;
  // Polled between runs and while waiting for workers (at least once a second; a signal wakes the wait): when
  // it becomes true the workers still running are killed, their runs are not recorded, and RunSweep returns
  // with `interrupted` set. The runs recorded so far stay; the next invocation resumes. The CLI passes
  // InterruptFlag() (core/util/interrupt.h). Workers run in their own process group, so a Ctrl-C at the
  // terminal reaches only this process, which then stops them.
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const SweepProgress&)> progress;
};

struct SweepOutcome {
  int in_shard = 0;  // distinct runs of this shard (when stopped early: minus the duplicates found so far)
  int64_t expanded = 0;  // runs expanded (ExpandRun) in this invocation: the ones executed, found done by key
                         // or duplicate, and at most one look-ahead; not the ones skipped by index
  int skipped = 0;       // already in the database with status ok
  int executed = 0;      // run (or recorded as invalid) in this invocation
  int errors = 0;        // of the executed
  bool stopped = false;  // stop_after was reached
  bool interrupted = false;  // `cancel` became true
  // Shared preparation (SweepRunOptions::share_prepared): how many times the parent prepared a trace and data
  // plan, the wall seconds it spent, and how many executed runs started from a shared one.
  int prepared = 0;
  double prepare_seconds = 0;
  int shared_runs = 0;
  double run_seconds =
      0;  // wall seconds of the executed runs' workers, summed (per-run overhead: / executed)
};

// Runs the sweep's runs, expanding each (ExpandRun) only when a worker is free for it: the first run starts at
// once and memory holds only the runs in flight, whatever the sweep's size. On resume, runs recorded ok under the
// same SweepDigest are skipped by index without being expanded; the others are expanded and skipped when their
// key is recorded ok. Progress totals count the runs left as far as known (they drop as done runs are found).
Result<SweepOutcome> RunSweep(const SweepSpec& spec, ResultsDb& db, const SweepRunOptions& options);
// The same over runs the caller expanded (tests inject runs; runs[i].index must be i).
Result<SweepOutcome> RunSweep(const SweepSpec& spec, const std::vector<SweepRun>& runs, ResultsDb& db,
                              const SweepRunOptions& options);

// A default session id: "host:pid:unix time".
std::string DefaultSession();

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Subcommands of the `mmtwin` CLI. The command tree, options, help and the first checks are declared once with
// CLI11 in cli/app.cc (the only translation unit that includes CLI11); it fills one of these argument structs
// and calls the command's Run function, which checks values and runs it. Each returns the process exit code:
// 0 success, 1 a check failed (e.g. a plan that does not fit), 2 bad input (message on `err`).
//
// Option values arrive as text (CLI11 validators from the registries have already checked names); the Run
// functions convert and range-check them with messages that name the option (`--jobs: '0' is not in [1,
// 1024]`). `given(...)` flags record whether an option appeared.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace mmtwin::cli {

// mmtwin trace import|gen|stats      (sim/cli/trace_cmd.cc)
struct TraceImportArgs {
  std::string format, input, output, tiles_per_image, subset;
  std::vector<std::string> maps;  // TRACE_FIELD=SOURCE_COLUMN
  bool tiles_given = false, subset_given = false;
  double fps = 1.0;        // csv: frames per second of a mapped video_seconds column
  int64_t max_frames = 0;  // csv: frame cap per clip (0 = none)
  bool fps_given = false, max_frames_given = false;
  bool json = false;  // print {"output", "samples", "format", "input"} instead of the "wrote" line
};
struct TraceGenArgs {
  std::string preset, samples, seed, output;
  bool list = false, samples_given = false, seed_given = false;
  bool json = false;  // print {"output", "samples", "preset", "seed"} (with --list: the presets) as JSON
};
struct TraceStatsArgs {
  std::string trace, model, bins;
  bool json = false, bins_given = false;
};
int RunTraceImport(const TraceImportArgs& a, std::ostream& out, std::ostream& err);
int RunTraceGen(const TraceGenArgs& a, std::ostream& out, std::ostream& err);
int RunTraceStats(const TraceStatsArgs& a, std::ostream& out, std::ostream& err);

// mmtwin balance                     (sim/cli/balance_cmd.cc)
struct BalanceArgs {
  std::string trace, model, cluster, dp, seed, ranks_per_node;
  std::vector<std::string> policies;  // --policy (repeatable) and the --compare list
  std::vector<std::string> params;    // k=v
  bool compare = false, json = false, dp_given = false, seed_given = false, ranks_given = false;
};
int RunBalance(const BalanceArgs& a, std::ostream& out, std::ostream& err);

// mmtwin plan SCENARIO [--json]      (sim/cli/plan_cmd.cc)
struct PlanArgs {
  std::string scenario;
  bool json = false;
  bool memory = false;                   // --memory: every term of each stage's peak (WritePlanMemory)
  bool max_seq = false;                  // --max-seq: longest sequence per SP method (driver/max_seq.h)
  int64_t step_tokens = 1024;            // --step-tokens: its granularity
  std::vector<std::string> sp_policies;  // --sp-policy (repeatable): only these methods
};
int RunPlan(const PlanArgs& a, std::ostream& out, std::ostream& err);

// mmtwin simulate SCENARIO ...       (sim/cli/simulate_cmd.cc)
struct SimulateArgs {
  std::string scenario, engine, rundir, contention = "on", trace_iteration;
  std::string trace_replicas;  // --trace-replicas: DP replicas trace.json draws (0 = all; default 4)
  bool trace_replicas_given = false;
  std::string cost;  // --cost: "analytic" or a cost-coefficient CSV (overrides the scenario's `cost:`)
  bool json = false, trace_iteration_given = false;
  bool progress = false;  // --progress: "progress F" lines on stderr (for a parent process such as the GUI)
};
int RunSimulate(const SimulateArgs& a, std::ostream& out, std::ostream& err);

// mmtwin tune SPACE.yaml ...          (sim/cli/tune_cmd.cc; sim/tune/tune.h)
struct TuneArgs {
  std::string space, output, db, jobs, shard, top, recheck;
  bool jobs_given = false, shard_given = false, top_given = false, recheck_given = false;
  bool no_prune = false;  // --no-prune: evaluate every valid candidate (the memory bound rules nothing out)
  bool dry_run = false;   // list the candidates to evaluate, run nothing
  bool json = false;      // one JSON object on stdout (counts and the ranked top K), text on stderr
};
int RunTune(const TuneArgs& a, std::ostream& out, std::ostream& err);

// mmtwin calibrate RUNDIR... -o PROFILE [--cluster-out CLUSTER.yaml]   (sim/cli/calibrate_cmd.cc)
struct CalibrateArgs {
  std::vector<std::string> runs;
  std::vector<std::string> link_runs;  // --links: folders used only for the link fit (ping-pong runs)
  std::string output, min_samples, cluster_out;
  bool min_samples_given = false;
  bool json = false;  // the fits as JSON (CalibrationJson) plus what was written, instead of the tables
};
int RunCalibrate(const CalibrateArgs& a, std::ostream& out, std::ostream& err);

// mmtwin validate SUITE.yaml -o OUTDIR   (sim/cli/validate_cmd.cc)
struct ValidateArgs {
  std::string suite, output, runs, train, machine;
  bool reuse = false;
  double run_timeout_s = 3600;  // --run-timeout: one backend run's wall-clock limit
  bool json = false;            // print the figures the report's summary holds as JSON
};
int RunValidate(const ValidateArgs& a, std::ostream& out, std::ostream& err);

// mmtwin sweep SWEEP.yaml | sweep merge | sweep export | sweep table   (sim/cli/sweep_cmd.cc)
struct SweepRunArgs {
  std::string sweep, jobs, shard, db, csv;
  bool dry_run = false, jobs_given = false, shard_given = false;
  bool no_share = false;  // --no-share: every worker prepares its own trace and data plan
  bool json = false;      // --json: one JSON object at the end (the table's rows), nothing else on stdout
};
struct SweepMergeArgs {
  std::string output;
  std::vector<std::string> inputs;
  bool json = false;
};
struct SweepExportArgs {
  std::string db, output;
};
struct SweepTableArgs {
  std::string db, sweep;
  bool json = false;
};
int RunSweep(const SweepRunArgs& a, std::ostream& out, std::ostream& err);
int RunSweepMerge(const SweepMergeArgs& a, std::ostream& out, std::ostream& err);
int RunSweepExport(const SweepExportArgs& a, std::ostream& out, std::ostream& err);
int RunSweepTable(const SweepTableArgs& a, std::ostream& out, std::ostream& err);

// mmtwin compare RUN_A RUN_B [--json]  (sim/cli/compare_cmd.cc)
struct CompareArgs {
  std::vector<std::string> runs;
  bool json = false;
};
int RunCompare(const CompareArgs& a, std::ostream& out, std::ostream& err);

// mmtwin replay RUN [-o DIR] [--predict SCENARIO] [--json] [--measured-comm]  (sim/cli/replay_cmd.cc)
struct ReplayArgs {
  std::string run;
  std::string output;   // the ideal timeline's run folder ("" = none)
  std::string predict;  // a scenario of the same job to predict from the run ("" = none)
  bool json = false;
  bool measured_comm = false;
};
int RunReplay(const ReplayArgs& a, std::ostream& out, std::ostream& err);

// mmtwin export-chakra / replay-chakra    (sim/cli/chakra_cmd.cc)
struct ExportChakraArgs {
  std::string scenario, output, prefix = "mmtwin";
  int iteration = 0;  // the replayed iteration (0-based)
  bool json = false;
};
struct ReplayChakraArgs {
  std::string dir, prefix = "mmtwin";
  bool whole_micros = false, json = false;
};
struct ImportChakraArgs {
  std::string dir, scenario, output, prefix = "mmtwin";
};
int RunExportChakra(const ExportChakraArgs& a, std::ostream& out, std::ostream& err);
int RunImportChakra(const ImportChakraArgs& a, std::ostream& out, std::ostream& err);
int RunReplayChakra(const ReplayChakraArgs& a, std::ostream& out, std::ostream& err);

// mmtwin kernels TABLE.csv --cluster C [--fit] [-o DIR] [--json]     (sim/cli/kernels_cmd.cc)
struct KernelsArgs {
  std::string table;    // a kernel table (backend/gpu/kernel_sweep.py)
  std::string cluster;  // the preset (or cluster file) whose device curves are checked
  std::string output;   // report folder ("" = none)
  bool fit = false, json = false;
};
int RunKernels(const KernelsArgs& a, std::ostream& out, std::ostream& err);

// mmtwin import-timeline TRACE.json --scenario S -o RUNDIR [--map NAME=KIND]... [--map-file F] [--iteration N]
struct ImportTimelineArgs {
  std::vector<std::string> timelines;  // one trace-event JSON, or one PyTorch profiler trace per rank
  std::string scenario, output, map_file;
  std::vector<std::string> maps;
  int64_t iteration = -1;  // -1 = the plan's first replayed iteration
};
int RunImportTimeline(const ImportTimelineArgs& a, std::ostream& out, std::ostream& err);

// mmtwin models | clusters | policies  (sim/cli/list_cmd.cc)
int RunList(const std::string& what, bool json, std::ostream& out, std::ostream& err);

// The whole CLI (sim/cli/app.cc): parses argv with CLI11 and runs the subcommand.
int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace mmtwin::cli

// SPDX-License-Identifier: Apache-2.0
// The `mmtwin` command tree, declared once with CLI11: subcommands, options, generated help (`mmtwin --help`,
// `mmtwin SUBCOMMAND --help`), validators that take their valid values from the registries (engines, data
// policies, generator presets, trace formats). The only translation unit that includes CLI11. Parse errors
// exit 2 with `mmtwin SUBCOMMAND: problem` and the subcommand's usage, as every other bad input.
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/balance/data_policy.h"
#include "core/trace/generate.h"
#include "core/util/text.h"
#include "core/util/version.h"
#include "driver/driver.h"

namespace mmtwin::cli {
namespace {

constexpr const char* kDescription = "mmtwin - digital twin of multimodal LLM training";
constexpr const char* kExitCodes =
    "Exit codes: 0 ok, 1 a check failed (a plan that does not fit device memory), 2 bad input (the message "
    "names file, line and field).";

// Lower-case "usage:" lines, as the rest of mmtwin's messages.
std::shared_ptr<CLI::Formatter> MakeFormatter() {
  auto f = std::make_shared<CLI::Formatter>();
  f->label("Usage", "usage");
  f->column_width(34);
  return f;
}

// A validator whose valid values and message come from a registry lookup (`check` returns "" when valid).
CLI::Validator RegistryValidator(std::string what, std::string names,
                                 std::function<std::string(const std::string&)> check) {
  CLI::Validator v([check](std::string& value) { return check(value); }, what + " in {" + names + "}", what);
  return v;
}

std::string EngineNames() {
  std::vector<std::string> names;
  for (const EngineInfo& e : Engines()) names.push_back(e.name);
  return Join(names);
}

std::string PresetNames() {
  std::vector<std::string> names;
  for (const GeneratorPreset& g : GeneratorPresets()) names.push_back(g.name);
  return Join(names);
}

std::string DataPolicyNames() { return DataPolicyRegistry().Names(); }

// "simulate", "trace import": the words of a subcommand's path below `mmtwin`.
std::string PathOf(const CLI::App* app) {
  std::vector<std::string> parts;
  for (const CLI::App* a = app; a && a->get_parent(); a = a->get_parent())
    parts.insert(parts.begin(), a->get_name());
  return Join(parts, " ");
}

// The generated help of a subcommand, with its full path in the usage line ("usage: mmtwin trace import ...").
std::string HelpOf(const CLI::App* sub) {
  if (!sub->get_parent()) return sub->help();
  const std::string parent = PathOf(sub->get_parent());
  return sub->help(parent.empty() ? "mmtwin" : "mmtwin " + parent);
}

// `mmtwin SUB: problem` + SUB's usage line (two lines in all: the full option list is one --help away), exit 2.
int Usage(const CLI::App* sub, const std::string& path, const std::string& problem, std::ostream& err) {
  const std::string help = HelpOf(sub);
  size_t at = help.find("usage:");
  std::string usage = at == std::string::npos ? "" : help.substr(at, help.find('\n', at) - at);
  while (!usage.empty() && usage.back() == ' ') usage.pop_back();
  err << "mmtwin " << path << ": " << problem << "\n"
      << (usage.empty() ? "" : usage + "  ('mmtwin " + path + " --help' lists the options)\n");
  return 2;
}

// CLI11's messages, in mmtwin's words where a test or a user relies on them. `last` is the last argument
// (an option given without its value is named as the user spelled it).
std::string Problem(const CLI::ParseError& e, const std::string& last) {
  const std::string m = e.what();
  static const std::regex missing_value(R"(^(\S+): \d+ required \S+ missing$)");
  std::smatch match;
  if (std::regex_search(m, match, missing_value))
    return "option " + (last.size() > 1 && last[0] == '-' ? last : match[1].str()) + " needs a value";
  return m;
}

// Extras: an unknown option, or a positional the command does not take (0: none).
int Extras(const CLI::App* sub, std::ostream& err) {
  for (const std::string& x : sub->remaining())
    if (x.size() > 1 && x[0] == '-') return Usage(sub, PathOf(sub), "unknown option '" + x + "'", err);
  if (!sub->remaining().empty())
    return Usage(sub, PathOf(sub), "unexpected argument '" + sub->remaining().front() + "'", err);
  return 0;
}

// A command of the tree: its subcommand and its action, run when the subcommand was parsed (exit code). Each
// Add* function below declares one command (its options bound to an argument struct the action owns) and its
// action, which refuses extras and missing values as the command's usage errors and calls the command's Run*
// (cli/commands.h). The order of the Add* calls is the order of `mmtwin --help`.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command AddTraceImport(CLI::App* trace, std::ostream& out, std::ostream& err) {
  auto imp = std::make_shared<TraceImportArgs>();
  CLI::App* import = trace->add_subcommand("import", "convert a dataset into a trace (mmtwin-trace v1 CSV)");
  CLI::Option* format =
      import->add_option("--format", imp->format, "input format")
          ->check(
              RegistryValidator("FORMAT", "llava, librispeech, csv", [](const std::string& v) -> std::string {
                if (v == "llava" || v == "librispeech" || v == "csv") return "";
                return "unknown format '" + v + "'; valid values are: llava, librispeech, csv";
              }));
  import->add_option("IN", imp->input, "input file (LLaVA JSON/JSONL, LibriSpeech durations CSV, any CSV)");
  CLI::Option* imp_out = import->add_option("-o,--output", imp->output, "output trace CSV");
  import
      ->add_option("--map", imp->maps,
                   "csv only: TRACE_FIELD=SOURCE_COLUMN (fields: sample_id, subset, images, image_tiles, "
                   "video_frames, audio_seconds, text_tokens, meta; or video_seconds, a clip duration turned "
                   "into frames by --fps and --max-frames); repeatable")
      ->allow_extra_args(false);  // one value per --map, so the input file may follow it
  CLI::Option* fps = import->add_option(
      "--fps", imp->fps, "csv only: frames sampled per second of a video_seconds column (default 1)");
  fps->check(CLI::Range(1e-6, 1e6));
  CLI::Option* max_frames = import->add_option("--max-frames", imp->max_frames,
                                               "csv only: at most this many frames per clip (0 = no cap)");
  max_frames->check(CLI::Range(int64_t{0}, int64_t{1} << 31));
  CLI::Option* tiles = import
                           ->add_option("--tiles-per-image", imp->tiles_per_image,
                                        "llava only: vision tiles per image (default 1)")
                           ->type_name("N");
  CLI::Option* subset =
      import->add_option("--subset", imp->subset, "llava only: subset name for every sample");
  import->add_flag("--json", imp->json, "print what was written as JSON");
  import->allow_extras();  // unknown options reach Extras: one message for every command
  return {import, [=, &out, &err]() -> int {
            if (int rc = Extras(import, err)) return rc;
            if (format->count() == 0)
              return Usage(import, "trace import", "missing --format (llava, librispeech or csv)", err);
            if (imp_out->count() == 0) return Usage(import, "trace import", "missing -o OUT", err);
            if (imp->input.empty())
              return Usage(import, "trace import", "expected exactly one input file, got 0", err);
            imp->tiles_given = tiles->count() > 0;
            imp->subset_given = subset->count() > 0;
            imp->fps_given = fps->count() > 0;
            imp->max_frames_given = max_frames->count() > 0;
            return RunTraceImport(*imp, out, err);
          }};
}

Command AddTraceGen(CLI::App* trace, std::ostream& out, std::ostream& err) {
  auto gen = std::make_shared<TraceGenArgs>();
  CLI::App* gen_cmd =
      trace->add_subcommand("gen", "synthesize a trace from a dataset's published statistics");
  gen_cmd->alias("generate");
  CLI::Option* preset =
      gen_cmd->add_option("--preset", gen->preset, "generator preset")
          ->check(RegistryValidator("PRESET", PresetNames(), [](const std::string& v) -> std::string {
            for (const GeneratorPreset& g : GeneratorPresets())
              if (g.name == v) return "";
            return "unknown preset '" + v + "'; valid values are: " + PresetNames();
          }));
  CLI::Option* samples =
      gen_cmd->add_option("--samples", gen->samples, "samples to generate (default: the real dataset's size)")
          ->type_name("N");
  CLI::Option* seed = gen_cmd->add_option("--seed", gen->seed, "generator seed (default 1)")->type_name("S");
  CLI::Option* gen_out = gen_cmd->add_option("-o,--output", gen->output, "output trace CSV");
  gen_cmd->add_flag("--list", gen->list, "list the presets with their sizes and sources");
  gen_cmd->add_flag("--json", gen->json, "print what was written (with --list: the presets) as JSON");
  gen_cmd->allow_extras();
  return {gen_cmd, [=, &out, &err]() -> int {
            if (int rc = Extras(gen_cmd, err)) return rc;
            gen->samples_given = samples->count() > 0;
            gen->seed_given = seed->count() > 0;
            if (!gen->list) {
              if (preset->count() == 0)
                return Usage(gen_cmd, "trace gen",
                             "missing --preset NAME (valid values are: " + PresetNames() + ")", err);
              if (gen_out->count() == 0) return Usage(gen_cmd, "trace gen", "missing -o OUT", err);
            }
            return RunTraceGen(*gen, out, err);
          }};
}

Command AddTraceStats(CLI::App* trace, std::ostream& out, std::ostream& err) {
  auto stats = std::make_shared<TraceStatsArgs>();
  CLI::App* stats_cmd =
      trace->add_subcommand("stats", "per-modality statistics and per-subset counts of a trace");
  stats_cmd->add_option("TRACE", stats->trace, "trace CSV")->required();
  stats_cmd->add_option("--model", stats->model, "also vision and LLM tokens per sample for this model");
  CLI::Option* bins =
      stats_cmd->add_option("--bins", stats->bins, "histogram bins (default 20)")->type_name("N");
  stats_cmd->add_flag("--json", stats->json, "print JSON");
  stats_cmd->allow_extras();
  return {stats_cmd, [=, &out, &err]() -> int {
            if (int rc = Extras(stats_cmd, err)) return rc;
            stats->bins_given = bins->count() > 0;
            return RunTraceStats(*stats, out, err);
          }};
}

// `trace import | gen | stats`.
Command AddTrace(CLI::App& app, std::ostream& out, std::ostream& err) {
  CLI::App* trace =
      app.add_subcommand("trace", "convert datasets into traces, synthesize them, summarize them");
  trace->require_subcommand(1);
  trace->footer("Formats: traces/README.md. " + std::string(kExitCodes));
  const Command import = AddTraceImport(trace, out, err), gen = AddTraceGen(trace, out, err),
                stats = AddTraceStats(trace, out, err);
  return {trace, [=]() -> int {
            if (import.app->parsed()) return import.run();
            if (gen.app->parsed()) return gen.run();
            return stats.run();
          }};
}

Command AddBalance(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto bal = std::make_shared<BalanceArgs>();
  CLI::App* balance = app.add_subcommand(
      "balance", "run data-balance policies over a trace and report pad/dist ratios, loads and traffic");
  balance->footer(
      "--compare without a list compares OmniBal Table 3's methods: random, length-group, device-group, isf. "
      "A "
      "--param applies to every compared policy that declares it. `mmtwin policies` lists the policies and "
      "their parameters.");
  balance->add_option("--trace", bal->trace, "trace CSV");
  balance->add_option("--model", bal->model, "model zoo name or spec file");
  CLI::Option* dp = balance->add_option("--dp", bal->dp, "data-parallel ranks")->type_name("D");
  balance->add_option("--policy", bal->policies, "data policy")
      ->check(RegistryValidator("POLICY", DataPolicyNames(), [](const std::string& v) -> std::string {
        auto f = FindDataPolicy(v);
        return f ? "" : f.error().message();
      }));
  balance->add_option("--param", bal->params, "policy parameter k=v (repeatable)")->allow_extra_args(false);
  auto compare_list = std::make_shared<std::string>();
  CLI::Option* compare =
      balance->add_option("--compare", *compare_list, "compare policies P1,P2,... side by side")
          ->expected(0, 1);
  CLI::Option* bal_seed =
      balance->add_option("--seed", bal->seed, "policies' seed (default 1)")->type_name("S");
  CLI::Option* rpn =
      balance->add_option("--ranks-per-node", bal->ranks_per_node, "DP ranks per node (default 8)")
          ->type_name("N");
  balance->add_option("--cluster", bal->cluster, "cluster preset: its GPUs per node set the node boundaries");
  balance->add_flag("--json", bal->json, "print JSON");
  balance->allow_extras();
  return {balance, [=, &out, &err]() -> int {
            if (int rc = Extras(balance, err)) return rc;
            bal->compare = compare->count() > 0;
            if (bal->compare) {  // the --compare list, comma-separated, empty items dropped
              std::string item;
              for (char c : *compare_list + ",")
                if (c == ',') {
                  if (!item.empty()) bal->policies.push_back(item);
                  item.clear();
                } else {
                  item += c;
                }
            }
            bal->dp_given = dp->count() > 0;
            bal->seed_given = bal_seed->count() > 0;
            bal->ranks_given = rpn->count() > 0;
            return RunBalance(*bal, out, err);
          }};
}

Command AddPlan(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto plan = std::make_shared<PlanArgs>();
  CLI::App* plan_cmd = app.add_subcommand(
      "plan",
      "partition, recompute and memory per pipeline stage of a scenario, without replaying iterations");
  plan_cmd->add_option("SCENARIO", plan->scenario, "scenario file (scenarios/README.md)")->required();
  plan_cmd->add_flag("--json", plan->json, "print the plan as JSON");
  plan_cmd->add_flag("--memory", plan->memory,
                     "also print every term of each stage's peak memory (weights, gradients, optimizer, "
                     "activations, fragmentation, CUDA context, NCCL, ...); --json always holds them");
  CLI::Option* max_seq = plan_cmd->add_flag(
      "--max-seq", plan->max_seq,
      "the longest sequence each sequence-parallel method fits on the scenario's sp x tp GPUs "
      "(bisection over the memory model)");
  // Both only mean something with --max-seq: without it they are an error, not silently ignored (issue 34).
  plan_cmd->add_option("--step-tokens", plan->step_tokens, "--max-seq: granularity in tokens (default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->needs(max_seq);
  plan_cmd->add_option("--sp-policy", plan->sp_policies, "--max-seq: only this SP policy (repeatable)")
      ->needs(max_seq);
  plan_cmd->get_option("--memory")->excludes(max_seq);
  plan_cmd->footer(
      "Exit codes: 0 every stage fits its device memory (--max-seq: the search ran), 1 a stage does not, 2 "
      "bad "
      "input.");
  plan_cmd->allow_extras();
  return {plan_cmd, [=, &out, &err]() -> int {
            if (int rc = Extras(plan_cmd, err)) return rc;
            return RunPlan(*plan, out, err);
          }};
}

Command AddSimulate(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto sim = std::make_shared<SimulateArgs>();
  CLI::App* simulate = app.add_subcommand(
      "simulate",
      "replay a scenario's iterations (sampled or the whole epoch) with an engine; print and write the run "
      "records");
  simulate->add_option("SCENARIO", sim->scenario, "scenario file (scenarios/README.md)")->required();
  simulate->add_option("--engine", sim->engine, "evaluation engine (default: the scenario's `engine`)")
      ->check(RegistryValidator("ENGINE", EngineNames(), [](const std::string& v) -> std::string {
        for (const EngineInfo& e : Engines())
          if (e.name == v) return "";
        return "unknown engine '" + v + "'; valid values are: " + EngineNames();
      }));
  simulate
      ->add_option("--contention", sim->contention,
                   "simgrid only: off gives every transfer its own full bandwidth (then both engines agree)")
      ->check(CLI::IsMember({"on", "off"}));
  simulate->add_option("-o,--output", sim->rundir,
                       "run folder for summary.json, stages.csv, ops.csv, trace.json, scenario.yaml (default "
                       "runs/NAME)");
  simulate->add_flag("--json", sim->json, "print summary.json instead of the text summary");
  simulate
      ->add_option(
          "--cost", sim->cost,
          "per-layer time model: analytic, or a cost-coefficient CSV such as `mmtwin calibrate` writes "
          "(default: the scenario's `cost:`)")
      ->type_name("PROFILE");
  simulate->add_flag(
      "--progress", sim->progress,
      "report progress on stderr as lines 'progress F' (F the fraction done, 0..1), for a program "
      "that runs mmtwin (the terminal's progress bar is off then)");
  CLI::Option* trace_it =
      simulate
          ->add_option("--trace-iteration", sim->trace_iteration,
                       "which replayed iteration (0-based) trace.json and ops.csv show (default 0)")
          ->type_name("K");
  CLI::Option* trace_rep =
      simulate
          ->add_option(
              "--trace-replicas", sim->trace_replicas,
              "DP replicas trace.json draws, 0 = all (default 4: a 1,024-GPU iteration has ~10^5 ops, "
              "and the replicas of a balanced run look alike; ops.csv keeps every device)")
          ->type_name("N");
  simulate->footer(
      "Prints iteration time p50/p99, bubble, idle and recompute ratios, tokens/s, MFU, projected GPU-days "
      "for "
      "one epoch, data-balance metrics, the per-stage table and any stage that does not fit its "
      "memory.\nExit "
      "codes: 0 ok, 1 a stage does not fit its device memory (outputs still written), 2 bad input.");
  simulate->allow_extras();
  return {simulate, [=, &out, &err]() -> int {
            if (int rc = Extras(simulate, err)) return rc;
            sim->trace_iteration_given = trace_it->count() > 0;
            sim->trace_replicas_given = trace_rep->count() > 0;
            return RunSimulate(*sim, out, err);
          }};
}

// `sweep merge | export | table`: a database's subcommands.
Command AddSweepMerge(CLI::App* sweep, std::ostream& out, std::ostream& err) {
  auto merge = std::make_shared<SweepMergeArgs>();
  CLI::App* merge_cmd = sweep->add_subcommand(
      "merge", "join shard databases into OUT (dedupe by run key; an ok row wins over an error row)");
  merge_cmd->add_option("OUT", merge->output, "output database")->required();
  merge_cmd->add_option("IN", merge->inputs, "shard databases")->required();
  merge_cmd->add_flag("--json", merge->json, "print what was merged as JSON");
  merge_cmd->allow_extras();
  return {merge_cmd,
          [=, &out, &err] { return Extras(merge_cmd, err) ? 2 : RunSweepMerge(*merge, out, err); }};
}

Command AddSweepExport(CLI::App* sweep, std::ostream& out, std::ostream& err) {
  auto exp = std::make_shared<SweepExportArgs>();
  CLI::App* export_cmd = sweep->add_subcommand("export", "write every run of a database as CSV");
  export_cmd->add_option("--db", exp->db, "results database")->required();
  export_cmd->add_option("-o,--output", exp->output, "output CSV")->required();
  export_cmd->allow_extras();
  return {export_cmd,
          [=, &out, &err] { return Extras(export_cmd, err) ? 2 : RunSweepExport(*exp, out, err); }};
}

Command AddSweepTable(CLI::App* sweep, std::ostream& out, std::ostream& err) {
  auto table = std::make_shared<SweepTableArgs>();
  CLI::App* table_cmd = sweep->add_subcommand("table", "print the results table of a database");
  table_cmd->add_option("--db", table->db, "results database")->required();
  table_cmd->add_option("--sweep", table->sweep, "only this sweep");
  table_cmd->add_flag("--json", table->json, "print JSON: per sweep, its rows with every summary column");
  table_cmd->allow_extras();
  return {table_cmd,
          [=, &out, &err] { return Extras(table_cmd, err) ? 2 : RunSweepTable(*table, out, err); }};
}

// `sweep SWEEP.yaml`, and its subcommands.
Command AddSweep(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto sw = std::make_shared<SweepRunArgs>();
  CLI::App* sweep = app.add_subcommand(
      "sweep", "run a sweep of what-if scenarios on worker processes into SQLite (resumable, shardable)");
  sweep->add_option("SWEEP", sw->sweep, "sweep file (scenarios/README.md \"Sweeps\")");
  CLI::Option* jobs =
      sweep->add_option("-j,--jobs", sw->jobs, "worker processes (default 1)")->type_name("N");
  CLI::Option* shard =
      sweep
          ->add_option(
              "--shard", sw->shard,
              "run only runs whose index % N == i (Slurm: $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)")
          ->type_name("i/N");
  sweep->add_option("--db", sw->db,
                    "results database (default NAME.sqlite, NAME.shard-i-of-N.sqlite with --shard)");
  sweep->add_option("--csv", sw->csv, "also export the database as CSV when done");
  sweep->add_flag(
      "--no-share", sw->no_share,
      "every worker prepares its own trace and data plan (default: consecutive runs with the same "
      "trace, model, dp x tp and data policy share one, prepared once; the results are the same)");
  sweep->add_flag("--dry-run", sw->dry_run, "list the runs (index, key, axis values) without running them");
  sweep->add_flag(
      "--json", sw->json,
      "print the results (or the --dry-run list) as one JSON object; the other lines go to stderr");
  sweep->footer(
      "Runs already recorded with status ok are skipped, so an interrupted sweep re-run redoes nothing "
      "finished; runs recorded as errors are retried.\nExit codes: 0 all runs ok, 1 some run ended with an "
      "error (recorded, the sweep went on), 2 bad input, 3 stopped early by MMTWIN_SWEEP_STOP_AFTER (test "
      "hook).");
  sweep->allow_extras();
  const Command subs[] = {AddSweepMerge(sweep, out, err), AddSweepExport(sweep, out, err),
                          AddSweepTable(sweep, out, err)};
  return {sweep, [=, &out, &err]() -> int {
            for (const Command& sub : subs)
              if (sub.app->parsed()) return sub.run();
            if (int rc = Extras(sweep, err)) return rc;
            if (sw->sweep.empty()) return Usage(sweep, "sweep", "a sweep file is required", err);
            sw->jobs_given = jobs->count() > 0;
            sw->shard_given = shard->count() > 0;
            return RunSweep(*sw, out, err);
          }};
}

Command AddCalibrate(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto cal = std::make_shared<CalibrateArgs>();
  CLI::App* calibrate_cmd =
      app.add_subcommand("calibrate",
                         "fit per-layer time coefficients (c0 + c_token * tokens + c_pair * attention pairs, "
                         "forward and backward, per layer type) and activation bytes to measured runs of "
                         "mmtwin-train, for `cost:` / --cost; optionally the links, as a cluster file");
  calibrate_cmd->add_option("RUNDIR", cal->runs, "measured run folders (mmtwin-train -o)")->required();
  calibrate_cmd->add_option("-o,--output", cal->output, "the profile to write (CSV)")->required();
  calibrate_cmd
      ->add_option("--min-samples", cal->min_samples,
                   "rows per layer type and pass below which a fit is refused (8)")
      ->type_name("N");
  calibrate_cmd
      ->add_option(
          "--cluster-out", cal->cluster_out,
          "also fit P2P latency and bandwidth per link class from the runs' ops.csv and write the runs' "
          "cluster with them (YAML, usable as a scenario's `cluster:`)")
      ->type_name("FILE");
  calibrate_cmd
      ->add_option("--links", cal->link_runs,
                   "with --cluster-out: fit the links from these run folders too (repeatable), e.g. the "
                   "round trips of `mmtwin-train launch --pingpong` over message sizes, the usable link fit")
      ->type_name("RUNDIR");
  calibrate_cmd->footer(
      "Prints per layer type and pass the coefficients, R^2, relative residual percentiles and outliers; the "
      "profile keeps them as comments.\nExit codes: 0 ok, 2 bad input (a simulated run, a layers.csv of "
      "another "
      "model, mixed tp, too few samples).");
  calibrate_cmd->add_flag("--json", cal->json, "print the fits and what was written as JSON");
  calibrate_cmd->allow_extras();
  return {calibrate_cmd, [=, &out, &err]() -> int {
            if (int rc = Extras(calibrate_cmd, err)) return rc;
            cal->min_samples_given = calibrate_cmd->count("--min-samples") > 0;
            return RunCalibrate(*cal, out, err);
          }};
}

Command AddValidate(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto val = std::make_shared<ValidateArgs>();
  CLI::App* validate_cmd = app.add_subcommand(
      "validate",
      "measure a validation suite's scenarios with mmtwin-train, calibrate on its calibration scenarios, and "
      "report how far the analytic and calibrated predictions are from the held-out measurements; a suite of "
      "published runs (with `entries:`) is predicted and fitted without a backend");
  validate_cmd->add_option("SUITE", val->suite, "validation suite (scenarios/validation/README.md)")
      ->required();
  validate_cmd->add_option("-o,--output", val->output, "report folder")->required();
  validate_cmd->add_option("--runs", val->runs, "where the measured runs go (default OUTDIR/runs)");
  validate_cmd->add_option("--train", val->train,
                           "the mmtwin-train executable (default: found next to mmtwin or on PATH)");
  validate_cmd->add_flag("--reuse", val->reuse,
                         "reuse a measured run already in the runs folder for the same scenario");
  validate_cmd
      ->add_option("--run-timeout", val->run_timeout_s,
                   "seconds one backend run may take before it is stopped and validate fails (default 3600)")
      ->check(CLI::Range(1.0, 604800.0));
  validate_cmd->add_option("--machine", val->machine,
                           "where it runs, for the report (e.g. '2 vCPU AMD EPYC, Debian 12')");
  validate_cmd->add_flag(
      "--json", val->json,
      "print the summary and one row per entry or held-out scenario as JSON (progress on stderr)");
  validate_cmd->footer("Exit codes: 0 ok, 1 a backend run failed (its log is quoted), 2 bad input.");
  validate_cmd->allow_extras();
  return {validate_cmd, [=, &out, &err]() -> int {
            if (int rc = Extras(validate_cmd, err)) return rc;
            return RunValidate(*val, out, err);
          }};
}

Command AddTune(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto t = std::make_shared<TuneArgs>();
  CLI::App* tune = app.add_subcommand(
      "tune",
      "search a space of layouts and policies for this dataset, model and cluster: valid candidates only, "
      "a memory lower bound rules out what cannot fit, the rest simulated on worker processes and ranked");
  tune->add_option("SPACE", t->space, "tune space (scenarios/README.md \"Tuning\")")->required();
  tune->add_option("-o,--output", t->output, "result folder (default runs/tune/NAME)");
  tune->add_option("--db", t->db, "results database (default OUTPUT.sqlite; a re-run resumes)");
  CLI::Option* jobs = tune->add_option("-j,--jobs", t->jobs, "worker processes (default 1)")->type_name("N");
  CLI::Option* shard = tune->add_option("--shard", t->shard, "evaluate only shard i of N (i/N), as sweeps do")
                           ->type_name("i/N");
  CLI::Option* top = tune->add_option("--top", t->top, "configurations listed (default 10)")->type_name("K");
  CLI::Option* recheck =
      tune->add_option("--recheck", t->recheck,
                       "re-run the best K with the SimGrid engine (shared links, real rings) and show both")
          ->type_name("K");
  tune->add_flag("--no-prune", t->no_prune, "evaluate every valid candidate (no memory lower bound)");
  tune->add_flag("--dry-run", t->dry_run, "list the candidates to evaluate, run nothing");
  tune->add_flag("--json", t->json, "print JSON (counts and the ranked configurations)");
  tune->footer(
      "Exit codes: 0 ok, 1 no candidate fits (the message says which constraint ruled them out), 2 bad "
      "input, 128+signal interrupted (recorded runs stay; a re-run resumes).");
  tune->allow_extras();
  return {tune, [=, &out, &err]() -> int {
            if (int rc = Extras(tune, err)) return rc;
            t->jobs_given = jobs->count() > 0;
            t->shard_given = shard->count() > 0;
            t->top_given = top->count() > 0;
            t->recheck_given = recheck->count() > 0;
            return RunTune(*t, out, err);
          }};
}

Command AddCompare(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto cmp = std::make_shared<CompareArgs>();
  CLI::App* compare_cmd = app.add_subcommand(
      "compare", "side-by-side summaries of two runs: A, B, B - A, B / A, then per pipeline stage");
  compare_cmd->add_option("RUN", cmp->runs, "two run folders (or summary.json files): A and B");
  compare_cmd->add_flag("--json", cmp->json, "print JSON");
  compare_cmd->allow_extras();
  return {compare_cmd, [=, &out, &err]() -> int {
            if (int rc = Extras(compare_cmd, err)) return rc;
            return RunCompare(*cmp, out, err);
          }};
}

Command AddReplay(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto r = std::make_shared<ReplayArgs>();
  CLI::App* replay = app.add_subcommand("replay",
                                        "replay a run folder's recorded timeline (simulated, or measured by "
                                        "mmtwin-train) through the dependency "
                                        "model, and attribute its step time: what balanced data, balanced "
                                        "stages and no slow device would give");
  replay->add_option("RUN", r->run, "run folder (scenario.yaml and ops.csv)")->required();
  replay->add_option("-o,--output", r->output,
                     "write the ideal timeline (all four what-ifs) as a run folder");
  replay->add_option("--predict", r->predict,
                     "a scenario of the same job (same layout, other policies): its step predicted from this "
                     "run's speed per stage and mmtwin's relative costs");
  replay->add_flag("--measured-comm", r->measured_comm,
                   "a measured run's communication ops keep their recorded durations (they include waiting)");
  replay->add_flag("--json", r->json, "print JSON");
  replay->footer("sim/whatif/whatif.h: how records become durations and what each what-if changes.");
  replay->allow_extras();
  return {replay, [=, &out, &err]() -> int {
            if (int rc = Extras(replay, err)) return rc;
            return RunReplay(*r, out, err);
          }};
}

Command AddImportTimeline(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto a = std::make_shared<ImportTimelineArgs>();
  CLI::App* imp = app.add_subcommand("import-timeline",
                                     "a job's op timeline (Chrome / Perfetto trace-event JSON: mmtwin's "
                                     "trace.json, a framework's timers, or PyTorch profiler traces, one per "
                                     "rank, kernels aggregated by their annotations) as a "
                                     "measured run folder for `mmtwin replay`");
  imp->add_option("TIMELINE", a->timelines,
                  "trace-event JSON, or the ranks' PyTorch profiler traces (.json or .json.gz)")
      ->required();
  imp->add_option("--scenario", a->scenario, "the job's scenario (its layout and plan)")->required();
  imp->add_option("-o,--output", a->output, "run folder to write")->required();
  imp->add_option("--map", a->maps, "event NAME (or PREFIX*) to an op kind or ignore: NAME=KIND; repeatable");
  imp->add_option("--map-file", a->map_file, "a YAML mapping of event names to op kinds");
  imp->add_option("--iteration", a->iteration,
                  "the epoch iteration of events without an iteration argument (default: the plan's first "
                  "replayed one)");
  imp->footer(
      "sim/whatif/timeline_import.h: devices, kinds (Megatron-LM's timer names and the PyTorch profiler's by "
      "default), micro-batches; sim/whatif/kineto_import.h: PyTorch profiler traces.");
  imp->allow_extras();
  return {imp, [=, &out, &err]() -> int {
            if (int rc = Extras(imp, err)) return rc;
            return RunImportTimeline(*a, out, err);
          }};
}

Command AddExportChakra(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto a = std::make_shared<ExportChakraArgs>();
  CLI::App* c =
      app.add_subcommand("export-chakra",
                         "one replayed iteration of a scenario as Chakra execution traces (one per rank, "
                         "MLCommons Chakra's format, as ASTRA-sim reads it), read back and replayed");
  c->add_option("SCENARIO", a->scenario, "scenario file")->required();
  c->add_option("-o,--output", a->output, "folder to write (PREFIX.RANK.et and comm_group.json, as a unit)")
      ->required();
  c->add_option("--iteration", a->iteration, "which replayed iteration (0-based, default 0)");
  c->add_option("--prefix", a->prefix, "file name prefix (default mmtwin)");
  c->add_flag("--json", a->json, "print JSON");
  c->footer("sim/interop/chakra.h: ranks, nodes, process groups and what each op becomes.");
  c->allow_extras();
  return {c, [=, &out, &err]() -> int {
            if (int rc = Extras(c, err)) return rc;
            return RunExportChakra(*a, out, err);
          }};
}

Command AddImportChakra(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto a = std::make_shared<ImportChakraArgs>();
  CLI::App* c = app.add_subcommand("import-chakra",
                                   "Chakra execution traces mmtwin wrote, back as a measured run folder for "
                                   "`mmtwin replay` (their op records, timed by the Chakra replay)");
  c->add_option("DIR", a->dir, "folder with PREFIX.RANK.et and comm_group.json")->required();
  c->add_option("--scenario", a->scenario, "the job's scenario (its layout and plan)")->required();
  c->add_option("-o,--output", a->output, "run folder to write")->required();
  c->add_option("--prefix", a->prefix, "file name prefix (default mmtwin)");
  c->footer("sim/interop/chakra.h: ChakraOpRecords.");
  c->allow_extras();
  return {c, [=, &out, &err]() -> int {
            if (int rc = Extras(c, err)) return rc;
            return RunImportChakra(*a, out, err);
          }};
}

Command AddReplayChakra(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto a = std::make_shared<ReplayChakraArgs>();
  CLI::App* c =
      app.add_subcommand("replay-chakra",
                         "replay Chakra execution traces (the node kinds mmtwin writes) with Chakra's "
                         "semantics: the step time and each rank's end");
  c->add_option("DIR", a->dir, "folder with PREFIX.RANK.et and comm_group.json")->required();
  c->add_option("--prefix", a->prefix, "file name prefix (default mmtwin)");
  c->add_flag(
      "--whole-micros", a->whole_micros,
      "use duration_micros (whole microseconds, as another Chakra consumer would) instead of the exact "
      "mmtwin_duration_us");
  c->add_flag("--json", a->json, "print JSON");
  c->footer("sim/interop/chakra.h: the replay's rules.");
  c->allow_extras();
  return {c, [=, &out, &err]() -> int {
            if (int rc = Extras(c, err)) return rc;
            return RunReplayChakra(*a, out, err);
          }};
}

Command AddKernels(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto a = std::make_shared<KernelsArgs>();
  CLI::App* k =
      app.add_subcommand("kernels",
                         "a GPU's measured kernel table (backend/gpu/kernel_sweep.py) against a cluster "
                         "preset's compute curves; --fit fits them on its calibration half");
  k->add_option("TABLE", a->table, "kernel table (CSV)")->required();
  k->add_option("--cluster", a->cluster, "cluster preset or file whose device curves are checked")
      ->required();
  k->add_flag("--fit", a->fit,
              "fit the eight curve parameters on the calibration rows and score them on the held-out rows");
  k->add_option(
      "-o,--output", a->output,
      "report folder, written as a unit: README.md, kernels.csv (per row), fitted.yaml (with --fit)");
  k->add_flag("--json", a->json, "print JSON");
  k->footer("sim/calibrate/kernels.h: the table's columns, the split and the fit.");
  k->allow_extras();
  return {k, [=, &out, &err]() -> int {
            if (int rc = Extras(k, err)) return rc;
            return RunKernels(*a, out, err);
          }};
}

// `models`, `clusters`, `policies` [--json]: listings (extras are refused as usual).
Command AddListing(CLI::App& app, const std::string& what, const std::string& description, std::ostream& out,
                   std::ostream& err) {
  CLI::App* list = app.add_subcommand(what, description);
  auto json = std::make_shared<bool>(false);
  list->add_flag("--json", *json, "print JSON (numbers as numbers)");
  list->allow_extras();
  return {list, [=, &out, &err]() -> int {
            if (int rc = Extras(list, err)) return rc;
            return RunList(what, *json, out, err);
          }};
}

// The options of one command (long and short names, --help), space-separated.
std::string OptionWords(const CLI::App* app) {
  std::vector<std::string> words;
  for (const CLI::Option* o : app->get_options()) {
    for (const std::string& l : o->get_lnames()) words.push_back("--" + l);
    for (const std::string& sn : o->get_snames()) words.push_back("-" + sn);
  }
  return Join(words, " ");
}

// `mmtwin completion bash`: a bash completion script generated from this command tree (commands, their
// subcommands and options; file names elsewhere), so it never disagrees with the binary it came from.
//   source <(mmtwin completion bash)      or install it as share/bash-completion/completions/mmtwin
std::string BashCompletion(const CLI::App& app) {
  std::string top;
  for (const CLI::App* sub : app.get_subcommands({})) top += (top.empty() ? "" : " ") + sub->get_name();
  top += " --help --help-all --version";
  std::string cases, subcommand_cases;
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string name = sub->get_name();
    std::string nested;
    for (const CLI::App* n : sub->get_subcommands({})) {
      nested += (nested.empty() ? "" : " ") + n->get_name();
      cases += "    \"" + name + " " + n->get_name() + "\") opts=\"" + OptionWords(n) + "\" ;;\n";
    }
    cases += "    \"" + name + " \"*) opts=\"" + OptionWords(sub) + "\" ;;\n";
    if (!nested.empty()) subcommand_cases += "    " + name + ") subs=\"" + nested + "\" ;;\n";
  }
  return "# bash completion for mmtwin (" + VersionLine("mmtwin") +
         "), generated by `mmtwin completion bash`\n"
         "_mmtwin() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} cmd=\"\" sub=\"\" subs=\"\" opts=\"\"\n"
         "  if [ \"$COMP_CWORD\" -le 1 ]; then\n"
         "    COMPREPLY=($(compgen -W \"" +
         top +
         "\" -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  cmd=${COMP_WORDS[1]}\n"
         "  case \"$cmd\" in\n" +
         subcommand_cases +
         "  esac\n"
         "  if [ -n \"$subs\" ] && [ \"$COMP_CWORD\" -eq 2 ] && [[ $cur != -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\") $(compgen -f -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  [ \"$COMP_CWORD\" -ge 3 ] && sub=${COMP_WORDS[2]}\n"
         "  case \"$cmd $sub\" in\n" +
         cases +
         "  esac\n"
         "  if [[ $cur == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
         "  else\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "}\n"
         "complete -o filenames -F _mmtwin mmtwin\n";
}

// "mmtwin trace frobnicate": a command with subcommands names them first (0 when argv names no unknown one).
int UnknownSubcommand(int argc, const char* const* argv, CLI::App* trace, CLI::App* sweep,
                      std::ostream& err) {
  for (CLI::App* group : {trace, sweep}) {
    if (argc < 3 || !group->check_name(argv[1])) continue;
    const std::string word = argv[2];
    if (word.empty() || word[0] == '-' || group == sweep) continue;  // sweep's first word may be its file
    bool known = false;
    std::vector<std::string> names;
    for (const CLI::App* sub : group->get_subcommands({})) {
      known = known || sub->check_name(word);
      names.push_back(sub->get_name());
    }
    if (!known)
      return Usage(group, group->get_name(),
                   "unknown subcommand '" + word + "'; valid values are: " + Join(names), err);
  }
  return 0;
}

// The deepest subcommand that was named (the app itself when none).
const CLI::App* NamedCommand(const CLI::App& app) {
  const CLI::App* target = &app;
  for (const CLI::App* s = &app; s;) {
    const auto subs = s->get_subcommands();
    if (subs.empty()) break;
    target = s = subs.front();
  }
  return target;
}

// A parse error: an unknown command, a top-level problem, or a command's usage error; exit code 2.
int ParseFailed(const CLI::App& app, const CLI::ParseError& e, int argc, const char* const* argv,
                std::ostream& err) {
  const CLI::App* target = NamedCommand(app);
  if (target == &app) {
    const std::string first = argv[1];
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->check_name(first);
    if (!first.empty() && first[0] != '-' && !known) {
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      err << "mmtwin: unknown command '" << first << "'; valid commands are: " << Join(names) << "\n"
          << "Run 'mmtwin --help' for usage.\n";
      return 2;
    }
    err << "mmtwin: " << Problem(e, argv[argc - 1]) << "\nRun 'mmtwin --help' for usage.\n";
    return 2;
  }
  return Usage(target, PathOf(target), Problem(e, argv[argc - 1]), err);
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app(kDescription, "mmtwin");
  app.formatter(MakeFormatter());
  app.footer(
      std::string(
          "commands in short (each has --help):\n"
          "  trace import --format F IN -o OUT | trace gen --preset NAME -o OUT | trace stats TRACE\n"
          "  balance --trace T --model M --dp D --policy P [--param k=v]... | balance --compare ...\n"
          "  plan SCENARIO [--json] [--max-seq [--step-tokens N] [--sp-policy P]...]\n"
          "  simulate SCENARIO [--engine E] [-o RUNDIR] [--json] [--progress] [--trace-iteration K]\n"
          "  sweep SWEEP.yaml [--jobs N] [--shard i/N] | sweep merge | sweep export | sweep table\n"
          "  tune SPACE.yaml [-o DIR] [--jobs N] [--top K] [--recheck K]\n"
          "  compare RUN_A RUN_B [--json]\n"
          "  replay RUN [-o DIR] [--predict SCENARIO] [--json]\n"
          "  import-timeline TRACE.json... --scenario S -o RUNDIR [--map NAME=KIND]...\n"
          "  export-chakra SCENARIO -o DIR [--iteration K] | import-chakra DIR --scenario S -o RUNDIR | "
          "replay-chakra DIR\n"
          "  kernels TABLE.csv --cluster C [--fit] [-o DIR] [--json]\n"
          "  models | clusters | policies\n") +
      kExitCodes);
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  app.set_version_flag("--version", VersionLine("mmtwin"),
                       "print the version and the commit it was built from");
  // Subcommands inherit nothing but the formatter: --help-all is for the top level only.
  const std::vector<Command> commands = {
      AddTrace(app, out, err),
      AddBalance(app, out, err),
      AddPlan(app, out, err),
      AddSimulate(app, out, err),
      AddSweep(app, out, err),
      AddTune(app, out, err),
      AddCalibrate(app, out, err),
      AddValidate(app, out, err),
      AddCompare(app, out, err),
      AddReplay(app, out, err),
      AddImportTimeline(app, out, err),
      AddExportChakra(app, out, err),
      AddImportChakra(app, out, err),
      AddReplayChakra(app, out, err),
      AddKernels(app, out, err),
      AddListing(app, "models", "list the model zoo with parameter counts", out, err),
      AddListing(app, "clusters", "list the cluster presets", out, err),
      AddListing(app, "policies", "list every policy registry with its parameters", out, err),
  };
  for (CLI::App* sub : app.get_subcommands({})) sub->formatter(app.get_formatter());
  // `completion bash`: after the others, so that the script lists every command and option.
  CLI::App* completion = app.add_subcommand("completion", "print a shell completion script (bash)");
  auto shell = std::make_shared<std::string>();
  completion->add_option("SHELL", *shell, "the shell: bash")->required();
  completion->formatter(app.get_formatter());
  completion->allow_extras();

  if (argc <= 1) {
    err << app.help();
    return 2;
  }
  // `mmtwin --version` needs no command (CLI11 would first ask for one).
  if (argc == 2 && std::string(argv[1]) == "--version") {
    out << VersionLine("mmtwin") << "\n";
    return 0;
  }
  if (int rc = UnknownSubcommand(argc, argv, app.get_subcommand("trace"), app.get_subcommand("sweep"), err))
    return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << HelpOf(NamedCommand(app));
    return 0;
  } catch (const CLI::CallForVersion&) {
    out << VersionLine("mmtwin") << "\n";
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    return ParseFailed(app, e, argc, argv, err);
  }
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  if (completion->parsed()) {
    if (int rc = Extras(completion, err)) return rc;
    if (*shell != "bash")
      return Usage(completion, "completion", "unknown shell '" + *shell + "'; valid values are: bash", err);
    out << BashCompletion(app);
    return 0;
  }
  err << app.help();
  return 2;
}

}  // namespace mmtwin::cli

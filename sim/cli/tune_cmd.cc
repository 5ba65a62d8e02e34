// SPDX-License-Identifier: Apache-2.0
// `mmtwin tune SPACE.yaml [-o DIR] [--db FILE] [-j N] [--shard i/N] [--top K] [--recheck K] [--no-prune]
// [--dry-run] [--json]`
// (sim/tune/tune.h): enumerates the space's candidates (rejected ones counted by reason), rules out the ones
// whose memory lower bound exceeds the limit, evaluates the rest as one sweep on worker processes into SQLite
// (resumable: a re-run redoes nothing; shardable like sweeps), in waves that skip what the time lower bound proves
// cannot beat the runs evaluated (EvaluateTune; --no-prune: neither bound), ranks them and writes
// DIR/{ranked.csv, pareto.csv, pareto.svg, README.md, skipped.csv} as a unit (core/util/atomic_dir.h). The database defaults to DIR.sqlite beside the folder. --recheck K
// re-runs the best K with the SimGrid engine (a second sweep NAME-simgrid in the same database) and shows both.
// Exit codes: 0 ok, 1 no candidate fits (the message names the constraint that ruled them out), 2 bad input,
// 128+signal interrupted (the runs recorded so far stay).
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/util/atomic_dir.h"
#include "core/util/csv.h"
#include "core/util/interrupt.h"
#include "driver/driver.h"
#include "report/plotter.h"
#include "sweep/runner.h"
#include "tune/tune.h"

namespace mmtwin::cli {
namespace {

int Fail(std::ostream& err, const std::string& msg) {
  err << "mmtwin tune: " << msg << "\n";
  return 2;
}

std::string ObjectiveText(const TuneSpace& space, double v) {
  switch (space.objective) {
    case TuneObjective::kGpuDays:
      return Significant(v) + " GPU-days";
    case TuneObjective::kTokensPerS:
      return Fixed(v, 0) + " tokens/s";
    case TuneObjective::kIterationTime:
      return Fixed(v, 1) + " ms";
  }
  return "?";
}

std::string RowsCsv(const TuneSpace& space, const std::vector<TuneRow>& rows) {
  const bool derived_mb = space.micro_batches_per_step > 0;
  std::string csv = derived_mb ? "rank,gpus,dp,micro_batches" : "rank,gpus,dp";
  for (const SweepAxis& a : space.sweep.axes) csv += "," + CsvQuote(a.name);
  csv +=
      ",objective,gpu_days,tokens_per_s,iteration_p50_ms,mfu,peak_memory_gib,bubble_ratio,idle_ratio,"
      "exposed_comm_ratio,recompute_ratio,time_bound,run_key\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const TuneRow& r = rows[i];
    const RunSummary& s = r.summary;
    csv += std::to_string(i + 1) + "," + std::to_string(r.candidate->gpus) + "," +
           std::to_string(r.candidate->dp);
    if (derived_mb) csv += "," + std::to_string(r.candidate->micro_batches);
    for (const std::string& l : r.candidate->labels) csv += "," + CsvQuote(l);
    char buf[512];
    std::snprintf(buf, sizeof buf, ",%.9g,%.9g,%.9g,%.9g,%.6g,%.4f,%.6g,%.6g,%.6g,%.6g,", r.objective,
                  s.gpu_days, s.tokens_per_s, s.iteration_time_us.p50 / 1e3, s.mfu,
                  static_cast<double>(r.peak_memory_bytes) / (1 << 30), s.bubble_ratio, s.idle_ratio,
                  s.exposed_comm_ratio, s.recompute_ratio);
    csv += buf;
    if (std::isfinite(r.candidate->time_bound)) {  // blank: not bounded (--no-prune, SP layouts)
      std::snprintf(buf, sizeof buf, "%.9g", r.candidate->time_bound);
      csv += buf;
    }
    csv += "," + r.candidate->run_key + "\n";
  }
  return csv;
}

// The candidates the time bound skipped, in skip order, with the bound that ruled each out.
std::string SkippedCsv(const TuneSpace& space, const std::vector<TuneCandidate>& skipped) {
  const bool derived_mb = space.micro_batches_per_step > 0;
  std::string csv = derived_mb ? "gpus,dp,micro_batches" : "gpus,dp";
  for (const SweepAxis& a : space.sweep.axes) csv += "," + CsvQuote(a.name);
  csv += std::string(",") + TuneObjectiveName(space.objective) + "_bound,memory_bound_gib,run_key\n";
  for (const TuneCandidate& c : skipped) {
    csv += std::to_string(c.gpus) + "," + std::to_string(c.dp);
    if (derived_mb) csv += "," + std::to_string(c.micro_batches);
    for (const std::string& l : c.labels) csv += "," + CsvQuote(l);
    char buf[96];
    std::snprintf(buf, sizeof buf, ",%.9g,%.6g,", c.time_bound,
                  static_cast<double>(c.memory_bound_bytes) / (1 << 30));
    csv += buf + c.run_key + "\n";
  }
  return csv;
}

}  // namespace

int RunTune(const TuneArgs& a, std::ostream& out, std::ostream& err) {
  InstallInterruptHandlers();
  int jobs = 1, shard = 0, shards = 1, top = 10, recheck = 0;
  if (a.jobs_given) {
    int64_t n = 0;
    if (!ParseInt64(a.jobs, n) || n < 1 || n > 1024)
      return Fail(err, "--jobs: '" + a.jobs + "' is not in [1, 1024]");
    jobs = static_cast<int>(n);
  }
  if (a.top_given) {
    int64_t n = 0;
    if (!ParseInt64(a.top, n) || n < 1 || n > 100000)
      return Fail(err, "--top: '" + a.top + "' is not in [1, 100000]");
    top = static_cast<int>(n);
  }
  if (a.recheck_given) {
    int64_t n = 0;
    if (!ParseInt64(a.recheck, n) || n < 1 || n > 1000)
      return Fail(err, "--recheck: '" + a.recheck + "' is not in [1, 1000]");
    recheck = static_cast<int>(n);
    bool built = false;
    for (const EngineInfo& info : Engines()) built = built || (info.name == "simgrid" && info.available);
    if (!built) return Fail(err, "--recheck: this mmtwin was built without the SimGrid engine");
  }
  if (a.shard_given)
    if (Status st = ParseShard(a.shard, shard, shards); !st.ok())
      return Fail(err, "--shard: " + st.error().message());
  auto space = LoadTuneSpace(a.space);
  if (!space) return Fail(err, space.error().message());
  auto e = EnumerateTune(*space, !a.no_prune);
  if (!e) return Fail(err, e.error().message());
  const std::string dir = a.output.empty() ? "runs/tune/" + space->sweep.name : a.output;
  const std::string db_path = a.db.empty() ? dir + ".sqlite" : a.db;
  std::ostream& text = a.json ? err : out;

  int64_t rejected = 0;
  for (const auto& [reason, n] : e->rejected) rejected += n;
  text << "tune " << space->sweep.name << ": " << e->combinations << " combinations: " << rejected
       << " rejected, " << e->pruned.size() << " ruled out by the memory bound, " << e->evaluate.size()
       << " to evaluate (objective " << TuneObjectiveName(space->objective) << ")\n";
  for (const auto& [reason, n] : e->rejected) text << "  rejected " << n << ": " << reason << "\n";
  if (!e->pruned.empty()) {
    const TuneCandidate* least = &e->pruned.front();
    for (const TuneCandidate& c : e->pruned)
      if (c.memory_bound_bytes < least->memory_bound_bytes) least = &c;
    text << "  ruled out " << e->pruned.size()
         << ": model states and CUDA context alone exceed the limit (least: "
         << GiB(static_cast<double>(least->memory_bound_bytes)) << " GiB > "
         << GiB(static_cast<double>(least->memory_limit_bytes)) << " GiB for "
         << TuneCandidateLabel(*space, *least) << ")\n";
  }
  if (a.dry_run) {
    for (const TuneCandidate& c : e->evaluate)
      text << "  " << c.run_key << "  " << TuneCandidateLabel(*space, c) << "  (memory bound "
           << GiB(static_cast<double>(c.memory_bound_bytes)) << " GiB)\n";
    return 0;
  }
  if (e->evaluate.empty()) {
    err << "mmtwin tune: no candidate to evaluate: "
        << (e->pruned.empty() ? std::string("every combination was rejected (reasons above)")
                              : "every valid layout needs more memory than the limit (device memory x (1 - "
                                "constraints.memory_headroom)); add GPUs, raise tp or pp, or a ZeRO stage")
        << "\n";
    return 1;
  }

  auto db = ResultsDb::Open(db_path);
  if (!db) return Fail(err, db.error().message());
  SweepRunOptions ro;
  ro.jobs = jobs;
  ro.shard = shard;
  ro.shards = shards;
  ro.cancel = InterruptFlag();
  ro.progress = [&err](const SweepProgress& p) {
    std::string axes;
    for (const auto& [k, v] : p.run->axes)
      if (k != "nodes") axes += (axes.empty() ? "" : ", ") + k + "=" + v;
    err << "[" << p.done << "/" << p.total << "] " << axes << ": ";
    if (p.record->status == "ok" && p.record->summary)
      err << "p50 " << Fixed(p.record->summary->iteration_time_us.p50 / 1e3, 1) << " ms, "
          << Significant(p.record->summary->gpu_days) << " GPU-days"
          << (p.record->summary->oom ? ", OOM" : "");
    else
      err << "error: " << p.record->error.substr(0, 160);
    err << "\n" << std::flush;
  };
  // Runs a sweep into the database and reads its records back; rc != 0 is the exit code (error, interrupted).
  SweepOutcome outcome;
  auto run = [&](const SweepSpec& s, std::vector<RunRecord>& records) -> int {
    auto o = RunSweep(s, **db, ro);
    if (!o) return Fail(err, o.error().message());
    if (o->interrupted) {
      err << "mmtwin tune: interrupted; the runs recorded in " << db_path << " stay, a re-run resumes\n";
      return 128 + InterruptSignal();
    }
    outcome = *o;
    auto rows = (*db)->Runs(s.name);
    if (!rows) return Fail(err, rows.error().message());
    records = std::move(*rows);
    return 0;
  };
  // The evaluation: with pruning, in waves that skip the candidates whose time bound cannot beat the runs
  // already evaluated (tune.h EvaluateTune); the best max(--top, --recheck) rows and the front stay exact.
  TuneEvaluateOptions eo;
  eo.sweep = ro;
  eo.time_prune = !a.no_prune;
  eo.keep = std::max({top, recheck, 2});
  if (eo.time_prune)
    text << "bounding every candidate's " << TuneObjectiveName(space->objective)
         << " from its data plan (one preparation per data plan)\n";
  auto ev = EvaluateTune(*space, *e, **db, eo);
  if (!ev) return Fail(err, ev.error().message());
  if (ev->interrupted) {
    err << "mmtwin tune: interrupted; the runs recorded in " << db_path << " stay, a re-run resumes\n";
    return 128 + InterruptSignal();
  }
  const std::vector<RunRecord> records = std::move(ev->records);
  outcome = ev->outcome;
  const TuneResult r = RankTune(*space, *e, records);
  if (eo.time_prune)
    text << "time bound: " << ev->bounded << " of " << e->evaluate.size() + e->time_pruned.size()
         << " candidates bounded (" << ev->prepared << " data plans, " << Fixed(ev->bound_seconds, 1)
         << " s); " << e->time_pruned.size() << " skipped as unable to beat the runs evaluated, in "
         << ev->waves << " waves\n";
  text << "evaluated " << outcome.executed << " (" << outcome.skipped << " already in " << db_path << ", "
       << outcome.errors << " errors); " << r.ranked.size() << " fit, " << r.infeasible.size()
       << " out of memory or over the headroom"
       << (r.missing ? ", " + std::to_string(r.missing) +
                           " not in the database (another shard's: not run yet, or skipped by that shard's "
                           "time bound)"
                     : "")
       << "\n";

  // The re-check: the best K again with SimGrid, as a second sweep in the same database (resumable too).
  std::vector<double> rechecked;
  if (recheck > 0 && !r.ranked.empty()) {
    const std::vector<TuneRow> best(r.ranked.begin(),
                                    r.ranked.begin() + std::min<size_t>(r.ranked.size(), recheck));
    const SweepSpec rs = RecheckSweep(*space, best, "simgrid");
    text << "re-checking the best " << best.size() << " with the SimGrid engine\n";
    std::vector<RunRecord> rs_records;
    if (int rc = run(rs, rs_records)) return rc;
    rechecked = RecheckObjectives(*space, rs, rs_records);
  }
  auto rechecked_text = [&](size_t i) -> std::string {
    if (i >= rechecked.size()) return "";
    const double v = rechecked[i], base = r.ranked[i].objective;
    return "simgrid " + ObjectiveText(*space, v) + " (" + (v >= base ? "+" : "") +
           Fixed(100 * (v / base - 1), 1) + "%)";
  };

  std::string md =
      "# Tune: " + space->sweep.name + "\n\n" +
      (space->sweep.description.empty() ? "" : space->sweep.description + "\n\n") + "Space: `" + a.space +
      "`, objective " + TuneObjectiveName(space->objective) + ", memory headroom " +
      Fixed(100 * space->memory_headroom, 0) + "%. " + std::to_string(e->combinations) +
      " combinations: " + std::to_string(rejected) + " rejected, " + std::to_string(e->pruned.size()) +
      " ruled out by the memory lower bound, " +
      (a.no_prune
           ? std::string()
           : std::to_string(e->time_pruned.size()) + " skipped by the time lower bound (skipped.csv), ") +
      std::to_string(e->evaluate.size()) + " evaluated, " + std::to_string(r.ranked.size()) + " fit.\n\n";
  for (const auto& [reason, n] : e->rejected) md += "- rejected " + std::to_string(n) + ": " + reason + "\n";
  md += "\n| rank | configuration | objective | peak memory (GiB) | re-checked |\n|---:|---|---:|---:|---|\n";
  for (size_t i = 0; i < r.ranked.size() && i < static_cast<size_t>(top); ++i)
    md += "| " + std::to_string(i + 1) + " | " + TuneCandidateLabel(*space, *r.ranked[i].candidate) + " | " +
          ObjectiveText(*space, r.ranked[i].objective) + " | " +
          GiB(static_cast<double>(r.ranked[i].peak_memory_bytes)) + " | " + rechecked_text(i) + " |\n";
  md += "\nPareto front (objective against peak memory): ";
  for (size_t i = 0; i < r.pareto.size(); ++i)
    md += (i ? "; " : "") + TuneCandidateLabel(*space, *r.pareto[i].candidate) + " (" +
          ObjectiveText(*space, r.pareto[i].objective) + ", " +
          GiB(static_cast<double>(r.pareto[i].peak_memory_bytes)) + " GiB)";
  md += "\n\n" + (r.why.empty() ? std::string() : r.why + "\n");

  if (!a.json) {
    if (r.ranked.empty()) {
      out << "no evaluated candidate fits: every one ran out of memory or over the headroom\n";
    } else {
      out << "best " << std::min<size_t>(r.ranked.size(), top) << ":\n";
      for (size_t i = 0; i < r.ranked.size() && i < static_cast<size_t>(top); ++i)
        out << Pad(std::to_string(i + 1), 4, true) << "  " << ObjectiveText(*space, r.ranked[i].objective)
            << "  peak " << GiB(static_cast<double>(r.ranked[i].peak_memory_bytes)) << " GiB  "
            << TuneCandidateLabel(*space, *r.ranked[i].candidate)
            << (i < rechecked.size() ? "  [" + rechecked_text(i) + "]" : std::string()) << "\n";
      out << "Pareto front (objective, peak memory): " << r.pareto.size() << " configurations\n";
      if (!r.why.empty()) out << r.why << "\n";
    }
  }
  // The front as a picture: every fitting configuration and the front, objective against peak memory (the one
  // chart writer of the reports, report/chart.h, on two scales of its own).
  report::ChartSpec chart;
  chart.kind = report::ChartSpec::Kind::kPoints;
  chart.same_scale = false;
  chart.title =
      "Tune " + space->sweep.name + ": " + TuneObjectiveName(space->objective) + " against peak memory";
  chart.x_label = "peak memory per GPU, worst stage (GiB)";
  chart.y_label = space->objective == TuneObjective::kGpuDays      ? "GPU-days per epoch"
                  : space->objective == TuneObjective::kTokensPerS ? "tokens/s"
                                                                   : "iteration time (ms)";
  chart.value_decimals = -1;
  report::ChartSeries all{"every configuration that fits (" + std::to_string(r.ranked.size()) + ")"};
  report::ChartSeries front{"Pareto front (" + std::to_string(r.pareto.size()) + ")"};
  for (const TuneRow& x : r.ranked) {
    all.xs.push_back(static_cast<double>(x.peak_memory_bytes) / (1 << 30));
    all.values.push_back(x.objective);
  }
  for (const TuneRow& x : r.pareto) {
    front.xs.push_back(static_cast<double>(x.peak_memory_bytes) / (1 << 30));
    front.values.push_back(x.objective);
  }
  chart.series = {all, front};
  report::SvgPlotter plotter;
  auto svg = plotter.Chart(chart, 720, 480);
  if (!svg) return Fail(err, svg.error().message());
  md += "\n![" + std::string(TuneObjectiveName(space->objective)) + " against peak memory](pareto.svg)\n";
  if (!a.no_prune)
    md +=
        "\nThe time lower bound (driver/time_bound.h) skipped the configurations that cannot beat the best " +
        std::to_string(eo.keep) +
        " evaluated ones nor enter the Pareto front: the best, the runner-up, the first " +
        std::to_string(eo.keep) +
        " rows and the front are those of an exhaustive search; ranked.csv holds the evaluated ones. " +
        std::to_string(ev->bounded) + " of " + std::to_string(e->evaluate.size() + e->time_pruned.size()) +
        " candidates were bounded.\n";
  const std::string ranked_csv = RowsCsv(*space, r.ranked), pareto_csv = RowsCsv(*space, r.pareto);
  const std::string skipped_csv = a.no_prune ? "" : SkippedCsv(*space, e->time_pruned);
  std::vector<std::pair<std::string, std::string_view>> files = {
      {"ranked.csv", ranked_csv}, {"pareto.csv", pareto_csv}, {"pareto.svg", *svg}, {"README.md", md}};
  if (!a.no_prune) files.emplace_back("skipped.csv", skipped_csv);
  if (Status st = WriteFolderAtomic(dir, files); !st.ok()) return Fail(err, st.error().message());
  text << "wrote " << dir << "/{ranked.csv, pareto.csv, pareto.svg, README.md"
       << (a.no_prune ? "" : ", skipped.csv") << "}; runs in " << db_path << "\n";
  if (a.json) {
    nlohmann::json j = {{"space", a.space},
                        {"objective", TuneObjectiveName(space->objective)},
                        {"combinations", e->combinations},
                        {"rejected", e->rejected},
                        {"pruned", e->pruned.size()},
                        {"time_pruned", e->time_pruned.size()},
                        {"evaluated", e->evaluate.size()},
                        {"fit", r.ranked.size()},
                        {"output", dir},
                        {"db", db_path}};
    nlohmann::json ranked = nlohmann::json::array();
    for (size_t i = 0; i < r.ranked.size() && i < static_cast<size_t>(top); ++i) {
      nlohmann::json axes = nlohmann::json::object();
      for (size_t k = 0; k < space->sweep.axes.size(); ++k)
        axes[space->sweep.axes[k].name] = r.ranked[i].candidate->labels[k];
      ranked.push_back({{"rank", i + 1},
                        {"gpus", r.ranked[i].candidate->gpus},
                        {"dp", r.ranked[i].candidate->dp},
                        {"axes", axes},
                        {"objective", r.ranked[i].objective},
                        {"peak_memory_bytes", r.ranked[i].peak_memory_bytes}});
      if (i < rechecked.size()) ranked.back()["objective_simgrid"] = rechecked[i];
    }
    j["ranked"] = ranked;
    out << j.dump(2) << "\n";
  }
  return r.ranked.empty() ? 1 : 0;
}

}  // namespace mmtwin::cli

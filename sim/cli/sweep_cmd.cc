// SPDX-License-Identifier: Apache-2.0
// mmtwin sweep: expand a sweep file (scenarios/README.md, "Sweeps"), run it on worker processes into a SQLite
// results database (resumable, shardable), print progress and a table of axis values vs key metrics.
//   mmtwin sweep SWEEP.yaml [--jobs N] [--shard i/N] [--db FILE] [--csv OUT] [--dry-run]
//   mmtwin sweep merge OUT.sqlite IN.sqlite...
//   mmtwin sweep export --db FILE -o OUT.csv
//   mmtwin sweep table --db FILE [--sweep NAME]
// Exit codes: 0 every run ok, 1 some run recorded an error, 2 bad input, 128 + signal interrupted (SIGINT 130,
// SIGTERM 143: the finished runs are kept, the same command resumes), 3 stopped early
// (MMTWIN_SWEEP_STOP_AFTER=k, a test hook that stops after k runs as if the process had been killed).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/eval/evaluator.h"
#include "core/records/headline_metrics.h"
#include "core/records/records_codec.h"
#include "core/util/csv.h"
#include "core/util/interrupt.h"
#include "sweep/results_db.h"
#include "sweep/runner.h"
#include "sweep/sweep.h"

#include <nlohmann/json.hpp>

namespace mmtwin::cli {
namespace {

std::string Duration(double s) {
  if (!std::isfinite(s)) return "?";
  if (s < 90) return Fixed(s, 0) + " s";
  if (s < 5400) return Fixed(s / 60, 1) + " min";
  return Fixed(s / 3600, 1) + " h";
}

// The speed-up baseline of a table: the first run (in run order) that finished and fits its device memory; -1
// when none does. An out-of-memory run is never the baseline (its figures are those of a run that cannot start).
int SpeedupBaseline(const std::vector<RunRecord>& rows) {
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].status == "ok" && rows[i].summary && !rows[i].summary->oom &&
        rows[i].summary->samples_per_s > 0)
      return static_cast<int>(i);
  return -1;
}

// The speed-up of `r` over the baseline row: baseline GPU-seconds per sample / r's; NaN when either is missing.
double Speedup(const std::vector<RunRecord>& rows, int baseline, const RunRecord& r) {
  if (baseline < 0 || r.status != "ok" || !r.summary) return std::nan("");
  return GpuSecondsPerSample(*rows[baseline].summary) / GpuSecondsPerSample(*r.summary);
}

// The results table: one row per run (in run order), axis columns then metrics.
void WriteTable(const std::vector<std::string>& axis_names, const std::vector<RunRecord>& rows,
                std::ostream& out) {
  std::vector<std::string> head = {"#"};
  for (const auto& a : axis_names) head.push_back(a);
  const std::vector<std::string> metrics = {"p50 ms", "GPU-days", "speed-up", "bubble",
                                            "idle",   "recomp",   "MFU",      "OOM"};
  head.insert(head.end(), metrics.begin(), metrics.end());
  const int baseline = SpeedupBaseline(rows);
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> errors;
  for (const auto& r : rows) {
    std::vector<std::string> c = {std::to_string(r.run_index)};
    std::map<std::string, std::string> ax(r.axes.begin(), r.axes.end());
    for (const auto& a : axis_names) c.push_back(ax.count(a) ? ax[a] : "");
    if (r.status != "ok" || !r.summary) {
      c.push_back("error");
      for (size_t i = 1; i < metrics.size(); ++i) c.push_back("");
      errors.push_back("#" + std::to_string(r.run_index) + ": " + r.error);
    } else {
      const RunSummary& s = *r.summary;
      auto pct = [&](double ratio) {
        const double x = 100 * ratio;
        return Fixed(std::fabs(x) < 0.05 ? 0.0 : x, 1) + "%";  // no "-0.0%"
      };
      const double speedup = Speedup(rows, baseline, r);
      c.push_back(Fixed(s.iteration_time_us.p50 / 1e3, 1));
      c.push_back(Significant(s.gpu_days));
      c.push_back(std::isfinite(speedup) && !s.oom ? Fixed(speedup, 2) + "x" : "-");
      c.push_back(pct(s.bubble_ratio));
      c.push_back(pct(s.idle_ratio));
      c.push_back(pct(s.recompute_ratio));
      c.push_back(pct(s.mfu));
      c.push_back(s.oom ? "yes" : "no");
    }
    cells.push_back(std::move(c));
  }
  std::vector<size_t> w(head.size());
  for (size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
  for (const auto& c : cells)
    for (size_t i = 0; i < c.size(); ++i) w[i] = std::max(w[i], c[i].size());
  const size_t first_metric = 1 + axis_names.size();
  auto line = [&](const std::vector<std::string>& c) {
    std::string s;
    for (size_t i = 0; i < c.size(); ++i) s += (i ? "  " : "") + Pad(c[i], w[i], i == 0 || i >= first_metric);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };
  line(head);
  for (const auto& c : cells) line(c);
  for (const auto& e : errors) out << "  " << e << "\n";
  if (baseline >= 0)
    out << "speed-up: GPU-time per trained sample of run #" << rows[baseline].run_index
        << " (the first run that fits) over each run's; none for a run that does not fit\n";
  else if (!rows.empty())
    out << "speed-up: none (no run fits its device memory)\n";
}

// The same rows as JSON: index, key, axes (name: value), status, error, speedup (as in the table; null where
// none), and every summary column (SummaryColumns(), numbers as numbers) under "summary".
nlohmann::json TableJson(const std::vector<RunRecord>& rows) {
  const int baseline = SpeedupBaseline(rows);
  nlohmann::json a = nlohmann::json::array();
  for (const RunRecord& r : rows) {
    nlohmann::json j = {{"index", r.run_index}, {"key", r.run_key}, {"status", r.status}};
    nlohmann::json axes = nlohmann::json::object();
    for (const auto& [k, v] : r.axes) axes[k] = v;
    j["axes"] = axes;
    if (!r.error.empty()) j["error"] = r.error;
    const double speedup = Speedup(rows, baseline, r);
    j["speedup"] = std::isfinite(speedup) && !(r.summary && r.summary->oom) ? nlohmann::json(speedup)
                                                                            : nlohmann::json(nullptr);
    if (r.summary) {
      nlohmann::json summary = nlohmann::json::object();
      for (const SummaryColumn& c : SummaryColumns())
        std::visit([&](const auto& v) { summary[c.name] = v; }, c.get(*r.summary));
      j["summary"] = summary;
    }
    a.push_back(j);
  }
  return a;
}

struct RunOptions {
  std::string sweep, db, csv;
  int jobs = 1, shard = 0, shards = 1;
  bool sharded = false, dry_run = false, json = false;
};

Status Convert(const SweepRunArgs& a, RunOptions& o) {
  o.sweep = a.sweep;
  o.db = a.db;
  o.csv = a.csv;
  o.dry_run = a.dry_run;
  o.json = a.json;
  if (a.jobs_given) {
    int64_t n = 0;
    if (!ParseInt64(a.jobs, n) || n < 1 || n > 1024)
      return Error("sweep: --jobs: '" + a.jobs + "' is not in [1, 1024]");
    o.jobs = static_cast<int>(n);
  }
  if (a.shard_given) {
    if (Status st = ParseShard(a.shard, o.shard, o.shards); !st.ok()) return st.error().Wrap("sweep");
    o.sharded = true;
  }
  if (o.sweep.empty()) return Error("sweep: a sweep file is required");
  return Status();
}

int Fail(std::ostream& err, const std::string& msg) {
  err << "mmtwin " << msg << "\n";
  return 2;
}

int ExportTo(ResultsDb& db, const std::string& path, std::ostream& err) {
  auto csv = db.ExportCsv();
  if (!csv) return Fail(err, "sweep export: " + csv.error().message());
  if (Status st = WriteFileAtomic(path, *csv); !st.ok())
    return Fail(err, "sweep export: " + st.error().message());
  return 0;
}

// The sweep's runs with a recorded row, in index order, each with its run index and axes as the sweep file gives
// them (rows are shared by run key, so a row may carry the axes of the sweep that recorded it first); runs outside
// `keep` are left out. `unmatched`: rows of `records` no run of the sweep matched (an earlier version's).
std::vector<RunRecord> RowsOfRuns(const SweepSpec& spec, const std::vector<RunRecord>& records,
                                  const std::function<bool(int64_t)>& keep, size_t* unmatched = nullptr) {
  std::map<std::string, const RunRecord*> by_key;
  for (const RunRecord& r : records) by_key[r.run_key] = &r;
  std::vector<RunRecord> rows;
  std::set<std::string> used;
  for (int64_t i = 0; i < SweepSize(spec); ++i) {
    if (!keep(i)) continue;
    const SweepRun run = ExpandRun(spec, i);
    auto it = by_key.find(run.key);
    if (it == by_key.end()) continue;
    RunRecord row = *it->second;
    row.run_index = run.index;
    row.axes = run.axes;
    rows.push_back(std::move(row));
    used.insert(run.key);
  }
  if (unmatched) *unmatched = by_key.size() - used.size();
  return rows;
}

}  // namespace

int RunSweep(const SweepRunArgs& args, std::ostream& out, std::ostream& err) {
  InstallInterruptHandlers();  // from here on SIGINT / SIGTERM only set the flag, polled by RunSweep
  RunOptions o;
  if (Status st = Convert(args, o); !st.ok()) {
    err << "mmtwin " << st.error().message() << "\n";
    return 2;
  }
  auto spec = LoadSweep(o.sweep);
  if (!spec) return Fail(err, "sweep: " + spec.error().message());
  // Runs are expanded one at a time (ExpandRun): a large sweep lists or starts at once, in bounded memory.
  const int64_t size = SweepSize(*spec);

  if (o.dry_run) {
    nlohmann::json runs = nlohmann::json::array();
    if (!o.json)
      out << "sweep " << spec->name << ": " << size << " runs (" << (spec->zip ? "zip" : "cartesian")
          << ")\n";
    for (int64_t i = 0; i < size; ++i) {
      if (Interrupted()) return 128 + InterruptSignal();
      if (!InShard(static_cast<int>(i), o.shard, o.shards)) continue;
      const SweepRun r = ExpandRun(*spec, i);
      if (o.json) {
        nlohmann::json axes = nlohmann::json::object();
        for (const auto& [k, v] : r.axes) axes[k] = v;
        nlohmann::json j = {{"index", r.index}, {"key", r.key}, {"axes", axes}};
        if (!r.error.empty()) j["invalid"] = r.error;
        runs.push_back(j);
        continue;
      }
      out << Pad(std::to_string(r.index), 4, true) << "  " << r.key << "  ";
      for (size_t i = 0; i < r.axes.size(); ++i)
        out << (i ? ", " : "") << r.axes[i].first << "=" << r.axes[i].second;
      if (!r.error.empty()) out << "  INVALID: " << r.error;
      out << "\n";
    }
    if (o.json)
      out << nlohmann::json{{"sweep", spec->name}, {"size", size}, {"zip", spec->zip}, {"runs", runs}}.dump(2)
          << "\n";
    return 0;
  }

  std::string db_path = o.db;
  if (db_path.empty())
    db_path = spec->name +
              (o.sharded ? ".shard-" + std::to_string(o.shard) + "-of-" + std::to_string(o.shards) : "") +
              ".sqlite";
  auto db = ResultsDb::Open(db_path);
  if (!db) return Fail(err, "sweep: " + db.error().message());

  SweepRunOptions ro;
  ro.jobs = o.jobs;
  ro.shard = o.shard;
  ro.shards = o.shards;
  ro.share_prepared = !args.no_share;
  // The default run function (RunScenario), with the trace and data plan shared between runs.
  ro.cancel = InterruptFlag();
  if (const char* stop = std::getenv("MMTWIN_SWEEP_STOP_AFTER")) {
    int64_t k = 0;
    if (ParseInt64(stop, k) && k > 0) ro.stop_after = static_cast<int>(k);
  }
  ro.progress = [&err](const SweepProgress& p) {
    std::string axes;
    for (const auto& [k, v] : p.run->axes) axes += (axes.empty() ? "" : ", ") + k + "=" + v;
    err << "[" << p.done << "/" << p.total << "] #" << p.run->index << " " << axes << ": ";
    if (p.record->status == "ok" && p.record->summary) {
      err << "p50 " << Fixed(p.record->summary->iteration_time_us.p50 / 1e3, 1) << " ms, "
          << Significant(p.record->summary->gpu_days) << " GPU-days";
    } else {
      std::string e = p.record->error;
      if (e.size() > 160) e = e.substr(0, 157) + "...";
      err << "error: " << e;
    }
    err << " (" << Fixed(p.record->wall_seconds, 1) << " s)";
    if (p.done < p.total) err << ", ETA " << Duration(p.eta_seconds);
    err << "\n" << std::flush;
  };
  // With --json the text lines go to stderr (progress goes there anyway) and stdout holds only the JSON.
  std::ostream& text = o.json ? err : out;
  text << "sweep " << spec->name << ": " << size << " runs (" << (spec->zip ? "zip" : "cartesian");
  if (o.sharded) text << ", shard " << o.shard << "/" << o.shards;
  text << "), " << o.jobs << " job" << (o.jobs > 1 ? "s" : "") << ", database " << db_path << "\n"
       << std::flush;
  auto outcome = RunSweep(*spec, **db, ro);
  if (!outcome) return Fail(err, "sweep: " + outcome.error().message());
  text << "ran " << outcome->executed << " of " << outcome->in_shard << " runs (" << outcome->skipped
       << " already done, " << outcome->errors << " errors)\n";
  if (outcome->executed > 0) {
    char line[256];
    std::snprintf(
        line, sizeof line,
        "%.2f s per run (worker wall time); trace and data plan prepared %d %s for %d %s (%.2f s)\n",
        outcome->run_seconds / outcome->executed, outcome->prepared,
        outcome->prepared == 1 ? "time" : "times", outcome->shared_runs,
        outcome->shared_runs == 1 ? "run" : "runs", outcome->prepare_seconds);
    text << line;
  }
  if (outcome->interrupted) {
    err << "mmtwin sweep: interrupted (" << InterruptSignalName() << ") after " << outcome->executed
        << " runs; they are recorded in " << db_path << "; run the same command again to resume\n";
    return 128 + InterruptSignal();
  }
  if (outcome->stopped) {
    text << "stopped early after " << outcome->executed
         << " runs (MMTWIN_SWEEP_STOP_AFTER); run again to finish\n";
    return 3;
  }

  auto records = (*db)->Runs(spec->name);
  if (!records) return Fail(err, "sweep: " + records.error().message());
  // The table: this sweep's runs of this shard, in index order. Up to kTableExpand runs each is expanded again
  // so a row recorded by an earlier version of the sweep file under the same name is not shown as this one's;
  // larger sweeps list the rows recorded for their indices (`mmtwin sweep table` and `export` read the file).
  constexpr int64_t kTableExpand = 5000;
  std::vector<RunRecord> rows;
  bool any_error = false;
  if (size <= kTableExpand) {
    rows = RowsOfRuns(*spec, *records,
                      [&](int64_t i) { return InShard(static_cast<int>(i), o.shard, o.shards); });
    for (const RunRecord& r : rows) any_error |= r.status != "ok";
  } else {
    for (const RunRecord& r : *records)
      if (r.run_index < size && InShard(r.run_index, o.shard, o.shards)) {
        any_error |= r.status != "ok";
        rows.push_back(r);
      }
  }
  std::vector<std::string> axis_names;
  for (const auto& a : spec->axes) axis_names.push_back(a.name);
  if (!o.json) {
    out << "\n";
    WriteTable(axis_names, rows, out);
  }
  if (!o.csv.empty()) {
    if (int rc = ExportTo(**db, o.csv, err); rc != 0) return rc;
    text << "csv             " << o.csv << "\n";
  }
  if (o.json)
    out << nlohmann::json{{"sweep", spec->name},
                          {"database", db_path},
                          {"size", size},
                          {"executed", outcome->executed},
                          {"skipped", outcome->skipped},
                          {"errors", outcome->errors},
                          {"rows", TableJson(rows)}}
               .dump(2)
        << "\n";
  return any_error ? 1 : 0;
}

// The merge writes into a copy of OUT (OUT.tmp-PID, from OUT when it exists) and renames it over OUT only once
// every input merged: a failure (a bad input, a full disk, an interrupt) leaves OUT as it was (issue 34).
// OUT must not be written by a running sweep meanwhile: rows it adds to OUT after the copy would be replaced.
int RunSweepMerge(const SweepMergeArgs& a, std::ostream& out, std::ostream& err) {
  std::vector<std::string> args = {a.output};
  args.insert(args.end(), a.inputs.begin(), a.inputs.end());
  if (args.size() < 2) return Fail(err, "sweep merge: usage: mmtwin sweep merge OUT.sqlite IN.sqlite...");
  namespace fs = std::filesystem;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == args[0]) return Fail(err, "sweep merge: input '" + args[i] + "' is the output");
    std::error_code ec;
    if (!fs::is_regular_file(args[i], ec)) return Fail(err, "sweep merge: " + args[i] + ": no such database");
  }
  std::error_code ec;
  if (fs::exists(args[0], ec) && !fs::is_regular_file(args[0], ec))
    return Fail(err, "sweep merge: " + args[0] + ": exists and is not a file");
  const std::string tmp = args[0] + ".tmp-" + std::to_string(::getpid());
  auto drop_tmp = [&tmp] {
    std::error_code e;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(tmp + suffix, e);
  };
  drop_tmp();
  if (fs::exists(args[0], ec)) {
    // An mmtwin database (another program's file is refused unchanged), copied whole as a reader sees it (a
    // write-ahead log beside it included) without changing it.
    auto current = ResultsDb::OpenReadOnly(args[0]);
    if (!current) return Fail(err, "sweep merge: " + current.error().message());
    if (Status st = (*current)->BackupTo(tmp); !st.ok()) {
      drop_tmp();
      return Fail(err, "sweep merge: " + st.error().message());
    }
  }
  int written = 0, total = 0;
  size_t in_all = 0;
  Status merged = [&]() -> Status {
    MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<ResultsDb> dst, ResultsDb::Open(tmp));
    for (size_t i = 1; i < args.size(); ++i) {
      if (Interrupted()) return Error(std::string("interrupted (") + InterruptSignalName() + ")");
      MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<ResultsDb> src, ResultsDb::OpenReadOnly(args[i]));
      MMTWIN_ASSIGN_OR_RETURN(std::vector<SweepInfo> sweeps, src->Sweeps());
      for (const auto& sw : sweeps) MMTWIN_RETURN_IF_ERROR(dst->PutSweep(sw));
      MMTWIN_ASSIGN_OR_RETURN(std::vector<RunRecord> rows, src->Runs());
      for (const auto& r : rows) {
        ++total;
        MMTWIN_ASSIGN_OR_RETURN(bool w, dst->Merge(r));
        written += w ? 1 : 0;
      }
    }
    MMTWIN_ASSIGN_OR_RETURN(std::vector<RunRecord> all, dst->Runs());
    in_all = all.size();
    return Status();  // dst closes here: its WAL is checkpointed into the file before the rename
  }();
  if (merged.ok() && std::rename(tmp.c_str(), args[0].c_str()) != 0)
    merged = Error(args[0] + ": cannot replace it: " + std::strerror(errno));
  if (!merged.ok()) {
    drop_tmp();
    return Fail(err, "sweep merge: " + merged.error().message() + " (" + args[0] + " is unchanged)");
  }
  drop_tmp();  // only the journal files, if any were left
  if (a.json) {
    out << nlohmann::json{{"output", args[0]},
                          {"inputs", std::vector<std::string>(args.begin() + 1, args.end())},
                          {"rows_read", total},
                          {"rows_written", written},
                          {"duplicates", total - written},
                          {"runs", in_all}}
               .dump(2)
        << "\n";
    return 0;
  }
  out << "merged " << total << " rows from " << args.size() - 1 << " databases into " << args[0] << ": "
      << written << " written, " << total - written << " duplicates kept as they were; " << in_all
      << " runs in total\n";
  return 0;
}

int RunSweepExport(const SweepExportArgs& a, std::ostream& out, std::ostream& err) {
  const std::string& db_path = a.db;
  const std::string& csv = a.output;
  if (db_path.empty() || csv.empty())
    return Fail(err, "sweep export: usage: mmtwin sweep export --db FILE -o OUT.csv");
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec))
    return Fail(err, "sweep export: " + db_path + ": no such database");
  auto db = ResultsDb::OpenReadOnly(db_path);
  if (!db) return Fail(err, "sweep export: " + db.error().message());
  if (int rc = ExportTo(**db, csv, err); rc != 0) return rc;
  out << "wrote " << csv << "\n";
  return 0;
}

int RunSweepTable(const SweepTableArgs& a, std::ostream& out, std::ostream& err) {
  const std::string& db_path = a.db;
  const std::string& sweep = a.sweep;
  std::error_code ec;
  if (db_path.empty() || !std::filesystem::exists(db_path, ec))
    return Fail(err, "sweep table: give an existing database with --db FILE");
  auto db = ResultsDb::OpenReadOnly(db_path);
  if (!db) return Fail(err, "sweep table: " + db.error().message());
  auto sweeps = (*db)->Sweeps();
  if (!sweeps) return Fail(err, "sweep table: " + sweeps.error().message());
  bool any = false;
  nlohmann::json json_sweeps = nlohmann::json::array();
  for (const auto& s : *sweeps) {
    if (!sweep.empty() && s.name != sweep) continue;
    auto rows = (*db)->Runs(s.name);
    if (!rows) return Fail(err, "sweep table: " + rows.error().message());
    std::vector<std::string> axis_names;
    const nlohmann::json names = nlohmann::json::parse(s.axes_json, nullptr, false);
    if (names.is_array())
      for (const auto& n : names)
        if (n.is_string()) axis_names.push_back(n.get<std::string>());
    // Rows an earlier version of the sweep file recorded under the same name are not this sweep's (issue 34:
    // "42 of 12 runs recorded"). When the sweep file is still there and unchanged (its digest is the one
    // recorded), its runs are expanded and matched by key, as `mmtwin sweep` prints its table; otherwise rows
    // with other axes or indices past today's runs are counted apart.
    std::vector<RunRecord> current;
    size_t earlier = 0;
    // The path as recorded (relative to where the sweep ran), else beside the database.
    auto spec = s.digest.empty() ? Result<SweepSpec>(Error("no digest")) : LoadSweep(s.path);
    if (!spec && !s.digest.empty() && !std::filesystem::path(s.path).is_absolute())
      spec = LoadSweep((std::filesystem::path(db_path).parent_path() / s.path).string());
    if (spec && SweepDigest(*spec) == s.digest && SweepSize(*spec) <= 5000) {
      current = RowsOfRuns(
          *spec, *rows, [](int64_t) { return true; }, &earlier);
    } else {
      for (RunRecord& r : *rows) {
        bool same_axes = r.axes.size() == axis_names.size() && r.run_index < s.runs;
        for (size_t k = 0; same_axes && k < axis_names.size(); ++k)
          same_axes = r.axes[k].first == axis_names[k];
        if (same_axes || axis_names.empty())
          current.push_back(std::move(r));
        else
          ++earlier;
      }
    }
    if (a.json) {
      json_sweeps.push_back({{"sweep", s.name},
                             {"size", s.runs},
                             {"recorded", current.size()},
                             {"earlier_rows", earlier},
                             {"rows", TableJson(current)}});
      any = true;
      continue;
    }
    out << (any ? "\n" : "") << "sweep " << s.name << ": " << current.size() << " of " << s.runs
        << " runs recorded";
    if (earlier > 0)
      out << " (" << earlier << " more " << (earlier == 1 ? "row" : "rows")
          << " from an earlier version of the sweep file, not shown)";
    out << "\n";
    WriteTable(axis_names, current, out);
    any = true;
  }
  if (!any)
    return Fail(err, "sweep table: no sweep" + (sweep.empty() ? std::string() : " named '" + sweep + "'") +
                         " in " + db_path);
  if (a.json) out << nlohmann::json{{"database", db_path}, {"sweeps", json_sweeps}}.dump(2) << "\n";
  return 0;
}

}  // namespace mmtwin::cli

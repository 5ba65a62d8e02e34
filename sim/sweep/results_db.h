// SPDX-License-Identifier: Apache-2.0
// The sweep results database (SQLite, WAL mode): one row per run in table `runs`, keyed by run_key, plus one
// row per sweep in table `sweeps`. In one sweep only its parent process writes; several sweeps may share one file
// (concurrent writers). Each Put is its own transaction, so an interrupted sweep loses at most the runs in flight.
//
// runs columns: run_key (primary key), sweep, run_index, status ('ok' | 'error'), error, axes_json, one
// column per axis (`axis_<name>`, numbers stored as numbers), the summary fields flattened (SummaryColumns() of
// core/records/records_codec.h: iteration_time_us_p50, ..., gpu_days in GPU-days, oom 0/1, ...), wall_seconds (the run's wall time),
// session (which `mmtwin sweep` invocation ran it: host:pid:start), finished_at (UTC ISO 8601),
// summary_json (summary.json), scenario_yaml (the resolved scenario).
//
//   MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<ResultsDb> db, ResultsDb::Open("omnibal-data.sqlite"));
//   MMTWIN_RETURN_IF_ERROR(db->Put(record));
//   MMTWIN_ASSIGN_OR_RETURN(std::set<std::string> done, db->OkKeys());
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/records/records.h"
#include "core/util/status.h"

struct sqlite3;

namespace mmtwin {

struct RunRecord {
  std::string run_key;
  std::string sweep;
  int run_index = 0;
  std::string status = "ok";  // "ok" or "error"
  std::string error;
  std::vector<std::pair<std::string, std::string>> axes;  // (axis name, value label)
  std::optional<RunSummary> summary;                      // empty for errors
  std::string scenario_yaml;
  double wall_seconds = 0;
  std::string session;
  std::string finished_at;
};

struct SweepInfo {
  std::string name;
  std::string path;
  std::string axes_json;  // ["name", ...] in axis order
  int runs = 0;           // runs in the whole sweep (all shards)
  std::string digest;     // SweepDigest of the spec last run ("" for files from before it was stored)
};

class ResultsDb {
 public:
  ~ResultsDb();
  ResultsDb(const ResultsDb&) = delete;
  ResultsDb& operator=(const ResultsDb&) = delete;

  // Opens or creates the database (WAL mode) and its tables. A file that is not an mmtwin results database (see
  // kResultsDbApplicationId) is an error and is left byte for byte as it was. Several processes may open and
  // write the same file at once (each write is one IMMEDIATE transaction; SQLite's busy timeout is 10 s).
  static Result<std::unique_ptr<ResultsDb>> Open(const std::string& path);
  // Opens an existing results database for reading only (sweep table / export, merge's inputs, the GUI): works
  // on a file or folder the user cannot write, changes nothing (no journal-mode switch, no schema upgrade; a WAL
  // database whose -shm cannot be created is read as immutable). A missing file, a file that is not an mmtwin
  // results database or a damaged one is an error. The writing methods fail on it.
  static Result<std::unique_ptr<ResultsDb>> OpenReadOnly(const std::string& path);
  // Writes a consistent copy of the whole database (what a reader sees, a write-ahead log included) to a new
  // file `path` (SQLite's online backup); this database is not changed.
  Status BackupTo(const std::string& path) const;

  // Inserts or replaces the run's row (one transaction); adds missing axis columns first.
  Status Put(const RunRecord& r);
  // Put unless a row with this run_key already exists with status ok and r is not ok, or both are ok
  // (merge: dedupe by run_key, keep ok over error). Returns whether it wrote.
  Result<bool> Merge(const RunRecord& r);
  Status PutSweep(const SweepInfo& s);

  Result<std::set<std::string>> OkKeys(const std::string& sweep = "");
  // run_index of the rows of `sweep` with status ok.
  Result<std::set<int64_t>> OkIndices(const std::string& sweep);
  Result<std::vector<RunRecord>> Runs(const std::string& sweep = "");  // ordered by sweep, run_index
  Result<std::vector<SweepInfo>> Sweeps();
  Status Delete(const std::string& run_key);

  // Every column of `runs` except summary_json and scenario_yaml, header first, ordered by sweep, run_index.
  Result<std::string> ExportCsv();

  const std::string& path() const { return path_; }

 private:
  ResultsDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Exec(const std::string& sql);
  Status EnsureAxisColumns(const std::vector<std::pair<std::string, std::string>>& axes);
  Result<std::vector<std::string>> Columns();
  Status RefreshColumns();  // columns_ from the file (another writer may have added some)

  sqlite3* db_;
  std::string path_;
  std::set<std::string> columns_;  // known columns of `runs`
};

// SQLite header application_id of an mmtwin results database ('mmtw'). Open refuses, changing nothing, a file
// that has another application_id, or tables other than `runs` and `sweeps` (another program's database).
constexpr int64_t kResultsDbApplicationId = 0x6d6d7477;

// "axis_" + the name with every character outside [A-Za-z0-9_] replaced by '_'.
std::string AxisColumn(const std::string& axis_name);

}  // namespace mmtwin

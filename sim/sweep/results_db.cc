// SPDX-License-Identifier: Apache-2.0
// SQLite storage of sweep results (see results_db.h): prepared statements, one transaction per write.
#include "sweep/results_db.h"

#include <variant>

#include <nlohmann/json.hpp>

#include "core/records/records_codec.h"

#include <sqlite3.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/util/csv.h"
#include "core/util/text.h"

namespace mmtwin {
namespace {

// Statement wrapper: finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) { rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr); }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK && st_; }
  sqlite3_stmt* get() { return st_; }
  void Text(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void TextOrNull(int i, const std::string& s) {
    if (s.empty())
      sqlite3_bind_null(st_, i);
    else
      Text(i, s);
  }
  std::string ColText(int i) {
    const unsigned char* p = sqlite3_column_text(st_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(st_, i)) : std::string();
  }

 private:
  sqlite3_stmt* st_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

const char* kFixedHead[] = {"run_key", "sweep", "run_index", "status", "error", "axes_json"};
const char* kFixedTail[] = {"wall_seconds", "session", "finished_at", "summary_json", "scenario_yaml"};

// An axis label as a number when it reads as one (so SQL can compare), else text.
void BindLabel(Stmt& st, int i, const std::string& label) {
  int64_t x = 0;
  double d = 0;
  if (ParseInt64(label, x))
    sqlite3_bind_int64(st.get(), i, x);
  else if (ParseDouble(label, d) && std::isfinite(d))
    sqlite3_bind_double(st.get(), i, d);
  else
    st.Text(i, label);
}

std::string Quote(const std::string& ident) {
  std::string q = "\"";
  for (char c : ident) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string Num(double x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string AxisColumn(const std::string& axis_name) {
  std::string c = "axis_";
  for (char ch : axis_name) {
    const bool ok =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    c += ok ? ch : '_';
  }
  return c;
}

ResultsDb::~ResultsDb() { sqlite3_close(db_); }

Status ResultsDb::Exec(const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : sqlite3_errmsg(db_);
    sqlite3_free(msg);
    return Error(path_ + ": " + m);
  }
  return Status();
}

Result<std::vector<std::string>> ResultsDb::Columns() {
  Stmt st(db_, "PRAGMA table_info(runs)");
  if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  std::vector<std::string> cols;
  while (sqlite3_step(st.get()) == SQLITE_ROW) cols.push_back(st.ColText(1));
  return cols;
}

namespace {

// The file's identity, read without writing anything: SQLite's header application_id and its tables.
struct DbIdentity {
  int64_t application_id = 0;
  std::set<std::string> tables;
  std::set<std::string> runs_columns;
};

Result<DbIdentity> ReadIdentity(sqlite3* db, const std::string& path) {
  DbIdentity id;
  auto fail = [&] { return Error(path + ": not a readable SQLite database: " + sqlite3_errmsg(db)); };
  {
    Stmt st(db, "PRAGMA application_id");
    if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return fail();
    id.application_id = sqlite3_column_int64(st.get(), 0);
  }
  {
    Stmt st(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
    if (!st.ok()) return fail();
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) id.tables.insert(st.ColText(0));
    if (rc != SQLITE_DONE) return fail();
  }
  if (id.tables.count("runs")) {
    Stmt st(db, "PRAGMA table_info(runs)");
    if (!st.ok()) return fail();
    while (sqlite3_step(st.get()) == SQLITE_ROW) id.runs_columns.insert(st.ColText(1));
  }
  return id;
}

// SQLite's structural check (b-trees, free list, page counts), read-only: a damaged file is refused before a
// write transaction could touch it. Linear in the file's size (results databases are a few MB).
Status QuickCheck(sqlite3* db, const std::string& path) {
  Stmt st(db, "PRAGMA quick_check(1)");
  if (!st.ok()) return Error(path + ": not a readable SQLite database: " + sqlite3_errmsg(db));
  const int rc = sqlite3_step(st.get());
  std::string verdict = rc == SQLITE_ROW ? st.ColText(0) : std::string(sqlite3_errmsg(db));
  for (char& c : verdict)
    if (c == '\n') c = ' ';
  if (rc == SQLITE_ROW && verdict == "ok") return Status();
  return Error(path + ": the results database is damaged (" + Abbreviate(verdict, 120) +
               "); nothing was changed. Restore it from a copy, or give --db a new file");
}

// Empty (a new file), ours by application_id, or an mmtwin file from before the application_id was set: only
// the tables `runs` (with the fixed leading columns) and `sweeps`.
Status CheckIdentity(const DbIdentity& id, const std::string& path) {
  const std::string foreign = path + ": not an mmtwin results database (";
  if (id.application_id == kResultsDbApplicationId) return Status();
  if (id.application_id != 0)
    return Error(foreign + "its application_id is " + std::to_string(id.application_id) +
                 "); nothing was changed. Give --db a new file or an mmtwin results database");
  if (id.tables.empty()) return Status();
  for (const std::string& t : id.tables)
    if (t != "runs" && t != "sweeps")
      return Error(foreign + "it has a table '" + t + "'); nothing was changed. Give --db a new file or an " +
                   "mmtwin results database");
  for (const char* c : kFixedHead)
    if (!id.runs_columns.count(c))
      return Error(foreign + "table 'runs' has no column '" + c + "'); nothing was changed");
  return Status();
}

}  // namespace

Result<std::unique_ptr<ResultsDb>> ResultsDb::Open(const std::string& path) {
  // First read-only: a file that is not ours (another program's database, a corrupt file) is refused before
  // anything is written to it (not even the WAL journal mode, which changes the header).
  {
    sqlite3* ro = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &ro, SQLITE_OPEN_READONLY, nullptr);
    if (rc == SQLITE_OK) {
      sqlite3_busy_timeout(ro, 10000);
      Result<DbIdentity> id = ReadIdentity(ro, path);
      Status intact = id.ok() ? QuickCheck(ro, path) : Status();
      sqlite3_close(ro);
      if (!id.ok()) return id.error();
      MMTWIN_RETURN_IF_ERROR(CheckIdentity(*id, path));
      MMTWIN_RETURN_IF_ERROR(intact);
    } else {
      sqlite3_close(ro);  // a missing file: created below
    }
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string m = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Error(path + ": cannot open the results database: " + m);
  }
  std::unique_ptr<ResultsDb> db(new ResultsDb(raw, path));
  sqlite3_busy_timeout(raw, 10000);
  MMTWIN_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=NORMAL"));
  // The schema is set up in one write transaction, re-checked inside it: two sweeps starting on the same new
  // file (or a file created by another program between the check above and here) are handled. It runs before
  // the switch to WAL, so when it fails (a damaged file the checks above missed) the rollback journal restores
  // the file byte for byte.
  MMTWIN_RETURN_IF_ERROR(db->Exec("BEGIN IMMEDIATE"));
  auto setup = [&]() -> Status {
    MMTWIN_ASSIGN_OR_RETURN(DbIdentity id, ReadIdentity(raw, path));
    MMTWIN_RETURN_IF_ERROR(CheckIdentity(id, path));
    std::string sql =
        "CREATE TABLE IF NOT EXISTS runs (run_key TEXT PRIMARY KEY, sweep TEXT, run_index INTEGER, status "
        "TEXT, error TEXT, axes_json TEXT";
    for (const auto& c : SummaryColumns()) sql += std::string(", ") + c.name + " " + c.sql_type;
    sql += ", wall_seconds REAL, session TEXT, finished_at TEXT, summary_json TEXT, scenario_yaml TEXT);";
    sql +=
        "CREATE TABLE IF NOT EXISTS sweeps (name TEXT PRIMARY KEY, path TEXT, axes_json TEXT, runs INTEGER, "
        "digest TEXT);";
    sql += "PRAGMA application_id = " + std::to_string(kResultsDbApplicationId) + ";";
    MMTWIN_RETURN_IF_ERROR(db->Exec(sql));
    MMTWIN_RETURN_IF_ERROR(db->RefreshColumns());
    // Older files may miss the sweep digest and summary columns added since: add them.
    bool has_digest = false;
    {
      Stmt st(raw, "PRAGMA table_info(sweeps)");
      while (st.ok() && sqlite3_step(st.get()) == SQLITE_ROW) has_digest |= st.ColText(1) == "digest";
    }
    if (!has_digest) MMTWIN_RETURN_IF_ERROR(db->Exec("ALTER TABLE sweeps ADD COLUMN digest TEXT"));
    for (const auto& c : SummaryColumns())
      if (!db->columns_.count(c.name)) {
        MMTWIN_RETURN_IF_ERROR(db->Exec(std::string("ALTER TABLE runs ADD COLUMN ") + c.name));
        db->columns_.insert(c.name);
      }
    return Status();
  };
  Status s = setup();
  if (!s.ok()) {
    (void)db->Exec("ROLLBACK");
    const std::string& m = s.error().message();
    return m.find("nothing was changed") != std::string::npos
               ? s.error()
               : Error(m + " (the file cannot be used as a results database; nothing was changed)");
  }
  MMTWIN_RETURN_IF_ERROR(db->Exec("COMMIT"));
  // Switching to WAL needs an exclusive lock and SQLite answers SQLITE_BUSY at once, without its busy handler,
  // while another process opens the same new file: retry here (for up to the same 10 s).
  for (int attempt = 0;; ++attempt) {
    Status wal = db->Exec("PRAGMA journal_mode=WAL");
    if (wal.ok()) break;
    if (sqlite3_errcode(raw) != SQLITE_BUSY || attempt >= 500) return wal.error();
    ::usleep(20000);
  }
  return db;
}

namespace {

// "file:" URI of `path` with `query` (SQLite's URI filenames: '%', '?' and '#' percent-encoded).
std::string FileUri(const std::string& path, const std::string& query) {
  std::string u = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", static_cast<unsigned char>(c));
      u += b;
    } else {
      u += c;
    }
  }
  return u + "?" + query;
}

}  // namespace

Result<std::unique_ptr<ResultsDb>> ResultsDb::OpenReadOnly(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Error(path + ": no such results database");
  // Read-only first; a WAL database in a folder the user cannot write cannot get its -shm file: then read it
  // as immutable (no locks: a writer running at the same time is not seen, which a read-only user cannot be).
  for (const char* query : {"mode=ro", "immutable=1"}) {
    sqlite3* raw = nullptr;
    const int rc =
        sqlite3_open_v2(FileUri(path, query).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_close(raw);
      continue;
    }
    sqlite3_busy_timeout(raw, 10000);
    std::unique_ptr<ResultsDb> db(new ResultsDb(raw, path));
    Result<DbIdentity> id = ReadIdentity(raw, path);
    if (!id.ok()) {
      // A WAL database without a -shm file the user may create (SQLITE_READONLY_CANTINIT, SQLITE_CANTOPEN):
      // read it as immutable.
      const int code = sqlite3_errcode(raw);
      if (std::string(query) == "mode=ro" && (code == SQLITE_CANTOPEN || code == SQLITE_READONLY)) continue;
      return id.error();
    }
    MMTWIN_RETURN_IF_ERROR(CheckIdentity(*id, path));
    if (id->tables.empty()) return Error(path + ": not an mmtwin results database (it has no tables)");
    MMTWIN_RETURN_IF_ERROR(QuickCheck(raw, path));
    MMTWIN_RETURN_IF_ERROR(db->RefreshColumns());
    return db;
  }
  return Error(path + ": cannot open the results database for reading");
}

Status ResultsDb::BackupTo(const std::string& path) const {
  sqlite3* out = nullptr;
  if (sqlite3_open_v2(path.c_str(), &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    const std::string m = out ? sqlite3_errmsg(out) : "cannot open";
    sqlite3_close(out);
    return Error(path + ": " + m);
  }
  sqlite3_backup* b = sqlite3_backup_init(out, "main", db_, "main");
  int rc = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
  const int fin = b ? sqlite3_backup_finish(b) : SQLITE_ERROR;
  const std::string m = sqlite3_errmsg(out);
  sqlite3_close(out);
  if (rc != SQLITE_DONE || fin != SQLITE_OK) return Error(path + ": copying " + path_ + " failed: " + m);
  return Status();
}

Status ResultsDb::RefreshColumns() {
  MMTWIN_ASSIGN_OR_RETURN(std::vector<std::string> cols, Columns());
  columns_ = std::set<std::string>(cols.begin(), cols.end());
  return Status();
}

Status ResultsDb::EnsureAxisColumns(const std::vector<std::pair<std::string, std::string>>& axes) {
  // Called inside the write transaction: another process (a concurrent sweep on the same file) may have added
  // columns since this one last looked, so a column that seems missing is looked up again before ALTER.
  bool refreshed = false;
  for (const auto& [name, label] : axes) {
    const std::string col = AxisColumn(name);
    if (columns_.count(col)) continue;
    if (!refreshed) {
      MMTWIN_RETURN_IF_ERROR(RefreshColumns());
      refreshed = true;
      if (columns_.count(col)) continue;
    }
    MMTWIN_RETURN_IF_ERROR(Exec("ALTER TABLE runs ADD COLUMN " + Quote(col)));
    columns_.insert(col);
  }
  return Status();
}

Status ResultsDb::Put(const RunRecord& r) {
  MMTWIN_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> Status {
    MMTWIN_RETURN_IF_ERROR(EnsureAxisColumns(r.axes));
    std::vector<std::string> cols(std::begin(kFixedHead), std::end(kFixedHead));
    for (const auto& [name, label] : r.axes) cols.push_back(AxisColumn(name));
    for (const auto& c : SummaryColumns()) cols.push_back(c.name);
    for (const char* c : kFixedTail) cols.push_back(c);
    std::string sql = "INSERT OR REPLACE INTO runs (";
    for (size_t i = 0; i < cols.size(); ++i) sql += (i ? ", " : "") + Quote(cols[i]);
    sql += ") VALUES (";
    for (size_t i = 0; i < cols.size(); ++i) sql += i ? ", ?" : "?";
    sql += ")";
    Stmt st(db_, sql);
    if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
    int i = 1;
    st.Text(i++, r.run_key);
    st.Text(i++, r.sweep);
    sqlite3_bind_int(st.get(), i++, r.run_index);
    st.Text(i++, r.status);
    st.TextOrNull(i++, r.error);
    nlohmann::ordered_json axes = nlohmann::ordered_json::object();
    for (const auto& [name, label] : r.axes) {
      int64_t x = 0;
      double d = 0;
      if (ParseInt64(label, x))
        axes[name] = x;
      else if (ParseDouble(label, d) && std::isfinite(d))
        axes[name] = d;
      else if (label == "true" || label == "false")
        axes[name] = label == "true";
      else
        axes[name] = label;
    }
    st.Text(i++, axes.dump());
    for (const auto& [name, label] : r.axes) BindLabel(st, i++, label);
    for (const auto& c : SummaryColumns()) {
      if (!r.summary) {
        sqlite3_bind_null(st.get(), i++);
        continue;
      }
      const SummaryValue v = c.get(*r.summary);
      if (const auto* x = std::get_if<int64_t>(&v))
        sqlite3_bind_int64(st.get(), i, *x);
      else if (const auto* d = std::get_if<double>(&v); d && std::isfinite(*d))
        sqlite3_bind_double(st.get(), i, *d);
      else if (const auto* t = std::get_if<std::string>(&v))
        sqlite3_bind_text(st.get(), i, t->c_str(), static_cast<int>(t->size()), SQLITE_TRANSIENT);
      else
        sqlite3_bind_null(st.get(), i);
      ++i;
    }
    sqlite3_bind_double(st.get(), i++, r.wall_seconds);
    st.TextOrNull(i++, r.session);
    st.TextOrNull(i++, r.finished_at);
    if (!r.summary)
      sqlite3_bind_null(st.get(), i++);
    else
      st.Text(i++, SummaryToJson(*r.summary));
    st.TextOrNull(i++, r.scenario_yaml);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
    return Status();
  };
  Status s = body();
  if (!s.ok()) {
    (void)Exec("ROLLBACK");
    return s;
  }
  return Exec("COMMIT");
}

// A run counts as done when it is recorded ok with a summary that reads as one: an ok row whose summary_json is
// damaged (not JSON, or no iteration times) is run again (issue 34).
constexpr const char* kDoneRow =
    "status = 'ok' AND json_valid(summary_json) AND json_type(summary_json, '$.iteration_time_us') = "
    "'object'";

Result<bool> ResultsDb::Merge(const RunRecord& r) {
  std::string existing;
  bool found = false;
  {
    // An existing ok row whose summary is damaged counts as not done: a good row replaces it.
    Stmt st(db_, std::string("SELECT CASE WHEN ") + kDoneRow +
                     " THEN 'ok' ELSE 'redo' END FROM runs WHERE run_key = ?");
    if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
    st.Text(1, r.run_key);
    if (sqlite3_step(st.get()) == SQLITE_ROW) {
      found = true;
      existing = st.ColText(0);
    }
  }
  if (found && (existing == "ok" || r.status != "ok")) return false;
  MMTWIN_RETURN_IF_ERROR(Put(r));
  return true;
}

Status ResultsDb::PutSweep(const SweepInfo& s) {
  Stmt st(db_, "INSERT OR REPLACE INTO sweeps (name, path, axes_json, runs, digest) VALUES (?, ?, ?, ?, ?)");
  if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  st.Text(1, s.name);
  st.Text(2, s.path);
  st.Text(3, s.axes_json);
  sqlite3_bind_int(st.get(), 4, s.runs);
  st.TextOrNull(5, s.digest);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  return Status();
}

Result<std::set<std::string>> ResultsDb::OkKeys(const std::string& sweep) {
  Stmt st(db_, sweep.empty() ? std::string("SELECT run_key FROM runs WHERE ") + kDoneRow
                             : std::string("SELECT run_key FROM runs WHERE ") + kDoneRow + " AND sweep = ?");
  if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  if (!sweep.empty()) st.Text(1, sweep);
  std::set<std::string> keys;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) keys.insert(st.ColText(0));
  if (rc != SQLITE_DONE) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  return keys;
}

Result<std::set<int64_t>> ResultsDb::OkIndices(const std::string& sweep) {
  Stmt st(db_, std::string("SELECT run_index FROM runs WHERE ") + kDoneRow + " AND sweep = ?");
  if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  st.Text(1, sweep);
  std::set<int64_t> out;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) out.insert(sqlite3_column_int64(st.get(), 0));
  if (rc != SQLITE_DONE) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  return out;
}

Result<std::vector<RunRecord>> ResultsDb::Runs(const std::string& sweep) {
  std::string sql =
      "SELECT run_key, sweep, run_index, status, error, axes_json, summary_json, scenario_yaml, "
      "wall_seconds, "
      "session, finished_at FROM runs";
  if (!sweep.empty()) sql += " WHERE sweep = ?";
  sql += " ORDER BY sweep, run_index, run_key";
  Stmt st(db_, sql);
  if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  if (!sweep.empty()) st.Text(1, sweep);
  std::vector<RunRecord> out;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    RunRecord r;
    r.run_key = st.ColText(0);
    r.sweep = st.ColText(1);
    r.run_index = sqlite3_column_int(st.get(), 2);
    r.status = st.ColText(3);
    r.error = st.ColText(4);
    const nlohmann::ordered_json axes = nlohmann::ordered_json::parse(st.ColText(5), nullptr, false);
    if (axes.is_object())
      for (auto it = axes.begin(); it != axes.end(); ++it)
        r.axes.emplace_back(it.key(),
                            it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
    const std::string summary = st.ColText(6);
    if (!summary.empty()) {
      auto parsed = SummaryFromJson(summary, path_ + ": run " + r.run_key);
      if (parsed) r.summary = std::move(*parsed);
    }
    r.scenario_yaml = st.ColText(7);
    r.wall_seconds = sqlite3_column_double(st.get(), 8);
    r.session = st.ColText(9);
    r.finished_at = st.ColText(10);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  return out;
}

Result<std::vector<SweepInfo>> ResultsDb::Sweeps() {
  Stmt st(db_, "SELECT name, path, axes_json, runs, digest FROM sweeps ORDER BY name");
  if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  std::vector<SweepInfo> out;
  while (sqlite3_step(st.get()) == SQLITE_ROW)
    out.push_back(
        {st.ColText(0), st.ColText(1), st.ColText(2), sqlite3_column_int(st.get(), 3), st.ColText(4)});
  return out;
}

Status ResultsDb::Delete(const std::string& run_key) {
  Stmt st(db_, "DELETE FROM runs WHERE run_key = ?");
  if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  st.Text(1, run_key);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  return Status();
}

Result<std::string> ResultsDb::ExportCsv() {
  MMTWIN_ASSIGN_OR_RETURN(std::vector<std::string> all, Columns());
  std::vector<std::string> cols;
  for (const auto& c : all)
    if (c != "summary_json" && c != "scenario_yaml") cols.push_back(c);
  std::string sql = "SELECT ";
  for (size_t i = 0; i < cols.size(); ++i) sql += (i ? ", " : "") + Quote(cols[i]);
  sql += " FROM runs ORDER BY sweep, run_index, run_key";
  Stmt st(db_, sql);
  if (!st.ok()) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  std::string out;
  for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + CsvQuote(cols[i]);
  out += "\n";
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i) out += ",";
      const int c = static_cast<int>(i);
      switch (sqlite3_column_type(st.get(), c)) {
        case SQLITE_NULL:
          break;
        case SQLITE_INTEGER:
          out += std::to_string(sqlite3_column_int64(st.get(), c));
          break;
        case SQLITE_FLOAT:
          out += Num(sqlite3_column_double(st.get(), c));
          break;
        default:
          out += CsvQuote(st.ColText(c));
      }
    }
    out += "\n";
  }
  if (rc != SQLITE_DONE) return Error::External(path_ + ": " + sqlite3_errmsg(db_));
  return out;
}

}  // namespace mmtwin

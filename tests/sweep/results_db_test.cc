// SPDX-License-Identifier: Apache-2.0
// The results database against other writers and other files: two connections adding the same axis column (the
// stale schema cache of issue 14), a foreign SQLite file and a non-SQLite file left byte for byte unchanged, an
// mmtwin file from before the application_id accepted, and two processes writing one new file at once.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "sweep/results_db.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

class ResultsDbFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("results_db_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

RunRecord Rec(const std::string& key, int index, const std::string& axis) {
  RunRecord r;
  r.run_key = key;
  r.sweep = "s";
  r.run_index = index;
  r.axes = {{axis, std::to_string(index)}};
  RunSummary x;
  x.gpu_days = index + 0.5;
  r.summary = x;
  return r;
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* msg = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
  sqlite3_close(db);
}

TEST_F(ResultsDbFiles, TwoConnectionsAddTheSameAxisColumn) {
  // Both open the new file before either adds axis_x; the second's cached schema is stale when it writes.
  auto a = ResultsDb::Open(P("r.sqlite"));
  auto b = ResultsDb::Open(P("r.sqlite"));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Put(Rec("k0", 0, "x")).ok());
  Status s = (*b)->Put(Rec("k1", 1, "x"));
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto rows = (*a)->Runs();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].axes[0].second, "1");
}

// Issue 34: an ok row whose summary is garbage counted as done, so a resumed sweep never ran it again. It is not
// done now (OkKeys, OkIndices), and a good row for the same run replaces it in a merge.
TEST_F(ResultsDbFiles, AnOkRowWithADamagedSummaryIsNotDone) {
  {
    auto db = ResultsDb::Open(P("r.sqlite"));
    ASSERT_TRUE(db.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*db)->Put(Rec("k" + std::to_string(i), i, "x")).ok());
    EXPECT_EQ(*(*db)->OkKeys(), (std::set<std::string>{"k0", "k1", "k2"}));
  }
  Sql(P("r.sqlite"),
      "UPDATE runs SET summary_json = 'not json {' WHERE run_key = 'k1';"
      "UPDATE runs SET summary_json = '{\"gpu_days\": 1}' WHERE run_key = 'k2';");
  auto db = ResultsDb::Open(P("r.sqlite"));
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*(*db)->OkKeys(), (std::set<std::string>{"k0"}));
  EXPECT_EQ(*(*db)->OkIndices("s"), (std::set<int64_t>{0}));
  auto w = (*db)->Merge(Rec("k1", 1, "x"));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(*w);
  EXPECT_FALSE(*(*db)->Merge(Rec("k0", 0, "x")));  // a good ok row stays
  EXPECT_EQ(*(*db)->OkKeys(), (std::set<std::string>{"k0", "k1"}));
}

TEST_F(ResultsDbFiles, ForeignSqliteFileIsRefusedAndUnchanged) {
  const std::string path = P("customers.sqlite");
  Sql(path, "CREATE TABLE customers (id INTEGER, name TEXT); INSERT INTO customers VALUES (1, 'ada');");
  const std::string before = Bytes(path);
  auto db = ResultsDb::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message().find("not an mmtwin results database"), std::string::npos)
      << db.error().message();
  EXPECT_NE(db.error().message().find("customers"), std::string::npos) << db.error().message();
  EXPECT_EQ(Bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-wal"));
}

TEST_F(ResultsDbFiles, ForeignApplicationIdIsRefusedAndUnchanged) {
  const std::string path = P("other.sqlite");
  Sql(path, "PRAGMA application_id = 12345; CREATE TABLE runs (run_key TEXT);");
  const std::string before = Bytes(path);
  auto db = ResultsDb::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message().find("12345"), std::string::npos) << db.error().message();
  EXPECT_EQ(Bytes(path), before);
}

TEST_F(ResultsDbFiles, TextFileIsRefusedAndUnchanged) {
  const std::string path = P("notes.sqlite");
  {
    std::ofstream out(path);
    out << "these are my notes, not a database\n";
  }
  const std::string before = Bytes(path);
  auto db = ResultsDb::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message().find(path), std::string::npos) << db.error().message();
  EXPECT_EQ(Bytes(path), before);
}

TEST_F(ResultsDbFiles, DamagedFileIsRefusedAndUnchanged) {
  // Found by results_db_fuzz: a file with mmtwin's application_id, in WAL mode, no tables and a corrupt first
  // page passed the identity check; the schema setup then failed ("malformed") after SQLite had rewritten it.
  const fs::path seed =
      fs::path(MMTWIN_SOURCE_DIR) / "tests/fuzz/corpus/results_db_fuzz/damaged-wal-no-tables.sqlite";
  const std::string path = P("damaged.sqlite");
  fs::copy_file(seed, path);
  const std::string before = Bytes(path);
  auto db = ResultsDb::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message().find("the results database is damaged"), std::string::npos)
      << db.error().message();
  EXPECT_EQ(db.error().message().find('\n'), std::string::npos) << db.error().message();
  EXPECT_EQ(Bytes(path), before);
}

TEST_F(ResultsDbFiles, FileThatPassesTheChecksButCannotBeSetUpIsUnchanged) {
  // Found by results_db_fuzz: mmtwin's application_id and tables, quick_check ok, but a header text encoding
  // SQLite refuses once it writes. The schema setup runs before the switch to WAL, so its rollback restores the
  // file (it used to be left in WAL mode with a new change counter).
  const fs::path seed =
      fs::path(MMTWIN_SOURCE_DIR) / "tests/fuzz/corpus/results_db_fuzz/bad-text-encoding.sqlite";
  const std::string path = P("encoding.sqlite");
  fs::copy_file(seed, path);
  const std::string before = Bytes(path);
  auto db = ResultsDb::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message().find("nothing was changed"), std::string::npos) << db.error().message();
  EXPECT_EQ(Bytes(path), before);
}

TEST_F(ResultsDbFiles, LegacyMmtwinFileIsAcceptedAndStampedWithTheApplicationId) {
  const std::string path = P("old.sqlite");
  Sql(path,
      "CREATE TABLE runs (run_key TEXT PRIMARY KEY, sweep TEXT, run_index INTEGER, status TEXT, error TEXT, "
      "axes_json TEXT, summary_json TEXT, scenario_yaml TEXT, wall_seconds REAL, session TEXT, finished_at "
      "TEXT); CREATE TABLE sweeps (name TEXT PRIMARY KEY, path TEXT, axes_json TEXT, runs INTEGER);");
  auto db = ResultsDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.error().message();
  ASSERT_TRUE((*db)->Put(Rec("k0", 0, "x")).ok());  // the summary columns were added
  db->reset();
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA application_id", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), kResultsDbApplicationId);
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST_F(ResultsDbFiles, TwoProcessesWritingOneNewFileBothSucceed) {
  const std::string path = P("shared.sqlite");
  constexpr int kRuns = 20;
  pid_t pids[2];
  for (int w = 0; w < 2; ++w) {
    pids[w] = fork();
    ASSERT_GE(pids[w], 0);
    if (pids[w] == 0) {
      auto db = ResultsDb::Open(path);
      if (!db.ok()) _exit(10);
      for (int i = 0; i < kRuns; ++i) {
        // Each writer adds axis columns the other one also adds.
        RunRecord r =
            Rec("w" + std::to_string(w) + "_" + std::to_string(i), i, "axis" + std::to_string(i % 5));
        if (!(*db)->Put(r).ok()) _exit(11);
      }
      _exit(0);
    }
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  auto db = ResultsDb::Open(path);
  ASSERT_TRUE(db.ok());
  auto rows = (*db)->Runs();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u * kRuns);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Runs the real `mmtwin sweep` and `mmtwin compare` binaries: a small sweep fills its database and prints the
// table, a sweep stopped midway (MMTWIN_SWEEP_STOP_AFTER) and re-run executes only the missing runs, shards
// merged give the whole sweep once, CSV export parses, compare prints deltas, bad input exits 2.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "core/records/headline_metrics.h"
#include "core/util/csv.h"
#include "sweep/results_db.h"

#include "cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;

using mmtwin::HeadlineMetric;
using mmtwin::HeadlineMetrics;
using mmtwin::StageMetric;
using mmtwin::StageMetrics;
using mmtwin::testing::CliRun;
using mmtwin::testing::Mmtwin;
using mmtwin::testing::Shell;

// A fast sweep (well under a second per run): 2,000 samples, 2 iterations, 16 GPUs; 2 x 2 = 4 runs.
const char* kSweep = R"(name: small-sweep
base:
  trace: {preset: internvl-1.2m, samples: 2000, seed: 3}
  model: internvl-1.5-6b-20b
  parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 4, zero_stage: 1}
  policies: {data: isf, partition: uniform, recompute: full, schedule: 1f1b}
  iterations: 2
  seed: 5
mode: cartesian
axes:
  - {key: policies.data, name: data, values: [random, isf]}
  - {key: policies.recompute, name: recompute, values: [full, adaptive]}
)";

class CliSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("cli_sweep_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.yaml") << kSweep;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  CliRun Mmtwin(const std::string& args, const std::string& env = "") const {
    return Shell("cd " + dir_.string() + " && " + env + " " + MMTWIN_CLI + " " + args + " 2>&1");
  }
  std::vector<mmtwin::RunRecord> Rows(const std::string& db) const {
    auto d = mmtwin::ResultsDb::Open(P(db));
    EXPECT_TRUE(d.ok());
    if (!d.ok()) return {};
    auto rows = (*d)->Runs();
    EXPECT_TRUE(rows.ok());
    return rows.ok() ? *rows : std::vector<mmtwin::RunRecord>{};
  }
  fs::path dir_;
};

TEST_F(CliSweepTest, FillsTheDatabaseAndPrintsTheTable) {
  CliRun r = Mmtwin("sweep s.yaml --jobs 2 --csv out.csv");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "small-sweep.sqlite"));  // default: NAME.sqlite here
  const auto rows = Rows("small-sweep.sqlite");
  ASSERT_EQ(rows.size(), 4u);
  std::set<std::string> combos;
  for (const auto& row : rows) {
    EXPECT_EQ(row.status, "ok") << row.error;
    EXPECT_EQ(row.sweep, "small-sweep");
    ASSERT_TRUE(row.summary.has_value());
    EXPECT_GT(row.summary->gpu_days, 0);
    EXPECT_NE(row.scenario_yaml.find("policies"), std::string::npos);
    ASSERT_EQ(row.axes.size(), 2u);
    combos.insert(row.axes[0].second + "/" + row.axes[1].second);
  }
  EXPECT_EQ(combos, (std::set<std::string>{"random/full", "random/adaptive", "isf/full", "isf/adaptive"}));
  for (const char* s : {"[1/4]", "[4/4]", "data", "recompute", "p50 ms", "GPU-days", "speed-up", "bubble",
                        "idle", "recomp", "MFU", "OOM", "1.00x", "random", "adaptive"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // The CSV export parses: a header with the axis and summary columns, one row per run.
  auto csv = mmtwin::CsvReader::Open(P("out.csv"));
  ASSERT_TRUE(csv.ok());
  std::vector<std::string_view> f;
  ASSERT_TRUE(csv->Next(f));
  mmtwin::CsvHeader header(f);
  for (const char* c : {"run_key", "axis_data", "axis_recompute", "iteration_time_us_p50", "gpu_days", "mfu",
                        "oom", "bubble_ratio", "status", "wall_seconds"})
    EXPECT_GE(header.Find(c), 0) << c;
  int n = 0;
  while (csv->Next(f)) {
    EXPECT_EQ(f[header.Find("status")], "ok");
    ++n;
  }
  EXPECT_EQ(n, 4);
  // export and table on the same database.
  CliRun e = Mmtwin("sweep export --db small-sweep.sqlite -o again.csv");
  ASSERT_EQ(e.code, 0) << e.out;
  std::ifstream a(P("out.csv")), b(P("again.csv"));
  std::stringstream sa, sb;
  sa << a.rdbuf();
  sb << b.rdbuf();
  EXPECT_EQ(sa.str(), sb.str());
  CliRun t = Mmtwin("sweep table --db small-sweep.sqlite");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("4 of 4 runs"), std::string::npos) << t.out;
}

// Issue 33, item 4: the first run does not fit (recompute none, ZeRO-1) and the data policies leave out different
// numbers of samples (random and ISF). The speed-up compares GPU-time per trained sample with the first run that
// fits; the run that does not fit has none. Issue 33, item 7: `sweep --json` prints only JSON on stdout, and
// `sweep table --json` the same rows.
// kSweep with ZeRO-1 and recomputation none first (it does not fit), then full.
std::string OomFirstSweep() {
  std::string y = kSweep;
  auto swap = [&](const std::string& from, const std::string& to) {
    y.replace(y.find(from), from.size(), to);
  };
  swap("name: small-sweep", "name: oom-first");
  swap(
      "  - {key: policies.data, name: data, values: [random, isf]}\n"
      "  - {key: policies.recompute, name: recompute, values: [full, adaptive]}\n",
      "  - {key: policies.recompute, name: recompute, values: [none, full]}\n"
      "  - {key: policies.data, name: data, values: [random, isf]}\n");
  return y;
}

TEST_F(CliSweepTest, SpeedupIsPerSampleAgainstTheFirstRunThatFitsAndJsonHoldsTheSameRows) {
  std::ofstream(dir_ / "oom.yaml") << OomFirstSweep();
  // stdout only: the JSON must parse by itself.
  const CliRun run =
      Shell("cd " + dir_.string() + " && " + MMTWIN_CLI + " sweep oom.yaml --jobs 2 --json 2>/dev/null");
  ASSERT_EQ(run.code, 0) << run.out;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["sweep"], "oom-first");
  EXPECT_EQ(j["executed"], 4);
  ASSERT_EQ(j["rows"].size(), 4u);

  // The oracle: GPU-seconds per trained sample from the database's summaries.
  std::map<int, mmtwin::RunSummary> by_index;
  for (const auto& r : Rows("oom-first.sqlite")) by_index[r.run_index] = *r.summary;
  ASSERT_EQ(by_index.size(), 4u);
  ASSERT_TRUE(by_index[0].oom) << "the test needs a first run that does not fit";
  ASSERT_FALSE(by_index[1].oom);
  ASSERT_NE(by_index[0].trace_samples, 0);
  auto gpu_s_per_sample = [](const mmtwin::RunSummary& s) {
    return s.parallel.world_size() / s.samples_per_s;
  };
  for (const auto& row : j["rows"]) {
    const int i = row["index"];
    SCOPED_TRACE(i);
    EXPECT_EQ(row["summary"]["gpu_days"].get<double>(), by_index[i].gpu_days);
    if (by_index[i].oom) {
      EXPECT_TRUE(row["speedup"].is_null());
    } else {
      EXPECT_NEAR(row["speedup"].get<double>(), gpu_s_per_sample(by_index[1]) / gpu_s_per_sample(by_index[i]),
                  1e-12);
    }
  }
  EXPECT_DOUBLE_EQ(j["rows"][1]["speedup"].get<double>(), 1.0);
  // Per sample, not per epoch: ISF and random leave out different numbers of samples, so the two differ here.
  const double per_epoch = by_index[1].gpu_days / by_index[2].gpu_days;
  EXPECT_GT(std::fabs(j["rows"][2]["speedup"].get<double>() / per_epoch - 1), 0.01);

  // The text table of the same database: "-" for the run that does not fit, the baseline named.
  const CliRun text = Mmtwin("sweep table --db oom-first.sqlite");
  ASSERT_EQ(text.code, 0) << text.out;
  std::istringstream lines(text.out);
  std::string line;
  std::map<std::string, std::string> row_of;
  while (std::getline(lines, line))
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) row_of[line.substr(0, 1)] = line;
  EXPECT_NE(row_of["0"].find(" - "), std::string::npos) << row_of["0"];
  EXPECT_NE(row_of["1"].find("1.00x"), std::string::npos) << row_of["1"];
  EXPECT_NE(text.out.find("GPU-time per trained sample of run #1 (the first run that fits)"),
            std::string::npos)
      << text.out;

  // sweep table --json: the same rows.
  const CliRun table = Shell("cd " + dir_.string() + " && " + MMTWIN_CLI +
                             " sweep table --db oom-first.sqlite --json 2>/dev/null");
  ASSERT_EQ(table.code, 0) << table.out;
  const nlohmann::json t = nlohmann::json::parse(table.out);
  ASSERT_EQ(t["sweeps"].size(), 1u);
  EXPECT_EQ(t["sweeps"][0]["rows"], j["rows"]);
  EXPECT_EQ(t["sweeps"][0]["recorded"], 4);
}

// Issue 34: `sweep table` and `sweep export` opened the database for writing, so a database the user cannot
// write could not be read. The database and its folder are made read-only, and (this test runs as root in CI,
// which ignores permission bits) the commands run as the unprivileged user `nobody` via setpriv; the file is
// byte for byte the same afterwards and no journal files appear.
TEST_F(CliSweepTest, TableAndExportReadADatabaseTheUserCannotWrite) {
  ASSERT_EQ(Mmtwin("sweep s.yaml --jobs 2 --db r.sqlite").code, 0);
  const fs::path ro = dir_ / "ro";
  fs::create_directories(ro);
  fs::copy_file(dir_ / "r.sqlite", ro / "r.sqlite");
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  std::ifstream before_in(ro / "r.sqlite", std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(before_in)), std::istreambuf_iterator<char>());
  fs::permissions(ro / "r.sqlite", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(out, fs::perms::all);
  fs::permissions(dir_, fs::perms::others_exec | fs::perms::others_read, fs::perm_options::add);
  // A copy of the binary in the test's folder: `nobody` may not be able to reach the build folder (a clone
  // under /root); mmtwin links only system libraries.
  fs::copy_file(MMTWIN_CLI, dir_ / "mmtwin-copy");
  fs::permissions(dir_ / "mmtwin-copy", fs::perms::others_exec | fs::perms::others_read,
                  fs::perm_options::add);
  const std::string bin = (dir_ / "mmtwin-copy").string();
  const std::string as = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  CliRun t = Shell("cd " + dir_.string() + " && " + as + bin + " sweep table --db ro/r.sqlite 2>&1");
  EXPECT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("4 of 4 runs"), std::string::npos) << t.out;
  CliRun e =
      Shell("cd " + dir_.string() + " && " + as + bin + " sweep export --db ro/r.sqlite -o out/r.csv 2>&1");
  EXPECT_EQ(e.code, 0) << e.out;
  EXPECT_TRUE(fs::is_regular_file(out / "r.csv"));
  std::ifstream after_in(ro / "r.sqlite", std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(after_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, before);
  EXPECT_FALSE(fs::exists(ro / "r.sqlite-wal"));
  EXPECT_FALSE(fs::exists(ro / "r.sqlite-shm"));
  fs::permissions(ro, fs::perms::owner_all, fs::perm_options::add);  // TearDown removes it
  // A missing database is an error naming it, not a new empty file.
  CliRun missing = Mmtwin("sweep export --db nosuch.sqlite -o x.csv");
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_FALSE(fs::exists(dir_ / "nosuch.sqlite"));
}

TEST_F(CliSweepTest, StoppedMidwayThenRerunRedoesNothingFinished) {
  CliRun first = Mmtwin("sweep s.yaml --jobs 2 --db r.sqlite", "MMTWIN_SWEEP_STOP_AFTER=2");
  ASSERT_EQ(first.code, 3) << first.out;
  auto rows = Rows("r.sqlite");
  ASSERT_EQ(rows.size(), 2u);
  std::map<std::string, std::string> first_session;
  for (const auto& row : rows) first_session[row.run_key] = row.session;

  CliRun second = Mmtwin("sweep s.yaml --jobs 2 --db r.sqlite");
  ASSERT_EQ(second.code, 0) << second.out;
  EXPECT_NE(second.out.find("ran 2 of 4 runs (2 already done, 0 errors)"), std::string::npos) << second.out;
  rows = Rows("r.sqlite");
  ASSERT_EQ(rows.size(), 4u);
  int from_first = 0;
  for (const auto& row : rows) {
    EXPECT_EQ(row.status, "ok");
    if (first_session.count(row.run_key)) {
      EXPECT_EQ(row.session, first_session[row.run_key]);  // not redone
      ++from_first;
    }
  }
  EXPECT_EQ(from_first, 2);
  CliRun third = Mmtwin("sweep s.yaml --db r.sqlite");
  ASSERT_EQ(third.code, 0) << third.out;
  EXPECT_NE(third.out.find("ran 0 of 4 runs (4 already done"), std::string::npos) << third.out;
}

TEST_F(CliSweepTest, ShardsMergeIntoTheWholeSweepOnce) {
  for (int i = 0; i < 3; ++i) {
    CliRun r = Mmtwin("sweep s.yaml --shard " + std::to_string(i) + "/3");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  const std::string shards =
      "small-sweep.shard-0-of-3.sqlite small-sweep.shard-1-of-3.sqlite small-sweep.shard-2-of-3.sqlite";
  EXPECT_EQ(Rows("small-sweep.shard-0-of-3.sqlite").size(), 2u);  // runs 0 and 3
  EXPECT_EQ(Rows("small-sweep.shard-1-of-3.sqlite").size(), 1u);
  CliRun m = Mmtwin("sweep merge all.sqlite " + shards);
  ASSERT_EQ(m.code, 0) << m.out;
  // Merging again (and a shard twice) adds nothing.
  CliRun m2 = Mmtwin("sweep merge all.sqlite " + shards + " small-sweep.shard-0-of-3.sqlite");
  ASSERT_EQ(m2.code, 0) << m2.out;
  EXPECT_NE(m2.out.find("0 written"), std::string::npos) << m2.out;
  // --json: the same counts as numbers (issue 33, item 7).
  CliRun mj =
      Shell("cd " + dir_.string() + " && " + MMTWIN_CLI + " sweep merge all.sqlite " + shards + " --json");
  ASSERT_EQ(mj.code, 0) << mj.out;
  const nlohmann::json merged = nlohmann::json::parse(mj.out);
  EXPECT_EQ(merged["rows_read"], 4);
  EXPECT_EQ(merged["rows_written"], 0);
  EXPECT_EQ(merged["runs"], 4);
  const auto rows = Rows("all.sqlite");
  ASSERT_EQ(rows.size(), 4u);
  std::set<int> indexes;
  for (const auto& row : rows) indexes.insert(row.run_index);
  EXPECT_EQ(indexes, (std::set<int>{0, 1, 2, 3}));
  // The merged database is complete: a sweep over it runs nothing.
  CliRun again = Mmtwin("sweep s.yaml --db all.sqlite");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("ran 0 of 4 runs"), std::string::npos) << again.out;
}

// Issue 34: the same sweep name with new axes mixed the earlier version's rows into `sweep table` ("42 of 12
// runs recorded"). The table matches the sweep file's runs by key (the earlier rows counted apart), and, run from
// elsewhere, where the file cannot be matched, leaves out rows with other axes.
TEST_F(CliSweepTest, TableCountsOnlyTheCurrentVersionsRuns) {
  ASSERT_EQ(Mmtwin("sweep s.yaml --db v.sqlite").code, 0);  // data x recompute: 4 runs
  std::string text = kSweep;
  text = text.substr(0, text.find("axes:")) +
         "axes:\n  - {key: policies.recompute, name: recompute, values: [none, full, adaptive]}\n";
  std::ofstream(dir_ / "s.yaml") << text;
  ASSERT_EQ(Mmtwin("sweep s.yaml --db v.sqlite").code, 0);
  CliRun t = Mmtwin("sweep table --db v.sqlite");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("sweep small-sweep: 3 of 3 runs recorded (2 more rows from an earlier version of the "
                       "sweep file, not shown)"),
            std::string::npos)
      << t.out;
  CliRun elsewhere =
      Shell("cd / && " + std::string(MMTWIN_CLI) + " sweep table --db " + P("v.sqlite") + " 2>&1");
  ASSERT_EQ(elsewhere.code, 0) << elsewhere.out;
  EXPECT_EQ(elsewhere.out.find("4 of 3"), std::string::npos) << elsewhere.out;
  EXPECT_EQ(elsewhere.out.find("5 of 3"), std::string::npos) << elsewhere.out;
}

// Issue 34: a merge that failed on its second input had already written the first into OUT. Now OUT is replaced
// only when every input merged: byte for byte unchanged after a failure, no temporary file left.
TEST_F(CliSweepTest, AFailedMergeLeavesTheOutputAsItWas) {
  for (int i = 0; i < 2; ++i) ASSERT_EQ(Mmtwin("sweep s.yaml --shard " + std::to_string(i) + "/2").code, 0);
  ASSERT_EQ(Mmtwin("sweep merge all.sqlite small-sweep.shard-0-of-2.sqlite").code, 0);
  auto bytes = [&](const std::string& f) {
    std::ifstream in(P(f), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string before = bytes("all.sqlite");
  std::ofstream(dir_ / "not-a-db.sqlite") << "hello, not SQLite\n";
  CliRun m = Mmtwin("sweep merge all.sqlite small-sweep.shard-1-of-2.sqlite not-a-db.sqlite");
  EXPECT_EQ(m.code, 2) << m.out;
  EXPECT_NE(m.out.find("all.sqlite is unchanged"), std::string::npos) << m.out;
  EXPECT_EQ(bytes("all.sqlite"), before);
  EXPECT_EQ(Rows("all.sqlite").size(), 2u);  // shard 0 only
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find("all.sqlite.tmp-"), std::string::npos) << e.path();
  // The same merge without the bad input completes it.
  ASSERT_EQ(Mmtwin("sweep merge all.sqlite small-sweep.shard-1-of-2.sqlite").code, 0);
  EXPECT_EQ(Rows("all.sqlite").size(), 4u);
}

// A sweep's name becomes its database file: a name that leads elsewhere is refused, and nothing is written.
TEST_F(CliSweepTest, SweepNameCannotEscapeTheFolder) {
  fs::create_directories(dir_ / "inner");
  std::ofstream(dir_ / "inner" / "evil.yaml")
      << "name: ../escaped\nbase: ../s.yaml\naxes:\n  parallel.dp: [1]\n";
  CliRun r = Mmtwin("sweep inner/evil.yaml");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("evil.yaml:1: name: '../escaped' must work as a file name"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "escaped.sqlite"));
}

TEST_F(CliSweepTest, BadInputExits2WithFileAndLine) {
  std::ofstream(dir_ / "bad.yaml") << "base: s.yaml\naxes:\n  - {key: parallel.bogus, values: [1]}\n";
  CliRun r = Mmtwin("sweep bad.yaml");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bad.yaml:3: parallel.bogus"), std::string::npos) << r.out;
  EXPECT_EQ(Mmtwin("sweep missing.yaml").code, 2);
  EXPECT_EQ(Mmtwin("sweep s.yaml --shard 3/3").code, 2);
  EXPECT_EQ(Mmtwin("sweep s.yaml --jobs 0").code, 2);
  EXPECT_EQ(Mmtwin("sweep merge out.sqlite nothing.sqlite").code, 2);
  CliRun dry = Mmtwin("sweep s.yaml --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.out;
  EXPECT_NE(dry.out.find("4 runs"), std::string::npos) << dry.out;
  EXPECT_FALSE(fs::exists(dir_ / "small-sweep.sqlite"));
}

TEST_F(CliSweepTest, ComparePrintsDeltas) {
  std::ofstream(dir_ / "a.yaml") << R"(trace: {preset: internvl-1.2m, samples: 2000, seed: 3}
model: internvl-1.5-6b-20b
parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 4, zero_stage: 1}
policies: {data: random, partition: params, recompute: full, schedule: 1f1b}
iterations: 2
)";
  std::ofstream(dir_ / "b.yaml") << R"(trace: {preset: internvl-1.2m, samples: 2000, seed: 3}
model: internvl-1.5-6b-20b
parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 4, zero_stage: 1}
policies: {data: isf, partition: bmp, recompute: adaptive, schedule: 1f1b}
iterations: 2
)";
  ASSERT_EQ(Mmtwin("simulate a.yaml -o run-a").code, 0);
  ASSERT_EQ(Mmtwin("simulate b.yaml -o run-b").code, 0);
  CliRun r = Mmtwin("compare run-a run-b/summary.json");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s : {"B - A", "B / A", "iteration p50 (ms)", "GPU-days", "bubble ratio", "per stage",
                        "s0 fwd (ms)", "s3 peak mem (GiB)", "data random", "data isf"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // The rows are the headline metrics (core/records/headline_metrics.h, which the GUI's Compare tab shows too), in
  // their order, then each stage's.
  size_t at = 0;
  for (const HeadlineMetric& m : HeadlineMetrics()) {
    at = r.out.find("\n" + std::string(m.label) + " ", at);
    EXPECT_NE(at, std::string::npos) << m.label << "\n" << r.out;
  }
  for (const StageMetric& m : StageMetrics())
    EXPECT_NE(r.out.find("\ns3 " + std::string(m.label) + " "), std::string::npos) << m.label;
  CliRun j = Mmtwin("compare run-a run-b --json");
  ASSERT_EQ(j.code, 0) << j.out;
  const auto json = nlohmann::json::parse(j.out);
  ASSERT_EQ(json["metrics"].size(), HeadlineMetrics().size());
  for (const HeadlineMetric& m : HeadlineMetrics()) EXPECT_TRUE(json["metrics"].contains(m.name)) << m.name;
  for (const StageMetric& m : StageMetrics()) EXPECT_TRUE(json["stages"][0].contains(m.name)) << m.name;
  const auto& days = json["metrics"]["gpu_days"];
  EXPECT_NEAR(days["delta"].get<double>(), days["b"].get<double>() - days["a"].get<double>(), 1e-9);
  EXPECT_NEAR(days["ratio"].get<double>(), days["b"].get<double>() / days["a"].get<double>(), 1e-12);
  ASSERT_EQ(json["stages"].size(), 4u);
  const auto& fwd = json["stages"][0]["fwd_us_mean"];
  EXPECT_NEAR(fwd["delta"].get<double>(), fwd["b"].get<double>() - fwd["a"].get<double>(), 1e-6);
  // Same run on both sides: every delta is 0.
  CliRun same = Mmtwin("compare run-a run-a --json");
  const auto js = nlohmann::json::parse(same.out);
  for (const auto& [k, v] : js["metrics"].items())
    if (!v["delta"].is_null()) {
      EXPECT_EQ(v["delta"].get<double>(), 0) << k;
    }
  EXPECT_EQ(Mmtwin("compare run-a").code, 2);
  EXPECT_EQ(Mmtwin("compare run-a nowhere").code, 2);
}

TEST_F(CliSweepTest, TwoSweepsStartingOnOneNewDatabaseBothSucceed) {
  // The second sweep has other axis columns and another name; both create the same new file at once.
  std::string other = kSweep;
  other.replace(other.find("small-sweep"), 11, "other-sweep");
  other.replace(other.find("name: recompute"), 15, "name: recomp2");
  std::ofstream(dir_ / "t.yaml") << other;
  CliRun r = Shell("cd " + dir_.string() + " && { (" + MMTWIN_CLI +
                   " sweep s.yaml --db shared.sqlite > a.log 2>&1; echo $? > a.rc) & (" + MMTWIN_CLI +
                   " sweep t.yaml --db shared.sqlite > b.log 2>&1; echo $? > b.rc) & wait; }");
  std::ifstream a(dir_ / "a.rc"), b(dir_ / "b.rc");
  int ra = -1, rb = -1;
  a >> ra;
  b >> rb;
  EXPECT_EQ(ra, 0) << Shell("cat " + P("a.log")).out;
  EXPECT_EQ(rb, 0) << Shell("cat " + P("b.log")).out;
  const auto rows = Rows("shared.sqlite");
  EXPECT_EQ(rows.size(), 8u);
  for (const auto& row : rows) EXPECT_EQ(row.status, "ok") << row.error;
}

TEST_F(CliSweepTest, ForeignDatabaseIsRefusedUnchanged) {
  // Not an SQLite file at all, then another program's SQLite database (written through ResultsDb's own
  // connection would stamp it, so its bytes come from a plain file copy of a database with a foreign table).
  std::ofstream(dir_ / "notes.db") << "my notes\n";
  CliRun r = Mmtwin("sweep s.yaml --db notes.db");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("notes.db"), std::string::npos) << r.out;
  std::ifstream in(dir_ / "notes.db");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "my notes\n");
  const fs::path foreign = fs::path(MMTWIN_SOURCE_DIR) / "tests/fuzz/corpus/results_db_fuzz/foreign.sqlite";
  fs::copy_file(foreign, dir_ / "foreign.sqlite");
  r = Mmtwin("sweep s.yaml --db foreign.sqlite");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("not an mmtwin results database"), std::string::npos) << r.out;
  EXPECT_EQ(Shell("cmp " + foreign.string() + " " + P("foreign.sqlite") + " && echo same").out, "same\n");
}

}  // namespace

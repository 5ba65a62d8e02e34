// SPDX-License-Identifier: Apache-2.0
// A report's sweep rows (report/common.h RunReportSweep) name each run by this sweep file's name and index, also
// when the results database recorded it under another order of the file (a label inserted before it) or under
// another sweep: RunRef is where a reader finds the run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "report/common.h"
#include "sweep/results_db.h"

namespace mmtwin::report::internal {
namespace {

namespace fs = std::filesystem;

void WriteSweep(const fs::path& dir, const std::string& values) {
  std::ofstream(dir / "base.yaml") << "name: base\ntrace: {preset: llava-665k, samples: 64, seed: 1}\n"
                                      "model: llava-1.5-7b\ncluster: a100-4x200g\n"
                                      "parallel: {dp: 1, tp: 8, pp: 1, micro_batches: 2}\n"
                                      "policies: {data: {name: random, params: {batch_size: 2}}}\n"
                                      "iterations: 1\nseed: 1\n";
  std::ofstream(dir / "s.yaml") << "name: s\nbase: base.yaml\nmode: zip\naxes:\n"
                                   "  - {key: policies.recompute, name: recompute, values: ["
                                << values << "]}\n";
}

TEST(ReportSweepTest, RowsAreNamedByTheirPlaceInTheSweepFile) {
  const fs::path dir = fs::path(::testing::TempDir()) / "report_sweep_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto db = ResultsDb::Open((dir / "r.sqlite").string());
  ASSERT_TRUE(db.ok()) << db.error().message();
  ReportOptions o;
  o.jobs = 1;
  WriteSweep(dir, "none, full");
  auto first = RunReportSweep((dir / "s.yaml").string(), o, **db);
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_EQ(first->rows.size(), 2u);
  EXPECT_EQ(RunRef(first->rows[1]), "s#1");
  // A run inserted first: the database holds `full` at index 1, the file now lists it third.
  WriteSweep(dir, "selective, none, full");
  auto second = RunReportSweep((dir / "s.yaml").string(), o, **db);
  ASSERT_TRUE(second.ok()) << second.error().message();
  ASSERT_EQ(second->rows.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(RunRef(second->rows[i]), "s#" + std::to_string(i));
  EXPECT_EQ(second->rows[2].axes, (std::vector<std::pair<std::string, std::string>>{{"recompute", "full"}}));
}

// The report's database is stamped with what its runs were computed with (ReportStamp: the executable, the data
// folder, the scenarios folder): reopened unchanged it keeps its runs; after a change to any file there (here a
// comment in the sweep's base scenario, which no run key sees) it is moved aside and starts empty; a database
// without a stamp (made by `mmtwin sweep`) is kept and stamped.
TEST(ReportSweepTest, AStaleDatabaseIsMovedAsideAndItsRunsRunAgain) {
  const fs::path dir = fs::path(::testing::TempDir()) / "report_stamp_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "scenarios");
  WriteSweep(dir / "scenarios", "none, full");
  std::vector<std::string> said;
  ReportOptions o;
  o.jobs = 1;
  o.db_path = (dir / "r.sqlite").string();
  o.scenarios_dir = (dir / "scenarios").string();
  o.progress = [&said](const std::string& line) {  // the stale-database lines (the runs report progress too)
    if (line.find(".stale") != std::string::npos) said.push_back(line);
  };
  const std::string sweep = (dir / "scenarios" / "s.yaml").string();
  auto ok_runs = [&]() -> size_t {
    auto db = OpenReportDb(o);
    EXPECT_TRUE(db.ok()) << db.error().message();
    if (!db.ok()) return 0;
    auto keys = (*db)->OkKeys();
    return keys.ok() ? keys->size() : 0;
  };
  {
    auto db = OpenReportDb(o);
    ASSERT_TRUE(db.ok()) << db.error().message();
    ASSERT_TRUE(RunReportSweep(sweep, o, **db).ok());
  }
  ASSERT_TRUE(fs::exists(o.db_path + ".stamp"));
  EXPECT_EQ(ok_runs(), 2u);  // the same build and files: kept
  EXPECT_TRUE(said.empty());
  std::ofstream(dir / "scenarios" / "base.yaml", std::ios::app) << "# a preset or the code changed\n";
  EXPECT_EQ(ok_runs(), 0u);  // moved aside: every run runs again
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("r.sqlite.stale"), std::string::npos) << said[0];
  EXPECT_TRUE(fs::exists(o.db_path + ".stale"));
  {
    auto db = OpenReportDb(o);
    ASSERT_TRUE(db.ok()) << db.error().message();
    ASSERT_TRUE(RunReportSweep(sweep, o, **db).ok());
  }
  fs::remove(o.db_path + ".stamp");
  EXPECT_EQ(ok_runs(), 2u);  // no stamp: kept, and stamped
  EXPECT_TRUE(fs::exists(o.db_path + ".stamp"));
  EXPECT_EQ(said.size(), 1u);
}

}  // namespace
}  // namespace mmtwin::report::internal

// SPDX-License-Identifier: Apache-2.0
// A report's sweep rows (report/common.h RunReportSweep) name each run by this sweep file's name and index, also
// when the results database recorded it under another order of the file (a label inserted before it) or under
// another sweep: RunRef is where a reader finds the run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace mmtwin::report::internal

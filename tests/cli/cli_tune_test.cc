// SPDX-License-Identifier: Apache-2.0
// `mmtwin tune` (sim/cli/tune_cmd.cc): a small space end to end (JSON that parses, the ranked configurations
// and counts, the result folder and its database), a re-run that resumes without running anything, a space
// where nothing can fit (exit 1, naming the memory constraint), and a bad space (exit 2 at file:line: field).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using mmtwin::testing::Mmtwin;
using mmtwin::testing::Shell;

fs::path Dir(const std::string& memory_bytes) {
  const fs::path dir = fs::path(::testing::TempDir()) / "cli_tune_test" /
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "base.yaml") << "name: base\n"
                                      "trace: {preset: llava-665k, samples: 256, seed: 1}\n"
                                      "model: llava-1.5-7b\n"
                                      "cluster: {preset: a100-4x200g, device: {memory_bytes: "
                                   << memory_bytes
                                   << "}}\n"
                                      "parallel: {dp: 1, tp: 1, pp: 1, micro_batches: 4}\n"
                                      "policies: {data: {name: random, params: {batch_size: 4}}}\n"
                                      "iterations: 1\nseed: 1\n";
  std::ofstream(dir / "space.yaml") << "name: small\nbase: base.yaml\ngpus: [4, 8]\naxes:\n"
                                       "  - {key: parallel.tp, values: [1, 2, 4]}\n"
                                       "  - {key: parallel.pp, values: [1, 2]}\n"
                                       "constraints: {memory_headroom: 0.05}\n";
  return dir;
}

TEST(CliTuneTest, ASmallSpaceRanksResumesAndWritesItsFolder) {
  const fs::path dir = Dir("40e9");
  const std::string args =
      (dir / "space.yaml").string() + " -o " + (dir / "out").string() + " --jobs 2 --json";
  const auto r = Mmtwin("tune " + args, /*with_stderr=*/false);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["combinations"], 12);
  EXPECT_EQ(j["objective"], "gpu_days");
  const int pruned = j["pruned"], evaluated = j["evaluated"], fit = j["fit"];
  EXPECT_GT(pruned, 0);  // tp 1 x pp 1: 7B of model states alone is more than 40 GB
  EXPECT_GT(fit, 0);
  EXPECT_LE(fit, evaluated);
  ASSERT_FALSE(j["ranked"].empty());
  EXPECT_EQ(j["ranked"][0]["rank"], 1);
  for (size_t i = 1; i < j["ranked"].size(); ++i)
    EXPECT_LE(j["ranked"][i - 1]["objective"].get<double>(), j["ranked"][i]["objective"].get<double>());
  for (const char* f : {"ranked.csv", "pareto.csv", "pareto.svg", "README.md", "skipped.csv"})
    EXPECT_TRUE(fs::is_regular_file(dir / "out" / f)) << f;
  EXPECT_TRUE(fs::is_regular_file(dir / "out.sqlite"));
  // The time bound: every evaluated candidate has one, at most its objective (ranked.csv's time_bound column);
  // the 8 candidates here are fewer than the 10 rows kept exact, so none is skipped.
  EXPECT_EQ(j["time_pruned"], 0);
  {
    std::ifstream csv(dir / "out" / "ranked.csv");
    std::string header, line;
    std::getline(csv, header);
    ASSERT_NE(header.find(",objective,"), std::string::npos);
    ASSERT_NE(header.find(",time_bound,run_key"), std::string::npos) << header;
    int rows = 0;
    while (std::getline(csv, line)) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
      ASSERT_GE(f.size(), 3u);
      const double bound = std::stod(f[f.size() - 2]);
      size_t obj_col = 0;
      {
        std::stringstream hs(header);
        size_t k = 0;
        for (std::string x; std::getline(hs, x, ','); ++k)
          if (x == "objective") obj_col = k;
      }
      EXPECT_GT(bound, 0) << line;
      EXPECT_LE(bound, std::stod(f.at(obj_col))) << line;
      ++rows;
    }
    EXPECT_EQ(rows, fit);
  }
  // Again: every run is in the database, nothing is simulated, the ranking is the same.
  const auto again = Shell(std::string(MMTWIN_CLI) + " tune " + args + " 2>" + (dir / "err.txt").string());
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(nlohmann::json::parse(again.out)["ranked"], j["ranked"]);
  std::ifstream in(dir / "err.txt");
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("evaluated 0 (" + std::to_string(evaluated) + " already in"), std::string::npos) << err;
}

// --recheck 2: the best two again with the SimGrid engine, in a second sweep of the same database; the third is
// not re-checked.
TEST(CliTuneTest, RecheckRunsTheBestAgainWithSimGrid) {
  const fs::path dir = Dir("80e9");
  const auto r = Mmtwin("tune " + (dir / "space.yaml").string() + " -o " + (dir / "out").string() +
                            " --jobs 2 --recheck 2 --json",
                        /*with_stderr=*/false);
  if (r.code == 2) GTEST_SKIP() << "this mmtwin has no SimGrid engine";
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["ranked"].size(), 3u);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(j["ranked"][i].contains("objective_simgrid")) << j["ranked"][i];
    const double a = j["ranked"][i]["objective"], s = j["ranked"][i]["objective_simgrid"];
    EXPECT_GT(s, 0);
    // Shared links only slow a run down: SimGrid's figure is never better than the analytic one by more than
    // the engines' agreement without contention (0.5%).
    EXPECT_GE(s, a * 0.995) << j["ranked"][i];
  }
  EXPECT_FALSE(j["ranked"][2].contains("objective_simgrid"));
  const auto tables = Shell("sqlite3 -version >/dev/null 2>&1 && sqlite3 " + (dir / "out.sqlite").string() +
                            " \"select count(*) from runs where sweep = 'small-simgrid'\" 2>&1");
  if (tables.code == 0) EXPECT_EQ(tables.out, "2\n");
}

TEST(CliTuneTest, NothingFitsSaysWhichConstraint) {
  const fs::path dir = Dir("4e9");
  const auto r = Mmtwin("tune " + (dir / "space.yaml").string() + " -o " + (dir / "out").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("every valid layout needs more memory than the limit"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(CliTuneTest, BadSpaceIsExit2AtItsLine) {
  const fs::path dir = Dir("40e9");
  std::ofstream(dir / "bad.yaml") << "name: bad\nbase: base.yaml\ngpus: [8]\nobjective: fastest\n";
  const auto r = Mmtwin("tune " + (dir / "bad.yaml").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bad.yaml:4: objective: unknown objective 'fastest'"), std::string::npos) << r.out;
}

}  // namespace

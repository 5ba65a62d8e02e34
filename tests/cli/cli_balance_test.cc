// SPDX-License-Identifier: Apache-2.0
// Runs the real `mmtwin balance` binary: exit codes, error messages, JSON keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"

namespace {

using mmtwin::testing::CliRun;
using mmtwin::testing::Mmtwin;

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

class CliBalanceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    trace_ = TempPath("cli_balance_small.csv");
    CliRun g = Mmtwin("trace gen --preset internvl-1.2m --samples 4000 --seed 3 -o " + trace_);
    ASSERT_EQ(g.code, 0) << g.out;
  }
  static std::string trace_;
};
std::string CliBalanceTest::trace_;

TEST_F(CliBalanceTest, JsonHasTheDocumentedKeys) {
  CliRun r = Mmtwin("balance --trace " + trace_ + " --model internvl-1.5-6b-20b --dp 4 --policy isf --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"pad_ratio", "dist_ratio_vit", "dist_ratio_llm", "mean_batch_size", "samples_placed",
                        "samples_skipped"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["pad_ratio"].get<double>(), 0.0);
  EXPECT_EQ(j["policy"], "isf");
}

TEST_F(CliBalanceTest, PostBalanceJsonHasTrafficKeys) {
  CliRun r = Mmtwin("balance --trace " + trace_ +
                    " --model internvl-1.5-6b-20b --dp 16 --policy post-balance --param algorithm=kk --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"max_load_over_lower_bound", "all_to_all_bytes", "inter_node_bytes"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_GE(j["max_load_over_lower_bound"].get<double>(), 1.0 - 1e-9);
}

TEST_F(CliBalanceTest, CompareListsTable3Methods) {
  CliRun r = Mmtwin("balance --compare --trace " + trace_ + " --model internvl-1.5-6b-20b --dp 4");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* p : {"random", "length-group", "device-group", "isf"})
    EXPECT_NE(r.out.find(p), std::string::npos);
}

// Compared policies with different batch sizes are not comparable on dist ratios: the table says so, and one
// --param batch_size sets every policy that has it (then no note).
TEST_F(CliBalanceTest, CompareSaysWhenBatchSizesDiffer) {
  const std::string base = "balance --trace " + trace_ + " --model internvl-1.5-6b-20b --dp 4 ";
  CliRun r = Mmtwin(base + "--compare random,post-balance");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("note: the policies ran with different batch sizes (AVE-BS 4.00 .. 16.00"),
            std::string::npos)
      << r.out;
  r = Mmtwin(base + "--compare random,post-balance --param batch_size=8");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("note: the policies ran with different batch sizes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("random            8.00"), std::string::npos) << r.out;
}

TEST_F(CliBalanceTest, BadInputExitsTwoWithAClearMessage) {
  const std::string base = "balance --trace " + trace_ + " --model internvl-1.5-6b-20b --dp 4 ";
  CliRun r = Mmtwin(base + "--policy nope");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown data policy 'nope'; valid values are: random,"), std::string::npos) << r.out;
  r = Mmtwin(base + "--policy isf --param iterations=many");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("parameter 'iterations': 'many' is not an integer"), std::string::npos) << r.out;
  r = Mmtwin(base + "--policy isf --param bogus=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bogus"), std::string::npos) << r.out;
  r = Mmtwin("balance --trace " + trace_ + " --model no-such-model --dp 4 --policy isf");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no-such-model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("internvl-1.5-6b-20b"), std::string::npos) << "should list valid models: " << r.out;
  r = Mmtwin("balance --trace /nonexistent.csv --model internvl-1.5-6b-20b --dp 4 --policy isf");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/nonexistent.csv"), std::string::npos) << r.out;
  r = Mmtwin("balance --trace " + trace_ + " --model internvl-1.5-6b-20b --dp 0 --policy isf");
  EXPECT_EQ(r.code, 2);
  r = Mmtwin("balance --trace " + trace_ + " --model internvl-1.5-6b-20b --policy isf");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--dp is required"), std::string::npos) << r.out;

  const std::string bad = TempPath("bad_trace.csv");
  std::ofstream(bad)
      << "# mmtwin-trace v1\nsample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens\n"
         "a,x,1,1,0,0,10\nb,x,1,1,0,-2.5,10\n";
  r = Mmtwin("balance --trace " + bad + " --model internvl-1.5-6b-20b --dp 1 --policy random");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(bad + ":4: audio_seconds:"), std::string::npos) << r.out;
}

// Issue 33, item 9: ISF's threshold search scored its candidates with 3 rounds where the run uses 10 (default)
// and could pick thresholds that ran worse than its start point. Brute force: every candidate the search
// considers (Q_v - 1 .. Q_v + 1, Q_t - 256 and Q_t around the start point), run as given thresholds; the search's
// run scores as the best of them (ViT + LLM DistRatio + the share of samples left out), so never worse than the
// start point. A LLaVA-format trace (1 image or none), dp 8, as the real file.
TEST(CliBalanceSearch, IsfSearchRunsTheBestOfItsCandidates) {
  // Two cases where the old search (3 rounds) ran worse: llava-665k seed 1 at dp 8 (not the best candidate, by
  // 0.017) and internvl-1.2m seed 2 at dp 4 (worse than its start point, by 0.012).
  struct Case {
    const char *preset, *model;
    int seed, dp;
  };
  for (const Case& k :
       {Case{"llava-665k", "llava-1.5-7b", 1, 8}, Case{"internvl-1.2m", "internvl-1.5-6b-20b", 2, 4}}) {
    SCOPED_TRACE(k.preset);
    const std::string trace = TempPath(std::string("cli_balance_search_") + k.preset + ".csv");
    ASSERT_EQ(Mmtwin(std::string("trace gen --preset ") + k.preset + " --samples 6000 --seed " +
                     std::to_string(k.seed) + " -o " + trace)
                  .code,
              0);
    const std::string base = "balance --trace " + trace + " --model " + k.model + " --dp " +
                             std::to_string(k.dp) + " --policy isf --json";
    auto run = [&](const std::string& params) {
      CliRun r = Mmtwin(base + params, false);
      EXPECT_EQ(r.code, 0) << params << "\n" << r.out;
      return nlohmann::json::parse(r.out);
    };
    auto score = [](const nlohmann::json& j) {
      const double left_out =
          j["samples_skipped"].get<double>() + j["samples_dropped_remainder"].get<double>();
      return j["dist_ratio_vit"].get<double>() + j["dist_ratio_llm"].get<double>() + left_out / 6000.0;
    };
    const nlohmann::json start = run(" --param search=false");
    const int64_t q_v = start["isf_q_v"].get<int64_t>(), q_t = start["isf_q_t_tokens"].get<int64_t>();
    double best = 1e18;
    for (int64_t dv = -1; dv <= 1; ++dv)
      for (int64_t dt : {-256, 0}) {
        if (q_v + dv < 1) continue;
        const nlohmann::json c = run(" --param search=false --param q_v=" + std::to_string(q_v + dv) +
                                     " --param q_t=" + std::to_string(q_t + dt));
        best = std::min(best, score(c));
      }
    const nlohmann::json searched = run(" --param search=true");
    EXPECT_NEAR(score(searched), best, 1e-12);
    EXPECT_LE(score(searched), score(start) + 1e-12);
  }
}

TEST(CliTest, UnknownCommandAndListings) {
  CliRun r = Mmtwin("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown command 'frobnicate'"), std::string::npos);
  r = Mmtwin("policies");
  EXPECT_EQ(r.code, 0);
  for (const char* p :
       {"random", "length-group", "device-group", "isf", "post-balance", "orchestrator", "iterations"})
    EXPECT_NE(r.out.find(p), std::string::npos) << p;
  r = Mmtwin("models");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("internvl-1.5-6b-20b"), std::string::npos);
}

}  // namespace

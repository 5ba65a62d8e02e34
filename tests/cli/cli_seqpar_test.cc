// SPDX-License-Identifier: Apache-2.0
// Issue 12 through the real binary: `mmtwin plan --max-seq` on a shipped LongVILA scenario, a scenario error
// about sequence parallelism exits 2 naming file:line: field, and `mmtwin policies` lists the SP registry.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_runner.h"

namespace mmtwin {
namespace {

using mmtwin::testing::CliRun;
using mmtwin::testing::Mmtwin;

std::string Src(const std::string& rel) { return std::string(MMTWIN_SOURCE_DIR) + "/" + rel; }

TEST(CliSeqParTest, PlanMaxSeqPrintsEveryMethod) {
  CliRun r = Mmtwin("plan " + Src("scenarios/longvila/mmsp-32gpu.yaml") + " --max-seq --step-tokens 8192");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* p : {"none", "ring", "zigzag-ring", "ulysses", "2d", "megatron-cp", "megatron-cp+tp"})
    EXPECT_NE(r.out.find(std::string("\n") + p + " "), std::string::npos) << p << "\n" << r.out;
  EXPECT_NE(r.out.find("8x4"), std::string::npos) << r.out;  // 2d's Ulysses x ring on 32 GPUs
  CliRun j =
      Mmtwin("plan " + Src("scenarios/longvila/mmsp-32gpu.yaml") + " --max-seq --json --sp-policy 2d", false);
  EXPECT_EQ(j.code, 0);
  EXPECT_NE(j.out.find("\"policy\": \"2d\""), std::string::npos) << j.out;
  EXPECT_EQ(j.out.find("\"policy\": \"ring\""), std::string::npos) << j.out;
}

// Issue 34: --step-tokens / --sp-policy without --max-seq were ignored; a step larger than anything that fits
// printed 0 tokens for every method as if that were the answer.
TEST(CliSeqParTest, MaxSeqOptionsNeedMaxSeqAndAStepTooLargeSaysSo) {
  const std::string sc = Src("scenarios/longvila/two-stage-2gpu.yaml");
  for (const char* opt : {"--step-tokens 4096", "--sp-policy 2d"}) {
    CliRun r = Mmtwin("plan " + sc + " " + opt);
    EXPECT_EQ(r.code, 2) << opt << "\n" << r.out;
    EXPECT_NE(r.out.find(std::string(opt).substr(0, std::string(opt).find(' ')) + " requires --max-seq"),
              std::string::npos)
        << r.out;
  }
  CliRun big = Mmtwin("plan " + sc + " --max-seq --sp-policy 2d --step-tokens 1073741824");
  EXPECT_EQ(big.code, 0) << big.out;
  EXPECT_NE(big.out.find("< 1073741824"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("not even one step of 1073741824 tokens fits"), std::string::npos) << big.out;
  CliRun json = Mmtwin("plan " + sc + " --max-seq --json --sp-policy 2d --step-tokens 1073741824", false);
  EXPECT_NE(json.out.find("\"max_tokens\": 0, \"peak_bytes\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"below_step\": true"), std::string::npos) << json.out;
}

TEST(CliSeqParTest, ASequenceParallelErrorExits2NamingFileLineAndField) {
  const std::string path = ::testing::TempDir() + "/bad-sp.yaml";
  std::ofstream(path) << "trace: {sequence_tokens: 4096}\nmodel: longvila-8b\ncluster: h100-8x400g\n"
                         "parallel:\n  sp: 24\npolicies: {sp: ulysses}\n";
  CliRun r = Mmtwin("simulate " + path + " -o " + ::testing::TempDir() + "/bad-sp-run");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(path + ":5: parallel.sp: Ulysses degree 24 does not divide"), std::string::npos)
      << r.out;
}

TEST(CliSeqParTest, PoliciesListTheSequenceParallelRegistry) {
  CliRun r = Mmtwin("policies");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("sequence-parallel policies"), std::string::npos);
  EXPECT_NE(r.out.find("megatron-cp+tp:"), std::string::npos);
  EXPECT_NE(r.out.find("sharding (string, default two-stage)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mmtwin

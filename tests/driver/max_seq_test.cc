// SPDX-License-Identifier: Apache-2.0
// Max context search (driver/max_seq.h) against brute force: the answer fits and one step more does not
// (checked by planning both lengths directly), a sequence-length sweep axis (trace.sequence_tokens) changes the
// planned tokens, and Ulysses stops at the heads (8x shorter than 2D at 256 GPUs, LongVILA Figure 9).
#include "driver/max_seq.h"

#include <gtest/gtest.h>

#include "driver/planner.h"

namespace mmtwin {
namespace {

Scenario Base(int gpus) {
  Scenario s;
  s.name = "max-seq";
  s.trace.sequence_tokens = 1024;
  s.model = "longvila-8b";
  s.cluster = "h100-8x400g";
  s.nodes = (gpus + 7) / 8;
  s.parallel.dp = 1;
  s.parallel.sp = gpus;
  s.parallel.zero_stage = 3;
  s.sp = {"2d", {}};
  s.data = {"random", {{"batch_size", "1"}}};
  s.iterations = 1;
  return s;
}

bool FitsAt(Scenario s, const MaxSeqRow& row, int64_t tokens) {
  s.sp = {row.policy, {}};
  s.parallel.sp = row.sp;
  s.parallel.tp = row.tp;
  s.parallel.dp = row.dp;
  s.trace.sequence_tokens = tokens;
  s.trace.samples = row.dp;
  s.data = {"random", {{"batch_size", "1"}}};
  auto run = BuildPlan(s, {});
  EXPECT_TRUE(run.ok()) << run.error().message();
  if (!run.ok()) return false;
  for (const StageMemory& m : run->memory)
    if (!m.fits) return false;
  return true;
}

TEST(MaxSeqTest, TheAnswerFitsAndOneStepMoreDoesNot) {
  const Scenario s = Base(16);
  MaxSeqOptions o;
  o.step_tokens = 4096;
  auto rows = MaxSequenceSearch(s, o);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 9u);  // every SP policy of the registry
  for (const MaxSeqRow& r : *rows) {
    SCOPED_TRACE(r.policy);
    if (!r.unavailable.empty()) continue;
    ASSERT_GT(r.max_tokens, 0);
    EXPECT_EQ(r.max_tokens % o.step_tokens, 0);
    EXPECT_TRUE(FitsAt(s, r, r.max_tokens));
    EXPECT_FALSE(FitsAt(s, r, r.max_tokens + o.step_tokens));
    EXPECT_LE(r.peak_bytes, r.capacity_bytes);
  }
}

TEST(MaxSeqTest, UlyssesStopsAtTheHeadsWhile2dScalesTo256Gpus) {
  MaxSeqOptions o;
  o.policies = {"ulysses", "2d", "none"};
  auto rows = MaxSequenceSearch(Base(256), o);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  const MaxSeqRow &u = (*rows)[0], &d = (*rows)[1], &none = (*rows)[2];
  EXPECT_EQ(u.sp, 32);  // the 8B model's 32 heads (KV heads replicated), 8 replicas of it
  EXPECT_EQ(u.dp, 8);
  EXPECT_EQ(d.sp, 256);
  EXPECT_EQ(d.ulysses, 8);
  EXPECT_EQ(d.ring, 32);
  EXPECT_NEAR(static_cast<double>(d.max_tokens) / u.max_tokens, 8.0, 0.1);
  EXPECT_GT(d.max_tokens, int64_t{2} << 20);  // over 2M tokens without checkpointing (LongVILA §5.1.1)
  EXPECT_LT(none.max_tokens * 100, d.max_tokens);
}

TEST(MaxSeqTest, SequenceTokensIsASweepAxis) {
  Scenario s = Base(8);
  const Status st = ApplyOverride(s, "trace.sequence_tokens", "65536");
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(s.trace.sequence_tokens, 65536);
  auto run = BuildPlan(s, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ((*run->tokens)[0].llm_tokens, 65536);
  EXPECT_FALSE(ApplyOverride(s, "trace.sequence_tokens", "0").ok());
}

}  // namespace
}  // namespace mmtwin

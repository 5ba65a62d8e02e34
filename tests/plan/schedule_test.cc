// SPDX-License-Identifier: Apache-2.0
#include "core/plan/schedule.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <gtest/gtest.h>

namespace mmtwin {
namespace {

struct Cfg {
  std::string name;
  int pp, vpp, m;
};

std::vector<Cfg> AllConfigs() {
  std::vector<Cfg> v;
  for (int pp : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 4, 5, 8, 16}) {
      v.push_back({"gpipe", pp, 1, m});
      v.push_back({"1f1b", pp, 1, m});
      for (int vpp : {2, 3, 4})
        if (m % pp == 0) v.push_back({"interleaved-1f1b", pp, vpp, m});
    }
  return v;
}

TEST(ScheduleTest, RegistryNamesAndUnknownName) {
  const auto& names = ScheduleNames();
  ASSERT_EQ(names.size(), 5u);
  EXPECT_EQ(names[0].first, "gpipe");
  EXPECT_EQ(names[1].first, "1f1b");
  EXPECT_EQ(names[2].first, "interleaved-1f1b");
  EXPECT_EQ(names[3].first, "zb-h1");
  EXPECT_EQ(names[4].first, "zb-h2");
  for (const auto& [n, d] : names) EXPECT_FALSE(d.empty()) << n;
  auto r = BuildSchedule("zb-v", 4, 1, 8);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "unknown schedule 'zb-v'; valid values are: gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-h2");
}

TEST(ScheduleTest, ParameterErrors) {
  EXPECT_FALSE(BuildSchedule("1f1b", 4, 2, 8).ok());
  EXPECT_FALSE(BuildSchedule("gpipe", 4, 2, 8).ok());
  EXPECT_FALSE(BuildSchedule("1f1b", 0, 1, 8).ok());
  EXPECT_FALSE(BuildSchedule("1f1b", 4, 1, 0).ok());
  auto r = BuildSchedule("interleaved-1f1b", 4, 1, 8);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("vpp"), std::string::npos);
  r = BuildSchedule("interleaved-1f1b", 4, 2, 6);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("multiple of pp"), std::string::npos);
  EXPECT_TRUE(BuildSchedule("interleaved-1f1b", 4, 2, 8).ok());
}

// Every (micro-batch, chunk) forward and backward appears exactly once, on rank chunk % pp, backward after
// forward.
TEST(ScheduleTest, EveryPassExactlyOnceOnItsRank) {
  for (const Cfg& cfg : AllConfigs()) {
    SCOPED_TRACE(cfg.name + " pp " + std::to_string(cfg.pp) + " vpp " + std::to_string(cfg.vpp) + " M " +
                 std::to_string(cfg.m));
    auto r = BuildSchedule(cfg.name, cfg.pp, cfg.vpp, cfg.m);
    ASSERT_TRUE(r.ok()) << r.error().message();
    const Schedule& s = *r;
    EXPECT_EQ(s.name, cfg.name);
    ASSERT_EQ(static_cast<int>(s.per_rank.size()), cfg.pp);
    std::map<std::tuple<int, int, int>, int> seen;  // (kind, m, c) -> count
    std::map<std::tuple<int, int>, int> fwd_pos;    // (m, c) -> position of the forward
    for (int r = 0; r < cfg.pp; ++r) {
      EXPECT_EQ(static_cast<int>(s.per_rank[r].size()), 2 * cfg.m * cfg.vpp);
      for (int pos = 0; pos < static_cast<int>(s.per_rank[r].size()); ++pos) {
        const PipeOp& op = s.per_rank[r][pos];
        EXPECT_EQ(op.chunk % cfg.pp, r);
        ASSERT_GE(op.micro_batch, 0);
        ASSERT_LT(op.micro_batch, cfg.m);
        ASSERT_LT(op.chunk, cfg.pp * cfg.vpp);
        ++seen[{static_cast<int>(op.kind), op.micro_batch, op.chunk}];
        if (op.kind == PassKind::kForward) {
          fwd_pos[{op.micro_batch, op.chunk}] = pos;
        } else {
          auto it = fwd_pos.find({op.micro_batch, op.chunk});
          ASSERT_NE(it, fwd_pos.end()) << "backward before forward";
          EXPECT_LT(it->second, pos);
        }
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), 2 * cfg.m * cfg.pp * cfg.vpp);
    for (const auto& [k, n] : seen) EXPECT_EQ(n, 1);
    EXPECT_TRUE(ValidateSchedule(s).ok());
  }
}

TEST(ScheduleTest, InFlightCounts) {
  for (int pp : {1, 2, 4, 8})
    for (int m : {1, 2, 3, 4, 8, 32}) {
      auto f = BuildSchedule("1f1b", pp, 1, m);
      auto g = BuildSchedule("gpipe", pp, 1, m);
      ASSERT_TRUE(f.ok() && g.ok());
      const auto fin = MaxInFlight(*f), gin = MaxInFlight(*g);
      for (int r = 0; r < pp; ++r) {
        EXPECT_EQ(fin[r], std::min(pp - r, m)) << "1f1b pp " << pp << " M " << m << " rank " << r;
        EXPECT_EQ(gin[r], m);
      }
    }
  // Interleaved keeps more: at least its warm-up (+1 for the first steady-state forward), at most M * vpp.
  for (int pp : {2, 4})
    for (int vpp : {2, 3})
      for (int m : {pp, 2 * pp, 4 * pp}) {
        auto s = BuildSchedule("interleaved-1f1b", pp, vpp, m);
        ASSERT_TRUE(s.ok());
        const auto in = MaxInFlight(*s);
        for (int r = 0; r < pp; ++r) {
          const int warmup = std::min(2 * (pp - r - 1) + (vpp - 1) * pp, m * vpp);
          EXPECT_EQ(in[r], std::min(warmup + 1, m * vpp)) << pp << " " << vpp << " " << m << " " << r;
        }
      }
}

TEST(ScheduleTest, OneFOneBShape) {
  auto s = BuildSchedule("1f1b", 4, 1, 6);
  ASSERT_TRUE(s.ok());
  // Rank 1: 2 warm-up forwards, then F B pairs, then 2 cool-down backwards.
  const auto& ops = s->per_rank[1];
  const std::string expect = "FFFBFBFBFBBB";
  std::string got;
  for (const PipeOp& op : ops) got += op.kind == PassKind::kForward ? 'F' : 'B';
  EXPECT_EQ(got, expect);
  EXPECT_EQ(ops[2], (PipeOp{PassKind::kForward, 2, 1}));
  EXPECT_EQ(ops[3], (PipeOp{PassKind::kBackward, 0, 1}));
}

TEST(ScheduleTest, InterleavedWarmupAndChunkOrder) {
  const int pp = 4, vpp = 2, m = 8;
  auto s = BuildSchedule("interleaved-1f1b", pp, vpp, m);
  ASSERT_TRUE(s.ok());
  for (int r = 0; r < pp; ++r) {
    const auto& ops = s->per_rank[r];
    const int warmup = std::min(2 * (pp - r - 1) + (vpp - 1) * pp, m * vpp);
    for (int i = 0; i < warmup; ++i) EXPECT_EQ(ops[i].kind, PassKind::kForward);
    if (warmup < m * vpp) {
      EXPECT_EQ(ops[warmup].kind, PassKind::kForward);
      EXPECT_EQ(ops[warmup + 1].kind, PassKind::kBackward);
    }
    // Forwards: micro-batches 0..pp-1 through chunk r, then through chunk r + pp, then the next group.
    std::vector<PipeOp> fwd;
    for (const PipeOp& op : ops)
      if (op.kind == PassKind::kForward) fwd.push_back(op);
    EXPECT_EQ(fwd[0], (PipeOp{PassKind::kForward, 0, r}));
    EXPECT_EQ(fwd[pp - 1], (PipeOp{PassKind::kForward, pp - 1, r}));
    EXPECT_EQ(fwd[pp], (PipeOp{PassKind::kForward, 0, r + pp}));
    EXPECT_EQ(fwd[2 * pp], (PipeOp{PassKind::kForward, pp, r}));
    // Backwards start with the last chunk.
    std::vector<PipeOp> bwd;
    for (const PipeOp& op : ops)
      if (op.kind == PassKind::kBackward) bwd.push_back(op);
    EXPECT_EQ(bwd[0], (PipeOp{PassKind::kBackward, 0, r + pp}));
    EXPECT_EQ(bwd[pp], (PipeOp{PassKind::kBackward, 0, r}));
  }
}

TEST(ScheduleTest, ValidateRejectsBrokenSchedules) {
  auto s = BuildSchedule("1f1b", 2, 1, 2);
  ASSERT_TRUE(s.ok());
  Schedule bad = *s;
  bad.per_rank[0].pop_back();
  EXPECT_NE(ValidateSchedule(bad).error().message().find("missing its backward"), std::string::npos);
  bad = *s;
  std::swap(bad.per_rank[1][0], bad.per_rank[1][1]);  // B0 before F0 on the last rank
  EXPECT_NE(ValidateSchedule(bad).error().message().find("backward before its forward"), std::string::npos);
  bad = *s;
  bad.per_rank[0][0].chunk = 1;
  EXPECT_NE(ValidateSchedule(bad).error().message().find("not on this rank"), std::string::npos);
  bad = *s;
  bad.per_rank.pop_back();
  EXPECT_FALSE(ValidateSchedule(bad).ok());
}

TEST(ScheduleTest, Deterministic) {
  auto a = BuildSchedule("interleaved-1f1b", 4, 3, 12);
  auto b = BuildSchedule("interleaved-1f1b", 4, 3, 12);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->per_rank, b->per_rank);
}

// Schedules come from the one registry template: typed parameters, and unknown ones are errors.
TEST(ScheduleTest, ParametersAreCheckedAgainstTheRegistry) {
  auto bad = BuildSchedule("1f1b", 2, 1, 4, {{"bogus", "7"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(),
            "schedule '1f1b': unknown parameter 'bogus'; valid parameters are: (none)");
  EXPECT_TRUE(BuildSchedule("1f1b", 2, 1, 4, {}).ok());
  ASSERT_EQ(Schedules().entries().size(), ScheduleNames().size());
  for (const auto& e : Schedules().entries()) EXPECT_FALSE(e.description.empty()) << e.name;
  auto unknown = Schedules().Find("zb-v");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message(),
            "unknown schedule 'zb-v'; valid values are: gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-h2");
}

}  // namespace
}  // namespace mmtwin

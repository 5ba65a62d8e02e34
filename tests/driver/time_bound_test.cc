// SPDX-License-Identifier: Apache-2.0
// The lower bound on the mean iteration time before planning (driver/time_bound.h): below the simulated time for
// every layout, schedule, data, partition and recompute policy tried (the oracle is the simulator itself); equal
// to the summed compute where nothing else can add time (one device, no recompute: a closed form); and close
// enough to matter (a bound of 0 would pass the first check).
#include "driver/time_bound.h"

#include <gtest/gtest.h>

#include "driver/simulate.h"
#include "scenario/small_scenario.h"

namespace mmtwin {
namespace {

struct Pair {
  double bound_us = 0, simulated_us = 0;
  bool bounded = false;
};

Pair BoundAndSimulated(const Scenario& s, TimeBoundCache* cache = nullptr) {
  auto prepared = PrepareData(s);
  EXPECT_TRUE(prepared.ok()) << prepared.error().message();
  if (!prepared.ok()) return {};
  auto b = IterationTimeLowerBound(s, **prepared, cache);
  EXPECT_TRUE(b.ok()) << b.error().message();
  auto r = Simulate(s, {});
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!b.ok() || !r.ok()) return {};
  EXPECT_EQ(b->replayed, r->summary.iterations_replayed);
  EXPECT_EQ(b->iterations_in_epoch, r->summary.iterations_in_epoch);
  return {b->iteration_us, r->summary.iteration_time_us.mean, b->bounded};
}

Scenario Variant(int dp, int tp, int pp, int vpp, const std::string& schedule, const std::string& data,
                 const std::string& partition, const std::string& recompute) {
  Scenario s = SmallScenario();
  s.parallel.dp = dp;
  s.parallel.tp = tp;
  s.parallel.pp = pp;
  s.parallel.vpp = vpp;
  s.schedule = {schedule, {}};
  s.data = {data, {}};
  s.partition = {partition, {}};
  s.recompute = {recompute, {}};
  s.iterations = 2;
  return s;
}

// Layouts x schedules x policies on InternVL 6B+20B: every bound holds, and none is far below (a bound of 0
// passes the first check: the loosest, gpipe with full recompute, is at 0.48 of its time, the recompute and
// gpipe's bubbles being what the bound leaves out; 1f1b with ISF and BMP is at 0.84, 8-way DP alone at 0.99).
TEST(TimeBoundTest, BelowTheSimulatedTimeForEveryVariant) {
  struct V {
    int dp, tp, pp, vpp;
    const char* schedule;
    const char* data;
    const char* partition;
    const char* recompute;
  };
  const V variants[] = {
      {2, 2, 4, 1, "1f1b", "random", "params", "none"},
      {2, 2, 4, 1, "1f1b", "isf", "bmp", "adaptive"},
      {2, 2, 4, 1, "gpipe", "length-group", "uniform", "full"},
      {2, 2, 4, 1, "zb-h1", "isf", "bmp", "none"},
      {2, 2, 4, 1, "zb-h2", "random", "params", "none"},
      {2, 2, 4, 2, "interleaved-1f1b", "isf", "params", "none"},
      {4, 2, 2, 1, "1f1b", "post-balance", "bmp", "adaptive"},
      {8, 2, 1, 1, "1f1b", "isf", "uniform", "none"},
      {1, 4, 8, 1, "1f1b", "random", "params", "none"},
      {4, 1, 4, 1, "zb-h1", "length-group", "bmp", "full"},
  };
  for (const V& v : variants) {
    const Scenario s = Variant(v.dp, v.tp, v.pp, v.vpp, v.schedule, v.data, v.partition, v.recompute);
    const Pair p = BoundAndSimulated(s);
    const std::string what = std::string(v.schedule) + " " + v.data + " " + v.partition + " " + v.recompute +
                             " dp" + std::to_string(v.dp) + " tp" + std::to_string(v.tp) + " pp" +
                             std::to_string(v.pp) + " vpp" + std::to_string(v.vpp);
    ASSERT_TRUE(p.bounded) << what;
    EXPECT_LE(p.bound_us, p.simulated_us) << what;
    EXPECT_GT(p.bound_us, 0.4 * p.simulated_us) << what << ": bound " << p.bound_us << " us";
  }
}

// One device (dp 1, pp 1), nothing recomputed: the iteration is the compute lane's ops back to back, then the
// optimizer step. The bound is exactly that sum (less its 1e-6 margin).
TEST(TimeBoundTest, OneDeviceIsItsSummedCompute) {
  Scenario s = Variant(1, 2, 1, 1, "1f1b", "isf", "uniform", "none");
  s.iterations = 1;
  const Pair p = BoundAndSimulated(s);
  ASSERT_TRUE(p.bounded);
  auto run = BuildPlan(s, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  auto g = BuildPlanIterationGraph(*run, 0);
  ASSERT_TRUE(g.ok()) << g.error().message();
  ASSERT_EQ(g->optimizer_us.size(), 1u);
  const double compute_us = p.simulated_us - g->optimizer_us[0];
  EXPECT_NEAR(p.bound_us, compute_us * (1 - 1e-6), 1e-9 * compute_us);
}

// The cache gives what a fresh computation gives, and prices once for layouts that differ only in the pipeline
// and schedule; a scenario on another data plan is an error; sequence parallelism has no bound.
TEST(TimeBoundTest, CacheMismatchAndSequenceParallelism) {
  TimeBoundCache cache;
  const Scenario a = Variant(2, 2, 4, 1, "1f1b", "isf", "bmp", "none");
  Scenario b = a;
  b.parallel.pp = 2;
  b.schedule = {"zb-h1", {}};
  auto prepared = PrepareData(a);
  ASSERT_TRUE(prepared.ok());
  ASSERT_EQ((*prepared)->key, PreparedDataKey(b));  // pp does not change ISF's plan
  for (const Scenario& s : {a, b, a}) {
    auto cached = IterationTimeLowerBound(s, **prepared, &cache);
    auto fresh = IterationTimeLowerBound(s, **prepared);
    ASSERT_TRUE(cached.ok() && fresh.ok());
    EXPECT_TRUE(fresh->bounded);
    EXPECT_EQ(cached->iteration_us, fresh->iteration_us);
  }
  Scenario other = a;
  other.parallel.dp = 4;
  auto mismatch = IterationTimeLowerBound(other, **prepared);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.error().message().find("not the scenario's"), std::string::npos);

  Scenario sp = a;
  sp.parallel.pp = 1;
  sp.parallel.sp = 2;
  sp.sp = {"zigzag-ring", {}};
  auto sp_prepared = PrepareData(sp);
  ASSERT_TRUE(sp_prepared.ok()) << sp_prepared.error().message();
  auto none = IterationTimeLowerBound(sp, **sp_prepared);
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_FALSE(none->bounded);
  EXPECT_EQ(none->iteration_us, 0);
}

}  // namespace
}  // namespace mmtwin

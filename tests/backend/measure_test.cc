// SPDX-License-Identifier: Apache-2.0
// The measured summary (backend/measure.h, no Torch) splits each device's time as the simulator does
// (core/eval/analytic.h): busy compute, exposed DP communication, idle = the wait for the other DP replicas
// (iteration end less the replica's last op end), bubble = the rest. Hand-computed on a DP2 x PP2 iteration.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/measure.h"
#include "core/plan/mesh.h"
#include "core/records/records_codec.h"
#include "core/scenario/scenario.h"
#include "driver/planner.h"
#include "driver/run_summary.h"

namespace mmtwin::backend {
namespace {

TEST(MeasuredSummary, BubbleAndIdleFollowTheSimulatorsDefinitions) {
  auto scenario = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  ASSERT_EQ(scenario->parallel.dp, 2);
  ASSERT_EQ(scenario->parallel.pp, 2);
  auto run = BuildPlan(*scenario, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  const DeviceMesh mesh(run->plan.parallel, run->cluster.gpus_per_node);
  std::vector<OpRecord> ops;
  auto op = [&](int dp, int pp, OpKind kind, double start_us, double end_us) {
    OpRecord o;
    o.source = RecordSource::kMeasured;
    o.kind = kind;
    o.device = mesh.Device(dp, pp);
    o.micro_batch = 0;
    o.chunk = pp;
    o.start_us = start_us;
    o.duration_us = end_us - start_us;
    ops.push_back(o);
  };
  // Replica 0 ends at 900, replica 1 at 1000 (the iteration's end).
  op(0, 0, OpKind::kForward, 0, 300);
  op(0, 0, OpKind::kBackward, 500, 800);
  op(0, 1, OpKind::kP2pRecv, 0, 300);  // a wait: bubble, as any other gap
  op(0, 1, OpKind::kForward, 300, 600);
  op(0, 1, OpKind::kBackward, 600, 900);
  op(1, 0, OpKind::kForward, 0, 400);
  op(1, 0, OpKind::kBackward, 600, 900);
  op(1, 0, OpKind::kDpWait, 900, 1000);   // exposed DP communication
  op(1, 0, OpKind::kDispatch, 400, 450);  // the data dispatch blocks the compute: exposed too
  ops.back().micro_batch = 1;
  op(1, 1, OpKind::kForward, 400, 500);
  op(1, 1, OpKind::kBackward, 500, 700);
  const RunSummary s = MeasuredSummary(*run, ops, {1000.0}, {0, 0}, "libtorch-gloo");
  // busy: 600, 600, 700, 300; exposed: 0, 0, 150, 0 (100 DP wait + 50 dispatch); idle: 100, 100, 0, 0;
  // bubble = 1000 - the rest.
  EXPECT_NEAR(s.busy_ratio, 2200.0 / 4000, 1e-12);
  EXPECT_NEAR(s.exposed_comm_ratio, 150.0 / 4000, 1e-12);
  EXPECT_NEAR(s.idle_ratio, 200.0 / 4000, 1e-12);
  EXPECT_NEAR(s.bubble_ratio, (300.0 + 300 + 150 + 700) / 4000, 1e-12);
  // The dispatch reported as the simulator reports it: mean per micro-batch, and its exposed share.
  EXPECT_NEAR(s.dispatch_us_mean, 50, 1e-12);
  EXPECT_NEAR(s.exposed_dispatch_ratio, 50.0 / 4000, 1e-12);
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_NEAR(s.stages[0].dispatch_us_mean, 50, 1e-12);
  EXPECT_NEAR(s.stages[0].exposed_dispatch_ratio, 50.0 / 2000, 1e-12);
  EXPECT_EQ(s.stages[1].dispatch_us_mean, 0);
  // Stage 0: devices (0, 0) and (1, 0); stage 1: (0, 1) and (1, 1).
  EXPECT_NEAR(s.stages[0].busy_ratio, 1300.0 / 2000, 1e-12);
  EXPECT_NEAR(s.stages[0].bubble_ratio, 450.0 / 2000, 1e-12);
  EXPECT_NEAR(s.stages[0].idle_ratio, 100.0 / 2000, 1e-12);
  EXPECT_NEAR(s.stages[1].busy_ratio, 900.0 / 2000, 1e-12);
  EXPECT_NEAR(s.stages[1].bubble_ratio, 1000.0 / 2000, 1e-12);
  EXPECT_NEAR(s.stages[1].idle_ratio, 100.0 / 2000, 1e-12);
}

// The header, iteration-time statistics and epoch projection of a measured summary are the shared builder's
// (driver/run_summary.h, the simulator's too): the measurement adds only the time split, throughput and stages.
TEST(MeasuredSummary, SharesTheSimulatorsSummaryBuilder) {
  auto scenario = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  auto run = BuildPlan(*scenario, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  const std::vector<double> times = {1000, 1250, 900, 1100};
  const RunSummary s = MeasuredSummary(*run, {}, times, {0, 0}, "libtorch-gloo");
  const IterationTimeStats want = IterationTimeStatsOf(times, run->plan.iterations_in_epoch);
  EXPECT_EQ(s.iteration_time_us.mean, want.mean);
  EXPECT_EQ(s.iteration_time_us.p99, want.p99);
  EXPECT_EQ(s.iteration_time_us.ci95_low, want.ci95_low);
  EXPECT_EQ(s.iteration_time_us.ci95_high, want.ci95_high);
  EXPECT_DOUBLE_EQ(s.epoch_time_s, 1062.5e-6 * static_cast<double>(run->plan.iterations_in_epoch));
  EXPECT_EQ(s.iterations_replayed, 4);
  RunSummary header = s;  // without what the measurement adds
  header.busy_ratio = header.bubble_ratio = header.idle_ratio = header.exposed_comm_ratio = 0;
  header.recompute_ratio = header.dispatch_us_mean = header.exposed_dispatch_ratio = 0;
  header.tokens_per_s = header.samples_per_s = header.mfu = 0;
  header.stages.clear();
  EXPECT_EQ(SummaryToJson(header),
            SummaryToJson(PlannedRunSummary(*run, RecordSource::kMeasured, "libtorch-gloo", times)));
  // No iteration yet: the header alone.
  EXPECT_EQ(SummaryToJson(MeasuredSummary(*run, {}, {}, {}, "libtorch-gloo")),
            SummaryToJson(PlannedRunSummary(*run, RecordSource::kMeasured, "libtorch-gloo", {})));
}

}  // namespace
}  // namespace mmtwin::backend

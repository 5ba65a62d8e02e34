// SPDX-License-Identifier: Apache-2.0
// What the backend refuses before it starts any process (backend/launch.h CheckBackendScenario): plans it
// cannot run as the simulator prices them are errors naming the scenario key, never a wrong measurement.
#include <gtest/gtest.h>

#include <string>

#include "backend/launch.h"
#include "core/scenario/scenario.h"

namespace mmtwin::backend {
namespace {

Scenario Small() {
  auto s = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? *s : Scenario{};
}

TEST(BackendCheck, TheShippedSmallScenarioRuns) {
  const Scenario s = Small();
  const Status st = CheckBackendScenario(s, s.parallel.world_size(), "test");
  EXPECT_TRUE(st.ok()) << st.error().message();
}

// Zero-bubble schedules split the backward into input and weight gradients; the backend's backward is whole,
// so it would run each split pass as a full backward (twice per micro-batch): refused.
TEST(BackendCheck, SplitBackwardSchedulesAreRefused) {
  for (const char* name : {"zb-h1", "zb-h2"}) {
    Scenario s = Small();
    s.schedule.name = name;
    const Status st = CheckBackendScenario(s, s.parallel.world_size(), "test");
    ASSERT_FALSE(st.ok()) << name;
    EXPECT_NE(st.error().message().find("policies.schedule"), std::string::npos) << st.error().message();
    EXPECT_NE(st.error().message().find(std::string("not '") + name + "'"), std::string::npos)
        << st.error().message();
  }
  Scenario s = Small();
  s.schedule.name = "gpipe";
  EXPECT_TRUE(CheckBackendScenario(s, s.parallel.world_size(), "test").ok());
}

// Frozen components are simulated only: the backend trains every parameter, so it would measure a full backward
// where the simulator prices the input gradient alone.
TEST(BackendCheck, FrozenComponentsAreRefused) {
  Scenario s = Small();
  s.frozen = {"vision"};
  const Status st = CheckBackendScenario(s, s.parallel.world_size(), "test");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("model.frozen: the backend trains every component"), std::string::npos)
      << st.error().message();
}

// TP communication overlap (Megatron-LM --tp-comm-overlap) is priced by the simulator only: the backend's
// collectives run between the GEMMs, so it would measure the serialized step. Refused with TP; a no-op at tp 1.
TEST(BackendCheck, TpCommOverlapIsRefusedWithTensorParallelism) {
  Scenario s = Small();
  ASSERT_EQ(s.parallel.dp, 2);
  s.parallel.dp = 1;
  s.parallel.tp = 2;                   // the same 4 ranks
  s.backend.shrink.width_divisor = 8;  // the vision tower keeps 2 heads (16 / 8) for TP 2
  const Status plain = CheckBackendScenario(s, s.parallel.world_size(), "test");
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  s.parallel.tp_comm_overlap = true;
  const Status st = CheckBackendScenario(s, s.parallel.world_size(), "test");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("parallel.tp_comm_overlap: the backend runs a block's TP collectives"),
            std::string::npos)
      << st.error().message();
  s.parallel.dp = 2;
  s.parallel.tp = 1;
  const Status one = CheckBackendScenario(s, s.parallel.world_size(), "test");
  EXPECT_TRUE(one.ok()) << one.error().message();
}

}  // namespace
}  // namespace mmtwin::backend

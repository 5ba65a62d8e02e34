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

}  // namespace
}  // namespace mmtwin::backend

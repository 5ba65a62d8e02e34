// SPDX-License-Identifier: Apache-2.0
// Every shipped tune space (scenarios/tune/) loads, is named after its file, describes itself and has candidates
// to evaluate: they are documentation and the benchmarks' inputs (reports/benchmarks.md). Slow: enumerating the
// 5,760-combination space checks every candidate's scenario (about 12 s under the sanitizers).
#include <gtest/gtest.h>

#include <filesystem>

#include "tune/tune.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

TEST(TuneSpaceTest, ShippedSpacesLoadAndHaveCandidates) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(MMTWIN_SOURCE_DIR) / "scenarios" / "tune")) {
    if (e.path().extension() != ".yaml") continue;
    ++n;
    auto space = LoadTuneSpace(e.path().string());
    ASSERT_TRUE(space.ok()) << space.error().message();
    EXPECT_EQ(space->sweep.name, e.path().stem().string()) << "a space's name is its file name";
    EXPECT_FALSE(space->sweep.description.empty()) << e.path();
    auto en = EnumerateTune(*space, true);
    ASSERT_TRUE(en.ok()) << en.error().message();
    EXPECT_FALSE(en->evaluate.empty()) << e.path();
  }
  EXPECT_GE(n, 4);
}

}  // namespace
}  // namespace mmtwin

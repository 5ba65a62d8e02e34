// SPDX-License-Identifier: Apache-2.0
// Scenario differences (core/scenario/diff.h): nested keys, sequence elements, added and removed keys, identical
// texts, the formatted line and its cap, and errors that name the side.
#include "core/scenario/diff.h"

#include <gtest/gtest.h>

namespace mmtwin {
namespace {

TEST(ScenarioDiffTest, ChangedAddedAndRemovedKeysInSortedOrder) {
  const std::string a =
      "name: a\nparallel: {dp: 2, tp: 2, pp: 2}\npolicies:\n  data: {name: isf, params: {batch_size: 4}}\n"
      "  recompute: none\nlist: [1, 2]\nseed: 1\n";
  const std::string b =
      "name: a\nparallel: {dp: 1, tp: 2, pp: 2, vpp: 2}\npolicies:\n  data: {name: isf, params: {batch_size: "
      "8}}\n"
      "  recompute: none\nlist: [1, 3]\n";
  auto c = ScenarioChanges(a, b);
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->size(), 5u);
  EXPECT_EQ((*c)[0].key, "list[1]");
  EXPECT_EQ((*c)[0].before, "2");
  EXPECT_EQ((*c)[0].after, "3");
  EXPECT_EQ((*c)[1].key, "parallel.dp");
  EXPECT_EQ((*c)[2].key, "parallel.vpp");
  EXPECT_EQ((*c)[2].before, "");
  EXPECT_EQ((*c)[2].after, "2");
  EXPECT_EQ((*c)[3].key, "policies.data.params.batch_size");
  EXPECT_EQ((*c)[4].key, "seed");
  EXPECT_EQ((*c)[4].after, "");
  EXPECT_EQ(FormatChanges(*c, 2), "list[1]: 2 -> 3; parallel.dp: 2 -> 1; and 3 more");
  EXPECT_EQ(FormatChanges(*c, 10),
            "list[1]: 2 -> 3; parallel.dp: 2 -> 1; parallel.vpp: (none) -> 2; "
            "policies.data.params.batch_size: 4 -> 8; seed: 1 -> (none)");
}

TEST(ScenarioDiffTest, IdenticalTextsAndLayoutOnlyChangesHaveNoChange) {
  auto same = ScenarioChanges("parallel: {dp: 2}\n", "# a comment\nparallel:\n  dp: 2\n");
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->empty());
  EXPECT_EQ(FormatChanges(*same, 3), "no change");
  // An empty string is a value, not an absent key; a map emptied is a change.
  auto empty = ScenarioChanges("a: x\nb: {c: 1}\n", "a: ''\nb: {}\n");
  ASSERT_TRUE(empty.ok());
  ASSERT_EQ(empty->size(), 3u);
  EXPECT_EQ((*empty)[0].after, "''");
  EXPECT_EQ((*empty)[1].key, "b");
  EXPECT_EQ((*empty)[1].after, "{}");
  EXPECT_EQ((*empty)[2].key, "b.c");
  EXPECT_EQ((*empty)[2].after, "");
}

TEST(ScenarioDiffTest, ErrorsNameTheSide) {
  auto bad = ScenarioChanges("a: 1\n", "a: [1\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message().rfind("after", 0), 0u) << bad.error().message();
  auto dup = ScenarioChanges("a: 1\na: 2\n", "a: 1\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message().rfind("before", 0), 0u) << dup.error().message();
}

}  // namespace
}  // namespace mmtwin

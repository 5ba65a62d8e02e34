// SPDX-License-Identifier: Apache-2.0
#include "core/plan/dispatch.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "core/util/rng.h"

namespace mmtwin {
namespace {

TEST(DispatchTest, AggregateTransfersExample) {
  std::vector<DispatchTransfer> t = {{0, 1, 10}, {0, 1, 5}, {2, 2, 7}, {1, 0, 0}, {1, 0, 3}};
  AggregateTransfers(&t);
  EXPECT_EQ(t, (std::vector<DispatchTransfer>{{0, 1, 15}, {1, 0, 3}}));
}

// Against a map of (src, dst) -> summed bytes: short and long lists (comparison sort and counting sort), few and
// many ranks, repeated pairs, self transfers and empty ones.
TEST(DispatchTest, AggregateTransfersMatchesMapReference) {
  Rng rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int ranks = 1 + static_cast<int>(rng.Below(trial % 2 ? 8 : 3000));
    const size_t n = rng.Below(trial % 3 == 0 ? 20000 : 100);
    std::vector<DispatchTransfer> t(n);
    std::map<std::pair<int32_t, int32_t>, int64_t> ref;
    for (auto& x : t) {
      x = {static_cast<int32_t>(rng.Below(ranks)), static_cast<int32_t>(rng.Below(ranks)),
           static_cast<int64_t>(rng.Below(5)) - 1};
      if (x.src_rank != x.dst_rank && x.bytes > 0) ref[{x.src_rank, x.dst_rank}] += x.bytes;
    }
    std::vector<DispatchTransfer> want;
    for (const auto& [pair, bytes] : ref) want.push_back({pair.first, pair.second, bytes});
    AggregateTransfers(&t);
    EXPECT_EQ(t, want) << "trial " << trial << " ranks " << ranks << " n " << n;
  }
}

}  // namespace
}  // namespace mmtwin

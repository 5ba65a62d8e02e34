// SPDX-License-Identifier: Apache-2.0
#include "core/plan/dispatch.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>
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

// AllToAllChains against its definition by hand: sends and receives per device and link summed, the longest
// chain; receive_bound only when a receive chain is strictly the longest.
TEST(DispatchTest, AllToAllChainsClosedForms) {
  EXPECT_EQ(AllToAllChains({}).us, 0.0);
  // One device to k peers across nodes: k transfers' times.
  std::vector<TimedTransfer> fan_out, fan_in;
  for (int k = 1; k <= 5; ++k) {
    fan_out.push_back({0, k, false, 7.0});
    fan_in.push_back({k, 0, false, 7.0});
  }
  EXPECT_EQ(AllToAllChains(fan_out).us, 35.0);
  EXPECT_FALSE(AllToAllChains(fan_out).receive_bound);
  EXPECT_EQ(AllToAllChains(fan_in).us, 35.0);
  EXPECT_TRUE(AllToAllChains(fan_in).receive_bound);
  // NVLink and NIC chains side by side: the longer, not the sum.
  const std::vector<TimedTransfer> mixed = {{0, 1, true, 3}, {0, 2, true, 4}, {0, 3, false, 6}};
  EXPECT_EQ(AllToAllChains(mixed).us, 7.0);
  // Random lists against a brute-force sum per (device, direction, link).
  Rng rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<TimedTransfer> t(rng.Below(50));
    std::map<std::tuple<int, int, bool>, double> chain;
    for (auto& x : t) {
      x = {static_cast<int32_t>(rng.Below(9)), static_cast<int32_t>(rng.Below(9)), rng.Below(2) == 0,
           static_cast<double>(rng.Below(100))};
      chain[{x.src, 0, x.in_node}] += x.us;
      chain[{x.dst, 1, x.in_node}] += x.us;
    }
    double send = 0, receive = 0;
    for (const auto& [key, us] : chain)
      (std::get<1>(key) ? receive : send) = std::max(std::get<1>(key) ? receive : send, us);
    EXPECT_EQ(AllToAllChains(t).us, std::max(send, receive)) << trial;
    EXPECT_EQ(AllToAllChains(t).receive_bound, receive > send) << trial;
  }
}

}  // namespace
}  // namespace mmtwin

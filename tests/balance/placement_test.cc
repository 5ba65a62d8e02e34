// SPDX-License-Identifier: Apache-2.0
#include "core/balance/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/balance/post_balance.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

using Bins = std::vector<std::vector<uint32_t>>;

struct Instance {
  Bins bins;
  std::vector<int> origin;
  std::vector<int64_t> bytes;
};

// d ranks, `per_rank` samples drawn on each rank, balanced by `a`; bytes proportional to tokens (or random).
Instance MakeInstance(Rng& rng, int d, int per_rank, PostBalanceAlgorithm a, bool skewed) {
  Instance in;
  std::vector<int64_t> len;
  for (int r = 0; r < d; ++r)
    for (int k = 0; k < per_rank; ++k) {
      in.origin.push_back(r);
      const int64_t l = std::max<int64_t>(1, std::llround(rng.LogNormal(skewed ? 100 + 400 * r : 500, 1.0)));
      len.push_back(l);
      in.bytes.push_back(rng.Below(4) == 0 ? static_cast<int64_t>(rng.Below(3000)) : l * 2);
    }
  in.bins = PostBalance(len, d, {a, 0, 0});
  return in;
}

// Minimum over all permutations of the max bytes a rank receives from other nodes.
int64_t BruteForce(const Instance& in, int c) {
  const int d = static_cast<int>(in.bins.size());
  Placement p;
  p.rank_of_bin.resize(d);
  std::iota(p.rank_of_bin.begin(), p.rank_of_bin.end(), 0);
  int64_t best = INT64_MAX;
  do {
    EvaluatePlacement(in.bins, in.origin, in.bytes, c, p);
    best = std::min(best, p.max_rank_inter_node_bytes);
  } while (std::next_permutation(p.rank_of_bin.begin(), p.rank_of_bin.end()));
  return best;
}

void ExpectPermutation(const std::vector<int>& rank_of_bin) {
  std::vector<int> sorted = rank_of_bin;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], static_cast<int>(i));
}

TEST(PlacementTest, IdentityClosedForm) {
  // Two ranks per node, 4 ranks. Bin 0 holds items from ranks 0 (10 B) and 3 (7 B).
  Bins bins = {{0, 1}, {2}, {3}, {}};
  std::vector<int> origin = {0, 3, 1, 2};
  std::vector<int64_t> bytes = {10, 7, 5, 4};
  Placement p = PlaceIdentity(bins, origin, bytes, 2);
  EXPECT_EQ(p.rank_of_bin, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p.total_moved_bytes, 7);       // only item 1 moves (rank 3 -> rank 0); the others stay home
  EXPECT_EQ(p.total_inter_node_bytes, 7);  // item 1: node 1 -> node 0
  EXPECT_EQ(p.max_rank_inter_node_bytes, 7);
  EXPECT_EQ(p.max_rank_inter_node_sent_bytes, 7);
}

TEST(PlacementTest, NodeWiseExactVersusBruteForce) {
  Rng rng(99);
  int cases = 0, improved = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int d = 2 + static_cast<int>(rng.Below(trial % 10 == 0 ? 7 : 6));  // 2..8 (d = 8 occasionally)
    const int c = 1 + static_cast<int>(rng.Below(std::min(d, 4)));           // last node may be partial
    const auto a = trial % 3 == 0 ? PostBalanceAlgorithm::kKk : PostBalanceAlgorithm::kLpt;
    Instance in = MakeInstance(rng, d, 1 + static_cast<int>(rng.Below(5)), a, trial % 2 == 0);
    Placement nw = PlaceNodeWise(in.bins, in.origin, in.bytes, c);
    ExpectPermutation(nw.rank_of_bin);
    EXPECT_EQ(nw.max_rank_inter_node_bytes, BruteForce(in, c))
        << "trial " << trial << " d " << d << " c " << c;
    Placement id = PlaceIdentity(in.bins, in.origin, in.bytes, c);
    EXPECT_LE(nw.max_rank_inter_node_bytes, id.max_rank_inter_node_bytes);
    improved += nw.max_rank_inter_node_bytes < id.max_rank_inter_node_bytes;
    ++cases;
  }
  EXPECT_EQ(cases, 400);
  EXPECT_GT(improved, 100) << "the instances should be non-trivial";
}

TEST(PlacementTest, DeterministicAndNeverWorseAtScale) {
  Rng rng(1);
  for (int trial = 0; trial < 5; ++trial) {
    Instance in = MakeInstance(rng, 128, 16, PostBalanceAlgorithm::kLpt, trial % 2 == 0);
    Placement a = PlaceNodeWise(in.bins, in.origin, in.bytes, 8);
    Placement b = PlaceNodeWise(in.bins, in.origin, in.bytes, 8);
    EXPECT_EQ(a.rank_of_bin, b.rank_of_bin);
    ExpectPermutation(a.rank_of_bin);
    Placement id = PlaceIdentity(in.bins, in.origin, in.bytes, 8);
    EXPECT_LE(a.max_rank_inter_node_bytes, id.max_rank_inter_node_bytes);
    EXPECT_LE(a.total_inter_node_bytes, a.total_moved_bytes);
    EXPECT_LE(a.max_rank_inter_node_bytes, a.max_rank_moved_bytes);
  }
}

TEST(PlacementTest, KeepsABinHomeWhenItCan) {
  // Each bin is exactly one rank's original mini-batch, shuffled: node-wise must move nothing.
  Bins bins = {{4, 5}, {0, 1}, {6, 7}, {2, 3}};
  std::vector<int> origin = {0, 0, 1, 1, 2, 2, 3, 3};
  std::vector<int64_t> bytes = {1, 2, 3, 4, 5, 6, 7, 8};
  Placement p = PlaceNodeWise(bins, origin, bytes, 2);
  EXPECT_EQ(p.rank_of_bin, (std::vector<int>{2, 0, 3, 1}));
  EXPECT_EQ(p.total_moved_bytes, 0);
  EXPECT_EQ(p.max_rank_inter_node_bytes, 0);
}

TEST(PlacementTest, SingleNodeHasNoInterNodeTraffic) {
  Rng rng(4);
  Instance in = MakeInstance(rng, 8, 4, PostBalanceAlgorithm::kLpt, false);
  Placement p = PlaceNodeWise(in.bins, in.origin, in.bytes, 8);
  EXPECT_EQ(p.max_rank_inter_node_bytes, 0);
  EXPECT_EQ(p.total_inter_node_bytes, 0);
  EXPECT_EQ(PlaceNodeWise({}, {}, {}, 8).rank_of_bin.size(), 0u);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/graph/topo_order.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

#include <gtest/gtest.h>

#include "core/util/rng.h"

namespace mmtwin {
namespace {

struct Csr {
  std::vector<int32_t> begin, targets;
};

// Random graph on n vertices with out-edges listed in a random order; a DAG when `dag` (every edge goes from a
// lower to a higher rank of a random permutation), else possibly cyclic. Parallel edges allowed.
Csr RandomGraph(Rng& rng, int n, int edges, bool dag, std::vector<std::pair<int, int>>* list) {
  std::vector<int> rank(n);
  for (int i = 0; i < n; ++i) rank[i] = i;
  for (int i = n - 1; i > 0; --i) std::swap(rank[i], rank[rng.Below(i + 1)]);
  list->clear();
  for (int e = 0; e < edges; ++e) {
    int u = static_cast<int>(rng.Below(n)), v = static_cast<int>(rng.Below(n));
    if (u == v) continue;
    if (dag && rank[u] > rank[v]) std::swap(u, v);
    list->push_back({u, v});
  }
  Csr g;
  g.begin.assign(n + 1, 0);
  for (auto [u, v] : *list) ++g.begin[u + 1];
  for (int i = 0; i < n; ++i) g.begin[i + 1] += g.begin[i];
  g.targets.resize(list->size());
  std::vector<int32_t> fill(g.begin.begin(), g.begin.end() - 1);
  for (auto [u, v] : *list) g.targets[fill[u]++] = v;
  return g;
}

// The oracle: Boost.Graph's topological sort of the same graph (out-edges added in the same order), reversed
// into execution order; false when Boost reports a cycle.
bool BoostOrder(int n, const std::vector<std::pair<int, int>>& list, std::vector<int32_t>* order) {
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  G g(n);
  for (auto [u, v] : list) boost::add_edge(u, v, g);
  std::vector<int32_t> out;
  try {
    boost::topological_sort(g, std::back_inserter(out));
  } catch (const boost::not_a_dag&) {
    return false;
  }
  order->assign(out.rbegin(), out.rend());
  return true;
}

TEST(TopologicalOrderTest, EqualsBoostTopologicalSortOnRandomGraphs) {
  Rng rng(7);
  std::vector<std::pair<int, int>> list;
  int cyclic = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int n = 1 + static_cast<int>(rng.Below(60));
    const int edges = static_cast<int>(rng.Below(4 * n + 1));
    const bool dag = trial % 3 != 0;
    const Csr g = RandomGraph(rng, n, edges, dag, &list);
    std::vector<int32_t> ours, boost_order;
    const bool ok = TopologicalOrder(g.begin, g.targets, &ours);
    const bool boost_ok = BoostOrder(n, list, &boost_order);
    ASSERT_EQ(ok, boost_ok) << "trial " << trial;
    if (dag) {
      ASSERT_TRUE(ok) << "trial " << trial;
    }
    if (!ok) {
      ++cyclic;
      continue;
    }
    ASSERT_EQ(ours, boost_order) << "trial " << trial;
    std::vector<int> pos(n);
    for (int i = 0; i < n; ++i) pos[ours[i]] = i;
    for (auto [u, v] : list) ASSERT_LT(pos[u], pos[v]);
  }
  EXPECT_GT(cyclic, 50);  // the cyclic branch was exercised
}

TEST(TopologicalOrderTest, LongChainNeedsNoRecursion) {
  // 1M vertices in one chain listed backwards: a recursive DFS would overflow the stack.
  const int n = 1 << 20;
  std::vector<int32_t> begin(n + 1), targets(n - 1);
  for (int u = 0; u <= n; ++u) begin[u] = std::max(0, u - 1);
  for (int u = 1; u < n; ++u) targets[u - 1] = u - 1;  // u -> u - 1
  std::vector<int32_t> order;
  ASSERT_TRUE(TopologicalOrder(begin, targets, &order));
  ASSERT_EQ(order.size(), static_cast<size_t>(n));
  EXPECT_EQ(order.front(), n - 1);
  EXPECT_EQ(order.back(), 0);
}

TEST(TopologicalOrderTest, SelfLoopAndTwoCycleAreCycles) {
  std::vector<int32_t> order;
  EXPECT_FALSE(TopologicalOrder(std::vector<int32_t>{0, 1}, std::vector<int32_t>{0}, &order));
  EXPECT_FALSE(TopologicalOrder(std::vector<int32_t>{0, 1, 2}, std::vector<int32_t>{1, 0}, &order));
  EXPECT_TRUE(TopologicalOrder(std::vector<int32_t>{0}, std::vector<int32_t>{}, &order));
  EXPECT_TRUE(order.empty());
}

}  // namespace
}  // namespace mmtwin

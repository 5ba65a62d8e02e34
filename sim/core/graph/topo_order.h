// SPDX-License-Identifier: Apache-2.0
// Topological order of a directed graph held as a CSR of out-edges, for the op-graph builder's hot path.
//
// TopologicalOrder gives the reverse of a depth-first search's finishing order: vertices are started in index
// order 0, 1, ..., and each vertex's out-edges are followed in their listed order. That is exactly the order
// boost::topological_sort gives for a boost::adjacency_list whose out-edges were added in the same order
// (tests/graph/topo_order_test.cc checks it against Boost on random graphs), so the op graphs keep the op
// order they had when Boost sorted them. Iterative (no recursion depth limit), O(V + E) time, O(V) memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mmtwin {

// `begin` has V + 1 entries; vertex u's out-edges go to targets[begin[u] .. begin[u + 1]), each in [0, V).
// Fills `order` (V vertices, every edge u -> v with u before v) and returns true; returns false when the graph
// has a cycle (`order` is then unspecified).
bool TopologicalOrder(std::span<const int32_t> begin, std::span<const int32_t> targets,
                      std::vector<int32_t>* order);

}  // namespace mmtwin

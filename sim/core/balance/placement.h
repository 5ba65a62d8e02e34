// SPDX-License-Identifier: Apache-2.0
// Node-wise rearrangement (OrchMLLM §5.2.2): which rank each post-balanced bin goes to.
//
// The post-balancing objective does not depend on which rank gets which bin, so the bins can be permuted to
// cut the all-to-all traffic that moves samples from where they were drawn (origin rank) to their bin's rank.
// Ranks r = 0..d-1 (d = bins.size()), node(r) = r / ranks_per_node (the last node may hold fewer ranks).
//
// Objective (minimized exactly by PlaceNodeWise): the largest number of bytes any rank RECEIVES from ranks on
// other nodes, max_r sum{bytes of items i : dest(i) = r, node(origin(i)) != node(r)}.
// Why receive side: a bin's inter-node receive volume depends only on the node it lands on,
// W[b][n] = bytes(b) - bytes of b's items drawn on node n, so the problem is a bottleneck assignment of bins
// to node slots (node n has as many slots as ranks), solved exactly in polynomial time: binary search over
// the distinct values of W for the least threshold T such that every bin can get a slot with W <= T (a
// bipartite b-matching). Bins with W <= T on every node ("universal" bins) take whatever slots are left, so
// only the other bins enter the matching, over their sparse edges (nodes they have data from) -> fast at 2560
// ranks. The paper's ILP (Alg. 3, CBC) bounds the bytes each rank SENDS off-node instead; that cost of a
// source rank depends on the whole set of bins its node receives (not separable per bin), so it is not a
// bottleneck assignment. We report that figure (max_rank_inter_node_sent_bytes) but do not optimize it. Ties
// and secondary choices (deterministic): among optimal node assignments, bins prefer the node they have the
// most bytes on (greedy, reduces total inter-node bytes); within a node, bins are matched to ranks maximizing
// the bytes that stay on their own rank (Hungarian, exact for <= 64 ranks per node, greedy beyond).
//
// Preconditions: every item index in bins is < origin_rank.size() == item_bytes.size(); origin ranks in [0,
// d); ranks_per_node >= 1; bytes >= 0.
//
//   auto bins = PostBalance(lengths, d, opts);
//   Placement p = PlaceNodeWise(bins, origin_rank, item_bytes, /*ranks_per_node=*/8);
//   int rank_of_first_bin = p.rank_of_bin[0];
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mmtwin {

struct Placement {
  std::vector<int> rank_of_bin;           // a permutation of 0..d-1: bin b goes to rank rank_of_bin[b]
  int64_t max_rank_inter_node_bytes = 0;  // the objective: max over ranks of bytes received from other nodes
  int64_t total_inter_node_bytes = 0;     // bytes whose origin node != destination node
  int64_t total_moved_bytes = 0;     // bytes whose destination rank != origin rank (the all-to-all volume)
  int64_t max_rank_moved_bytes = 0;  // max over ranks of max(bytes sent to, bytes received from other ranks)
  int64_t max_rank_inter_node_sent_bytes = 0;  // paper's eq. 5: max over ranks of bytes sent to other nodes
};

// Bin i -> rank i.
Placement PlaceIdentity(const std::vector<std::vector<uint32_t>>& bins, std::span<const int> origin_rank,
                        std::span<const int64_t> item_bytes, int ranks_per_node);
// Exact minimum of max_rank_inter_node_bytes over all permutations (see above).
Placement PlaceNodeWise(const std::vector<std::vector<uint32_t>>& bins, std::span<const int> origin_rank,
                        std::span<const int64_t> item_bytes, int ranks_per_node);
// Fills the traffic fields of a placement whose rank_of_bin is set.
void EvaluatePlacement(const std::vector<std::vector<uint32_t>>& bins, std::span<const int> origin_rank,
                       std::span<const int64_t> item_bytes, int ranks_per_node, Placement& p);

}  // namespace mmtwin

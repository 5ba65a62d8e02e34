// SPDX-License-Identifier: Apache-2.0
// Batch post-balancing (OrchMLLM §5.1 and Appendix A): after every DP rank has drawn its random mini-batch,
// split the union of the samples into exactly d new mini-batches ("bins") so that the largest per-bin cost is
// small.
//
// Contract:
// - lengths are tokens (>= 0) of one phase; items are identified by their index into `lengths`.
// - PostBalance returns exactly d bins (some may be empty); every item is in exactly one bin; bins hold item
//   indices. Same input -> same output (no randomness; ties broken by item index, then bin index).
// - d must be >= 1 (d <= 0 returns no bins).
// - Costs are in "token units": f(S) of one bin, see BinCost. lambda = beta/alpha is the weight of the
//   quadratic (attention) term per token^2, e.g. 1/24576 for a 7B model (veRL's 24576*s + s^2 over 24576).
//
// Algorithms (the one to use per phase depends on how the phase batches its data):
//   lpt        Alg. 1: sort by per-item cost l + lambda*l^2 descending, put each item in the lightest bin.
//              Cost f = sum l + lambda * sum l^2. Proven bound: max f <= (4/3 - 1/(3d)) OPT (Graham).
//              O(n log d); radix sort of the costs, a winner tree over the bins for integral costs.
//   kk         Karmarkar-Karp largest differencing, multiway (as veRL seqlen_balancing.py), same cost as lpt.
//              Bound: (4/3 - 1/(3d)) OPT (Michiels et al. 2007); usually closer to the lower bound than lpt.
//   padded     Alg. 2: cost f = count * max l (every sequence padded to the longest). Sort ascending,
//              binary-search the least bound B for which GetLeastBatches(B) (consecutive greedy packing)
//              needs <= d bins. This is EXACT (optimal): an exchange argument shows some optimal partition is
//              consecutive in sorted order (swapping a larger item of the bin with the smaller max into the
//              other bin raises neither max), and the greedy packing is optimal among consecutive partitions
//              (sub-intervals of feasible ones are feasible). lambda is not used (conv has the padded
//              quadratic term).
//   quadratic  Alg. "3rd": LPT by length whose comparator treats two bins whose sums differ by less than
//              a tolerance v as equal and then prefers the smaller sum of squares. That comparator is not a
//              strict order; we read it as: among the bins whose sum is < (least sum + v), the least sum of
//              squares (ties: smaller sum, then index). O(n log d) with lazy heaps. Cost f = sum l +
//              lambda*sum l^2. Default v (tolerance == 0): lambda * mean(l^2), the quadratic cost of an
//              average item (lambda = 0 gives plain LPT). Returns the better (by f) of this and lpt.
//   conv       Alg. "4th" (padded attention, conv-transformer encoders such as Whisper): cost f = sum l +
//              lambda * count * max(l)^2. Returns the best (by f) of: the paper's fill (descending,
//              consecutive bins while the padded size count x max <= the no-padding LPT objective, at most
//              d bins, the rest to the bin of least f); the optimal partition into consecutive runs of the
//              descending order (bisection on the bound + greedy fill, optimal per bound); lpt on
//              l + lambda*l^2. So conv is never worse than lpt on f.
//
//   PostBalanceOptions o{.algorithm = PostBalanceAlgorithm::kKk, .refine = true};
//   std::vector<std::vector<uint32_t>> bins = PostBalance(lengths, /*d=*/64, o);
//   double worst = 0;
//   for (const auto& b : bins) worst = std::max(worst, BinCost(lengths, b, o));
//   double ratio = worst / CostLowerBound(lengths, 64, o);
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/util/registry.h"
#include "core/util/status.h"

namespace mmtwin {

enum class PostBalanceAlgorithm { kLpt, kPadded, kQuadratic, kConv, kKk };

// "lpt", "padded", "quadratic", "conv", "kk"; unknown -> "unknown post-balance algorithm 'x'; valid values
// are: ...".
Result<PostBalanceAlgorithm> ParsePostBalanceAlgorithm(std::string_view name);
const char* PostBalanceAlgorithmName(PostBalanceAlgorithm a);
const char* PostBalanceAlgorithmDescription(PostBalanceAlgorithm a);  // one line
// Every algorithm, in the order of the enum.
std::vector<PostBalanceAlgorithm> AllPostBalanceAlgorithms();
// The same as a registry (core/util/registry.h): name, one-line description, no parameters, the enum value.
const PolicyRegistry<PostBalanceAlgorithm>& PostBalanceAlgorithms();

struct PostBalanceOptions {
  PostBalanceAlgorithm algorithm = PostBalanceAlgorithm::kLpt;
  double lambda = 0;     // beta/alpha: weight of the quadratic (attention) term per token^2
  double tolerance = 0;  // quadratic comparator's v in tokens (0 = default lambda * mean(l^2))
  // Local search after the algorithm (lpt, kk and quadratic, whose bin cost is a sum of item costs; ignored for
  // padded and conv): RefineBySwaps. Never makes the max bin cost worse.
  bool refine = false;
  // Every bin gets the same number of items, floor(n/d) or ceil(n/d) (RL and SFT trainers ask for equal-size
  // mini-batches): lpt fills the lightest bin that still has room; kk runs Karmarkar-Karp on states of one item
  // per bin (veRL's equal_size), the last group padded with zero-cost placeholders; refine then only swaps. Only
  // for lpt and kk (other algorithms ignore it).
  bool equal_size = false;
};

// Splits items into exactly d bins (see the contract above).
std::vector<std::vector<uint32_t>> PostBalance(std::span<const int64_t> lengths, int d,
                                               const PostBalanceOptions& o);

// Post-balancing that keeps each rank's own draw (mmtwin's option, for node-wise placement: issue 28): the bins
// of PostBalance(lengths, d, o) set the target T = their largest cost; every rank's draw (the items whose
// origin[i] is that rank) is trimmed to T, and only what is trimmed moves: additive costs (lpt, kk, quadratic)
// shed the smallest item that covers the excess, else their largest and repeat (few bytes out); padded and conv
// shed their longest items until the rest costs <= T. The trimmed draws seed the d bins, the heaviest draw
// first (ties: lower rank), as LPT takes its items, so bin k is not rank k's; the shed items, longest first,
// each go to the bin whose cost it raises least (ties: the lower bin), then refine as PostBalance (additive
// costs). equal_size is not applied. The largest bin may end above T (by at most the largest shed item for
// additive costs). Preconditions: origin.size() == lengths.size(), origin[i] in [0, d).
//   auto bins = PostBalanceKeepOwn(lengths, origin, 64, o);  // bins[k]: mostly one rank's own draw
std::vector<std::vector<uint32_t>> PostBalanceKeepOwn(std::span<const int64_t> lengths,
                                                      std::span<const int> origin, int d,
                                                      const PostBalanceOptions& o);

// Pairwise local search on additive costs (item i costs costs[i], a bin the sum): repeatedly take the heaviest
// bin H and, among the lightest bins, the first L with an improving exchange — one item moved from H to L, or an
// item of H swapped with a cheaper one of L — choosing the exchange that moves the amount closest to half the gap
// (S_H - S_L). Each exchange lowers S_H and leaves S_L below the old S_H, so the max never grows; it stops when
// the heaviest bin has no improving exchange with any of the 32 lightest bins, or after 4 * items exchanges.
// Karmarkar-Karp and LPT end about 1e-3 above the lower bound at 2,560 bins x 60 items; this closes most of that
// (reports/benchmarks.md). O(k log k) per exchange for k items per bin, plus O(log d) to re-order the bins.
// `swaps_only`: keep every bin's item count (no moves).
void RefineBySwaps(std::span<const double> costs, std::vector<std::vector<uint32_t>>& bins,
                   bool swaps_only = false);

// The algorithm's own objective f(S) of one bin (lpt/kk/quadratic: sum l + lambda*sum l^2; padded: count*max
// l; conv: sum l + lambda*count*max(l)^2). An empty bin costs 0.
double BinCost(std::span<const int64_t> lengths, std::span<const uint32_t> bin, const PostBalanceOptions& o);
// max over bins of BinCost.
double MaxBinCost(std::span<const int64_t> lengths, const std::vector<std::vector<uint32_t>>& bins,
                  const PostBalanceOptions& o);
// Cost of one item alone (l + lambda*l^2; padded: l).
double ItemCost(int64_t length, const PostBalanceOptions& o);
// max(sum of per-item cost / d, largest single-item cost): a lower bound on the optimal max bin cost (f is
// superadditive over items: count*max >= sum l and count*max^2 >= sum l^2).
double CostLowerBound(std::span<const int64_t> lengths, int d, const PostBalanceOptions& o);

}  // namespace mmtwin

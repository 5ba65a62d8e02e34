#include "core/balance/post_balance.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <queue>
#include <set>
#include <string>
#include <utility>

namespace mmtwin {
namespace {

struct AlgorithmInfo {
  PostBalanceAlgorithm algorithm;
  const char* name;
  const char* description;
};

// The registry of algorithms: name and one-line description as data.
constexpr AlgorithmInfo kAlgorithms[] = {
    {PostBalanceAlgorithm::kLpt, "lpt",
     "OrchMLLM Alg. 1: longest first into the lightest bin (sum of tokens, + lambda*sum of squares); <= 4/3 "
     "OPT"},
    {PostBalanceAlgorithm::kPadded, "padded",
     "OrchMLLM Alg. 2: padded batches (count x longest), binary search + consecutive packing; optimal"},
    {PostBalanceAlgorithm::kQuadratic, "quadratic",
     "OrchMLLM Alg. 3rd: LPT that prefers the smaller sum of squares among bins within a tolerance"},
    {PostBalanceAlgorithm::kConv, "conv",
     "OrchMLLM Alg. 4th: padded attention (sum + lambda*count*max^2), padded fill up to the LPT bound then "
     "LPT"},
    {PostBalanceAlgorithm::kKk, "kk",
     "Karmarkar-Karp largest differencing, multiway (as veRL seqlen_balancing); <= 4/3 OPT, usually "
     "near-optimal"},
};

const AlgorithmInfo& Info(PostBalanceAlgorithm a) {
  for (const auto& info : kAlgorithms)
    if (info.algorithm == a) return info;
  return kAlgorithms[0];
}

using Bins = std::vector<std::vector<uint32_t>>;

// Order of items by key descending, ties by index ascending. Keys are non-negative doubles; their IEEE bit
// patterns order like the values, so an LSD radix sort on (~bits) is exact and fast (skips constant digits).
// If `sorted` is given it receives the keys in that order (clamped at 0), saving random reads later.
std::vector<uint32_t> OrderDescending(std::span<const double> keys, std::vector<double>* sorted = nullptr) {
  const size_t n = keys.size();
  std::vector<uint64_t> k(n), k2(n);
  std::vector<uint32_t> idx(n), idx2(n);
  uint64_t all_or = 0, all_and = ~0ull;
  for (size_t i = 0; i < n; ++i) {
    double v = keys[i] > 0 ? keys[i] : 0.0;  // also maps -0.0 and NaN-free negatives to +0
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    k[i] = ~bits;
    idx[i] = static_cast<uint32_t>(i);
    all_or |= k[i];
    all_and &= k[i];
  }
  const uint64_t varying = all_or ^ all_and;
  constexpr int kBits = 11;
  constexpr uint64_t kMask = (1u << kBits) - 1;
  std::vector<size_t> count(kMask + 2);
  for (int shift = 0; shift < 64; shift += kBits) {
    if (((varying >> shift) & kMask) == 0) continue;
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < n; ++i) ++count[((k[i] >> shift) & kMask) + 1];
    for (size_t b = 0; b <= kMask; ++b) count[b + 1] += count[b];
    for (size_t i = 0; i < n; ++i) {
      const size_t pos = count[(k[i] >> shift) & kMask]++;
      k2[pos] = k[i];
      idx2[pos] = idx[i];
    }
    k.swap(k2);
    idx.swap(idx2);
  }
  if (sorted) {
    sorted->resize(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t bits = ~k[i];
      std::memcpy(&(*sorted)[i], &bits, sizeof bits);
    }
  }
  return idx;
}

std::vector<double> ItemCosts(std::span<const int64_t> lengths, const PostBalanceOptions& o) {
  std::vector<double> c(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) c[i] = ItemCost(lengths[i], o);
  return c;
}

// 4-ary min-heap of bins keyed by (load, bin index), entries stored inline (short dependency chains).
class BinHeap {
 public:
  explicit BinHeap(int d) : heap_(d) {
    for (int i = 0; i < d; ++i) heap_[i] = {0.0, i};  // all zero: index order is already a heap
  }
  int Top() const { return heap_[0].bin; }
  double TopLoad() const { return heap_[0].load; }
  // Sets the top bin's load (only increases) and restores the heap. Floyd's variant: move the hole down to a
  // leaf along the smallest children, then sift the entry up (usually a few steps: the raised load is large).
  void IncreaseTop(double new_load) {
    const Entry x{new_load, heap_[0].bin};
    const size_t n = heap_.size();
    size_t i = 0;
    while (true) {
      const size_t l = 4 * i + 1;
      if (l >= n) break;
      size_t best = l;
      if (l + 3 < n) {
        const size_t a = l + static_cast<size_t>(Less(heap_[l + 1], heap_[l]));
        const size_t b = l + 2 + static_cast<size_t>(Less(heap_[l + 3], heap_[l + 2]));
        best = Less(heap_[b], heap_[a]) ? b : a;
      } else {
        for (size_t c = l + 1; c < n; ++c)
          if (Less(heap_[c], heap_[best])) best = c;
      }
      heap_[i] = heap_[best];
      i = best;
    }
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!Less(x, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = x;
  }

 private:
  struct Entry {
    double load;
    int bin;
  };
  static bool Less(const Entry& a, const Entry& b) {
    return (a.load < b.load) | ((a.load == b.load) & (a.bin < b.bin));
  }
  std::vector<Entry> heap_;
};

// Alg. 1 on per-item costs: descending cost into the least-loaded bin.
// Same order as BinHeap, for integral loads: key = load << shift | bin, one integer compare per child.
class IntBinHeap {
 public:
  IntBinHeap(int d, int shift) : heap_(d), shift_(shift) {
    for (int i = 0; i < d; ++i) heap_[i] = static_cast<uint64_t>(i);
  }
  int Top() const { return static_cast<int>(heap_[0] & ((1ull << shift_) - 1)); }
  void AddToTop(uint64_t amount) {
    const uint64_t x = heap_[0] + (amount << shift_);
    const size_t n = heap_.size();
    size_t i = 0;
    while (true) {
      const size_t l = 4 * i + 1;
      if (l >= n) break;
      size_t best = l;
      if (l + 3 < n) {
        const size_t a = heap_[l + 1] < heap_[l] ? l + 1 : l;
        const size_t b = heap_[l + 3] < heap_[l + 2] ? l + 3 : l + 2;
        best = heap_[b] < heap_[a] ? b : a;
      } else {
        for (size_t c = l + 1; c < n; ++c)
          if (heap_[c] < heap_[best]) best = c;
      }
      heap_[i] = heap_[best];
      i = best;
    }
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (x >= heap_[parent]) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = x;
  }

 private:
  std::vector<uint64_t> heap_;
  int shift_;
};

Bins Lpt(std::span<const double> costs, int d) {
  std::vector<double> sorted;
  const std::vector<uint32_t> order = OrderDescending(costs, &sorted);
  const size_t n = order.size();
  std::vector<int> bin_at(n);
  std::vector<size_t> count(d, 0);
  // Integral costs with a small enough total use the integer-key heap (same choices, faster).
  int shift = 1;
  while ((1ll << shift) < d) ++shift;
  double total = 0;
  bool integral = true;
  for (double c : sorted) {
    total += c;
    integral = integral && c == std::floor(c);
  }
  if (integral && total < std::ldexp(1.0, 62 - shift)) {
    IntBinHeap heap(d, shift);
    for (size_t p = 0; p < n; ++p) {
      const int b = heap.Top();
      bin_at[p] = b;
      ++count[b];
      heap.AddToTop(static_cast<uint64_t>(sorted[p]));
    }
  } else {
    BinHeap heap(d);
    for (size_t p = 0; p < n; ++p) {
      const int b = heap.Top();
      bin_at[p] = b;
      ++count[b];
      heap.IncreaseTop(heap.TopLoad() + sorted[p]);
    }
  }
  Bins bins(d);
  for (int b = 0; b < d; ++b) bins[b].reserve(count[b]);
  for (size_t p = 0; p < n; ++p) bins[bin_at[p]].push_back(order[p]);
  return bins;
}

// Karmarkar-Karp largest differencing method for d-way partitioning (veRL seqlen_balancing.py semantics).
//
// A state is a partial solution: d subsets (sorted); merging two states pairs the largest subset of one with
// the smallest of the other. The state with the largest spread (max - min subset sum) is merged first.
// Implementation for n >> d: a state stores only its non-empty ("explicit") subsets in a min-heap; the others
// are implicit zeros. Merging iterates over the state with fewer explicit subsets (q) and pops the q smallest
// of the other, O(q log d), so merging singletons into full states is O(log d), not O(d). Item lists are
// linked lists.
Bins KarmarkarKarp(std::span<const double> costs, int d) {
  const size_t n = costs.size();
  Bins bins(d);
  if (n == 0) return bins;
  if (d == 1) {
    for (size_t i = 0; i < n; ++i) bins[0].push_back(static_cast<uint32_t>(i));
    return bins;
  }
  // Subset ids are item ids (a subset keeps the id of the first subset it was built from).
  std::vector<double> sum(costs.begin(), costs.end());
  std::vector<uint32_t> next(n, UINT32_MAX), tail(n);
  for (size_t i = 0; i < n; ++i) tail[i] = static_cast<uint32_t>(i);

  using Entry = std::pair<double, uint32_t>;  // (subset sum, subset id); min-heap with std::greater
  struct State {
    std::vector<Entry> heap;  // explicit subsets
    double max = 0;
  };
  // States are ordered by (spread desc, id asc). The n singleton states (id = item, spread = cost) come out
  // in the order of OrderDescending, so they stay in that array; only merged states (id >= n) use a priority
  // queue.
  const std::vector<uint32_t> singles = OrderDescending(costs);
  size_t next_single = 0;
  std::vector<State> states;  // merged states, id = n + position
  states.reserve(n);
  using Key = std::pair<double, int64_t>;  // (spread, -id): max-heap gives larger spread, then smaller id
  std::priority_queue<Key> pq;
  auto remaining = [&] { return (singles.size() - next_single) + pq.size(); };
  auto pop = [&]() -> State {
    const bool take_single =
        next_single < singles.size() && (pq.empty() || sum[singles[next_single]] > pq.top().first ||
                                         (sum[singles[next_single]] == pq.top().first &&
                                          static_cast<int64_t>(singles[next_single]) < -pq.top().second));
    if (take_single) {
      const uint32_t i = singles[next_single++];
      State s;
      s.heap.push_back({sum[i], i});
      s.max = sum[i];
      return s;
    }
    const int64_t id = -pq.top().second;
    pq.pop();
    return std::move(states[id - static_cast<int64_t>(n)]);
  };
  const auto heap_cmp = std::greater<Entry>();
  const size_t k = static_cast<size_t>(d);
  std::vector<Entry> b_sorted, popped;
  while (remaining() > 1) {
    State a = pop();
    State b = pop();
    if (a.heap.size() < b.heap.size()) std::swap(a, b);
    // B's explicit subsets, largest first (ties: id ascending).
    b_sorted = std::move(b.heap);
    std::sort(b_sorted.begin(), b_sorted.end(), [](const Entry& x, const Entry& y) {
      return x.first > y.first || (x.first == y.first && x.second < y.second);
    });
    const size_t q = b_sorted.size();
    const size_t zeros = k - a.heap.size();
    // j-th largest of B pairs with the j-th smallest of A (implicit zeros first).
    const size_t take = q > zeros ? q - zeros : 0;
    popped.clear();
    for (size_t j = 0; j < take; ++j) {
      std::pop_heap(a.heap.begin(), a.heap.end(), heap_cmp);
      popped.push_back(a.heap.back());
      a.heap.pop_back();
    }
    double mx = a.max;
    for (size_t j = 0; j < q; ++j) {
      Entry e = b_sorted[j];
      if (j >= zeros) {
        const Entry& s = popped[j - zeros];
        // Concatenate the item lists: s's list then e's list, keeping s's id.
        next[tail[s.second]] = e.second;
        tail[s.second] = tail[e.second];
        e = {s.first + e.first, s.second};
      }
      mx = std::max(mx, e.first);
      a.heap.push_back(e);
      std::push_heap(a.heap.begin(), a.heap.end(), heap_cmp);
    }
    a.max = mx;
    const double mn = a.heap.size() < k ? 0.0 : a.heap.front().first;
    const int64_t id = static_cast<int64_t>(n + states.size());
    states.push_back(std::move(a));
    pq.push({mx - mn, -id});
  }
  State last = pop();
  std::vector<Entry> subsets = std::move(last.heap);
  std::sort(subsets.begin(), subsets.end(), [](const Entry& x, const Entry& y) {
    return x.first > y.first || (x.first == y.first && x.second < y.second);
  });
  for (size_t b = 0; b < subsets.size(); ++b) {
    for (uint32_t i = subsets[b].second; i != UINT32_MAX; i = next[i]) bins[b].push_back(i);
    std::sort(bins[b].begin(), bins[b].end());
  }
  return bins;
}

// Alg. 2: padded cost count * max. Exact (see the header).
Bins Padded(std::span<const int64_t> lengths, int d) {
  const size_t n = lengths.size();
  Bins bins(d);
  if (n == 0) return bins;
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return lengths[a] < lengths[b] || (lengths[a] == lengths[b] && a < b);
  });
  auto len = [&](size_t pos) { return static_cast<__int128>(std::max<int64_t>(0, lengths[order[pos]])); };
  // Number of consecutive groups GetLeastBatches(bound) makes.
  auto groups = [&](__int128 bound, int limit) {
    int g = 1;
    __int128 count = 0;
    for (size_t p = 0; p < n; ++p) {
      if (count > 0 && (count + 1) * len(p) > bound) {
        if (++g > limit) return g;
        count = 0;
      }
      ++count;
    }
    return g;
  };
  const __int128 max_l = len(n - 1);
  const __int128 per_bin = static_cast<__int128>((n + d - 1) / d);
  __int128 lo = max_l, hi = max_l * per_bin;  // hi: ceil(n/d) items per bin is always feasible
  while (lo < hi) {
    const __int128 mid = lo + (hi - lo) / 2;
    if (groups(mid, d) <= d)
      hi = mid;
    else
      lo = mid + 1;
  }
  int b = 0;
  __int128 count = 0;
  for (size_t p = 0; p < n; ++p) {
    if (count > 0 && (count + 1) * len(p) > lo) {
      ++b;
      count = 0;
    }
    bins[b].push_back(order[p]);
    ++count;
  }
  return bins;
}

// Alg. "3rd": tolerance comparator LPT.
Bins Quadratic(std::span<const int64_t> lengths, int d, double lambda, double tolerance) {
  const size_t n = lengths.size();
  Bins bins(d);
  if (n == 0) return bins;
  std::vector<double> keys(n);
  double mean_sq = 0;
  for (size_t i = 0; i < n; ++i) {
    keys[i] = static_cast<double>(std::max<int64_t>(0, lengths[i]));
    mean_sq += keys[i] * keys[i];
  }
  mean_sq /= static_cast<double>(n);
  const double v = tolerance > 0 ? tolerance : lambda * mean_sq;
  std::vector<double> sq(d, 0.0);
  std::set<std::pair<double, int>> by_sum;  // (sum of lengths, bin)
  for (int b = 0; b < d; ++b) by_sum.insert({0.0, b});
  for (uint32_t i : OrderDescending(keys)) {
    auto best = by_sum.begin();
    const double limit = best->first + v;
    for (auto it = std::next(best); it != by_sum.end() && it->first < limit; ++it)
      if (sq[it->second] < sq[best->second]) best = it;
    const auto [s, b] = *best;
    by_sum.erase(best);
    by_sum.insert({s + keys[i], b});
    sq[b] += keys[i] * keys[i];
    bins[b].push_back(i);
  }
  return bins;
}

// Alg. "4th": padded fill up to the LPT bound, then least-cost bin.
Bins Conv(std::span<const int64_t> lengths, int d, double lambda, double bound) {
  const size_t n = lengths.size();
  Bins bins(d);
  if (n == 0) return bins;
  std::vector<double> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = static_cast<double>(std::max<int64_t>(0, lengths[i]));
  const std::vector<uint32_t> order = OrderDescending(keys);
  std::vector<double> sum(d, 0.0), mx(d, 0.0);
  std::vector<int64_t> cnt(d, 0);
  auto f = [&](int b) { return sum[b] + lambda * static_cast<double>(cnt[b]) * mx[b] * mx[b]; };
  size_t p = 0;
  int b = 0;
  for (; p < n; ++p) {
    const double x = keys[order[p]];
    if (cnt[b] > 0) {
      const double with = sum[b] + x + lambda * static_cast<double>(cnt[b] + 1) * mx[b] * mx[b];
      if (with > bound) {
        if (b + 1 >= d) break;
        ++b;
      }
    }
    if (cnt[b] == 0) mx[b] = x;
    sum[b] += x;
    ++cnt[b];
    bins[b].push_back(order[p]);
  }
  if (p < n) {
    std::set<std::pair<double, int>> by_cost;
    for (int i = 0; i < d; ++i) by_cost.insert({f(i), i});
    for (; p < n; ++p) {
      const double x = keys[order[p]];
      auto top = by_cost.begin();
      const int t = top->second;
      by_cost.erase(top);
      if (cnt[t] == 0) mx[t] = x;
      sum[t] += x;
      ++cnt[t];
      bins[t].push_back(order[p]);
      by_cost.insert({f(t), t});
    }
  }
  return bins;
}

}  // namespace

Result<PostBalanceAlgorithm> ParsePostBalanceAlgorithm(std::string_view name) {
  for (const auto& info : kAlgorithms)
    if (name == info.name) return info.algorithm;
  std::string valid;
  for (const auto& info : kAlgorithms) {
    if (!valid.empty()) valid += ", ";
    valid += info.name;
  }
  return Error("unknown post-balance algorithm '" + std::string(name) + "'; valid values are: " + valid);
}

const char* PostBalanceAlgorithmName(PostBalanceAlgorithm a) { return Info(a).name; }
const char* PostBalanceAlgorithmDescription(PostBalanceAlgorithm a) { return Info(a).description; }

std::vector<PostBalanceAlgorithm> AllPostBalanceAlgorithms() {
  std::vector<PostBalanceAlgorithm> all;
  for (const auto& info : kAlgorithms) all.push_back(info.algorithm);
  return all;
}

double ItemCost(int64_t length, const PostBalanceOptions& o) {
  const double l = static_cast<double>(std::max<int64_t>(0, length));
  if (o.algorithm == PostBalanceAlgorithm::kPadded) return l;
  return l + o.lambda * l * l;
}

double BinCost(std::span<const int64_t> lengths, std::span<const uint32_t> bin, const PostBalanceOptions& o) {
  double sum = 0, sq = 0, mx = 0;
  for (uint32_t i : bin) {
    const double l = static_cast<double>(std::max<int64_t>(0, lengths[i]));
    sum += l;
    sq += l * l;
    mx = std::max(mx, l);
  }
  const double count = static_cast<double>(bin.size());
  switch (o.algorithm) {
    case PostBalanceAlgorithm::kPadded:
      return count * mx;
    case PostBalanceAlgorithm::kConv:
      return sum + o.lambda * count * mx * mx;
    case PostBalanceAlgorithm::kLpt:
    case PostBalanceAlgorithm::kKk:
    case PostBalanceAlgorithm::kQuadratic:
      break;
  }
  return sum + o.lambda * sq;
}

double MaxBinCost(std::span<const int64_t> lengths, const std::vector<std::vector<uint32_t>>& bins,
                  const PostBalanceOptions& o) {
  double worst = 0;
  for (const auto& b : bins) worst = std::max(worst, BinCost(lengths, b, o));
  return worst;
}

double CostLowerBound(std::span<const int64_t> lengths, int d, const PostBalanceOptions& o) {
  if (d <= 0) return 0;
  double total = 0, largest = 0;
  for (int64_t l : lengths) {
    const double c = ItemCost(l, o);
    total += c;
    largest = std::max(largest, c);
  }
  return std::max(total / d, largest);
}

std::vector<std::vector<uint32_t>> PostBalance(std::span<const int64_t> lengths, int d,
                                               const PostBalanceOptions& o) {
  if (d <= 0) return {};
  switch (o.algorithm) {
    case PostBalanceAlgorithm::kLpt:
      return Lpt(ItemCosts(lengths, o), d);
    case PostBalanceAlgorithm::kKk:
      return KarmarkarKarp(ItemCosts(lengths, o), d);
    case PostBalanceAlgorithm::kPadded:
      return Padded(lengths, d);
    case PostBalanceAlgorithm::kQuadratic: {
      Bins q = Quadratic(lengths, d, o.lambda, o.tolerance);
      Bins l = Lpt(ItemCosts(lengths, o), d);
      return MaxBinCost(lengths, l, o) < MaxBinCost(lengths, q, o) ? l : q;
    }
    case PostBalanceAlgorithm::kConv: {
      PostBalanceOptions lpt_o{PostBalanceAlgorithm::kLpt, o.lambda, 0};
      Bins l = Lpt(ItemCosts(lengths, lpt_o), d);
      Bins c = Conv(lengths, d, o.lambda, MaxBinCost(lengths, l, o));
      return MaxBinCost(lengths, l, o) < MaxBinCost(lengths, c, o) ? l : c;
    }
  }
  return {};
}

}  // namespace mmtwin

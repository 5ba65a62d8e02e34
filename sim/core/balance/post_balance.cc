// SPDX-License-Identifier: Apache-2.0
#include "core/balance/post_balance.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <queue>
#include <set>
#include <string>
#include <tuple>
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

// Buffers of OrderDescending (reusable across calls).
struct RadixBuffers {
  std::vector<uint64_t> k, k2;
  std::vector<uint32_t> k32, k32b;
  std::vector<uint32_t> idx, idx2;
  std::vector<size_t> count;
};

// LSD radix sort of the n keys k (unsigned, ascending; 11-bit digits, constant digits skipped), carrying idx
// along; k2, idx2 and count are scratch. Stable, so equal keys keep idx's order.
template <class Key>
void RadixAscending(size_t n, std::vector<Key>& k, std::vector<Key>& k2, std::vector<uint32_t>& idx,
                    std::vector<uint32_t>& idx2, std::vector<size_t>& count) {
  constexpr int kBits = 11;
  constexpr Key kMask = (Key{1} << kBits) - 1;
  count.resize(static_cast<size_t>(kMask) + 2);
  k2.resize(n);
  idx2.resize(n);
  Key all_or = 0, all_and = ~Key{0};
  for (size_t i = 0; i < n; ++i) {
    all_or |= k[i];
    all_and &= k[i];
  }
  const Key varying = all_or ^ all_and;
  for (int shift = 0; shift < static_cast<int>(8 * sizeof(Key)); shift += kBits) {
    if (((varying >> shift) & kMask) == 0) continue;
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < n; ++i) ++count[((k[i] >> shift) & kMask) + 1];
    for (size_t d = 0; d <= kMask; ++d) count[d + 1] += count[d];
    for (size_t i = 0; i < n; ++i) {
      const size_t pos = count[(k[i] >> shift) & kMask]++;
      k2[pos] = k[i];
      idx2[pos] = idx[i];
    }
    k.swap(k2);
    idx.swap(idx2);
  }
}

// Order of items by key descending, ties by index ascending, into b.idx. Keys are non-negative doubles; their
// IEEE bit patterns order like the values, so an LSD radix sort on (~bits) is exact and fast (skips constant
// digits). If `sorted` is given it receives the keys in that order (clamped at 0), saving random reads later.
// Keys that are all integers below 2^32 (token costs) sort as 32-bit keys: half the bytes, fewer digits, the
// same order (both are stable sorts by value descending from index order).
void OrderDescendingInto(std::span<const double> keys, RadixBuffers& b, std::vector<double>* sorted) {
  const size_t n = keys.size();
  bool small_ints = true;
  for (size_t i = 0; i < n; ++i) {
    const double v = keys[i] > 0 ? keys[i] : 0.0;
    small_ints &= v == std::floor(v) && v <= 4294967295.0;
  }
  b.idx.resize(n);
  for (size_t i = 0; i < n; ++i) b.idx[i] = static_cast<uint32_t>(i);
  if (small_ints) {
    b.k32.resize(n);
    for (size_t i = 0; i < n; ++i) b.k32[i] = ~static_cast<uint32_t>(keys[i] > 0 ? keys[i] : 0.0);
    RadixAscending(n, b.k32, b.k32b, b.idx, b.idx2, b.count);
    if (sorted) {
      sorted->resize(n);
      for (size_t i = 0; i < n; ++i) (*sorted)[i] = static_cast<double>(~b.k32[i]);
    }
    return;
  }
  b.k.resize(n);
  for (size_t i = 0; i < n; ++i) {
    double v = keys[i] > 0 ? keys[i] : 0.0;  // also maps -0.0 and NaN-free negatives to +0
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    b.k[i] = ~bits;
  }
  RadixAscending(n, b.k, b.k2, b.idx, b.idx2, b.count);
  if (sorted) {
    sorted->resize(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t bits = ~b.k[i];
      std::memcpy(&(*sorted)[i], &bits, sizeof bits);
    }
  }
}

std::vector<uint32_t> OrderDescending(std::span<const double> keys, std::vector<double>* sorted = nullptr) {
  RadixBuffers b;
  OrderDescendingInto(keys, b, sorted);
  return std::move(b.idx);
}

std::vector<double> ItemCosts(std::span<const int64_t> lengths, const PostBalanceOptions& o) {
  std::vector<double> c(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) c[i] = ItemCost(lengths[i], o);
  return c;
}

// 4-ary min-heap on a vector (Less of the key traits).
template <class K>
struct MinHeap4 {
  using Key = typename K::Key;
  // Puts x into the root's place (the root is dropped) and restores the heap, n = h.size(). Floyd's variant: the
  // hole goes down to a leaf along the least children, then x sifts up (new keys are usually large).
  static void ReplaceTop(Key* h, size_t n, Key x) {
    size_t i = 0;
    while (true) {
      const size_t l = 4 * i + 1;
      if (l >= n) break;
      size_t best = l;
      if (l + 3 < n) {
        const size_t a = l + static_cast<size_t>(K::Less(h[l + 1], h[l]));
        const size_t b = l + 2 + static_cast<size_t>(K::Less(h[l + 3], h[l + 2]));
        best = K::Less(h[b], h[a]) ? b : a;
      } else {
        for (size_t c = l + 1; c < n; ++c)
          if (K::Less(h[c], h[best])) best = c;
      }
      h[i] = h[best];
      i = best;
    }
    SiftUp(h, i, x);
  }
  static void SiftUp(Key* h, size_t i, Key x) {
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!K::Less(x, h[parent])) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = x;
  }
  static void Push(std::vector<Key>& h, Key x) {
    h.push_back(x);
    SiftUp(h.data(), h.size() - 1, x);
  }
  static Key Pop(std::vector<Key>& h) {
    const Key top = h[0];
    const Key last = h.back();
    h.pop_back();
    if (!h.empty()) ReplaceTop(h.data(), h.size(), last);
    return top;
  }
};

// Bin keys (load, bin index), least first.
struct BinKeys {
  struct Key {
    double load;
    int bin;
  };
  static bool Less(const Key& a, const Key& b) {
    return (a.load < b.load) | ((a.load == b.load) & (a.bin < b.bin));
  }
};

// 4-ary min-heap of bins keyed by (load, bin index), entries stored inline (short dependency chains).
class BinHeap {
 public:
  explicit BinHeap(int d) : heap_(d) {
    for (int i = 0; i < d; ++i) heap_[i] = {0.0, i};  // all zero: index order is already a heap
  }
  int Top() const { return heap_[0].bin; }
  double TopLoad() const { return heap_[0].load; }
  // Sets the top bin's load (only increases) and restores the heap (MinHeap4::ReplaceTop).
  void IncreaseTop(double new_load) {
    MinHeap4<BinKeys>::ReplaceTop(heap_.data(), heap_.size(), {new_load, heap_[0].bin});
  }

 private:
  std::vector<BinKeys::Key> heap_;
};

// Alg. 1 on per-item costs: descending cost into the least-loaded bin.
// Same order as BinHeap, for integral loads: key = load << shift | bin (unique keys). A winner tree (complete
// binary tree over the bins, each node holding the least key below it): replacing the minimum replays the
// matches on its leaf-to-root path, whose sibling loads do not depend on the comparisons (short dependency
// chains, unlike a heap's sift-down). About 2.5x faster than a radix heap at 2560 bins.
class WinnerTree {
 public:
  explicit WinnerTree(int d) {
    while (leaves_ < static_cast<size_t>(d)) leaves_ <<= 1;
    tree_.assign(2 * leaves_, UINT64_MAX);
    for (int i = 0; i < d; ++i) tree_[leaves_ + i] = static_cast<uint64_t>(i);
    for (size_t i = leaves_ - 1; i >= 1; --i) tree_[i] = std::min(tree_[2 * i], tree_[2 * i + 1]);
  }
  uint64_t Min() const { return tree_[1]; }
  // Sets the key of a bin (leaf) and replays its path.
  void Set(int bin, uint64_t key) {
    size_t p = leaves_ + static_cast<size_t>(bin);
    tree_[p] = key;
    while (p > 1) {
      key = std::min(key, tree_[p ^ 1]);
      p >>= 1;
      tree_[p] = key;
    }
  }

 private:
  size_t leaves_ = 1;
  std::vector<uint64_t> tree_;
};

Bins Lpt(std::span<const double> costs, int d) {
  std::vector<double> sorted;
  const std::vector<uint32_t> order = OrderDescending(costs, &sorted);
  const size_t n = order.size();
  std::vector<int> bin_at(n);
  std::vector<size_t> count(d, 0);
  int shift = 1;
  while ((1ll << shift) < d) ++shift;
  double total = 0;
  bool integral = true;
  for (double c : sorted) {
    total += c;
    integral = integral && c == std::floor(c);
  }
  // Integral costs with a small enough total use integer keys in a winner tree (same choices as BinHeap).
  const bool int_keys = integral && total < std::ldexp(1.0, 62 - shift);
  if (int_keys) {
    WinnerTree tree(d);
    const uint64_t mask = (1ull << shift) - 1;
    for (size_t p = 0; p < n; ++p) {
      const uint64_t key = tree.Min();
      const int b = static_cast<int>(key & mask);
      bin_at[p] = b;
      ++count[b];
      tree.Set(b, key + (static_cast<uint64_t>(sorted[p]) << shift));
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

// Subset keys of Karmarkar-Karp, ordered by (sum, id). Integral sums (the usual token costs) pack into one
// uint64, sum << shift | id (one compare, 8 bytes); other costs use a (sum, id) pair. Both give the same order.
struct KkIntKeys {
  using Key = uint64_t;
  int shift = 0;
  uint64_t mask = 0;
  Key Make(double sum, uint32_t id) const { return (static_cast<uint64_t>(sum) << shift) | id; }
  // s's id with the sum of both.
  Key Add(Key s, Key e) const { return s + (e & ~mask); }
  double Sum(Key k) const { return static_cast<double>(k >> shift); }
  uint32_t Id(Key k) const { return static_cast<uint32_t>(k & mask); }
  static bool Less(Key a, Key b) { return a < b; }
  // Sum descending, then id ascending: flipping the id bits turns that into one descending compare.
  bool Desc(Key a, Key b) const { return (a ^ mask) > (b ^ mask); }
  Key None() const { return ~uint64_t{0}; }  // above every key (sums are below 2^(63 - shift))
};
struct KkPairKeys {
  struct Key {
    double sum;
    uint32_t id;
  };
  Key Make(double sum, uint32_t id) const { return {sum, id}; }
  Key Add(Key s, Key e) const { return {s.sum + e.sum, s.id}; }
  double Sum(Key k) const { return k.sum; }
  uint32_t Id(Key k) const { return k.id; }
  static bool Less(const Key& a, const Key& b) { return a.sum < b.sum || (a.sum == b.sum && a.id < b.id); }
  // Sum descending, then id ascending.
  bool Desc(const Key& a, const Key& b) const { return a.sum > b.sum || (a.sum == b.sum && a.id < b.id); }
  Key None() const { return {std::numeric_limits<double>::infinity(), ~uint32_t{0}}; }  // above every key
};

// A merged state in the queue of Karmarkar-Karp.
struct KkQueued {
  double spread;
  int64_t id;
  uint32_t slot;
};
struct KkQueueOrder {  // "less" = comes out first: larger spread, then smaller id
  using Key = KkQueued;
  static bool Less(const KkQueued& a, const KkQueued& b) {
    return a.spread > b.spread || (a.spread == b.spread && a.id < b.id);
  }
};

// Per-thread buffers of KarmarkarKarp, kept between calls of up to kKkKeepItems items: the policies call it once
// per step on the same sizes, and fresh large buffers cost page faults (the allocator returns them to the OS).
struct KkBuffers {
  RadixBuffers radix;
  std::vector<double> single_cost;
  std::vector<uint32_t> parent;
  std::vector<int> bin_of_root, bin_of;
  std::vector<uint32_t> leaf_of;  // leaf of a subset id in its full state's winner tree
};
constexpr size_t kKkKeepItems = size_t{1} << 16;

// Karmarkar-Karp largest differencing method for d-way partitioning (veRL seqlen_balancing.py semantics).
//
// A state is a partial solution: d subsets (sorted); merging two states pairs the largest subset of one with
// the smallest of the other. The state with the largest spread (max - min subset sum) is merged first (ties:
// the older state).
// Implementation for n >> d: a state stores only its non-empty ("explicit") subsets in a min-heap; the others
// are implicit zeros. Merging iterates over the state with fewer explicit subsets (q) and pops the q smallest
// of the other, O(q log d), so merging singletons into full states is O(log d), not O(d). A state that has all
// d subsets ("full"; it stays full) moves from its 4-ary heap to a winner tree over d leaves: the subsets of a
// full state only change in place (each keeps its id, leaf_of[id]), so replacing the least is one replay of a
// leaf-to-root path whose sibling reads do not depend on the comparisons. Item lists are a union-find over
// item ids. Subset heaps and trees are reused through a free list (no allocation per merge once warm); the
// queue of merged states is a small 4-ary heap of (spread, id, slot).
// KkSolver<K>(keys, singles, single_cost, d, buf).Solve(): `singles` the items in OrderDescending's order,
// `single_cost` their costs (clamped at 0) in that order; one solver per call.
template <class K>
class KkSolver {
 public:
  KkSolver(const K& keys, std::span<const uint32_t> singles, std::span<const double> single_cost, int d,
           KkBuffers& buf);
  Bins Solve();

 private:
  using Key = typename K::Key;
  using Heap = MinHeap4<K>;
  struct State {
    std::vector<Key> heap;  // explicit subsets, while fewer than d
    std::vector<Key> tree;  // full: winner tree, leaves at [leaves, leaves + d), the root at 1
    bool full = false;
    double max = 0;
  };

  // Sets a leaf of a winner tree and replays its path to the root.
  void TreeSet(Key* t, size_t leaf, Key x) const {
    size_t p = leaves_ + leaf;
    t[p] = x;
    while (p > 1) {
      const Key sib = t[p ^ 1];
      x = K::Less(sib, x) ? sib : x;
      p >>= 1;
      t[p] = x;
    }
  }
  void MakeFull(State& st);
  size_t SizeOf(const State& st) const { return st.full ? k_ : st.heap.size(); }
  size_t Remaining() const { return (n_ - next_single_) + pq_.size(); }
  bool Pop(uint32_t* item, double* cost, uint32_t* slot);
  void PushState(uint32_t slot);
  uint32_t NewSlot();
  // The merges: two singletons; a state and a singleton; two states.
  void MergeSingles(uint32_t ia, double ca, uint32_t ib, double cb);
  void MergeSingle(uint32_t slot, uint32_t y, double cost);
  void MergeStates(uint32_t sa, uint32_t sb);
  // The last state's subsets, largest first, as bins (the union-find resolved).
  Bins Assign();

  const K& keys_;
  const std::span<const uint32_t> singles_;
  const std::span<const double> single_cost_;
  const int d_;
  KkBuffers& buf_;
  const size_t n_, k_;
  size_t leaves_ = 1;
  const Key none_;
  // Subset ids are item ids: a subset keeps the id of one of its items; when subset e is added to subset s,
  // parent[e] = s (union-find, resolved once at the end).
  std::vector<uint32_t>& parent_;
  std::vector<uint32_t>& leaf_of_;
  // States are ordered by (spread desc, id asc). The n singleton states (id = item, spread = cost) come out in
  // the order of OrderDescending, so they stay in that array; only merged states (id >= n, in creation order)
  // use the queue. A popped singleton is not materialized as a State unless two singletons meet.
  size_t next_single_ = 0;
  std::vector<State> slots_;          // merged states alive or free
  std::vector<uint32_t> free_slots_;  // slots whose heap can be reused
  std::vector<KkQueued> pq_;
  int64_t next_id_;
  std::vector<Key> b_sorted_, popped_;  // MergeStates' scratch
};

template <class K>
KkSolver<K>::KkSolver(const K& keys, std::span<const uint32_t> singles, std::span<const double> single_cost,
                      int d, KkBuffers& buf)
    : keys_(keys),
      singles_(singles),
      single_cost_(single_cost),
      d_(d),
      buf_(buf),
      n_(singles.size()),
      k_(static_cast<size_t>(d)),
      none_(keys.None()),
      parent_(buf.parent),
      leaf_of_(buf.leaf_of),
      next_id_(static_cast<int64_t>(n_)) {
  parent_.resize(n_);
  for (size_t i = 0; i < n_; ++i) parent_[i] = static_cast<uint32_t>(i);
  while (leaves_ < k_) leaves_ <<= 1;
  leaf_of_.resize(n_);
}

// A state whose heap reached d subsets becomes full: its subsets become leaves in heap order.
template <class K>
void KkSolver<K>::MakeFull(State& st) {
  st.tree.assign(2 * leaves_, none_);
  for (size_t i = 0; i < k_; ++i) {
    st.tree[leaves_ + i] = st.heap[i];
    leaf_of_[keys_.Id(st.heap[i])] = static_cast<uint32_t>(i);
  }
  for (size_t p = leaves_ - 1; p >= 1; --p)
    st.tree[p] = K::Less(st.tree[2 * p + 1], st.tree[2 * p]) ? st.tree[2 * p + 1] : st.tree[2 * p];
  st.heap.clear();
  st.full = true;
}

// Pops the next state: true for a singleton (item *item, cost *cost), false for a merged state (*slot).
template <class K>
bool KkSolver<K>::Pop(uint32_t* item, double* cost, uint32_t* slot) {
  const bool take_single = next_single_ < n_ && (pq_.empty() || single_cost_[next_single_] > pq_[0].spread ||
                                                 (single_cost_[next_single_] == pq_[0].spread &&
                                                  static_cast<int64_t>(singles_[next_single_]) < pq_[0].id));
  if (take_single) {
    *cost = single_cost_[next_single_];
    *item = singles_[next_single_++];
    return true;
  }
  *slot = MinHeap4<KkQueueOrder>::Pop(pq_).slot;
  return false;
}

template <class K>
void KkSolver<K>::PushState(uint32_t slot) {
  const State& st = slots_[slot];
  const double mn = st.full ? keys_.Sum(st.tree[1]) : st.heap.size() < k_ ? 0.0 : keys_.Sum(st.heap[0]);
  MinHeap4<KkQueueOrder>::Push(pq_, {st.max - mn, next_id_++, slot});
}

template <class K>
uint32_t KkSolver<K>::NewSlot() {
  if (!free_slots_.empty()) {
    const uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    slots_[s].heap.clear();
    slots_[s].full = false;
    return s;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

// {x} and {y} (d >= 2): two subsets.
template <class K>
void KkSolver<K>::MergeSingles(uint32_t ia, double ca, uint32_t ib, double cb) {
  const uint32_t s = NewSlot();
  State& st = slots_[s];
  Heap::Push(st.heap, keys_.Make(ca, ia));
  Heap::Push(st.heap, keys_.Make(cb, ib));
  st.max = std::max(ca, cb);
  if (k_ == 2) MakeFull(st);
  PushState(s);
}

// A state and a singleton {y}: y joins the smallest subset if the state is full.
template <class K>
void KkSolver<K>::MergeSingle(uint32_t slot, uint32_t y, double cost) {
  State& a = slots_[slot];
  Key e = keys_.Make(cost, y);
  if (a.full) {
    const Key top = a.tree[1];
    parent_[y] = keys_.Id(top);
    e = keys_.Add(top, e);
    TreeSet(a.tree.data(), leaf_of_[keys_.Id(top)], e);
  } else {
    Heap::Push(a.heap, e);
    if (a.heap.size() == k_) MakeFull(a);
  }
  a.max = std::max(a.max, keys_.Sum(e));
  PushState(slot);
}

// Two states: iterates over the one with fewer explicit subsets (B, q of them), pairing B's j-th largest with
// A's j-th smallest.
template <class K>
void KkSolver<K>::MergeStates(uint32_t sa, uint32_t sb) {
  if (SizeOf(slots_[sa]) < SizeOf(slots_[sb])) std::swap(sa, sb);
  State& a = slots_[sa];
  State& b = slots_[sb];
  // B's explicit subsets, largest first (ties: id ascending).
  if (b.full) {
    b_sorted_.assign(b.tree.begin() + static_cast<std::ptrdiff_t>(leaves_),
                     b.tree.begin() + static_cast<std::ptrdiff_t>(leaves_ + k_));
  } else {
    b_sorted_.swap(b.heap);
  }
  free_slots_.push_back(sb);
  std::sort(b_sorted_.begin(), b_sorted_.end(), [&](const Key& x, const Key& y) { return keys_.Desc(x, y); });
  const size_t q = b_sorted_.size();
  double mx = a.max;
  popped_.clear();
  if (a.full) {  // B's j-th largest joins A's j-th smallest; every subset keeps A's id and leaf
    for (size_t j = 0; j < q; ++j) {
      const Key s = a.tree[1];
      popped_.push_back(s);
      TreeSet(a.tree.data(), leaf_of_[keys_.Id(s)], none_);
    }
    for (size_t j = 0; j < q; ++j) {
      const Key s = popped_[j];
      parent_[keys_.Id(b_sorted_[j])] = keys_.Id(s);
      const Key e = keys_.Add(s, b_sorted_[j]);
      mx = std::max(mx, keys_.Sum(e));
      TreeSet(a.tree.data(), leaf_of_[keys_.Id(s)], e);
    }
    a.max = mx;
    PushState(sa);
    return;
  }
  const size_t zeros = k_ - a.heap.size();
  // j-th largest of B pairs with the j-th smallest of A (implicit zeros first).
  const size_t take = q > zeros ? q - zeros : 0;
  for (size_t j = 0; j < take; ++j) popped_.push_back(Heap::Pop(a.heap));
  for (size_t j = 0; j < q; ++j) {
    Key e = b_sorted_[j];
    if (j >= zeros) {
      const Key s = popped_[j - zeros];
      parent_[keys_.Id(e)] = keys_.Id(s);
      e = keys_.Add(s, e);
    }
    mx = std::max(mx, keys_.Sum(e));
    Heap::Push(a.heap, e);
  }
  if (a.heap.size() == k_) MakeFull(a);
  a.max = mx;
  PushState(sa);
}

template <class K>
Bins KkSolver<K>::Assign() {
  uint32_t last_item = 0, last_slot = 0;
  double last_cost = 0;
  std::vector<Key> subsets;
  if (Pop(&last_item, &last_cost, &last_slot))
    subsets.push_back(keys_.Make(last_cost, last_item));
  else if (slots_[last_slot].full)
    subsets.assign(slots_[last_slot].tree.begin() + static_cast<std::ptrdiff_t>(leaves_),
                   slots_[last_slot].tree.begin() + static_cast<std::ptrdiff_t>(leaves_ + k_));
  else
    subsets = std::move(slots_[last_slot].heap);
  std::sort(subsets.begin(), subsets.end(), [&](const Key& x, const Key& y) { return keys_.Desc(x, y); });
  std::vector<int>& bin_of_root = buf_.bin_of_root;
  bin_of_root.assign(n_, -1);
  for (size_t b = 0; b < subsets.size(); ++b) bin_of_root[keys_.Id(subsets[b])] = static_cast<int>(b);
  std::vector<uint32_t> count(d_, 0);
  std::vector<int>& bin_of = buf_.bin_of;
  bin_of.resize(n_);
  for (size_t i = 0; i < n_; ++i) {
    uint32_t r = static_cast<uint32_t>(i);
    while (parent_[r] != r) {
      parent_[r] = parent_[parent_[r]];  // path halving
      r = parent_[r];
    }
    bin_of[i] = bin_of_root[r];
    ++count[bin_of[i]];
  }
  Bins bins(d_);
  for (int b = 0; b < d_; ++b) bins[b].reserve(count[b]);
  for (size_t i = 0; i < n_; ++i) bins[bin_of[i]].push_back(static_cast<uint32_t>(i));
  return bins;
}

template <class K>
Bins KkSolver<K>::Solve() {
  while (Remaining() > 1) {
    uint32_t ia = 0, ib = 0, sa = 0, sb = 0;
    double ca = 0, cb = 0;
    const bool single_a = Pop(&ia, &ca, &sa);
    const bool single_b = Pop(&ib, &cb, &sb);
    if (single_a && single_b)
      MergeSingles(ia, ca, ib, cb);
    else if (single_a || single_b)  // one call site: the hot path stays inlined in this loop
      MergeSingle(single_a ? sb : sa, single_a ? ia : ib, single_a ? ca : cb);
    else
      MergeStates(sa, sb);
  }
  return Assign();
}

Bins KarmarkarKarp(std::span<const double> costs, int d) {
  const size_t n = costs.size();
  if (n == 0) return Bins(d);
  if (d == 1) {
    Bins bins(1);
    bins[0].resize(n);
    for (size_t i = 0; i < n; ++i) bins[0][i] = static_cast<uint32_t>(i);
    return bins;
  }
  thread_local KkBuffers kept;
  KkBuffers local;
  KkBuffers& buf = n <= kKkKeepItems ? kept : local;
  std::vector<double>& single_cost = buf.single_cost;  // clamped at 0, in the order of the items
  OrderDescendingInto(costs, buf.radix, &single_cost);
  const std::vector<uint32_t>& singles = buf.radix.idx;
  // Integral costs whose total fits beside the id bits (and below 2^53, where doubles add exactly): every sum
  // the algorithm forms is an exact integer, so integer keys make the same comparisons as doubles.
  int shift = 1;
  while ((uint64_t{1} << shift) < n) ++shift;
  double total = 0;
  bool integral = true;
  for (double c : single_cost) {
    total += c;
    integral = integral && c == std::floor(c);
  }
  if (integral && total < std::ldexp(1.0, std::min(53, 63 - shift))) {
    KkIntKeys keys;
    keys.shift = shift;
    keys.mask = (uint64_t{1} << shift) - 1;
    return KkSolver<KkIntKeys>(keys, singles, single_cost, d, buf).Solve();
  }
  const KkPairKeys keys;
  return KkSolver<KkPairKeys>(keys, singles, single_cost, d, buf).Solve();
}

// Alg. 2: padded cost count * max. Exact (see the header).
Bins Padded(std::span<const int64_t> lengths, int d) {
  const size_t n = lengths.size();
  Bins bins(d);
  if (n == 0) return bins;
  // Ascending length, ties by index: descending order of (max - length).
  int64_t max_len = 0;
  for (int64_t l : lengths) max_len = std::max(max_len, l);
  std::vector<double> flipped(n);
  for (size_t i = 0; i < n; ++i)
    flipped[i] = static_cast<double>(max_len) - static_cast<double>(std::max<int64_t>(0, lengths[i]));
  const std::vector<uint32_t> order = OrderDescending(flipped);
  std::vector<__int128> len(n);
  for (size_t p = 0; p < n; ++p) len[p] = std::max<int64_t>(0, lengths[order[p]]);
  // GetLeastBatches(bound): a group starting at s takes the longest run s..e with (e-s+1) * len[e] <= bound
  // (at least one item). (e-s+1) * len[e] grows with e, so e is found by binary search: O(groups log n).
  auto group_end = [&](size_t s, __int128 bound) {
    size_t lo = s + 1, hi = n;  // first position that does not fit, in [s+1, n]
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (static_cast<__int128>(mid - s + 1) * len[mid] <= bound)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  };
  auto groups = [&](__int128 bound, int limit) {
    int g = 0;
    for (size_t s = 0; s < n && g <= limit; s = group_end(s, bound)) ++g;
    return g;
  };
  const __int128 max_l = len[n - 1];
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
  for (size_t s = 0; s < n; ++b) {
    const size_t e = group_end(s, lo);
    bins[b].assign(order.begin() + static_cast<std::ptrdiff_t>(s),
                   order.begin() + static_cast<std::ptrdiff_t>(e));
    s = e;
  }
  return bins;
}

// Alg. "3rd": tolerance comparator LPT. The next (shorter) item goes to the bin of least sum of squares among
// the "window" of bins whose sum is < min sum + v (ties: smaller sum, then index); v <= 0 is plain LPT by
// sum. Sums only grow and only the chosen bin changes, so bins only enter the window (as the minimum rises)
// except the chosen one: three lazy heaps (all bins by sum, window by sum of squares, outside by sum) give
// O(log d) a step.
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
  std::vector<double> sum(d, 0.0), sq(d, 0.0);
  std::vector<uint32_t> version(d, 0);
  struct ByKey {  // (key, tiebreak, bin, version), min first
    double key, tie;
    int bin;
    uint32_t version;
    bool operator>(const ByKey& o) const {
      if (key != o.key) return key > o.key;
      if (tie != o.tie) return tie > o.tie;
      return bin > o.bin;
    }
  };
  using MinHeap = std::priority_queue<ByKey, std::vector<ByKey>, std::greater<ByKey>>;
  MinHeap all, in, out;
  for (int b = 0; b < d; ++b) {
    all.push({0.0, 0.0, b, 0});
    in.push({0.0, 0.0, b, 0});
  }
  auto fresh = [&](MinHeap& h) {
    while (!h.empty() && h.top().version != version[h.top().bin]) h.pop();
  };
  std::vector<double> sorted;
  const std::vector<uint32_t> order = OrderDescending(keys, &sorted);
  for (size_t p = 0; p < n; ++p) {
    fresh(all);
    const double m = all.top().key;
    int pick = all.top().bin;
    if (v > 0) {
      for (fresh(out); !out.empty() && out.top().key < m + v; fresh(out)) {
        const int b = out.top().bin;
        out.pop();
        in.push({sq[b], sum[b], b, version[b]});
      }
      fresh(in);
      pick = in.top().bin;
      in.pop();
    }
    const double x = sorted[p];
    sum[pick] += x;
    sq[pick] += x * x;
    const uint32_t ver = ++version[pick];
    all.push({sum[pick], 0.0, pick, ver});
    if (v > 0) {
      if (sum[pick] < m + v)
        in.push({sq[pick], sum[pick], pick, ver});
      else
        out.push({sum[pick], 0.0, pick, ver});
    }
    bins[pick].push_back(order[p]);
  }
  return bins;
}

// Alg. "4th" as in the paper: descending, fill consecutive bins while the padded size (count+1) x bin max
// stays within `bound` (the no-padding LPT objective), at most d bins; the rest go to the bin of least f.
Bins ConvFill(std::span<const int64_t> lengths, int d, double lambda, double bound) {
  const size_t n = lengths.size();
  Bins bins(d);
  if (n == 0) return bins;
  std::vector<double> keys(n), x;
  for (size_t i = 0; i < n; ++i) keys[i] = static_cast<double>(std::max<int64_t>(0, lengths[i]));
  const std::vector<uint32_t> order = OrderDescending(keys, &x);
  std::vector<double> sum(d, 0.0), mx(d, 0.0);
  std::vector<int64_t> cnt(d, 0);
  auto f = [&](int b) { return sum[b] + lambda * static_cast<double>(cnt[b]) * mx[b] * mx[b]; };
  auto add = [&](int b, size_t p) {
    if (cnt[b] == 0) mx[b] = x[p];
    sum[b] += x[p];
    ++cnt[b];
    bins[b].push_back(order[p]);
  };
  size_t p = 0;
  for (int b = 0; p < n; ++p) {
    if (cnt[b] > 0 && static_cast<double>(cnt[b] + 1) * mx[b] > bound) {
      if (b + 1 >= d) break;
      ++b;
    }
    add(b, p);
  }
  using Key = std::pair<double, int>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> by_cost;
  for (int b = 0; b < d && p < n; ++b) by_cost.push({f(b), b});
  for (; p < n; ++p) {
    const int b = by_cost.top().second;
    by_cost.pop();
    add(b, p);
    by_cost.push({f(b), b});
  }
  return bins;
}

// Optimal consecutive partition (in descending order) for the conv cost: the least bound B for which the
// greedy consecutive fill (a new bin when f would exceed B) needs <= d bins, by bisection on B. Sub-intervals
// of a feasible run are feasible (f is monotone in count and max), so the greedy fill is optimal for each B.
Bins ConvConsecutive(std::span<const int64_t> lengths, int d, double lambda) {
  const size_t n = lengths.size();
  Bins bins(d);
  if (n == 0) return bins;
  std::vector<double> keys(n), x;
  for (size_t i = 0; i < n; ++i) keys[i] = static_cast<double>(std::max<int64_t>(0, lengths[i]));
  const std::vector<uint32_t> order = OrderDescending(keys, &x);
  // Runs greedily; returns the number of bins (stops counting past d). Fills `out` if given.
  auto fill = [&](double bound, Bins* out) {
    int b = 0;
    double sum = 0, mx = 0;
    int64_t cnt = 0;
    for (size_t p = 0; p < n; ++p) {
      if (cnt > 0 && sum + x[p] + lambda * static_cast<double>(cnt + 1) * mx * mx > bound) {
        if (++b >= d && !out) return b + 1;
        sum = 0;
        cnt = 0;
      }
      if (cnt == 0) mx = x[p];
      sum += x[p];
      ++cnt;
      if (out) (*out)[b].push_back(order[p]);
    }
    return b + 1;
  };
  double total = 0;
  for (double v : x) total += v;
  double lo = x[0] + lambda * x[0] * x[0];  // the longest item alone
  double hi = total + lambda * static_cast<double>(n) * x[0] * x[0];
  for (int it = 0; it < 64 && hi - lo > 1e-9 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (fill(mid, nullptr) <= d)
      hi = mid;
    else
      lo = mid;
  }
  fill(hi, &bins);
  return bins;
}

}  // namespace

const PolicyRegistry<PostBalanceAlgorithm>& PostBalanceAlgorithms() {
  static const PolicyRegistry<PostBalanceAlgorithm> r = [] {
    std::vector<RegistryEntry<PostBalanceAlgorithm>> entries;
    for (const auto& info : kAlgorithms) entries.push_back({info.name, info.description, {}, info.algorithm});
    return PolicyRegistry<PostBalanceAlgorithm>("post-balance algorithm", "post-balance algorithm",
                                                std::move(entries));
  }();
  return r;
}

Result<PostBalanceAlgorithm> ParsePostBalanceAlgorithm(std::string_view name) {
  MMTWIN_ASSIGN_OR_RETURN(const RegistryEntry<PostBalanceAlgorithm>* e, PostBalanceAlgorithms().Find(name));
  return e->run;
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

// LPT with equal counts: descending costs, each to the lightest bin that still has room; n % d bins may hold one
// item more than the others.
Bins LptEqualSize(std::span<const double> costs, int d) {
  const std::vector<uint32_t> order = OrderDescending(costs);
  const size_t n = order.size(), base = n / static_cast<size_t>(d);
  size_t extra = n % static_cast<size_t>(d);  // bins that may still grow to base + 1
  Bins bins(d);
  std::set<std::pair<double, int>> open;  // (load, bin) of bins with room
  std::vector<double> load(d, 0.0);
  for (int b = 0; b < d; ++b) open.insert({0.0, b});
  for (uint32_t item : order) {
    auto it = open.begin();
    const int b = it->second;
    open.erase(it);
    bins[b].push_back(item);
    load[b] += costs[item];
    const size_t count = bins[b].size();
    if (count == base + 1 && --extra == 0)  // the last extra is taken: bins already at base are full now
      for (auto j = open.begin(); j != open.end();)
        j = bins[j->second].size() >= base ? open.erase(j) : std::next(j);
    if (count < base || (count == base && extra > 0)) open.insert({load[b], b});
  }
  return bins;
}

// Karmarkar-Karp on states of d subsets of equal size (veRL's equal_size): the descending items in groups of d,
// one item per subset (the last group padded with zero-cost placeholders); merging two states pairs the largest
// subset of one with the smallest of the other, so every subset keeps the same count. O(n log n + n/d * d log d).
Bins KarmarkarKarpEqualSize(std::span<const double> costs, int d) {
  const std::vector<uint32_t> order = OrderDescending(costs);
  const size_t n = order.size(), k = static_cast<size_t>(d);
  struct Subset {
    double sum = 0;
    std::vector<uint32_t> items;
  };
  using State = std::vector<Subset>;  // ascending by sum
  std::vector<State> states;
  for (size_t g = 0; g < n; g += k) {
    State st(k);
    for (size_t j = 0; j < k && g + j < n; ++j) {
      st[j].sum = costs[order[g + j]];
      st[j].items.push_back(order[g + j]);
    }
    std::sort(st.begin(), st.end(), [](const Subset& a, const Subset& b) { return a.sum < b.sum; });
    states.push_back(std::move(st));
  }
  if (states.empty()) return Bins(d);
  using Key = std::tuple<double, int64_t, size_t>;  // (spread, -creation order, index): largest spread first
  std::priority_queue<Key> pq;
  int64_t created = 0;
  for (size_t i = 0; i < states.size(); ++i)
    pq.push({states[i].back().sum - states[i].front().sum, -created++, i});
  while (pq.size() > 1) {
    const size_t a = std::get<2>(pq.top());
    pq.pop();
    const size_t b = std::get<2>(pq.top());
    pq.pop();
    State merged(k);
    for (size_t j = 0; j < k; ++j) {  // a's j-th smallest with b's j-th largest
      Subset& x = states[a][j];
      Subset& y = states[b][k - 1 - j];
      merged[j].sum = x.sum + y.sum;
      merged[j].items = std::move(x.items);
      merged[j].items.insert(merged[j].items.end(), y.items.begin(), y.items.end());
    }
    std::sort(merged.begin(), merged.end(), [](const Subset& p, const Subset& q) { return p.sum < q.sum; });
    states[a].clear();
    states[b].clear();
    states.push_back(std::move(merged));
    pq.push({states.back().back().sum - states.back().front().sum, -created++, states.size() - 1});
  }
  const State& last = states[std::get<2>(pq.top())];
  Bins bins(d);
  for (size_t j = 0; j < k; ++j) bins[j] = last[j].items;
  return bins;
}

void RefineBySwaps(std::span<const double> costs, std::vector<std::vector<uint32_t>>& bins, bool swaps_only) {
  const int d = static_cast<int>(bins.size());
  if (d < 2) return;
  std::vector<double> sum(d, 0.0);
  for (int b = 0; b < d; ++b)
    for (uint32_t i : bins[b]) sum[b] += costs[i];
  std::set<std::pair<double, int>> order;  // (sum, bin): lightest first, heaviest last
  for (int b = 0; b < d; ++b) order.insert({sum[b], b});
  size_t items = 0;
  for (const auto& b : bins) items += b.size();
  const size_t max_exchanges = 4 * items + 16;
  constexpr int kLightCandidates = 32;
  std::vector<std::pair<double, size_t>> light;  // (cost, position in L) sorted by cost
  for (size_t step = 0; step < max_exchanges; ++step) {
    const int h = std::prev(order.end())->second;
    bool exchanged = false;
    int tried = 0;
    for (auto it = order.begin(); it != order.end() && tried < kLightCandidates; ++it, ++tried) {
      const int l = it->second;
      if (l == h) break;
      const double gap = sum[h] - sum[l];
      if (!(gap > 1e-9 * std::max(1.0, sum[h]))) break;  // the lightest left are as heavy as H
      light.clear();
      for (size_t q = 0; q < bins[l].size(); ++q) light.push_back({costs[bins[l][q]], q});
      std::sort(light.begin(), light.end());
      // Best exchange: amount a = c_h - c_l (c_l = 0 for a move) with 0 < a < gap, closest to gap / 2.
      double best_score = gap / 2;  // |a - gap/2|; only a strictly inside (0, gap) improves
      size_t best_h = SIZE_MAX, best_l = SIZE_MAX;
      for (size_t p = 0; p < bins[h].size(); ++p) {
        const double ch = costs[bins[h][p]];
        if (!swaps_only && ch > 0 && ch < gap && std::fabs(ch - gap / 2) < best_score) {
          best_score = std::fabs(ch - gap / 2);
          best_h = p;
          best_l = SIZE_MAX;  // a move
        }
        // Swap: c_l closest to ch - gap/2, among c_l in (ch - gap, ch).
        const double want = ch - gap / 2;
        auto at = std::lower_bound(light.begin(), light.end(), std::make_pair(want, size_t{0}));
        for (auto c : {at, at == light.begin() ? at : std::prev(at)}) {
          if (c == light.end()) continue;
          const double a = ch - c->first;
          if (a > 0 && a < gap && std::fabs(a - gap / 2) < best_score) {
            best_score = std::fabs(a - gap / 2);
            best_h = p;
            best_l = c->second;
          }
        }
      }
      if (best_h == SIZE_MAX) continue;
      order.erase({sum[h], h});
      order.erase({sum[l], l});
      const uint32_t from_h = bins[h][best_h];
      sum[h] -= costs[from_h];
      sum[l] += costs[from_h];
      if (best_l == SIZE_MAX) {
        bins[h].erase(bins[h].begin() + static_cast<std::ptrdiff_t>(best_h));
        bins[l].push_back(from_h);
      } else {
        const uint32_t from_l = bins[l][best_l];
        sum[h] += costs[from_l];
        sum[l] -= costs[from_l];
        bins[h][best_h] = from_l;
        bins[l][best_l] = from_h;
      }
      order.insert({sum[h], h});
      order.insert({sum[l], l});
      exchanged = true;
      break;
    }
    if (!exchanged) break;
  }
  for (auto& b : bins) std::sort(b.begin(), b.end());  // deterministic bin contents
}

std::vector<std::vector<uint32_t>> PostBalance(std::span<const int64_t> lengths, int d,
                                               const PostBalanceOptions& o) {
  if (d <= 0) return {};
  const bool additive = o.algorithm == PostBalanceAlgorithm::kLpt ||
                        o.algorithm == PostBalanceAlgorithm::kKk ||
                        o.algorithm == PostBalanceAlgorithm::kQuadratic;
  const bool equal =
      o.equal_size && (o.algorithm == PostBalanceAlgorithm::kLpt || o.algorithm == PostBalanceAlgorithm::kKk);
  if (o.refine && additive) {
    PostBalanceOptions base = o;
    base.refine = false;
    Bins bins = PostBalance(lengths, d, base);
    RefineBySwaps(ItemCosts(lengths, o), bins, /*swaps_only=*/equal);
    return bins;
  }
  if (equal) {
    Bins bins = o.algorithm == PostBalanceAlgorithm::kLpt ? LptEqualSize(ItemCosts(lengths, o), d)
                                                          : KarmarkarKarpEqualSize(ItemCosts(lengths, o), d);
    for (auto& b : bins) std::sort(b.begin(), b.end());
    return bins;
  }
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
      // The best (by f; ties: earlier) of the paper's fill, the optimal consecutive partition and LPT.
      const PostBalanceOptions sum_only{PostBalanceAlgorithm::kLpt, 0, 0};
      const Bins by_sum = Lpt(ItemCosts(lengths, sum_only), d);
      std::vector<Bins> options;
      options.push_back(ConvFill(lengths, d, o.lambda, MaxBinCost(lengths, by_sum, sum_only)));
      options.push_back(ConvConsecutive(lengths, d, o.lambda));
      options.push_back(Lpt(ItemCosts(lengths, {PostBalanceAlgorithm::kLpt, o.lambda, 0}), d));
      size_t best = 0;
      double best_cost = MaxBinCost(lengths, options[0], o);
      for (size_t k = 1; k < options.size(); ++k) {
        const double c = MaxBinCost(lengths, options[k], o);
        if (c < best_cost) {
          best = k;
          best_cost = c;
        }
      }
      return std::move(options[best]);
    }
  }
  return {};
}

Bins PostBalanceKeepOwn(std::span<const int64_t> lengths, std::span<const int> origin, int d,
                        const PostBalanceOptions& o) {
  if (d <= 0) return {};
  const size_t n = lengths.size();
  const bool additive = o.algorithm == PostBalanceAlgorithm::kLpt ||
                        o.algorithm == PostBalanceAlgorithm::kKk ||
                        o.algorithm == PostBalanceAlgorithm::kQuadratic;
  // The target: the plain algorithm's largest bin.
  PostBalanceOptions plain_options = o;
  plain_options.equal_size = false;
  const double target = MaxBinCost(lengths, PostBalance(lengths, d, plain_options), o);
  auto length = [&](uint32_t i) { return std::max<int64_t>(0, lengths[i]); };
  // Every rank's own draw, trimmed to the target.
  Bins own(d);
  for (size_t i = 0; i < n; ++i) own[origin[i]].push_back(static_cast<uint32_t>(i));
  std::vector<double> draw_cost(d, 0);
  std::vector<uint32_t> pool;
  for (int r = 0; r < d; ++r) {
    std::vector<uint32_t>& b = own[r];
    draw_cost[r] = BinCost(lengths, b, o);
    if (draw_cost[r] <= target) continue;
    // Ascending by cost (ties by index).
    std::sort(b.begin(), b.end(),
              [&](uint32_t x, uint32_t y) { return length(x) != length(y) ? length(x) < length(y) : x < y; });
    if (additive) {
      // The fewest bytes out: the smallest item that covers the excess, else the largest one and repeat.
      double excess = draw_cost[r] - target;
      while (excess > 0 && !b.empty()) {
        auto it = std::lower_bound(b.begin(), b.end(), excess,
                                   [&](uint32_t x, double e) { return ItemCost(length(x), o) < e; });
        if (it == b.end()) it = std::prev(b.end());
        excess -= ItemCost(length(*it), o);
        pool.push_back(*it);
        b.erase(it);
      }
    } else {
      // Padded costs fall with the longest item: drop the longest until the rest fits.
      while (!b.empty() && BinCost(lengths, b, o) > target) {
        pool.push_back(b.back());
        b.pop_back();
      }
    }
  }
  // Bins seeded with the trimmed draws, the heaviest draw first (as LPT takes its items; ties by rank).
  std::vector<int> order(d);
  for (int r = 0; r < d; ++r) order[r] = r;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return draw_cost[a] > draw_cost[b]; });
  Bins bins(d);
  for (int k = 0; k < d; ++k) bins[k] = std::move(own[order[k]]);
  // The excess, longest first, each into the bin it raises least (LPT; ties: the lower bin).
  std::sort(pool.begin(), pool.end(),
            [&](uint32_t x, uint32_t y) { return length(x) != length(y) ? length(x) > length(y) : x < y; });
  std::vector<double> count(d), mx(d, 0), sum(d, 0), sq(d, 0);
  for (int k = 0; k < d; ++k)
    for (uint32_t i : bins[k]) {
      const double l = static_cast<double>(length(i));
      count[k] += 1;
      mx[k] = std::max(mx[k], l);
      sum[k] += l;
      sq[k] += l * l;
    }
  auto cost = [&](int k) {
    switch (o.algorithm) {
      case PostBalanceAlgorithm::kPadded:
        return count[k] * mx[k];
      case PostBalanceAlgorithm::kConv:
        return sum[k] + o.lambda * count[k] * mx[k] * mx[k];
      default:
        return sum[k] + o.lambda * sq[k];
    }
  };
  auto add = [&](int k, uint32_t i) {
    const double l = static_cast<double>(length(i));
    bins[k].push_back(i);
    count[k] += 1;
    mx[k] = std::max(mx[k], l);
    sum[k] += l;
    sq[k] += l * l;
  };
  if (additive) {
    using Entry = std::pair<double, int>;  // (cost, bin): the least on top
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    for (int k = 0; k < d; ++k) heap.push({cost(k), k});
    for (uint32_t i : pool) {
      const int k = heap.top().second;
      heap.pop();
      add(k, i);
      heap.push({cost(k), k});
    }
  } else {
    for (uint32_t i : pool) {
      const double l = static_cast<double>(length(i));
      int best = 0;
      double best_cost = std::numeric_limits<double>::infinity();
      for (int k = 0; k < d; ++k) {
        const double c1 = count[k] + 1, m1 = std::max(mx[k], l);
        const double c =
            o.algorithm == PostBalanceAlgorithm::kPadded ? c1 * m1 : sum[k] + l + o.lambda * c1 * m1 * m1;
        if (c < best_cost) {
          best = k;
          best_cost = c;
        }
      }
      add(best, i);
    }
  }
  if (o.refine && additive) RefineBySwaps(ItemCosts(lengths, o), bins);
  for (auto& b : bins) std::sort(b.begin(), b.end());
  return bins;
}

}  // namespace mmtwin

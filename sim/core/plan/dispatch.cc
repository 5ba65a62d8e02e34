// SPDX-License-Identifier: Apache-2.0
#include "core/plan/dispatch.h"

#include <algorithm>
#include <array>

namespace mmtwin {

void AggregateTransfers(std::vector<DispatchTransfer>* transfers) {
  auto& t = *transfers;
  std::erase_if(t, [](const DispatchTransfer& x) { return x.src_rank == x.dst_rank || x.bytes <= 0; });
  int32_t lo = 0, hi = 0;
  for (const DispatchTransfer& x : t) {
    lo = std::min({lo, x.src_rank, x.dst_rank});
    hi = std::max({hi, x.src_rank, x.dst_rank});
  }
  const size_t ranks = static_cast<size_t>(hi) + 1;
  if (lo >= 0 && t.size() >= 64 && ranks <= 4 * t.size() + 1024) {
    // Ranks are small non-negative ints: two stable counting-sort passes (by dst, then by src) give the order
    // by (src, dst) in O(n + ranks). The aggregated list is unique, so it equals the comparison sort's.
    std::vector<DispatchTransfer> tmp(t.size());
    std::vector<uint32_t> start(ranks + 1);
    auto pass = [&](const std::vector<DispatchTransfer>& from, std::vector<DispatchTransfer>& to,
                    bool by_src) {
      std::fill(start.begin(), start.end(), 0);
      for (const DispatchTransfer& x : from)
        ++start[static_cast<size_t>(by_src ? x.src_rank : x.dst_rank) + 1];
      for (size_t r = 0; r < ranks; ++r) start[r + 1] += start[r];
      for (const DispatchTransfer& x : from)
        to[start[static_cast<size_t>(by_src ? x.src_rank : x.dst_rank)]++] = x;
    };
    pass(t, tmp, false);
    pass(tmp, t, true);
  } else {
    std::sort(t.begin(), t.end(), [](const DispatchTransfer& a, const DispatchTransfer& b) {
      return a.src_rank != b.src_rank ? a.src_rank < b.src_rank : a.dst_rank < b.dst_rank;
    });
  }
  size_t out = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (out > 0 && t[out - 1].src_rank == t[i].src_rank && t[out - 1].dst_rank == t[i].dst_rank)
      t[out - 1].bytes += t[i].bytes;
    else
      t[out++] = t[i];
  }
  t.resize(out);
}

AllToAllTime AllToAllChains(std::span<const TimedTransfer> transfers) {
  int32_t hi = -1;
  for (const TimedTransfer& t : transfers) hi = std::max({hi, t.src, t.dst});
  // Per device: [send in node, send across, receive in node, receive across].
  std::vector<std::array<double, 4>> load(static_cast<size_t>(hi + 1), {0, 0, 0, 0});
  for (const TimedTransfer& t : transfers) {
    load[static_cast<size_t>(t.src)][t.in_node ? 0 : 1] += t.us;
    load[static_cast<size_t>(t.dst)][t.in_node ? 2 : 3] += t.us;
  }
  double send = 0, receive = 0;
  for (const auto& l : load) {
    send = std::max({send, l[0], l[1]});
    receive = std::max({receive, l[2], l[3]});
  }
  return {std::max(send, receive), receive > send};
}

}  // namespace mmtwin

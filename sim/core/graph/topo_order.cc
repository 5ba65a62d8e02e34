// SPDX-License-Identifier: Apache-2.0
#include "core/graph/topo_order.h"

#include <algorithm>

namespace mmtwin {

bool TopologicalOrder(std::span<const int32_t> begin, std::span<const int32_t> targets,
                      std::vector<int32_t>* order) {
  const int32_t n = begin.empty() ? 0 : static_cast<int32_t>(begin.size() - 1);
  enum : uint8_t { kWhite = 0, kGray = 1, kBlack = 2 };
  std::vector<uint8_t> color(static_cast<size_t>(n), kWhite);
  // next[u]: the index into `targets` of u's next out-edge to examine (while u is gray).
  std::vector<int32_t> next(begin.begin(), begin.end() - (n > 0 ? 1 : 0));
  std::vector<int32_t> stack;
  order->clear();
  order->reserve(static_cast<size_t>(n));
  for (int32_t root = 0; root < n; ++root) {
    if (color[root] != kWhite) continue;
    color[root] = kGray;
    stack.push_back(root);
    while (!stack.empty()) {
      const int32_t u = stack.back();
      bool descended = false;
      while (next[u] < begin[u + 1]) {
        const int32_t v = targets[next[u]++];
        if (color[v] == kWhite) {
          color[v] = kGray;
          stack.push_back(v);
          descended = true;
          break;
        }
        if (color[v] == kGray) return false;  // a back edge: a cycle
      }
      if (descended) continue;
      color[u] = kBlack;
      order->push_back(u);  // finished
      stack.pop_back();
    }
  }
  std::reverse(order->begin(), order->end());
  return true;
}

}  // namespace mmtwin

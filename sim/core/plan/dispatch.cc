#include "core/plan/dispatch.h"

#include <algorithm>

namespace mmtwin {

void AggregateTransfers(std::vector<DispatchTransfer>* transfers) {
  auto& t = *transfers;
  std::erase_if(t, [](const DispatchTransfer& x) { return x.src_rank == x.dst_rank || x.bytes <= 0; });
  std::sort(t.begin(), t.end(), [](const DispatchTransfer& a, const DispatchTransfer& b) {
    return a.src_rank != b.src_rank ? a.src_rank < b.src_rank : a.dst_rank < b.dst_rank;
  });
  size_t out = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (out > 0 && t[out - 1].src_rank == t[i].src_rank && t[out - 1].dst_rank == t[i].dst_rank)
      t[out - 1].bytes += t[i].bytes;
    else
      t[out++] = t[i];
  }
  t.resize(out);
}

}  // namespace mmtwin

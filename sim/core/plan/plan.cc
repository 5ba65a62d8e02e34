// SPDX-License-Identifier: Apache-2.0
#include "core/plan/plan.h"

namespace mmtwin {

Status ValidatePartition(const Partition& p, int layers, int chunks, int first) {
  if (p.chunks() != chunks)
    return Error("partition has " + std::to_string(p.chunks()) + " chunks, expected " +
                 std::to_string(chunks));
  if (p.bounds.front() != first || p.bounds.back() != layers)
    return Error("partition must cover layers " + std::to_string(first) + ".." + std::to_string(layers));
  for (int c = 0; c < chunks; ++c)
    if (p.bounds[c + 1] <= p.bounds[c])
      return Error("partition chunk " + std::to_string(c) + " is empty (cuts must be strictly increasing)");
  return Status();
}

bool SameRunPlan(const Plan& a, const Plan& b) {
  return a.parallel == b.parallel && a.partition == b.partition && a.recompute == b.recompute &&
         a.schedule == b.schedule && a.iterations == b.iterations;
}

int RecomputePlan::Count() const {
  int n = 0;
  for (uint8_t b : layers) n += b != 0;
  return n;
}

}  // namespace mmtwin

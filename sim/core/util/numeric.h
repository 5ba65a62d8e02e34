// SPDX-License-Identifier: Apache-2.0
// Byte counts computed in double (activations of huge micro-batches, recompute estimates) converted to int64_t
// without undefined behaviour: a value past kBytesCeiling (or NaN) becomes kBytesCeiling, which is more than any
// device holds (cluster memory_bytes <= 1e15), so a stage that large reads as "does not fit", never as a
// wrapped-around small number that fits. Sums of two ceilings cannot overflow int64_t; AddBytes keeps them there.
//
//   cost.act_bytes = BytesOf(34.0 * tokens * hidden / tp);
//   held = AddBytes(held, chunk.act_bytes);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mmtwin {

constexpr int64_t kBytesCeiling = int64_t{1} << 60;

// ceil(x) as int64_t, clamped to [0, kBytesCeiling]; NaN gives kBytesCeiling.
inline int64_t BytesOf(double x) {
  if (!(x < static_cast<double>(kBytesCeiling))) return kBytesCeiling;
  if (x <= 0) return 0;
  return static_cast<int64_t>(std::ceil(x));
}

// a + b for byte counts in [0, kBytesCeiling], clamped to kBytesCeiling.
inline int64_t AddBytes(int64_t a, int64_t b) { return std::min(kBytesCeiling, a + b); }

}  // namespace mmtwin

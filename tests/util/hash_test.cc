// SPDX-License-Identifier: Apache-2.0
// Hash64 (core/util/hash.h): the digest depends only on the bytes (every way of splitting them into Update calls
// gives the same digest), and every single-bit change of an input, the length included, changes it.
#include "core/util/hash.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/util/rng.h"

namespace mmtwin {
namespace {

uint64_t OneShot(const std::string& s) {
  Hash64 h;
  h.Update(s);
  return h.Digest();
}

std::string Bytes(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng.Below(256));
  return s;
}

TEST(Hash64Test, AnySplitGivesTheOneShotDigest) {
  Rng rng(3);
  for (size_t n : {0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 100, 1000, 4099}) {
    const std::string s = Bytes(n, n + 1);
    const uint64_t want = OneShot(s);
    for (int trial = 0; trial < 20; ++trial) {
      Hash64 h;
      for (size_t at = 0; at < n;) {
        const size_t take = std::min<size_t>(n - at, rng.Below(40));
        h.Update(s.data() + at, take);  // including empty updates
        at += take;
      }
      EXPECT_EQ(h.Digest(), want) << n << " bytes, trial " << trial;
    }
  }
}

// An empty update may pass a null pointer (an empty vector's data()): no effect (found by trace_cache_fuzz under
// UBSan: memcpy was called with it).
TEST(Hash64Test, AnEmptyUpdateWithANullPointerChangesNothing) {
  Hash64 a, b;
  a.Update("abc", 3);
  b.Update("abc", 3);
  b.Update(nullptr, 0);
  EXPECT_EQ(a.Digest(), b.Digest());
}

TEST(Hash64Test, EveryBitAndTheLengthCount) {
  for (size_t n : {1, 9, 32, 40, 200}) {
    const std::string s = Bytes(n, 17 + n);
    std::set<uint64_t> seen{OneShot(s)};
    for (size_t i = 0; i < n; ++i)
      for (int bit = 0; bit < 8; ++bit) {
        std::string t = s;
        t[i] = static_cast<char>(t[i] ^ (1 << bit));
        EXPECT_TRUE(seen.insert(OneShot(t)).second) << n << " bytes, byte " << i << " bit " << bit;
      }
  }
  // Trailing zero bytes are not free: lengths 0..64 of zeros all differ.
  std::set<uint64_t> zeros;
  for (size_t n = 0; n <= 64; ++n) EXPECT_TRUE(zeros.insert(OneShot(std::string(n, '\0'))).second) << n;
}

}  // namespace
}  // namespace mmtwin

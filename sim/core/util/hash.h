// SPDX-License-Identifier: Apache-2.0
// A fast streaming 64-bit content hash, for keying and checksumming caches (the binary trace cache keys itself by
// its CSV's hash and checksums its own body). Not cryptographic: it detects accidental changes (a file rewritten
// with the same size and time, a flipped byte), not an adversary who wants a collision.
//
//   Hash64 h;
//   h.Update(block, n);   // any number of calls, any split: the digest depends only on the bytes
//   uint64_t d = h.Digest();
//
// Four independent 64-bit lanes each take one little-endian 8-byte word of every 32-byte stripe (multiply,
// rotate, multiply), so the loop runs at several GB/s; the digest folds the lanes, the tail (< 32 bytes) and
// the length, then avalanches. The same bytes give the same digest on every little-endian host (the cache is
// written only there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace mmtwin {

class Hash64 {
 public:
  void Update(const void* data, size_t n) {
    if (n == 0) return;  // data may be null then (an empty vector's data()): memcpy must not see it
    const unsigned char* p = static_cast<const unsigned char*>(data);
    total_ += n;
    if (tail_n_ > 0) {  // finish a stripe begun by an earlier call
      const size_t take = n < kStripe - tail_n_ ? n : kStripe - tail_n_;
      std::memcpy(tail_ + tail_n_, p, take);
      tail_n_ += take;
      p += take;
      n -= take;
      if (tail_n_ < kStripe) return;
      Stripe(tail_);
      tail_n_ = 0;
    }
    for (; n >= kStripe; p += kStripe, n -= kStripe) Stripe(p);
    std::memcpy(tail_, p, n);
    tail_n_ = n;
  }
  void Update(std::string_view s) { Update(s.data(), s.size()); }

  uint64_t Digest() const {
    uint64_t h = Rotl(lane_[0], 1) + Rotl(lane_[1], 7) + Rotl(lane_[2], 12) + Rotl(lane_[3], 18);
    for (uint64_t l : lane_) h = (h ^ Round(0, l)) * kP1 + kP4;
    h += total_;
    size_t i = 0;
    for (; i + 8 <= tail_n_; i += 8) h = Rotl(h ^ Round(0, Word(tail_ + i)), 27) * kP1 + kP4;
    for (; i < tail_n_; ++i) h = Rotl(h ^ (tail_[i] * kP5), 11) * kP1;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    h ^= h >> 32;
    return h;
  }

 private:
  static constexpr size_t kStripe = 32;
  // Odd 64-bit constants with well-mixed bits (the primes xxHash64 uses).
  static constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                            kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull, kP5 = 0x27D4EB2F165667C5ull;

  static uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t Round(uint64_t acc, uint64_t w) { return Rotl(acc + w * kP2, 31) * kP1; }
  static uint64_t Word(const unsigned char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  }
  void Stripe(const unsigned char* p) {
    for (int k = 0; k < 4; ++k) lane_[k] = Round(lane_[k], Word(p + 8 * k));
  }

  uint64_t lane_[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  unsigned char tail_[kStripe] = {};
  size_t tail_n_ = 0;
  uint64_t total_ = 0;
};

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/plan/caching_allocator.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace mmtwin {

int64_t CachingAllocatorModel::RoundSize(int64_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

int64_t CachingAllocatorModel::SegmentSize(int64_t bytes) {
  const int64_t size = RoundSize(bytes);
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

void CachingAllocatorModel::Account(int64_t allocated_delta, int64_t reserved_delta) {
  allocated_ += allocated_delta;
  reserved_ += reserved_delta;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

void CachingAllocatorModel::ResetPeaks() {
  peak_allocated_ = allocated_;
  peak_reserved_ = reserved_;
}

int64_t CachingAllocatorModel::NewSegment(int64_t bytes, bool small) {
  const int64_t address = next_address_;
  // A gap between segments, so that no two segments are ever adjacent (blocks never merge across them).
  next_address_ += bytes + kSmallBuffer;
  blocks_[address] = Block{bytes, address, small, false};
  Pool(small).insert({bytes, address});
  Account(0, bytes);
  return address;
}

Result<std::vector<int64_t>> CachingAllocatorModel::AddSegment(
    int64_t segment_bytes, const std::vector<std::pair<int64_t, bool>>& blocks) {
  int64_t sum = 0;
  for (const auto& [size, allocated] : blocks) {
    if (size <= 0) return Error("caching allocator: a block of " + std::to_string(size) + " bytes");
    sum += size;
  }
  if (blocks.empty() || sum != segment_bytes)
    return Error("caching allocator: the blocks of a segment of " + std::to_string(segment_bytes) +
                 " bytes sum to " + std::to_string(sum));
  const bool small = segment_bytes == kSmallBuffer;
  const int64_t base = NewSegment(segment_bytes, small);
  Pool(small).erase({segment_bytes, base});
  blocks_.erase(base);
  std::vector<int64_t> out;
  int64_t address = base, allocated = 0;
  for (const auto& [size, handed_out] : blocks) {
    blocks_[address] = Block{size, base, small, handed_out};
    if (handed_out)
      allocated += size;
    else
      Pool(small).insert({size, address});
    out.push_back(address);
    address += size;
  }
  Account(allocated, 0);
  return out;
}

int64_t CachingAllocatorModel::Allocate(int64_t bytes) {
  const int64_t size = RoundSize(std::max<int64_t>(0, bytes));
  const bool small = size <= kSmallSize;
  FreeSet& pool = Pool(small);
  auto it = pool.lower_bound({size, 0});  // best fit: smallest size >= request, lowest address among equals
  int64_t address;
  if (it == pool.end()) {
    ++segments_created_;
    address = NewSegment(SegmentSize(bytes), small);
    it = pool.find({blocks_[address].size, address});
  }
  address = it->second;
  pool.erase(it);
  Block& b = blocks_[address];
  const int64_t remaining = b.size - size;
  const bool split = small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    const int64_t rest = address + size;
    blocks_[rest] = Block{remaining, b.segment, b.small, false};
    pool.insert({remaining, rest});
    b.size = size;
  }
  b.allocated = true;
  Account(b.size, 0);
  return address;
}

Status CachingAllocatorModel::Free(int64_t address) {
  auto it = blocks_.find(address);
  if (it == blocks_.end() || !it->second.allocated)
    return Error("caching allocator: no block handed out at address " + std::to_string(address));
  Block& b = it->second;
  b.allocated = false;
  Account(-b.size, 0);
  FreeSet& pool = Pool(b.small);
  // Merge with the free neighbours of the same segment.
  if (auto next = std::next(it); next != blocks_.end() && next->second.segment == b.segment &&
                                 !next->second.allocated && next->first == address + b.size) {
    pool.erase({next->second.size, next->first});
    b.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.segment == b.segment && !prev->second.allocated &&
        prev->first + prev->second.size == address) {
      pool.erase({prev->second.size, prev->first});
      prev->second.size += b.size;
      blocks_.erase(it);
      it = prev;
    }
  }
  pool.insert({it->second.size, it->first});
  return Status();
}

}  // namespace mmtwin

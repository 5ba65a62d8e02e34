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

void CachingAllocatorModel::Insert(FreeList& pool, int64_t size, int64_t address) {
  pool.insert({size, address});
}

void CachingAllocatorModel::Erase(FreeList& pool, int64_t size, int64_t address) {
  pool.erase({size, address});
}

int32_t CachingAllocatorModel::NewBlock(const Block& b) {
  int32_t h;
  if (!spare_.empty()) {
    h = spare_.back();
    spare_.pop_back();
    blocks_[h] = b;
  } else {
    h = static_cast<int32_t>(blocks_.size());
    blocks_.push_back(b);
  }
  by_address_[b.address] = h;
  return h;
}

void CachingAllocatorModel::DropBlock(int32_t handle) {
  by_address_.erase(blocks_[handle].address);
  spare_.push_back(handle);
}

int32_t CachingAllocatorModel::NewSegment(int64_t bytes, bool small) {
  const int64_t address = next_address_;
  // A gap between segments, so that no two segments are ever adjacent (blocks never merge across them).
  next_address_ += bytes + kSmallBuffer;
  const int32_t h = NewBlock(Block{address, bytes, -1, -1, small, false});
  Insert(Pool(small), bytes, address);
  Account(0, bytes);
  return h;
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
  const int32_t first = NewSegment(segment_bytes, small);
  const int64_t base = blocks_[first].address;
  Erase(Pool(small), segment_bytes, base);
  DropBlock(first);
  std::vector<int64_t> out;
  int64_t address = base, allocated = 0;
  int32_t prev = -1;
  for (const auto& [size, handed_out] : blocks) {
    const int32_t h = NewBlock(Block{address, size, prev, -1, small, handed_out});
    if (prev >= 0) blocks_[prev].next = h;
    prev = h;
    if (handed_out)
      allocated += size;
    else
      Insert(Pool(small), size, address);
    out.push_back(address);
    address += size;
  }
  Account(allocated, 0);
  return out;
}

void CachingAllocatorModel::ReleaseCachedSegments() {
  ++releases_;
  for (FreeList* pool : {&free_small_, &free_large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      const int32_t h = by_address_.at(it->second);
      if (blocks_[h].prev >= 0 || blocks_[h].next >= 0) {
        ++it;
        continue;
      }
      Account(0, -blocks_[h].size);
      DropBlock(h);
      it = pool->erase(it);
    }
  }
}

int64_t CachingAllocatorModel::Allocate(int64_t bytes) {
  const int64_t size = RoundSize(std::max<int64_t>(0, bytes));
  const bool small = size <= kSmallSize;
  FreeList& pool = Pool(small);
  // Best fit: the smallest cached size >= the request, the lowest address among equal sizes.
  auto it = pool.lower_bound({size, 0});
  int32_t h;
  if (it == pool.end()) {
    ++segments_created_;
    if (limit_ > 0 && reserved_ + SegmentSize(bytes) > limit_) ReleaseCachedSegments();
    h = NewSegment(SegmentSize(bytes), small);
    Erase(pool, blocks_[h].size, blocks_[h].address);
  } else {
    h = by_address_.at(it->second);
    pool.erase(it);
  }
  const int64_t remaining = blocks_[h].size - size;
  const bool split = small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    const Block& b = blocks_[h];
    const int32_t rest = NewBlock(Block{b.address + size, remaining, h, b.next, b.small, false});
    if (blocks_[rest].next >= 0) blocks_[blocks_[rest].next].prev = rest;
    blocks_[h].next = rest;
    blocks_[h].size = size;
    Insert(pool, remaining, blocks_[rest].address);
  }
  blocks_[h].allocated = true;
  Account(blocks_[h].size, 0);
  return blocks_[h].address;
}

Status CachingAllocatorModel::Free(int64_t address) {
  auto found = by_address_.find(address);
  if (found == by_address_.end() || !blocks_[found->second].allocated)
    return Error("caching allocator: no block handed out at address " + std::to_string(address));
  int32_t h = found->second;
  blocks_[h].allocated = false;
  Account(-blocks_[h].size, 0);
  FreeList& pool = Pool(blocks_[h].small);
  // Merge with the free neighbours of the same segment (the list holds the segment's blocks in address order):
  // block a absorbs its successor, which leaves the pool (the freed block itself is not in it yet).
  const auto absorb_next = [&](int32_t a) {
    const int32_t n = blocks_[a].next;
    Erase(pool, blocks_[n].size, blocks_[n].address);
    blocks_[a].size += blocks_[n].size;
    blocks_[a].next = blocks_[n].next;
    if (blocks_[n].next >= 0) blocks_[blocks_[n].next].prev = a;
    DropBlock(n);
  };
  if (const int32_t n = blocks_[h].next; n >= 0 && !blocks_[n].allocated) absorb_next(h);
  if (const int32_t p = blocks_[h].prev; p >= 0 && !blocks_[p].allocated) {
    Erase(pool, blocks_[p].size, blocks_[p].address);
    absorb_next(p);
    h = p;
  }
  Insert(pool, blocks_[h].size, blocks_[h].address);
  return Status();
}

}  // namespace mmtwin

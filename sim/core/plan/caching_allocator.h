// SPDX-License-Identifier: Apache-2.0
// A model of PyTorch's CUDA caching allocator: which cudaMalloc'd segments a sequence of tensor allocations and
// frees leaves reserved, so that the reserved peak (what nvidia-smi shows a job, what a job runs out of) can be
// replayed rather than estimated from one spread figure (core/plan/memory.h's FragmentationBytes).
//
// The rules are those of c10/cuda/CUDACachingAllocator.cpp (native allocator, one stream, default settings: no
// max_split_size, no expandable segments, no garbage-collection threshold, no memory pressure; PyTorch 2.x):
// - a request of n bytes is rounded up to a multiple of 512 B (kMinBlockSize; 0 bytes take 512);
// - pools: small (rounded size <= 1 MiB, kSmallSize) and large; a block stays in its segment's pool;
// - best fit: the smallest cached free block of the request's pool at least the rounded size (the lowest address
//   among equal sizes);
// - none cached: a new segment of 2 MiB (kSmallBuffer) for the small pool; for the large pool 20 MiB
//   (kLargeBuffer) below 10 MiB (kMinLargeAlloc), else the size rounded up to 2 MiB (kRoundLarge);
// - split: the block is cut to the rounded size when what remains is >= 512 B (small pool) or > 1 MiB (large
//   pool); the rest stays a free block of the same segment, else the whole block is handed out;
// - free: the block merges with its free neighbours in the same segment; segments are not released, except
// - out of memory (with a limit, set_limit_bytes: the bytes the device leaves this allocator): a new segment that
//   would take the reserved bytes past the limit first releases every cached segment that is one free block (a
//   segment nothing is split from), as the allocator's release_cached_blocks does when cudaMalloc fails before it
//   retries; the segment is then created even if the limit is still passed (the job's OOM: the reserved peak
//   above the limit says by how much). No limit (0, the default): nothing is ever released.
// allocated_bytes counts the blocks handed out (block sizes, as torch.cuda.memory_allocated does),
// reserved_bytes the segments (torch.cuda.memory_reserved). Addresses are the model's own: segments are laid out
// one after another, in the order they are created.
//
//   CachingAllocatorModel a;
//   int64_t x = a.Allocate(50 << 20), y = a.Allocate(8);   // a 50 MiB segment, a 2 MiB small segment
//   a.Free(x);  int64_t z = a.Allocate(30 << 20);         // reuses x's block, split: 20 MiB stays cached
//   a.peak_reserved_bytes();                              // 52 MiB
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

class CachingAllocatorModel {
 public:
  static constexpr int64_t kMinBlockSize = 512;
  static constexpr int64_t kSmallSize = int64_t{1} << 20;
  static constexpr int64_t kSmallBuffer = int64_t{2} << 20;
  static constexpr int64_t kLargeBuffer = int64_t{20} << 20;
  static constexpr int64_t kMinLargeAlloc = int64_t{10} << 20;
  static constexpr int64_t kRoundLarge = int64_t{2} << 20;

  // The block size a request of `bytes` takes before any split, and the segment size a new segment for it has.
  static int64_t RoundSize(int64_t bytes);
  static int64_t SegmentSize(int64_t bytes);

  // A segment that exists before the replay (a recorded state): its blocks in address order, each with its size
  // and whether it is handed out. Returns the blocks' addresses. Error: sizes not positive or not summing to
  // the segment, or a segment that fits no pool (the small pool's are 2 MiB).
  Result<std::vector<int64_t>> AddSegment(int64_t segment_bytes,
                                          const std::vector<std::pair<int64_t, bool>>& blocks);
  // Hands out a block for `bytes` (>= 0) and returns its address.
  int64_t Allocate(int64_t bytes);
  // Returns the block at `address` to its pool. Error: no block handed out there.
  Status Free(int64_t address);

  int64_t allocated_bytes() const { return allocated_; }
  int64_t reserved_bytes() const { return reserved_; }
  int64_t peak_allocated_bytes() const { return peak_allocated_; }
  int64_t peak_reserved_bytes() const { return peak_reserved_; }
  int segments_created() const { return segments_created_; }  // by Allocate (not AddSegment)
  // The device's bytes for this allocator (above); 0 = unlimited. Releases happen from the next Allocate on.
  void set_limit_bytes(int64_t limit) { limit_ = std::max<int64_t>(0, limit); }
  int64_t limit_bytes() const { return limit_; }
  int releases() const { return releases_; }  // times the cached segments were released for a new one
  // Forget the peaks: from now on they start at the current bytes (torch.cuda.reset_peak_memory_stats).
  void ResetPeaks();

 private:
  // A block: its segment's blocks form a list in address order (prev / next handles, -1 at the ends).
  struct Block {
    int64_t address = 0;
    int64_t size = 0;
    int32_t prev = -1, next = -1;
    bool small = false;  // pool
    bool allocated = false;
  };
  // A pool's cached free blocks as (size, address), ordered: best fit is the first at least the request.
  using FreeList = std::set<std::pair<int64_t, int64_t>>;
  FreeList& Pool(bool small) { return small ? free_small_ : free_large_; }
  static void Insert(FreeList& pool, int64_t size, int64_t address);
  static void Erase(FreeList& pool, int64_t size, int64_t address);
  int32_t NewBlock(const Block& b);
  void DropBlock(int32_t handle);
  int32_t NewSegment(int64_t bytes, bool small);  // its one free block's handle
  void Account(int64_t allocated_delta, int64_t reserved_delta);
  // Frees every cached segment that is one free block (release_cached_blocks).
  void ReleaseCachedSegments();

  std::vector<Block> blocks_;                        // by handle
  std::vector<int32_t> spare_;                       // handles of dropped blocks, for reuse
  std::unordered_map<int64_t, int32_t> by_address_;  // every block's handle by its address
  FreeList free_small_, free_large_;
  int64_t next_address_ = int64_t{1} << 40;
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  int segments_created_ = 0;
  int64_t limit_ = 0;
  int releases_ = 0;
};

}  // namespace mmtwin

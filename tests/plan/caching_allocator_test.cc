// SPDX-License-Identifier: Apache-2.0
#include "core/plan/caching_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/allocator_trace.h"
#include "whatif/timeline_import.h"

namespace mmtwin {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(CachingAllocatorTest, RoundingAndSegmentSizesFollowTheAllocatorsConstants) {
  using A = CachingAllocatorModel;
  EXPECT_EQ(A::RoundSize(0), 512);
  EXPECT_EQ(A::RoundSize(8), 512);
  EXPECT_EQ(A::RoundSize(512), 512);
  EXPECT_EQ(A::RoundSize(513), 1024);
  EXPECT_EQ(A::SegmentSize(8), 2 * kMiB);          // small pool
  EXPECT_EQ(A::SegmentSize(kMiB), 2 * kMiB);       // 1 MiB is still small
  EXPECT_EQ(A::SegmentSize(kMiB + 1), 20 * kMiB);  // large, below 10 MiB
  EXPECT_EQ(A::SegmentSize(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(A::SegmentSize(10 * kMiB), 10 * kMiB);  // rounded up to 2 MiB from 10 MiB on
  EXPECT_EQ(A::SegmentSize(50855936), 52428800);    // 48.5 MiB -> 50 MiB (seen in the H200 traces)
}

TEST(CachingAllocatorTest, BestFitSplitsAndMergesWithinASegment) {
  CachingAllocatorModel a;
  const int64_t x = a.Allocate(50 * kMiB);
  EXPECT_EQ(a.reserved_bytes(), 50 * kMiB);
  const int64_t y = a.Allocate(8);
  EXPECT_EQ(a.reserved_bytes(), 52 * kMiB);  // a small segment of 2 MiB
  EXPECT_EQ(a.allocated_bytes(), 50 * kMiB + 512);
  ASSERT_TRUE(a.Free(x).ok());
  const int64_t z = a.Allocate(30 * kMiB);  // reuses x's block, split: 20 MiB stays cached
  EXPECT_EQ(z, x);
  const int64_t w = a.Allocate(20 * kMiB);  // the rest of x's segment, exactly
  EXPECT_EQ(w, x + 30 * kMiB);
  EXPECT_EQ(a.reserved_bytes(), 52 * kMiB);
  EXPECT_EQ(a.segments_created(), 2);
  // A larger request than any cached block: a new segment, whatever is free in total.
  ASSERT_TRUE(a.Free(z).ok());
  ASSERT_TRUE(a.Free(w).ok());  // merges with z's block: one 50 MiB block again
  const int64_t v = a.Allocate(50 * kMiB);
  EXPECT_EQ(v, x);
  EXPECT_EQ(a.segments_created(), 2);
  ASSERT_TRUE(a.Free(v).ok());
  a.Allocate(51 * kMiB);
  EXPECT_EQ(a.segments_created(), 3);
  EXPECT_EQ(a.peak_reserved_bytes(), 52 * kMiB + 52 * kMiB);
  ASSERT_TRUE(a.Free(y).ok());
  EXPECT_FALSE(a.Free(y).ok());  // twice
  EXPECT_FALSE(a.Free(12345).ok());
}

TEST(CachingAllocatorTest, ALargeBlockIsNotSplitForAnOneMiBRemainder) {
  CachingAllocatorModel a;
  const int64_t x = a.Allocate(12 * kMiB);  // segment 12 MiB
  ASSERT_TRUE(a.Free(x).ok());
  const int64_t y = a.Allocate(11 * kMiB);  // remainder exactly 1 MiB: not > 1 MiB, handed out whole
  EXPECT_EQ(y, x);
  EXPECT_EQ(a.allocated_bytes(), 12 * kMiB);
  ASSERT_TRUE(a.Free(y).ok());
  const int64_t z = a.Allocate(11 * kMiB - 512);  // remainder 1 MiB + 512 B: split
  EXPECT_EQ(a.allocated_bytes(), 11 * kMiB - 512);
  const int64_t r = a.Allocate(kMiB + 512);  // fits the rest exactly (large pool: above 1 MiB)
  EXPECT_EQ(r, z + 11 * kMiB - 512);
  EXPECT_EQ(a.segments_created(), 1);
}

TEST(CachingAllocatorTest, SmallAndLargePoolsDoNotServeEachOther) {
  CachingAllocatorModel a;
  const int64_t big = a.Allocate(30 * kMiB);
  ASSERT_TRUE(a.Free(big).ok());
  a.Allocate(4096);  // a small request takes a new 2 MiB segment, not a piece of the cached 30 MiB
  EXPECT_EQ(a.segments_created(), 2);
  EXPECT_EQ(a.reserved_bytes(), 32 * kMiB);
}

TEST(CachingAllocatorTest, AddSegmentKeepsItsBlocks) {
  CachingAllocatorModel a;
  auto blocks = a.AddSegment(48 * kMiB, {{32 * kMiB, true}, {16 * kMiB, false}});
  ASSERT_TRUE(blocks.ok()) << blocks.error().message();
  EXPECT_EQ(a.allocated_bytes(), 32 * kMiB);
  EXPECT_EQ(a.reserved_bytes(), 48 * kMiB);
  EXPECT_EQ(a.Allocate(16 * kMiB), (*blocks)[1]);  // the cached block serves a request
  EXPECT_EQ(a.segments_created(), 0);
  EXPECT_FALSE(a.AddSegment(48 * kMiB, {{32 * kMiB, true}}).ok());  // blocks do not fill the segment
}

// The six traces backend/gpu/memory_probe.py --trace recorded on an H200 (4 Llama-3-8B blocks, bf16, micro-batch
// sizes from equal to uniform +-75%, lognormal and bimodal; one and four micro-batches in flight): replayed event
// by event through the model from the state recording started in, the model creates the same number of
// segments and reaches the real allocator's reserved peak. The table beside them has the measured peaks.
TEST(CachingAllocatorTest, ReplaysTheRecordedH200TracesToTheirReservedPeaks) {
  const std::string dir = std::string(MMTWIN_SOURCE_DIR) + "/traces/clusters/profiles/h200-allocator-traces/";
  int n = 0;
  for (const char* run :
       {"equal-k4", "uniform0.25-k1", "uniform0.75-k4", "lognormal1.0-k1", "lognormal0.5-k4", "bimodal-k4"}) {
    const std::string path = dir + "trace-" + run + ".csv.gz";
    auto text = ReadTimelineFile(path);
    ASSERT_TRUE(text.ok()) << text.error().message();
    auto r = ReplayAllocatorTrace(*text, path);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_GT(r->events, 10000) << run;
    EXPECT_GT(r->traced_segments_created, 0) << run;
    EXPECT_EQ(r->model_segments_created, r->traced_segments_created) << run;
    EXPECT_EQ(r->model_peak_reserved_bytes, r->traced_peak_reserved_bytes) << run;
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST(CachingAllocatorTest, TraceErrorsNameTheLine) {
  auto bad = ReplayAllocatorTrace("seq,action,addr,size\n0,alloc,16,100\n1,free_completed,32,100\n", "t.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("t.csv:3"), std::string::npos) << bad.error().message();
  auto unknown = ReplayAllocatorTrace("seq,action,addr,size\n0,teleport,16,100\n", "t.csv");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("t.csv:2: action: unknown action 'teleport'"), std::string::npos)
      << unknown.error().message();
  EXPECT_FALSE(ReplayAllocatorTrace("a,b\n", "t.csv").ok());
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// The model's rules written the plainest way (an ordered map of blocks by address, an ordered set of free blocks
// per pool; the model's first implementation), as the brute-force reference of the model's faster bookkeeping:
// both must hand out the same addresses and reach the same bytes on any stream of requests and frees.
class ReferenceAllocator {
 public:
  int64_t Allocate(int64_t bytes) {
    using A = CachingAllocatorModel;
    const int64_t size = A::RoundSize(std::max<int64_t>(0, bytes));
    const bool small = size <= A::kSmallSize;
    auto& pool = small ? small_ : large_;
    auto it = pool.lower_bound({size, 0});
    if (it == pool.end()) {
      ++segments_;
      if (limit_ > 0 && reserved_ + A::SegmentSize(bytes) > limit_) Release();
      const int64_t seg = A::SegmentSize(bytes), address = next_;
      next_ += seg + A::kSmallBuffer;
      blocks_[address] = {seg, address, small, false};
      pool.insert({seg, address});
      reserved_ += seg;
      peak_reserved_ = std::max(peak_reserved_, reserved_);
      it = pool.find({seg, address});
    }
    const int64_t address = it->second;
    pool.erase(it);
    Block& b = blocks_[address];
    const int64_t rest = b.size - size;
    if (small ? rest >= A::kMinBlockSize : rest > A::kSmallSize) {
      blocks_[address + size] = {rest, b.segment, small, false};
      pool.insert({rest, address + size});
      b.size = size;
    }
    b.allocated = true;
    allocated_ += b.size;
    peak_allocated_ = std::max(peak_allocated_, allocated_);
    return address;
  }
  bool Free(int64_t address) {
    auto it = blocks_.find(address);
    if (it == blocks_.end() || !it->second.allocated) return false;
    Block& b = it->second;
    b.allocated = false;
    allocated_ -= b.size;
    auto& pool = b.small ? small_ : large_;
    if (auto n = std::next(it);
        n != blocks_.end() && n->second.segment == b.segment && !n->second.allocated) {
      pool.erase({n->second.size, n->first});
      b.size += n->second.size;
      blocks_.erase(n);
    }
    if (it != blocks_.begin()) {
      auto p = std::prev(it);
      if (p->second.segment == b.segment && !p->second.allocated) {
        pool.erase({p->second.size, p->first});
        p->second.size += b.size;
        blocks_.erase(it);
        it = p;
      }
    }
    pool.insert({it->second.size, it->first});
    return true;
  }
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0, limit_ = 0;
  int segments_ = 0;

 private:
  // release_cached_blocks: every free block that is its whole segment (its address is the segment's, and the
  // segment holds no other block) goes.
  void Release() {
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      const Block& b = it->second;
      auto next = std::next(it);
      const bool alone = b.segment == it->first && (next == blocks_.end() || next->second.segment != b.segment);
      if (!b.allocated && alone) {
        (b.small ? small_ : large_).erase({b.size, it->first});
        reserved_ -= b.size;
        it = blocks_.erase(it);
      } else {
        it = next;
      }
    }
  }
  struct Block {
    int64_t size, segment;
    bool small, allocated;
  };
  std::map<int64_t, Block> blocks_;
  std::set<std::pair<int64_t, int64_t>> small_, large_;
  int64_t next_ = int64_t{1} << 40;
};

TEST(CachingAllocatorTest, AgreesWithThePlainReferenceOnRandomStreams) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    // Sizes from 0 B to 96 MiB, log-uniform, some repeated exactly (as a replay's tensors are).
    std::uniform_real_distribution<double> log_size(0.0, std::log(96.0 * kMiB));
    // and the sizes at the rules' thresholds (the pools' 1 MiB, a 20 MiB segment's split margin, 10 MiB).
    std::vector<int64_t> repeated = {0,        512,           kMiB,      kMiB + 512, 2 * kMiB - 512,
                                     9 * kMiB, 10 * kMiB - 1, 10 * kMiB, 19 * kMiB,  19 * kMiB + 512};
    for (int i = 0; i < 8; ++i) repeated.push_back(static_cast<int64_t>(std::exp(log_size(rng))));
    CachingAllocatorModel model;
    ReferenceAllocator ref;
    // Half the seeds run under a device limit (release_cached_blocks on a segment past it).
    if (seed % 2 == 0) {
      model.set_limit_bytes(int64_t{2} << 30);
      ref.limit_ = int64_t{2} << 30;
    }
    std::vector<int64_t> live;
    for (int e = 0; e < 6000; ++e) {
      if (live.empty() || (live.size() < 400 && rng() % 100 < 55)) {
        const int64_t bytes = rng() % 3 == 0 ? repeated[rng() % repeated.size()]
                                             : static_cast<int64_t>(std::exp(log_size(rng))) - 1;
        const int64_t a = model.Allocate(bytes), b = ref.Allocate(bytes);
        ASSERT_EQ(a, b) << "seed " << seed << ", event " << e << ": allocate " << bytes;
        live.push_back(a);
      } else {
        const size_t k = rng() % live.size();
        ASSERT_TRUE(model.Free(live[k]).ok());
        ASSERT_TRUE(ref.Free(live[k]));
        live[k] = live.back();
        live.pop_back();
      }
      ASSERT_EQ(model.allocated_bytes(), ref.allocated_) << "seed " << seed << ", event " << e;
      ASSERT_EQ(model.reserved_bytes(), ref.reserved_) << "seed " << seed << ", event " << e;
    }
    EXPECT_EQ(model.peak_allocated_bytes(), ref.peak_allocated_);
    EXPECT_EQ(model.peak_reserved_bytes(), ref.peak_reserved_);
    EXPECT_EQ(model.segments_created(), ref.segments_);
    EXPECT_FALSE(model.Free(int64_t{1} << 40 | 7).ok());  // no block there
    if (seed % 2 == 0) {
      EXPECT_GT(model.releases(), 0) << "seed " << seed;  // the limit was reached
    }
  }
}

// Out of memory under a limit, by hand: a new segment past the limit first releases the cached segments that are
// one free block (release_cached_blocks before cudaMalloc's retry); a segment something is split from stays, and
// when releasing is not enough the segment is still created: the reserved peak above the limit is the shortfall.
TEST(CachingAllocatorTest, ASegmentPastTheLimitReleasesTheWholeFreeSegmentsFirst) {
  CachingAllocatorModel a;
  a.set_limit_bytes(100 * kMiB);
  const int64_t x = a.Allocate(60 * kMiB);  // segment A, 60 MiB
  ASSERT_TRUE(a.Free(x).ok());              // cached, whole
  a.Allocate(70 * kMiB);                    // no cached block fits: 60 + 70 > 100, A released first
  EXPECT_EQ(a.reserved_bytes(), 70 * kMiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 70 * kMiB);
  EXPECT_EQ(a.releases(), 1);
  // Without a limit the same requests keep A: 130 MiB reserved.
  CachingAllocatorModel unlimited;
  ASSERT_TRUE(unlimited.Free(unlimited.Allocate(60 * kMiB)).ok());
  unlimited.Allocate(70 * kMiB);
  EXPECT_EQ(unlimited.peak_reserved_bytes(), 130 * kMiB);
  EXPECT_EQ(unlimited.releases(), 0);
  // A segment split for a live block is not released: 30 MiB of A in use, its other 30 MiB cached; a 70 MiB
  // request passes the limit and finds nothing to release (130 MiB reserved: 30 MiB short).
  CachingAllocatorModel split;
  split.set_limit_bytes(100 * kMiB);
  ASSERT_TRUE(split.Free(split.Allocate(60 * kMiB)).ok());
  split.Allocate(30 * kMiB);  // best fit: A, split (30 MiB left > 1 MiB)
  split.Allocate(70 * kMiB);
  EXPECT_EQ(split.reserved_bytes(), 130 * kMiB);
  EXPECT_EQ(split.releases(), 1);
  // Small-pool segments are released the same way: a free 2 MiB small segment goes for a large segment past the
  // limit.
  CachingAllocatorModel small;
  small.set_limit_bytes(20 * kMiB);
  ASSERT_TRUE(small.Free(small.Allocate(4096)).ok());  // a 2 MiB small segment, whole again
  small.Allocate(19 * kMiB);                            // 2 + 20 > 20: the small segment goes
  EXPECT_EQ(small.reserved_bytes(), 20 * kMiB);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// A recorded trace of PyTorch's CUDA caching allocator (backend/gpu/memory_probe.py --trace:
// torch.cuda.memory._record_memory_history's events, after the state when recording started) replayed through
// core/plan/caching_allocator.h's model: the model's reserved peak against the one the real allocator reached,
// the check that the model follows the allocator's rules.
//
// The text is CSV with the header seq,action,addr,size and these actions: initial_segment (a segment that
// existed when recording started), initial_active_block / initial_inactive_block (its blocks in address order),
// alloc (a request of `size` bytes at `addr`), free_completed (the block at `addr` returned), segment_alloc /
// segment_free (the real allocator's cudaMalloc / cudaFree); free_requested, snapshot and oom are read past.
//
//   MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadTimelineFile("trace-uniform0.25-k1.csv.gz"));
//   MMTWIN_ASSIGN_OR_RETURN(AllocatorReplay r, ReplayAllocatorTrace(text, "trace-uniform0.25-k1.csv.gz"));
//   r.model_peak_reserved_bytes / double(r.traced_peak_reserved_bytes) - 1;   // the model's error
#pragma once

#include <cstdint>
#include <string>

#include "core/util/status.h"

namespace mmtwin {

struct AllocatorReplay {
  int64_t events = 0;                       // alloc and free_completed events replayed
  int64_t traced_start_reserved_bytes = 0;  // the initial segments
  int64_t traced_peak_reserved_bytes =
      0;                            // initial segments + the running sum of segment_alloc - segment_free
  int traced_segments_created = 0;  // segment_alloc events
  int64_t model_peak_reserved_bytes = 0;
  int64_t model_peak_allocated_bytes = 0;
  int model_segments_created = 0;
};

// Errors name `name`:line: a malformed row, an unknown action, a block freed that was never handed out.
Result<AllocatorReplay> ReplayAllocatorTrace(const std::string& csv_text, const std::string& name);

}  // namespace mmtwin

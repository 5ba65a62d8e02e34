// SPDX-License-Identifier: Apache-2.0
// When a rank's ops ran, on its own clock (rank_support.h: NowUs, microseconds), without making a GPU wait
// (no Torch types). A part takes a Mark where an op starts or ends; the marks become times when the iteration
// is over (Resolve), and the op recorder turns them into records (op_recorder.h).
//   CPU ranks    a mark is the host clock when it was taken: the work before it has run (Torch's CPU kernels
//                run on the calling thread), so Resolve has nothing to do.
//   GPU ranks    a mark is a CUDA event recorded on the current stream: it completes when the GPU has run the
//                work queued before it. Begin waits for the GPU (the iteration boundary, where the schedule
//                waits anyway), reads the host clock and records an anchor event; Resolve waits for the last
//                mark and places mark i at anchor_host_us + elapsed(anchor, i). Nothing between Begin and
//                Resolve waits for the GPU on the timeline's account.
// One thread (the rank's) takes marks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace mmtwin::backend {

class CudaEventPool;

struct Mark {
  int32_t i = -1;
};

class Timeline {
 public:
  // `cuda_device` < 0: the host clock; else CUDA events of that device (a CUDA build).
  explicit Timeline(int cuda_device = -1);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Drops the marks of the last iteration and starts anew (GPU: waits for the device, anchors the clock).
  void Begin();
  Mark Now();
  // Every mark taken since Begin() becomes a time (GPU: waits for the stream to pass the last one).
  void Resolve();
  // The time of `m` in this rank's NowUs() microseconds; valid from Resolve() to the next Begin().
  double Us(Mark m) const;
  bool on_gpu() const { return cuda_device_ >= 0; }

 private:
  int cuda_device_;
  std::unique_ptr<CudaEventPool> events_;
  double anchor_us_ = 0;
  std::vector<double> us_;  // per mark: the host time (CPU) or, once resolved, the placed time (GPU)
  size_t count_ = 0;        // marks since Begin (GPU: event 0 is the anchor, mark i is event i + 1)
};

}  // namespace mmtwin::backend

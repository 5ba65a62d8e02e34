// SPDX-License-Identifier: Apache-2.0
// Marks on the host clock or on CUDA events (timeline.h).
#include "backend/timeline.h"

#include <stdexcept>

#include "backend/cuda_support.h"
#include "backend/rank_support.h"

namespace mmtwin::backend {

Timeline::Timeline(int cuda_device) : cuda_device_(cuda_device) {
  if (cuda_device_ >= 0) {
    events_ = MakeCudaEventPool(cuda_device_);
    if (!events_) throw std::runtime_error("CUDA events need a CUDA build of mmtwin-train");
  }
}

Timeline::~Timeline() = default;

void Timeline::Begin() {
  count_ = 0;
  us_.clear();
  if (!events_) return;
  CudaSynchronize(cuda_device_);
  anchor_us_ = NowUs();
  events_->Record(0);
}

Mark Timeline::Now() {
  const Mark m{static_cast<int32_t>(count_++)};
  if (events_)
    events_->Record(count_);  // event 0 is the anchor
  else
    us_.push_back(NowUs());
  return m;
}

void Timeline::Resolve() {
  if (!events_ || count_ == 0) return;
  events_->Synchronize(count_);
  us_.resize(count_);
  for (size_t i = 0; i < count_; ++i) us_[i] = anchor_us_ + 1000.0 * events_->ElapsedMs(0, i + 1);
}

double Timeline::Us(Mark m) const {
  if (m.i < 0 || static_cast<size_t>(m.i) >= us_.size())
    throw std::logic_error("Timeline::Us: a mark that was not taken (or not resolved) in this iteration");
  return us_[static_cast<size_t>(m.i)];
}

}  // namespace mmtwin::backend

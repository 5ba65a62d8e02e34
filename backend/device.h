// SPDX-License-Identifier: Apache-2.0
// The compute device of a backend process (Torch types): the CPU (the default), or one CUDA GPU per rank
// (`backend.device: cuda`, the rank's LOCAL_RANK; a CUDA build, MMTWIN_WITH_CUDA). Chosen once per process,
// before any layer is built (rank.cc, reference.cc); everything that makes tensors asks here, so the model, the
// pipeline's buffers and the reducer's buckets follow the device without knowing it.
//
// Generators: a CPU generator on the CPU; on a GPU a CUDA (Philox) generator with the same seed, so draws are
// reproducible per (seed, stream) on each device but differ between the two (the single-process reference is
// a CPU check).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace mmtwin::backend {

// Makes cuda:`index` this process's device (and the current CUDA device). Throws std::runtime_error when the
// build has no CUDA or the GPU is not there; the message names the index and how many GPUs there are.
void UseCudaDevice(int index);

bool OnCuda();    // the compute device is a GPU
int CudaIndex();  // its index (-1 on the CPU)
at::Device ComputeDevice();

// fp32, int64 and bool tensors on the compute device.
at::TensorOptions FloatOptions();
at::TensorOptions LongOptions();
at::TensorOptions BoolOptions();

// A generator on the compute device seeded with `seed`.
at::Generator MakeGenerator(uint64_t seed);

// backend.autocast: bf16 makes every AutocastScope run its forwards under Torch's autocast in bf16 on the compute
// device (off by default).
void UseAutocastBf16(bool on);
// Autocast on for its lifetime when UseAutocastBf16(true); at its end off, and the cache of cast weights cleared
// (a forward region, as `with torch.autocast(...)` around one micro-batch's forward: the casts of weights that the
// optimizer updates are not reused across iterations). One thread: autocast's state is thread-local.
class AutocastScope {
 public:
  AutocastScope();
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool on_ = false;
};

}  // namespace mmtwin::backend

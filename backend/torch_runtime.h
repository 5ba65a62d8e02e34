// SPDX-License-Identifier: Apache-2.0
// The process-wide LibTorch settings of a backend process (a rank or the reference), and its memory count.
// No Torch types here; torch_runtime.cc wraps LibTorch's CPU allocator.
//
// Memory: InstallCountingAllocator() puts a counting wrapper around the default CPU allocator, so every tensor's
// bytes are counted while they are allocated: LiveBytes() now, PeakBytes() the most since the last ResetPeak(),
// and a window's peak (StartWindow / WindowGrowth: a layer's backward working memory, the most it allocated
// above what was live when it started). Without a wrappable allocator (no raw deleter) every count stays 0.
// The counters are atomics: any thread may allocate.
// GPU ranks (UseCudaMemory): the same functions read the CUDA caching allocator's statistics instead (bytes of
// live tensors, cuda_support.h), the window by resetting its peak after folding it into PeakBytes().
#pragma once

#include <cstdint>

namespace mmtwin::backend {

// Torch's intra-op threads and, when the BLAS behind Torch is OpenBLAS (Debian's libblas.so.3 alternative),
// OpenBLAS's pool (which at::set_num_threads does not reach); oneDNN (mkldnn) is turned off: Debian's Torch
// 1.13 returned nondeterministic audio conv1d gradients with it.
void SetThreads(int n);

// Idempotent: installs the counting wrapper once per process.
void InstallCountingAllocator();

// From now on the counts are the CUDA caching allocator's on `device` (a GPU rank).
void UseCudaMemory(int device);

int64_t LiveBytes();  // bytes of the tensors allocated now
int64_t PeakBytes();  // the most live bytes since the last ResetPeak()
void ResetPeak();     // peak := live

// Starts a window (its peak := live) and returns the live bytes at its start.
int64_t StartWindow();
// The window's peak above `start` (StartWindow's value), at least 0.
int64_t WindowGrowth(int64_t start);

// GPU ranks: the most the caching allocator reserved since the last ResetPeak() (0 on CPU ranks).
int64_t PeakReservedBytes();

}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// What the backend asks of CUDA, without Torch or CUDA types (cuda_support.cc; the CUDA parts are compiled only
// with MMTWIN_WITH_CUDA, and without it every query answers "not built": CudaBuilt() false, 0 GPUs).
//   the machine    how many GPUs, and a line naming the GPU, its memory, the driver and the CUDA runtime
//   memory         the CUDA caching allocator's statistics: bytes allocated (live tensors, as the CPU counting
//                  allocator counts them) and reserved (what the allocator holds from cudaMalloc), now and peak
//   events         CUDA events on the current stream, for timing without waiting for the GPU (timeline.h)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mmtwin::backend {

bool CudaBuilt();
int CudaDeviceCount();  // 0 without CUDA (or without a GPU)
// "NVIDIA H200 (139.8 GiB, compute capability 9.0), driver 580.159.04 (CUDA 13.0), runtime 13.0, torch 2.11.0"
std::string CudaDescription(int device);
// The parts a measured run's machine record keeps (core/records/records.h MachineRecord): the device's name
// ("NVIDIA H200"; "" without CUDA), the driver's CUDA version ("13.0"; ""), and the LibTorch version.
std::string CudaDeviceName(int device);
std::string CudaDriverVersion();
std::string TorchVersion();
void CudaSetDevice(int device);
void CudaSynchronize(int device);

struct CudaMemory {
  int64_t allocated_bytes = 0, peak_allocated_bytes = 0;  // live tensors (peak since the last reset)
  int64_t reserved_bytes = 0, peak_reserved_bytes = 0;    // held by the caching allocator
};
CudaMemory CudaMemoryStats(int device);
void CudaResetPeakMemory(int device);  // peaks := current

// Timing events of one device, recorded on its current stream in order. Record(i) (re)uses event i, making the
// pool larger as needed; ElapsedMs(a, b) is the time between events a and b once the stream has passed both
// (Synchronize(i) waits for event i).
class CudaEventPool {
 public:
  virtual ~CudaEventPool() = default;
  virtual void Record(size_t i) = 0;
  virtual void Synchronize(size_t i) = 0;
  virtual double ElapsedMs(size_t a, size_t b) = 0;
};
// nullptr without CUDA.
std::unique_ptr<CudaEventPool> MakeCudaEventPool(int device);

}  // namespace mmtwin::backend

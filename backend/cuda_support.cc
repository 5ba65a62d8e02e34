// SPDX-License-Identifier: Apache-2.0
// CUDA queries of the backend (cuda_support.h): the caching allocator's statistics, events, the device's
// description. Everything CUDA-specific of mmtwin-train is here and in device.cc's generator.
#include "backend/cuda_support.h"

#include <torch/csrc/api/include/torch/version.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

#ifdef MMTWIN_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace mmtwin::backend {

#ifdef MMTWIN_WITH_CUDA

namespace {

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

std::string CudaVersionText(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

class Pool final : public CudaEventPool {
 public:
  explicit Pool(int device) : device_(device) {}
  void Record(size_t i) override {
    while (events_.size() <= i) events_.push_back(std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault));
    events_[i]->record(at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)));
  }
  void Synchronize(size_t i) override { events_.at(i)->synchronize(); }
  double ElapsedMs(size_t a, size_t b) override { return events_.at(a)->elapsed_time(*events_.at(b)); }

 private:
  int device_;
  std::vector<std::unique_ptr<at::cuda::CUDAEvent>> events_;
};

}  // namespace

bool CudaBuilt() { return true; }

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string CudaDescription(int device) {
  cudaDeviceProp p{};
  Check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  char mem[64];
  std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024 * 1024));
  return std::string(p.name) + " (" + mem + ", compute capability " + std::to_string(p.major) + "." +
         std::to_string(p.minor) + ", " + std::to_string(p.multiProcessorCount) + " SMs), driver API " +
         CudaVersionText(driver) + ", runtime " + CudaVersionText(runtime) + ", torch " + TORCH_VERSION;
}

std::string CudaDeviceName(int device) {
  cudaDeviceProp p{};
  Check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  return p.name;
}

std::string CudaDriverVersion() {
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);
  return driver > 0 ? CudaVersionText(driver) : "";
}

void CudaSetDevice(int device) { c10::cuda::set_device(static_cast<c10::DeviceIndex>(device)); }

void CudaSynchronize(int device) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

CudaMemory CudaMemoryStats(int device) {
  const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  CudaMemory m;
  // Index 0: StatType::AGGREGATE (both pools), in every Torch since 1.x.
  m.allocated_bytes = s.allocated_bytes[0].current;
  m.peak_allocated_bytes = s.allocated_bytes[0].peak;
  m.reserved_bytes = s.reserved_bytes[0].current;
  m.peak_reserved_bytes = s.reserved_bytes[0].peak;
  return m;
}

void CudaResetPeakMemory(int device) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

std::unique_ptr<CudaEventPool> MakeCudaEventPool(int device) { return std::make_unique<Pool>(device); }

#else  // no CUDA in this build

bool CudaBuilt() { return false; }
int CudaDeviceCount() { return 0; }
std::string CudaDescription(int) { return std::string("no CUDA (a CPU build), torch ") + TORCH_VERSION; }
std::string CudaDeviceName(int) { return ""; }
std::string CudaDriverVersion() { return ""; }
void CudaSetDevice(int) { throw std::runtime_error("this mmtwin-train was built without CUDA"); }
void CudaSynchronize(int) {}
CudaMemory CudaMemoryStats(int) { return {}; }
void CudaResetPeakMemory(int) {}
std::unique_ptr<CudaEventPool> MakeCudaEventPool(int) { return nullptr; }

#endif

std::string TorchVersion() { return TORCH_VERSION; }

}  // namespace mmtwin::backend

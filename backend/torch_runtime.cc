// SPDX-License-Identifier: Apache-2.0
// Threads, oneDNN and the counting CPU allocator of a backend process (torch_runtime.h).
#include "backend/torch_runtime.h"

#include "backend/cuda_support.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/api/include/torch/version.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

namespace mmtwin::backend {
namespace {

std::atomic<int64_t> g_live_bytes{0}, g_peak_bytes{0};
// The peak since the last StartWindow().
std::atomic<int64_t> g_window_peak_bytes{0};

// The default allocator's deleter frees the pointer itself (context == data, which raw_allocate requires), so
// the sizes live in a table keyed by the pointer.
std::mutex g_sizes_mu;
std::unordered_map<void*, size_t>* g_sizes = new std::unordered_map<void*, size_t>();
c10::DeleterFnPtr g_inner_delete = nullptr;

void DeleteCounted(void* ptr) {
  if (ptr) {
    std::lock_guard<std::mutex> lock(g_sizes_mu);
    auto it = g_sizes->find(ptr);
    if (it != g_sizes->end()) {
      g_live_bytes.fetch_sub(static_cast<int64_t>(it->second), std::memory_order_relaxed);
      g_sizes->erase(it);
    }
  }
  g_inner_delete(ptr);
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) { g_inner_delete = inner->raw_deleter(); }
  // LibTorch 2.x: allocate is not const, and an allocator copies its own data (copy_data).
#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) override {
#else
  c10::DataPtr allocate(size_t n) const override {
#endif
    c10::DataPtr p = inner_->allocate(n);
    void* data = p.release_context();
    if (data) {
      std::lock_guard<std::mutex> lock(g_sizes_mu);
      (*g_sizes)[data] = n;
    }
    const int64_t live = g_live_bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed) + n;
    int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
    while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
    }
    int64_t window = g_window_peak_bytes.load(std::memory_order_relaxed);
    while (live > window && !g_window_peak_bytes.compare_exchange_weak(window, live)) {
    }
    return {data, data, &DeleteCounted, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &DeleteCounted; }
#if TORCH_VERSION_MAJOR >= 2
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif

 private:
  c10::Allocator* inner_;
};

}  // namespace

void SetThreads(int n) {
  // oneDNN (mkldnn) convolutions are off: Debian's Torch 1.13 returns nondeterministic garbage in the audio front
  // end's conv1d weight and bias gradients with them (seen as 1e17..1e35 values from run to run; the native
  // kernels agree with the reference every time: BackendOracle.Audio*).
  at::globalContext().setUserEnabledMkldnn(false);
  at::set_num_threads(n);
  using SetFn = void (*)(int);
  if (auto f = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(n);
}

void InstallCountingAllocator() {
  if (!c10::GetDefaultCPUAllocator()->raw_deleter()) return;  // cannot wrap: no peak memory
  static CountingAllocator* alloc = new CountingAllocator(c10::GetDefaultCPUAllocator());
  c10::SetCPUAllocator(alloc, /*priority=*/100);
}

namespace {
// GPU ranks: the device, and the peaks folded in before each reset of the allocator's peak (a window).
int g_cuda_memory_device = -1;
int64_t g_cuda_peak_bytes = 0, g_cuda_peak_reserved_bytes = 0;

void FoldCudaPeaks() {
  const CudaMemory m = CudaMemoryStats(g_cuda_memory_device);
  g_cuda_peak_bytes = std::max(g_cuda_peak_bytes, m.peak_allocated_bytes);
  g_cuda_peak_reserved_bytes = std::max(g_cuda_peak_reserved_bytes, m.peak_reserved_bytes);
}
}  // namespace

void UseCudaMemory(int device) { g_cuda_memory_device = device; }

int64_t LiveBytes() {
  if (g_cuda_memory_device >= 0) return CudaMemoryStats(g_cuda_memory_device).allocated_bytes;
  return g_live_bytes.load(std::memory_order_relaxed);
}

int64_t PeakBytes() {
  if (g_cuda_memory_device >= 0) {
    FoldCudaPeaks();
    return g_cuda_peak_bytes;
  }
  return g_peak_bytes.load();
}

int64_t PeakReservedBytes() {
  if (g_cuda_memory_device < 0) return 0;
  FoldCudaPeaks();
  return g_cuda_peak_reserved_bytes;
}

void ResetPeak() {
  if (g_cuda_memory_device >= 0) {
    CudaResetPeakMemory(g_cuda_memory_device);
    const CudaMemory m = CudaMemoryStats(g_cuda_memory_device);
    g_cuda_peak_bytes = m.allocated_bytes;
    g_cuda_peak_reserved_bytes = m.reserved_bytes;
    return;
  }
  g_peak_bytes.store(g_live_bytes.load());
}

int64_t StartWindow() {
  if (g_cuda_memory_device >= 0) {
    FoldCudaPeaks();
    CudaResetPeakMemory(g_cuda_memory_device);
    return CudaMemoryStats(g_cuda_memory_device).allocated_bytes;
  }
  const int64_t live = g_live_bytes.load(std::memory_order_relaxed);
  g_window_peak_bytes.store(live, std::memory_order_relaxed);
  return live;
}

int64_t WindowGrowth(int64_t start) {
  if (g_cuda_memory_device >= 0)
    return std::max<int64_t>(0, CudaMemoryStats(g_cuda_memory_device).peak_allocated_bytes - start);
  return std::max<int64_t>(0, g_window_peak_bytes.load(std::memory_order_relaxed) - start);
}

}  // namespace mmtwin::backend

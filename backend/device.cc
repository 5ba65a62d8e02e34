// SPDX-License-Identifier: Apache-2.0
// The compute device of a backend process (device.h).
#include "backend/device.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/api/include/torch/version.h>

#include <stdexcept>
#include <string>

#include "backend/cuda_support.h"

#ifdef MMTWIN_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace mmtwin::backend {
namespace {
int g_cuda_index = -1;  // set once, before any other thread of the rank starts
bool g_autocast_bf16 = false;

// Torch 2.4 made autocast's switches per device type; 1.x had one per device kind.
void SetAutocast(bool on) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  const at::DeviceType type = OnCuda() ? at::kCUDA : at::kCPU;
  if (on) at::autocast::set_autocast_dtype(type, at::kBFloat16);
  at::autocast::set_autocast_enabled(type, on);
#else
  if (OnCuda()) {
    if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(on);
  } else {
    if (on) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(on);
  }
#endif
}
}  // namespace

void UseCudaDevice(int index) {
  if (!CudaBuilt())
    throw std::runtime_error(
        "backend.device: cuda needs a CUDA build of mmtwin-train (-DMMTWIN_WITH_CUDA=ON, "
        "backend/README.md); this one is a CPU build");
  const int n = CudaDeviceCount();
  if (index < 0 || index >= n)
    throw std::runtime_error("backend.device: cuda: this rank's GPU (LOCAL_RANK " + std::to_string(index) +
                             ") is not there: the process sees " + std::to_string(n) + " GPU(s)");
  CudaSetDevice(index);
  g_cuda_index = index;
  // The first CUDA tensor initialises Torch's CUDA state, the caching allocator among it (whose statistics the
  // memory counts read before any layer exists).
  (void)at::empty({1}, FloatOptions());
}

bool OnCuda() { return g_cuda_index >= 0; }
int CudaIndex() { return g_cuda_index; }

at::Device ComputeDevice() {
  return OnCuda() ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(g_cuda_index)) : at::Device(at::kCPU);
}

at::TensorOptions FloatOptions() { return at::TensorOptions().dtype(at::kFloat).device(ComputeDevice()); }
at::TensorOptions LongOptions() { return at::TensorOptions().dtype(at::kLong).device(ComputeDevice()); }
at::TensorOptions BoolOptions() { return at::TensorOptions().dtype(at::kBool).device(ComputeDevice()); }

at::Generator MakeGenerator(uint64_t seed) {
#ifdef MMTWIN_WITH_CUDA
  if (OnCuda()) {
    at::Generator g = at::cuda::detail::createCUDAGenerator(static_cast<c10::DeviceIndex>(g_cuda_index));
    g.set_current_seed(seed);
    return g;
  }
#endif
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

void UseAutocastBf16(bool on) { g_autocast_bf16 = on; }

AutocastScope::AutocastScope() : on_(g_autocast_bf16) {
  if (on_) SetAutocast(true);
}

AutocastScope::~AutocastScope() {
  if (!on_) return;
  SetAutocast(false);
  at::autocast::clear_cache();
}

}  // namespace mmtwin::backend

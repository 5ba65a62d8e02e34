// SPDX-License-Identifier: Apache-2.0
// Gloo and NCCL process groups behind one type (comm.h).
#include "backend/comm.h"

#include <stdexcept>

#ifdef MMTWIN_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef MMTWIN_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace mmtwin::backend {

bool CommBuilt(CommKind kind) {
#ifdef MMTWIN_WITH_GLOO
  if (kind == CommKind::kGloo) return true;
#endif
#ifdef MMTWIN_WITH_NCCL
  if (kind == CommKind::kNccl) return true;
#endif
  return false;
}

void ShutdownCommGroup(const CommGroupPtr& group) {
#ifdef MMTWIN_WITH_NCCL
  if (auto* nccl = dynamic_cast<c10d::ProcessGroupNCCL*>(group.get())) nccl->shutdown();
#endif
  (void)group;
}

const char* CommName(CommKind kind) { return kind == CommKind::kNccl ? "nccl" : "gloo"; }

CommGroupPtr MakeCommGroup(CommKind kind, const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           std::chrono::milliseconds timeout, bool loopback) {
#ifdef MMTWIN_WITH_GLOO
  if (kind == CommKind::kGloo) {
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    opts->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                     : c10d::ProcessGroupGloo::createDefaultDevice());
    opts->threads = 2;
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
  }
#endif
#ifdef MMTWIN_WITH_NCCL
  if (kind == CommKind::kNccl) {
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
  }
#endif
  (void)store, (void)rank, (void)size, (void)timeout, (void)loopback;
  throw std::runtime_error(std::string("this mmtwin-train was built without ") + CommName(kind) +
                           (kind == CommKind::kNccl
                                ? " (configure with -DMMTWIN_WITH_NCCL=ON and a CUDA LibTorch)"
                                : " (configure with -DMMTWIN_WITH_GLOO=ON)"));
}

}  // namespace mmtwin::backend

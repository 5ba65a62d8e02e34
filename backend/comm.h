// SPDX-License-Identifier: Apache-2.0
// The process groups of a rank (Torch types): one type for every group whatever carries it, Gloo over TCP (CPU
// ranks, and the control group of GPU ranks) or NCCL (one GPU per rank, MMTWIN_WITH_NCCL). The parts
// (pipeline.h, grad_reducer.h, optimizer.h) only call the collectives every c10d backend has: send / recv,
// allreduce, allgather, alltoall_base, barrier.
//
// LibTorch 1.x calls the common base of the backends c10d::ProcessGroup; 2.x calls it c10d::Backend (and
// ProcessGroup wraps several of them). CommGroup names whichever this Torch has.
#pragma once

#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace mmtwin::backend {

#if TORCH_VERSION_MAJOR >= 2
using CommGroup = c10d::Backend;
#else
using CommGroup = c10d::ProcessGroup;
#endif
using CommGroupPtr = c10::intrusive_ptr<CommGroup>;

// Which library carries a group.
enum class CommKind { kGloo, kNccl };

// Whether this build has the kind (Gloo: MMTWIN_WITH_GLOO, the default; NCCL: MMTWIN_WITH_NCCL).
bool CommBuilt(CommKind kind);

// A group of `size` ranks (this one `rank`) over `store`, collectives and receives waiting at most `timeout`.
// Gloo: `loopback` binds to 127.0.0.1 (a single-machine job), else to the host's name. NCCL: this process's
// current CUDA device. Throws std::runtime_error when the kind is not built.
CommGroupPtr MakeCommGroup(CommKind kind, const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           std::chrono::milliseconds timeout, bool loopback);

// Ends an NCCL group's communicators before the process exits (Torch 2.x warns, and may hang, when a
// ProcessGroupNCCL is destroyed without it); nothing for Gloo or a null group.
void ShutdownCommGroup(const CommGroupPtr& group);

// "gloo" / "nccl".
const char* CommName(CommKind kind);

}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// How much memory this process may use, so that a plan too large for the machine is refused before its big
// structures are allocated (driver/planner.h, EstimatePlanMemory) instead of growing until the kernel or
// std::bad_alloc ends the process.
//
//   if (need_bytes > ProcessMemoryLimitBytes()) return Error("... needs " + FormatBytes(need_bytes) + ...);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mmtwin {

// The smallest of: physical memory (MemTotal in /proc/meminfo), the address-space and data limits (ulimit -v,
// ulimit -d; RLIMIT_AS is ignored under AddressSanitizer, which reserves terabytes of address space), and the
// cgroup's memory limit (v2 memory.max, v1 memory.limit_in_bytes), and the environment variable
// MMTWIN_MEMORY_LIMIT_BYTES when set (a smaller budget on a shared machine). INT64_MAX when none can be read.
int64_t ProcessMemoryLimitBytes();

// Asks the kernel for transparent huge pages behind [p, p + bytes) (the 2 MiB-aligned part of it), before the
// pages are first touched: fewer page faults and TLB misses for a large array read at random (per-sample sizes
// of a 20M-sample trace). A hint: nothing happens where THP is off or the range is small.
void AdviseHugePages(const void* p, size_t bytes);

// "17.2 GB" (decimal units, 3 significant digits), "512 MB", "800 bytes".
std::string FormatBytes(double bytes);

}  // namespace mmtwin

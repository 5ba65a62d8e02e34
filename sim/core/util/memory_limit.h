// How much memory this process may use, so that a plan too large for the machine is refused before its big
// structures are allocated (core/driver/planner.h, EstimatePlanMemory) instead of growing until the kernel or
// std::bad_alloc ends the process.
//
//   if (need_bytes > ProcessMemoryLimitBytes()) return Error("... needs " + FormatBytes(need_bytes) + ...);
#pragma once

#include <cstdint>
#include <string>

namespace mmtwin {

// The smallest of: physical memory (MemTotal in /proc/meminfo), the address-space and data limits (ulimit -v,
// ulimit -d; RLIMIT_AS is ignored under AddressSanitizer, which reserves terabytes of address space), and the
// cgroup's memory limit (v2 memory.max, v1 memory.limit_in_bytes), and the environment variable
// MMTWIN_MEMORY_LIMIT_BYTES when set (a smaller budget on a shared machine). INT64_MAX when none can be read.
int64_t ProcessMemoryLimitBytes();

// "17.2 GB" (decimal units, 3 significant digits), "512 MB", "800 bytes".
std::string FormatBytes(double bytes);

}  // namespace mmtwin

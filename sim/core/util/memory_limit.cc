// SPDX-License-Identifier: Apache-2.0
// The process's memory limit; see memory_limit.h.
#include "core/util/memory_limit.h"

#include <sys/mman.h>

#include "core/util/sanitizers.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace mmtwin {
namespace {

// First whitespace-separated number in a file ("max" and unreadable files give no limit).
int64_t ReadLimit(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::numeric_limits<int64_t>::max();
  try {
    const long long v = std::stoll(word);
    return v > 0 ? v : std::numeric_limits<int64_t>::max();
  } catch (...) {
    return std::numeric_limits<int64_t>::max();
  }
}

int64_t MemTotalBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("MemTotal:", 0) == 0) {
      std::istringstream ss(line.substr(9));
      long long kb = 0;
      if (ss >> kb && kb > 0) return kb * 1024;
    }
  return std::numeric_limits<int64_t>::max();
}

int64_t RLimit(int resource) {
  rlimit rl{};
  if (::getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
    return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::min<rlim_t>(rl.rlim_cur, std::numeric_limits<int64_t>::max()));
}

}  // namespace

int64_t ProcessMemoryLimitBytes() {
  int64_t limit = MemTotalBytes();
  if (const char* env = std::getenv("MMTWIN_MEMORY_LIMIT_BYTES")) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end && *end == 0 && v > 0) limit = std::min<int64_t>(limit, v);
  }
  if (!kAddressSanitizer) limit = std::min(limit, RLimit(RLIMIT_AS));
  limit = std::min(limit, RLimit(RLIMIT_DATA));
  limit = std::min(limit, ReadLimit("/sys/fs/cgroup/memory.max"));
  limit = std::min(limit, ReadLimit("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  return limit;
}

std::string FormatBytes(double bytes) {
  char buf[32];
  if (bytes < 1e3) {
    std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  } else {
    const char* units[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
    int u = 0;
    double v = bytes / 1e3;
    while (v >= 999.5 && u < 5) {
      v /= 1e3;
      ++u;
    }
    std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
  }
  return buf;
}

void AdviseHugePages(const void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (p == nullptr || bytes < 2 * kHuge) return;
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (b > a) ::madvise(reinterpret_cast<void*>(a), b - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace mmtwin

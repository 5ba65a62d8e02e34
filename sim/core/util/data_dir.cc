// SPDX-License-Identifier: Apache-2.0
// Data folder lookup (data_dir.h).
#include "core/util/data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef MMTWIN_DATA_DIR
#define MMTWIN_DATA_DIR "traces"
#endif

namespace mmtwin {

std::string DataDir() {
  namespace fs = std::filesystem;
  const char* env = std::getenv("MMTWIN_DATA_DIR");
  if (env != nullptr && env[0] != '\0') return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "mmtwin";
    if (fs::is_directory(installed / "models", ec)) return installed.string();
  }
  return MMTWIN_DATA_DIR;
}

}  // namespace mmtwin

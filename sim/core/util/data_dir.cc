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
#ifdef MMTWIN_INSTALLED_DATA_DIR
  // A program linking the installed libraries (not in <prefix>/bin): the source tree while it exists, then the
  // install prefix's data.
  if (!fs::is_directory(fs::path(MMTWIN_DATA_DIR) / "models", ec) &&
      fs::is_directory(fs::path(MMTWIN_INSTALLED_DATA_DIR) / "models", ec))
    return MMTWIN_INSTALLED_DATA_DIR;
#endif
  return MMTWIN_DATA_DIR;
}

}  // namespace mmtwin

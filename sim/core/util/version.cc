// SPDX-License-Identifier: Apache-2.0
#include "core/util/version.h"

#include "mmtwin_version_info.h"  // generated at build time: MMTWIN_VERSION, MMTWIN_GIT_DESCRIBE

namespace mmtwin {

std::string_view MmtwinVersion() { return MMTWIN_VERSION; }

std::string_view MmtwinCommit() { return MMTWIN_GIT_DESCRIBE; }

std::string VersionLine(std::string_view program) {
  const std::string_view commit = MmtwinCommit();
  return std::string(program) + " " + std::string(MmtwinVersion()) + " (commit " +
         std::string(commit.empty() ? "unknown" : commit) + ")";
}

}  // namespace mmtwin

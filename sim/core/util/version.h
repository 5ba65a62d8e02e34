// SPDX-License-Identifier: Apache-2.0
// The version of mmtwin and the commit it was built from: what `--version` of every program prints (mmtwin,
// mmtwin-train, mmtwin-gui, mmtwin-report) and the commit a report names. The one owner of both; defined in the
// library mmtwin_version (sim/CMakeLists.txt), whose generated header cmake/version_info.cmake rewrites at every
// build when the commit changes.
#pragma once

#include <string>
#include <string_view>

namespace mmtwin {

// The CMake project version, "0.1.0".
std::string_view MmtwinVersion();

// `git describe --always --dirty --tags` of the source tree at build time ("ea9f012", "ea9f012-dirty"); without
// git the build's MMTWIN_COMMIT environment variable; "" when neither was known.
std::string_view MmtwinCommit();

// "PROGRAM VERSION (commit C)", C = MmtwinCommit() or "unknown": the line every --version prints.
std::string VersionLine(std::string_view program);

}  // namespace mmtwin

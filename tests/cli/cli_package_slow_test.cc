// SPDX-License-Identifier: Apache-2.0
// The installed CMake package (issue 33, item 7; sim/CMakeLists.txt): `cmake --install` puts the libraries, their
// headers and mmtwinConfig.cmake under the prefix; a project outside the tree (tests/cli/package_consumer) finds
// them with find_package(mmtwin), builds against mmtwin::driver, and its Simulate gives byte for byte the run
// summary the installed CLI prints for the same scenario, on the installed data only (MMTWIN_DATA_DIR = the
// prefix's share/mmtwin). With SimGrid in the build, the SimGrid engine comes with the package too.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using mmtwin::testing::Shell;

std::string Quote(const fs::path& p) { return "'" + p.string() + "'"; }

TEST(CliPackageTest, AProjectOutsideTheTreeSimulatesThroughTheInstalledPackage) {
  const fs::path build = fs::path(MMTWIN_CLI).parent_path().parent_path();
  const fs::path prefix = fs::path(::testing::TempDir()) / "mmtwin_package";
  fs::remove_all(prefix);
  const auto install = Shell("cmake --install " + Quote(build) + " --prefix " + Quote(prefix) + " 2>&1");
  ASSERT_EQ(install.code, 0) << install.out;
  for (const char* f :
       {"lib/cmake/mmtwin/mmtwinConfig.cmake", "lib/cmake/mmtwin/mmtwinConfigVersion.cmake",
        "lib/cmake/mmtwin/mmtwinTargets.cmake", "lib/libmmtwin_driver.a", "lib/libmmtwin_core.a",
        "include/mmtwin/driver/simulate.h", "include/mmtwin/core/plan/mesh.h"})
    EXPECT_TRUE(fs::is_regular_file(prefix / f)) << f;

  // Configured and built as a user would, with this build's compiler (and its sanitizers, whose runtime the
  // instrumented libraries need).
  const fs::path consumer = prefix / "consumer-build";
  const std::string flags = MMTWIN_PACKAGE_TEST_FLAGS;
  const auto configure =
      Shell("cmake -S " + Quote(fs::path(MMTWIN_SOURCE_DIR) / "tests/cli/package_consumer") + " -B " +
            Quote(consumer) + " -DCMAKE_PREFIX_PATH=" + Quote(prefix) + " -DCMAKE_CXX_COMPILER=" +
            Quote(MMTWIN_PACKAGE_TEST_CXX) + " -DCMAKE_BUILD_TYPE=Release '-DCMAKE_CXX_FLAGS=" + flags +
            "' '-DCMAKE_EXE_LINKER_FLAGS=" + flags + "' 2>&1");
  ASSERT_EQ(configure.code, 0) << configure.out;
  const auto compile = Shell("cmake --build " + Quote(consumer) + " 2>&1");
  ASSERT_EQ(compile.code, 0) << compile.out;

  const std::string data = "MMTWIN_DATA_DIR=" + Quote(prefix / "share/mmtwin") + " ";
  const std::string bin = Quote(prefix / "bin/mmtwin");
  struct Case {
    const char* scenario;
    const char* engine;
  };
  std::vector<Case> cases = {{"default.yaml", "analytic"}};
  if (fs::exists(build / "sim/engine")) cases.push_back({"contention.yaml", "simgrid"});
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.scenario) + " on " + c.engine);
    const fs::path scenario = prefix / "share/mmtwin/scenarios" / c.scenario;
    const auto lib = Shell("cd / && " + data + Quote(consumer / "consumer") + " " + Quote(scenario) + " " +
                           c.engine + " 2>&1");
    ASSERT_EQ(lib.code, 0) << lib.out;
    const auto cli = Shell("cd / && " + data + bin + " simulate " + Quote(scenario) + " --engine " +
                           c.engine + " --json -o " + Quote(prefix / "run") + " 2>/dev/null");
    ASSERT_EQ(cli.code, 0) << cli.out;
    EXPECT_NE(lib.out.find("\"iteration_time_us\""), std::string::npos) << lib.out;
    EXPECT_EQ(lib.out, cli.out);
  }
  // Errors are the library's values, not aborts.
  const auto bad =
      Shell(data + Quote(consumer / "consumer") + " " + Quote(prefix / "nowhere.yaml") + " 2>&1");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("nowhere.yaml"), std::string::npos) << bad.out;
  fs::remove_all(prefix);
}

}  // namespace

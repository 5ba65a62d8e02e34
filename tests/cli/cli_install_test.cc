// SPDX-License-Identifier: Apache-2.0
// Data lookup of an installed mmtwin (core/util/data_dir.h): the binary copied into PREFIX/bin finds the model
// zoo and cluster presets in PREFIX/share/mmtwin, without the source tree and without MMTWIN_DATA_DIR; the
// environment variable still wins.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using mmtwin::testing::Shell;

TEST(CliInstallTest, InstalledBinaryFindsItsDataNextToIt) {
  const fs::path prefix = fs::path(::testing::TempDir()) / "mmtwin_install";
  fs::remove_all(prefix);
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "share" / "mmtwin" / "models");
  fs::create_directories(prefix / "share" / "mmtwin" / "clusters");
  fs::copy_file(MMTWIN_CLI, prefix / "bin" / "mmtwin");
  fs::permissions(prefix / "bin" / "mmtwin", fs::perms::owner_all);
  const fs::path src = fs::path(MMTWIN_SOURCE_DIR) / "traces";
  // A zoo of one model (and its components) and one cluster: what the installed binary lists is what is
  // installed, not the source tree's zoo.
  for (const char* m : {"qwen2-1.5b"})
    fs::copy_file(src / "models" / (std::string(m) + ".yaml"),
                  prefix / "share/mmtwin/models" / (std::string(m) + ".yaml"));
  fs::copy_file(src / "clusters" / "a100-4x200g.yaml", prefix / "share/mmtwin/clusters/a100-4x200g.yaml");
  const std::string bin = (prefix / "bin" / "mmtwin").string();
  const auto models = Shell("env -u MMTWIN_DATA_DIR " + bin + " models 2>&1");
  ASSERT_EQ(models.code, 0) << models.out;
  EXPECT_NE(models.out.find((prefix / "share/mmtwin/models").string()), std::string::npos) << models.out;
  EXPECT_NE(models.out.find("qwen2-1.5b"), std::string::npos) << models.out;
  EXPECT_EQ(models.out.find("internvl-1.5-6b-20b"), std::string::npos) << models.out;
  const auto clusters = Shell("env -u MMTWIN_DATA_DIR " + bin + " clusters 2>&1");
  ASSERT_EQ(clusters.code, 0) << clusters.out;
  EXPECT_NE(clusters.out.find("a100-4x200g"), std::string::npos) << clusters.out;
  EXPECT_EQ(clusters.out.find("h100-8x400g"), std::string::npos) << clusters.out;
  // MMTWIN_DATA_DIR wins over the installed layout.
  const auto env = Shell("MMTWIN_DATA_DIR=" + src.string() + " " + bin + " models 2>&1");
  ASSERT_EQ(env.code, 0) << env.out;
  EXPECT_NE(env.out.find("internvl-1.5-6b-20b"), std::string::npos) << env.out;
  fs::remove_all(prefix);
}

// `cmake --install` of this build (issue 33, item 7): the programs (mmtwin-train where it is built), the data, the
// shipped scenarios, the documentation and the bash completion; the installed mmtwin runs a shipped scenario from
// the installed share folder with no source tree behind it, and its completion script is its own.
TEST(CliInstallTest, CmakeInstallPutsProgramsDataDocsAndCompletion) {
  const fs::path build = fs::path(MMTWIN_CLI).parent_path().parent_path();
  const fs::path prefix = fs::path(::testing::TempDir()) / "mmtwin_cmake_install";
  fs::remove_all(prefix);
  const auto install =
      Shell("cmake --install '" + build.string() + "' --prefix '" + prefix.string() + "' 2>&1");
  ASSERT_EQ(install.code, 0) << install.out;
  EXPECT_TRUE(fs::is_regular_file(prefix / "bin/mmtwin"));
  if (fs::exists(build / "backend/mmtwin-train"))
    EXPECT_TRUE(fs::is_regular_file(prefix / "bin/mmtwin-train"));
  if (fs::exists(build / "gui/mmtwin-report")) EXPECT_TRUE(fs::is_regular_file(prefix / "bin/mmtwin-report"));
  for (const char* f : {"share/mmtwin/models/llava-1.5-7b.yaml", "share/mmtwin/clusters/a100-4x200g.yaml",
                        "share/mmtwin/scenarios/default.yaml", "share/doc/mmtwin/README.md",
                        "share/doc/mmtwin/backend.md", "share/bash-completion/completions/mmtwin"})
    EXPECT_TRUE(fs::is_regular_file(prefix / f)) << f;
  EXPECT_FALSE(fs::exists(prefix / "share/mmtwin/scenarios/goldens"));
  // The installed program plans the installed default scenario with the installed zoo.
  const std::string bin = (prefix / "bin/mmtwin").string();
  const auto plan = Shell("cd / && env -u MMTWIN_DATA_DIR " + bin + " plan " +
                          (prefix / "share/mmtwin/scenarios/default.yaml").string() + " 2>&1");
  EXPECT_EQ(plan.code, 0) << plan.out;
  std::ifstream completion(prefix / "share/bash-completion/completions/mmtwin");
  const std::string script((std::istreambuf_iterator<char>(completion)), std::istreambuf_iterator<char>());
  EXPECT_EQ(script, Shell(bin + " completion bash").out);
  EXPECT_NE(script.find("complete -o filenames -F _mmtwin mmtwin"), std::string::npos);
  fs::remove_all(prefix);
}

}  // namespace

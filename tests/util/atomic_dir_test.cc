// SPDX-License-Identifier: Apache-2.0
// A folder written as a unit (core/util/atomic_dir.h): created whole, replaced whole keeping a user's other files,
// unchanged when the write fails, and staging folders of dead processes cleaned up.
#include "core/util/atomic_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> Names(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

class AtomicDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("atomic_dir_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(AtomicDirTest, CreatesAndReplacesWhole) {
  const fs::path run = root_ / "runs" / "a";
  ASSERT_TRUE(WriteFolderAtomic(run.string(), {{"summary.json", "one"}, {"scenario.yaml", "s1"}}).ok());
  EXPECT_EQ(Names(run), (std::set<std::string>{"summary.json", "scenario.yaml"}));
  EXPECT_EQ(Read(run / "summary.json"), "one");
  std::ofstream(run / "notes.txt") << "mine";  // a user's file in the run folder
  ASSERT_TRUE(WriteFolderAtomic(run.string() + "/", {{"summary.json", "two"}, {"scenario.yaml", "s2"}}).ok());
  EXPECT_EQ(Read(run / "summary.json"), "two");
  EXPECT_EQ(Read(run / "scenario.yaml"), "s2");
  EXPECT_EQ(Read(run / "notes.txt"), "mine");                      // kept
  EXPECT_EQ(Names(root_ / "runs"), (std::set<std::string>{"a"}));  // no staging left
}

TEST_F(AtomicDirTest, AFailedWriteLeavesTheOldFolder) {
  const fs::path run = root_ / "b";
  ASSERT_TRUE(WriteFolderAtomic(run.string(), {{"summary.json", "old"}, {"scenario.yaml", "old"}}).ok());
  Status st = WriteFolderAtomic(run.string(), {{"summary.json", "new"}, {"sub/x", "bad name"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("'sub/x' is not a plain file name"), std::string::npos)
      << st.error().message();
  EXPECT_EQ(Read(run / "summary.json"), "old");
  EXPECT_EQ(Read(run / "scenario.yaml"), "old");
  // Only run folders are replaced: a folder with a subfolder, or with none of the files, is refused, unchanged.
  fs::create_directories(run / "plots");
  st = WriteFolderAtomic(run.string(), {{"summary.json", "new"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("holds the folder 'plots'"), std::string::npos) << st.error().message();
  EXPECT_EQ(Read(run / "summary.json"), "old");
  fs::create_directories(root_ / "project");
  std::ofstream(root_ / "project" / "README") << "not a run";
  st = WriteFolderAtomic((root_ / "project").string(), {{"summary.json", "x"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("is not a run folder"), std::string::npos) << st.error().message();
  EXPECT_EQ(Names(root_ / "project"), (std::set<std::string>{"README"}));
  // A target that is a file is refused and left alone.
  std::ofstream(root_ / "file") << "keep";
  st = WriteFolderAtomic((root_ / "file").string(), {{"summary.json", "x"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("exists and is not a folder"), std::string::npos);
  EXPECT_EQ(Read(root_ / "file"), "keep");
  EXPECT_EQ(Names(root_), (std::set<std::string>{"b", "file", "project"}));
}

// A staging folder whose writer died (its sibling lock file is free, or missing) is removed by the next write, with
// its lock file; one whose lock is held (a writer at work) is left alone.
TEST_F(AtomicDirTest, StagingOfDeadWritersIsRemoved) {
  fs::create_directories(root_ / "c.tmp-111");
  std::ofstream(root_ / "c.tmp-111.lock") << "";  // nobody holds it: abandoned
  fs::create_directories(root_ / "c.tmp-222");
  std::ofstream(root_ / "c.tmp-222.lock") << "";
  const int held = ::open((root_ / "c.tmp-222.lock").c_str(), O_RDWR);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);           // a writer at work
  fs::create_directories(root_ / "c.tmp-333");    // no lock file: its writer is gone
  std::ofstream(root_ / "c.tmp-444.lock") << "";  // a free lock file alone
  ASSERT_TRUE(WriteFolderAtomic((root_ / "c").string(), {{"summary.json", "x"}}).ok());
  EXPECT_EQ(Names(root_), (std::set<std::string>{"c", "c.tmp-222", "c.tmp-222.lock"}));
  EXPECT_EQ(Names(root_ / "c"), (std::set<std::string>{"summary.json"}));
  ::close(held);
}

// Names that would replace more than a run folder are refused before anything is touched: ".", "..", "/", the
// working folder and its ancestors.
TEST_F(AtomicDirTest, DangerousNamesAreRefused) {
  for (const std::string& bad :
       {std::string(""), std::string("."), std::string(".."), std::string("/"), std::string("x/.."),
        std::string("./"), fs::current_path().string(), fs::current_path().parent_path().string() + "/"}) {
    const Status st = WriteFolderAtomic(bad, {{"summary.json", "x"}});
    ASSERT_FALSE(st.ok()) << "'" << bad << "' was accepted";
  }
}

}  // namespace
}  // namespace mmtwin

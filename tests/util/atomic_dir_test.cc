// SPDX-License-Identifier: Apache-2.0
// A folder written as a unit (core/util/atomic_dir.h): created whole, replaced whole keeping a user's other files,
// unchanged when the write fails, and staging folders of dead processes cleaned up.
#include "core/util/atomic_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
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

// Only "NAME.tmp-<digits>" is staging (issue 34, item 3): a user's "NAME.tmp-backup/" next to the run folder
// survives every write.
TEST_F(AtomicDirTest, UserFoldersNamedLikeStagingSurvive) {
  fs::create_directories(root_ / "d.tmp-backup");
  std::ofstream(root_ / "d.tmp-backup" / "summary.json") << "my copy";
  fs::create_directories(root_ / "d.tmp-12x");
  ASSERT_TRUE(WriteFolderAtomic((root_ / "d").string(), {{"summary.json", "x"}}).ok());
  ASSERT_TRUE(WriteFolderAtomic((root_ / "d").string(), {{"summary.json", "y"}}).ok());
  EXPECT_EQ(Names(root_), (std::set<std::string>{"d", "d.tmp-backup", "d.tmp-12x"}));
  EXPECT_EQ(Read(root_ / "d.tmp-backup" / "summary.json"), "my copy");
  EXPECT_EQ(Read(root_ / "d" / "summary.json"), "y");
}

// A symbolic link to a run folder is written through (issue 34, item 2): the folder it names gets the new files,
// the link stays a link. A link to a file is refused.
TEST_F(AtomicDirTest, ALinkToAFolderIsWrittenThrough) {
  ASSERT_TRUE(WriteFolderAtomic((root_ / "real").string(), {{"summary.json", "old"}}).ok());
  fs::create_directory_symlink(root_ / "real", root_ / "link");
  ASSERT_TRUE(WriteFolderAtomic((root_ / "link").string(), {{"summary.json", "new"}}).ok());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(root_ / "link")));
  EXPECT_EQ(Read(root_ / "real" / "summary.json"), "new");
  std::ofstream(root_ / "file") << "keep";
  fs::create_symlink(root_ / "file", root_ / "file-link");
  const Status st = WriteFolderAtomic((root_ / "file-link").string(), {{"summary.json", "x"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("does not lead to a folder"), std::string::npos)
      << st.error().message();
  EXPECT_EQ(Read(root_ / "file"), "keep");
}

// Two processes writing one run folder over and over (issue 34, item 3): every write succeeds, and the folder
// always holds one writer's complete set of files (the parent folder's lock makes them take turns).
TEST_F(AtomicDirTest, ConcurrentWritersOfOneFolderBothSucceed) {
  const std::string run = (root_ / "shared").string();
  auto write_many = [&](const std::string& who) {
    for (int i = 0; i < 40; ++i) {
      const std::string v = who + std::to_string(i);
      if (!WriteFolderAtomic(run, {{"summary.json", v}, {"stages.csv", v}}).ok()) return false;
    }
    return true;
  };
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(write_many("child") ? 0 : 1);
  const bool parent_ok = write_many("parent");
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(parent_ok);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(Names(root_ / "shared"), (std::set<std::string>{"summary.json", "stages.csv"}));
  EXPECT_EQ(Read(root_ / "shared" / "summary.json"),
            Read(root_ / "shared" / "stages.csv"));            // one writer's set
  EXPECT_EQ(Names(root_), (std::set<std::string>{"shared"}));  // no staging or lock file left
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

TEST_F(AtomicDirTest, RemoveTreeRemovesNestedFoldersAndNeverFollowsLinks) {
  // A tree three levels deep, files at each level, and a link to a folder outside it.
  const fs::path tree = root_ / "tree", outside = root_ / "outside";
  fs::create_directories(tree / "a" / "b");
  fs::create_directories(outside);
  std::ofstream(outside / "keep.txt") << "keep";
  for (const fs::path& f : {tree / "1.txt", tree / "a" / "2.txt", tree / "a" / "b" / "3.txt"})
    std::ofstream(f) << "x";
  fs::create_directory_symlink(outside, tree / "a" / "link");
  ASSERT_TRUE(RemoveTree(tree.string()).ok());
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_TRUE(fs::exists(outside / "keep.txt"));  // the link went, not what it named
  // A plain file, and a path that is not there.
  std::ofstream(root_ / "file.txt") << "x";
  EXPECT_TRUE(RemoveTree((root_ / "file.txt").string()).ok());
  EXPECT_FALSE(fs::exists(root_ / "file.txt"));
  EXPECT_TRUE(RemoveTree((root_ / "missing").string()).ok());
}

}  // namespace
}  // namespace mmtwin

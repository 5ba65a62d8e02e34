// SPDX-License-Identifier: Apache-2.0
// A folder written as a unit (atomic_dir.h).
#include "core/util/atomic_dir.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

Status WriteSynced(const fs::path& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error::Io(path.string() + ": cannot write: " + std::strerror(errno));
  size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      return Error::Io(path.string() + ": write failed: " + std::strerror(e));
    }
    off += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int e = errno;
  if (::close(fd) != 0 || !synced) return Error::Io(path.string() + ": write failed: " + std::strerror(e));
  return Status();
}

void SyncFolder(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// True for "NAME.tmp-<digits>" (a staging folder's name) and "NAME.tmp-<digits>.lock" (an earlier version's lock
// file): only these are mmtwin's; a user's "NAME.tmp-backup" is not.
bool IsStagingName(const std::string& f, const std::string& name) {
  const std::string prefix = name + ".tmp-";
  if (f.size() <= prefix.size() || f.compare(0, prefix.size(), prefix) != 0) return false;
  std::string rest = f.substr(prefix.size());
  if (rest.size() > 5 && rest.compare(rest.size() - 5, 5, ".lock") == 0) rest.resize(rest.size() - 5);
  return !rest.empty() && std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Staging folders "NAME.tmp-<digits>" whose writer no longer runs. A writer creates and flocks the sibling lock
// file "NAME.tmp-PID.lock" before it makes its staging folder, and removes the folder before the lock file; the
// kernel drops the lock when the process dies, whatever kills it. So a staging folder whose lock file is missing
// or free is abandoned (PIDs alone would mislead once reused), and so is a free lock file. (Writers also hold the
// parent folder's lock, ParentLock, so in one parent this meets a live writer only through another path to it.)
int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  // Depth first (FTW_DEPTH): a folder's entries are gone before the folder.
  const int rc = type == FTW_DP ? ::rmdir(path) : ::unlink(path);
  return rc == 0 || errno == ENOENT ? 0 : -1;
}

void RemoveStale(const fs::path& parent, const std::string& name) {
  std::error_code ec;
  std::vector<fs::path> candidates;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (!IsStagingName(f, name)) continue;
    if (f.size() > 5 && f.compare(f.size() - 5, 5, ".lock") == 0)
      candidates.push_back(fs::path(it->path().string().substr(0, it->path().string().size() - 5)));
    else
      candidates.push_back(it->path());
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (const fs::path& dir : candidates) {
    const fs::path lock = dir.string() + ".lock";
    const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {  // a writer at work
      ::close(fd);
      continue;
    }
    (void)RemoveTree(dir.string());
    if (fd >= 0) {
      fs::remove(lock, ec);
      ::close(fd);
    }
  }
}

// An exclusive flock on the parent folder for the whole write: writers of folders in one parent (two `simulate -o
// SAME`, a sweep's jobs) take turns, so no write swaps in over another's half-done exchange and the stale-staging
// sweep never meets a live writer. Released by the destructor (or the kernel, when the process dies).
class ParentLock {
 public:
  explicit ParentLock(const fs::path& parent)
      : fd_(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
  ~ParentLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  ParentLock(const ParentLock&) = delete;
  ParentLock& operator=(const ParentLock&) = delete;
  Status Acquire(const std::string& dir) {
    if (fd_ < 0) return Error::Io(dir + ": cannot open its parent folder: " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) return Error::Io(dir + ": cannot lock its parent folder: " + std::strerror(errno));
    return Status();
  }

 private:
  int fd_;
};

}  // namespace

Status WriteFolderAtomic(const std::string& dir,
                         const std::vector<std::pair<std::string, std::string_view>>& files) {
  std::error_code ec;
  // The folder is named by its last component as given: "runs/x" or "runs/x/", never ".", ".." or "/".
  std::string given = dir;
  while (given.size() > 1 && given.back() == '/') given.pop_back();
  const std::string last = fs::path(given).filename().string();
  if (given.empty() || last.empty() || last == "." || last == "..")
    return Error(dir + ": not a usable run folder name (give a folder such as runs/NAME)");
  fs::path target = fs::absolute(fs::path(given), ec).lexically_normal();
  if (ec) return Error(dir + ": not a usable run folder name");
  // A symbolic link is written through: the folder it names is replaced, the link stays.
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    const fs::path resolved = fs::canonical(target, ec);
    if (ec || !fs::is_directory(resolved, ec))
      return Error(dir + ": is a symbolic link that does not lead to a folder");
    target = resolved;
  }
  const std::string name = target.filename().string();
  // Never the working folder or one of its ancestors (replacing it would pull the floor away).
  const fs::path cwd = fs::current_path(ec).lexically_normal();
  if (!ec) {
    const auto [t_end, c_it] = std::mismatch(target.begin(), target.end(), cwd.begin(), cwd.end());
    if (t_end == target.end())
      return Error(dir + ": is the working folder or contains it; give a folder of its own");
  }
  for (const auto& [file, content] : files)
    if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos)
      return Error(dir + ": '" + file + "' is not a plain file name");
  const fs::path parent = target.parent_path();
  fs::create_directories(parent, ec);
  if (ec) return Error::Io(parent.string() + ": cannot create the folder: " + ec.message());
  ParentLock lock(parent);
  MMTWIN_RETURN_IF_ERROR(lock.Acquire(dir));
  // An existing target must be a run folder: empty, or holding the files written here (and plain files only).
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec)) return Error(dir + ": exists and is not a folder");
    bool empty = true, ours = false;
    for (fs::directory_iterator it(target, ec), end; !ec && it != end; it.increment(ec)) {
      empty = false;
      const std::string f = it->path().filename().string();
      for (const auto& [file, content] : files) ours = ours || file == f;
      std::error_code lec;
      if (!it->is_regular_file(lec) && !it->is_symlink(lec))
        return Error(dir + ": holds the folder '" + f + "'; it is not a run folder mmtwin may replace");
    }
    if (!empty && !ours)
      return Error(dir + ": exists and is not a run folder (none of " + std::to_string(files.size()) +
                   " expected files in it); give another folder");
  }
  RemoveStale(parent, name);

  const fs::path staging = parent / (name + ".tmp-" + std::to_string(::getpid()));
  // This writer's lock file, flocked while its staging folder exists (what RemoveStale checks).
  const fs::path own_lock = staging.string() + ".lock";
  const int lock_fd = ::open(own_lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (lock_fd >= 0) ::close(lock_fd);
    return Error::Io(own_lock.string() + ": cannot lock: " + std::strerror(errno));
  }
  struct OwnLock {
    int fd;
    fs::path path;
    ~OwnLock() {  // after the staging folder is gone (declared before the lambda below removes it)
      std::error_code ignore;
      fs::remove(path, ignore);
      ::close(fd);
    }
  } own{lock_fd, own_lock};
  (void)RemoveTree(
      staging.string());  // a leftover of this PID's earlier run; create_directory says if it stays
  if (!fs::create_directory(staging, ec) || ec)
    return Error::Io(staging.string() + ": cannot create: " + ec.message());
  auto abandon = [&](Error e) {
    (void)RemoveTree(staging.string());
    return e;
  };
  for (const auto& [file, content] : files)
    if (Status st = WriteSynced(staging / file, content); !st.ok()) return abandon(st.error().Wrap(dir));
  // Whatever else the old folder holds (a user's notes, a plot) is carried over: hard links, or copies.
  if (fs::is_directory(target, ec)) {
    for (fs::directory_iterator it(target, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string f = it->path().filename().string();
      bool ours = false;
      for (const auto& [file, content] : files) ours = ours || file == f;
      if (ours || IsStagingName(f, name)) continue;
      std::error_code lec;
      fs::create_hard_link(it->path(), staging / f, lec);
      if (lec) {  // another file system, or a symlink: copy it
        lec.clear();
        fs::copy(it->path(), staging / f, fs::copy_options::copy_symlinks, lec);
      }
      if (lec) return abandon(Error(dir + ": cannot keep '" + f + "' of the old folder: " + lec.message()));
    }
    if (ec) return abandon(Error::Io(dir + ": cannot read the old folder: " + ec.message()));
  }
  SyncFolder(staging);

  if (fs::exists(target, ec)) {
    // One atomic step: the target becomes the new folder, the staging path holds the old one.
    if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0)
      return abandon(Error::Io(dir + ": cannot replace the folder: " + std::strerror(errno)));
  } else if (::rename(staging.c_str(), target.c_str()) != 0) {
    return abandon(Error::Io(dir + ": cannot create the folder: " + std::strerror(errno)));
  }
  SyncFolder(parent);
  (void)RemoveTree(staging.string());  // the old contents (or nothing)
  return Status();
}

Status RemoveTree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status();
    return Error::Io(path + ": cannot remove: " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return Error::Io(path + ": cannot remove: " + std::strerror(errno));
    return Status();
  }
  if (::nftw(path.c_str(), &RemoveEntry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return Error::Io(path + ": cannot remove everything in it: " + std::strerror(errno));
  return Status();
}

}  // namespace mmtwin

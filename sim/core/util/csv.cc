// SPDX-License-Identifier: Apache-2.0
#include "core/util/csv.h"

#include <algorithm>
#include <filesystem>

#include <signal.h>
#include <unistd.h>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace mmtwin {

Result<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Error(path + ": is a directory, expected a file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Error::Io(path + ": cannot open: " + std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int read_errno = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (read_errno != 0) return Error::Io(path + ": cannot read: " + std::strerror(read_errno));
  return out;
}

namespace {

// Removes `NAME.tmp.PID` siblings of `path` left by writers that no longer run (killed before their rename). A
// PID that is alive (perhaps reused by another process) keeps its file: only files of dead writers go.
void RemoveStaleTemporaries(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp.";
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    int64_t pid = 0;
    if (!ParseInt64(name.substr(prefix.size()), pid) || pid <= 0 || pid > INT32_MAX || pid == ::getpid())
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      std::filesystem::remove(it->path(), rm);
    }
  }
}

}  // namespace

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows links (and /proc's magic links, /dev/stdout)
  if (!ec && fs::exists(st)) {
    if (fs::is_directory(st)) return Error::Io(path + ": cannot write: it is a folder, a file is expected");
    if (!fs::is_regular_file(st)) {
      // A device (/dev/null, /dev/stdout), a FIFO: written through, never replaced by a regular file.
      std::FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) return Error::Io(path + ": cannot write: " + std::strerror(errno));
      const bool ok =
          std::fwrite(content.data(), 1, content.size(), f) == content.size() && std::fflush(f) == 0;
      const int write_errno = ok ? 0 : errno;
      if (std::fclose(f) != 0 || !ok)
        return Error::Io(path + ": cannot write: " + std::strerror(write_errno ? write_errno : errno));
      return Status();
    }
  }
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    // Write through the link: its target file is replaced (atomically) or created, the link stays. Links to
    // links are followed up to 40 deep (Linux's own limit for a path lookup).
    fs::path target = path;
    for (int depth = 0; depth < 40 && fs::is_symlink(fs::symlink_status(target, ec)); ++depth) {
      const fs::path next = fs::read_symlink(target, ec);
      if (ec) return Error::Io(path + ": cannot write: cannot read the symbolic link: " + ec.message());
      target = next.is_absolute() ? next : target.parent_path() / next;
    }
    if (fs::is_symlink(fs::symlink_status(target, ec)))
      return Error::Io(path + ": cannot write: too many levels of symbolic links");
    return WriteFileAtomic(target.lexically_normal().string(), content);
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Error::Io(path + ": cannot write: " + std::strerror(errno));
  const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size() &&
                  std::fflush(f) == 0 &&
                  ::fsync(::fileno(f)) == 0;  // on disk before it replaces the old file
  const int write_errno = ok ? 0 : errno;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    return Error::Io(path + ": cannot write: " + std::strerror(write_errno ? write_errno : errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(tmp.c_str());
    return Error::Io(path + ": cannot replace: " + std::strerror(rename_errno));
  }
  RemoveStaleTemporaries(path);
  return Status();
}

Result<CsvReader> CsvReader::Open(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return FromString(std::move(text), path);
}

CsvReader CsvReader::FromString(std::string text, std::string name) {
  CsvReader r;
  r.text_ = std::move(text);
  r.name_ = std::move(name);
  // Skip a UTF-8 byte order mark.
  if (r.text_.size() >= 3 && r.text_.compare(0, 3, "\xEF\xBB\xBF") == 0) r.pos_ = 3;
  return r;
}

bool CsvReader::Next(std::vector<std::string_view>& fields) {
  fields.clear();
  if (!status_.ok()) return false;
  const std::string& t = text_;
  const size_t n = t.size();
  // Skip blank and comment lines.
  while (pos_ < n) {
    if (t[pos_] == '\n') {
      ++pos_;
      ++next_line_;
    } else if (t[pos_] == '\r' && pos_ + 1 < n && t[pos_ + 1] == '\n') {
      pos_ += 2;
      ++next_line_;
    } else if (t[pos_] == '#') {
      size_t e = t.find('\n', pos_);
      if (e == std::string::npos) e = n;
      size_t ce = e;
      if (ce > pos_ && t[ce - 1] == '\r') --ce;
      comments_.emplace_back(t.substr(pos_ + 1, ce - pos_ - 1));
      pos_ = e;
    } else {
      break;
    }
  }
  if (pos_ >= n) return false;
  record_line_ = next_line_;
  scratch_.clear();
  spans_.clear();
  // Quoted fields are unescaped into scratch_; spans index either text_ (high bit clear) or scratch_.
  constexpr size_t kScratch = size_t{1} << 63;
  while (true) {
    if (pos_ < n && t[pos_] == '"') {
      ++pos_;
      const size_t start = scratch_.size();
      bool closed = false;
      while (pos_ < n) {
        char c = t[pos_];
        if (c == '"') {
          if (pos_ + 1 < n && t[pos_ + 1] == '"') {
            scratch_.push_back('"');
            pos_ += 2;
            continue;
          }
          ++pos_;
          closed = true;
          break;
        }
        if (c == '\n') ++next_line_;
        scratch_.push_back(c);
        ++pos_;
      }
      if (!closed) {
        status_ = Error::At(name_, record_line_, "", "unterminated quoted field");
        return false;
      }
      spans_.emplace_back(start | kScratch, scratch_.size() - start);
      if (pos_ < n && t[pos_] != ',' && t[pos_] != '\n' && t[pos_] != '\r') {
        status_ = Error::At(name_, record_line_, "", "unexpected character after closing quote");
        return false;
      }
    } else {
      const size_t start = pos_;
      while (pos_ < n && t[pos_] != ',' && t[pos_] != '\n' && t[pos_] != '\r') ++pos_;
      spans_.emplace_back(start, pos_ - start);
    }
    if (pos_ < n && t[pos_] == ',') {
      ++pos_;
      continue;
    }
    // End of record.
    if (pos_ < n && t[pos_] == '\r') ++pos_;
    if (pos_ < n && t[pos_] == '\n') {
      ++pos_;
      ++next_line_;
    }
    break;
  }
  for (auto [off, len] : spans_) {
    if (off & kScratch)
      fields.emplace_back(scratch_.data() + (off & ~kScratch), len);
    else
      fields.emplace_back(t.data() + off, len);
  }
  return true;
}

CsvHeader::CsvHeader(const std::vector<std::string_view>& fields) {
  for (auto f : fields) {
    while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t')) f.remove_suffix(1);
    names_.emplace_back(f);
  }
}

int CsvHeader::Find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

Status CsvHeader::CheckUnique(const CsvReader& csv, const std::vector<std::string>& names) const {
  // One pass with a hash map (a 200,000-column header took 20 s with the pairwise scan: issue 34): the first
  // column (in order) that repeats, with its first repeat, as the pairwise scan reported it.
  const std::unordered_set<std::string_view> wanted(names.begin(), names.end());
  std::unordered_map<std::string_view, size_t> first;  // name -> its first column
  size_t best_i = names_.size(), best_j = 0;
  for (size_t j = 0; j < names_.size(); ++j) {
    const std::string_view n = names_[j];
    if (n.empty() || (!wanted.empty() && !wanted.count(n))) continue;
    const auto [it, fresh] = first.emplace(n, j);
    if (!fresh && it->second < best_i) {  // a repeat of an earlier first column than any found so far
      best_i = it->second;
      best_j = j;
    }
  }
  if (best_i == names_.size()) return Status();
  return csv.ErrorAt(names_[best_i], "the column appears twice in the header (columns " +
                                         std::to_string(best_i + 1) + " and " + std::to_string(best_j + 1) + ")");
}

static std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseInt64(std::string_view s, int64_t& out) {
  s = Trim(s);
  if (s.empty()) return false;
  if (s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseDouble(std::string_view s, double& out) {
  s = Trim(s);
  if (s.empty()) return false;
  if (s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  return out == out && out != HUGE_VAL && out != -HUGE_VAL;  // reject nan and inf
}

std::string CsvQuote(std::string_view s) {
  // A field at the start of a line that begins with '#' would read back as a comment line: quote it too.
  if (s.find_first_of(",\"\n\r") == std::string_view::npos && (s.empty() || s.front() != '#'))
    return std::string(s);
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  o += '"';
  return o;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The binary trace cache beside a trace CSV (trace.h: ReadTrace, WriteTrace).
//
// PATH.mmtwin-cache holds a parsed trace, little-endian, keyed by the content of the CSV it was made from: its
// size and its Hash64 (core/util/hash.h), and checksummed: the Hash64 of every byte after the checksum field.
// It is used only while the CSV's bytes hash to the key (a rewrite with the same size and modification time is
// caught: issue 34), the body's checksum holds and the file is exactly as long as its counts say; any other
// cache is ignored and replaced. Reading through the cache hashes the CSV once (several GB/s) and the body once.
// Layout:
//   "MMTWTRC1", u32 cache version, u32 trace format version, u64 csv bytes, u64 csv hash, u64 body checksum
//   (of everything after it), u64 samples,
//   u32 subsets + (u32 length, bytes) each, u64 metas + (u32 length, bytes) each,
//   ids: u8 mode, u32 prefix length + bytes, i32 width, u64 first, u64 numbers + u64 each,
//        u64 pool bytes + bytes, u64 ends + u64 each,
//   samples: 32 bytes each (f64 audio seconds, u32 images, tiles, frames, text tokens, meta ref, u16 subset,
//   u16 image_px). Version 3 (version 2 was keyed by the CSV's size and modification time, without a checksum;
//   version 1 had 30-byte records without image_px; both are ignored and replaced).
// Written to a temporary file and renamed (never half a cache); the samples stream in 1 MiB blocks, so writing
// needs no second copy of the trace. Only ReadTrace writes it, from the trace it parsed: WriteTrace's trace
// can differ from what its CSV reads back as (audio seconds are written to 4 decimals).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/trace/trace_cache.h"
#include "core/util/csv.h"
#include "core/util/hash.h"
#include "core/util/memory_limit.h"

namespace mmtwin {
namespace {

constexpr char kMagic[8] = {'M', 'M', 'T', 'W', 'T', 'R', 'C', '1'};
constexpr uint32_t kCacheVersion = 3;
constexpr long kChecksumOffset = 32;  // magic 8, versions 8, csv bytes 8, csv hash 8
constexpr size_t kRecordBytes = 32;
constexpr size_t kBlockBytes = size_t{1} << 20;

bool LittleEndian() {
  const uint16_t x = 1;
  unsigned char b;
  std::memcpy(&b, &x, 1);
  return b == 1;
}

struct CsvStamp {
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
  bool operator==(const CsvStamp& o) const { return bytes == o.bytes && mtime_ns == o.mtime_ns; }
};

bool Stamp(const std::string& path, CsvStamp& out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  out.bytes = static_cast<uint64_t>(st.st_size);
  out.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

TraceCache Resolve(TraceCache mode) {
  if (mode != TraceCache::kAuto) return mode;
  const char* env = std::getenv("MMTWIN_TRACE_CACHE");
  if (env == nullptr) return TraceCache::kAuto;
  const std::string v = env;
  if (v == "off" || v == "0") return TraceCache::kOff;
  if (v == "always" || v == "1") return TraceCache::kAlways;
  return TraceCache::kAuto;
}

bool WantCache(TraceCache mode, uint64_t csv_bytes) {
  if (!LittleEndian()) return false;
  mode = Resolve(mode);
  return mode == TraceCache::kAlways || (mode == TraceCache::kAuto && csv_bytes >= kTraceCacheMinBytes);
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) { buf_.reserve(kBlockBytes); }
  void Bytes(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    buf_.append(c, n);
    if (hashing_) hash_.Update(c, n);
    if (buf_.size() >= kBlockBytes) Flush();
  }
  // Every byte written from now on counts in Checksum().
  void StartChecksum() { hashing_ = true; }
  uint64_t Checksum() const { return hash_.Digest(); }
  template <class T>
  void Put(T v) {
    Bytes(&v, sizeof v);
  }
  void Str32(const std::string& s) {
    Put(static_cast<uint32_t>(s.size()));
    Bytes(s.data(), s.size());
  }
  bool Flush() {
    ok_ = ok_ && std::fwrite(buf_.data(), 1, buf_.size(), f_) == buf_.size();
    buf_.clear();
    return ok_;
  }

 private:
  std::FILE* f_;
  std::string buf_;
  bool ok_ = true;
  bool hashing_ = false;
  Hash64 hash_;
};

// Reads from a stream of known length: no string or array is sized past what is left of it, so a damaged count
// cannot ask for gigabytes (found by trace_cache_fuzz).
class Reader {
 public:
  Reader(std::FILE* f, uint64_t bytes) : f_(f), left_(bytes) {}
  bool Bytes(void* p, size_t n) {
    ok_ = ok_ && n <= left_ && std::fread(p, 1, n, f_) == n;
    if (ok_) left_ -= n;
    if (ok_ && hashing_) hash_.Update(p, n);
    return ok_;
  }
  // Every byte read from now on counts in Checksum().
  void StartChecksum() { hashing_ = true; }
  uint64_t Checksum() const { return hash_.Digest(); }
  template <class T>
  bool Get(T& v) {
    return Bytes(&v, sizeof v);
  }
  bool Str(std::string& s, uint64_t n) {
    if (!ok_ || n > left_) return ok_ = false;
    s.resize(n);
    return Bytes(s.data(), n);
  }
  bool Str32(std::string& s) {
    uint32_t n = 0;
    return Get(n) && Str(s, n);
  }
  template <class T>
  bool Vec(std::vector<T>& v, uint64_t n) {
    if (!ok_ || n > left_ / sizeof(T)) return ok_ = false;
    v.resize(n);
    return Bytes(v.data(), n * sizeof(T));
  }
  bool ok() const { return ok_; }
  uint64_t left() const { return left_; }

 private:
  std::FILE* f_;
  uint64_t left_;
  bool ok_ = true;
  bool hashing_ = false;
  Hash64 hash_;
};

// The key a cache is made for: the CSV's size and Hash64.
struct CsvKey {
  uint64_t bytes = 0;
  uint64_t hash = 0;
};

bool WriteCache(const Trace& t, const CsvKey& key, const std::string& cache_path) {
  const std::string tmp = cache_path + ".tmp." + std::to_string(::getpid());
  bool ok = false;
  {
    File f(std::fopen(tmp.c_str(), "wb"));
    if (!f) return false;
    Writer w(f.get());
    w.Bytes(kMagic, sizeof kMagic);
    w.Put(kCacheVersion);
    w.Put(static_cast<uint32_t>(kTraceFormatVersion));
    w.Put(key.bytes);
    w.Put(key.hash);
    w.Put(uint64_t{0});  // the body checksum, written below once known
    w.StartChecksum();
    w.Put(static_cast<uint64_t>(t.samples.size()));
    w.Put(static_cast<uint32_t>(t.subsets.size()));
    for (const std::string& s : t.subsets) w.Str32(s);
    w.Put(static_cast<uint64_t>(t.metas.size()));
    for (const std::string& s : t.metas) w.Str32(s);
    const SampleIds& ids = t.ids;
    w.Put(static_cast<uint8_t>(ids.mode()));
    w.Str32(ids.prefix());
    w.Put(static_cast<int32_t>(ids.width()));
    w.Put(ids.first());
    w.Put(static_cast<uint64_t>(ids.numbers().size()));
    w.Bytes(ids.numbers().data(), ids.numbers().size() * sizeof(uint64_t));
    w.Put(static_cast<uint64_t>(ids.chars().size()));
    w.Bytes(ids.chars().data(), ids.chars().size());
    w.Put(static_cast<uint64_t>(ids.ends().size()));
    w.Bytes(ids.ends().data(), ids.ends().size() * sizeof(uint64_t));
    char rec[kRecordBytes];
    for (const Sample& s : t.samples) {
      std::memcpy(rec + 0, &s.audio_seconds, 8);
      std::memcpy(rec + 8, &s.images, 4);
      std::memcpy(rec + 12, &s.image_tiles, 4);
      std::memcpy(rec + 16, &s.video_frames, 4);
      std::memcpy(rec + 20, &s.text_tokens, 4);
      std::memcpy(rec + 24, &s.meta_ref, 4);
      std::memcpy(rec + 28, &s.subset, 2);
      std::memcpy(rec + 30, &s.image_px, 2);
      w.Bytes(rec, sizeof rec);
    }
    const uint64_t checksum = w.Checksum();
    ok = w.Flush() && std::fseek(f.get(), kChecksumOffset, SEEK_SET) == 0 &&
         std::fwrite(&checksum, sizeof checksum, 1, f.get()) == 1 && std::fflush(f.get()) == 0;
    ok = (std::fclose(f.release()) == 0) && ok;
  }
  if (ok) ok = std::rename(tmp.c_str(), cache_path.c_str()) == 0;
  if (!ok) std::remove(tmp.c_str());
  return ok;
}

}  // namespace

bool DecodeTraceCache(std::FILE* f, uint64_t stream_bytes, uint64_t csv_bytes, uint64_t csv_hash, Trace& out,
                      bool check_body) {
  Reader r(f, stream_bytes);
  char magic[8];
  uint32_t version = 0, format = 0;
  uint64_t cached_bytes = 0, cached_hash = 0, checksum = 0, n = 0;
  if (!r.Bytes(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !r.Get(version) ||
      version != kCacheVersion || !r.Get(format) || format != static_cast<uint32_t>(kTraceFormatVersion) ||
      !r.Get(cached_bytes) || cached_bytes != csv_bytes || !r.Get(cached_hash) || cached_hash != csv_hash ||
      !r.Get(checksum))
    return false;
  r.StartChecksum();
  if (!r.Get(n)) return false;
  if (n > stream_bytes / kRecordBytes) return false;
  Trace t;
  uint32_t subsets = 0;
  if (!r.Get(subsets) || subsets > 65536 || subsets > r.left() / 4) return false;
  t.subsets.resize(subsets);
  for (std::string& s : t.subsets)
    if (!r.Str32(s)) return false;
  uint64_t metas = 0;
  if (!r.Get(metas) || metas > n || metas > r.left() / 4) return false;
  t.metas.resize(metas);
  for (std::string& s : t.metas)
    if (!r.Str32(s)) return false;
  uint8_t mode = 0;
  std::string prefix, chars;
  int32_t width = 0;
  uint64_t first = 0, count = 0;
  std::vector<uint64_t> numbers, ends;
  if (!r.Get(mode) || mode > static_cast<uint8_t>(SampleIds::Mode::kPool) || !r.Str32(prefix) ||
      !r.Get(width) || !r.Get(first) || !r.Get(count) || count > n || !r.Vec(numbers, count) ||
      !r.Get(count) || !r.Str(chars, count) || !r.Get(count) || count > n || !r.Vec(ends, count))
    return false;
  if (!SampleIds::FromParts(static_cast<SampleIds::Mode>(mode), n, std::move(prefix), width, first,
                            std::move(numbers), std::move(chars), std::move(ends), t.ids))
    return false;
  t.samples.reserve(n);
  AdviseHugePages(t.samples.data(), n * sizeof(Sample));  // before the first touch: fewer page faults
  std::vector<char> block(kBlockBytes / kRecordBytes * kRecordBytes);
  const size_t per_block = block.size() / kRecordBytes;
  for (size_t i = 0; i < n;) {
    const size_t k = std::min<size_t>(per_block, n - i);
    if (!r.Bytes(block.data(), k * kRecordBytes)) return false;
    for (size_t j = 0; j < k; ++j, ++i) {
      const char* rec = block.data() + j * kRecordBytes;
      Sample& s = t.samples.emplace_back();
      std::memcpy(&s.audio_seconds, rec + 0, 8);
      std::memcpy(&s.images, rec + 8, 4);
      std::memcpy(&s.image_tiles, rec + 12, 4);
      std::memcpy(&s.video_frames, rec + 16, 4);
      std::memcpy(&s.text_tokens, rec + 20, 4);
      std::memcpy(&s.meta_ref, rec + 24, 4);
      std::memcpy(&s.subset, rec + 28, 2);
      std::memcpy(&s.image_px, rec + 30, 2);
      // The invariants ParseTrace checks, cheaply, so a damaged cache cannot hand out a bad trace.
      if (s.subset >= subsets || s.meta_ref > metas || s.image_tiles < s.images || !(s.audio_seconds >= 0) ||
          !(s.audio_seconds <= kMaxTraceAudioSeconds) || (s.image_px != 0 && s.images == 0))
        return false;
    }
  }
  if (std::fgetc(f) != EOF) return false;  // longer than its counts say
  if (check_body && r.Checksum() != checksum) return false;
  out = std::move(t);
  return true;
}

namespace {

// The Hash64 of the file at `path` when it holds exactly `bytes` bytes: mapped, so the bytes are hashed in the
// page cache without a copy (read in 1 MiB blocks where mapping fails).
bool HashFile(const std::string& path, uint64_t bytes, uint64_t& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != bytes) {
    ::close(fd);
    return false;
  }
  Hash64 h;
  bool ok = true;
  void* map = bytes > 0 ? ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  if (map != MAP_FAILED) {
    ::madvise(map, bytes, MADV_SEQUENTIAL);
    h.Update(map, bytes);
    ::munmap(map, bytes);
  } else {
    std::vector<char> block(kBlockBytes);
    uint64_t total = 0;
    for (ssize_t got; (got = ::read(fd, block.data(), block.size())) != 0; total += static_cast<uint64_t>(got)) {
      if (got < 0) {
        if (errno == EINTR) continue;
        ok = false;
        break;
      }
      h.Update(block.data(), static_cast<size_t>(got));
    }
    ok = ok && total == bytes;
  }
  ::close(fd);
  if (ok) out = h.Digest();
  return ok;
}

// The cached trace when the cache exists, was made from a CSV with these bytes (its size, then its hash: the
// CSV is hashed only when the cache names its size) and is whole; false otherwise.
bool ReadCache(const std::string& cache_path, const std::string& csv_path, uint64_t csv_bytes, Trace& out) {
  struct stat st;
  if (::stat(cache_path.c_str(), &st) != 0) return false;
  File f(std::fopen(cache_path.c_str(), "rb"));
  if (!f) return false;
  char head[24];
  uint64_t named_bytes = 0, csv_hash = 0;
  if (std::fread(head, 1, sizeof head, f.get()) != sizeof head) return false;
  std::memcpy(&named_bytes, head + 16, 8);
  if (named_bytes != csv_bytes || !HashFile(csv_path, csv_bytes, csv_hash) || std::fseek(f.get(), 0, SEEK_SET) != 0)
    return false;
  return DecodeTraceCache(f.get(), static_cast<uint64_t>(st.st_size), csv_bytes, csv_hash, out);
}

}  // namespace

std::string TraceCachePath(const std::string& csv_path) { return csv_path + ".mmtwin-cache"; }

Result<Trace> ReadTrace(const std::string& path, TraceCache cache) {
  CsvStamp before;
  const bool stamped = Stamp(path, before);
  const bool use = stamped && WantCache(cache, before.bytes);
  if (use) {
    Trace t;
    if (ReadCache(TraceCachePath(path), path, before.bytes, t)) return t;
  }
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  CsvKey key{text.size(), 0};
  if (use) {
    Hash64 h;
    h.Update(text);
    key.hash = h.Digest();
  }
  MMTWIN_ASSIGN_OR_RETURN(Trace t, ParseTrace(std::move(text), path));
  CsvStamp after;
  // Only a CSV that did not change while it was read gets a cache (keyed by the bytes that were parsed);
  // failing to write one is not an error.
  if (use && Stamp(path, after) && after == before && key.bytes == before.bytes)
    WriteCache(t, key, TraceCachePath(path));
  return t;
}

Result<Trace> ReadTrace(const std::string& path) { return ReadTrace(path, TraceCache::kAuto); }

}  // namespace mmtwin

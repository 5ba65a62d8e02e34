// SPDX-License-Identifier: Apache-2.0
// The compact trace storage (SampleIds, Sample) and the binary trace cache beside a CSV.
//
// Oracles: for ids, the plain list of strings pushed (every Get equals it; FirstRepeat equals a brute-force
// search); for the cache, the CSV parser (a trace read through the cache formats to the same CSV text and digest
// as one parsed from the CSV).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/trace/generate.h"
#include "core/trace/trace.h"
#include "core/util/csv.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

std::pair<size_t, size_t> BruteFirstRepeat(const std::vector<std::string>& ids) {
  for (size_t j = 0; j < ids.size(); ++j)
    for (size_t i = 0; i < j; ++i)
      if (ids[i] == ids[j]) return {i, j};
  return {ids.size(), ids.size()};
}

// Ids of the shapes traces hold: generated counting ids, COCO-like zero-padded numbers, row numbers, ids
// that do not fit the first id's shape (another prefix, a shorter or a zero-led longer number, no number).
std::string RandomId(Rng& rng, size_t k, int shape) {
  char buf[64];
  switch (shape) {
    case 0:
      std::snprintf(buf, sizeof buf, "ivl%07zu", k);
      return buf;
    case 1:
      std::snprintf(buf, sizeof buf, "%012llu", static_cast<unsigned long long>(rng.Below(40)));
      return buf;
    case 2:
      return std::to_string(rng.Below(30));
    default: {
      const char* odd[] = {"ivl", "ivl00", "x", "ivl0000001a", "0", "00", "000000000007", "7", "ivl12345678"};
      return odd[rng.Below(9)];
    }
  }
}

TEST(SampleIdsTest, GetReturnsEveryPushedIdAndFirstRepeatMatchesBruteForce) {
  int pool = 0, numbers = 0, counting = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    const int shape = static_cast<int>(seed % 3);
    const double odd_share = seed % 4 == 0 ? 0.0 : 0.02;
    std::vector<std::string> pushed;
    SampleIds ids;
    const size_t n = 1 + rng.Below(60);
    for (size_t k = 0; k < n; ++k) {
      const std::string id = rng.Uniform() < odd_share ? RandomId(rng, k, 3) : RandomId(rng, k, shape);
      pushed.push_back(id);
      ids.Push(id);
    }
    ASSERT_EQ(ids.size(), n);
    for (size_t k = 0; k < n; ++k) ASSERT_EQ(ids.Get(k), pushed[k]) << "seed " << seed << " id " << k;
    size_t seen = 0;
    ids.ForEach([&](size_t k, std::string_view id) {
      ASSERT_EQ(k, seen++);
      ASSERT_EQ(id, pushed[k]) << "seed " << seed << " id " << k;
    });
    EXPECT_EQ(seen, n);
    EXPECT_EQ(ids.FirstRepeat(), BruteFirstRepeat(pushed)) << "seed " << seed;
    pool += ids.mode() == SampleIds::Mode::kPool;
    numbers += ids.mode() == SampleIds::Mode::kNumbers;
    counting += ids.mode() == SampleIds::Mode::kCounting;
  }
  // Every representation was exercised.
  EXPECT_GT(pool, 10);
  EXPECT_GT(numbers, 10);
  EXPECT_GT(counting, 10);
}

TEST(SampleIdsTest, GeneratedIdsCostNoBytesPerSample) {
  SampleIds ids;
  ids.PushNumbered("ivl", 7, 0, 20000000);
  EXPECT_EQ(ids.mode(), SampleIds::Mode::kCounting);
  EXPECT_LT(ids.MemoryBytes(), 1024u);
  EXPECT_EQ(ids.Get(0), "ivl0000000");
  EXPECT_EQ(ids.Get(42), "ivl0000042");
  EXPECT_EQ(ids.Get(19999999), "ivl19999999");
  EXPECT_EQ(ids.FirstRepeat(), std::make_pair(size_t{20000000}, size_t{20000000}));
  // Pushing the next id in the same shape keeps counting; another shape keeps every id exactly.
  SampleIds small;
  small.PushNumbered("a", 3, 998, 3);
  small.Push("a1001");
  EXPECT_EQ(small.mode(), SampleIds::Mode::kCounting);
  small.Push("a005");
  EXPECT_EQ(small.mode(), SampleIds::Mode::kNumbers);
  small.Push("b");
  EXPECT_EQ(small.mode(), SampleIds::Mode::kPool);
  const std::vector<std::string> want = {"a998", "a999", "a1000", "a1001", "a005", "b"};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(small.Get(k), want[k]);
  // ForEach increments counting ids in place: carries across a wider number, an empty prefix, zero padding.
  for (const auto& [prefix, width, first] :
       std::vector<std::tuple<std::string, int, uint64_t>>{{"", 1, 0}, {"ivl", 7, 9999990}, {"x", 3, 95}}) {
    SampleIds c;
    c.PushNumbered(prefix, width, first, 2000);
    const std::string shape = prefix;  // (clang 14: a lambda cannot capture a structured binding)
    c.ForEach([&](size_t k, std::string_view id) { ASSERT_EQ(id, c.Get(k)) << shape << " " << k; });
  }
}

TEST(SampleIdsTest, SampleIs32Bytes) { EXPECT_EQ(sizeof(Sample), 32u); }

class TraceCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "trace_cache_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ::mkdir(dir_.c_str(), 0755);
    csv_ = dir_ + "/t.csv";
  }
  void TearDown() override {
    std::remove(TraceCachePath(csv_).c_str());
    std::remove(csv_.c_str());
    ::rmdir(dir_.c_str());
  }
  static Trace Mixed() {
    // Every field and representation: pool ids (a hand-made id among generated ones), metas, audio with
    // decimals, several subsets.
    Result<Trace> g = GenerateTrace("internvl-1.2m", 400, 5);
    EXPECT_TRUE(g.ok());
    Trace t;
    t.subsets = g->subsets;
    for (size_t i = 0; i < g->size(); ++i) {
      Sample s = g->samples[i];
      s.audio_seconds = i % 7 == 0 ? 0.0625 * static_cast<double>(i) : 0;
      t.Add(s, i == 100 ? std::string("odd id") : g->id(i), i % 5 == 0 ? "m" + std::to_string(i / 10) : "");
    }
    return t;
  }
  std::string dir_, csv_;
};

bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

TEST_F(TraceCacheTest, ACachedReadEqualsTheParsedCsv) {
  const Trace t = Mixed();
  ASSERT_TRUE(WriteTrace(t, csv_).ok());
  Result<Trace> parsed = ReadTrace(csv_, TraceCache::kOff);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_FALSE(Exists(TraceCachePath(csv_)));
  Result<Trace> first = ReadTrace(csv_, TraceCache::kAlways);  // parses, writes the cache
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(Exists(TraceCachePath(csv_)));
  Result<Trace> cached = ReadTrace(csv_, TraceCache::kAlways);  // reads the cache
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(FormatTrace(*cached), FormatTrace(*parsed));
  EXPECT_EQ(TraceDigest(*cached), TraceDigest(*parsed));
  EXPECT_EQ(cached->metas, parsed->metas);
  EXPECT_EQ(cached->ids.mode(), SampleIds::Mode::kPool);
  EXPECT_TRUE(ValidateTrace(*cached, "cached").ok());
  // Image sizes (the generator's) survive the cache, sample by sample.
  ASSERT_EQ(cached->size(), t.size());
  size_t sized = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(cached->samples[i].image_px, t.samples[i].image_px) << i;
    sized += t.samples[i].image_px != 0;
  }
  EXPECT_GT(sized, 300u);
}

TEST_F(TraceCacheTest, TheCacheIsKeyedByTheCsvsContent) {
  // Issue 34: a CSV rewritten with the same size and modification time (as `cp -p` leaves it) was read as the
  // stale cached trace. The cache is keyed by the CSV's bytes now: the rewrite is parsed and the cache replaced.
  const Trace t = Mixed();
  ASSERT_TRUE(WriteTrace(t, csv_).ok());
  ASSERT_TRUE(ReadTrace(csv_, TraceCache::kAlways).ok());
  const std::string first_cache = *ReadFile(TraceCachePath(csv_));
  struct stat before;
  ASSERT_EQ(::stat(csv_.c_str(), &before), 0);
  std::string text = *ReadFile(csv_);
  const size_t at = text.rfind(",m");  // a meta "mNN": change one digit, same size
  ASSERT_NE(at, std::string::npos);
  text[at + 2] = text[at + 2] == '1' ? '2' : '1';
  {
    std::ofstream out(csv_, std::ios::binary | std::ios::trunc);
    out << text;
  }
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, csv_.c_str(), times, 0), 0);
  struct stat after;
  ASSERT_EQ(::stat(csv_.c_str(), &after), 0);
  ASSERT_EQ(after.st_size, before.st_size);
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  Result<Trace> fresh = ReadTrace(csv_, TraceCache::kAlways);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(FormatTrace(*fresh), text);
  EXPECT_NE(*ReadFile(TraceCachePath(csv_)), first_cache);  // replaced
  EXPECT_EQ(FormatTrace(*ReadTrace(csv_, TraceCache::kAlways)), text);
  // Touching the CSV without changing it keeps the cache: the key is the content, not the time.
  const std::string second_cache = *ReadFile(TraceCachePath(csv_));
  struct stat cache_before;
  ASSERT_EQ(::stat(TraceCachePath(csv_).c_str(), &cache_before), 0);
  const struct timespec later[2] = {before.st_atim, {before.st_mtim.tv_sec + 5, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, csv_.c_str(), later, 0), 0);
  EXPECT_EQ(FormatTrace(*ReadTrace(csv_, TraceCache::kAlways)), text);
  struct stat cache_after;
  ASSERT_EQ(::stat(TraceCachePath(csv_).c_str(), &cache_after), 0);
  EXPECT_EQ(cache_after.st_ino, cache_before.st_ino);  // not rewritten (a rewrite renames a new file in)
  EXPECT_EQ(*ReadFile(TraceCachePath(csv_)), second_cache);
}

TEST_F(TraceCacheTest, ADamagedCacheIsIgnoredAndReplaced) {
  // Truncated, extended, or one byte anywhere after the key changed: every damaged cache is detected (the
  // body's checksum catches the in-range changes the per-sample checks let through), the CSV is read instead
  // and the cache rewritten. Issue 34 found an in-range change read as p50 5.9e9 ms with exit 0.
  const Trace t = Mixed();
  ASSERT_TRUE(WriteTrace(t, csv_).ok());
  const std::string want = FormatTrace(*ReadTrace(csv_, TraceCache::kOff));
  ASSERT_TRUE(ReadTrace(csv_, TraceCache::kAlways).ok());
  const std::string good = *ReadFile(TraceCachePath(csv_));
  Rng rng(11);
  for (int k = 0; k < 60; ++k) {
    std::string bad = good;
    if (k % 3 == 0) {
      bad.resize(rng.Below(bad.size()));  // truncated
    } else if (k % 3 == 1) {
      bad += "x";  // longer than its counts
    } else {
      // One byte of the checksum or the body (offset 32 on), often inside a sample record: a text length, an
      // image count, which pass the per-sample checks.
      const size_t at = 32 + rng.Below(bad.size() - 32);
      bad[at] = static_cast<char>(bad[at] ^ (1 + rng.Below(255)));
    }
    {
      std::ofstream out(TraceCachePath(csv_), std::ios::binary | std::ios::trunc);
      out << bad;
    }
    Result<Trace> r = ReadTrace(csv_, TraceCache::kAlways);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(FormatTrace(*r), want) << k;
    EXPECT_EQ(*ReadFile(TraceCachePath(csv_)), good) << k;  // rewritten whole
  }
}

TEST_F(TraceCacheTest, ACacheThatCannotBeWrittenIsSkipped) {
  // A folder where the cache would go (works as root too, unlike a read-only folder): the trace still reads,
  // from the CSV, every time, and no temporary file is left behind.
  const Trace t = Mixed();
  ASSERT_TRUE(WriteTrace(t, csv_).ok());
  ASSERT_EQ(::mkdir(TraceCachePath(csv_).c_str(), 0755), 0);
  for (int k = 0; k < 2; ++k) {
    Result<Trace> r = ReadTrace(csv_, TraceCache::kAlways);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(FormatTrace(*r), *ReadFile(csv_));
  }
  ::rmdir(TraceCachePath(csv_).c_str());
  EXPECT_FALSE(Exists(TraceCachePath(csv_) + ".tmp." + std::to_string(::getpid())));
}

TEST_F(TraceCacheTest, SmallCsvsGetNoCacheByDefault) {
  const Trace t = Mixed();
  ASSERT_TRUE(WriteTrace(t, csv_).ok());
  ::unsetenv("MMTWIN_TRACE_CACHE");
  ASSERT_TRUE(ReadTrace(csv_).ok());
  EXPECT_FALSE(Exists(TraceCachePath(csv_)));
  ::setenv("MMTWIN_TRACE_CACHE", "always", 1);
  ASSERT_TRUE(ReadTrace(csv_).ok());
  EXPECT_TRUE(Exists(TraceCachePath(csv_)));
  ::unsetenv("MMTWIN_TRACE_CACHE");
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/util/csv.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/trace/trace.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

TEST(CsvReaderTest, QuotedFieldsAndLineNumbers) {
  CsvReader r = CsvReader::FromString("# comment\na,b\n1,\"x,\"\"y\"\"\nz\"\n\n2,3\n", "t.csv");
  std::vector<std::string_view> f;
  ASSERT_TRUE(r.Next(f));
  EXPECT_EQ(r.line(), 2);
  ASSERT_TRUE(r.Next(f));
  EXPECT_EQ(r.line(), 3);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1], "x,\"y\"\nz");
  ASSERT_TRUE(r.Next(f));
  EXPECT_EQ(r.line(), 6);
  EXPECT_EQ(f[0], "2");
  EXPECT_FALSE(r.Next(f));
  EXPECT_TRUE(r.status().ok());
  ASSERT_EQ(r.comments().size(), 1u);
  EXPECT_EQ(r.comments()[0], " comment");
}

// CheckUnique against the pairwise scan it replaced (the first column in order that repeats, with its first
// repeat), on random headers over a small alphabet, with and without a list of names to check; then a
// 200,000-column header with a repeat at its end (issue 34: 20 s with the pairwise scan).
std::string PairwiseDuplicate(const std::vector<std::string>& cols, const std::vector<std::string>& names) {
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i].empty()) continue;
    if (!names.empty() && std::find(names.begin(), names.end(), cols[i]) == names.end()) continue;
    for (size_t j = i + 1; j < cols.size(); ++j)
      if (cols[j] == cols[i])
        return "t.csv:1: " + cols[i] + ": the column appears twice in the header (columns " +
               std::to_string(i + 1) + " and " + std::to_string(j + 1) + ")";
  }
  return "";
}

std::string UniqueError(const std::string& header_line, const std::vector<std::string>& names) {
  CsvReader r = CsvReader::FromString(header_line + "\n", "t.csv");
  std::vector<std::string_view> f;
  if (!r.Next(f)) return "no header";
  const Status st = CsvHeader(f).CheckUnique(r, names);
  return st.ok() ? "" : st.error().message();
}

TEST(CsvHeaderTest, CheckUniqueFindsWhatThePairwiseScanFound) {
  Rng rng(5);
  const std::vector<std::string> alphabet = {"a", "b", "c", "d", "e", "f", ""};
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::string> cols = {"id"};  // never a blank line, which the reader skips
    std::string line = "id";
    for (size_t k = rng.Below(9); k > 0; --k) {
      cols.push_back(alphabet[rng.Below(alphabet.size())]);
      line += "," + cols.back();
    }
    const std::vector<std::string> names = trial % 2 ? std::vector<std::string>{} : std::vector<std::string>{"b", "d"};
    EXPECT_EQ(UniqueError(line, names), PairwiseDuplicate(cols, names)) << line << " (trial " << trial << ")";
  }
  std::string wide;
  for (int k = 0; k < 200000; ++k) wide += "c" + std::to_string(k) + ",";
  wide += "c7";
  EXPECT_EQ(UniqueError(wide, {}), "t.csv:1: c7: the column appears twice in the header (columns 8 and 200001)");
}

TEST(CsvReaderTest, UnterminatedQuoteIsAnError) {
  CsvReader r = CsvReader::FromString("a\n\"abc\n", "t.csv");
  std::vector<std::string_view> f;
  ASSERT_TRUE(r.Next(f));
  EXPECT_FALSE(r.Next(f));
  ASSERT_FALSE(r.status().ok());
  EXPECT_EQ(r.status().error().message(), "t.csv:2: unterminated quoted field");
}

TEST(ParseTest, StrictNumbers) {
  int64_t i;
  double d;
  EXPECT_TRUE(ParseInt64(" 42 ", i));
  EXPECT_EQ(i, 42);
  EXPECT_FALSE(ParseInt64("4x", i));
  EXPECT_FALSE(ParseInt64("", i));
  EXPECT_TRUE(ParseDouble("1.5e3", d));
  EXPECT_DOUBLE_EQ(d, 1500);
  EXPECT_FALSE(ParseDouble("nan", d));
  EXPECT_FALSE(ParseDouble("1.0.0", d));
}

TEST(TraceIoTest, RoundTrip) {
  Trace t;
  for (int i = 0; i < 50; ++i) {
    Sample s;
    s.subset = t.SubsetIndex(i % 3 ? "a,b" : "c");
    s.images = i % 2;
    s.image_tiles = s.images * (1 + i % 5);
    s.video_frames = i % 7;
    s.audio_seconds = i * 0.25;
    s.text_tokens = 10 * i;
    t.Add(s, "s" + std::to_string(i), i % 4 ? "" : "note \"q\"");
  }
  auto back = ParseTrace(FormatTrace(t), "mem");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->samples.size(), t.samples.size());
  for (size_t i = 0; i < t.samples.size(); ++i) {
    const Sample &a = t.samples[i], &b = back->samples[i];
    EXPECT_EQ(t.id(i), back->id(i));
    EXPECT_EQ(t.subsets[a.subset], back->subsets[b.subset]);
    EXPECT_EQ(a.image_tiles, b.image_tiles);
    EXPECT_EQ(a.video_frames, b.video_frames);
    EXPECT_DOUBLE_EQ(a.audio_seconds, b.audio_seconds);
    EXPECT_EQ(a.text_tokens, b.text_tokens);
    EXPECT_EQ(t.meta(i), back->meta(i));
  }
  EXPECT_TRUE(ValidateTrace(*back, "mem").ok());
}

TEST(TraceIoTest, ErrorsNameFileLineAndField) {
  const std::string head =
      "# mmtwin-trace v1\nsample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens\n";
  auto r = ParseTrace(head + "a,x,1,1,0,0,5\nb,x,1,-3,0,0,5\n", "bad.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "bad.csv:4: image_tiles: '-3' is not a non-negative integer");
  r = ParseTrace(head + "a,x,1,1,0,abc,5\n", "bad.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "bad.csv:3: audio_seconds: 'abc' is not a non-negative number");
  r = ParseTrace(head + "a,x,2,1,0,0,5\n", "bad.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("bad.csv:3: image_tiles:"), std::string::npos);
  r = ParseTrace(head + "a,x,1,1,0,0\n", "bad.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "bad.csv:3: expected 7 fields, found 6");
  r = ParseTrace("sample_id,subset\n", "bad.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("images: missing column"), std::string::npos);
  r = ParseTrace("# mmtwin-trace v9\n" + head.substr(head.find('\n') + 1), "new.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("v9 is not supported"), std::string::npos);
  auto missing = ReadTrace("/nonexistent/x.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/x.csv: cannot open"), std::string::npos);
}

TEST(RngTest, SameSeedSameStreamAndShuffleIsPermutation) {
  Rng a(7), b(7), c(8);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Next(), b.Next());
  EXPECT_NE(Rng(7).Next(), c.Next());
  std::vector<int> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = i;
  Rng r(3);
  r.Shuffle(v);
  std::vector<int> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(v[0] + v[1] * 1000, 0 + 1 * 1000);
  double sum = 0, sq = 0;
  Rng n(11);
  for (int i = 0; i < 100000; ++i) {
    double x = n.Normal();
    sum += x;
    sq += x * x;
  }
  EXPECT_NEAR(sum / 100000, 0, 0.02);
  EXPECT_NEAR(sq / 100000, 1, 0.02);
}

// What a single-file output names is never replaced by a regular file unless it is one (issue 34, item 2): a
// symbolic link is written through (the target gets the content, the link stays), a FIFO and a device node are
// written to directly, a link to a folder is refused naming the path.
TEST(WriteFileAtomicTest, WritesThroughLinksDevicesAndFifos) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("write_through_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "folder");
  const std::string target = (dir / "target.csv").string(), link = (dir / "link.csv").string();
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  ASSERT_TRUE(WriteFileAtomic(link, "new\n").ok());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(ReadFile(target).value(), "new\n");
  // A link to a file that does not exist yet: the file is created where the link points.
  const std::string dangling_target = (dir / "later.csv").string(),
                    dangling = (dir / "dangling.csv").string();
  fs::create_symlink(dangling_target, dangling);
  ASSERT_TRUE(WriteFileAtomic(dangling, "x\n").ok());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dangling)));
  EXPECT_EQ(ReadFile(dangling_target).value(), "x\n");
  // A link to a folder: refused, the folder untouched.
  const std::string folder_link = (dir / "folder-link").string();
  fs::create_directory_symlink(dir / "folder", folder_link);
  Status st = WriteFileAtomic(folder_link, "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("it is a folder, a file is expected"), std::string::npos)
      << st.error().message();
  EXPECT_TRUE(fs::is_directory(dir / "folder"));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(folder_link)));
  // A loop of links: refused.
  fs::create_symlink(dir / "loop-b", dir / "loop-a");
  fs::create_symlink(dir / "loop-a", dir / "loop-b");
  st = WriteFileAtomic((dir / "loop-a").string(), "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("too many levels of symbolic links"), std::string::npos)
      << st.error().message();
  // A FIFO: written through to its reader, still a FIFO afterwards.
  const std::string fifo = (dir / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(WriteFileAtomic(fifo, "through\n").ok());
  char buf[16] = {};
  EXPECT_EQ(::read(reader, buf, sizeof buf), 8);
  EXPECT_EQ(std::string(buf, 8), "through\n");
  ::close(reader);
  EXPECT_TRUE(fs::is_fifo(fs::status(fifo)));
  // A device node made here (a null device; needs root, as replacing /dev/null did): written to, not replaced.
  const std::string dev = (dir / "null").string();
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    ASSERT_TRUE(WriteFileAtomic(dev, "gone\n").ok());
    EXPECT_TRUE(fs::is_character_file(fs::status(dev)));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {
// Found by trace_fuzz: an id starting with '#' was written unquoted and read back as a comment line.
TEST(TraceIoTest, HashLeadingIdsRoundTrip) {
  Trace t;
  Sample s;
  s.subset = t.SubsetIndex("#subset");
  t.Add(s, "#t");
  auto back = ParseTrace(FormatTrace(t), "mem");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->id(0), "#t");
  EXPECT_EQ(back->subsets[back->samples[0].subset], "#subset");
  EXPECT_EQ(CsvQuote("#x"), "\"#x\"");
  EXPECT_EQ(CsvQuote("x#"), "x#");
}

// Found by trace_fuzz: a huge audio duration overflowed the formatting buffer.
TEST(TraceIoTest, HugeAudioIsRejectedAndFormattingIsBounded) {
  auto r = ParseTrace(
      "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens\na,s,0,0,0,1e73,0\n",
      "huge.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "huge.csv:2: audio_seconds: '1e73' is above the limit of 1e9 seconds");
  Trace t;
  Sample s;
  s.subset = t.SubsetIndex("s");
  s.audio_seconds = 1e300;  // built in code, bypassing the parser
  t.Add(s, "x");
  const std::string text = FormatTrace(t);
  EXPECT_LT(text.size(), 300u);
  EXPECT_FALSE(ValidateTrace(t, "mem").ok());
}

// A writer killed between creating `x.csv.tmp.PID` and its rename left that file behind for good; the next write
// of x.csv removes temporaries of dead writers (a PID above Linux's PID_MAX_LIMIT cannot run) and keeps those of
// live ones.
TEST(WriteFileAtomicTest, ReplacesWholeAndRemovesTemporariesOfDeadWriters) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("write_file_atomic_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "x.csv").string();
  const std::string dead = path + ".tmp.4194305", alive = path + ".tmp." + std::to_string(::getppid());
  std::ofstream(dead) << "half";
  std::ofstream(alive) << "in progress";
  ASSERT_TRUE(WriteFileAtomic(path, "a,b\n1,2\n").ok());
  Result<std::string> back = ReadFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "a,b\n1,2\n");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  // A folder where the file should go is an error naming it, and reading a folder says so.
  EXPECT_FALSE(WriteFileAtomic(dir.string(), "x").ok());
  Result<std::string> folder = ReadFile(dir.string());
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.error().message(), dir.string() + ": is a directory, expected a file");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mmtwin

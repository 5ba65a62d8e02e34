// SPDX-License-Identifier: Apache-2.0
// The trace CSV format's input checks: a repeated sample_id and a repeated header column are errors naming
// file:line: field (both lines for the id), not silently accepted; importers of foreign CSVs refuse a repeated
// column only where they read it.
#include <gtest/gtest.h>

#include <string>

#include "core/trace/import.h"
#include "core/trace/trace.h"

namespace mmtwin {
namespace {

const char* kHeader = "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens\n";

TEST(TraceFormatTest, DuplicateSampleIdNamesBothLines) {
  const std::string text = std::string("# mmtwin-trace v1\n") + kHeader +
                           "a,coco,1,1,0,0,10\n"
                           "b,coco,1,1,0,0,10\n"
                           "c,coco,1,1,0,0,10\n"
                           "b,coco,1,1,0,0,12\n"
                           "a,coco,1,1,0,0,12\n";
  Result<Trace> t = ParseTrace(text, "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(),
            "t.csv:6: sample_id: duplicate 'b' (first at line 4); sample ids must be unique in a trace");
}

TEST(TraceFormatTest, ManyCopiesOfOneIdAreFoundAtTheSecond) {
  std::string text = kHeader;
  for (int i = 0; i < 20000; ++i) text += "same,s,0,0,0,0,1\n";
  Result<Trace> t = ParseTrace(text, "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message().substr(0, 46), "t.csv:3: sample_id: duplicate 'same' (first at");
}

TEST(TraceFormatTest, UniqueIdsParse) {
  std::string text = kHeader;
  for (int i = 0; i < 1000; ++i) text += "id" + std::to_string(i) + ",s,0,0,0,0,1\n";
  Result<Trace> t = ParseTrace(text, "t.csv");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->size(), 1000u);
}

TEST(TraceFormatTest, DuplicateHeaderColumnIsAnError) {
  const std::string text =
      "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,text_tokens\n"
      "a,coco,1,1,0,0,10,99\n";
  Result<Trace> t = ParseTrace(text, "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(),
            "t.csv:1: text_tokens: the column appears twice in the header (columns 7 and 8)");
}

TEST(TraceImportTest, RepeatedColumnIsRefusedOnlyWhereRead) {
  // CSV import: the mapped column repeated is ambiguous; an unmapped one repeated is not read at all.
  Result<Trace> bad =
      ImportCsvText("utt,dur,dur\nx,1,2\n", "a.csv", {{"sample_id", "utt"}, {"audio_seconds", "dur"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "a.csv:1: dur: the column appears twice in the header (columns 2 and 3)");
  Result<Trace> ok =
      ImportCsvText("utt,dur,x,x\nu1,1.5,a,b\n", "a.csv", {{"sample_id", "utt"}, {"audio_seconds", "dur"}});
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_DOUBLE_EQ(ok->samples[0].audio_seconds, 1.5);
  Result<Trace> libri =
      ImportLibriSpeechText("sample_id,audio_seconds,audio_seconds\nu,1,2\n", "dev-clean.csv");
  ASSERT_FALSE(libri.ok());
  EXPECT_NE(libri.error().message().find("dev-clean.csv:1: audio_seconds: the column appears twice"),
            std::string::npos)
      << libri.error().message();
}

TEST(TraceImportTest, LlavaTileCountPastUint32IsAnErrorNotSaturation) {
  LlavaImportOptions opt;
  opt.tiles_per_image = 4000000000u;
  Result<Trace> r = ImportLlavaText(
      R"([{"id":"a","image":["x/1.jpg","x/2.jpg"],"conversations":[{"from":"human","value":"<image> <image>"}]}])",
      "llava.json", opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.error().message().find("llava.json: [0]: 2 images x 4000000000 tiles per image is above the limit"),
      std::string::npos)
      << r.error().message();
  opt.tiles_per_image = 2000000000u;  // 4e9 tiles: still fits uint32
  Result<Trace> ok = ImportLlavaText(
      R"([{"id":"a","image":["x/1.jpg","x/2.jpg"],"conversations":[{"from":"human","value":"hi"}]}])",
      "llava.json", opt);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->samples[0].image_tiles, 4000000000u);
}

}  // namespace
}  // namespace mmtwin

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

// Issue 34: invalid UTF-8 in a trace's text fields was accepted (and then written into JSON and CSV outputs);
// each field is refused at its line. Valid multi-byte text is kept.
TEST(TraceFormatTest, TextFieldsMustBeUtf8) {
  const std::string head =
      "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,meta\n";
  auto err = [](const std::string& text) {
    Result<Trace> t = ParseTrace(text, "t.csv");
    return t.ok() ? std::string("ok") : t.error().message();
  };
  EXPECT_EQ(err(head + "a,coco,1,1,0,0,10,\xc3\xa9t\xc3\xa9\n"), "ok");
  EXPECT_EQ(err(head + "a,coco,1,1,0,0,10,m\nb\xff,coco,1,1,0,0,10,m\n"),
            "t.csv:3: sample_id: not valid UTF-8");
  EXPECT_EQ(err(head + "a,co\xc3,1,1,0,0,10,m\n"), "t.csv:2: subset: not valid UTF-8");
  EXPECT_EQ(err(head + "a,coco,1,1,0,0,10,\xed\xa0\x80\n"), "t.csv:2: meta: not valid UTF-8");  // a surrogate
}

// The optional image-size column: read, written back byte for byte, kept out of traces without sizes, part of
// the digest only where set.
TEST(TraceFormatTest, ImagePxRoundTrips) {
  const std::string text =
      "# mmtwin-trace v1\n"
      "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,image_px,meta\n"
      "a,coco,1,1,0,0,10,494,\n"
      "b,coco,1,1,0,0,12,0,\n"
      "c,audio,0,0,0,2.5000,7,0,m\n"
      "d,docs,2,10,0,0,50,1934,\n";
  Result<Trace> t = ParseTrace(text, "t.csv");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->samples[0].image_px, 494);
  EXPECT_EQ(t->samples[1].image_px, 0);
  EXPECT_EQ(t->samples[3].image_px, 1934);
  EXPECT_EQ(FormatTrace(*t), text);
  // An empty cell is "not known", like 0.
  Result<Trace> e =
      ParseTrace(std::string(kHeader).replace(std::string(kHeader).size() - 1, 1, ",image_px\n") +
                     "a,coco,1,1,0,0,10,\n",
                 "e.csv");
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->samples[0].image_px, 0);
  // No size anywhere: no column, so traces without sizes keep their bytes; and their digest.
  Trace none = *t;
  for (Sample& s : none.samples) s.image_px = 0;
  EXPECT_EQ(FormatTrace(none).find("image_px"), std::string::npos);
  Result<Trace> old = ParseTrace(FormatTrace(none), "old.csv");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(TraceDigest(*old), TraceDigest(none));
  EXPECT_NE(TraceDigest(*t), TraceDigest(none));
  Trace other = *t;
  other.samples[0].image_px = 495;
  EXPECT_NE(TraceDigest(other), TraceDigest(*t));
}

TEST(TraceFormatTest, ImageWidthAndHeightGiveTheSideOfTheArea) {
  const std::string text =
      std::string("sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,image_width,") +
      "image_height\n"
      "a,coco,1,1,0,0,10,640,480\n"
      "b,coco,1,1,0,0,10,,\n";
  Result<Trace> t = ParseTrace(text, "t.csv");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->samples[0].image_px, 554);  // round(sqrt(640 x 480)) = round(554.26)
  EXPECT_EQ(t->samples[1].image_px, 0);
  // Written back as image_px.
  EXPECT_NE(FormatTrace(*t).find(",text_tokens,image_px,meta\n"), std::string::npos);
}

TEST(TraceFormatTest, ImageSizeErrorsNameFileLineAndField) {
  const std::string px =
      "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,image_px\n";
  auto error = [](const std::string& text) {
    Result<Trace> t = ParseTrace(text, "t.csv");
    return t.ok() ? std::string("ok") : t.error().message();
  };
  EXPECT_EQ(error(px + "a,s,1,1,0,0,1,70000\n").substr(0, 40), "t.csv:2: image_px: '70000' is not an int");
  EXPECT_EQ(error(px + "a,s,1,1,0,0,1,-3\n").substr(0, 37), "t.csv:2: image_px: '-3' is not an int");
  EXPECT_EQ(error(px + "a,s,1,1,0,0,1,5\nb,s,0,0,0,0,1,448\n"),
            "t.csv:3: image_px: 448 px given for a sample without images");
  const std::string wh =
      "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,image_width,image_height\n";
  EXPECT_EQ(error(wh + "a,s,1,1,0,0,1,640,\n"),
            "t.csv:2: image_height: not known while the other side is; give both or neither");
  EXPECT_EQ(error("sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,image_width\n"
                  "a,s,1,1,0,0,1,640\n")
                .substr(0, 33),
            "t.csv:1: image_height: missing co");
  EXPECT_EQ(error("sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,image_px,"
                  "image_width,image_height\na,s,1,1,0,0,1,5,5,5\n"),
            "t.csv:1: image_px: give image_px or image_width and image_height, not both");
  // ValidateTrace: a size without images.
  Trace bad;
  Sample s;
  s.image_px = 300;
  bad.subsets = {"s"};
  bad.Add(s, "x");
  EXPECT_FALSE(ValidateTrace(bad, "b").ok());
}

TEST(TraceImportTest, CsvImportMapsImageSizes) {
  Result<Trace> r =
      ImportCsvText("id,n,w,h\na,1,640,480\nb,1,,\nc,0,,\n", "s.csv",
                    {{"sample_id", "id"}, {"images", "n"}, {"image_width", "w"}, {"image_height", "h"}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->samples[0].image_px, 554);
  EXPECT_EQ(r->samples[1].image_px, 0);
  Result<Trace> px = ImportCsvText("id,n,s\na,1,300\n", "s.csv", {{"images", "n"}, {"image_px", "s"}});
  ASSERT_TRUE(px.ok()) << px.error().message();
  EXPECT_EQ(px->samples[0].image_px, 300);
  Result<Trace> lone = ImportCsvText("id,n,w\na,1,3\n", "s.csv", {{"images", "n"}, {"image_width", "w"}});
  ASSERT_FALSE(lone.ok());
  EXPECT_NE(lone.error().message().find("image_width and image_height together"), std::string::npos);
  Result<Trace> no_image = ImportCsvText("id,n,s\na,0,300\n", "s.csv", {{"images", "n"}, {"image_px", "s"}});
  ASSERT_FALSE(no_image.ok());
  EXPECT_EQ(no_image.error().message(),
            "s.csv:2: image_px: an image size for a sample without images (map images too)");
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

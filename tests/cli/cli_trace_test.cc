// SPDX-License-Identifier: Apache-2.0
// `mmtwin trace import|gen|stats` end to end: runs the built binary on small temporary files and checks exit
// codes, the one-line summary, written traces and error messages.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/trace/generate.h"
#include "core/trace/trace.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class CliTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mmtwin_cli_trace_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& content) const {
    std::ofstream(dir_ / name) << content;
    return Path(name);
  }
  // Runs `mmtwin ARGS` with the working directory set to the temp dir.
  CliRun Mmtwin(const std::string& args) const {
    const std::string cmd = "cd '" + dir_.string() + "' && '" MMTWIN_CLI "' " + args + " >'" +
                            Path("stdout") + "' 2>'" + Path("stderr") + "'";
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(dir_ / "stdout");
    r.err = Slurp(dir_ / "stderr");
    return r;
  }

  fs::path dir_;
};

constexpr const char* kLlava = R"([
 {"id": "1", "image": "coco/a.jpg", "conversations": [{"from": "human", "value": "<image>\nWhat is it?"},
                                                     {"from": "gpt", "value": "A cat."}]},
 {"id": "2", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello there"}]}
])";

TEST_F(CliTraceTest, ImportLlavaWritesTraceAndSummary) {
  Write("llava.json", kLlava);
  const CliRun r = Mmtwin("trace import --format llava llava.json -o out.csv --tiles-per-image 7");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote 2 samples to out.csv\n");
  Result<Trace> t = ReadTrace(Path("out.csv"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ(t->samples[0].image_tiles, 7u);
  EXPECT_EQ(t->subsets[t->samples[0].subset], "coco");
  EXPECT_EQ(t->subsets[t->samples[1].subset], "text-only");
  EXPECT_EQ(Slurp(dir_ / "out.csv").rfind("# mmtwin-trace v1\n", 0), 0u);
}

TEST_F(CliTraceTest, ImportLlavaMalformedNamesElement) {
  Write("bad.json", R"([{"id": "1", "conversations": [{"from": "human", "value": 5}]}])");
  const CliRun r = Mmtwin("trace import --format llava bad.json -o out.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.json: [0].conversations[0].value: expected a string"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out.csv"));
}

TEST_F(CliTraceTest, ImportLibriSpeechReal) {
  const CliRun r = Mmtwin("trace import --format librispeech '" MMTWIN_SOURCE_DIR
                          "/traces/sources/librispeech_dev-clean_durations.csv' -o dev.csv");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote 2703 samples to dev.csv\n");
  const CliRun s = Mmtwin("trace stats dev.csv --json");
  ASSERT_EQ(s.code, 0) << s.err;
  const nlohmann::json j = nlohmann::json::parse(s.out);
  EXPECT_EQ(j.at("samples").get<int64_t>(), 2703);
  EXPECT_GT(j.at("modalities").at("audio_seconds").at("mean").get<double>(), 1.0);
  EXPECT_EQ(j.at("subsets").at(0).at("name").get<std::string>(), "dev-clean");
}

TEST_F(CliTraceTest, ImportCsvWithMapping) {
  Write("a.csv", "utt,dur,task\nx,1.5,asr\ny,2,qa\n");
  const CliRun r = Mmtwin(
      "trace import --format csv a.csv -o t.csv --map sample_id=utt --map audio_seconds=dur "
      "--map subset=task");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote 2 samples to t.csv\n");
  Result<Trace> t = ReadTrace(Path("t.csv"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->id(1), "y");
  EXPECT_DOUBLE_EQ(t->samples[0].audio_seconds, 1.5);
}

TEST_F(CliTraceTest, ImportCsvMalformedRowsAndNegativeSizes) {
  Write("neg.csv", "id,img\na,1\nb,-2\n");
  CliRun r = Mmtwin("trace import --format csv neg.csv -o t.csv --map sample_id=id --map images=img");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("neg.csv:3: images: '-2' is not a non-negative integer"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "t.csv"));

  Write("short.csv", "id,dur\na,1\nb\n");
  r = Mmtwin("trace import --format csv short.csv -o t.csv --map audio_seconds=dur");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("short.csv:3: expected 2 fields, found 1"), std::string::npos) << r.err;

  r = Mmtwin("trace import --format csv short.csv -o t.csv --map seconds=dur");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown trace field 'seconds'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("valid values are: sample_id, subset,"), std::string::npos) << r.err;

  r = Mmtwin("trace import --format csv short.csv -o t.csv --map audio_seconds=duration");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("short.csv:1: audio_seconds: column 'duration' not found"), std::string::npos)
      << r.err;

  r = Mmtwin("trace import --format csv short.csv -o t.csv --map audio_seconds");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("expected TRACE_FIELD=SOURCE_COLUMN"), std::string::npos) << r.err;
}

TEST_F(CliTraceTest, ImportLibriSpeechNegativeDuration) {
  Write("ls.csv", "sample_id,audio_seconds\na,1.0\nb,-0.5\n");
  const CliRun r = Mmtwin("trace import --format librispeech ls.csv -o t.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("ls.csv:3: audio_seconds: '-0.5' is not a non-negative number"), std::string::npos)
      << r.err;
}

TEST_F(CliTraceTest, MissingFileUnknownFormatAndBadFlags) {
  CliRun r = Mmtwin("trace import --format llava nope.json -o t.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nope.json: cannot open"), std::string::npos) << r.err;

  r = Mmtwin("trace import --format parquet x -o t.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown format 'parquet'; valid values are: llava, librispeech, csv"),
            std::string::npos)
      << r.err;

  r = Mmtwin("trace import --format llava x.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing -o OUT"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("usage:"), std::string::npos) << r.err;

  r = Mmtwin("trace import x.json -o t.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing --format"), std::string::npos) << r.err;

  r = Mmtwin("trace import --format llava x.json -o t.csv --tiles-per-image 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--tiles-per-image: '0' is not a positive integer"), std::string::npos) << r.err;

  r = Mmtwin("trace import --format llava x.json -o t.csv --bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown option '--bogus'"), std::string::npos) << r.err;

  r = Mmtwin("trace import --format llava x.json -o");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option -o needs a value"), std::string::npos) << r.err;

  r = Mmtwin("trace frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown subcommand 'frobnicate'; valid values are: import, gen, stats"),
            std::string::npos);

  r = Mmtwin("trace");
  EXPECT_EQ(r.code, 2);

  r = Mmtwin("trace stats missing.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing.csv: cannot open"), std::string::npos) << r.err;

  r = Mmtwin("trace --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage:"), std::string::npos);
  // Every subcommand's help is a success too (`trace import --help` exited 2 once).
  for (const char* sub : {"import", "gen", "stats"}) {
    r = Mmtwin(std::string("trace ") + sub + " --help");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_NE(r.out.find("usage: mmtwin trace"), std::string::npos) << sub << ": " << r.out;
  }
}

TEST_F(CliTraceTest, StatsRejectsMalformedTrace) {
  Write("t.csv",
        "# mmtwin-trace v1\nsample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,meta\n"
        "a,s,1,1,0,0,10,\nb,s,2,1,0,0,10,\n");
  const CliRun r = Mmtwin("trace stats t.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("t.csv:4: image_tiles: "), std::string::npos) << r.err;
}

TEST_F(CliTraceTest, StatsTextAndModel) {
  Write("t.csv",
        "# mmtwin-trace v1\nsample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens,meta\n"
        "a,coco,1,5,0,0,10,\nb,coco,1,5,0,0,30,\nc,text,0,0,0,0,20,\n");
  CliRun r = Mmtwin("trace stats t.csv");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 samples, 2 subsets"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("text_tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("66.67%"), std::string::npos) << r.out;

  r = Mmtwin("trace stats t.csv --model no-such-model");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no-such-model"), std::string::npos) << r.err;

  r = Mmtwin("trace stats t.csv --json --model llava-1.5-7b");
  if (r.code == 0) {
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j.at("modalities").contains("vit_tokens"));
    EXPECT_GE(j.at("modalities").at("llm_tokens").at("min").get<double>(), 20);
  } else {
    EXPECT_EQ(r.code, 2) << r.err;  // zoo without that model: still a clean error
  }
}

TEST_F(CliTraceTest, GenPresetsAreDeterministic) {
  const auto& presets = GeneratorPresets();
  ASSERT_FALSE(presets.empty());
  const std::string name = presets.front().name;
  CliRun a = Mmtwin("trace gen --preset " + name + " --samples 200 --seed 3 -o a.csv");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, "wrote 200 samples to a.csv\n");
  CliRun b = Mmtwin("trace gen --preset " + name + " --samples 200 --seed 3 -o b.csv");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(Slurp(dir_ / "a.csv"), Slurp(dir_ / "b.csv"));
  Result<Trace> t = ReadTrace(Path("a.csv"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->size(), 200u);

  CliRun bad = Mmtwin("trace gen --preset no-such --samples 10 -o c.csv");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown preset 'no-such'; valid values are: " + name), std::string::npos)
      << bad.err;
  bad = Mmtwin("trace gen --preset " + name + " --samples -5 -o c.csv");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--samples: '-5' is not a positive integer"), std::string::npos) << bad.err;
  bad = Mmtwin("trace gen --preset " + name + " --samples 10");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("missing -o OUT"), std::string::npos) << bad.err;

  CliRun list = Mmtwin("trace gen --list");
  EXPECT_EQ(list.code, 0);
  EXPECT_NE(list.out.find(name), std::string::npos);
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The run folder (core/records/run_folder.h): every part written by RunFolderWriter reads back equal through
// ReadRunFolder, the files on disk are exactly their codecs' text, optional parts may be absent, and errors say
// what went wrong where: a missing folder or file is Error::Io naming the path, damaged content names file:line.
#include "core/records/run_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/records/plan_codec.h"
#include "core/records/records_codec.h"
#include "driver/planner.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

class RunFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("mmtwin_run_folder_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Dir(const std::string& name) const { return (root_ / name).string(); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }

  fs::path root_;
};

RunSummary Summary() {
  RunSummary s;
  s.source = RecordSource::kMeasured;
  s.scenario = "small";
  s.model = "tiny";
  s.engine = "libtorch-gloo";
  s.iteration_time_us = {1000.5, 1000, 1100, 900, 1101, 990, 1011};
  s.busy_ratio = 0.625;
  StageRecord st;
  st.stage = 0;
  st.first_layer_label = "llm.embed";
  st.last_layer_label = "llm.head";
  st.fwd_us_mean = 12.75;
  st.peak_memory_bytes = int64_t{3} << 33;
  s.stages = {st, st};
  s.stages[1].stage = 1;
  return s;
}

std::vector<OpRecord> Ops() {
  std::vector<OpRecord> ops(3);
  for (int i = 0; i < 3; ++i) {
    ops[i].source = RecordSource::kMeasured;
    ops[i].iteration = 4;
    ops[i].device = i;
    ops[i].start_us = 10.5 * i;
    ops[i].duration_us = 3.25 + i;
    ops[i].tokens = 100 * i;
  }
  ops[2].kind = OpKind::kBackward;
  ops[2].pass = PassKind::kBackward;
  return ops;
}

// What LayerTimingsCsv names each row by: the label and kind of its layer.
std::vector<Layer> ModelLayers() {
  std::vector<Layer> layers(2);
  layers[0].label = "llm.embed";
  layers[0].kind = LayerKind::kEmbedding;
  layers[1].label = "llm.block.0";
  return layers;
}

std::vector<LayerTiming> LayerRows() {
  LayerTiming t;
  t.layer = 1;
  t.tokens = 2048;
  t.fwd_us = 81.5;
  t.bwd_us = 160.25;
  return {t, t};
}

TEST_F(RunFolderTest, EveryPartRoundTripsAndIsItsCodecsText) {
  auto scenario = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message();
  auto planned = BuildPlan(*scenario, {});
  ASSERT_TRUE(planned.ok()) << planned.error().message();
  const RunSummary summary = Summary();
  const std::vector<OpRecord> ops = Ops();
  const std::vector<PingPongSample> pingpong = {{1, 4096, 51.5, 0}, {3, 1 << 20, 700.25, 0}};
  const std::string yaml = FormatScenario(*scenario), trace = "{\"traceEvents\": []}\n";
  RunFolderWriter w;
  w.AddSummary(summary).AddOps(ops).AddTrace(trace).AddScenario(yaml);
  w.AddLayers(LayerRows(), ModelLayers()).AddPlan(planned->plan).AddPingPong(pingpong);
  EXPECT_EQ(w.names(),
            (std::vector<std::string>{"summary.json", "stages.csv", "ops.csv", "trace.json", "scenario.yaml",
                                      "layers.csv", "plan.json", "pingpong.csv"}));
  const std::string dir = Dir("all");
  ASSERT_TRUE(w.Write(dir).ok());

  // On disk: each file is its codec's text (the JSON ones with one final newline).
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kSummary)), SummaryToJson(summary) + "\n");
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kStages)), StagesCsv(summary.stages));
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kOps)), OpsCsv(ops));
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kTrace)), trace);
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kScenario)), yaml);
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kLayers)), LayerTimingsCsv(LayerRows(), ModelLayers()));
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kPlan)), PlanToJson(planned->plan) + "\n");
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kPingPong)), PingPongCsv(pingpong));

  // Read back: each decoded part equals what was written.
  auto run = ReadRunFolder(dir, {RunFile::kSummary, RunFile::kOps, RunFile::kTrace, RunFile::kScenario,
                                 RunFile::kLayers, RunFile::kPlan, RunFile::kPingPong});
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->dir, dir);
  EXPECT_EQ(SummaryToJson(*run->summary), SummaryToJson(summary));
  EXPECT_EQ(OpsCsv(*run->ops), OpsCsv(ops));
  EXPECT_EQ(*run->trace_json, trace);
  EXPECT_EQ(*run->scenario_yaml, yaml);
  EXPECT_EQ(LayerTimingsCsv(*run->layers, ModelLayers()), LayerTimingsCsv(LayerRows(), ModelLayers()));
  EXPECT_TRUE(*run->plan == planned->plan);
  ASSERT_EQ(run->pingpong->size(), 2u);
  EXPECT_EQ((*run->pingpong)[1].bytes, 1 << 20);
  EXPECT_DOUBLE_EQ((*run->pingpong)[1].round_trip_us, 700.25);
  // The scenario parses as LoadScenario reads the file.
  auto parsed = ScenarioOf(*run);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  auto loaded = LoadScenario(RunFilePath(dir, RunFile::kScenario));
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(FormatScenario(*parsed), FormatScenario(*loaded));
  // The summary alone, by folder, by file and by RunFolderOf.
  EXPECT_EQ(SummaryToJson(*LoadSummary(dir)), SummaryToJson(summary));
  EXPECT_EQ(SummaryToJson(*LoadSummary(RunFilePath(dir, RunFile::kSummary))), SummaryToJson(summary));
  EXPECT_EQ(RunFolderOf(RunFilePath(dir, RunFile::kSummary)), dir);
  EXPECT_EQ(RunFolderOf(dir), dir);
  EXPECT_EQ(RunFolderOf(RunFilePath(dir, RunFile::kScenario)), RunFilePath(dir, RunFile::kScenario));
}

// A measured run's machine record round-trips; a summary without one (every simulated run) has no "machine" key,
// so simulated summaries are byte-identical to before issue 33.
TEST_F(RunFolderTest, TheMachineRecordRoundTripsAndIsAbsentFromSimulatedRuns) {
  RunSummary s = Summary();
  EXPECT_EQ(SummaryToJson(s).find("\"machine\""), std::string::npos);
  s.source = RecordSource::kMeasured;
  MachineRecord m;
  m.host = "node-7";
  m.cpu = "AMD EPYC 7B13";
  m.cores = 2;
  m.threads_per_rank = 1;
  m.ranks = 4;
  m.gpu = "NVIDIA H200";
  m.cuda_driver = "13.0";
  m.torch = "2.11.0";
  m.load_avg_1m_start = 0.25;
  m.load_avg_1m_end = 3.5;
  s.machine = m;
  const std::string dir = Dir("machine");
  std::filesystem::create_directories(dir);
  Write(RunFilePath(dir, RunFile::kSummary), SummaryToJson(s) + "\n");
  auto back = LoadSummary(dir);
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->machine.has_value());
  EXPECT_EQ(back->machine->host, "node-7");
  EXPECT_EQ(back->machine->cpu, "AMD EPYC 7B13");
  EXPECT_EQ(back->machine->cores, 2);
  EXPECT_EQ(back->machine->ranks, 4);
  EXPECT_EQ(back->machine->gpu, "NVIDIA H200");
  EXPECT_EQ(back->machine->cuda_driver, "13.0");
  EXPECT_EQ(back->machine->torch, "2.11.0");
  EXPECT_DOUBLE_EQ(back->machine->load_avg_1m_end, 3.5);
  EXPECT_EQ(SummaryToJson(*back), SummaryToJson(s));
}

TEST_F(RunFolderTest, OptionalPartsMayBeAbsentAndOnlyWhatIsAskedIsRead) {
  const std::string dir = Dir("some");
  ASSERT_TRUE(RunFolderWriter().AddSummary(Summary()).AddScenario("name: x\n").Write(dir).ok());
  auto run = ReadRunFolder(dir, {RunFile::kSummary}, {RunFile::kOps, RunFile::kPlan});
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_TRUE(run->summary.has_value());
  EXPECT_FALSE(run->ops.has_value());
  EXPECT_FALSE(run->plan.has_value());
  EXPECT_FALSE(run->scenario_yaml.has_value());  // present, not asked for
  // Asked for, and missing: I/O, naming the file.
  auto missing = ReadRunFolder(dir, {RunFile::kSummary, RunFile::kOps});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kIo);
  EXPECT_EQ(missing.error().message(), RunFilePath(dir, RunFile::kOps) + ": missing from the run folder");
  // The stages are read from the summary, never from stages.csv.
  auto stages = ReadRunFolder(dir, {RunFile::kStages});
  ASSERT_FALSE(stages.ok());
  EXPECT_EQ(stages.error().kind(), ErrorKind::kInternal);
}

TEST_F(RunFolderTest, AMissingFolderOrSummaryIsAnIoError) {
  const std::string dir = Dir("nowhere");
  auto run = ReadRunFolder(dir, {RunFile::kSummary});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().kind(), ErrorKind::kIo);
  EXPECT_EQ(run.error().message(), dir + ": no such run folder");
  auto summary = LoadSummary(dir);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.error().kind(), ErrorKind::kIo);
  EXPECT_EQ(summary.error().message(), dir + ": no such summary (give a run folder or a summary.json)");
  // A part that is not a file cannot be read: I/O as well.
  fs::create_directories(Dir("odd/ops.csv"));
  Write(Dir("odd/summary.json"), SummaryToJson(Summary()));
  auto odd = ReadRunFolder(Dir("odd"), {RunFile::kSummary, RunFile::kOps});
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().kind(), ErrorKind::kIo);
  EXPECT_NE(odd.error().message().find(Dir("odd/ops.csv")), std::string::npos) << odd.error().message();
}

TEST_F(RunFolderTest, DamagedContentNamesTheFileAndLine) {
  const std::string dir = Dir("damaged");
  ASSERT_TRUE(RunFolderWriter().AddSummary(Summary()).AddOps(Ops()).Write(dir).ok());
  const std::string ops_path = RunFilePath(dir, RunFile::kOps),
                    summary_path = RunFilePath(dir, RunFile::kSummary);
  // ops.csv: the third op (line 5: version, header, two ops before it) with a duration that is not a number.
  std::string ops = Read(ops_path);
  std::vector<std::string> lines;
  std::istringstream in(ops);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u);
  lines[4].replace(lines[4].find(",5.25,"), 6, ",x,");
  std::string damaged;
  for (const std::string& l : lines) damaged += l + "\n";
  Write(ops_path, damaged);
  auto bad_ops = ReadRunFolder(dir, {RunFile::kSummary}, {RunFile::kOps});
  ASSERT_FALSE(bad_ops.ok());
  EXPECT_EQ(bad_ops.error().kind(), ErrorKind::kInvalidInput);
  EXPECT_EQ(bad_ops.error().message().rfind(ops_path + ":5: duration_us: 'x' is not valid", 0), 0u)
      << bad_ops.error().message();
  // summary.json: a syntax error on line 3.
  Write(summary_path, "{\n  \"scenario\": \"a\",\n  \"model\" \"b\"\n}\n");
  auto bad_summary = ReadRunFolder(dir, {RunFile::kSummary});
  ASSERT_FALSE(bad_summary.ok());
  EXPECT_EQ(bad_summary.error().kind(), ErrorKind::kInvalidInput);
  EXPECT_EQ(bad_summary.error().message().rfind(summary_path + ":3: not valid JSON: ", 0), 0u)
      << bad_summary.error().message();
  // Well-formed JSON without a field: the file and the field.
  Write(summary_path, "{\"scenario\": \"a\"}\n");
  auto no_model = LoadSummary(dir);
  ASSERT_FALSE(no_model.ok());
  EXPECT_EQ(no_model.error().message(), summary_path + ": model: missing");
  // layers.csv: the file's own line.
  ASSERT_TRUE(RunFolderWriter().AddLayers(LayerRows(), ModelLayers()).Write(Dir("layers")).ok());
  const std::string layers_path = RunFilePath(Dir("layers"), RunFile::kLayers);
  std::string layers = Read(layers_path);
  layers += "junk\n";
  Write(layers_path, layers);
  auto bad_layers = ReadRunFolder(Dir("layers"), {RunFile::kLayers});
  ASSERT_FALSE(bad_layers.ok());
  EXPECT_EQ(bad_layers.error().message().rfind(layers_path + ":5:", 0), 0u) << bad_layers.error().message();
}

TEST_F(RunFolderTest, ARewriteReplacesItsFilesAsAUnitAndKeepsTheOthers) {
  const std::string dir = Dir("rewrite");
  ASSERT_TRUE(RunFolderWriter().AddSummary(Summary()).AddScenario("name: old\n").Write(dir).ok());
  Write(dir + "/notes.txt", "mine");
  RunFolderWriter w;
  w.AddScenario("name: first\n").AddScenario("name: new\n");  // the second replaces the first
  EXPECT_EQ(w.names(), std::vector<std::string>{"scenario.yaml"});
  ASSERT_TRUE(w.Write(dir).ok());
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kScenario)), "name: new\n");
  EXPECT_EQ(Read(RunFilePath(dir, RunFile::kSummary)), SummaryToJson(Summary()) + "\n");
  EXPECT_EQ(Read(dir + "/notes.txt"), "mine");
}

}  // namespace
}  // namespace mmtwin

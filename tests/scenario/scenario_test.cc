// SPDX-License-Identifier: Apache-2.0
// Scenario files: defaults, round trip through FormatScenario, relative paths, every error path naming
// file:line and the key, and the shipped scenarios under scenarios/.
#include "core/scenario/scenario.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/plan/pricing.h"
#include "core/util/csv.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

const char* kMinimal = R"(trace: {preset: internvl-1.2m, samples: 1000}
model: internvl-1.5-6b-20b
)";

const char* kFull = R"(name: full
description: every key given
trace:
  preset: internvl-1.2m
  samples: 5000
  seed: 7
model: internvl-1.5-6b-34b
cluster: {preset: a100-2x200g, nodes: 6}
parallel: {dp: 5, tp: 2, pp: 4, vpp: 2, micro_batches: 12, zero_stage: 2, tp_sequence_parallel: false}
policies:
  data: {name: isf, params: {iterations: 10, q_v: "9"}}
  partition: {name: bmp, params: {radius: 2}}
  recompute: block:4
  schedule: interleaved-1f1b
iterations: 32
seed: 42
engine: analytic
)";

Result<Scenario> Parse(const std::string& text, const std::string& name = "s.yaml") {
  return ParseScenario(text, name, ".");
}

// The message of a failed parse ("" when it parsed).
std::string ErrorOf(const std::string& text) {
  auto r = Parse(text);
  return r.ok() ? std::string() : r.error().message();
}

TEST(ScenarioTest, MinimalScenarioGetsEveryDefault) {
  auto r = Parse(kMinimal, "dir/my-run.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Scenario& s = *r;
  EXPECT_EQ(s.name, "my-run");  // the file's stem
  EXPECT_EQ(s.path, "dir/my-run.yaml");
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.trace.preset, "internvl-1.2m");
  EXPECT_EQ(s.trace.samples, 1000);
  EXPECT_EQ(s.trace.seed, 1u);
  EXPECT_EQ(s.trace.file, "");
  EXPECT_EQ(s.model, "internvl-1.5-6b-20b");
  EXPECT_EQ(s.cluster, "a100-4x200g");
  EXPECT_EQ(s.nodes, 1);  // 1 GPU needs one node
  EXPECT_EQ(s.parallel.dp, 1);
  EXPECT_EQ(s.parallel.tp, 1);
  EXPECT_EQ(s.parallel.pp, 1);
  EXPECT_EQ(s.parallel.vpp, 1);
  EXPECT_EQ(s.parallel.micro_batches, 1);
  EXPECT_EQ(s.parallel.zero_stage, 0);
  EXPECT_TRUE(s.parallel.tp_sequence_parallel);
  EXPECT_EQ(s.data.name, "random");
  EXPECT_EQ(s.partition.name, "uniform");
  EXPECT_EQ(s.recompute.name, "none");
  EXPECT_EQ(s.schedule.name, "1f1b");
  EXPECT_EQ(s.iterations, 8);
  EXPECT_FALSE(s.epoch);
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.engine, "analytic");
}

TEST(ScenarioTest, FullScenarioKeepsEveryValue) {
  auto r = Parse(kFull);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Scenario& s = *r;
  EXPECT_EQ(s.name, "full");
  EXPECT_EQ(s.description, "every key given");
  EXPECT_EQ(s.trace.samples, 5000);
  EXPECT_EQ(s.trace.seed, 7u);
  EXPECT_EQ(s.model, "internvl-1.5-6b-34b");
  EXPECT_EQ(s.cluster, "a100-2x200g");
  EXPECT_EQ(s.nodes, 6);
  EXPECT_EQ(s.parallel.dp, 5);
  EXPECT_EQ(s.parallel.tp, 2);
  EXPECT_EQ(s.parallel.pp, 4);
  EXPECT_EQ(s.parallel.vpp, 2);
  EXPECT_EQ(s.parallel.micro_batches, 12);
  EXPECT_EQ(s.parallel.zero_stage, 2);
  EXPECT_FALSE(s.parallel.tp_sequence_parallel);
  EXPECT_EQ(s.data.name, "isf");
  EXPECT_EQ(s.data.params, (std::map<std::string, std::string>{{"iterations", "10"}, {"q_v", "9"}}));
  EXPECT_EQ(s.partition.params.at("radius"), "2");
  EXPECT_EQ(s.recompute.name, "block:4");  // a bare name is kept verbatim
  EXPECT_TRUE(s.recompute.params.empty());
  EXPECT_EQ(s.schedule.name, "interleaved-1f1b");
  EXPECT_EQ(s.iterations, 32);
  EXPECT_EQ(s.seed, 42u);
}

TEST(ScenarioTest, PresetDefaultSizeNodesAndEpoch) {
  auto r = Parse(R"(trace: {preset: internvl-1.2m}
model: internvl-1.5-6b-20b
parallel: {dp: 3, tp: 2, pp: 4}
iterations: epoch
)");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->trace.samples, 1267819);  // the preset's default (the real dataset's size)
  EXPECT_EQ(r->nodes, 3);                // ceil(24 GPUs / 8 per node)
  EXPECT_TRUE(r->epoch);
  auto z = Parse("trace: {preset: internvl-1.2m, samples: 0}\nmodel: internvl-1.5-6b-20b\n");
  ASSERT_TRUE(z.ok()) << z.error().message();
  EXPECT_EQ(z->trace.samples, 1267819);
}

TEST(ScenarioTest, RoundTripThroughFormat) {
  const std::vector<std::string> texts = {
      kMinimal, kFull,
      "trace: {preset: internvl-1.2m}\nmodel: internvl-1.5-6b-20b\niterations: epoch\ndescription: 'a: b # "
      "c'\n",
      "trace: {preset: internvl-1.2m}\nmodel: llava-1.5-7b\npolicies:\n  data: {name: random, params: "
      "{batch_size: 8, flag: 'true', empty: ''}}\n  recompute: uniform:2\n"};
  // Parsing alone (ReadScenario): the last text's parameters test the quoting, they are not the random policy's.
  for (const auto& text : texts) {
    auto a = ReadScenario(text, "s.yaml", ".");
    ASSERT_TRUE(a.ok()) << a.error().message();
    const std::string yaml = FormatScenario(*a);
    auto b = ReadScenario(yaml, "s.yaml", ".");
    ASSERT_TRUE(b.ok()) << b.error().message() << "\n" << yaml;
    EXPECT_TRUE(*a == *b) << yaml;
    EXPECT_EQ(FormatScenario(*b), yaml);  // a fixed point, byte for byte
  }
}

TEST(ScenarioTest, FormatIsDeterministicAndComplete) {
  auto a = Parse(kMinimal);
  ASSERT_TRUE(a.ok());
  const std::string yaml = FormatScenario(*a);
  EXPECT_EQ(yaml, FormatScenario(*a));
  // Every key is written, in the documented order.
  size_t pos = 0;
  for (const char* key : {"name:",
                          "description:",
                          "trace:",
                          "preset:",
                          "samples:",
                          "seed:",
                          "model:",
                          "cluster:",
                          "nodes:",
                          "parallel:",
                          "dp:",
                          "tp:",
                          "pp:",
                          "vpp:",
                          "micro_batches:",
                          "zero_stage:",
                          "tp_sequence_parallel:",
                          "policies:",
                          "data:",
                          "partition:",
                          "recompute:",
                          "schedule:",
                          "iterations:",
                          "seed:",
                          "engine:"}) {
    const size_t at = yaml.find(key, pos);
    ASSERT_NE(at, std::string::npos) << key << " after " << pos << " in\n" << yaml;
    pos = at + 1;
  }
}

TEST(ScenarioTest, EqualityNoticesEveryField) {
  auto base = Parse(kFull);
  ASSERT_TRUE(base.ok());
  std::vector<void (*)(Scenario&)> mutations = {
      [](Scenario& s) { s.name += "x"; },
      [](Scenario& s) { s.description += "x"; },
      [](Scenario& s) { s.trace.samples++; },
      [](Scenario& s) { s.trace.seed++; },
      [](Scenario& s) { s.trace.preset += "x"; },
      [](Scenario& s) { s.trace.file = "x"; },
      [](Scenario& s) { s.model += "x"; },
      [](Scenario& s) { s.image_px = 336; },
      [](Scenario& s) { s.cluster += "x"; },
      [](Scenario& s) { s.nodes++; },
      [](Scenario& s) { s.parallel.dp++; },
      [](Scenario& s) { s.parallel.tp++; },
      [](Scenario& s) { s.parallel.pp++; },
      [](Scenario& s) { s.parallel.vpp++; },
      [](Scenario& s) { s.parallel.micro_batches++; },
      [](Scenario& s) { s.parallel.zero_stage++; },
      [](Scenario& s) { s.parallel.tp_sequence_parallel = !s.parallel.tp_sequence_parallel; },
      [](Scenario& s) { s.data.name += "x"; },
      [](Scenario& s) { s.partition.params["k"] = "v"; },
      [](Scenario& s) { s.recompute.name += "x"; },
      [](Scenario& s) { s.schedule.name += "x"; },
      [](Scenario& s) { s.iterations++; },
      [](Scenario& s) { s.epoch = true; },
      [](Scenario& s) { s.seed++; },
      [](Scenario& s) { s.engine += "x"; },
  };
  for (size_t i = 0; i < mutations.size(); ++i) {
    Scenario s = *base;
    mutations[i](s);
    EXPECT_FALSE(s == *base) << "mutation " << i;
  }
  Scenario e1 = *base, e2 = *base;
  e1.epoch = e2.epoch = true;
  e2.iterations = 99;  // ignored for an epoch replay
  EXPECT_TRUE(e1 == e2);
}

class ScenarioFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("scenario_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const fs::path& p, const std::string& text) {
    std::ofstream f(p);
    f << text;
  }
  fs::path dir_;
};

TEST_F(ScenarioFilesTest, RelativePathsResolveAgainstTheScenarioFolder) {
  Write(dir_ / "data" / "t.csv", "id\n");
  Write(dir_ / "s.yaml", "trace: {file: data/t.csv}\nmodel: internvl-1.5-6b-20b\n");
  auto r = LoadScenario((dir_ / "s.yaml").string());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(fs::path(r->trace.file), fs::absolute(dir_ / "data" / "t.csv").lexically_normal());
  EXPECT_TRUE(fs::path(r->trace.file).is_absolute());
  EXPECT_EQ(r->name, "s");
  // A model spec file next to the scenario, and a cluster preset file.
  const std::string zoo = std::string(MMTWIN_SOURCE_DIR) + "/traces";
  fs::copy_file(zoo + "/models/vicuna-7b-v1.5.yaml", dir_ / "data" / "m.yaml");
  fs::copy_file(zoo + "/clusters/a100-4x200g.yaml", dir_ / "data" / "c.yaml");
  Write(dir_ / "s2.yaml", "trace: {file: ./data/../data/t.csv}\nmodel: data/m.yaml\ncluster: data/c.yaml\n");
  auto r2 = LoadScenario((dir_ / "s2.yaml").string());
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(r2->trace.file, r->trace.file);
  EXPECT_EQ(fs::path(r2->model), fs::absolute(dir_ / "data" / "m.yaml").lexically_normal());
  EXPECT_EQ(fs::path(r2->cluster), fs::absolute(dir_ / "data" / "c.yaml").lexically_normal());
  // The resolved text parses back to the same scenario from anywhere.
  auto r3 = ParseScenario(FormatScenario(*r2), "elsewhere.yaml", "/");
  ASSERT_TRUE(r3.ok()) << r3.error().message();
  EXPECT_TRUE(*r3 == *r2);
}

TEST_F(ScenarioFilesTest, MissingFilesAreNamed) {
  const std::string missing = (dir_ / "nope.yaml").string();
  auto r = LoadScenario(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(missing), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("not found"), std::string::npos) << r.error().message();
  Write(dir_ / "s.yaml", "model: internvl-1.5-6b-20b\ntrace: {file: missing.csv}\n");
  auto t = LoadScenario((dir_ / "s.yaml").string());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(), (dir_ / "s.yaml").string() + ":2: trace.file: no such file '" +
                                     fs::absolute(dir_ / "missing.csv").lexically_normal().string() + "'");
}

struct BadCase {
  std::string text;
  std::string expected;  // the message starts with it
};

TEST(ScenarioTest, EveryErrorNamesFileLineAndKey) {
  const std::string ok_head = "trace: {preset: internvl-1.2m, samples: 100}\nmodel: internvl-1.5-6b-20b\n";
  const std::vector<BadCase> cases = {
      {ok_head + "bogus: 1\n",
       "s.yaml:3: bogus: unknown key; valid keys are: name, description, trace, model, cluster, parallel, "
       "policies, iterations, seed, engine"},
      {ok_head + "name: a\nname: b\n", "s.yaml:4: name: duplicate key (first at line 3)"},
      {ok_head + "policies: {schedule: {name: 1f1b, params: {bogus: 7}}}\n",
       "s.yaml:3: policies.schedule.params: schedule '1f1b': unknown parameter 'bogus'; valid parameters "
       "are: "
       "(none)"},
      {ok_head + "name: [a]\n", "s.yaml:3: name: expected a string"},
      {ok_head + "name: ../../etc\n", "s.yaml:3: name: '../../etc' must work as a folder name (runs/NAME)"},
      {ok_head + "name: a\\b\n", "s.yaml:3: name: 'a\\b' must work as a folder name"},
      {ok_head + "name: ..\n", "s.yaml:3: name: '..' must work as a folder name"},
      {ok_head + "name: \"a\\tb\"\n", "s.yaml:3: name: 'a\tb' must work as a folder name"},
      {ok_head + "parallel: {dp: 0}\n", "s.yaml:3: parallel.dp: 0 is out of range [1, "},
      {ok_head + "parallel:\n  tp: two\n", "s.yaml:4: parallel.tp: 'two' is not an integer"},
      {ok_head + "parallel: {pp: 1.5}\n", "s.yaml:3: parallel.pp: '1.5' is not an integer"},
      {ok_head + "parallel: {vpp: -1}\n", "s.yaml:3: parallel.vpp: -1 is out of range"},
      {ok_head + "parallel: {micro_batches: 0}\n", "s.yaml:3: parallel.micro_batches: 0 is out of range"},
      {ok_head + "parallel: {zero_stage: 4}\n", "s.yaml:3: parallel.zero_stage: 4 is out of range [0, 3]"},
      {ok_head + "parallel: {tp_sequence_parallel: maybe}\n",
       "s.yaml:3: parallel.tp_sequence_parallel: expected true or false"},
      {ok_head + "parallel: {sequence_parallel: true}\n",
       "s.yaml:3: parallel.sequence_parallel: renamed to parallel.tp_sequence_parallel"},
      {ok_head + "parallel: {dp: 1, ddp: 2}\n",
       "s.yaml:3: parallel.ddp: unknown key; valid keys are: dp, tp, pp, vpp, "
       "micro_batches, zero_stage, tp_sequence_parallel"},
      {ok_head + "parallel: 4\n", "s.yaml:3: parallel: expected a mapping"},
      {ok_head + "parallel: {dp: 1048576, tp: 8, pp: 8}\n",
       "s.yaml:3: parallel: dp * tp * pp = 67108864 GPUs"},
      {ok_head + "parallel: {pp: 2, vpp: 2}\n",
       "s.yaml:3: parallel.vpp: vpp > 1 needs the interleaved-1f1b schedule"},
      {ok_head + "parallel: {pp: 4000}\n",
       "s.yaml:3: parallel.pp: pp * vpp = 4000 pipeline chunks, but model"},
      {ok_head + "parallel: {tp: 16}\n", "s.yaml:3: parallel.tp: tensor parallelism stays inside a node"},
      {ok_head + "iterations: 0\n",
       "s.yaml:3: iterations: '0' is not an integer in [1, 1000000000] or \"epoch\""},
      {ok_head + "iterations: many\n", "s.yaml:3: iterations: 'many' is not an integer"},
      {ok_head + "iterations: [1]\n", "s.yaml:3: iterations: expected a positive integer or \"epoch\""},
      {ok_head + "seed: -1\n", "s.yaml:3: seed: -1 is out of range"},
      {ok_head + "engine: simgird\n",
       "s.yaml:3: engine: unknown engine 'simgird'; valid values are: analytic, simgrid"},
      {ok_head + "cluster: {preset: a100-4x200g, gpus: 8}\n",
       "s.yaml:3: cluster.gpus: unknown key; valid keys are: "
       "preset, nodes"},
      {ok_head + "cluster: {nodes: -2}\n", "s.yaml:3: cluster.nodes: -2 is out of range"},
      {ok_head + "cluster: no-such-cluster\n", "s.yaml:3: cluster: unknown cluster"},
      {ok_head + "cluster: [a]\n",
       "s.yaml:3: cluster: expected a cluster preset name or a mapping {preset: NAME, nodes: N}"},
      {ok_head + "parallel: {dp: 4, tp: 2, pp: 4}\ncluster: {preset: a100-4x200g, nodes: 2}\n",
       "s.yaml:4: cluster.nodes: 2 nodes x 8 GPUs = 16 GPUs, fewer than dp * tp * pp = 32"},
      {ok_head + "policies: {data: isf, sampler: x}\n",
       "s.yaml:3: policies.sampler: unknown key; valid keys are: data, partition, recompute, schedule"},
      {ok_head + "policies:\n  data: {params: {a: 1}}\n", "s.yaml:4: policies.data.name: missing"},
      {ok_head + "policies:\n  data: {name: isf, parms: {}}\n",
       "s.yaml:4: policies.data.parms: unknown key; valid "
       "keys are: name, params"},
      {ok_head + "policies:\n  data: {name: isf, params: {a: [1, 2]}}\n",
       "s.yaml:4: policies.data.params.a: expected a scalar value"},
      {ok_head + "policies:\n  data: {name: isf, params: [1]}\n",
       "s.yaml:4: policies.data.params: expected a mapping"},
      {ok_head + "policies:\n  schedule: ''\n", "s.yaml:4: policies.schedule: must not be empty"},
      {ok_head + "policies:\n  data: isff\n",
       "s.yaml:4: policies.data: unknown data policy 'isff'; valid values are: random, length-group"},
      {ok_head + "policies:\n  partition: {name: bmpp}\n",
       "s.yaml:4: policies.partition: unknown partition policy 'bmpp'"},
      {ok_head + "policies:\n  recompute: blok:4\n",
       "s.yaml:4: policies.recompute: unknown recompute policy 'blok'"},
      {ok_head + "policies:\n  schedule: 1f1f\n",
       "s.yaml:4: policies.schedule: unknown schedule '1f1f'; valid values are: gpipe, 1f1b, "
       "interleaved-1f1b"},
      {ok_head + "policies:\n  schedule: [1f1b]\n",
       "s.yaml:4: policies.schedule: expected a policy name or a mapping"},
      {"model: internvl-1.5-6b-20b\n", "s.yaml:1: trace: missing"},
      {"trace: {preset: internvl-1.2m}\n", "s.yaml:1: model: missing"},
      {"trace: {preset: internvl-1.2m}\nmodel: no-such-model\n", "s.yaml:2: model: unknown model"},
      {"model: internvl-1.5-6b-20b\ntrace: {preset: nope}\n",
       "s.yaml:2: trace.preset: unknown trace preset 'nope'; valid values are: internvl-1.2m"},
      {"model: internvl-1.5-6b-20b\ntrace: {file: a.csv, preset: internvl-1.2m}\n",
       "s.yaml:2: trace: give exactly one of file (a trace CSV) and preset"},
      {"model: internvl-1.5-6b-20b\ntrace: {seed: 1}\n", "s.yaml:2: trace: give exactly one of file"},
      {"model: internvl-1.5-6b-20b\ntrace: internvl-1.2m\n", "s.yaml:2: trace: expected a mapping"},
      {"model: internvl-1.5-6b-20b\ntrace:\n  file: x.csv\n  samples: 4\n",
       "s.yaml:4: trace.samples: only with preset"},
      {"model: internvl-1.5-6b-20b\ntrace: {preset: internvl-1.2m, samples: many}\n",
       "s.yaml:2: trace.samples: 'many' is not an integer"},
      {"model: internvl-1.5-6b-20b\ntrace: {preset: internvl-1.2m, samples: 100000001}\n",
       "s.yaml:2: trace.samples: 100000001 is out of range"},
      {"model: internvl-1.5-6b-20b\ntrace: {preset: internvl-1.2m, url: x}\n",
       "s.yaml:2: trace.url: unknown key; valid keys are: file, preset, samples, seed"},
      {"model: [internvl\n", "s.yaml:"},  // YAML syntax error: yaml-cpp's mark
      {"- a\n- b\n", "s.yaml:1: a scenario is a mapping with keys name, description, trace"},
      {"", "s.yaml: a scenario is a mapping"},
  };
  for (const BadCase& c : cases) {
    const std::string msg = ErrorOf(c.text);
    EXPECT_EQ(msg.rfind(c.expected, 0), 0u) << "input:\n"
                                            << c.text << "got:      " << msg << "\nexpected: " << c.expected;
  }
}

TEST(ScenarioTest, ModelImagePxOverridesTheTileResolution) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 100}\n";
  auto s = Parse(head + "model: {name: internvl-1.5-6b-20b, image_px: 336}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->model, "internvl-1.5-6b-20b");
  EXPECT_EQ(s->image_px, 336);
  auto m = LoadScenarioModel(*s);
  ASSERT_TRUE(m.ok()) << m.error().message();
  // 336 / 14 = 24 per side: 576 patches + CLS in the ViT; pixel shuffle 0.5 -> 12 x 12 = 144 LLM tokens per tile.
  Sample one;
  one.image_tiles = 1;
  one.images = 1;
  const SampleTokens t = TokensFor(*m, one);
  EXPECT_EQ(t.vit_tokens, 24 * 24 + 1);
  EXPECT_EQ(t.llm_tokens, 12 * 12);
  // Written back as the mapping, and equal after a round trip; without the override the plain name stays.
  auto back = Parse(FormatScenario(*s));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(*back == *s);
  auto plain = Parse(head + "model: internvl-1.5-6b-20b\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->image_px, 0);
  EXPECT_NE(FormatScenario(*plain).find("model: internvl-1.5-6b-20b\n"), std::string::npos);
  // Bad values are file:line: key errors.
  EXPECT_EQ(ErrorOf(head + "model: {name: internvl-1.5-6b-20b, image_px: 0}\n"),
            "s.yaml:2: model.image_px: 0 is out of range [1, 65536]");
  EXPECT_EQ(ErrorOf(head + "model:\n  name: internvl-1.5-6b-20b\n  image_px: big\n"),
            "s.yaml:4: model.image_px: 'big' is not an integer");
  const std::string small = ErrorOf(head + "model:\n  name: internvl-1.5-6b-20b\n  image_px: 10\n");
  EXPECT_EQ(small.rfind("s.yaml:4: model.image_px: image_px 10 is outside [patch_px 14, 65536]", 0), 0u)
      << small;
  const std::string llm = ErrorOf(head + "model: {name: qwen2-1.5b, image_px: 336}\n");
  EXPECT_EQ(llm.rfind("s.yaml:2: model.image_px: model 'qwen2-1.5b' has no vision encoder", 0), 0u) << llm;
  EXPECT_EQ(ErrorOf(head + "model: {image_px: 336}\n"),
            "s.yaml:2: model.name: missing (a model zoo name or a spec file)");
  const std::string unknown = ErrorOf(head + "model: {name: internvl-1.5-6b-20b, px: 336}\n");
  EXPECT_EQ(unknown.rfind("s.yaml:2: model.px: unknown key; valid keys are: name, image_px", 0), 0u)
      << unknown;
}

TEST(ScenarioTest, SyntaxErrorsCarryALineNumber) {
  const std::string msg = ErrorOf("name: x\nmodel: internvl-1.5-6b-20b\ntrace: {preset: [internvl\n");
  EXPECT_NE(msg.find("s.yaml:"), std::string::npos) << msg;
  EXPECT_TRUE(msg.rfind("s.yaml:3:", 0) == 0 || msg.rfind("s.yaml:4:", 0) == 0) << msg;
}

// Found by scenario_fuzz: invalid UTF-8 was accepted and the emitter replaced it, breaking the round trip.
TEST(ScenarioTest, TextMustBeValidUtf8) {
  const std::string head = "trace: {preset: internvl-1.2m}\nmodel: internvl-1.5-6b-20b\n";
  for (const std::string bad : {"\xD5\xD5", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82"}) {
    const std::string msg = ErrorOf(head + "description: \"x" + bad + "y\"\n");
    EXPECT_EQ(msg.rfind("s.yaml:3: description: not valid UTF-8", 0), 0u) << msg;
    const std::string pmsg = ErrorOf(head + "policies: {data: {name: isf, params: {k: \"" + bad + "\"}}}\n");
    EXPECT_EQ(pmsg.rfind("s.yaml:3: policies.data.params.k: not valid UTF-8", 0), 0u) << pmsg;
  }
  // Valid non-ASCII text (2-, 3- and 4-byte forms) round-trips.
  auto a = Parse(head + "name: caf\xC3\xA9\ndescription: \"\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\"\n");
  ASSERT_TRUE(a.ok()) << a.error().message();
  auto b = Parse(FormatScenario(*a));
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(*a == *b) << FormatScenario(*a);
  EXPECT_EQ(b->name, "caf\xC3\xA9");
}

TEST(ScenarioTest, CheckEngine) {
  EXPECT_TRUE(CheckEngine("analytic").ok());
  EXPECT_TRUE(CheckEngine("simgrid").ok());
  Status s = CheckEngine("ns3");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "unknown engine 'ns3'; valid values are: analytic, simgrid");
}

// The shipped scenarios are documentation and golden inputs: each parses, round-trips, and says what it
// claims. (scenarios/sweeps/ holds sweep files, scenarios/tune/ tune spaces and *.suite.yaml validation suites,
// other formats; tests/tune and tests/cli/cli_tune_test.cc load the tune spaces.)
TEST(ScenarioTest, ShippedScenariosParseAndRoundTrip) {
  const fs::path root = fs::path(MMTWIN_SOURCE_DIR) / "scenarios";
  int n = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::directory_entry& e = *it;
    if (e.is_directory() && (e.path().filename() == "sweeps" || e.path().filename() == "tune")) {
      it.disable_recursion_pending();
      continue;
    }
    if (e.path().extension() != ".yaml") continue;
    if (e.path().filename().string().ends_with(".suite.yaml")) continue;  // validation suites: validate_test
    ++n;
    auto s = LoadScenario(e.path().string());
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->name, e.path().stem().string()) << "a scenario's name is its file name";
    EXPECT_FALSE(s->description.empty()) << e.path();
    auto b = ParseScenario(FormatScenario(*s), s->path, "/");
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_TRUE(*b == *s) << e.path();
  }
  EXPECT_GE(n, 6);
}

TEST(ScenarioTest, OmniBalPairsDifferOnlyInPolicies) {
  const std::string dir = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/omnibal/";
  for (const std::string m : {"internvl-6b-20b", "internvl-6b-34b"}) {
    auto base = LoadScenario(dir + m + "-baseline.yaml");
    auto omni = LoadScenario(dir + m + "-omnibal.yaml");
    ASSERT_TRUE(base.ok()) << base.error().message();
    ASSERT_TRUE(omni.ok()) << omni.error().message();
    EXPECT_EQ(base->data.name, "random");
    EXPECT_EQ(base->data.params.at("batch_size"), "4");
    EXPECT_EQ(base->recompute.name, "full");
    EXPECT_EQ(omni->data.name, "isf");
    EXPECT_EQ(omni->partition.name, "bmp");
    EXPECT_EQ(omni->recompute.name, "adaptive");
    // Same trace, model, cluster, parallel layout, replay and seed.
    Scenario same = *omni;
    same.name = base->name;
    same.description = base->description;
    same.data = base->data;
    same.partition = base->partition;
    same.recompute = base->recompute;
    same.schedule = base->schedule;
    EXPECT_TRUE(same == *base) << m;
    EXPECT_EQ(base->parallel.pp, 4);  // OmniBal Figure 3 / Table 5: four pipeline stages
    // Megatron-DeepSpeed (OmniBal Table 2): DeepSpeed's BF16_Optimizer keeps bf16 and fp32 gradients.
    EXPECT_EQ(base->parallel.optimizer_memory, "deepspeed") << m;
  }
  auto epoch = LoadScenario(dir + "internvl-6b-20b-epoch-512.yaml");
  ASSERT_TRUE(epoch.ok()) << epoch.error().message();
  EXPECT_TRUE(epoch->epoch);
  EXPECT_EQ(epoch->trace.samples, 1267819);
  EXPECT_EQ(epoch->parallel.world_size(), 512);
  EXPECT_EQ(epoch->parallel.tp, 2);
  EXPECT_EQ(epoch->parallel.pp, 4);
  EXPECT_EQ(epoch->parallel.dp, 64);
  EXPECT_EQ(epoch->nodes, 64);
  EXPECT_EQ(epoch->parallel.optimizer_memory, "deepspeed");
}

// A resolved scenario's file paths made relative to a folder read back to the same scenario from that folder.
TEST(ScenarioTest, PathsRelativeToAFolderReadBackTheSame) {
  const std::string root = ::testing::TempDir() + "/relpaths";
  std::filesystem::create_directories(root + "/traces");
  std::filesystem::create_directories(root + "/runs/a");
  std::ofstream(root + "/traces/t.csv") << "x";
  auto s = ParseScenario(
      "trace: {file: ../traces/t.csv}\nmodel: llava-1.5-7b\ncluster: a100-4x200g\n"
      "parallel: {dp: 1, tp: 1, pp: 1, micro_batches: 1}\n",
      "s.yaml", root + "/runs");
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(std::filesystem::path(s->trace.file).is_absolute());
  const Scenario rel = WithPathsRelativeTo(*s, root + "/runs/a");
  EXPECT_EQ(rel.trace.file, "../../traces/t.csv");
  EXPECT_EQ(rel.model, "llava-1.5-7b");  // zoo names and presets are left alone
  EXPECT_EQ(rel.cluster, "a100-4x200g");
  std::ofstream(root + "/runs/a/scenario.yaml") << FormatScenario(rel);
  auto back = LoadScenario(root + "/runs/a/scenario.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(FormatScenario(*back), FormatScenario(*s));
  EXPECT_EQ(FormatScenario(rel).find(root), std::string::npos);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// cluster.device: numeric device keys of the preset replaced, checked as the preset's own, errors naming the
// scenario key; kept by FormatScenario and settable by an override.
TEST(ScenarioTest, ClusterDeviceOverridesReplacePresetKeys) {
  const std::string base = std::string(kMinimal) + "cluster: {preset: a100-4x200g, nodes: 2, device: ";
  auto s = Parse(base + "{efficiency: 0.25, memory_bytes: 40e9}}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto c = LoadScenarioCluster(*s);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_DOUBLE_EQ(c->device.efficiency, 0.25);
  EXPECT_EQ(c->device.memory_bytes, 40000000000);
  EXPECT_EQ(c->device.name, "A100-80GB-SXM4");  // the rest is the preset's
  EXPECT_DOUBLE_EQ(c->device.peak_flops, 312e12);

  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->device, s->device);

  Scenario t = *s;
  ASSERT_TRUE(ApplyOverride(t, "cluster.device.efficiency", "0.7").ok());
  EXPECT_DOUBLE_EQ(t.device.at("efficiency"), 0.7);
  EXPECT_DOUBLE_EQ(t.device.at("memory_bytes"), 40e9);

  const std::string bad_key = ErrorOf(base + "{speed: 2}}\n");
  EXPECT_NE(bad_key.find("s.yaml:3: cluster.device.speed: unknown key"), std::string::npos) << bad_key;
  const std::string bad_value = ErrorOf(base + "{efficiency: 1.5}}\n");
  EXPECT_NE(bad_value.find("s.yaml:3: cluster.device.efficiency: must be in (0, 1]"), std::string::npos)
      << bad_value;
  EXPECT_NE(ErrorOf(base + "{efficiency: fast}}\n").find("cluster.device.efficiency: expected a number"),
            std::string::npos);
}

// cluster.device's word-valued keys (kDeviceTextKeys: allocator_model) are overridden like the numeric ones: kept
// by FormatScenario, part of the scenario's identity, settable by an override (a sweep over allocator models), and
// checked as the preset's own key; a word for a numeric key says which keys take words.
TEST(ScenarioTest, ClusterDeviceTextKeysReplacePresetKeys) {
  const std::string base = std::string(kMinimal) + "cluster: {preset: a100-4x200g, nodes: 2, device: ";
  auto s = Parse(base + "{allocator_model: replay, memory_bytes: 40e9}}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->device_text.at("allocator_model"), "replay");
  EXPECT_EQ(s->device.count("allocator_model"), 0u);
  auto c = LoadScenarioCluster(*s);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->device.allocator_model, "replay");
  EXPECT_EQ(c->device.memory_bytes, 40000000000);

  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->device_text, s->device_text);
  EXPECT_TRUE(*again == *s);

  Scenario t = *s;
  ASSERT_TRUE(ApplyOverride(t, "cluster.device.allocator_model", "spread").ok());
  EXPECT_EQ(t.device_text.at("allocator_model"), "spread");
  EXPECT_DOUBLE_EQ(t.device.at("memory_bytes"), 40e9);
  EXPECT_FALSE(t == *s);  // a different device is a different scenario
  auto spread = LoadScenarioCluster(t);
  ASSERT_TRUE(spread.ok()) << spread.error().message();
  EXPECT_EQ(spread->device.allocator_model, "spread");

  const std::string bad_word = ErrorOf(base + "{allocator_model: best}}\n");
  EXPECT_NE(bad_word.find("s.yaml:3: cluster.device.allocator_model: 'best' is not one of spread, replay"),
            std::string::npos)
      << bad_word;
  const std::string word_for_number = ErrorOf(base + "{efficiency: fast}}\n");
  EXPECT_NE(word_for_number.find("(words only for allocator_model)"), std::string::npos) << word_for_number;
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// model.attention: flash (default) or unfused, kept by FormatScenario; the cost model follows it, and the
// `selective` recompute policy turns on its selective recomputation.
TEST(ScenarioTest, ModelAttentionKernelAndSelectiveRecompute) {
  const std::string text = std::string("trace: {preset: internvl-1.2m, samples: 1000}\n") +
                           "model: {name: internvl-1.5-6b-20b, attention: unfused}\n" +
                           "policies: {recompute: selective}\n";
  auto s = Parse(text);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->attention, "unfused");
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->attention, "unfused");
  EXPECT_EQ(again->recompute.name, "selective");
  auto model = LoadScenarioModel(*s);
  ASSERT_TRUE(model.ok());
  auto cluster = LoadScenarioCluster(*s);
  ASSERT_TRUE(cluster.ok());
  auto cost = LoadScenarioCostModel(*s, *model, *cluster);
  ASSERT_TRUE(cost.ok());
  const auto* analytic = dynamic_cast<const AnalyticCostModel*>(cost->get());
  ASSERT_NE(analytic, nullptr);
  EXPECT_FALSE(analytic->options().flash_attention);
  EXPECT_TRUE(analytic->options().selective_recompute);
  EXPECT_NE(ErrorOf(std::string("trace: {preset: internvl-1.2m, samples: 1000}\n") +
                    "model: {name: internvl-1.5-6b-20b, attention: sdpa}\n")
                .find("s.yaml:2: model.attention: 'sdpa': expected flash or unfused"),
            std::string::npos);
}

// model.kernels: fused (default), eager, or a mapping per family with a default; kept by FormatScenario, handed
// to the cost model, and a bad word or family names file:line: field.
TEST(ScenarioTest, ModelKernelsWordOrMappingReachTheCostModel) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 1000}\n";
  auto eager = Parse(head + "model: {name: internvl-1.5-6b-20b, kernels: eager}\n");
  ASSERT_TRUE(eager.ok()) << eager.error().message();
  EXPECT_EQ(eager->kernels, EagerKernels());
  auto mixed = Parse(head + "model: {name: internvl-1.5-6b-20b, kernels: {default: eager, norm: fused}}\n");
  ASSERT_TRUE(mixed.ok()) << mixed.error().message();
  KernelImpl want = EagerKernels();
  want.eager_norm = false;
  EXPECT_EQ(mixed->kernels, want);
  auto split = Parse(head + "model: {name: internvl-1.5-6b-20b, kernels: {projections: split}}\n");
  ASSERT_TRUE(split.ok()) << split.error().message();
  KernelImpl only_split;
  only_split.split_projections = true;
  EXPECT_EQ(split->kernels, only_split);
  // logits: whole (default) or chunked; `eager` leaves them whole, and a mapping adds them to any default.
  EXPECT_FALSE(eager->kernels.chunked_logits);
  auto chunked =
      Parse(head + "model: {name: internvl-1.5-6b-20b, kernels: {default: eager, logits: chunked}}\n");
  ASSERT_TRUE(chunked.ok()) << chunked.error().message();
  KernelImpl eager_chunked = EagerKernels();
  eager_chunked.chunked_logits = true;
  EXPECT_EQ(chunked->kernels, eager_chunked);
  auto whole = Parse(head + "model: {name: internvl-1.5-6b-20b, kernels: {logits: whole}}\n");
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  EXPECT_FALSE(whole->kernels.any());
  for (const Scenario* s : {&*eager, &*mixed, &*split, &*chunked}) {
    auto again = Parse(FormatScenario(*s));
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_EQ(again->kernels, s->kernels);
  }
  auto fused = Parse(head + "model: {name: internvl-1.5-6b-20b, kernels: fused}\n");
  ASSERT_TRUE(fused.ok());
  EXPECT_FALSE(fused->kernels.any());
  EXPECT_EQ(FormatScenario(*fused).find("kernels"), std::string::npos);
  auto model = LoadScenarioModel(*mixed);
  ASSERT_TRUE(model.ok());
  auto cluster = LoadScenarioCluster(*mixed);
  ASSERT_TRUE(cluster.ok());
  auto cost = LoadScenarioCostModel(*mixed, *model, *cluster);
  ASSERT_TRUE(cost.ok());
  const auto* analytic = dynamic_cast<const AnalyticCostModel*>(cost->get());
  ASSERT_NE(analytic, nullptr);
  EXPECT_EQ(analytic->options().kernels, want);
  EXPECT_NE(ErrorOf(head + "model: {name: internvl-1.5-6b-20b, kernels: compiled}\n")
                .find("s.yaml:2: model.kernels: 'compiled': expected fused or eager"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "model: {name: internvl-1.5-6b-20b, kernels: {norm: split}}\n")
                .find("s.yaml:2: model.kernels.norm: 'split': expected fused or eager"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "model: {name: internvl-1.5-6b-20b, kernels: {projections: eager}}\n")
                .find("model.kernels.projections: 'eager': expected fused or split"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "model: {name: internvl-1.5-6b-20b, kernels: {logits: fused}}\n")
                .find("s.yaml:2: model.kernels.logits: 'fused': expected whole or chunked"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "model: {name: internvl-1.5-6b-20b, kernels: {softmax: eager}}\n").find("softmax"),
            std::string::npos);
}

// model.image_attention: bidirectional reaches the model (ModelSpec::bidirectional_vision), survives
// FormatScenario, and a bad value names file:line: field.
TEST(ScenarioTest, ImageAttentionReachesTheModel) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 1000}\n";
  auto s = Parse(head + "model: {name: internvl-1.5-6b-20b, image_attention: bidirectional}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->image_attention, "bidirectional");
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->image_attention, "bidirectional");
  auto model = LoadScenarioModel(*s);
  ASSERT_TRUE(model.ok());
  EXPECT_TRUE(model->bidirectional_vision);
  auto plain = Parse(head + "model: internvl-1.5-6b-20b\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(LoadScenarioModel(*plain)->bidirectional_vision);
  EXPECT_EQ(FormatScenario(*plain).find("image_attention"), std::string::npos);
  EXPECT_NE(ErrorOf(head + "model: {name: internvl-1.5-6b-20b, image_attention: full}\n")
                .find("s.yaml:2: model.image_attention: 'full': expected causal or bidirectional"),
            std::string::npos);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// parallel.optimizer_memory: the framework's model-state layout, checked against OptimizerMemoryNames and kept by
// FormatScenario.
TEST(ScenarioTest, OptimizerMemoryLayout) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 1000}\nmodel: internvl-1.5-6b-20b\n";
  auto s = Parse(head + "parallel: {dp: 2, zero_stage: 1, optimizer_memory: deepspeed}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->parallel.optimizer_memory, "deepspeed");
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->parallel.optimizer_memory, "deepspeed");
  EXPECT_EQ(Parse(head).value().parallel.optimizer_memory, "auto");
  const std::string bad = ErrorOf(head + "parallel: {optimizer_memory: apex}\n");
  EXPECT_NE(
      bad.find("parallel.optimizer_memory: unknown optimizer memory layout 'apex'; valid values are: auto"),
      std::string::npos)
      << bad;
}

// parallel.overlap_grad_reduce: true by default; false is kept by FormatScenario and refused with ZeRO-3.
TEST(ScenarioTest, OverlapGradReduce) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 1000}\nmodel: internvl-1.5-6b-20b\n";
  EXPECT_TRUE(Parse(head).value().parallel.overlap_grad_reduce);
  auto s = Parse(head + "parallel: {dp: 8, zero_stage: 1, overlap_grad_reduce: false}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_FALSE(s->parallel.overlap_grad_reduce);
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_FALSE(again->parallel.overlap_grad_reduce);
  EXPECT_EQ(FormatScenario(Parse(head).value()).find("overlap_grad_reduce"), std::string::npos);
  const std::string bad = ErrorOf(head + "parallel: {dp: 8, zero_stage: 3, overlap_grad_reduce: false}\n");
  EXPECT_NE(bad.find("parallel.overlap_grad_reduce: false needs parallel.zero_stage 0, 1 or 2"),
            std::string::npos)
      << bad;
}

// parallel.tp_comm_overlap: false by default (not written), true kept by FormatScenario and by the plan and run
// records; refused without Megatron sequence parallelism, which it overlaps.
TEST(ScenarioTest, TpCommOverlap) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 1000}\nmodel: internvl-1.5-6b-20b\n";
  EXPECT_FALSE(Parse(head).value().parallel.tp_comm_overlap);
  EXPECT_EQ(FormatScenario(Parse(head).value()).find("tp_comm_overlap"), std::string::npos);
  auto s = Parse(head + "parallel: {dp: 2, tp: 4, tp_comm_overlap: true}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->parallel.tp_comm_overlap);
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_TRUE(again->parallel.tp_comm_overlap);
  EXPECT_TRUE(*s == *again);
  const std::string bad =
      ErrorOf(head + "parallel: {dp: 2, tp: 4, tp_sequence_parallel: false, tp_comm_overlap: true}\n");
  EXPECT_NE(bad.find("parallel.tp_comm_overlap: true needs parallel.tp_sequence_parallel true"),
            std::string::npos)
      << bad;
  const std::string word = ErrorOf(head + "parallel: {tp_comm_overlap: sometimes}\n");
  EXPECT_NE(word.find("s.yaml:3: parallel.tp_comm_overlap: expected true or false"), std::string::npos)
      << word;
}

// parallel.grad_reduce_dtype: "param" by default (not written), "fp32" kept by FormatScenario and turned into
// the layout's gradient byte scale; anything else refused with the valid values.
// backend.device and backend.autocast (the backend's GPU path): defaults, round trip, defaults not written,
// bad values named with their line.
TEST(ScenarioTest, BackendDeviceAndAutocast) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 1000}\nmodel: internvl-1.5-6b-20b\n";
  const Scenario plain = Parse(head).value();
  EXPECT_EQ(plain.backend.device, "cpu");
  EXPECT_EQ(plain.backend.autocast, "none");
  auto s = Parse(head + "backend: {width_divisor: 1, device: cuda, autocast: bf16}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->backend.device, "cuda");
  EXPECT_EQ(s->backend.autocast, "bf16");
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->backend, s->backend);
  auto cpu = Parse(head + "backend: {width_divisor: 32}\n");
  ASSERT_TRUE(cpu.ok());
  const std::string text = FormatScenario(*cpu);
  EXPECT_EQ(text.find("device:"), std::string::npos) << text;
  EXPECT_EQ(text.find("autocast:"), std::string::npos) << text;
  const std::string bad_device = ErrorOf(head + "backend:\n  device: tpu\n");
  EXPECT_NE(bad_device.find(":4: backend.device: 'tpu' is not cpu or cuda"), std::string::npos) << bad_device;
  const std::string bad_cast = ErrorOf(head + "backend:\n  autocast: fp16\n");
  EXPECT_NE(bad_cast.find(":4: backend.autocast: 'fp16' is not none or bf16"), std::string::npos) << bad_cast;
}

TEST(ScenarioTest, GradReduceDtype) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 1000}\nmodel: internvl-1.5-6b-20b\n";
  EXPECT_EQ(Parse(head).value().parallel.grad_reduce_dtype, "param");
  auto s = Parse(head + "parallel: {dp: 8, zero_stage: 3, grad_reduce_dtype: fp32}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->parallel.grad_reduce_dtype, "fp32");
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->parallel.grad_reduce_dtype, "fp32");
  EXPECT_EQ(FormatScenario(Parse(head).value()).find("grad_reduce_dtype"), std::string::npos);
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nvlink_bytes_per_s = 450e9;
  c.nic_bytes_per_s = 48e9;
  c.nics_per_node = 8;
  EXPECT_EQ(LayoutComm(c, s->parallel).grad_reduce_bytes_scale, 2.0);
  EXPECT_EQ(LayoutComm(c, Parse(head).value().parallel).grad_reduce_bytes_scale, 1.0);
  const std::string bad = ErrorOf(head + "parallel: {grad_reduce_dtype: bf16}\n");
  EXPECT_NE(
      bad.find(
          "parallel.grad_reduce_dtype: unknown gradient reduction dtype 'bf16'; valid values are: param, "
          "fp32"),
      std::string::npos)
      << bad;
}

// parallel.zero3_shard_group: hybrid sharding, ZeRO-3 only, a divisor of dp x sp; kept by FormatScenario.
TEST(ScenarioTest, HybridShardGroup) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 1000}\nmodel: internvl-1.5-6b-20b\n";
  auto s = Parse(head + "parallel: {dp: 8, zero_stage: 3, zero3_shard_group: 4}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->parallel.zero3_shard_group, 4);
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->parallel.zero3_shard_group, 4);
  std::string bad = ErrorOf(head + "parallel: {dp: 8, zero_stage: 2, zero3_shard_group: 4}\n");
  EXPECT_NE(bad.find("parallel.zero3_shard_group: hybrid sharding needs parallel.zero_stage 3"),
            std::string::npos)
      << bad;
  bad = ErrorOf(head + "parallel: {dp: 8, zero_stage: 3, zero3_shard_group: 3}\n");
  EXPECT_NE(bad.find("parallel.zero3_shard_group: 3 does not divide the ZeRO group dp x sp = 8"),
            std::string::npos)
      << bad;
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// model.token_merge: every vision encoder merges N x N positions into one LLM token (WithTokenMerge); kept by
// FormatScenario; an encoder without a token merge is an error naming the key.
TEST(ScenarioTest, ModelTokenMergeOverridesTheEncoders) {
  auto s = Parse(std::string("trace: {preset: internvl-1.2m, samples: 1000}\n") +
                 "model: {name: internvl-1.5-6b-20b, token_merge: 4}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->token_merge, 4);
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->token_merge, 4);
  auto merged = LoadScenarioModel(*s);
  auto plain = LoadScenarioModel(
      Parse("trace: {preset: internvl-1.2m, samples: 1000}\nmodel: internvl-1.5-6b-20b\n").value());
  ASSERT_TRUE(merged.ok() && plain.ok());
  const Component* v = merged->Find(ComponentKind::kVision);
  const Component* p = plain->Find(ComponentKind::kVision);
  ASSERT_TRUE(v && p);
  // InternViT at 448 px, patch 14: 32 x 32 positions; pixel shuffle 2 gives 256 LLM tokens, a merge of 4 gives 64.
  EXPECT_DOUBLE_EQ(p->input.llm_tokens_per_unit, 256);
  EXPECT_DOUBLE_EQ(v->input.llm_tokens_per_unit, 64);
  EXPECT_NE(ErrorOf(std::string("trace: {preset: internvl-1.2m, samples: 1000}\n") +
                    "model: {name: internvl-1.5-6b-20b, token_merge: 0}\n")
                .find("model.token_merge"),
            std::string::npos);
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// model.frozen: a list of component names (or one name), kept by FormatScenario; unknown names, a wrong type and
// everything frozen are errors naming the key and its line.
TEST(ScenarioTest, ModelFrozenListsTheComponentsThatDoNotTrain) {
  const std::string head = "trace: {preset: llava-665k, samples: 1000}\n";
  auto s = Parse(head + "model: {name: llava-1.5-7b, frozen: [vision, llm]}\n");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->frozen, (std::vector<std::string>{"vision", "llm"}));
  auto again = Parse(FormatScenario(*s));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->frozen, s->frozen);
  auto m = LoadScenarioModel(*s);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_TRUE(m->components.front().frozen);
  EXPECT_FALSE(m->components[1].frozen);  // the projector trains
  EXPECT_TRUE(m->components.back().frozen);
  auto one = Parse(head + "model: {name: llava-1.5-7b, frozen: vision}\n");
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_EQ(one->frozen, (std::vector<std::string>{"vision"}));

  std::string bad = ErrorOf(head + "model: {name: llava-1.5-7b, frozen: [vit]}\n");
  EXPECT_NE(
      bad.find(":2: model.frozen: model 'llava-1.5-7b' has no component 'vit'; its components are: vision, "
               "projector, llm"),
      std::string::npos)
      << bad;
  bad = ErrorOf(head + "model: {name: llava-1.5-7b, frozen: {vision: true}}\n");
  EXPECT_NE(bad.find("model.frozen: expected a list of component names"), std::string::npos) << bad;
  bad = ErrorOf(head + "model: {name: llava-1.5-7b, frozen: [vision, projector, llm]}\n");
  EXPECT_NE(bad.find("model.frozen: every component of 'llava-1.5-7b' is frozen"), std::string::npos) << bad;
}

}  // namespace
}  // namespace mmtwin

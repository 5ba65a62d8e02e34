// SPDX-License-Identifier: Apache-2.0
// Checking a scenario apart from parsing it (core/scenario/scenario.h: ReadScenario, CheckScenario): structs
// built in code get the field errors the old round trip gave (the removed ValidateScenario printed the struct as
// YAML and parsed it again; its messages, recorded before it was removed, are the oracle), a parsed file's errors
// carry their lines whether the parser or the checker finds them, ReadScenario parses without checking, and
// ParseScenario is exactly ReadScenario then CheckAndResolveScenario.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/scenario/scenario.h"
#include "scenario/small_scenario.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

Scenario Small() { return SmallPlannedScenario(); }

struct CodeCase {
  std::string what;
  std::function<void(Scenario&)> edit;
  // The old ValidateScenario's message for the struct (main at fd3d835; a long list of valid values cut short):
  // "NAME: field: reason" (the round trip's line numbers stripped) or "scenario NAME: field: reason".
  std::string oracle;
  // The message now, where it words the same fact differently ("" = the oracle's "field: reason" after
  // "scenario NAME: ", ScenarioError's prefix for a struct built in code).
  std::string now;
};

// "field: reason" of an oracle message: after "scenario NAME: " or "NAME: ".
std::string FieldAndReason(const std::string& oracle, const std::string& name) {
  for (const std::string& prefix : {"scenario " + name + ": ", std::string("scenario: "), name + ": "})
    if (oracle.rfind(prefix, 0) == 0) return oracle.substr(prefix.size());
  return oracle;
}

const std::vector<CodeCase>& CodeCases() {
  static const std::vector<CodeCase> cases = {
      {"empty name", [](Scenario& s) { s.name = ""; }, "scenario: name: must not be empty"},
      {"name with ..", [](Scenario& s) { s.name = "../x"; },
       "../x: name: '../x' must work as a folder name (runs/NAME): no '/', '\\', control characters, '.' or "
       "'..'"},
      {"name with /", [](Scenario& s) { s.name = "a/b"; },
       "a/b: name: 'a/b' must work as a folder name (runs/NAME): no '/', '\\', control characters, '.' or "
       "'..'"},
      {"no trace", [](Scenario& s) { s.trace.preset = ""; }, "small: trace.preset: must not be empty"},
      {"unknown preset", [](Scenario& s) { s.trace.preset = "nope"; },
       "small: trace.preset: unknown trace preset 'nope'; valid values are: internvl-1.2m, llava-665k, "
       "lcs-558k, asr-sqa-mix, long-video, orchmllm-mix"},
      {"negative samples", [](Scenario& s) { s.trace.samples = -5; },
       "small: trace.samples: -5 is out of range [0, 100000000]"},
      {"too many samples", [](Scenario& s) { s.trace.samples = 100000001; },
       "small: trace.samples: 100000001 is out of range [0, 100000000]"},
      {"trace seed above int64", [](Scenario& s) { s.trace.seed = UINT64_MAX; },
       "small: trace.seed: '18446744073709551615' is not an integer",
       "trace.seed: 18446744073709551615 is out of range [0, 9223372036854775807]"},
      {"missing trace file", [](Scenario& s) { s.trace.file = "/nonexistent-dir/t.csv"; },
       "small: trace.file: no such file '/nonexistent-dir/t.csv'"},
      {"huge sequence", [](Scenario& s) { s.trace.sequence_tokens = (int64_t{1} << 31) + 1; },
       "small: trace.sequence_tokens: 2147483649 is out of range [1, 2147483648]"},
      {"too many sequences",
       [](Scenario& s) {
         s.trace.sequence_tokens = 4096;
         s.trace.samples = 100000001;
       },
       "small: trace.samples: 100000001 is out of range [1, 100000000]"},
      {"empty model", [](Scenario& s) { s.model = ""; }, "small: model: must not be empty"},
      {"unknown model", [](Scenario& s) { s.model = "no-such-model"; },
       "small: model: unknown model 'no-such-model'; valid values are: clip-vit-l-14-336, "},
      {"image_px too small", [](Scenario& s) { s.image_px = 10; },
       "small: model.image_px: image_px 10 is outside [patch_px 14, 65536] for encoder 'vision' of model "
       "'internvl-1.5-6b-20b'"},
      {"image_px too large", [](Scenario& s) { s.image_px = 70000; },
       "small: model.image_px: 70000 is out of range [1, 65536]"},
      {"image_px on an LLM",
       [](Scenario& s) {
         s.model = "qwen2-1.5b";
         s.image_px = 336;
         s.parallel.tp = 1;
       },
       "small: model.image_px: model 'qwen2-1.5b' has no vision encoder to feed 336 px"},
      {"empty cluster", [](Scenario& s) { s.cluster = ""; }, "small: cluster.preset: must not be empty",
       "cluster: must not be empty"},
      {"unknown cluster", [](Scenario& s) { s.cluster = "no-such-cluster"; },
       "small: cluster: unknown cluster 'no-such-cluster'; valid values are: a100-2x200g, a100-4x200g, "
       "a100-8x200g, cpu-2vcpu-gloo, h100-8x400g, h200-8x400g"},
      {"negative nodes", [](Scenario& s) { s.nodes = -1; },
       "small: cluster.nodes: -1 is out of range [0, 16777216]"},
      {"too few nodes", [](Scenario& s) { s.nodes = 1; },
       "small: cluster.nodes: 1 nodes x 8 GPUs = 8 GPUs, fewer than dp * tp * pp = 16"},
      {"dp 0", [](Scenario& s) { s.parallel.dp = 0; }, "small: parallel.dp: 0 is out of range [1, 1048576]"},
      {"tp 0", [](Scenario& s) { s.parallel.tp = 0; }, "small: parallel.tp: 0 is out of range [1, 4096]"},
      {"pp 0", [](Scenario& s) { s.parallel.pp = 0; }, "small: parallel.pp: 0 is out of range [1, 4096]"},
      {"vpp 0", [](Scenario& s) { s.parallel.vpp = 0; }, "small: parallel.vpp: 0 is out of range [1, 4096]"},
      {"micro_batches 0", [](Scenario& s) { s.parallel.micro_batches = 0; },
       "small: parallel.micro_batches: 0 is out of range [1, 1048576]"},
      {"zero_stage 4", [](Scenario& s) { s.parallel.zero_stage = 4; },
       "small: parallel.zero_stage: 4 is out of range [0, 3]"},
      {"zero_stage -1", [](Scenario& s) { s.parallel.zero_stage = -1; },
       "small: parallel.zero_stage: -1 is out of range [0, 3]"},
      {"tp 5000", [](Scenario& s) { s.parallel.tp = 5000; },
       "small: parallel.tp: 5000 is out of range [1, 4096]"},
      {"sp 0", [](Scenario& s) { s.parallel.sp = 0; }, "small: parallel.sp: 0 is out of range [1, 1048576]"},
      {"sp_ulysses -1", [](Scenario& s) { s.parallel.sp_ulysses = -1; },
       "small: parallel.sp_ulysses: -1 is out of range [0, 1048576]"},
      {"sp_ring -1", [](Scenario& s) { s.parallel.sp_ring = -1; },
       "small: parallel.sp_ring: -1 is out of range [0, 1048576]"},
      {"zero3 impl", [](Scenario& s) { s.parallel.zero3_impl = "megatron"; },
       "small: parallel.zero3_impl: unknown ZeRO-3 implementation 'megatron'; valid values are: simple, "
       "fsdp, deepspeed"},
      {"world too large",
       [](Scenario& s) {
         s.parallel.dp = 1048576;
         s.parallel.tp = 8;
         s.parallel.pp = 8;
       },
       "small: parallel: dp * tp * pp = 67108864 GPUs is more than 16777216"},
      {"tp above a node", [](Scenario& s) { s.parallel.tp = 16; },
       "small: parallel.tp: tensor parallelism stays inside a node: tp 16 > 8 GPUs per node of cluster "
       "'a100-4x200g'"},
      {"vpp without interleaving", [](Scenario& s) { s.parallel.vpp = 2; },
       "small: parallel.vpp: vpp > 1 needs the interleaved-1f1b schedule (policies.schedule is '1f1b')"},
      {"more chunks than layers", [](Scenario& s) { s.parallel.pp = 400; },
       "small: parallel.pp: pp * vpp = 400 pipeline chunks, but model 'internvl-1.5-6b-20b' has only 97 "
       "layers"},
      {"interleaved with vpp 1", [](Scenario& s) { s.schedule.name = "interleaved-1f1b"; },
       "scenario small: policies.schedule: schedule interleaved-1f1b: vpp (virtual stages per rank) must be "
       ">= 2, got 1 (use 1f1b for vpp = 1)"},
      {"interleaved micro-batches",
       [](Scenario& s) {
         s.schedule.name = "interleaved-1f1b";
         s.parallel.vpp = 2;
         s.parallel.micro_batches = 6;
       },
       "scenario small: policies.schedule: schedule interleaved-1f1b: micro_batches (6) must be a multiple "
       "of pp (4)"},
      {"empty data policy",
       [](Scenario& s) {
         s.data = {"", {}};
       },
       "small: policies.data: must not be empty"},
      {"unknown data policy",
       [](Scenario& s) {
         s.data = {"nope", {}};
       },
       "small: policies.data: unknown data policy 'nope'; valid values are: random, length-group, "
       "device-group, isf, post-balance, orchestrator, dynapipe, wlb-llm"},
      {"unknown partition policy", [](Scenario& s) { s.partition.name = "nope"; },
       "small: policies.partition: unknown partition policy 'nope'; valid values are: uniform, megatron, "
       "params, profile, bmp"},
      {"unknown recompute policy", [](Scenario& s) { s.recompute.name = "nope:2"; },
       "small: policies.recompute: unknown recompute policy 'nope'; valid values are: none, full, selective, "
       "uniform, block, adaptive"},
      {"unknown schedule", [](Scenario& s) { s.schedule.name = "nope"; },
       "small: policies.schedule: unknown schedule 'nope'; valid values are: gpipe, 1f1b, interleaved-1f1b, "
       "zb-h1, zb-h2"},
      {"unknown sp policy", [](Scenario& s) { s.sp.name = "nope"; },
       "small: policies.sp: unknown sequence-parallel policy 'nope'; valid values are: none, ring, "
       "zigzag-ring, ulysses, 2d, megatron-cp, megatron-cp+tp"},
      {"data parameter", [](Scenario& s) { s.data.params["bogus"] = "1"; },
       "scenario small: policies.data.params: data policy 'post-balance': unknown parameter 'bogus'; valid "
       "parameters are: "},
      {"data parameter value", [](Scenario& s) { s.data.params["batch_size"] = "many"; },
       "scenario small: policies.data.params: data policy 'post-balance': parameter 'batch_size': 'many' is "
       "not an integer"},
      {"partition parameter", [](Scenario& s) { s.partition.params["bogus"] = "7"; },
       "scenario small: policies.partition.params: partition policy 'bmp': unknown parameter 'bogus'; valid "
       "parameters are: "},
      {"recompute parameter", [](Scenario& s) { s.recompute.params["bogus"] = "7"; },
       "scenario small: policies.recompute.params: recompute policy 'adaptive': unknown parameter 'bogus'; "
       "valid parameters are: reserve_bytes"},
      {"schedule parameter", [](Scenario& s) { s.schedule.params["bogus"] = "7"; },
       "small: policies.schedule.params: schedule '1f1b': unknown parameter 'bogus'; valid parameters are: "
       "(none)"},
      {"sp parameter",
       [](Scenario& s) {
         s.parallel.sp = 2;
         s.parallel.tp = 1;
         s.sp = {"ring", {{"bogus", "1"}}};
       },
       "small: policies.sp.params: sp policy 'ring': unknown parameter 'bogus'; valid parameters are: "
       "sharding"},
      {"sp without policy",
       [](Scenario& s) {
         s.parallel.sp = 2;
         s.parallel.tp = 1;
       },
       "small: parallel.sp: 2 needs a sequence-parallel policy (policies.sp: one of ring, zigzag-ring, "
       "ulysses, 2d, megatron-cp, megatron-cp+tp, megatron-cp-ag, cornstarch-cp)"},
      {"ulysses x ring",
       [](Scenario& s) {
         s.parallel.sp = 4;
         s.parallel.tp = 1;
         s.parallel.sp_ulysses = 3;
         s.parallel.sp_ring = 2;
         s.sp = {"2d", {}};
       },
       "small: parallel.sp: sp_ulysses x sp_ring must equal sp (4) for policy 2d (Ulysses degree 3, ring "
       "degree 1)"},
      {"iterations 0", [](Scenario& s) { s.iterations = 0; },
       "small: iterations: '0' is not an integer in [1, 1000000000] or \"epoch\""},
      {"iterations too many", [](Scenario& s) { s.iterations = 1000000001; },
       "small: iterations: '1000000001' is not an integer in [1, 1000000000] or \"epoch\""},
      {"seed above int64", [](Scenario& s) { s.seed = UINT64_MAX; },
       "small: seed: '18446744073709551615' is not an integer",
       "seed: 18446744073709551615 is out of range [0, 9223372036854775807]"},
      {"unknown engine", [](Scenario& s) { s.engine = "ns3"; },
       "small: engine: unknown engine 'ns3'; valid values are: analytic, simgrid"},
      {"empty cost", [](Scenario& s) { s.cost = ""; }, "small: cost: must not be empty"},
      {"missing cost file", [](Scenario& s) { s.cost = "/nonexistent-dir/c.csv"; },
       "scenario small: cost: cost: /nonexistent-dir/c.csv: cannot open: No such file or directory",
       "cost: no such file '/nonexistent-dir/c.csv'"},
      {"width divisor 0", [](Scenario& s) { s.backend.shrink.width_divisor = 0; },
       "small: backend.width_divisor: 0 is out of range [1, 65536]"},
      {"warmup -1", [](Scenario& s) { s.backend.warmup_iterations = -1; },
       "small: backend.warmup_iterations: -1 is out of range [0, 1000]"},
      {"threads 0", [](Scenario& s) { s.backend.threads = 0; },
       "small: backend.threads: 0 is out of range [1, 1024]"},
      {"timeout 0", [](Scenario& s) { s.backend.timeout_s = 0; },
       "small: backend.timeout_s: expected seconds in [1, 86400]"},
      {"layers of an unknown component", [](Scenario& s) { s.backend.shrink.layers["nope"] = 2; },
       "small: backend.layers.nope: model 'internvl-1.5-6b-20b' has no component 'nope'; valid names are: "
       "llm, projector, vision"},
      {"layers 0", [](Scenario& s) { s.backend.shrink.layers["llm"] = 0; },
       "small: backend.layers.llm: 0 is out of range [1, 10000]"},
  };
  return cases;
}

TEST(CheckScenarioTest, StructsBuiltInCodeGetTheRoundTripsFieldErrors) {
  ASSERT_TRUE(CheckScenario(Small()).ok()) << CheckScenario(Small()).error().message();
  for (const CodeCase& c : CodeCases()) {
    Scenario s = Small();
    c.edit(s);
    const Status st = CheckScenario(s);
    ASSERT_FALSE(st.ok()) << c.what;
    const std::string want = (s.name.empty() ? "scenario: " : "scenario " + s.name + ": ") +
                             (c.now.empty() ? FieldAndReason(c.oracle, s.name) : c.now);
    EXPECT_EQ(st.error().message().rfind(want, 0), 0u)
        << c.what << "\n  got:  " << st.error().message() << "\n  want: " << want;
  }
}

// The same cases through a file: the struct printed (FormatScenario) and parsed names the same field as the
// check of the struct (or a key under it: the printed `cluster: {preset: ""}`), now at a line.
TEST(CheckScenarioTest, PrintedAndParsedTheSameCasesNameTheSameField) {
  for (const CodeCase& c : CodeCases()) {
    Scenario s = Small();
    c.edit(s);
    const std::string text = FormatScenario(s);
    auto parsed = ParseScenario(text, "p.yaml", ".");
    ASSERT_FALSE(parsed.ok()) << c.what << ": printed as\n" << text;
    const std::string checked = CheckScenario(s).error().message();
    const size_t at = checked.find(": ") + 2;
    const std::string field = checked.substr(at, checked.find(": ", at) - at);
    const std::string& msg = parsed.error().message();
    EXPECT_TRUE(msg.find(": " + field + ": ") != std::string::npos ||
                msg.find(": " + field + ".") != std::string::npos)
        << c.what << ": " << msg << " (checked: " << checked << ")";
    EXPECT_EQ(msg.rfind("p.yaml:", 0), 0u) << c.what << ": " << msg;
  }
}

const char* kFile = R"(name: lines
trace:
  preset: internvl-1.2m
  samples: 2000
model: internvl-1.5-6b-20b
cluster: {preset: a100-4x200g}
parallel:
  dp: 2
  tp: 2
  pp: 4
  micro_batches: 8
policies:
  data: {name: random, params: {batch_size: 2}}
  partition: uniform
  schedule: 1f1b
iterations: 3
)";

// Line numbers of kFile's keys.
constexpr long kTraceLine = 2, kSamplesLine = 4, kModelLine = 5, kClusterLine = 6, kParallelLine = 7,
               kTpLine = 9, kPpLine = 10, kDataLine = 13, kPartitionLine = 14, kScheduleLine = 15,
               kIterationsLine = 16;

TEST(CheckScenarioTest, AParsedFilesErrorsCarryTheirLines) {
  auto read = ReadScenario(kFile, "f.yaml", ".");
  ASSERT_TRUE(read.ok()) << read.error().message();
  ASSERT_TRUE(CheckScenario(*read).ok()) << CheckScenario(*read).error().message();
  EXPECT_EQ(read->lines.at("parallel.tp"), kTpLine);
  struct Edit {
    std::function<void(Scenario&)> edit;
    std::string want;  // the whole message
  };
  const auto at = [](long line, const std::string& rest) {
    return "f.yaml:" + std::to_string(line) + ": " + rest;
  };
  const std::vector<Edit> edits = {
      {[](Scenario& s) { s.parallel.tp = 16; },
       at(kTpLine,
          "parallel.tp: tensor parallelism stays inside a node: tp 16 > 8 GPUs per node of cluster "
          "'a100-4x200g'")},
      {[](Scenario& s) { s.parallel.pp = 400; },
       at(kPpLine,
          "parallel.pp: pp * vpp = 400 pipeline chunks, but model 'internvl-1.5-6b-20b' has only 97 "
          "layers")},
      // A key the file did not write: at its nearest parent's line.
      {[](Scenario& s) { s.parallel.zero_stage = 7; },
       at(kParallelLine, "parallel.zero_stage: 7 is out of range [0, 3]")},
      {[](Scenario& s) { s.trace.samples = -1; },
       at(kSamplesLine, "trace.samples: -1 is out of range [0, 100000000]")},
      {[](Scenario& s) { s.trace.seed = UINT64_MAX; },
       at(kTraceLine, "trace.seed: 18446744073709551615 is out of range [0, 9223372036854775807]")},
      {[](Scenario& s) { s.model = "nope"; }, at(kModelLine, "model: unknown model 'nope'")},
      {[](Scenario& s) { s.cluster = "nope"; }, at(kClusterLine, "cluster: unknown cluster 'nope'")},
      {[](Scenario& s) { s.data.params["batch_size"] = "x"; },
       at(kDataLine,
          "policies.data.params: data policy 'random': parameter 'batch_size': 'x' is not an integer")},
      {[](Scenario& s) { s.partition.name = "nope"; },
       at(kPartitionLine, "policies.partition: unknown partition policy 'nope'")},
      {[](Scenario& s) { s.schedule.name = "interleaved-1f1b"; },
       at(kScheduleLine,
          "policies.schedule: schedule interleaved-1f1b: vpp (virtual stages per rank) must be >= 2")},
      {[](Scenario& s) { s.iterations = 0; },
       at(kIterationsLine, "iterations: '0' is not an integer in [1, 1000000000] or \"epoch\"")},
      // Not written at all, nor any parent: the file and the field.
      {[](Scenario& s) { s.engine = "ns3"; },
       "f.yaml: engine: unknown engine 'ns3'; valid values are: analytic, simgrid"},
  };
  for (const Edit& e : edits) {
    Scenario s = *read;
    e.edit(s);
    const Status st = CheckScenario(s);
    ASSERT_FALSE(st.ok()) << e.want;
    EXPECT_EQ(st.error().message().rfind(e.want, 0), 0u)
        << "got:  " << st.error().message() << "\nwant: " << e.want;
  }
}

// A value only the checker refuses, written in the file: ParseScenario's message is CheckScenario's on the read
// struct, at the value's line, the same as before parsing and checking were split.
TEST(CheckScenarioTest, CheckerErrorsInAFileNameTheirLine) {
  const std::string head = "trace: {preset: internvl-1.2m, samples: 100}\nmodel: internvl-1.5-6b-20b\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + "parallel:\n  dp: 4\n  tp: 16\n",
       "s.yaml:5: parallel.tp: tensor parallelism stays inside a node"},
      {head + "policies:\n  data:\n    name: isff\n", "s.yaml:5: policies.data: unknown data policy 'isff'"},
      {head + "policies:\n  partition: {name: bmp, params: {radus: 2}}\n",
       "s.yaml:4: policies.partition.params: partition policy 'bmp': unknown parameter 'radus'"},
      {head + "parallel: {pp: 2, vpp: 2, micro_batches: 3}\npolicies: {schedule: interleaved-1f1b}\n",
       "s.yaml:4: policies.schedule: schedule interleaved-1f1b: micro_batches (3) must be a multiple of pp "
       "(2)"},
      {head + "cluster:\n  preset: a100-4x200g\n  nodes: 1\nparallel: {dp: 16}\n",
       "s.yaml:5: cluster.nodes: 1 nodes x 8 GPUs = 8 GPUs, fewer than dp * tp * pp = 16"},
      {head + "name: ''\n", "s.yaml:3: name: must not be empty"},
      {head + "engine: ''\n", "s.yaml:3: engine: must not be empty"},
      {head + "cost: nope.csv\n", "s.yaml:3: cost: no such file '"},
      {"trace: {preset: internvl-1.2m}\nmodel: {name: internvl-1.5-6b-20b}\nbackend:\n  layers: {nope: 2}\n",
       "s.yaml:4: backend.layers.nope: model 'internvl-1.5-6b-20b' has no component 'nope'"},
  };
  for (const auto& [text, want] : cases) {
    auto parsed = ParseScenario(text, "s.yaml", ".");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().message().rfind(want, 0), 0u)
        << text << "got:  " << parsed.error().message() << "\nwant: " << want;
    auto read = ReadScenario(text, "s.yaml", ".");
    ASSERT_TRUE(read.ok()) << "the parser alone accepts it: " << read.error().message();
    EXPECT_EQ(CheckScenario(*read).error().message(), parsed.error().message());
  }
}

TEST(CheckScenarioTest, ReadScenarioParsesWithoutChecking) {
  // Names, ranges across fields and lookups are the checker's: the parser fills the struct.
  auto read = ReadScenario(
      "trace: {preset: nope, samples: 0}\nmodel: no-such-model\ncluster: {preset: nope}\n"
      "parallel: {tp: 16, vpp: 2}\npolicies: {data: {name: nope, params: {k: v}}}\nengine: ns3\n",
      "r.yaml", ".");
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->trace.preset, "nope");
  EXPECT_EQ(read->trace.samples, 0);  // an unknown preset has no default size
  EXPECT_EQ(read->model, "no-such-model");
  EXPECT_EQ(read->parallel.tp, 16);
  EXPECT_EQ(read->data.name, "nope");
  EXPECT_EQ(read->data.params.at("k"), "v");
  EXPECT_EQ(read->engine, "ns3");
  EXPECT_EQ(read->nodes, 0);  // automatic until resolved
  EXPECT_FALSE(CheckScenario(*read).ok());
  // Types, shapes and ranges are the parser's, with the value's line.
  auto bad = ReadScenario("trace: {preset: x}\nmodel: m\nparallel: {dp: 0}\n", "r.yaml", ".");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "r.yaml:3: parallel.dp: 0 is out of range [1, 1048576]");
}

TEST(CheckScenarioTest, ParseIsReadThenCheckAndResolve) {
  auto parsed = ParseScenario(kFile, "f.yaml", ".");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  auto read = ReadScenario(kFile, "f.yaml", ".");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->nodes, 0);
  auto resolved = CheckAndResolveScenario(*read);
  ASSERT_TRUE(resolved.ok()) << resolved.error().message();
  EXPECT_TRUE(*resolved == *parsed);
  EXPECT_EQ(resolved->lines, parsed->lines);
  EXPECT_EQ(parsed->nodes, 2);  // dp 2 x tp 2 x pp 4 = 16 GPUs on nodes of 8
  EXPECT_EQ(ScenarioNodes(*read, 8), 2);
  EXPECT_EQ(ScenarioNodes(*read, 16), 1);
  EXPECT_EQ(ScenarioNodes(*read, 3), 6);  // ceil(16 / 3)
  read->nodes = 5;
  EXPECT_EQ(ScenarioNodes(*read, 8), 5);  // as written
}

// A struct built in code has no file: its messages name the scenario and the field, no line.
TEST(CheckScenarioTest, AStructBuiltInCodeHasNoLines) {
  Scenario s = Small();
  s.parallel.tp = 16;
  const std::string msg = CheckScenario(s).error().message();
  EXPECT_EQ(msg.rfind("scenario small: parallel.tp: ", 0), 0u) << msg;
  // A path but no lines (a struct whose file wrote none of its keys): the file and the field.
  s.path = "x.yaml";
  EXPECT_EQ(CheckScenario(s).error().message().rfind("x.yaml: parallel.tp: ", 0), 0u);
}

}  // namespace
}  // namespace mmtwin

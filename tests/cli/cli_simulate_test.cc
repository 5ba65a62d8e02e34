// SPDX-License-Identifier: Apache-2.0
// Runs the real `mmtwin plan` and `mmtwin simulate` binaries: exit codes, error messages, the run folder's
// files (JSON parses, the resolved scenario loads back), and byte-identical summary.json for the same
// scenario and seed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/scenario/scenario.h"

#include "cli/cli_runner.h"
#include "core/util/sanitizers.h"

namespace {

namespace fs = std::filesystem;

using mmtwin::kAddressSanitizer;

using mmtwin::testing::CliRun;
using mmtwin::testing::Mmtwin;
using mmtwin::testing::Shell;

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A small, fast scenario (seconds): the default scenario's recipe on a 2,000-sample slice.
const char* kSmall = R"(name: small
description: CLI test scenario
trace: {preset: internvl-1.2m, samples: 2000, seed: 3}
model: internvl-1.5-6b-20b
cluster: {preset: a100-4x200g}
parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 4, zero_stage: 1}
policies:
  data: isf
  partition: uniform
  recompute: full
  schedule: 1f1b
iterations: 2
seed: 5
)";

// 6B+34B on a single GPU: the model states alone exceed 80 GiB, whatever the recomputation.
const char* kOom = R"(name: oom
description: does not fit
trace: {preset: internvl-1.2m, samples: 500, seed: 3}
model: internvl-1.5-6b-34b
parallel: {dp: 1, tp: 1, pp: 1, micro_batches: 2}
policies: {data: isf, partition: uniform, recompute: full, schedule: 1f1b}
iterations: 1
)";

class CliSimulateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::path(::testing::TempDir()) / ("cli_simulate_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write("small.yaml", kSmall);
    Write("oom.yaml", kOom);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static void Write(const std::string& name, const std::string& text) {
    std::ofstream f(dir_ / name);
    f << text;
  }
  static std::string P(const std::string& name) { return (dir_ / name).string(); }
  static fs::path dir_;
};
fs::path CliSimulateTest::dir_;

std::string scenarios_default() { return std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml"; }

TEST_F(CliSimulateTest, WritesEveryOutputAndTheyParse) {
  const fs::path run = dir_ / "run-a";
  CliRun r = Mmtwin("simulate " + P("small.yaml") + " -o " + run.string());
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* f : {"summary.json", "stages.csv", "trace.json", "scenario.yaml"})
    EXPECT_TRUE(fs::is_regular_file(run / f)) << f;
  auto summary = nlohmann::json::parse(Slurp(run / "summary.json"));
  for (const char* k : {"iteration_time_us", "bubble_ratio", "idle_ratio", "tokens_per_s", "mfu", "gpu_days",
                        "oom", "stages"})
    EXPECT_TRUE(summary.contains(k)) << k;
  EXPECT_TRUE(summary["iteration_time_us"].contains("p50"));
  EXPECT_TRUE(summary["iteration_time_us"].contains("p99"));
  EXPECT_FALSE(summary["oom"].get<bool>());
  ASSERT_EQ(summary["stages"].size(), 4u);
  for (const auto& st : summary["stages"]) EXPECT_GT(st["peak_memory_bytes"].get<double>(), 0);
  EXPECT_GT(summary["tokens_per_s"].get<double>(), 0);
  auto trace = nlohmann::json::parse(Slurp(run / "trace.json"));
  EXPECT_TRUE(trace.is_object() || trace.is_array());
  // stages.csv: a header and one row per stage.
  const std::string csv = Slurp(run / "stages.csv");
  int rows = 0;
  std::istringstream lines(csv);
  for (std::string line; std::getline(lines, line);) rows += !line.empty();
  EXPECT_EQ(rows, 5) << csv;
  // The resolved scenario loads back to the same scenario.
  auto a = mmtwin::LoadScenario(P("small.yaml"));
  auto b = mmtwin::LoadScenario((run / "scenario.yaml").string());
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(*a == *b);
  // The text summary names the headline numbers and the outputs.
  for (const char* s : {"iteration time", "p50", "p99", "bubble", "idle", "recompute", "tokens/s", "MFU",
                        "GPU-days", "dist ratio", "stage", "summary.json"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

// policies.encoder bubbles (Optimus): the policies line names the placement, the run's ops hold the encoder passes,
// and the resolved scenario keeps the key.
TEST_F(CliSimulateTest, TheEncoderPlacementIsSaidAndKept) {
  std::string text = kSmall;
  const std::string schedule = "  schedule: 1f1b\n";
  ASSERT_NE(text.find(schedule), std::string::npos);
  text.replace(text.find(schedule), schedule.size(),
               schedule + "  encoder: {name: bubbles, params: {fill: coarse}}\n");
  Write("bubbles.yaml", text);
  const fs::path run = dir_ / "run-bubbles";
  CliRun r = Mmtwin("simulate " + P("bubbles.yaml") + " -o " + run.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(", encoder bubbles(fill=coarse"), std::string::npos) << r.out;
  EXPECT_NE(Slurp(run / "ops.csv").find(",encoder_forward,"), std::string::npos);
  auto back = mmtwin::LoadScenario((run / "scenario.yaml").string());
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->encoder.name, "bubbles");
  EXPECT_EQ(back->encoder.params.at("fill"), "coarse");
}

// Issue 33, item 7: trace.json draws 4 DP replicas by default; --trace-replicas N draws N (0 = all); ops.csv
// keeps every device either way. Devices are op-graph devices (one per TP group): pp = 4 per replica here.
TEST_F(CliSimulateTest, TraceReplicasSetsHowManyReplicasTraceJsonDraws) {
  std::string eight = kSmall;
  eight.replace(eight.find("dp: 2, tp: 2, pp: 4"), 19, "dp: 8, tp: 2, pp: 4");
  Write("dp8.yaml", eight);
  auto processes = [](const fs::path& run) {
    const auto trace = nlohmann::json::parse(Slurp(run / "trace.json"));
    const auto& events = trace.is_object() ? trace["traceEvents"] : trace;
    int n = 0;
    for (const auto& e : events) n += e.value("name", "") == "process_name";
    return n;
  };
  for (const auto& [flag, devices] :
       std::vector<std::pair<std::string, int>>{{"", 4 * 4},
                                                {" --trace-replicas 2", 2 * 4},
                                                {" --trace-replicas 0", 8 * 4},
                                                {" --trace-replicas 100", 8 * 4}}) {
    const fs::path run = dir_ / ("replicas" + std::to_string(devices) + (flag.empty() ? "d" : ""));
    CliRun r = Mmtwin("simulate " + P("dp8.yaml") + flag + " -o " + run.string());
    ASSERT_EQ(r.code, 0) << flag << "\n" << r.out;
    EXPECT_EQ(processes(run), devices) << flag;
    EXPECT_NE(Slurp(run / "ops.csv").find(",31,"), std::string::npos) << "ops.csv keeps device 31";
  }
  CliRun bad = Mmtwin("simulate " + P("dp8.yaml") + " --trace-replicas many -o " + (dir_ / "bad").string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--trace-replicas: 'many' is not a non-negative integer"), std::string::npos)
      << bad.out;
}

// Issue 33, item 4: samples longer than the model's context. A model file with max_context 2048 (LLaVA-1.5's
// model_max_length) over a trace of four samples of 676, 2,076, 3,576 and 626 LLM tokens (text + 576 image
// tokens): trace stats flags the two longer ones, simulate cuts them and says so, summary.json counts them; the
// same model without max_context cuts nothing and its summary has no such key.
TEST_F(CliSimulateTest, SamplesLongerThanTheModelsContextAreCutAndSaid) {
  std::ofstream(dir_ / "long.csv")
      << "sample_id,subset,images,image_tiles,video_frames,audio_seconds,text_tokens\n"
         "a,s,1,1,0,0,100\nb,s,1,1,0,0,1500\nc,s,1,1,0,0,3000\nd,s,1,1,0,0,50\n";
  const std::string model =
      "name: llava-ctx\ndescription: LLaVA-1.5-7B as trained\nmax_context: 2048\n"
      "components:\n  - use: clip-vit-l-14-336\n    input: {resize: fixed}\n"
      "  - {name: projector, kind: projector, projector_dims: [1024, 4096, 4096]}\n"
      "  - use: vicuna-7b-v1.5\n";
  Write("llava-ctx.yaml", model);
  std::string uncut = model;
  uncut.replace(uncut.find("max_context: 2048\n"), 18, "");
  Write("llava-uncut.yaml", uncut);
  auto scenario = [](const std::string& name, const std::string& model_file) {
    return "name: " + name + "\ntrace: {file: long.csv}\nmodel: ./" + model_file +
           "\ncluster: {preset: a100-4x200g, nodes: 2}\nparallel: {dp: 2, tp: 2, pp: 2, micro_batches: 1, "
           "zero_stage: 1}\n"
           "policies: {data: {name: random, params: {batch_size: 1}}}\niterations: 2\n";
  };
  Write("ctx.yaml", scenario("ctx", "llava-ctx.yaml"));
  Write("uncut.yaml", scenario("uncut", "llava-uncut.yaml"));

  const CliRun stats = Mmtwin("trace stats " + P("long.csv") + " --model " + P("llava-ctx.yaml"));
  ASSERT_EQ(stats.code, 0) << stats.out;
  EXPECT_NE(stats.out.find("2 samples exceed the model's 2048-token context (max_context)"),
            std::string::npos)
      << stats.out;
  EXPECT_NE(stats.out.find("3576"), std::string::npos) << "stats show the data's own lengths:\n" << stats.out;

  const CliRun cut = Mmtwin("simulate " + P("ctx.yaml") + " -o " + P("ctx-run"));
  ASSERT_EQ(cut.code, 0) << cut.out;
  EXPECT_NE(cut.out.find("context         2 of the trace's samples are longer than the model's 2,048-token"),
            std::string::npos)
      << cut.out;
  const auto summary = nlohmann::json::parse(Slurp(dir_ / "ctx-run" / "summary.json"));
  EXPECT_EQ(summary["samples_truncated"], 2);
  EXPECT_EQ(summary["max_context"], 2048);

  const CliRun whole = Mmtwin("simulate " + P("uncut.yaml") + " -o " + P("uncut-run"));
  ASSERT_EQ(whole.code, 0) << whole.out;
  EXPECT_EQ(whole.out.find("context  "), std::string::npos) << whole.out;
  const auto uncut_summary = nlohmann::json::parse(Slurp(dir_ / "uncut-run" / "summary.json"));
  EXPECT_FALSE(uncut_summary.contains("samples_truncated"));
  // Cut samples cost less: the same iterations, fewer LLM tokens.
  EXPECT_LT(
      summary["tokens_per_s"].get<double>() * summary["iteration_time_us"]["mean"].get<double>(),
      uncut_summary["tokens_per_s"].get<double>() * uncut_summary["iteration_time_us"]["mean"].get<double>());
}

TEST_F(CliSimulateTest, SameScenarioAndSeedGiveByteIdenticalSummaries) {
  CliRun a = Mmtwin("simulate " + P("small.yaml") + " -o " + P("det-1"));
  CliRun b = Mmtwin("simulate " + P("small.yaml") + " -o " + P("det-2"));
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  const std::string s1 = Slurp(dir_ / "det-1" / "summary.json"), s2 = Slurp(dir_ / "det-2" / "summary.json");
  EXPECT_FALSE(s1.empty());
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(Slurp(dir_ / "det-1" / "stages.csv"), Slurp(dir_ / "det-2" / "stages.csv"));
  EXPECT_EQ(Slurp(dir_ / "det-1" / "trace.json"), Slurp(dir_ / "det-2" / "trace.json"));
}

TEST_F(CliSimulateTest, JsonPrintsTheSummaryFile) {
  CliRun r = Mmtwin("simulate " + P("small.yaml") + " --json -o " + P("json-run"), /*with_stderr=*/false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(Slurp(dir_ / "json-run" / "summary.json")));
}

// --progress: "progress F" lines on stderr for a parent process (the GUI), increasing, the last 1.000; stdout is the
// same summary as without it.
TEST_F(CliSimulateTest, ProgressLinesForAParentProcess) {
  const std::string base = std::string(MMTWIN_CLI) + " simulate " + scenarios_default();
  CliRun r = Shell(base + " -o " + P("progress-run") + " --progress 2>&1 >/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream lines(r.out);
  std::vector<double> f;
  for (std::string line; std::getline(lines, line);) {
    ASSERT_EQ(line.rfind("progress ", 0), 0u) << "not a progress line: " << line;
    f.push_back(std::stod(line.substr(9)));
  }
  ASSERT_GE(f.size(), 2u) << r.out;
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GT(f[i], f[i - 1]);
  EXPECT_EQ(f.back(), 1.0);
  EXPECT_EQ(Shell(base + " -o " + P("progress-a") + " --progress 2>/dev/null").out.size(),
            Shell(base + " -o " + P("progress-a") + " 2>/dev/null").out.size());
}

TEST_F(CliSimulateTest, DefaultRunFolderIsRunsSlashName) {
  const fs::path cwd = dir_ / "cwd";
  fs::create_directories(cwd);
  CliRun r = Shell("cd " + cwd.string() + " && " + std::string(MMTWIN_CLI) + " simulate " + P("small.yaml") +
                   " --json > /dev/null 2>&1");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* f : {"summary.json", "stages.csv", "trace.json", "scenario.yaml"})
    EXPECT_TRUE(fs::is_regular_file(cwd / "runs" / "small" / f)) << f;
}

TEST_F(CliSimulateTest, PlanPrintsStagesAndJson) {
  CliRun t = Mmtwin("plan " + P("small.yaml"));
  ASSERT_EQ(t.code, 0) << t.out;
  for (const char* s : {"stage", "params", "recomp", "fwd ms", "peak", "capacity"})
    EXPECT_NE(t.out.find(s), std::string::npos) << s << "\n" << t.out;
  CliRun j = Mmtwin("plan " + P("small.yaml") + " --json", /*with_stderr=*/false);
  ASSERT_EQ(j.code, 0) << j.out;
  auto plan = nlohmann::json::parse(j.out);
  ASSERT_TRUE(plan.contains("stages"));
  ASSERT_EQ(plan["stages"].size(), 4u);
  for (const char* k :
       {"stage", "first_layer", "last_layer", "params", "recomputed_layers", "fwd_us_mean",
        "model_state_bytes", "peak_activation_bytes", "peak_memory_bytes", "memory_capacity_bytes"})
    EXPECT_TRUE(plan["stages"][0].contains(k)) << k;
  EXPECT_FALSE(plan["oom"].get<bool>());
  // Stages cover the layers in order, without gaps.
  int next = 0;
  for (const auto& st : plan["stages"]) {
    EXPECT_EQ(st["first_layer"].get<int>(), next);
    next = st["last_layer"].get<int>() + 1;
  }
}

// `plan --json` holds every term of each stage's peak, and they add up: the five model-state buffers to
// model_state_bytes, the states, activations, boundary buffers and workspaces to the allocated peak, and that,
// the fragmentation and the runtime terms to peak_memory_bytes (the number the stage table and the OOM check
// use). `--memory` prints the same terms.
TEST_F(CliSimulateTest, PlanMemoryBreakdownSumsToThePeak) {
  CliRun j = Mmtwin("plan " + P("small.yaml") + " --json", /*with_stderr=*/false);
  ASSERT_EQ(j.code, 0) << j.out;
  const auto plan = nlohmann::json::parse(j.out);
  ASSERT_FALSE(plan["stages"].empty());
  for (const auto& st : plan["stages"]) {
    const auto& m = st.at("memory");
    const auto b = [&](const char* k) { return m.at(k).get<int64_t>(); };
    EXPECT_EQ(b("weight_bytes") + b("grad_bytes") + b("main_grad_bytes") + b("optimizer_bytes") +
                  b("zero3_transient_bytes"),
              b("model_state_bytes"));
    EXPECT_EQ(b("model_state_bytes"), st.at("model_state_bytes").get<int64_t>());
    EXPECT_EQ(
        b("model_state_bytes") + b("peak_activation_bytes") + b("boundary_bytes") + b("workspace_bytes"),
        b("allocated_peak_bytes"));
    EXPECT_EQ(b("allocated_peak_bytes") + b("fragmentation_bytes") + b("cuda_context_bytes") +
                  b("nccl_bytes") + b("other_bytes"),
              b("peak_bytes"));
    EXPECT_EQ(b("peak_bytes"), st.at("peak_memory_bytes").get<int64_t>());
    EXPECT_GT(b("weight_bytes"), 0);
    EXPECT_GT(b("cuda_context_bytes"), 0);  // the preset's CUDA context
    EXPECT_LE(b("microbatch_footprint_min_bytes"), b("microbatch_footprint_max_bytes"));
  }
  CliRun t = Mmtwin("plan " + P("small.yaml") + " --memory");
  ASSERT_EQ(t.code, 0) << t.out;
  for (const char* s : {"weights", "optimzr", "allocated", "frag", "context", "nccl", "= peak)"})
    EXPECT_NE(t.out.find(s), std::string::npos) << s << "\n" << t.out;
  // Stage 0's printed peak (GiB, one decimal) is the JSON's.
  const size_t row = t.out.find("\n0 ", t.out.find("allocated"));
  ASSERT_NE(row, std::string::npos) << t.out;
  std::istringstream cells(t.out.substr(row + 1, t.out.find('\n', row + 1) - row - 1));
  std::vector<double> v;
  std::string cell;
  while (cells >> cell) v.push_back(std::stod(cell));
  ASSERT_EQ(v.size(), 16u) << t.out;
  EXPECT_NEAR(v[14], plan["stages"][0]["memory"]["peak_bytes"].get<double>() / (1ll << 30), 0.051);
  EXPECT_EQ(Mmtwin("plan " + P("small.yaml") + " --memory --max-seq").code, 2);
}

TEST_F(CliSimulateTest, OomStillWritesOutputsAndExitsOne) {
  CliRun r = Mmtwin("simulate " + P("oom.yaml") + " -o " + P("oom-run"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("OOM: stage 0 is short by"), std::string::npos) << r.out;
  auto summary = nlohmann::json::parse(Slurp(dir_ / "oom-run" / "summary.json"));
  EXPECT_TRUE(summary["oom"].get<bool>());
  ASSERT_FALSE(summary["oom_stages"].empty());
  EXPECT_GT(summary["oom_stages"][0]["short_bytes"].get<double>(), 0);
  for (const char* f : {"stages.csv", "trace.json", "scenario.yaml"})
    EXPECT_TRUE(fs::is_regular_file(dir_ / "oom-run" / f)) << f;
  CliRun p = Mmtwin("plan " + P("oom.yaml"));
  EXPECT_EQ(p.code, 1) << p.out;
  EXPECT_NE(p.out.find("OOM"), std::string::npos) << p.out;
}

// Running out of memory (here under a 600 MB address-space limit, a trace of 50M samples) is a clear message and
// exit 2, not an abort.
TEST_F(CliSimulateTest, OutOfMemoryIsAMessageAndExitTwo) {
  // What the planner's estimate does not cover (here generating a 50M-sample trace file) and still runs out of
  // memory ends with a message and exit 2, not an abort. ulimit -v cannot be combined with AddressSanitizer.
  if (kAddressSanitizer) GTEST_SKIP() << "ulimit -v under AddressSanitizer";
  const CliRun r =
      Shell("bash -c 'ulimit -v 600000; " + std::string(MMTWIN_CLI) +
            " trace gen --preset internvl-1.2m --samples 50000000 -o " + P("big.csv") + "' 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("mmtwin: out of memory"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "big.csv"));
}

TEST_F(CliSimulateTest, PlanLargerThanMemoryIsRefusedAtItsKeyBeforeAllocating) {
  // 100M samples (~22 GB) and 2^20 micro-batches (~100 GB) against a 2 GB budget: refused at once, naming the
  // scenario line and key, without generating anything (`timeout 20` would stop a run that went ahead).
  Write("samples.yaml",
        "name: samples\ntrace: {preset: internvl-1.2m, samples: 100000000}\nmodel: internvl-1.5-6b-20b\n"
        "parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 8}\n");
  Write("mbs.yaml",
        "name: mbs\ntrace: {preset: internvl-1.2m, samples: 20000}\nmodel: internvl-1.5-6b-20b\n"
        "parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 1048576}\n");
  const std::string env = "MMTWIN_MEMORY_LIMIT_BYTES=2000000000 timeout 20 ";
  CliRun r = Shell(env + MMTWIN_CLI + " simulate " + P("samples.yaml") + " -o " + P("samples-run") + " 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(
      r.out.rfind("mmtwin simulate: " + P("samples.yaml") + ":2: trace.samples: 100,000,000 samples", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("need about 20.1 GB, more than the 2.00 GB"), std::string::npos) << r.out;
  r = Shell(env + MMTWIN_CLI + " simulate " + P("mbs.yaml") + " -o " + P("mbs-run") + " 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("mbs.yaml:4: parallel.micro_batches: 1,048,576 micro-batches"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "samples-run"));
  // `plan` goes through the same planner.
  r = Shell(env + MMTWIN_CLI + " plan " + P("samples.yaml") + " 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("trace.samples"), std::string::npos) << r.out;
}

TEST_F(CliSimulateTest, HugeYamlIsRefusedBeforeParsing) {
  std::string text = kSmall;
  text += "# " + std::string(17 << 20, 'x') + "\n";
  Write("huge.yaml", text);
  const CliRun r = Mmtwin("simulate " + P("huge.yaml") + " -o " + P("huge-run"));
  EXPECT_EQ(r.code, 2) << r.out.substr(0, 300);
  EXPECT_NE(r.out.find("huge.yaml: 17 MiB is more than the 16 MiB a YAML file may have"), std::string::npos)
      << r.out.substr(0, 300);
  EXPECT_LT(r.out.size(), 400u);  // the value is not echoed
}

TEST_F(CliSimulateTest, BadInputExitsTwoWithTheMessage) {
  Write("bad-key.yaml", std::string(kSmall) + "bogus: 1\n");
  CliRun r = Mmtwin("simulate " + P("bad-key.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(P("bad-key.yaml") + ":14: bogus: unknown key; valid keys are:"), std::string::npos)
      << r.out;

  r = Mmtwin("plan " + P("bad-key.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(":14: bogus: unknown key"), std::string::npos) << r.out;

  r = Mmtwin("simulate " + P("small.yaml") + " --engine ns3 -o " + P("never"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown engine 'ns3'; valid values are: analytic, simgrid"), std::string::npos)
      << r.out;
  r = Mmtwin("simulate " + P("small.yaml") + " --contention off -o " + P("never"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--contention off applies to the simgrid engine"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "never"));

  r = Mmtwin("simulate " + P("no-such.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(P("no-such.yaml")), std::string::npos) << r.out;

  std::string text = kSmall;
  text.replace(text.find("data: isf"), 9, "data: nope");
  Write("bad-policy.yaml", text);
  r = Mmtwin("simulate " + P("bad-policy.yaml") + " -o " + P("never"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("'nope'"), std::string::npos) << r.out;

  r = Mmtwin("simulate " + P("small.yaml") + " --frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown option '--frobnicate'"), std::string::npos) << r.out;
  r = Mmtwin("simulate " + P("small.yaml") + " --trace-iteration minus");
  EXPECT_EQ(r.code, 2);
  r = Mmtwin("simulate " + P("small.yaml") + " --trace-iteration 2 -o " +
             P("never"));  // 2 iterations replayed
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--trace-iteration 2: only 2 iterations were replayed (0..1)"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "never"));
  r = Mmtwin("simulate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("usage: mmtwin simulate"), std::string::npos) << r.out;
  r = Mmtwin("plan");
  EXPECT_EQ(r.code, 2);
  r = Mmtwin("simulate --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST_F(CliSimulateTest, SmallRunsPrintGpuDaysWithThreeSignificantDigits) {
  // One decimal printed "0.0 GPU-days" for a small run, hiding 2x differences between runs.
  Write("pp1.yaml",
        "name: pp1\ntrace: {preset: internvl-1.2m, samples: 2000, seed: 3}\nmodel: internvl-1.5-6b-20b\n"
        "parallel: {dp: 8, tp: 4, pp: 1, micro_batches: 4, zero_stage: 1}\npolicies: {data: isf, recompute: "
        "full}\niterations: 2\n");
  const CliRun json = Mmtwin("simulate " + P("pp1.yaml") + " -o " + P("pp1-run") + " --json", false);
  ASSERT_EQ(json.code, 0) << json.out;
  const double days = nlohmann::json::parse(json.out).at("gpu_days").get<double>();
  ASSERT_GT(days, 0);
  ASSERT_LT(days, 1);
  const CliRun text = Mmtwin("simulate " + P("pp1.yaml") + " -o " + P("pp1-run"));
  ASSERT_EQ(text.code, 0) << text.out;
  const size_t at = text.out.find("epoch           ");
  ASSERT_NE(at, std::string::npos) << text.out;
  const double printed = std::stod(text.out.substr(at + 16));
  EXPECT_NEAR(printed, days, 0.005 * days) << text.out.substr(at, 80);
  EXPECT_EQ(text.out.find("-0.0"), std::string::npos) << text.out;
}

// Issue 33, item 2: the printed time split is busy (recompute inside it), exposed communication, bubble and idle,
// which add up to 100% of GPU time; it printed recompute beside busy and no exposed communication (a ZeRO-3
// run's largest non-compute cost summed to 96.6%, a recomputing baseline to 111.4%).
TEST_F(CliSimulateTest, TheTimeSplitAddsUpToAllGpuTime) {
  Write("zero3.yaml",
        "name: zero3\ntrace: {preset: internvl-1.2m, samples: 2000, seed: 3}\nmodel: internvl-1.5-6b-20b\n"
        "parallel: {dp: 16, tp: 2, pp: 1, micro_batches: 2, zero_stage: 3}\npolicies: {data: isf, recompute: "
        "full}\niterations: 2\n");
  for (const std::string& scenario : {P("zero3.yaml"), scenarios_default()}) {
    const CliRun json = Mmtwin("simulate " + scenario + " -o " + P("split-run") + " --json", false);
    ASSERT_EQ(json.code, 0) << json.out;
    const auto j = nlohmann::json::parse(json.out);
    const CliRun text = Mmtwin("simulate " + scenario + " -o " + P("split-run"));
    ASSERT_EQ(text.code, 0) << text.out;
    const size_t at = text.out.find("time split      ");
    ASSERT_NE(at, std::string::npos) << text.out;
    const std::string line = text.out.substr(at, text.out.find('\n', at) - at);
    auto value = [&](const std::string& label) {
      const size_t p = line.find(label + " ");
      EXPECT_NE(p, std::string::npos) << label << " in: " << line;
      return p == std::string::npos ? -1.0 : std::stod(line.substr(p + label.size() + 1));
    };
    const double busy = value("busy"), comm = value("exposed comm"), bubble = value("bubble"),
                 idle = value("idle"), recompute = value("(recompute");
    EXPECT_NEAR(busy + comm + bubble + idle, 100.0, 0.25) << line;
    EXPECT_LE(recompute, busy) << line;
    EXPECT_NEAR(comm, 100 * j.at("exposed_comm_ratio").get<double>(), 0.051) << line;
    EXPECT_NEAR(recompute, 100 * j.at("recompute_ratio").get<double>(), 0.051) << line;
    if (scenario == P("zero3.yaml")) {
      EXPECT_GT(comm, 1.0) << line;  // ZeRO-3 at dp 16 exposes communication
    }
  }
}

// The model line says how the run is priced when it is not the default: the attention kernel and the eager
// kernel families (model.kernels), nothing for the defaults.
TEST_F(CliSimulateTest, TheModelLineNamesTheKernels) {
  const std::string base = "trace: {preset: internvl-1.2m, samples: 200, seed: 3}\n";
  Write("eager.yaml", "name: eager\n" + base +
                          "model: {name: internvl-1.5-6b-20b, attention: unfused, kernels: {rotary: eager, "
                          "activation: eager}}\nparallel: {dp: 2, tp: 1, pp: 1, micro_batches: 1}\n");
  Write("plain.yaml",
        "name: plain\n" + base + "model: internvl-1.5-6b-20b\nparallel: {dp: 2, tp: 1, pp: 1, micro_batches: 1}\n");
  // Exit 1: the 26B model does not fit two GPUs (the header is printed either way).
  const CliRun eager = Mmtwin("simulate " + P("eager.yaml") + " -o " + P("eager-run"), false);
  ASSERT_LE(eager.code, 1) << eager.out;
  EXPECT_NE(eager.out.find("model           internvl-1.5-6b-20b (attention unfused; kernels eager: rotary, "
                           "activation)\n"),
            std::string::npos)
      << eager.out;
  const CliRun plain = Mmtwin("simulate " + P("plain.yaml") + " -o " + P("plain-run"), false);
  ASSERT_LE(plain.code, 1) << plain.out;
  EXPECT_NE(plain.out.find("model           internvl-1.5-6b-20b\n"), std::string::npos) << plain.out;
}

// Issue 33, item 4: one replayed iteration printed a zero-width 95% interval; it says there is none instead.
TEST_F(CliSimulateTest, OneIterationPrintsNoConfidenceInterval) {
  auto scenario = [](const std::string& name, int iterations) {
    return "name: " + name +
           "\ntrace: {preset: internvl-1.2m, samples: 2000, seed: 3}\nmodel: internvl-1.5-6b-20b\n"
           "parallel: {dp: 8, tp: 4, pp: 1, micro_batches: 4, zero_stage: 1}\npolicies: {recompute: full}\n"
           "iterations: " +
           std::to_string(iterations) + "\n";
  };
  Write("one.yaml", scenario("one", 1));
  const CliRun one = Mmtwin("simulate " + P("one.yaml") + " -o " + P("one-run"));
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_EQ(one.out.find("95% CI"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("one iteration replayed: no confidence interval"), std::string::npos) << one.out;
  Write("two.yaml", scenario("two", 2));
  const CliRun two = Mmtwin("simulate " + P("two.yaml") + " -o " + P("two-run"));
  ASSERT_EQ(two.code, 0) << two.out;
  EXPECT_NE(two.out.find("95% CI"), std::string::npos) << two.out;
}

TEST_F(CliSimulateTest, SamplesLeftOutOfTheEpochAreReported) {
  // 2,003 samples in mini-batches of 2 x 4: the data policy drops 3, which the summary used not to say.
  Write("drop.yaml",
        "name: drop\ntrace: {preset: internvl-1.2m, samples: 2003, seed: 3}\nmodel: internvl-1.5-6b-20b\n"
        "parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 4, zero_stage: 1}\n"
        "policies: {data: {name: random, params: {batch_size: 4}}, recompute: full}\niterations: 2\n");
  const CliRun json = Mmtwin("simulate " + P("drop.yaml") + " -o " + P("drop-run") + " --json", false);
  ASSERT_EQ(json.code, 0) << json.out;
  const auto data = nlohmann::json::parse(json.out).at("data");
  const int64_t skipped = data.at("samples_skipped").get<int64_t>(),
                dropped = data.at("samples_dropped").get<int64_t>();
  ASSERT_GT(skipped + dropped, 0);
  const CliRun text = Mmtwin("simulate " + P("drop.yaml") + " -o " + P("drop-run"));
  EXPECT_NE(text.out.find("left out of the epoch: " + std::to_string(skipped) + " skipped, " +
                          std::to_string(dropped) + " dropped of 2,003"),
            std::string::npos)
      << text.out;
}

TEST_F(CliSimulateTest, TraceIterationPicksTheExportedIteration) {
  CliRun a = Mmtwin("simulate " + P("small.yaml") + " --trace-iteration 0 -o " + P("ti-0"));
  CliRun b = Mmtwin("simulate " + P("small.yaml") + " --trace-iteration 1 -o " + P("ti-1"));
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(Slurp(dir_ / "ti-0" / "summary.json"), Slurp(dir_ / "ti-1" / "summary.json"));
  EXPECT_NE(Slurp(dir_ / "ti-0" / "trace.json"), Slurp(dir_ / "ti-1" / "trace.json"));
}

// The README's main command: the shipped default scenario runs and fits.
TEST_F(CliSimulateTest, DefaultScenarioRuns) {
  const std::string scenario = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml";
  CliRun r = Mmtwin("simulate " + scenario + " -o " + P("default-run"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto summary = nlohmann::json::parse(Slurp(dir_ / "default-run" / "summary.json"));
  EXPECT_FALSE(summary["oom"].get<bool>());
  EXPECT_EQ(summary["iterations_replayed"].get<int>(), 8);
  CliRun p = Mmtwin("plan " + scenario);
  EXPECT_EQ(p.code, 0) << p.out;
}

// The OmniBal pairs (golden): both sides fit, and OmniBal predicts fewer GPU-days than its baseline.
TEST_F(CliSimulateTest, OmniBalPairsPredictASpeedUp) {
  const std::string dir = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/omnibal/";
  for (const std::string m : {"internvl-6b-20b", "internvl-6b-34b"}) {
    double days[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const std::string name = m + (k == 0 ? "-baseline" : "-omnibal");
      CliRun r = Mmtwin("simulate " + dir + name + ".yaml --json -o " + P(name), /*with_stderr=*/false);
      ASSERT_EQ(r.code, 0) << name << "\n" << r.out;
      auto j = nlohmann::json::parse(r.out);
      EXPECT_FALSE(j["oom"].get<bool>()) << name;
      days[k] = j["gpu_days"].get<double>();
    }
    EXPECT_GT(days[0] / days[1], 1.5)
        << m << ": baseline " << days[0] << " vs OmniBal " << days[1] << " GPU-days";
  }
}

TEST_F(CliSimulateTest, TopLevelHelpListsTheCommands) {
  CliRun r = Mmtwin("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("plan SCENARIO"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("simulate SCENARIO"), std::string::npos) << r.out;
}

}  // namespace

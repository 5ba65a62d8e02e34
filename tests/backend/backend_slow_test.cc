// SPDX-License-Identifier: Apache-2.0
// The real backend (mmtwin-train, MMTWIN_TRAIN): real processes over c10d Gloo, checked against oracles.
//   - gradients and loss of every layout equal the single-process reference (one autograd graph per
//     micro-batch through the whole model, no communication, no recompute): max |difference| <= 1e-5 x the
//     gradient norm;
//   - the ops each rank ran (ops.csv) are the plan's schedule in order, and the tokens / samples of each
//     micro-batch are the plan's;
//   - a killed rank ends the job with a message naming it, and the run folder keeps the finished iterations;
//   - bad scenarios are refused before any process starts (exit 2, file:line: field);
//   - `mmtwin compare` reads the measured run next to a simulated one;
//   - a ping-pong run times round trips over message sizes, and `mmtwin calibrate --links` fits them.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "core/cost/cost_model.h"
#include "core/plan/mesh.h"
#include "core/records/layer_timings.h"
#include "core/records/pingpong.h"
#include "core/records/plan_codec.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "driver/planner.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::Shell;

std::string Dir(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  fs::path d = fs::path(t && *t ? t : fs::temp_directory_path().string()) / ("backend_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// The small scenario with overrides, as a file in `dir`; one iteration, no warm-up.
std::string Scenario(const std::string& dir, const std::vector<ScenarioOverride>& overrides) {
  auto text = ReadFile(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml");
  EXPECT_TRUE(text.ok());
  std::vector<ScenarioOverride> o = {{"iterations", "1"}, {"backend.warmup_iterations", "0"}};
  o.insert(o.end(), overrides.begin(), overrides.end());
  auto out = OverrideScenarioYaml(*text, o);
  EXPECT_TRUE(out.ok()) << out.error().message();
  const std::string path = dir + "/scenario.yaml";
  std::ofstream(path) << *out;
  // The parsed scenario must be valid (so a failure below is the backend's).
  auto parsed = LoadScenario(path);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message();
  return path;
}

CliRun Train(const std::string& args) { return Shell(std::string(MMTWIN_TRAIN) + " " + args + " 2>&1"); }

using Grads = std::map<std::string, std::vector<float>>;
Grads ReadGrads(const std::string& path) {
  Grads g;
  std::ifstream in(path, std::ios::binary);
  char magic[4];
  in.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4), "MMTG") << path;
  while (true) {
    uint32_t len = 0;
    if (!in.read(reinterpret_cast<char*>(&len), 4)) break;
    std::string name(len, '\0');
    in.read(name.data(), len);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    std::vector<float> v(n);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4));
    g[name] = std::move(v);
  }
  return g;
}

struct Comparison {
  double grad_norm = 0, worst_abs = 0, loss_ref = 0, loss_sum = 0;
  int params = 0, missing = 0;
  // After one AdamW step: elements whose value differs from the reference's by more than a tenth of the
  // learning rate (Adam's first step moves each element by about lr * sign(gradient), so a wrong or missing
  // update shows on about every element; a gradient within rounding of zero may flip sign, hence a count).
  int64_t param_elements = 0, param_off = 0;
};

// Runs the reference and the distributed job, and compares every parameter's gradient (every rank holding a
// parameter must have the reference's: DP replicas after the all-reduce).
Comparison RunAndCompare(const std::string& name, const std::vector<ScenarioOverride>& overrides, int nproc) {
  const std::string dir = Dir(name);
  const std::string sc = Scenario(dir, overrides);
  Comparison c;
  CliRun ref = Train("reference " + sc + " -o " + dir + "/ref");
  EXPECT_EQ(ref.code, 0) << ref.out;
  CliRun run = Train("launch --nproc " + std::to_string(nproc) + " " + sc + " -o " + dir +
                     "/real --iterations 1" + " --dump-grads " + dir + "/grads");
  EXPECT_EQ(run.code, 0) << run.out;
  if (ref.code != 0 || run.code != 0) return c;
  const Grads r = ReadGrads(dir + "/ref/grads.ref.bin");
  std::vector<Grads> ranks;
  for (int i = 0; i < nproc; ++i)
    ranks.push_back(ReadGrads(dir + "/grads/grads.rank" + std::to_string(i) + ".bin"));
  const Grads pr = ReadGrads(dir + "/ref/params.ref.bin");
  for (int i = 0; i < nproc; ++i)
    for (const auto& [k, v] : ReadGrads(dir + "/grads/params.rank" + std::to_string(i) + ".bin")) {
      if (k == "__loss__" || !pr.count(k)) continue;
      const std::vector<float>& want = pr.at(k);
      EXPECT_EQ(v.size(), want.size()) << k;
      for (size_t j = 0; j < v.size() && j < want.size(); ++j) {
        ++c.param_elements;
        if (std::abs(static_cast<double>(v[j]) - want[j]) > 0.1 * 1e-4) ++c.param_off;
      }
    }
  for (const auto& [k, v] : r) {
    if (k == "__loss__") {
      c.loss_ref = v[0];
      continue;
    }
    ++c.params;
    for (float x : v) c.grad_norm += static_cast<double>(x) * x;
    int holders = 0;
    for (const Grads& g : ranks) {
      auto it = g.find(k);
      if (it == g.end()) continue;
      ++holders;
      EXPECT_EQ(it->second.size(), v.size()) << k;
      for (size_t i = 0; i < v.size() && i < it->second.size(); ++i)
        c.worst_abs = std::max(c.worst_abs, std::abs(static_cast<double>(it->second[i]) - v[i]));
    }
    if (holders == 0) ++c.missing;
  }
  c.grad_norm = std::sqrt(c.grad_norm);
  for (const Grads& g : ranks) c.loss_sum += g.at("__loss__")[0];
  return c;
}

void ExpectMatches(const Comparison& c) {
  EXPECT_GT(c.params, 10);
  EXPECT_EQ(c.missing, 0);
  EXPECT_GT(c.grad_norm, 0);
  EXPECT_LE(c.worst_abs, 1e-5 * c.grad_norm) << "worst " << c.worst_abs << " norm " << c.grad_norm;
  EXPECT_NEAR(c.loss_sum, c.loss_ref, 1e-5 * std::abs(c.loss_ref));
  EXPECT_GT(c.param_elements, 1000);
  EXPECT_LE(c.param_off, c.param_elements / 10000) << "of " << c.param_elements << " parameter elements";
}

// Runs the scenario with overrides `o` on 4 processes and checks that every stage-0 rank recorded one dispatch op
// of pass `pass` per micro-batch with transfers (the forward dispatch, or the backward all-to-all), carrying the
// bytes the plan says that DP rank sends (rounded up to whole floats).
void ExpectDispatchOpsCarryThePlansBytes(const std::string& name, const std::vector<ScenarioOverride>& o,
                                         PassKind pass) {
  const std::string dir = Dir(name);
  CliRun run = Train("launch --nproc 4 " + Scenario(dir, o) + " -o " + dir + "/real");
  ASSERT_EQ(run.code, 0) << run.out;
  auto ops = ParseOpsCsv(*ReadFile(dir + "/real/ops.csv"), "ops.csv");
  ASSERT_TRUE(ops.ok()) << ops.error().message();
  auto plan = PlanFromJson(*ReadFile(dir + "/real/plan.json"), "plan.json");
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const DeviceMesh mesh(plan->parallel);
  int checked = 0;
  for (const IterationData& it : plan->iterations) {
    const auto& lists = pass == PassKind::kForward ? it.dispatch : it.dispatch_backward;
    for (int dev = 0; dev < mesh.num_devices(); ++dev) {
      if (mesh.PpOfDevice(dev) != 0) continue;
      const int dp = mesh.DpOfDevice(dev);
      for (size_t m = 0; m < lists.size(); ++m) {
        if (lists[m].empty()) continue;
        int64_t want = 0;
        for (const DispatchTransfer& t : lists[m])
          if (t.src_rank == dp) want += (t.bytes + 3) / 4 * 4;
        int64_t got = -1;
        for (const OpRecord& r : *ops)
          if (r.kind == OpKind::kDispatch && r.pass == pass && r.iteration == it.epoch_index &&
              r.device == dev && r.micro_batch == static_cast<int>(m))
            got = r.bytes;
        EXPECT_EQ(got, want) << "device " << dev << " micro-batch " << m;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0) << "the plan has no such all-to-all: the test checks nothing";
}

// The orchestrator moves encoder outputs to their LLM ranks, so its plan has a backward all-to-all per
// micro-batch (the outputs' gradients going back): the backend runs it at the start of chunk 0's backward
// (ops.csv: a dispatch op with pass backward carrying the planned bytes this rank sends); gradients unchanged.
TEST(BackendOracle, Dp2OrchestratorBackwardAllToAll) {
  const std::vector<ScenarioOverride> o = {{"policies.data.name", "orchestrator"},
                                           {"policies.data.params.batch_size", "2"},
                                           {"policies.data.params.dispatch", "all-to-all"}};
  ExpectMatches(RunAndCompare("orch", o, 4));
  ExpectDispatchOpsCarryThePlansBytes("orch_ops", o, PassKind::kBackward);
}

TEST(BackendOracle, Pp2OneFOneB) {
  ExpectMatches(RunAndCompare("pp2_1f1b", {{"parallel.dp", "1"}, {"parallel.pp", "2"}}, 2));
}
TEST(BackendOracle, Pp2Gpipe) {
  ExpectMatches(RunAndCompare("pp2_gpipe", {{"parallel.dp", "1"}, {"policies.schedule", "gpipe"}}, 2));
}
TEST(BackendOracle, Pp2Vpp2Interleaved) {
  ExpectMatches(RunAndCompare(
      "pp2_vpp2", {{"parallel.dp", "1"}, {"parallel.vpp", "2"}, {"policies.schedule", "interleaved-1f1b"}},
      2));
}
TEST(BackendOracle, Dp2) { ExpectMatches(RunAndCompare("dp2", {{"parallel.pp", "1"}}, 2)); }
TEST(BackendOracle, Dp2Pp2) { ExpectMatches(RunAndCompare("dp2_pp2", {}, 4)); }
// Tensor parallelism (Megatron column / row-parallel blocks): widths / 8 so that tp 2 divides every block's heads
// (ViT 2, LLM 4) and FFN; each split weight's gradient is gathered whole for the comparison.
TEST(BackendOracle, Tp2) {
  ExpectMatches(RunAndCompare(
      "tp2",
      {{"parallel.tp", "2"}, {"parallel.dp", "1"}, {"parallel.pp", "1"}, {"backend.width_divisor", "8"}}, 2));
}
TEST(BackendOracle, Tp2Pp2) {
  ExpectMatches(RunAndCompare(
      "tp2_pp2", {{"parallel.tp", "2"}, {"parallel.dp", "1"}, {"backend.width_divisor", "8"}}, 4));
}
// Post-balancing (OrchMLLM): the data-dispatch all-to-all runs before each micro-batch's first forward on the
// stage-0 ranks, moving the plan's bytes (ops.csv: one dispatch op per micro-batch, the bytes this DP rank
// sends); the gradients are unchanged.
TEST(BackendOracle, Dp2PostBalanceDispatch) {
  const std::vector<ScenarioOverride> o = {{"policies.data.name", "post-balance"},
                                           {"policies.data.params.batch_size", "2"},
                                           {"policies.data.params.dispatch", "all-to-all"}};
  ExpectMatches(RunAndCompare("dispatch", o, 4));
  ExpectDispatchOpsCarryThePlansBytes("dispatch_ops", o, PassKind::kForward);
}
// The audio encoder (OrchMLLM-10B shrunk: Whisper-style conv front end, windowed attention, audio projector) on
// ASR / spoken-QA samples: a padded plan (random batches) pads each micro-batch's audio to its longest, silence
// attended within the windows and dropped before the projector, as the simulator prices it; a packed plan
// (post-balance) runs each sample at its own length. Both equal the single-process reference.
const std::vector<ScenarioOverride> kAudio = {{"model", "orchmllm-10b"},
                                              {"trace.preset", "asr-sqa-mix"},
                                              {"backend.layers.audio", "1"},
                                              {"backend.layers.vision", "1"},
                                              {"backend.layers.llm", "2"}};
TEST(BackendOracle, AudioPaddedPp2) {
  std::vector<ScenarioOverride> o = kAudio;
  o.push_back({"parallel.dp", "1"});
  ExpectMatches(RunAndCompare("audio_padded", o, 2));
}
TEST(BackendOracle, AudioPackedDp2) {
  std::vector<ScenarioOverride> o = kAudio;
  o.insert(o.end(), {{"parallel.pp", "1"},
                     {"policies.data.name", "post-balance"},
                     {"policies.data.params.batch_size", "2"}});
  ExpectMatches(RunAndCompare("audio_packed", o, 2));
}
// ZeRO-1: gradients reduce-scattered (each rank holds one shard), AdamW on the shard, parameters all-gathered.
TEST(BackendOracle, Zero1) {
  ExpectMatches(RunAndCompare("zero1", {{"parallel.zero_stage", "1"}, {"parallel.pp", "1"}}, 2));
}
TEST(BackendOracle, RecomputeFull) {
  ExpectMatches(RunAndCompare("rc_full", {{"parallel.dp", "1"}, {"policies.recompute", "full"}}, 2));
}
TEST(BackendOracle, RecomputeUniformGroups) {
  // Groups of 2 layers: only each group's input kept (flags 1, 2 in the plan).
  ExpectMatches(RunAndCompare("rc_uniform", {{"parallel.dp", "1"}, {"policies.recompute", "uniform:2"}}, 2));
}
TEST(BackendOracle, RecomputeAdaptive) {
  // A reserve that leaves almost no memory: adaptive recomputes layers (checked in the plan).
  const std::string dir = Dir("rc_adaptive_plan");
  const std::vector<ScenarioOverride> o = {{"parallel.dp", "1"},
                                           {"policies.recompute.name", "adaptive"},
                                           {"policies.recompute.params.reserve_bytes", "85899340000"}};
  auto s = LoadScenario(Scenario(dir, o));
  ASSERT_TRUE(s.ok());
  auto run = BuildPlan(*s, {});
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_GT(run->plan.recompute.Count(), 0);
  ExpectMatches(RunAndCompare("rc_adaptive", o, 2));
}

// ops.csv: the compute ops of each device in the order they started are the plan's schedule of its pipeline
// rank; each forward's tokens and samples are those of the plan's micro-batch.
TEST(BackendRecords, OpOrderAndSamplesFollowThePlan) {
  const std::string dir = Dir("order");
  const std::string sc =
      Scenario(dir, {{"parallel.vpp", "2"}, {"policies.schedule", "interleaved-1f1b"}, {"iterations", "2"}});
  CliRun run = Train("launch --nproc 4 " + sc + " -o " + dir + "/real");
  ASSERT_EQ(run.code, 0) << run.out;
  auto text = ReadFile(dir + "/real/ops.csv");
  ASSERT_TRUE(text.ok());
  auto ops = ParseOpsCsv(*text, "ops.csv");
  ASSERT_TRUE(ops.ok()) << ops.error().message();
  auto plan_text = ReadFile(dir + "/real/plan.json");
  ASSERT_TRUE(plan_text.ok());
  auto plan = PlanFromJson(*plan_text, "plan.json");
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  auto s = LoadScenario(sc);
  ASSERT_TRUE(s.ok());
  auto model = LoadScenarioModel(*s);
  ASSERT_TRUE(model.ok());
  auto planned = BuildPlan(*s, {});
  ASSERT_TRUE(planned.ok());
  EXPECT_EQ(planned->plan, *plan);  // the plan rank 0 wrote is the planner's
  const DeviceMesh mesh(plan->parallel);
  ASSERT_EQ(plan->iterations.size(), 2u);
  for (const IterationData& it : plan->iterations)
    for (int dev = 0; dev < mesh.num_devices(); ++dev) {
      std::vector<OpRecord> mine;
      for (const OpRecord& o : *ops)
        if (o.iteration == it.epoch_index && o.device == dev &&
            (o.kind == OpKind::kForward || o.kind == OpKind::kBackward))
          mine.push_back(o);
      std::stable_sort(mine.begin(), mine.end(),
                       [](const OpRecord& a, const OpRecord& b) { return a.start_us < b.start_us; });
      const std::vector<PipeOp>& want = plan->schedule.per_rank[mesh.PpOfDevice(dev)];
      ASSERT_EQ(mine.size(), want.size()) << "device " << dev;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(mine[i].micro_batch, want[i].micro_batch) << "device " << dev << " op " << i;
        EXPECT_EQ(mine[i].chunk, want[i].chunk) << "device " << dev << " op " << i;
        EXPECT_EQ(mine[i].kind == OpKind::kForward, want[i].kind == PassKind::kForward);
        const std::vector<uint32_t>& samples = it.micro_batches[mesh.DpOfDevice(dev)][mine[i].micro_batch];
        int64_t tokens = 0;
        for (uint32_t k : samples) tokens += (*planned->tokens)[k].llm_tokens;
        EXPECT_EQ(mine[i].tokens, tokens);
        EXPECT_EQ(mine[i].spans, static_cast<int32_t>(samples.size()));
      }
    }
  // The measured summary reads back through the records codec, as measured.
  auto summary = LoadSummary(dir + "/real");
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->source, RecordSource::kMeasured);
  EXPECT_EQ(summary->iterations_replayed, 2);
  EXPECT_GT(summary->iteration_time_us.mean, 0);
  EXPECT_GT(summary->busy_ratio, 0);
  EXPECT_LE(summary->busy_ratio + summary->bubble_ratio + summary->exposed_comm_ratio, 1.0 + 1e-9);
  ASSERT_EQ(summary->stages.size(), 2u);
  for (const StageRecord& st : summary->stages) EXPECT_GT(st.peak_memory_bytes, 0);
  // Where it ran (issue 33, item 1), apart from the scenario's cluster label: this host, its CPUs, the ranks.
  ASSERT_TRUE(summary->machine.has_value());
  EXPECT_GT(summary->machine->cores, 0);
  EXPECT_EQ(summary->machine->ranks, summary->parallel.world_size());
  EXPECT_FALSE(summary->machine->torch.empty());
  EXPECT_FALSE(summary->machine->host.empty());
  EXPECT_TRUE(summary->machine->gpu.empty());  // a CPU run
  EXPECT_GE(summary->machine->load_avg_1m_end, 0);
  EXPECT_TRUE(fs::exists(dir + "/real/trace.json"));
  // layers.csv: every layer's workload is the one the simulator prices for that micro-batch (the plan pads:
  // the random policy's micro-batches are padded to their longest sample), the features calibration fits.
  EXPECT_FALSE(plan->packed);
  auto layers_text = ReadFile(dir + "/real/layers.csv");
  ASSERT_TRUE(layers_text.ok());
  auto rows = ParseLayerTimingsCsv(*layers_text, "layers.csv");
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  const std::vector<Layer> layers = Layers(*model);
  int checked = 0, padded = 0;
  for (const LayerTiming& r : *rows) {
    const IterationData* it = nullptr;
    for (const IterationData& i : plan->iterations)
      if (i.epoch_index == r.iteration) it = &i;
    ASSERT_NE(it, nullptr);
    std::vector<SampleTokens> mb;
    for (uint32_t k : it->micro_batches[mesh.DpOfDevice(r.device)][r.micro_batch])
      mb.push_back((*planned->tokens)[k]);
    const int comp = layers[r.layer].component;
    const LayerWorkload want = ComponentWorkload(*model, comp, mb, Packing::kPadded);
    EXPECT_EQ(r.tokens, want.tokens) << r.label;
    EXPECT_EQ(r.spans, want.sequences) << r.label;
    EXPECT_DOUBLE_EQ(r.attention_pairs, want.attn_pairs) << r.label;
    EXPECT_GT(r.fwd_us, 0) << r.label;
    EXPECT_GT(r.bwd_us, 0) << r.label;
    if (model->components[comp].kind == ComponentKind::kLlm &&
        want.tokens > ComponentWorkload(*model, comp, mb, Packing::kVarlen).tokens)
      ++padded;
    ++checked;
  }
  EXPECT_EQ(checked,
            2 * 2 * 4 * static_cast<int>(layers.size()));  // iterations x dp x micro-batches x layers
  EXPECT_GT(padded, 0);                                    // some micro-batches did carry pads
}

// Pads (a padded plan) cost compute but must not change the result: the reference with the plan's padding
// and the same reference packed give the same gradients and loss.
// Issue 33, acceptance 2: the README's backend quickstart as written (README.md "Using it", backend/README.md):
// launch, simulate, compare on the CPU scenario. The prediction is for the machine that ran it, within 0.5-2x of
// the measurement, and compare names where each side ran.
TEST(BackendQuickstart, ThePredictionIsForTheMachineThatRanIt) {
  const std::string dir = Dir("quickstart");
  const std::string s = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/validation/cpu-ws4/dp2-pp2-mb8.yaml";
  const CliRun launch = Train("launch --nproc 4 " + s + " -o " + dir + "/real");
  ASSERT_EQ(launch.code, 0) << launch.out;
  const CliRun sim = Shell(std::string(MMTWIN_CLI) + " simulate " + s + " -o " + dir + "/sim 2>&1");
  ASSERT_EQ(sim.code, 0) << sim.out;
  const CliRun cmp = Shell(std::string(MMTWIN_CLI) + " compare " + dir + "/sim " + dir + "/real 2>&1");
  ASSERT_EQ(cmp.code, 0) << cmp.out;
  EXPECT_NE(cmp.out.find("predicted for cpu-2vcpu-gloo"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("measured on "), std::string::npos) << cmp.out;
  EXPECT_EQ(cmp.out.find("not comparable"), std::string::npos) << cmp.out;
  auto a = LoadSummary(dir + "/sim");
  auto b = LoadSummary(dir + "/real");
  ASSERT_TRUE(a.ok() && b.ok());
  const double ratio = a->iteration_time_us.p50 / b->iteration_time_us.p50;
  EXPECT_GT(ratio, 0.5) << cmp.out;
  EXPECT_LT(ratio, 2.0) << cmp.out;
  std::printf("predicted / measured iteration p50: %.3f\n", ratio);
}

// Issue 33, item 4: a model whose max_context cuts samples, into their image tokens too (LLaVA-1.5 with a
// 300-token context, under its 576 image tokens): both the single-process reference and the distributed run take
// the plan's cut samples (before, both failed: the encoder rows overran the planned length), and they agree.
TEST(BackendOracle, MaxContextCutsSamplesAsThePlanDoes) {
  const std::string dir = Dir("ctx_model");
  std::ofstream(dir + "/llava-300.yaml")
      << "name: llava-300\ndescription: LLaVA-1.5-7B with a 300-token context\nmax_context: 300\n"
         "components:\n  - use: clip-vit-l-14-336\n    input: {resize: fixed}\n"
         "  - {name: projector, kind: projector, projector_dims: [1024, 4096, 4096]}\n"
         "  - use: vicuna-7b-v1.5\n";
  ExpectMatches(RunAndCompare("ctx", {{"model", dir + "/llava-300.yaml"}}, 4));
}

TEST(BackendOracle, PaddingDoesNotChangeGradients) {
  const std::string dir = Dir("padding");
  const std::string sc = Scenario(dir, {});
  CliRun padded = Train("reference " + sc + " -o " + dir + "/padded");
  ASSERT_EQ(padded.code, 0) << padded.out;
  CliRun packed = Train("reference " + sc + " -o " + dir + "/packed --packed");
  ASSERT_EQ(packed.code, 0) << packed.out;
  const Grads a = ReadGrads(dir + "/padded/grads.ref.bin"), b = ReadGrads(dir + "/packed/grads.ref.bin");
  ASSERT_EQ(a.size(), b.size());
  double norm = 0, worst = 0;
  for (const auto& [k, v] : a) {
    ASSERT_TRUE(b.count(k)) << k;
    ASSERT_EQ(v.size(), b.at(k).size()) << k;
    for (size_t i = 0; i < v.size(); ++i) {
      if (k != "__loss__") norm += static_cast<double>(v[i]) * v[i];
      worst = std::max(worst, std::abs(static_cast<double>(v[i]) - b.at(k)[i]));
    }
  }
  EXPECT_GT(norm, 0);
  EXPECT_LE(worst, 1e-5 * std::sqrt(norm));
}

TEST(BackendFaults, KilledRankEndsTheJobAndKeepsFinishedIterations) {
  const std::string dir = Dir("kill");
  const std::string sc = Scenario(dir, {{"iterations", "4"}, {"backend.timeout_s", "20"}});
  const auto t0 = std::chrono::steady_clock::now();
  CliRun run = Train("launch --nproc 4 " + sc + " -o " + dir + "/real --die-rank 1 --die-iteration 2");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("rank 1 was killed by signal 9"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("measured iteration 2"), std::string::npos) << run.out;
  EXPECT_LT(s, 20 + 5 + 30) << "the job must end within the timeout";
  auto summary = LoadSummary(dir + "/real");
  ASSERT_TRUE(summary.ok()) << run.out;
  EXPECT_EQ(summary->iterations_replayed, 2);  // iterations 0 and 1 finished before the kill
}

TEST(BackendFaults, HungRankEndsTheJobWithinTheTimeout) {
  const std::string dir = Dir("hang");
  const std::string sc =
      Scenario(dir, {{"iterations", "2"}, {"backend.timeout_s", "10"}, {"parallel.dp", "1"}});
  const auto t0 = std::chrono::steady_clock::now();
  CliRun run = Train("launch --nproc 2 " + sc + " -o " + dir +
                     "/real --hang-rank 1 --die-iteration 1 --iterations 2 --no-measure");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("rank 1 was hanging"), std::string::npos) << run.out;
  EXPECT_LT(s, 10 + 5 + 30);
}

// A hang no peer can time out on (one rank, no peers): the launcher's watchdog stops the job when no rank has
// reported progress for 2 x backend.timeout_s + 5 s.
TEST(BackendFaults, LauncherWatchdogStopsAJobWithoutProgress) {
  const std::string dir = Dir("stall");
  const std::string sc = Scenario(
      dir, {{"iterations", "2"}, {"backend.timeout_s", "2"}, {"parallel.dp", "1"}, {"parallel.pp", "1"}});
  const auto t0 = std::chrono::steady_clock::now();
  CliRun run =
      Train("launch --nproc 1 " + sc + " -o " + dir + "/real --hang-rank 0 --die-iteration 1 --iterations 2");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(run.code, 1) << run.out;
  EXPECT_NE(run.out.find("no rank made progress for 9 s"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("rank 0 was hanging"), std::string::npos) << run.out;
  EXPECT_LT(s, 9 + 5 + 30);
  auto summary = LoadSummary(dir + "/real");  // the iteration finished before the hang is kept
  ASSERT_TRUE(summary.ok()) << run.out;
  EXPECT_EQ(summary->iterations_replayed, 1);
}

TEST(BackendErrors, BadScenariosAreRefusedBeforeAnyProcessStarts) {
  const std::string dir = Dir("errors");
  const std::string sc = Scenario(dir, {});
  CliRun r = Train("launch --nproc 3 " + sc + " -o " + dir + "/real");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--nproc: 3 processes, but the scenario's dp * tp * pp = 2 * 1 * 2 = 4"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("launched"), std::string::npos) << r.out;
  const std::string tp = Scenario(dir, {{"parallel.tp", "3"}, {"parallel.dp", "1"}, {"parallel.pp", "1"}});
  r = Train("launch --nproc 3 " + tp + " -o " + dir + "/real");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("parallel.tp: 3 does not divide"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(tp + ":"), std::string::npos) << r.out;  // file:line: field
  EXPECT_FALSE(fs::exists(dir + "/real"));
  r = Train("launch --nproc 4 " + dir + "/missing.yaml -o " + dir + "/real");
  EXPECT_EQ(r.code, 2) << r.out;
  r = Train("launch " + sc);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--nproc"), std::string::npos) << r.out;
}

TEST(BackendRecords, CompareReadsSimulatedAndMeasuredRuns) {
  const std::string dir = Dir("compare");
  const std::string sc = Scenario(dir, {{"iterations", "2"}});
  CliRun real = Train("launch --nproc 4 " + sc + " -o " + dir + "/real");
  ASSERT_EQ(real.code, 0) << real.out;
  CliRun sim = testing::Mmtwin("simulate " + sc + " -o " + dir + "/sim");
  ASSERT_EQ(sim.code, 0) << sim.out;
  CliRun cmp = testing::Mmtwin("compare " + dir + "/sim " + dir + "/real");
  EXPECT_EQ(cmp.code, 0) << cmp.out;
  EXPECT_NE(cmp.out.find("measured"), std::string::npos) << cmp.out;
}

TEST(BackendLinks, PingPongTimesRoundTripsOverMessageSizesAndCalibrateFitsThem) {
  const std::string dir = Dir("pingpong");
  const std::string sc = Scenario(dir, {{"parallel.pp", "1"}, {"parallel.dp", "2"}});
  CliRun run = Train("launch --nproc 2 " + sc + " -o " + dir + "/pp --pingpong --pingpong-reps 4");
  ASSERT_EQ(run.code, 0) << run.out;
  auto text = ReadFile(dir + "/pp/pingpong.csv");
  ASSERT_TRUE(text.ok()) << run.out;
  auto rows = ParsePingPongCsv(*text, "pingpong.csv");
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 8u * 4);  // 4 KiB .. 64 MiB in x4 steps, 4 timed round trips each, one peer
  std::map<int64_t, double> fastest;
  for (const PingPongSample& r : *rows) {
    EXPECT_EQ(r.peer, 1);
    auto [it, fresh] = fastest.emplace(r.bytes, r.round_trip_us);
    if (!fresh) it->second = std::min(it->second, r.round_trip_us);
  }
  ASSERT_EQ(fastest.size(), 8u);
  EXPECT_EQ(fastest.begin()->first, 4096);
  EXPECT_EQ(fastest.rbegin()->first, int64_t{64} << 20);
  // 64 MiB both ways takes longer than 4 KiB both ways on any machine.
  EXPECT_GT(fastest.rbegin()->second, 10 * fastest.begin()->second);
  // No training records in a ping-pong run; its scenario says where it ran.
  EXPECT_FALSE(fs::exists(dir + "/pp/ops.csv"));
  EXPECT_TRUE(LoadScenario(dir + "/pp/scenario.yaml").ok());
  // `mmtwin calibrate --links` fits the link from the round trips (with a training run for the profile).
  CliRun real = Train("launch --nproc 2 " + sc + " -o " + dir + "/real");
  ASSERT_EQ(real.code, 0) << real.out;
  CliRun cal =
      testing::Mmtwin("calibrate " + dir + "/real -o " + dir + "/profile.csv --min-samples 3 --cluster-out " +
                      dir + "/cluster.yaml --links " + dir + "/pp");
  ASSERT_EQ(cal.code, 0) << cal.out;
  EXPECT_NE(cal.out.find("intra-node     32"), std::string::npos) << cal.out;
  auto cluster = LoadCluster(dir + "/cluster.yaml");
  ASSERT_TRUE(cluster.ok()) << cluster.error().message();
  EXPECT_GT(cluster->nvlink_bytes_per_s, 0);
  // --links without --cluster-out is refused.
  CliRun bad = testing::Mmtwin("calibrate " + dir + "/real -o " + dir + "/p2.csv --links " + dir + "/pp");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--links: needs --cluster-out"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace mmtwin

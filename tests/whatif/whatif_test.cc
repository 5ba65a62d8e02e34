// SPDX-License-Identifier: Apache-2.0
// `mmtwin replay` (sim/whatif/whatif.h): a simulated run replays to its own step exactly; the kept measured runs of
// the CPU validation suites replay within 3% of their recorded steps; each what-if undoes what it names on a run
// doctored to have exactly that (a slow device, unequal stages); a measured run predicts another policy's
// measured step; bad timelines are errors naming the file and line.
#include "whatif/whatif.h"
#include "whatif/timeline_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/util/data_dir.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

std::string Source(const std::string& rel) { return std::string(MMTWIN_SOURCE_DIR) + "/" + rel; }

class WhatIfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("whatif_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Simulates `s` (one iteration) into the run folder NAME; returns its step.
  double SimulateInto(Scenario s, const std::string& name, std::vector<OpRecord>* ops = nullptr) {
    s.iterations = 1;
    auto r = Simulate(s, {});
    EXPECT_TRUE(r.ok()) << r.error().message();
    if (!r.ok()) return 0;
    if (ops) *ops = r->ops;
    const Status st =
        RunFolderWriter().AddOps(r->ops).AddScenario(r->resolved_yaml).AddPlan(r->plan).Write(Dir(name));
    EXPECT_TRUE(st.ok()) << st.error().message();
    return r->summary.iteration_time_us.mean;
  }
  std::string Dir(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

Scenario Shipped(const std::string& rel, int64_t samples) {
  auto s = LoadScenario(Source(rel));
  EXPECT_TRUE(s.ok()) << s.error().message();
  Scenario out = s.ok() ? *s : Scenario{};
  if (samples > 0 && !out.trace.preset.empty()) out.trace.samples = samples;
  return out;
}

// Simulated runs replay to their own step, bit for bit up to rounding, across layouts (pipeline, interleaved,
// ZeRO-3 units, SimGrid-free ones) and policies.
TEST_F(WhatIfTest, ASimulatedRunReplaysToItsOwnStep) {
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"scenarios/default.yaml", 4000},
      {"scenarios/llava/llava-1.5-7b-finetune.yaml", 4000},
      {"scenarios/longvila/mmsp-32gpu.yaml", 0},
      {"scenarios/schedules/internvl-6b-20b-zb-h1.yaml", 20000},
  };
  for (const auto& [rel, samples] : cases) {
    SCOPED_TRACE(rel);
    const double step = SimulateInto(Shipped(rel, samples), "run");
    auto r = ReplayRunFolder(Dir("run"), {});
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->iterations.size(), 1u);
    EXPECT_NEAR(r->iterations[0].replayed_us, step, 1e-9 * step);
    EXPECT_NEAR(r->iterations[0].recorded_us, step, 1e-9 * step);
    EXPECT_EQ(r->iterations[0].unmatched, 0);
    fs::remove_all(Dir("run"));
  }
}

// The kept measured runs (mmtwin-train on two CPU cores, reports/validation): each replays within 3% of its
// recorded step, and the replay differs from the record (the records are measured, not the model's).
TEST_F(WhatIfTest, KeptMeasuredRunsReplayWithinThreePercent) {
  int runs = 0;
  for (const char* suite : {"cpu-ws2", "cpu-ws4", "cpu-audio"}) {
    const fs::path root = Source(std::string("reports/validation/") + suite + "/runs");
    for (const auto& e : fs::directory_iterator(root)) {
      if (!fs::exists(e.path() / "ops.csv")) continue;
      SCOPED_TRACE(e.path().string());
      auto r = ReplayRunFolder(e.path().string(), {});
      ASSERT_TRUE(r.ok()) << r.error().message();
      EXPECT_EQ(r->source, RecordSource::kMeasured);
      EXPECT_EQ(r->mean.unmatched, 0);
      EXPECT_NEAR(r->mean.replayed_us / r->mean.recorded_us, 1.0, 0.03);
      ++runs;
    }
  }
  EXPECT_GE(runs, 15);
}

// A device made twice as slow in every compute op: the stragglers what-if gives back the undoctored replay, and
// the replay of the doctored run is slower. DP 4 (a median of four replicas is the typical one).
TEST_F(WhatIfTest, StragglersWhatIfUndoesASlowDevice) {
  Scenario s = Shipped("scenarios/default.yaml", 4000);
  s.parallel.dp = 4;
  s.parallel.tp = 1;
  s.parallel.pp = 4;
  std::vector<OpRecord> ops;
  SimulateInto(s, "run", &ops);
  auto clean = ReplayRunFolder(Dir("run"), {});
  ASSERT_TRUE(clean.ok()) << clean.error().message();
  for (OpRecord& op : ops)
    if (op.device == 5 &&
        (op.kind == OpKind::kForward || op.kind == OpKind::kBackward || op.kind == OpKind::kRecompute))
      op.duration_us *= 2;
  ASSERT_TRUE(RunFolderWriter().AddOps(ops).Write(Dir("run")).ok());
  auto slow = ReplayRunFolder(Dir("run"), {});
  ASSERT_TRUE(slow.ok()) << slow.error().message();
  const ReplayIteration &a = clean->iterations[0], &b = slow->iterations[0];
  EXPECT_GT(b.replayed_us, a.replayed_us * 1.05);
  // The typical op is a median over the replicas, which the doubled device can move a little (0.2% here).
  EXPECT_NEAR(b.stragglers_us, a.stragglers_us, 0.005 * a.replayed_us);
  // Without a slow device the what-if changes the step by data variation across replicas only: within 5%.
  EXPECT_NEAR(a.stragglers_us / a.replayed_us, 1.0, 0.05);
}

// --predict's speed leaves stalls out (whatif.h, ReplayOptions::predict). A simulated DP 4 x PP 4 run doctored to a
// measured-looking one: every compute op 1.2x its model with a spread of +-10% over devices and micro-batches.
// Adding two stalls (a forward 10x, a backward 6x) leaves the prediction where it was and counts them with their
// excess over the key's speed; a pass 1.25x slower, inside the spread's far-out fence, is no stall and moves the
// prediction. (Summing recorded / modelled over every pass, the stalls raise the prediction by about 5%.)
TEST_F(WhatIfTest, StallsAreLeftOutOfThePredictedSpeed) {
  Scenario s = Shipped("scenarios/default.yaml", 4000);
  s.parallel.dp = 4;
  s.parallel.tp = 1;
  s.parallel.pp = 4;
  s.iterations = 1;  // the run's one iteration, predicted
  std::vector<OpRecord> ops;
  SimulateInto(s, "run", &ops);
  ReplayOptions o;
  o.predict = &s;
  auto clean = ReplayRunFolder(Dir("run"), o);
  ASSERT_TRUE(clean.ok()) << clean.error().message();
  // A simulated run's ratios are all 1 (its records are the model's, compute stretched by the collectives it
  // overlaps as Simulate stretches it): no stall, and it predicts itself.
  EXPECT_EQ(clean->stalled_passes, 0);
  EXPECT_GT(clean->speed_passes, 0);
  EXPECT_NEAR(clean->predicted_mean_us, clean->mean.recorded_us, 1e-6 * clean->mean.recorded_us);
  auto compute = [](const OpRecord& op) {
    return op.device >= 0 && (op.kind == OpKind::kForward || op.kind == OpKind::kBackward ||
                              op.kind == OpKind::kRecompute || op.kind == OpKind::kBackwardWeight);
  };
  auto offset = [](const OpRecord& op) { return (op.device * 7 + op.micro_batch * 3) % 5 - 2; };  // -2..2
  for (OpRecord& op : ops)
    if (compute(op)) op.duration_us *= 1.2 * (1 + 0.05 * offset(op));
  auto predict = [&](const std::vector<OpRecord>& records) {
    EXPECT_TRUE(RunFolderWriter().AddOps(records).Write(Dir("run")).ok());
    auto r = ReplayRunFolder(Dir("run"), o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : ReplayReport{};
  };
  const ReplayReport base = predict(ops);
  EXPECT_EQ(base.stalled_passes, 0);
  EXPECT_NEAR(base.predicted_mean_us / clean->predicted_mean_us, 1.2, 0.03);

  // One forward of device 5 and one backward of device 2 (stages 1 and 2), both micro-batch 3; their whole
  // passes stall.
  std::vector<OpRecord> stalled = ops;
  double excess = 0;
  for (OpRecord& op : stalled) {
    if (!compute(op) || op.micro_batch != 3) continue;
    const double factor = op.device == 5 && op.kind == OpKind::kForward    ? 10
                          : op.device == 2 && op.kind == OpKind::kBackward ? 6
                                                                           : 1;
    // The key's speed is about 1.2 (the spread averages out), so the excess is the stalled time above 1.2 x the
    // model: (factor x 1.2 (1 + 0.05 offset) - 1.2) x modelled.
    const double modelled = op.duration_us / (1.2 * (1 + 0.05 * offset(op)));
    excess += (factor * op.duration_us - 1.2 * modelled) * (factor > 1);
    op.duration_us *= factor;
  }
  ASSERT_GT(excess, 0);
  const ReplayReport with_stalls = predict(stalled);
  EXPECT_EQ(with_stalls.stalled_passes, 2);
  EXPECT_EQ(with_stalls.speed_passes, base.speed_passes);
  EXPECT_NEAR(with_stalls.stall_us, excess, 0.02 * excess);
  // The two passes leave the speed of their keys (64 passes each, at 1.32 and 1.26 of the model where the key is
  // at 1.2): the prediction moves by under 0.3%; summed with the stalls it would move by about +5%.
  EXPECT_NEAR(with_stalls.predicted_mean_us, base.predicted_mean_us, 0.003 * base.predicted_mean_us);
  EXPECT_GT(with_stalls.mean.replayed_us, base.mean.replayed_us);  // the replay keeps them: the run paid them
  // The stalls what-if runs the two passes at their keys' speed (1.2 where the spread had them at 1.32 and 1.26):
  // at most the doctored run without stalls, within 0.5% of it; a run without stalls is its own stalls what-if.
  EXPECT_EQ(base.mean.stalls_us, base.mean.replayed_us);
  EXPECT_LE(with_stalls.mean.stalls_us, base.mean.replayed_us * (1 + 1e-9));
  EXPECT_NEAR(with_stalls.mean.stalls_us, base.mean.replayed_us, 0.005 * base.mean.replayed_us);
  EXPECT_LE(with_stalls.mean.ideal_us, with_stalls.mean.stalls_us * (1 + 1e-9));

  // A forward 1.25x slower where the spread put it at 1.2x (offset 0): inside the fence, part of the speed.
  std::vector<OpRecord> slower = ops;
  int changed = 0;
  for (OpRecord& op : slower)
    if (compute(op) && op.kind == OpKind::kForward && offset(op) == 0 && op.device / 4 == 1) {
      op.duration_us *= 1.25;
      ++changed;
    }
  ASSERT_GT(changed, 0);
  const ReplayReport mild = predict(slower);
  EXPECT_EQ(mild.stalled_passes, 0);
  EXPECT_GT(mild.predicted_mean_us, base.predicted_mean_us * 1.0001);
}

// Some ranks profiled: a device without records takes its stage's recorded mean, op by op. Oracle: a run whose
// heavier replica repeats the lighter one's compute exactly replays to the same step as the run with only the
// lighter replica's records; without filling, the heavier replica keeps its modelled durations and the step is
// longer.
TEST_F(WhatIfTest, DevicesWithoutRecordsTakeTheirStagesRecordedMean) {
  Scenario s = Shipped("scenarios/default.yaml", 4000);
  s.parallel.tp = 1;  // DP 2 x PP 4: replica r is devices 4r..4r+3
  std::vector<OpRecord> ops;
  SimulateInto(s, "run", &ops);
  auto compute = [](const OpRecord& op) {
    return op.kind == OpKind::kForward || op.kind == OpKind::kBackward || op.kind == OpKind::kRecompute ||
           op.kind == OpKind::kBackwardWeight;
  };
  double work[2] = {0, 0};
  for (const OpRecord& op : ops)
    if (op.device >= 0 && compute(op)) work[op.device / 4] += op.duration_us;
  const int keep = work[0] <= work[1] ? 0 : 1, drop = 1 - keep;
  // The kept replica's compute records per (kind, stage, micro-batch, chunk, pass), in graph order (a chunk's
  // last backward is several pieces, the same on both replicas); the other's k-th record of a group takes the
  // k-th.
  using Key = std::tuple<int, int, int32_t, int32_t, int>;
  std::map<Key, std::vector<double>> kept;
  std::map<Key, size_t> next;
  auto key = [](const OpRecord& op) {
    return Key{static_cast<int>(op.kind), op.device % 4, op.micro_batch, op.chunk, static_cast<int>(op.pass)};
  };
  for (const OpRecord& op : ops)
    if (op.device >= 0 && op.device / 4 == keep && compute(op)) kept[key(op)].push_back(op.duration_us);
  std::vector<OpRecord> copied, partial;
  for (OpRecord op : ops) {
    if (op.device >= 0 && op.device / 4 == drop && compute(op))
      op.duration_us = kept.at(key(op)).at(next[key(op)]++);
    copied.push_back(op);
    if (op.device < 0 || op.device / 4 == keep) partial.push_back(op);
  }
  ASSERT_TRUE(RunFolderWriter().AddOps(copied).Write(Dir("run")).ok());
  auto full = ReplayRunFolder(Dir("run"), {});
  ASSERT_TRUE(full.ok()) << full.error().message();
  ASSERT_TRUE(RunFolderWriter().AddOps(partial).Write(Dir("run")).ok());
  auto filled = ReplayRunFolder(Dir("run"), {});
  ASSERT_TRUE(filled.ok()) << filled.error().message();
  EXPECT_GT(filled->iterations[0].filled, 0);
  EXPECT_NEAR(filled->iterations[0].replayed_us, full->iterations[0].replayed_us,
              1e-9 * full->iterations[0].replayed_us);
  ReplayOptions off;
  off.fill_unrecorded_devices = false;
  auto modelled = ReplayRunFolder(Dir("run"), off);
  ASSERT_TRUE(modelled.ok()) << modelled.error().message();
  EXPECT_EQ(modelled->iterations[0].filled, 0);
  EXPECT_GT(modelled->iterations[0].replayed_us, full->iterations[0].replayed_us * 1.001);
}

// Equal micro-batches (fixed-length text) on a partition whose stages differ: the data what-if changes nothing;
// the partition what-if equals the closed form of 1F1B with every stage at the mean, (M + P - 1) (F + B) of the
// mean stage, plus the first forward's and the last backward's P - 1 hops and the optimizer step, within 0.1%
// (hops inside the steady state, of ~20 us each, are not in the closed form; the stages' imbalance is 5%).
TEST_F(WhatIfTest, DataAndPartitionWhatIfsOnEqualMicroBatches) {
  Scenario s;
  s.name = "equal";
  s.trace.sequence_tokens = 1024;
  s.trace.samples = 64;
  s.model = "llama-3-8b";
  s.cluster = "h100-8x400g";
  s.parallel.pp = 4;
  s.parallel.micro_batches = 8;
  s.data = {"random", {{"batch_size", "1"}}};
  s.partition = {"uniform", {}};  // 34 layers over 4 stages: the embedding and the head make the ends differ
  std::vector<OpRecord> ops;
  SimulateInto(s, "run", &ops);
  auto r = ReplayRunFolder(Dir("run"), {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const ReplayIteration& it = r->iterations[0];
  EXPECT_NEAR(it.data_us, it.replayed_us, 1e-6 * it.replayed_us);
  // Mean stage forward and backward per micro-batch from the records (no TP, no DP: compute only).
  double f = 0, b = 0;
  for (const OpRecord& op : ops) {
    if (op.micro_batch != 0) continue;
    if (op.kind == OpKind::kForward) f += op.duration_us / 4;
    if (op.kind == OpKind::kBackward) b += op.duration_us / 4;
  }
  double send = 0;  // one activation or gradient hop (the same bytes both ways)
  for (const OpRecord& op : ops)
    if (op.kind == OpKind::kP2pSendActivation) send = op.duration_us;
  const double optimizer = it.replayed_us - [&] {
    double end = 0;
    for (const OpRecord& op : ops) end = std::max(end, op.start_us + op.duration_us);
    return end;
  }();
  // 1F1B with equal stages: the first micro-batch's forward crosses P - 1 hops and its backward P - 1 back.
  const double closed = (8 + 4 - 1) * (f + b) + 2 * (4 - 1) * send + optimizer;
  EXPECT_LT(it.partition_us, it.replayed_us * 0.99);
  EXPECT_NEAR(it.partition_us, closed, 1e-3 * closed);
}

// Acceptance 2 of issue 32 on the kept CPU runs of the audio suite: the random-batch run predicts the post-balance
// run's measured step within 5% (and the other way round), the job's own speed scaling mmtwin's relative costs.
TEST_F(WhatIfTest, AMeasuredRunPredictsAnotherPolicysMeasuredStep) {
  const std::string root = Source("reports/validation/cpu-audio/runs/");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"dp2-b2", "post-balance"}, {"post-balance", "dp2-b2"}, {"dp2-b2", "orchestrator"}}) {
    SCOPED_TRACE(from + " -> " + to);
    auto target = LoadScenario(root + to + "/scenario.yaml");
    ASSERT_TRUE(target.ok()) << target.error().message();
    ReplayOptions o;
    o.predict = &*target;
    auto r = ReplayRunFolder(root + from, o);
    ASSERT_TRUE(r.ok()) << r.error().message();
    auto measured = LoadSummary(root + to);
    ASSERT_TRUE(measured.ok());
    EXPECT_NEAR(r->predicted_mean_us / measured->iteration_time_us.mean, 1.0, 0.05);
  }
}

// Issue 32's acceptance 2 with the exact pair: random batches of 8 per rank (reports/whatif/runs/random-b8) and the
// same job post-balanced (runs/post-balance-b8), measured back to back on the same machine (reports/whatif/README.md).
// The random run stalled in 18 of its 160 compute passes (among them its largest padded micro-batches, up to 4.8x the
// run's median time per token), 35.1 s over its 10 steps; its speed without them predicts the
// balanced step within 1% (with them, +15%). The other way the prediction is 22% fast: nothing in the balanced run
// says the random plan's largest micro-batches will stall. The data what-if (the random run's own padded compute,
// balanced) is no prediction of the packed plan: 1.9x its step. A change to any of these figures shows here.
TEST_F(WhatIfTest, TheRandomAndThePostBalancedRunPredictEachOther) {
  auto balanced_scenario = LoadScenario(Source("scenarios/validation/cpu-audio/post-balance.yaml"));
  auto random_scenario = LoadScenario(Source("reports/whatif/random-b8.yaml"));
  ASSERT_TRUE(balanced_scenario.ok()) << balanced_scenario.error().message();
  ASSERT_TRUE(random_scenario.ok()) << random_scenario.error().message();
  auto balanced = LoadSummary(Source("reports/whatif/runs/post-balance-b8"));
  auto random = LoadSummary(Source("reports/whatif/runs/random-b8"));
  ASSERT_TRUE(balanced.ok());
  ASSERT_TRUE(random.ok());
  ReplayOptions o;
  o.predict = &*balanced_scenario;
  auto from_random = ReplayRunFolder(Source("reports/whatif/runs/random-b8"), o);
  ASSERT_TRUE(from_random.ok()) << from_random.error().message();
  const double balanced_us = balanced->iteration_time_us.mean, random_us = random->iteration_time_us.mean;
  EXPECT_NEAR(from_random->predicted_mean_us / balanced_us, 1.0, 0.01);
  EXPECT_EQ(from_random->stalled_passes, 18);
  EXPECT_EQ(from_random->speed_passes, 160);
  EXPECT_NEAR(from_random->stall_us / 1e6, 35.1, 0.1);
  EXPECT_NEAR(from_random->mean.data_us / balanced_us, 1.89, 0.05);
  o.predict = &*random_scenario;
  auto from_balanced = ReplayRunFolder(Source("reports/whatif/runs/post-balance-b8"), o);
  ASSERT_TRUE(from_balanced.ok()) << from_balanced.error().message();
  EXPECT_NEAR(from_balanced->predicted_mean_us / random_us, 0.78, 0.03);
  EXPECT_EQ(from_balanced->stalled_passes, 0);
  // Both replay their own measured steps within 2%.
  EXPECT_NEAR(from_random->mean.replayed_us / random_us, 1.0, 0.02);
  EXPECT_NEAR(from_balanced->mean.replayed_us / balanced_us, 1.0, 0.02);
}

// The same pair measured twice more on 2026-11-29 (A B A B, after the stall fence was chosen on the pair above):
// neither random run stalled, and each predicts the balanced run measured after it within 5% (+3.7%, +1.7%).
TEST_F(WhatIfTest, FreshRandomRunsPredictTheBalancedStepWithinFivePercent) {
  auto balanced_scenario = LoadScenario(Source("scenarios/validation/cpu-audio/post-balance.yaml"));
  ASSERT_TRUE(balanced_scenario.ok()) << balanced_scenario.error().message();
  ReplayOptions o;
  o.predict = &*balanced_scenario;
  for (const char* k : {"11291", "11292"}) {
    SCOPED_TRACE(k);
    auto r = ReplayRunFolder(Source(std::string("reports/whatif/runs/random-b8-") + k), o);
    ASSERT_TRUE(r.ok()) << r.error().message();
    auto balanced = LoadSummary(Source(std::string("reports/whatif/runs/post-balance-b8-") + k));
    ASSERT_TRUE(balanced.ok());
    EXPECT_EQ(r->stalled_passes, 0);
    EXPECT_NEAR(r->predicted_mean_us / balanced->iteration_time_us.mean, 1.0, 0.05);
  }
}

// A simulated run's trace.json (every replica drawn) imported as a timeline replays to the run's step, as its
// ops.csv does (trace times are rounded to the nanosecond).
TEST_F(WhatIfTest, ATraceJsonImportsAndReplaysToTheRunsStep) {
  Scenario s = Shipped("scenarios/default.yaml", 4000);
  s.iterations = 1;
  SimulateOptions o;
  o.trace_dp_replicas = 0;
  auto r = Simulate(s, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ImportOptions io;
  io.iteration = r->plan.iterations.front().epoch_index;
  auto imported = ImportTimeline(r->trace_json, "trace.json", r->plan.parallel, io);
  ASSERT_TRUE(imported.ok()) << imported.error().message();
  int64_t positive = 0;
  for (const OpRecord& op : r->ops) positive += op.duration_us > 0;
  EXPECT_EQ(static_cast<int64_t>(imported->ops.size()), positive);  // traces leave out zero-length ops
  ASSERT_TRUE(RunFolderWriter()
                  .AddOps(imported->ops)
                  .AddScenario(r->resolved_yaml)
                  .AddPlan(r->plan)
                  .Write(Dir("imported"))
                  .ok());
  auto replay = ReplayRunFolder(Dir("imported"), {});
  ASSERT_TRUE(replay.ok()) << replay.error().message();
  EXPECT_NEAR(replay->iterations[0].replayed_us, r->summary.iteration_time_us.mean,
              1e-6 * r->summary.iteration_time_us.mean);
}

// Framework timer names (Megatron-LM's by default): kinds mapped, micro-batches by order, processes by "rank N";
// user entries win and may end in '*'; ignored timers counted; unknown names, overlaps and devices outside the
// layout are errors naming the event.
TEST_F(WhatIfTest, TimerNamesMapMicroBatchesFollowAndBadEventsAreErrors) {
  ParallelConfig par;
  par.dp = 1;
  par.pp = 2;
  par.micro_batches = 2;
  const std::string ev = R"([
    {"ph": "M", "name": "process_name", "pid": 10, "args": {"name": "rank 0"}},
    {"ph": "M", "name": "process_name", "pid": 11, "args": {"name": "rank 1"}},
    {"ph": "X", "name": "forward-compute", "pid": 10, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "name": "forward-send", "pid": 10, "tid": 2, "ts": 10, "dur": 1},
    {"ph": "X", "name": "forward-compute", "pid": 10, "tid": 1, "ts": 10, "dur": 10},
    {"ph": "X", "name": "forward-backward", "pid": 10, "tid": 3, "ts": 0, "dur": 60},
    {"ph": "X", "name": "my-fwd", "pid": 11, "tid": 1, "ts": 11, "dur": 10},
    {"ph": "X", "name": "backward-compute", "pid": 11, "tid": 1, "ts": 21, "dur": 20, "args": {"micro_batch": 0}}
  ])";
  ImportOptions o;
  o.mapping["my-*"] = "forward";
  auto t = ImportTimeline(ev, "t.json", par, o);
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->ops.size(), 5u);
  EXPECT_EQ(t->ignored.at("forward-backward"), 1);
  std::vector<std::tuple<int, int, int>> got;  // (kind, device, micro-batch)
  for (const OpRecord& op : t->ops) got.push_back({static_cast<int>(op.kind), op.device, op.micro_batch});
  const std::vector<std::tuple<int, int, int>> want = {{static_cast<int>(OpKind::kForward), 0, 0},
                                                       {static_cast<int>(OpKind::kP2pSendActivation), 0, 0},
                                                       {static_cast<int>(OpKind::kForward), 0, 1},
                                                       {static_cast<int>(OpKind::kForward), 1, 0},
                                                       {static_cast<int>(OpKind::kBackward), 1, 0}};
  EXPECT_EQ(got, want);
  for (const OpRecord& op : t->ops) EXPECT_EQ(op.chunk, op.device);  // without args: the device's stage
  auto err = [&](const std::string& text) {
    auto r = ImportTimeline(text, "t.json", par, {});
    return r.ok() ? std::string("ok") : r.error().message();
  };
  EXPECT_NE(err(R"([{"ph": "X", "name": "mystery", "pid": 1, "ts": 0, "dur": 1},
                     {"ph": "X", "name": "mystery", "pid": 1, "ts": 1, "dur": 1}])")
                .find("t.json: event names that map to no op kind: 'mystery' x2"),
            std::string::npos);
  EXPECT_NE(
      err(R"([{"ph": "X", "name": "forward-compute", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
                     {"ph": "X", "name": "backward-compute", "pid": 1, "tid": 1, "ts": 4, "dur": 5}])")
          .find("t.json: event 1 ('backward-compute', pid 1, tid 1): overlaps event 0 ('forward-compute'"),
      std::string::npos)
      << err(R"([{"ph": "X", "name": "forward-compute", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
                   {"ph": "X", "name": "backward-compute", "pid": 1, "tid": 1, "ts": 4, "dur": 5}])");
  EXPECT_NE(
      err(R"([{"ph": "X", "name": "forward-compute", "pid": 9, "ts": 0, "dur": 5}])")
          .find("t.json: event 0 ('forward-compute', pid 9): device 8 is outside the layout's 2 devices"),
      std::string::npos);
  EXPECT_NE(err("{").find("t.json: not valid JSON"), std::string::npos);
  EXPECT_NE(
      err(R"([{"ph": "X", "name": "forward-compute", "pid": 1, "ts": 0, "dur": 5, "args": {"micro_batch": 7}}])")
          .find("args.micro_batch 7 is outside the layout's 2 micro-batches"),
      std::string::npos);
  // Any JSON shape, never a crash: a number where a string belongs reads as absent.
  EXPECT_EQ(
      err(R"([{"ph": 4, "name": 5}, {"ph": "X", "name": "forward-compute", "pid": 1, "ts": 0, "dur": 5}])"),
      "ok");
  std::ofstream(dir_ / "map.yaml") << "forward-compute: forward\nmy-step: sideways\n";
  auto m = LoadTimelineMapping(Dir("map.yaml"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("map.yaml:2: my-step: 'sideways' is not an op kind"), std::string::npos)
      << m.error().message();
}

TEST_F(WhatIfTest, BadTimelinesAreErrorsNamingFileAndLine) {
  Scenario s = Shipped("scenarios/default.yaml", 4000);
  std::vector<OpRecord> ops;
  SimulateInto(s, "run", &ops);
  const std::string ops_path = Dir("run") + "/ops.csv";
  auto message = [&](std::vector<OpRecord> doctored) {
    EXPECT_TRUE(RunFolderWriter().AddOps(doctored).Write(Dir("run")).ok());
    auto r = ReplayRunFolder(Dir("run"), {});
    return r.ok() ? std::string("ok") : r.error().message();
  };
  std::vector<OpRecord> bad = ops;
  bad[3].iteration = 99999;
  EXPECT_NE(message(bad).find(ops_path + ":6: iteration: 99999 is not one of the plan's replayed iterations"),
            std::string::npos)
      << message(bad);
  bad = ops;
  bad[0].device = 99;
  EXPECT_NE(message(bad).find(ops_path + ":3: device: 99 is outside the layout's 8 devices"),
            std::string::npos)
      << message(bad);
  bad = ops;
  bad[1].micro_batch = 40;
  EXPECT_NE(message(bad).find(ops_path + ":4: micro_batch: 40 is outside"), std::string::npos)
      << message(bad);
  // A plan.json from another plan (another partition).
  Scenario other = s;
  other.partition = {"uniform", {}};
  other.iterations = 1;
  auto r = Simulate(other, {});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(RunFolderWriter().AddOps(ops).AddPlan(r->plan).Write(Dir("run")).ok());
  auto replay = ReplayRunFolder(Dir("run"), {});
  ASSERT_FALSE(replay.ok());
  EXPECT_NE(replay.error().message().find("plan.json: the run was recorded under another plan"),
            std::string::npos);
  auto missing = ReplayRunFolder(Dir("none"), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find(Dir("none")), std::string::npos);
}

}  // namespace
}  // namespace mmtwin

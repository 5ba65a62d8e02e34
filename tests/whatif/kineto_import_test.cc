// SPDX-License-Identifier: Apache-2.0
// PyTorch profiler (Kineto) traces as op records (sim/whatif/kineto_import.h): traces written from a simulated
// run, kernels launched inside their ops' annotations, import to the run's records and replay to its step; the
// attribution rules on a hand-made trace (innermost annotation on the launching thread, else on another thread,
// ignore, transparent ranges, activities without a launch); errors name the file, the rank or the unmapped ranges;
// a real two-GPU DDP trace (Holistic Trace Analysis's test data) imports as a brute-force attribution says.
#include "whatif/kineto_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/graph/op_graph.h"
#include "core/plan/mesh.h"
#include "core/records/run_folder.h"
#include "core/util/csv.h"
#include "driver/simulate.h"
#include "whatif/kineto_traces.h"
#include "whatif/timeline_import.h"
#include "whatif/whatif.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using mmtwin::testing::AsFrameworkOps;
using mmtwin::testing::TracesOf;
using nlohmann::json;

std::string Source(const std::string& rel) { return std::string(MMTWIN_SOURCE_DIR) + "/" + rel; }

class KinetoImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kineto_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Dir(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// Traces of every rank of a DP 2 x TP 2 x PP 4 run (the TP peers' traces skipped): the imported records are the
// run's records, and they replay to its step.
TEST_F(KinetoImportTest, ProfilerTracesOfASimulatedRunImportAsItsRecordsAndReplayToItsStep) {
  auto s = LoadScenario(Source("scenarios/default.yaml"));
  ASSERT_TRUE(s.ok()) << s.error().message();
  s->trace.samples = 4000;
  s->iterations = 1;
  // Without recomputation: a recomputed layer's TP collectives would share (micro-batch, pass) with the
  // backward's, which a profiler's ranges cannot tell apart without micro-batch arguments.
  s->recompute = {"none", {}};
  auto r = Simulate(*s, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::vector<OpRecord> framework = AsFrameworkOps(r->ops);
  const std::vector<KinetoTrace> traces = TracesOf(framework, r->plan.parallel);
  ASSERT_EQ(traces.size(), 16u);
  for (const KinetoTrace& t : traces) EXPECT_TRUE(LooksLikeKineto(t.text)) << t.name;
  EXPECT_FALSE(LooksLikeKineto(r->trace_json));  // mmtwin's own timeline is the plain reader's
  ImportOptions o;
  o.mapping["test:*"] = "tp_collective";
  o.step_iterations = {r->plan.iterations.front().epoch_index};
  auto t = ImportKineto(traces, r->plan.parallel, o);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->steps, 1);
  EXPECT_EQ(t->devices_without_trace, 0);
  EXPECT_EQ(t->ignored.at("(tensor-parallel ranks other than the first)"), 8);
  EXPECT_EQ(t->attributed_activities, t->gpu_activities);

  using Key = std::tuple<int64_t, int, int, int, int, int>;  // iteration, kind, device, mb, chunk, pass
  std::map<Key, std::vector<std::pair<double, double>>> want, got;
  auto key = [](const OpRecord& op) {
    const bool pass_matters = op.kind == OpKind::kTpCollective;
    return Key{op.iteration, static_cast<int>(op.kind),
               op.device,    op.micro_batch,
               op.chunk,     pass_matters ? static_cast<int>(op.pass) : 0};
  };
  for (const OpRecord& op : framework) want[key(op)].push_back({op.start_us, op.duration_us});
  for (const OpRecord& op : t->ops) got[key(op)].push_back({op.start_us, op.duration_us});
  for (const auto& [k, v] : got)
    if (!want.count(k))
      ADD_FAILURE() << "imported but not recorded: kind " << std::get<1>(k) << " device " << std::get<2>(k)
                    << " mb " << std::get<3>(k) << " chunk " << std::get<4>(k) << " pass " << std::get<5>(k);
  ASSERT_EQ(got.size(), want.size());
  for (auto& [k, v] : want) {
    auto& g = got[k];
    std::sort(v.begin(), v.end());
    std::sort(g.begin(), g.end());
    ASSERT_EQ(g.size(), v.size()) << "kind " << std::get<1>(k) << " device " << std::get<2>(k);
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_NEAR(g[i].first, v[i].first, 1e-6);
      EXPECT_NEAR(g[i].second, v[i].second, 1e-6);
    }
  }
  ASSERT_TRUE(
      RunFolderWriter().AddOps(t->ops).AddScenario(r->resolved_yaml).AddPlan(r->plan).Write(Dir("run")).ok());
  auto replay = ReplayRunFolder(Dir("run"), {});
  ASSERT_TRUE(replay.ok()) << replay.error().message();
  const double step = r->summary.iteration_time_us.mean;
  EXPECT_NEAR(replay->iterations[0].replayed_us, step, 1e-6 * step);
}

// A hand-made trace of one rank: forward kernels under a transparent module range, a broadcast ignored, the
// backward launched from the autograd thread inside the main thread's "## backward ##" (a shorter range of a third
// thread around the launch does not claim it), the all-reduce under its own range on that thread, zero_grad
// ignored, the optimizer step, and a kernel whose launch is missing.
constexpr const char* kOneRank = R"({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1},
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "pid": 1, "tid": 1, "ts": 1, "dur": 39},
  {"ph": "X", "cat": "user_annotation", "name": "DistributedDataParallel.forward", "pid": 1, "tid": 1, "ts": 2, "dur": 37},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 2.5, "dur": 1},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 3, "dur": 0.1, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 0.1, "args": {"correlation": 2}},
  {"ph": "X", "cat": "user_annotation", "name": "nccl:broadcast", "pid": 1, "tid": 1, "ts": 6, "dur": 1},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 6.5, "dur": 0.1, "args": {"correlation": 3}},
  {"ph": "X", "cat": "user_annotation", "name": "## backward ##", "pid": 1, "tid": 1, "ts": 41, "dur": 49},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 45, "dur": 0.1, "args": {"correlation": 4}},
  {"ph": "X", "cat": "user_annotation", "name": "## optimizer ##", "pid": 1, "tid": 3, "ts": 44.9, "dur": 0.3},
  {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 2, "ts": 50, "dur": 1},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 50.5, "dur": 0.1, "args": {"correlation": 5}},
  {"ph": "X", "cat": "user_annotation", "name": "Optimizer.zero_grad#SGD.zero_grad", "pid": 1, "tid": 1, "ts": 91, "dur": 1},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1, "ts": 91.5, "dur": 0.1, "args": {"correlation": 6}},
  {"ph": "X", "cat": "user_annotation", "name": "## optimizer ##", "pid": 1, "tid": 1, "ts": 92.8, "dur": 7},
  {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, "tid": 1, "ts": 93, "dur": 6},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 99.5, "dur": 0.1, "args": {"correlation": 8}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 94, "dur": 0.1, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 18, "dur": 12, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_Broadcast", "pid": 0, "tid": 20, "ts": 12, "dur": 1, "args": {"correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "gemm_bwd", "pid": 0, "tid": 7, "ts": 50, "dur": 10, "args": {"correlation": 4}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 20, "ts": 61, "dur": 9, "args": {"correlation": 5}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "ts": 92, "dur": 0.5, "args": {"correlation": 6}},
  {"ph": "X", "cat": "kernel", "name": "sgd", "pid": 0, "tid": 7, "ts": 95, "dur": 2, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 98, "dur": 1, "args": {"correlation": 99}},
  {"ph": "X", "cat": "kernel", "name": "clip", "pid": 0, "tid": 7, "ts": 99.6, "dur": 0.4, "args": {"correlation": 8}}
]})";

ParallelConfig OneGpu() {
  ParallelConfig p;
  p.dp = p.tp = p.pp = p.micro_batches = 1;
  return p;
}

TEST_F(KinetoImportTest, KernelsBelongToTheInnermostMappedAnnotationAroundTheirLaunch) {
  ImportOptions o;
  o.step_iterations = {42};
  auto t = ImportKineto({{"r0.json", kOneRank}}, OneGpu(), o);
  ASSERT_TRUE(t.ok()) << t.error().message();
  std::vector<std::tuple<OpKind, double, double, int64_t>> got;  // kind, start, duration, iteration
  for (const OpRecord& op : t->ops) got.push_back({op.kind, op.start_us, op.duration_us, op.iteration});
  const std::vector<std::tuple<OpKind, double, double, int64_t>> want = {
      {OpKind::kForward, 10, 20, 42},      // gemm and relu, the gap between them included
      {OpKind::kBackward, 50, 10, 42},     // launched on the autograd thread inside "## backward ##"
      {OpKind::kDpCollective, 61, 9, 42},  // its own range on that thread, not the backward
      {OpKind::kOptimizer, 95, 5, 42}};    // the step's kernel and one under "## optimizer ##" outside it
  EXPECT_EQ(got, want);
  EXPECT_EQ(t->gpu_activities, 9);
  EXPECT_EQ(t->attributed_activities, 6);
  EXPECT_DOUBLE_EQ(t->gpu_busy_us, 5 + 12 + 1 + 10 + 9 + 0.5 + 2 + 1 + 0.4);
  EXPECT_DOUBLE_EQ(t->op_span_us, 20 + 10 + 9 + 5);
  EXPECT_EQ(t->ignored.at("nccl:broadcast"), 1);
  EXPECT_EQ(t->ignored.at("Optimizer.zero_grad#SGD.zero_grad"), 1);
  EXPECT_EQ(t->ignored.at("(no launch record)"), 1);
  EXPECT_EQ(t->steps, 1);

  // More profiler steps than replayed iterations: an error that says what to set.
  std::string two_steps = kOneRank;
  two_steps.replace(
      two_steps.find("\"traceEvents\": ["), 16,
      R"("traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 200, "dur": 10},)");
  ImportOptions one_iteration;
  one_iteration.step_iterations = {42};
  auto more = ImportKineto({{"r0.json", two_steps}}, OneGpu(), one_iteration);
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.error().message().find("r0.json: 2 profiler steps, and the scenario replays 1 iterations"),
            std::string::npos)
      << more.error().message();

  // Without step_iterations the k-th step is iteration + k.
  o.step_iterations.clear();
  o.iteration = 7;
  auto t2 = ImportKineto({{"r0.json", kOneRank}}, OneGpu(), o);
  ASSERT_TRUE(t2.ok()) << t2.error().message();
  EXPECT_EQ(t2->ops.front().iteration, 7);

  // A user entry wins over the defaults: the broadcast is an op of its own.
  o.mapping["nccl:broadcast"] = "dp_collective";
  auto t3 = ImportKineto({{"r0.json", kOneRank}}, OneGpu(), o);
  ASSERT_TRUE(t3.ok()) << t3.error().message();
  ASSERT_EQ(t3->ops.size(), 5u);
  EXPECT_EQ(t3->ops[1].kind, OpKind::kDpCollective);
  EXPECT_DOUBLE_EQ(t3->ops[1].start_us, 12);
  // The same kernel mapped to the forward overlaps the forward on its track: an error naming both ranges.
  o.mapping["nccl:broadcast"] = "forward";
  auto t4 = ImportKineto({{"r0.json", kOneRank}}, OneGpu(), o);
  ASSERT_FALSE(t4.ok());
  EXPECT_NE(
      t4.error().message().find("('nccl:broadcast @ r0.json event 6', pid 1, tid 0): overlaps event 0 ('## "
                                "forward ## @ r0.json event 1'"),
      std::string::npos)
      << t4.error().message();
}

TEST_F(KinetoImportTest, WorkUnderNoMappedAnnotationIsAnErrorListingTheRanges) {
  std::string text = kOneRank;
  // The optimizer step under ranges of the user's own instead of Optimizer.step# and "## optimizer ##".
  text.replace(text.find("Optimizer.step#SGD.step"), 23, "my_update");
  text.replace(text.find(R"(## optimizer ##", "pid": 1, "tid": 1)"), 15, "outer_block");
  auto t = ImportKineto({{"r0.json", text}}, OneGpu(), {});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("GPU work under no mapped annotation, by the innermost range around its "
                                     "launch: 'my_update' x1 (0.002 ms)"),
            std::string::npos)
      << t.error().message();
  EXPECT_NE(t.error().message().find("'outer_block' x1 (0.000 ms)"), std::string::npos)
      << t.error().message();
  ImportOptions o;
  o.mapping["my_update"] = "optimizer";
  o.mapping["outer_block"] = "ignore";
  auto ok = ImportKineto({{"r0.json", text}}, OneGpu(), o);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->ops.back().kind, OpKind::kOptimizer);
  // Outside every range: "(no annotation)"; ProfilerStep#*=ignore drops it, counted.
  text = kOneRank;
  for (const std::string range : {"Optimizer.step#SGD.step", "## optimizer ##"}) {
    const std::string from = R"("cat": "user_annotation", "name": ")" + range + R"(", "pid": 1, "tid": 1)";
    text.replace(text.find(from), from.size(), R"("cat": "cpu_op", "name": "aten::foo", "pid": 1, "tid": 1)");
  }
  auto bare = ImportKineto({{"r0.json", text}}, OneGpu(), {});
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message().find("'(no annotation)' x2"), std::string::npos) << bare.error().message();
  o.mapping = {{"ProfilerStep#*", "ignore"}};
  auto dropped = ImportKineto({{"r0.json", text}}, OneGpu(), o);
  ASSERT_TRUE(dropped.ok()) << dropped.error().message();
  EXPECT_EQ(dropped->ignored.at("ProfilerStep#3"), 2);
}

TEST_F(KinetoImportTest, ACpuOnlyTraceGivesTheAnnotationsAsOps) {
  const std::string cpu = R"({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "cat": "user_annotation", "name": "## backward ##", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": 25, "dur": 6},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:broadcast", "pid": 1, "tid": 1, "ts": 31, "dur": 1},
    {"ph": "X", "cat": "user_annotation", "name": "## optimizer ##", "pid": 1, "tid": 1, "ts": 33, "dur": 5},
    {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, "tid": 1, "ts": 34, "dur": 3},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})";
  auto t = ImportKineto({{"cpu.json", cpu}}, OneGpu(), {});
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->ops.size(), 4u);
  EXPECT_EQ(t->ops[0].kind, OpKind::kForward);
  EXPECT_EQ(t->ops[1].kind, OpKind::kBackward);
  EXPECT_DOUBLE_EQ(t->ops[1].duration_us, 20);
  EXPECT_EQ(t->ops[2].kind, OpKind::kDpCollective);
  EXPECT_EQ(t->ops[3].kind,
            OpKind::kOptimizer);  // the optimizer step inside "## optimizer ##": one op, the outer
  EXPECT_DOUBLE_EQ(t->ops[3].duration_us, 5);
  EXPECT_EQ(t->ignored.at("gloo:broadcast"), 1);
  EXPECT_EQ(t->gpu_activities, 0);
}

TEST_F(KinetoImportTest, RanksAndFilesAreChecked) {
  ParallelConfig two = OneGpu();
  two.dp = 2;
  auto err = [&](const std::vector<KinetoTrace>& files, const ParallelConfig& p) {
    auto r = ImportKineto(files, p, {});
    return r.ok() ? std::string("ok") : r.error().message();
  };
  const std::string r0 = kOneRank;
  std::string r0_of_two = r0;
  r0_of_two.replace(r0_of_two.find("\"world_size\": 1"), 15, "\"world_size\": 2");
  std::string r1_of_two = r0_of_two;
  r1_of_two.replace(r1_of_two.find("\"rank\": 0"), 9, "\"rank\": 1");
  EXPECT_EQ(err({{"a.json", r0_of_two}, {"b.json", r1_of_two}}, two), "ok");
  EXPECT_NE(
      err({{"a.json", r0}}, two).find("a.json: distributedInfo.world_size 1 is not the scenario's 2 ranks"),
      std::string::npos);
  EXPECT_NE(err({{"a.json", r0_of_two}, {"b.json", r0_of_two}}, two)
                .find("b.json: rank 0 again (a.json is rank 0 too)"),
            std::string::npos);
  EXPECT_NE(err({{"b.json", r1_of_two}}, OneGpu()).find("b.json: distributedInfo.world_size 2"),
            std::string::npos);
  std::string r5 = r0_of_two;
  r5.replace(r5.find("\"rank\": 0"), 9, "\"rank\": 5");
  EXPECT_NE(err({{"c.json", r5}}, two).find("c.json: rank 5 is outside the scenario's 2 ranks"),
            std::string::npos);
  EXPECT_NE(err({{"d.json", "{"}}, two).find("d.json: not valid JSON"), std::string::npos);
  EXPECT_NE(err({{"e.json", R"({"schemaVersion": 1})"}}, two).find("e.json: traceEvents: missing"),
            std::string::npos);
  EXPECT_NE(err({}, two).find("no PyTorch profiler trace given"), std::string::npos);
  // One rank of two: the other device keeps modelled durations, and says so.
  auto half = ImportKineto({{"a.json", r0_of_two}}, two, {});
  ASSERT_TRUE(half.ok()) << half.error().message();
  EXPECT_EQ(half->devices_without_trace, 1);
  // Any JSON shape, never a crash.
  EXPECT_NE(err({{"f.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "x", "dur": 1}]})"}}, two)
                .find("f.json: event 0 (''): ts and dur must be numbers"),
            std::string::npos);
  EXPECT_NE(err({{"g.json", R"({"distributedInfo": {"rank": "zero"}, "traceEvents": []})"}}, two)
                .find("g.json: distributedInfo.rank: expected an integer"),
            std::string::npos);
}

// A .json.gz reads as its text (zlib), the same as the plain file.
TEST_F(KinetoImportTest, GzipCompressedTracesRead) {
  std::ofstream(Dir("t.json")) << kOneRank;
  ASSERT_EQ(std::system(("gzip -k -f " + Dir("t.json")).c_str()), 0);
  auto text = ReadTimelineFile(Dir("t.json.gz"));
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(*text, kOneRank);
  auto plain = ReadTimelineFile(Dir("t.json"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, kOneRank);
  // A truncated archive is an error naming the file, never a partial text.
  auto gz = ReadFile(Dir("t.json.gz"));
  ASSERT_TRUE(gz.ok());
  std::ofstream(Dir("cut.json.gz"), std::ios::binary) << gz->substr(0, gz->size() / 2);
  auto cut = ReadTimelineFile(Dir("cut.json.gz"));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message().find("cut.json.gz: "), std::string::npos) << cut.error().message();
}

// Holistic Trace Analysis's two-GPU DDP test trace (rank 0; tests/whatif/data/README.md): three profiler steps of
// forward, backward with five bucket all-reduces, and the optimizer. The import equals a brute-force attribution
// (every launch against every annotation of its process, the same rule written plainly).
TEST_F(KinetoImportTest, ARealDdpTraceImportsAsABruteForceAttributionSays) {
  const std::string path = Source("tests/whatif/data/hta-ddp-2gpu-rank0.json.gz");
  auto text = ReadTimelineFile(path);
  ASSERT_TRUE(text.ok()) << text.error().message();
  ASSERT_TRUE(LooksLikeKineto(*text));
  ParallelConfig two = OneGpu();
  two.dp = 2;
  auto t = ImportKineto({{path, *text}}, two, {});
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->steps, 3);
  EXPECT_EQ(t->devices_without_trace, 1);
  std::map<std::pair<int64_t, OpKind>, int> count;
  for (const OpRecord& op : t->ops) {
    EXPECT_EQ(op.device, 0);
    ++count[{op.iteration, op.kind}];
  }
  for (int64_t it = 0; it < 3; ++it) {
    EXPECT_EQ((count[{it, OpKind::kForward}]), 1);
    EXPECT_EQ((count[{it, OpKind::kBackward}]), 1);
    EXPECT_EQ((count[{it, OpKind::kDpCollective}]), 5);  // DDP's gradient buckets
    EXPECT_EQ((count[{it, OpKind::kOptimizer}]), 1);
  }
  EXPECT_EQ(t->ignored.at("nccl:broadcast"), 6);  // DDP's buffer broadcasts, two per forward

  // Brute force: each GPU activity's launch by scanning, then the mapped annotations containing the launch,
  // on its own thread first (the shortest), else on the process's other threads (the shortest).
  const json root = json::parse(*text);
  const json& ev = root["traceEvents"];
  const std::map<std::string, std::string> kinds = {{"## forward ##", "forward"},
                                                    {"## backward ##", "backward"},
                                                    {"## optimizer ##", "optimizer"},
                                                    {"nccl:all_reduce", "dp_collective"},
                                                    {"nccl:broadcast", "ignore"}};
  auto kind_of = [&](const std::string& n) -> std::string {
    if (kinds.count(n)) return kinds.at(n);
    if (n.rfind("Optimizer.step#", 0) == 0) return "optimizer";
    if (n.rfind("Optimizer.zero_grad#", 0) == 0) return "ignore";
    return "";
  };
  std::vector<const json*> steps, annotations;
  std::map<int64_t, const json*> launch_of;
  for (const json& e : ev) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", ""), name = e.value("name", "");
    if (name.rfind("ProfilerStep#", 0) == 0) steps.push_back(&e);
    if (cat == "user_annotation" && !kind_of(name).empty()) annotations.push_back(&e);
    if (cat == "cuda_runtime" || cat == "cuda_driver")
      launch_of[e["args"].value("correlation", int64_t{-1})] = &e;
  }
  std::sort(steps.begin(), steps.end(), [](const json* a, const json* b) { return (*a)["ts"] < (*b)["ts"]; });
  std::map<std::tuple<int64_t, std::string, double>, std::pair<double, double>> spans;  // first, last
  for (const json& k : ev) {
    const std::string cat = k.value("cat", "");
    if (k.value("ph", "") != "X" || (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset")) continue;
    ASSERT_TRUE(launch_of.count(k["args"].value("correlation", int64_t{-2})));
    const json* launch = launch_of.at(k["args"].value("correlation", int64_t{-2}));
    const double at = (*launch)["ts"];
    int64_t step = -1;
    for (size_t i = 0; i < steps.size(); ++i)
      if ((*steps[i])["ts"].get<double>() <= at &&
          at <= (*steps[i])["ts"].get<double>() + (*steps[i])["dur"].get<double>())
        step = static_cast<int64_t>(i);
    ASSERT_GE(step, 0);
    const json* owner = nullptr;
    // On the launching thread, else on the training loop's (the thread of the profiler steps).
    for (int pass = 0; pass < 2 && !owner; ++pass)
      for (const json* a : annotations) {
        const json& want_tid = pass == 0 ? (*launch)["tid"] : (*steps.front())["tid"];
        if ((*a)["pid"] != (*launch)["pid"] || (*a)["tid"] != want_tid) continue;
        const double s = (*a)["ts"], d = (*a)["dur"];
        if (s <= at && at <= s + d && (!owner || d < (*owner)["dur"].get<double>())) owner = a;
      }
    ASSERT_NE(owner, nullptr);
    const std::string kind = kind_of((*owner)["name"]);
    if (kind == "ignore") continue;
    auto& sp = spans.try_emplace({step, kind, (*owner)["ts"].get<double>()}, 1e300, -1e300).first->second;
    sp.first = std::min(sp.first, k["ts"].get<double>());
    sp.second = std::max(sp.second, k["ts"].get<double>() + k["dur"].get<double>());
  }
  std::vector<std::tuple<int64_t, std::string, double, double>> want, got;
  for (const auto& [key, sp] : spans)
    want.push_back({std::get<0>(key), std::get<1>(key), sp.first, sp.second - sp.first});
  for (const OpRecord& op : t->ops)
    got.push_back({op.iteration, OpKindName(op.kind), op.start_us, op.duration_us});
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::get<0>(got[i]), std::get<0>(want[i]));
    EXPECT_EQ(std::get<1>(got[i]), std::get<1>(want[i]));
    EXPECT_NEAR(std::get<2>(got[i]), std::get<2>(want[i]), 1e-3);
    EXPECT_NEAR(std::get<3>(got[i]), std::get<3>(want[i]), 1e-3);
  }
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Sweep files, scenario overrides, the results database and the forked runner (with injected run functions,
// so these tests never simulate): expansion counts and order, zip/unknown-key errors with file:line, shards
// partition the runs, merge dedupes, resume redoes only missing runs, crashes are recorded, CSV parses.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "core/util/sanitizers.h"
#include "sweep/results_db.h"
#include "sweep/runner.h"
#include "sweep/sweep.h"

// Under AddressSanitizer a crashing worker must still die by its signal (what the runner records), not by
// ASan's report and exit 1.
#if MMTWIN_ADDRESS_SANITIZER
extern "C" const char* __asan_default_options() { return "handle_segv=0:handle_abort=0:handle_sigbus=0"; }
#endif

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

const char* kBase = R"(name: small
trace: {preset: internvl-1.2m, samples: 2000, seed: 3}
model: internvl-1.5-6b-20b
cluster: a100-4x200g
parallel: {dp: 2, tp: 2, pp: 4, micro_batches: 4, zero_stage: 1}
policies:
  data: isf
  partition: uniform
  recompute: full
  schedule: 1f1b
iterations: 2
seed: 5
)";

std::string Indent(const std::string& text, const std::string& pad) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += pad + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// A sweep with an inline copy of kBase and the given tail (mode, axes, ...).
std::string Sweep(const std::string& tail) { return "name: t\nbase:\n" + Indent(kBase, "  ") + tail; }

Result<SweepSpec> Parse(const std::string& text) { return ParseSweep(text, "t.yaml", "."); }

class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = fs::path(::testing::TempDir()) /
            ("sweep_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

TEST(SweepSpec, CartesianCountIsTheProductAndEveryCombinationOnce) {
  auto spec = Parse(Sweep(R"(mode: cartesian
axes:
  - {key: policies.data, values: [random, isf]}
  - {key: policies.partition, values: [uniform, params, bmp]}
  - {key: parallel.micro_batches, values: [4, 8]}
)"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  EXPECT_EQ(SweepSize(*spec), 12);
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  ASSERT_EQ(runs->size(), 12u);
  std::set<std::string> combos, keys;
  for (size_t i = 0; i < runs->size(); ++i) {
    const SweepRun& r = (*runs)[i];
    EXPECT_EQ(r.index, static_cast<int>(i));
    EXPECT_TRUE(r.error.empty()) << r.error;
    ASSERT_EQ(r.axes.size(), 3u);
    combos.insert(r.axes[0].second + "/" + r.axes[1].second + "/" + r.axes[2].second);
    keys.insert(r.key);
    // The overrides reached the scenario.
    EXPECT_EQ(r.scenario.data.name, r.axes[0].second);
    EXPECT_EQ(r.scenario.partition.name, r.axes[1].second);
    EXPECT_EQ(std::to_string(r.scenario.parallel.micro_batches), r.axes[2].second);
    EXPECT_EQ(r.scenario.name, "small");
  }
  EXPECT_EQ(combos.size(), 12u);
  EXPECT_EQ(keys.size(), 12u);
  // Row-major: the first axis varies slowest, the last fastest.
  EXPECT_EQ((*runs)[0].axes[0].second, "random");
  EXPECT_EQ((*runs)[5].axes[0].second, "random");
  EXPECT_EQ((*runs)[6].axes[0].second, "isf");
  EXPECT_EQ((*runs)[0].axes[2].second, "4");
  EXPECT_EQ((*runs)[1].axes[2].second, "8");
  EXPECT_EQ((*runs)[0].axes[0].first, "data");
  EXPECT_EQ((*runs)[0].axes[2].first, "micro_batches");
}

TEST(SweepSpec, ExpansionIsDeterministic) {
  const std::string text = Sweep("axes:\n  - {key: policies.data, values: [random, isf]}\n");
  auto a = ExpandSweep(*Parse(text));
  auto b = ExpandSweep(*Parse(text));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].key, (*b)[i].key);
    EXPECT_EQ((*a)[i].resolved_yaml, (*b)[i].resolved_yaml);
    EXPECT_EQ((*a)[i].key, RunKey((*a)[i].resolved_yaml));
    EXPECT_EQ((*a)[i].key.size(), 16u);
  }
}

TEST(SweepSpec, ZipPairsValuesAndNeedsEqualLengths) {
  auto spec = Parse(Sweep(R"(mode: zip
axes:
  - {key: policies.data, values: [random, isf, isf]}
  - {key: policies.recompute, values: [full, full, adaptive]}
)"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[2].scenario.data.name, "isf");
  EXPECT_EQ((*runs)[2].scenario.recompute.name, "adaptive");
  EXPECT_EQ((*runs)[0].scenario.recompute.name, "full");

  auto bad = Parse(Sweep(R"(mode: zip
axes:
  - {key: policies.data, values: [random, isf, isf]}
  - {key: policies.recompute, values: [full, adaptive]}
)"));
  ASSERT_FALSE(bad.ok());
  const std::string& m = bad.error().message();
  EXPECT_NE(m.find("t.yaml:18: policies.recompute"), std::string::npos) << m;
  EXPECT_NE(m.find("same number of values"), std::string::npos) << m;
}

TEST(SweepSpec, UnknownKeysAreErrorsWithFileAndLine) {
  auto a = Parse(Sweep("axes:\n  - {key: policies.bogus, values: [1]}\n"));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("t.yaml:16: policies.bogus: unknown key"), std::string::npos)
      << a.error().message();
  EXPECT_NE(a.error().message().find("policies.data"), std::string::npos) << a.error().message();
  auto b = Parse(Sweep("axes:\n  - {key: parallel.dpp, values: [1]}\n"));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("t.yaml:16: parallel.dpp"), std::string::npos) << b.error().message();
  auto c = Parse(Sweep("axis:\n  - {key: parallel.dp, values: [1]}\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("t.yaml:15: axis: unknown key"), std::string::npos)
      << c.error().message();
  auto d = Parse(Sweep("mode: diagonal\n"));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("valid values are: cartesian, zip"), std::string::npos);
  auto e = Parse(Sweep("axes:\n  - {key: parallel.dp, values: []}\n"));
  EXPECT_FALSE(e.ok());
  auto f = Parse("axes: []\n");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("base"), std::string::npos);
}

// Issue 34: axis names 'a-b' and 'a_b' (or 'DP' and 'dp') shared one results-database column, mixing their
// values. Refused at the second axis, naming both and the column.
TEST(SweepSpec, AxisNamesThatShareADatabaseColumnAreRefused) {
  auto a =
      Parse(Sweep("axes:\n  - {key: parallel.dp, name: a-b, values: [1]}\n"
                  "  - {key: parallel.micro_batches, name: a_b, values: [2]}\n"));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find(
                "t.yaml:17: axes: axes 'a-b' and 'a_b' would share the database column axis_a_b"),
            std::string::npos)
      << a.error().message();
  auto b =
      Parse(Sweep("axes:\n  - {key: parallel.dp, name: DP, values: [1]}\n"
                  "  - {key: parallel.micro_batches, name: dp, values: [2]}\n"));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("axes 'DP' and 'dp' would share"), std::string::npos)
      << b.error().message();
  EXPECT_TRUE(Parse(Sweep("axes:\n  - {key: parallel.dp, name: a_b, values: [1]}\n"
                          "  - {key: parallel.micro_batches, name: a_c, values: [2]}\n"))
                  .ok());
}

TEST(SweepSpec, InvalidCombinationsBecomeErrorRunsNotSweepErrors) {
  // tp 16 does not fit an 8-GPU node: that run carries the scenario error, the others are fine.
  auto spec = Parse(Sweep("axes:\n  - {key: parallel.tp, values: [1, 16, 2]}\n"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_TRUE((*runs)[0].error.empty());
  EXPECT_NE((*runs)[1].error.find("parallel.tp"), std::string::npos) << (*runs)[1].error;
  EXPECT_EQ((*runs)[1].error.rfind("t.yaml [run 1: tp=16]: parallel.tp: ", 0), 0u) << (*runs)[1].error;
  EXPECT_TRUE((*runs)[2].error.empty());
  EXPECT_NE((*runs)[1].key, (*runs)[0].key);
  // A parameter the policy does not take is found when the run is expanded (CheckScenario), not when it runs.
  auto params = Parse(Sweep("axes:\n  - {key: policies.partition.params.radius, values: [2]}\n"));
  ASSERT_TRUE(params.ok()) << params.error().message();
  auto bad = ExpandSweep(*params);
  ASSERT_TRUE(bad.ok());
  ASSERT_EQ(bad->size(), 1u);
  EXPECT_NE((*bad)[0].error.find("policies.partition.params: partition policy 'uniform': unknown parameter "
                                 "'radius'"),
            std::string::npos)
      << (*bad)[0].error;
}

TEST(SweepSpec, IterationsLabelsAndNestedKeys) {
  auto spec = Parse(Sweep(R"(iterations: 1
axes:
  - key: policies.data.params.iterations
    name: r
    values: [1, 3]
  - key: policies.recompute
    values: [full, {name: block, params: {num_layers: 4}}]
    labels: [full, block4]
)"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 4u);
  const SweepRun& r = (*runs)[3];
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.scenario.iterations, 1);
  // A bare data policy name became {name: isf, params: {iterations: 3}}.
  EXPECT_EQ(r.scenario.data.name, "isf");
  EXPECT_EQ(r.scenario.data.params.at("iterations"), "3");
  EXPECT_EQ(r.scenario.recompute.name, "block");
  EXPECT_EQ(r.scenario.recompute.params.at("num_layers"), "4");
  EXPECT_EQ(r.axes[0].first, "r");
  EXPECT_EQ(r.axes[1].second, "block4");
  EXPECT_EQ(AxesJson(r.axes), R"({"r":3,"recompute":"block4"})");
}

TEST(SweepSpec, BaseFileRelativeToTheSweepFile) {
  TempDir dir;
  fs::create_directories(dir / "scen");
  fs::create_directories(dir / "sweeps");
  std::ofstream(dir / "scen/base.yaml") << kBase;
  std::ofstream(dir / "sweeps/s.yaml")
      << "base: ../scen/base.yaml\naxes:\n  - {key: cluster, values: [h100-8x400g]}\n";
  auto spec = LoadSweep(dir / "sweeps/s.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  EXPECT_EQ(spec->name, "s");
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_TRUE((*runs)[0].error.empty()) << (*runs)[0].error;
  EXPECT_EQ((*runs)[0].scenario.cluster, "h100-8x400g");
  EXPECT_EQ((*runs)[0].scenario.nodes, 2);  // 16 GPUs on 8-GPU nodes
}

// Issue 8: the same sweep in two checkouts at different paths (shards on different nodes) gives the same run keys,
// though its resolved scenarios name files by absolute path; a different file still gives a different key.
TEST(SweepSpec, RunKeysDoNotDependOnTheCheckoutPath) {
  TempDir dir;
  std::vector<std::string> keys;
  for (const char* root : {"node-a/repo", "node-b/checkout"}) {
    const fs::path r = dir / root;
    fs::create_directories(r / "traces");
    fs::create_directories(r / "sweeps");
    std::ofstream(r / "traces/t.csv")
        << "# mmtwin-trace v1\nsample_id,subset,images,image_tiles,video_frames,"
           "audio_seconds,text_tokens\na,s,1,1,0,0,100\nb,s,1,3,0,0,300\n";
    std::string base = kBase;
    base.replace(base.find("{preset: internvl-1.2m, samples: 2000, seed: 3}"),
                 std::string("{preset: internvl-1.2m, samples: 2000, seed: 3}").size(),
                 "{file: ../traces/t.csv}");
    std::ofstream(r / "sweeps/s.yaml")
        << "base:\n"
        << Indent(base, "  ") << "axes:\n  - {key: parallel.micro_batches, values: [4, 8]}\n";
    auto spec = LoadSweep(r / "sweeps/s.yaml");
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    auto runs = ExpandSweep(*spec);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 2u);
    for (const SweepRun& run : *runs) {
      ASSERT_TRUE(run.error.empty()) << run.error;
      EXPECT_NE(run.resolved_yaml.find(fs::absolute(r / "traces/t.csv").lexically_normal().string()),
                std::string::npos)
          << "the resolved scenario names the file by its absolute path";
      keys.push_back(run.key);
    }
  }
  EXPECT_EQ(keys[0], keys[2]);
  EXPECT_EQ(keys[1], keys[3]);
  EXPECT_NE(keys[0], keys[1]);
  // Another file (path) is another run.
  Scenario s;
  s.trace.file = dir / "node-a/repo/traces/t.csv";
  Scenario t = s;
  t.trace.file = dir / "node-a/repo/traces/u.csv";
  EXPECT_NE(PortableRunKey(s, dir / "node-a/repo/sweeps"), PortableRunKey(t, dir / "node-a/repo/sweeps"));
}

TEST(Override, KeysAreCheckedAndChangeTogether) {
  EXPECT_TRUE(CheckOverrideKey("parallel.pp").ok());
  EXPECT_TRUE(CheckOverrideKey("cluster").ok());
  EXPECT_TRUE(CheckOverrideKey("policies.partition.params.radius").ok());
  EXPECT_TRUE(CheckOverrideKey("policies.partition.params").ok());
  EXPECT_FALSE(CheckOverrideKey("parallel.pp.x").ok());
  EXPECT_FALSE(CheckOverrideKey("seed.x").ok());
  EXPECT_FALSE(CheckOverrideKey("policies..data").ok());
  EXPECT_NE(CheckOverrideKey("trace.size").error().message().find("trace.samples"), std::string::npos);
  // vpp > 1 needs the interleaved schedule: applied together, it validates.
  auto s = ParseScenarioWithOverrides(kBase, "b.yaml", ".",
                                      {{"parallel.vpp", "2"}, {"policies.schedule", "interleaved-1f1b"}});
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->parallel.vpp, 2);
  EXPECT_EQ(s->schedule.name, "interleaved-1f1b");
}

TEST(Override, ApplyOverrideKeepsAnAutomaticNodeCountAutomatic) {
  auto s = ParseScenario(kBase, "b.yaml", ".");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->nodes, 2);  // 16 GPUs on 8-GPU nodes
  ASSERT_TRUE(ApplyOverride(*s, "parallel.dp", "4").ok());
  EXPECT_EQ(s->parallel.dp, 4);
  EXPECT_EQ(s->nodes, 4);
  ASSERT_TRUE(ApplyOverride(*s, "cluster.nodes", "10").ok());
  EXPECT_EQ(s->nodes, 10);
  ASSERT_TRUE(ApplyOverride(*s, "parallel.dp", "2").ok());
  EXPECT_EQ(s->nodes, 10);  // an explicit count stays
  ASSERT_TRUE(ApplyOverride(*s, "policies.data.params.iterations", "3").ok());
  EXPECT_EQ(s->data.name, "isf");
  EXPECT_EQ(s->data.params.at("iterations"), "3");
  Status bad = ApplyOverride(*s, "parallel.tp", "16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("parallel.tp"), std::string::npos) << bad.error().message();
  EXPECT_EQ(s->parallel.tp, 2);  // unchanged on error
  // The model's tile resolution is a key too (a bare `model: NAME` becomes {name, image_px}), so it can be a
  // sweep axis: the model keeps its name.
  const std::string model = s->model;
  ASSERT_TRUE(ApplyOverride(*s, "model.image_px", "336").ok());
  EXPECT_EQ(s->image_px, 336);
  EXPECT_EQ(s->model, model);
  Status px = ApplyOverride(*s, "model.image_px", "0");
  ASSERT_FALSE(px.ok());
  EXPECT_NE(px.error().message().find("model.image_px"), std::string::npos) << px.error().message();
  EXPECT_NE(CheckOverrideKey("model.size").error().message().find("model.image_px"), std::string::npos);
}

TEST(Shards, EveryRunInExactlyOneShard) {
  for (int n = 1; n <= 5; ++n)
    for (int index = 0; index < 23; ++index) {
      int owners = 0;
      for (int i = 0; i < n; ++i) owners += InShard(index, i, n);
      EXPECT_EQ(owners, 1) << index << " " << n;
    }
  int i = 0, n = 0;
  EXPECT_TRUE(ParseShard("2/4", i, n).ok());
  EXPECT_EQ(i, 2);
  EXPECT_EQ(n, 4);
  EXPECT_FALSE(ParseShard("4/4", i, n).ok());
  EXPECT_FALSE(ParseShard("x", i, n).ok());
  EXPECT_FALSE(ParseShard("-1/2", i, n).ok());
}

RunRecord Rec(const std::string& key, int index, const std::string& status, double days) {
  RunRecord r;
  r.run_key = key;
  r.sweep = "t";
  r.run_index = index;
  r.status = status;
  r.axes = {{"data", index % 2 ? "isf" : "random"}, {"pp", std::to_string(index + 1)}};
  if (status == "ok") {
    RunSummary x;
    x.gpu_days = days;
    x.iteration_time_us.p50 = 1000.0 * days;
    r.summary = x;
  } else
    r.error = "boom, \"quoted\"\nsecond line";
  r.session = "s1";
  return r;
}

TEST(ResultsDb, PutRunsMergeAndCsv) {
  TempDir dir;
  auto db = ResultsDb::Open(dir / "a.sqlite");
  ASSERT_TRUE(db.ok()) << db.error().message();
  ASSERT_TRUE((*db)->Put(Rec("k0", 0, "ok", 1.5)).ok());
  ASSERT_TRUE((*db)->Put(Rec("k1", 1, "error", 0)).ok());
  ASSERT_TRUE((*db)->Put(Rec("k2", 2, "ok", 2.5)).ok());
  auto ok = (*db)->OkKeys();
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::set<std::string>{"k0", "k2"}));
  auto rows = (*db)->Runs();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[1].error, "boom, \"quoted\"\nsecond line");
  EXPECT_EQ((*rows)[2].axes,
            (std::vector<std::pair<std::string, std::string>>{{"data", "random"}, {"pp", "3"}}));
  EXPECT_DOUBLE_EQ((*rows)[2].summary->gpu_days, 2.5);

  // Merge: k1 ok replaces the error; k0 error does not replace the ok row; k3 is new.
  auto other = ResultsDb::Open(dir / "b.sqlite");
  ASSERT_TRUE(other.ok());
  for (const RunRecord& r : {Rec("k0", 0, "error", 0), Rec("k1", 1, "ok", 3.0), Rec("k3", 3, "ok", 4.0)}) {
    auto w = (*db)->Merge(r);
    ASSERT_TRUE(w.ok());
  }
  EXPECT_FALSE(*(*db)->Merge(Rec("k2", 2, "ok", 9.0)));  // duplicate ok: kept as it was
  rows = (*db)->Runs();
  ASSERT_EQ(rows->size(), 4u);
  std::map<std::string, RunRecord> by_key;
  for (const auto& r : *rows) by_key[r.run_key] = r;
  EXPECT_EQ(by_key["k0"].status, "ok");
  EXPECT_EQ(by_key["k1"].status, "ok");
  EXPECT_DOUBLE_EQ(by_key["k2"].summary->gpu_days, 2.5);

  auto csv = (*db)->ExportCsv();
  ASSERT_TRUE(csv.ok()) << csv.error().message();
  CsvReader reader = CsvReader::FromString(*csv, "export.csv");
  std::vector<std::string_view> f;
  ASSERT_TRUE(reader.Next(f));
  CsvHeader header(f);
  for (const char* c :
       {"run_key", "status", "axis_data", "axis_pp", "gpu_days", "iteration_time_us_p50", "oom"})
    EXPECT_GE(header.Find(c), 0) << c;
  EXPECT_LT(header.Find("summary_json"), 0);
  int n = 0;
  while (reader.Next(f)) {
    ASSERT_EQ(f.size(), header.names().size());
    ++n;
  }
  EXPECT_TRUE(reader.status().ok()) << reader.status().error().message();
  EXPECT_EQ(n, 4);
}

// The runner with injected run functions (they run in the forked workers).
class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec = Parse(Sweep("axes:\n  - {key: parallel.micro_batches, values: [1, 2, 3, 4, 5, 6]}\n"));
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    spec_ = *spec;
    auto runs = ExpandSweep(spec_);
    ASSERT_TRUE(runs.ok());
    runs_ = *runs;
  }
  static Result<RunSummary> Fake(const Scenario& s) {
    RunSummary x;
    x.gpu_days = 1.0 * s.parallel.micro_batches;
    return x;
  }
  // Rows per session.
  std::map<std::string, int> Sessions(ResultsDb& db) {
    std::map<std::string, int> m;
    auto rows = db.Runs();
    for (const auto& r : *rows) m[r.session]++;
    return m;
  }
  SweepSpec spec_;
  std::vector<SweepRun> runs_;
  TempDir dir_;
};

TEST_F(RunnerTest, RecordsEveryRunAndResumeRedoesNothing) {
  auto db = ResultsDb::Open(dir_ / "r.sqlite");
  ASSERT_TRUE(db.ok());
  SweepRunOptions o;
  o.jobs = 3;
  o.run = Fake;
  o.session = "first";
  int progress_calls = 0;
  o.progress = [&](const SweepProgress& p) {
    ++progress_calls;
    EXPECT_LE(p.done, p.total);
  };
  auto r = RunSweep(spec_, runs_, **db, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->executed, 6);
  EXPECT_EQ(r->errors, 0);
  EXPECT_EQ(progress_calls, 6);
  auto rows = (*db)->Runs();
  ASSERT_EQ(rows->size(), 6u);
  for (const auto& row : *rows) {
    EXPECT_EQ(row.status, "ok");
    EXPECT_DOUBLE_EQ(row.summary->gpu_days, row.run_index + 1.0);
    EXPECT_FALSE(row.scenario_yaml.empty());
  }
  o.session = "second";
  r = RunSweep(spec_, runs_, **db, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->executed, 0);
  EXPECT_EQ(r->skipped, 6);
  EXPECT_EQ(Sessions(**db), (std::map<std::string, int>{{"first", 6}}));
}

// The default run function with the shared preparation: runs that differ only in later steps (here the
// micro-batch count) share one trace and data plan prepared by the parent, and record the same results as
// runs that each prepare their own.
TEST_F(RunnerTest, SharedPreparationGivesTheSameResults) {
  std::map<bool, std::vector<double>> p50;
  for (bool share : {true, false}) {
    auto db = ResultsDb::Open(dir_ / (share ? "shared.sqlite" : "own.sqlite"));
    ASSERT_TRUE(db.ok());
    SweepRunOptions o;
    o.jobs = 2;
    o.share_prepared = share;
    auto r = RunSweep(spec_, runs_, **db, o);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->executed, 6);
    EXPECT_EQ(r->errors, 0);
    EXPECT_EQ(r->prepared, share ? 1 : 0);
    EXPECT_EQ(r->shared_runs, share ? 6 : 0);
    EXPECT_GT(r->run_seconds, 0);
    auto rows = (*db)->Runs();
    ASSERT_EQ(rows->size(), 6u);
    for (const auto& row : *rows) {
      ASSERT_EQ(row.status, "ok") << row.error;
      p50[share].push_back(row.summary->iteration_time_us.p50);
    }
  }
  EXPECT_EQ(p50[true], p50[false]);
}

// Runs `sweep` twice, with the parent's shared preparation and with each run preparing its own (files
// NAME-shared.sqlite, NAME-own.sqlite): every run ok, the shared one prepared `prepared` times and shared with
// every run, and both give the same p50s.
void ExpectSharedEqualsOwn(const TempDir& dir, const std::string& name, const std::string& sweep,
                           int prepared) {
  auto spec = Parse(sweep);
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok());
  const int n = static_cast<int>(runs->size());
  std::map<bool, std::vector<double>> p50;
  for (bool share : {true, false}) {
    auto db = ResultsDb::Open(dir / (name + (share ? "-shared.sqlite" : "-own.sqlite")));
    ASSERT_TRUE(db.ok());
    SweepRunOptions o;
    o.jobs = 2;
    o.share_prepared = share;
    auto r = RunSweep(*spec, *runs, **db, o);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->executed, n);
    EXPECT_EQ(r->prepared, share ? prepared : 0);
    EXPECT_EQ(r->shared_runs, share ? n : 0);
    auto rows = (*db)->Runs();
    ASSERT_EQ(static_cast<int>(rows->size()), n);
    for (const auto& row : *rows) {
      ASSERT_EQ(row.status, "ok") << row.error;
      p50[share].push_back(row.summary->iteration_time_us.p50);
    }
  }
  EXPECT_EQ(p50[true], p50[false]);
}

TEST_F(RunnerTest, RunsSharingOnlyTheTracePrepareItOnceAndLoneRunsPrepareInTheirWorkers) {
  // A seed axis: every run has its own data plan but the same trace. The parent prepares once and the workers
  // plan their own data on the shared trace; the results equal unshared runs.
  ExpectSharedEqualsOwn(dir_, "seed", Sweep("mode: zip\naxes:\n  - {key: seed, values: [1, 2, 3, 4]}\n"), 1);
  // Trace seeds: no two runs share anything, so the parent prepares nothing (each worker prepares its own,
  // in parallel) instead of preparing serially for one run at a time.
  auto lone = Parse(Sweep("mode: zip\naxes:\n  - {key: trace.seed, values: [1, 2, 3]}\n"));
  ASSERT_TRUE(lone.ok()) << lone.error().message();
  auto lone_runs = ExpandSweep(*lone);
  ASSERT_TRUE(lone_runs.ok());
  auto db = ResultsDb::Open(dir_ / "lone.sqlite");
  ASSERT_TRUE(db.ok());
  SweepRunOptions o;
  o.jobs = 2;
  auto r = RunSweep(*lone, *lone_runs, **db, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->executed, 3);
  EXPECT_EQ(r->prepared, 0);
  EXPECT_EQ(r->shared_runs, 0);
}

// Groups of consecutive runs with one data plan each, all on one trace (as `mmtwin tune` orders its
// candidates): the parent prepares each group's data plan once, reusing the trace and tokens of the group
// before, so no worker plans its own; the results equal unshared runs. (Before, a group whose trace matched
// the previous preparation ran its data policy in every worker.)
TEST_F(RunnerTest, EachGroupOfRunsSharingADataPlanIsPreparedOnceOnTheSameTrace) {
  ExpectSharedEqualsOwn(dir_, "groups",
                        Sweep("mode: zip\naxes:\n  - {key: seed, values: [1, 1, 2, 2, 3, 3]}\n"
                              "  - {key: parallel.micro_batches, values: [1, 2, 1, 2, 1, 2]}\n"),
                        3);
}

TEST_F(RunnerTest, StoppedMidwayThenResumedRunsOnlyTheMissingRuns) {
  auto db = ResultsDb::Open(dir_ / "r.sqlite");
  ASSERT_TRUE(db.ok());
  SweepRunOptions o;
  o.jobs = 2;
  o.run = Fake;
  o.session = "first";
  o.stop_after = 2;
  auto r = RunSweep(spec_, runs_, **db, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->stopped);
  EXPECT_EQ(r->executed, 2);
  EXPECT_EQ((*db)->Runs()->size(), 2u);
  // Delete one finished row too: it is redone, the other is not.
  auto rows = (*db)->Runs();
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE((*db)->Delete((*rows)[0].run_key).ok());
  o.session = "second";
  o.stop_after = 0;
  r = RunSweep(spec_, runs_, **db, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->stopped);
  EXPECT_EQ(r->skipped, 1);
  EXPECT_EQ(r->executed, 5);
  EXPECT_EQ(Sessions(**db), (std::map<std::string, int>{{"first", 1}, {"second", 5}}));
  EXPECT_EQ((*db)->OkKeys()->size(), 6u);
}

TEST_F(RunnerTest, CrashesAndErrorsAreRecordedAndTheSweepGoesOn) {
  auto db = ResultsDb::Open(dir_ / "r.sqlite");
  ASSERT_TRUE(db.ok());
  SweepRunOptions o;
  o.jobs = 2;
  o.session = "first";
  o.run = [](const Scenario& s) -> Result<RunSummary> {
    if (s.parallel.micro_batches == 2) ::raise(SIGSEGV);
    if (s.parallel.micro_batches == 4) return Error("no good");
    if (s.parallel.micro_batches == 5) ::_exit(7);
    return Fake(s);
  };
  auto r = RunSweep(spec_, runs_, **db, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->executed, 6);
  EXPECT_EQ(r->errors, 3);
  std::map<int, RunRecord> by_index;
  auto rows = (*db)->Runs();
  ASSERT_TRUE(rows.ok());
  for (const auto& row : *rows) by_index[row.run_index] = row;
  EXPECT_EQ(by_index[1].status, "error");
  EXPECT_NE(by_index[1].error.find("signal " + std::to_string(SIGSEGV)), std::string::npos)
      << by_index[1].error;
  EXPECT_EQ(by_index[3].error, "no good");
  EXPECT_NE(by_index[4].error.find("status 7"), std::string::npos) << by_index[4].error;
  EXPECT_EQ(by_index[5].status, "ok");
  // A re-run retries the errors only.
  o.run = Fake;
  o.session = "second";
  r = RunSweep(spec_, runs_, **db, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->executed, 3);
  EXPECT_EQ(r->skipped, 3);
  EXPECT_EQ((*db)->OkKeys()->size(), 6u);
}

TEST_F(RunnerTest, ShardsTogetherCoverTheSweepOnce) {
  std::multiset<int> seen;
  for (int shard = 0; shard < 4; ++shard) {
    auto db = ResultsDb::Open(dir_ / ("s" + std::to_string(shard) + ".sqlite"));
    ASSERT_TRUE(db.ok());
    SweepRunOptions o;
    o.run = Fake;
    o.shard = shard;
    o.shards = 4;
    auto r = RunSweep(spec_, runs_, **db, o);
    ASSERT_TRUE(r.ok());
    auto rows = (*db)->Runs();
    ASSERT_TRUE(rows.ok());
    for (const auto& row : *rows) {
      EXPECT_EQ(row.run_index % 4, shard);
      seen.insert(row.run_index);
    }
  }
  EXPECT_EQ(seen, (std::multiset<int>{0, 1, 2, 3, 4, 5}));
}

// SweepRunOptions::include runs a sweep in waves (as `mmtwin tune` does): each wave runs only its indices, the
// records keep the sweep's indices, a wave run again redoes nothing, and the waves together run every run once.
// A caller's preparation with the runs' data key is used instead of preparing again.
TEST_F(RunnerTest, WavesRunOnlyTheirIndicesAndACallersPreparationIsUsed) {
  auto db = ResultsDb::Open(dir_ / "w.sqlite");
  ASSERT_TRUE(db.ok());
  SweepRunOptions o;
  o.run = Fake;
  o.jobs = 2;
  std::set<int64_t> wave = {4, 1};
  o.include = [&](int64_t i) { return wave.count(i) > 0; };
  int total = -1;
  o.progress = [&](const SweepProgress& p) { total = p.total; };
  auto r = RunSweep(spec_, runs_, **db, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->executed, 2);
  EXPECT_EQ(r->in_shard, 2);
  EXPECT_EQ(total, 2);
  std::set<int64_t> indices;
  auto first = (*db)->Runs();
  ASSERT_TRUE(first.ok());
  for (const auto& row : *first) indices.insert(row.run_index);
  EXPECT_EQ(indices, (std::set<int64_t>{1, 4}));
  r = RunSweep(spec_, runs_, **db, o);  // the same wave again
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->executed, 0);
  EXPECT_EQ(r->skipped, 2);
  wave = {0, 1, 2, 3, 4, 5};
  r = RunSweep(spec_, runs_, **db, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->executed, 4);
  EXPECT_EQ(r->skipped, 2);
  auto all = (*db)->Runs();
  ASSERT_TRUE(all.ok());
  for (const auto& row : *all) EXPECT_DOUBLE_EQ(row.summary->gpu_days, row.run_index + 1.0);

  // The default run function with a preparation made by the caller: nothing prepared by the runner.
  auto shared = ResultsDb::Open(dir_ / "p.sqlite");
  ASSERT_TRUE(shared.ok());
  auto prepared = PrepareData(runs_[0].scenario);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message();
  SweepRunOptions d;
  d.jobs = 2;
  d.prepared = *prepared;
  auto q = RunSweep(spec_, runs_, **shared, d);
  ASSERT_TRUE(q.ok()) << q.error().message();
  EXPECT_EQ(q->executed, 6);
  EXPECT_EQ(q->errors, 0);
  EXPECT_EQ(q->prepared, 0);
  EXPECT_EQ(q->shared_runs, 6);
}

TEST(LazySweep, ExpandRunIsExpandSweepAtThatIndex) {
  auto spec = Parse(
      Sweep("axes:\n  - {key: parallel.micro_batches, values: [1, 3]}\n"
            "  - {key: parallel.tp, values: [2, 16]}\n  - {key: policies.data, values: [isf, random]}\n"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto all = ExpandSweep(*spec);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 8u);
  for (size_t i = 0; i < all->size(); ++i) {
    const SweepRun r = ExpandRun(*spec, static_cast<int64_t>(i));
    EXPECT_EQ(r.index, (*all)[i].index);
    EXPECT_EQ(r.key, (*all)[i].key);
    EXPECT_EQ(r.axes, (*all)[i].axes);
    EXPECT_EQ(r.error, (*all)[i].error);
    EXPECT_EQ(r.resolved_yaml, (*all)[i].resolved_yaml);
  }
  EXPECT_FALSE((*all)[2].error.empty());  // tp 16 is more than a node: an invalid run, kept
}

TEST(LazySweep, DigestChangesWithWhatDeterminesTheRuns) {
  auto a = Parse(Sweep("axes:\n  - {key: parallel.micro_batches, values: [1, 2]}\n"));
  auto b = Parse(Sweep("axes:\n  - {key: parallel.micro_batches, values: [1, 2]}\n"));
  auto c = Parse(Sweep("axes:\n  - {key: parallel.micro_batches, values: [2, 1]}\n"));
  auto d = Parse(Sweep("iterations: 3\naxes:\n  - {key: parallel.micro_batches, values: [1, 2]}\n"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  EXPECT_EQ(SweepDigest(*a), SweepDigest(*b));
  EXPECT_NE(SweepDigest(*a), SweepDigest(*c));
  EXPECT_NE(SweepDigest(*a), SweepDigest(*d));
}

TEST(LazySweep, AMillionRunSweepStartsWithoutExpandingTheRest) {
  // 100 x 100 x 100 runs: expanding them all first took ~15 minutes and gigabytes. The runner expands a run only
  // when a worker is free: stopped after 2 runs, it has looked at no more than the runs it started.
  std::string values;
  for (int i = 1; i <= 100; ++i) values += (i > 1 ? ", " : "") + std::to_string(i);
  auto spec =
      Parse(Sweep("axes:\n  - {key: seed, values: [" + values + "]}\n  - {key: trace.seed, values: [" +
                  values + "]}\n  - {key: iterations, values: [" + values + "]}\n"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  ASSERT_EQ(SweepSize(*spec), 1000000);
  TempDir dir;
  auto db = ResultsDb::Open(dir / "m.sqlite");
  ASSERT_TRUE(db.ok());
  SweepRunOptions o;
  o.jobs = 1;
  o.stop_after = 2;
  o.run = [](const Scenario&) -> Result<RunSummary> { return RunSummary{}; };
  auto r = RunSweep(*spec, **db, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->executed, 2);
  EXPECT_TRUE(r->stopped);
  EXPECT_LE(r->expanded, 3);  // the two run and at most one look-ahead
  EXPECT_EQ(r->in_shard, 1000000);
  // Resume: the two recorded runs are skipped by index (same digest), the next ones run.
  o.stop_after = 1;
  r = RunSweep(*spec, **db, o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->skipped, 2);
  EXPECT_EQ(r->executed, 1);
  EXPECT_LE(r->expanded, 2);  // the two done runs were not expanded again
  auto rows = (*db)->Runs();
  ASSERT_TRUE(rows.ok());
  std::set<int> indices;
  for (const auto& row : *rows) indices.insert(row.run_index);
  EXPECT_EQ(indices, (std::set<int>{0, 1, 2}));
}

TEST(ShippedSweeps, ParseAndExpandWithoutInvalidRuns) {
  const fs::path dir = fs::path(MMTWIN_SOURCE_DIR) / "scenarios" / "sweeps";
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    auto spec = LoadSweep(e.path().string());
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    auto runs = ExpandSweep(*spec);
    ASSERT_TRUE(runs.ok()) << runs.error().message();
    EXPECT_GE(runs->size(), 2u) << e.path();  // a sweep compares: at least two runs
    std::set<std::string> keys;
    for (const auto& r : *runs) {
      EXPECT_TRUE(r.error.empty()) << e.path() << ": " << r.error;
      keys.insert(r.key);
    }
    EXPECT_EQ(keys.size(), runs->size()) << e.path() << ": two runs resolve to the same scenario";
  }
  EXPECT_EQ(files, 24);  // every file in scenarios/sweeps
}

// omnibal-main (mmtwin-report's Table 2 runs) is the four OmniBal scenario files as one sweep: each run equals its
// file in every field but the name and description.
TEST(ShippedSweeps, OmnibalMainRunsAreTheOmnibalScenarios) {
  const fs::path root = fs::path(MMTWIN_SOURCE_DIR) / "scenarios";
  auto spec = LoadSweep((root / "sweeps" / "omnibal-main.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok()) << runs.error().message();
  const char* const files[] = {"internvl-6b-20b-baseline.yaml", "internvl-6b-20b-omnibal.yaml",
                               "internvl-6b-34b-baseline.yaml", "internvl-6b-34b-omnibal.yaml"};
  ASSERT_EQ(runs->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    auto file = LoadScenario((root / "omnibal" / files[i]).string());
    ASSERT_TRUE(file.ok()) << file.error().message();
    Scenario run = (*runs)[i].scenario;
    ASSERT_TRUE((*runs)[i].error.empty()) << (*runs)[i].error;
    run.name = file->name;
    run.description = file->description;
    EXPECT_TRUE(run == *file) << files[i] << "\nsweep run:\n"
                              << FormatScenario(run) << "\nfile:\n"
                              << FormatScenario(*file);
  }
}

}  // namespace
}  // namespace mmtwin

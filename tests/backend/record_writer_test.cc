// SPDX-License-Identifier: Apache-2.0
// The measured records' writer thread (backend/measure.h, no Torch): every added iteration reaches RUNDIR,
// the folder always holds a complete prefix, write errors come back as values, the destructor flushes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "backend/measure.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "driver/planner.h"

namespace mmtwin::backend {
namespace {

namespace fs = std::filesystem;

std::string TmpDir(const std::string& name) {
  const fs::path d =
      fs::path(::testing::TempDir()) / ("record_writer_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  return d.string();
}

const PlannedRun& SmallRun() {
  static const PlannedRun run = [] {
    auto scenario = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/backend/small.yaml");
    EXPECT_TRUE(scenario.ok()) << scenario.error().message();
    PlanOptions po;
    po.memory_report = true;  // stages.csv needs it, as in mmtwin-train
    auto planned = BuildPlan(*scenario, po);
    EXPECT_TRUE(planned.ok()) << planned.error().message();
    return std::move(*planned);
  }();
  return run;
}

// Iteration k: one forward and one backward per device, the forward of k lasting 1000 + 10 k µs; a layer row
// per device; the iteration's span 2000 + 10 k µs; stage peaks that grow with k.
std::vector<std::string> Fields(const std::string& line) {  // stages.csv has no quoted fields
  std::vector<std::string> out(1);
  for (char c : line)
    if (c == ',')
      out.emplace_back();
    else
      out.back().push_back(c);
  return out;
}

MeasuredIteration Iteration(int k, int devices, int stages) {
  MeasuredIteration it;
  for (int d = 0; d < devices; ++d) {
    OpRecord f;
    f.source = RecordSource::kMeasured;
    f.iteration = k;
    f.kind = OpKind::kForward;
    f.device = d;
    f.micro_batch = 0;
    f.duration_us = 1000 + 10 * k;
    OpRecord b = f;
    b.kind = OpKind::kBackward;
    b.start_us = f.duration_us;
    b.duration_us = 1000;
    it.ops.push_back(f);
    it.ops.push_back(b);
    LayerTiming l;
    l.iteration = k;
    l.device = d;
    l.layer = 0;
    l.tokens = 100 + k;
    l.fwd_us = f.duration_us;
    it.layers.push_back(l);
  }
  it.iteration_us = 2000 + 10 * k;
  for (int s = 0; s < stages; ++s) it.peak_bytes_per_stage.push_back((k + 1) * 1000 + s);
  return it;
}

TEST(RecordWriter, EveryAddedIterationReachesTheRunFolder) {
  const PlannedRun& run = SmallRun();
  const int devices = run.plan.parallel.dp * run.plan.parallel.pp, stages = run.plan.parallel.pp;
  const std::string dir = TmpDir("all");
  constexpr int kIterations = 40;
  std::vector<double> spans;
  {
    RecordWriter w(dir, run, "libtorch-gloo");
    for (int k = 0; k < kIterations; ++k) {
      ASSERT_TRUE(w.Add(Iteration(k, devices, stages)).ok());
      spans.push_back(2000 + 10 * k);
    }
    const Status st = w.Flush();
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(w.iterations(), kIterations);
    EXPECT_GE(w.writes(), 1);
    EXPECT_LE(w.writes(), kIterations);  // iterations that queued up were written together
  }
  auto summary = LoadSummary(dir + "/summary.json");
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->source, RecordSource::kMeasured);
  EXPECT_EQ(summary->iterations_replayed, kIterations);
  const double mean = std::accumulate(spans.begin(), spans.end(), 0.0) / kIterations;
  EXPECT_NEAR(summary->iteration_time_us.mean, mean, 1e-6 * mean);
  EXPECT_DOUBLE_EQ(summary->iteration_time_us.min, spans.front());
  EXPECT_DOUBLE_EQ(summary->iteration_time_us.max, spans.back());
  // Busy = forward + backward of every device over the device time: closed form.
  double busy = 0;
  for (int k = 0; k < kIterations; ++k) busy += devices * (2000.0 + 10 * k);
  EXPECT_NEAR(summary->busy_ratio, busy / (devices * std::accumulate(spans.begin(), spans.end(), 0.0)),
              1e-12);
  // stages.csv: the stage peak is the largest one handed over.
  auto stages_text = ReadFile(dir + "/stages.csv");
  ASSERT_TRUE(stages_text.ok());
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = stages_text->find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(stages_text->substr(at, nl - at));
  ASSERT_EQ(static_cast<int>(lines.size()), 1 + stages);
  const std::vector<std::string> header = Fields(lines[0]);
  const auto col = std::find(header.begin(), header.end(), "peak_memory_bytes") - header.begin();
  ASSERT_LT(col, static_cast<long>(header.size()));
  for (int s = 0; s < stages; ++s)
    EXPECT_EQ(Fields(lines[1 + s]).at(col), std::to_string(kIterations * 1000 + s)) << "stage " << s;

  auto ops_text = ReadFile(dir + "/ops.csv");
  ASSERT_TRUE(ops_text.ok());
  auto ops = ParseOpsCsv(*ops_text, "ops.csv");
  ASSERT_TRUE(ops.ok()) << ops.error().message();
  EXPECT_EQ(static_cast<int>(ops->size()), kIterations * devices * 2);
  auto layers = ReadFile(dir + "/layers.csv");
  ASSERT_TRUE(layers.ok());
  EXPECT_EQ(std::count(layers->begin(), layers->end(), '\n'), 2 + kIterations * devices);  // 2 header lines
  for (const char* f : {"stages.csv", "trace.json", "plan.json", "scenario.yaml"})
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
}

TEST(RecordWriter, TheDestructorFlushes) {
  const PlannedRun& run = SmallRun();
  const std::string dir = TmpDir("destructor");
  {
    RecordWriter w(dir, run, "libtorch-gloo");
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(w.Add(Iteration(k, 1, run.plan.parallel.pp)).ok());
  }
  auto summary = LoadSummary(dir + "/summary.json");
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->iterations_replayed, 3);
}

TEST(RecordWriter, WriteErrorsAreValuesNamingTheFolder) {
  const PlannedRun& run = SmallRun();
  const std::string base = TmpDir("error");
  fs::create_directories(base);
  std::ofstream(base + "/file") << "not a folder\n";
  const std::string dir = base + "/file/run";  // under a regular file: cannot be created
  RecordWriter w(dir, run, "libtorch-gloo");
  ASSERT_TRUE(w.Add(Iteration(0, 1, run.plan.parallel.pp)).ok());  // nothing written yet: no error known
  const Status st = w.Flush();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find(base + "/file"), std::string::npos) << st.error().message();
  EXPECT_EQ(w.iterations(), 0);
  // Later adds report the first error without waiting.
  const Status later = w.Add(Iteration(1, 1, run.plan.parallel.pp));
  EXPECT_FALSE(later.ok());
}

}  // namespace
}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// `mmtwin validate` end to end on a tiny suite, as a user runs it: real mmtwin-train jobs (2 processes over
// Gloo), the fit on the calibration runs only, a report whose figures equal the run records they come from,
// --reuse measures nothing again and reproduces the report, and bad input exits 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_runner.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/util/csv.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using testing::Mmtwin;

std::string Scenario(const std::string& name, const std::string& parallel, const std::string& schedule,
                     int batch) {
  return "name: " + name + "\ndescription: validate_slow_test\n" +
         "trace: {preset: llava-665k, samples: 400, seed: 1}\nmodel: llava-1.5-7b\ncluster: "
         "cpu-2vcpu-gloo\n" +
         "parallel: " + parallel +
         "\npolicies:\n  data: {name: random, params: {batch_size: " + std::to_string(batch) +
         "}}\n  partition: uniform\n  recompute: none\n  schedule: " + schedule +
         "\niterations: 3\nseed: 1\nbackend:\n  width_divisor: 32\n  layers: {vision: 1, llm: 2}\n" +
         "  warmup_iterations: 1\n  timeout_s: 120\n  threads: 1\n";
}

// The row's `predicted` or `measured` value in validation.csv.
double CsvValue(const std::string& csv, const std::string& prefix, int column) {
  size_t at = csv.find("\n" + prefix);
  if (at == std::string::npos) return -1;
  const std::string line = csv.substr(at + 1, csv.find('\n', at + 1) - at - 1);
  std::vector<std::string> f(1);
  for (char c : line)
    if (c == ',')
      f.emplace_back();
    else
      f.back().push_back(c);
  return std::stod(f.at(static_cast<size_t>(column)));
}

TEST(ValidateSlow, MeasuresFitsOnCalibrationOnlyAndReportsTheRecords) {
  const fs::path dir = fs::path(::testing::TempDir()) / "validate_slow";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "cal-pp2.yaml")
      << Scenario("cal-pp2", "{dp: 1, tp: 1, pp: 2, micro_batches: 4}", "1f1b", 2);
  std::ofstream(dir / "cal-dp2.yaml")
      << Scenario("cal-dp2", "{dp: 2, tp: 1, pp: 1, micro_batches: 4}", "1f1b", 1);
  // The held-out scenario reads a trace file: its kept run must cite it by a relative path.
  ASSERT_EQ(
      Mmtwin("trace gen --preset llava-665k --samples 400 --seed 1 -o " + (dir / "t.csv").string()).code, 0);
  std::string gpipe = Scenario("gpipe", "{dp: 1, tp: 1, pp: 2, micro_batches: 4}", "gpipe", 1);
  gpipe.replace(gpipe.find("{preset: llava-665k, samples: 400, seed: 1}"), 43, "{file: t.csv}");
  std::ofstream(dir / "gpipe.yaml") << gpipe;
  std::ofstream(dir / "tiny.suite.yaml")
      << "name: tiny\ndescription: two calibration runs, one held out\n"
         "calibration: [cal-pp2.yaml, cal-dp2.yaml]\nheld_out: [gpipe.yaml]\n";
  const std::string suite = (dir / "tiny.suite.yaml").string(), out = (dir / "report").string(),
                    runs = (dir / "runs").string();
  const std::string args =
      "validate " + suite + " -o " + out + " --runs " + runs + " --train " + MMTWIN_TRAIN;
  auto r = Mmtwin(args);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[3/3] held-out gpipe (2 ranks): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MAPE over 1 held-out scenarios"), std::string::npos) << r.out;
  for (const char* f : {"README.md", "validation.csv", "scatter.svg", "stages.svg", "profile.csv"})
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;

  // Kept runs name no machine's folders: the trace file relative to the run folder, in scenario.yaml and plan.json.
  for (const char* f : {"/gpipe/scenario.yaml", "/gpipe/plan.json"}) {
    const std::string text = *ReadFile(runs + f);
    EXPECT_EQ(text.find(dir.string()), std::string::npos) << f << ":\n" << text;
    EXPECT_NE(text.find("t.csv"), std::string::npos) << f;
  }

  // The fit saw the calibration runs only.
  const std::string profile = *ReadFile(out + "/profile.csv");
  EXPECT_NE(profile.find("# run: " + runs + "/cal-pp2\n"), std::string::npos) << profile;
  EXPECT_NE(profile.find("# run: " + runs + "/cal-dp2\n"), std::string::npos) << profile;
  EXPECT_EQ(profile.find("gpipe"), std::string::npos) << profile;

  // The report's figures are the run records': measured from the backend's summary.json, calibrated from
  // `mmtwin simulate --cost profile.csv` of the same scenario.
  const std::string csv = *ReadFile(out + "/validation.csv");
  auto measured = LoadSummary(runs + "/gpipe");
  ASSERT_TRUE(measured.ok()) << measured.error().message();
  EXPECT_EQ(measured->source, RecordSource::kMeasured);
  const double m = CsvValue(csv, "gpipe,iteration_p50_us,,calibrated,", 4);
  EXPECT_NEAR(m, measured->iteration_time_us.p50, 1e-6 * m);
  auto sim = Mmtwin("simulate " + (dir / "gpipe.yaml").string() + " --cost " + out + "/profile.csv -o " +
                        (dir / "sim").string(),
                    false);
  ASSERT_EQ(sim.code, 0) << sim.out;
  const double p = CsvValue(csv, "gpipe,iteration_p50_us,,calibrated,", 5);
  EXPECT_NEAR(p, LoadSummary((dir / "sim").string())->iteration_time_us.p50, 1e-6 * p);
  const double busy = CsvValue(csv, "gpipe,busy_ratio,1,calibrated,", 4);
  EXPECT_NEAR(busy, measured->stages.at(1).busy_ratio, 1e-8);

  // --reuse: nothing is measured again, the report is the same.
  auto again = Mmtwin(args + " --reuse");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("[3/3] held-out gpipe (2 ranks): reusing " + runs + "/gpipe"), std::string::npos)
      << again.out;
  EXPECT_EQ(*ReadFile(out + "/validation.csv"), csv);

  // A scenario that differs only in how the analytic model prices kernels (model.kernels, model.attention) is the
  // same backend run: reused, its measured figures the kept run's.
  const std::string gpipe_path = (dir / "gpipe.yaml").string();
  const std::string gpipe_text = *ReadFile(gpipe_path);
  const size_t model_at = gpipe_text.find("\nmodel: ");
  ASSERT_NE(model_at, std::string::npos) << gpipe_text;
  const size_t model_end = gpipe_text.find('\n', model_at + 1);
  const std::string model_name = gpipe_text.substr(model_at + 8, model_end - model_at - 8);
  ASSERT_EQ(model_name.find('{'), std::string::npos) << model_name;
  std::ofstream(gpipe_path) << gpipe_text.substr(0, model_at) + "\nmodel: {name: " + model_name +
                                   ", attention: unfused, kernels: eager}" + gpipe_text.substr(model_end);
  auto priced = Mmtwin(args + " --reuse");
  ASSERT_EQ(priced.code, 0) << priced.out;
  EXPECT_NE(priced.out.find("[3/3] held-out gpipe (2 ranks): reusing " + runs + "/gpipe"), std::string::npos)
      << priced.out;
  const std::string priced_csv = *ReadFile(out + "/validation.csv");
  EXPECT_EQ(CsvValue(priced_csv, "gpipe,iteration_p50_us,,calibrated,", 4), m);
  std::ofstream(gpipe_path) << gpipe_text;

  // A kept run whose plan is not the plan this mmtwin builds for its scenario (another mmtwin's data policy,
  // partition...) is measured again, not reused: here its plan.json says another partition.
  const std::string plan_path = runs + "/gpipe/plan.json";
  std::string plan = *ReadFile(plan_path);
  const size_t cuts = plan.find("\"partition\":[");
  ASSERT_NE(cuts, std::string::npos) << plan.substr(0, 400);
  const size_t first = plan.find_first_of("123456789", cuts + 13);  // the first inner cut
  plan[first] = plan[first] == '1' ? '2' : '1';
  std::ofstream(plan_path) << plan;
  auto stale = Mmtwin(args + " --reuse");
  ASSERT_EQ(stale.code, 0) << stale.out;
  EXPECT_NE(
      stale.out.find("[3/3] held-out gpipe (2 ranks): this mmtwin plans the scenario differently from the "
                     "measured run: measuring again"),
      std::string::npos)
      << stale.out;
  EXPECT_NE(*ReadFile(plan_path), plan);  // measured again: its own plan

  // Bad input: exit 2 with the option or file named.
  auto bad_train = Mmtwin("validate " + suite + " -o " + out + " --train " + (dir / "nope").string());
  EXPECT_EQ(bad_train.code, 2);
  EXPECT_NE(bad_train.out.find("--train: " + (dir / "nope").string() + ": not an executable file"),
            std::string::npos)
      << bad_train.out;
  std::ofstream(dir / "bad.suite.yaml")
      << "name: bad\ncalibration: [cal-pp2.yaml]\nheld_out: [cal-pp2.yaml]\n";
  auto bad_suite = Mmtwin("validate " + (dir / "bad.suite.yaml").string() + " -o " + out);
  EXPECT_EQ(bad_suite.code, 2);
  EXPECT_NE(bad_suite.out.find("bad.suite.yaml:3: held_out"), std::string::npos) << bad_suite.out;
}

}  // namespace
}  // namespace mmtwin

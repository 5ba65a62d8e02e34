// SPDX-License-Identifier: Apache-2.0
// Issue 33, item 7: every command that prints results takes --json, and what it prints parses (stdout alone: the
// progress goes to stderr) and holds the same figures as the text output or the files the command wrote.
// (`sweep` and `sweep table`: cli_sweep_test.cc; `simulate`, `plan`, `compare`, `balance`, `trace stats`: their
// own tests.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "calibrate/synthetic_runs.h"  // tests/calibrate
#include "cli/cli_runner.h"
#include "core/util/csv.h"

namespace mmtwin::testing {
namespace {

namespace fs = std::filesystem;

std::string Dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / ("cli_json_" + std::to_string(::getpid())) / name;
  fs::create_directories(d.parent_path());
  return d.string();
}

// stdout only; the JSON must parse by itself.
nlohmann::json Json(const std::string& args, int expect_code = 0) {
  const CliRun r = Shell(std::string(MMTWIN_CLI) + " " + args + " 2>/dev/null");
  EXPECT_EQ(r.code, expect_code) << args << "\n" << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << args << " printed no JSON:\n" << r.out;
  return j;
}

// Lines of the text listing that name an entry ("  NAME ...", two spaces, then not a space).
int ListedLines(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.size() > 2 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ';
  return n;
}

TEST(CliJson, ModelsAndClustersListTheSameEntriesAsTheText) {
  const nlohmann::json models = Json("models --json");
  ASSERT_TRUE(models["models"].is_array());
  EXPECT_EQ(static_cast<int>(models["models"].size()), ListedLines(Mmtwin("models").out));
  for (const auto& m : models["models"]) {
    EXPECT_TRUE(m["params"].is_number_integer()) << m;
    EXPECT_GT(m["params"].get<int64_t>(), 0) << m;
  }
  // The text's "%8.2f B" of one model is its JSON params / 1e9.
  const std::string text = Mmtwin("models").out;
  for (const auto& m : models["models"]) {
    if (m["name"] != "llava-1.5-7b") continue;
    char b[64];
    std::snprintf(b, sizeof b, "%8.2f B", m["params"].get<double>() / 1e9);
    EXPECT_NE(text.find(std::string("llava-1.5-7b") + std::string(28 - 12, ' ') + b), std::string::npos)
        << b << "\n"
        << text;
  }
  const nlohmann::json clusters = Json("clusters --json");
  const std::string ctext = Mmtwin("clusters").out;
  int described = 0;
  for (const auto& c : clusters["clusters"]) {
    EXPECT_TRUE(c["nodes"].is_number_integer());
    EXPECT_GT(c["device"]["memory_bytes"].get<int64_t>(), 0) << c;
    EXPECT_NE(ctext.find(c["name"].get<std::string>()), std::string::npos);
    ++described;
  }
  EXPECT_EQ(
      described * 2, ListedLines(ctext) + [&] {  // each preset: a name line and a description line
        std::istringstream in(ctext);
        std::string line;
        int n = 0;
        while (std::getline(in, line)) n += line.rfind("      ", 0) == 0;
        return n;
      }());
}

TEST(CliJson, PoliciesCarryTheirTypedParameters) {
  const nlohmann::json p = Json("policies --json");
  for (const char* kind :
       {"data", "partition", "recompute", "schedule", "sp", "encoder", "post_balance_algorithms"})
    ASSERT_TRUE(p[kind].is_array() && !p[kind].empty()) << kind;
  // Every policy named in the text appears in the JSON and vice versa (the text lists "  NAME: description").
  const std::string text = Mmtwin("policies").out;
  int json_entries = 0;
  for (const char* kind :
       {"data", "partition", "recompute", "schedule", "sp", "encoder", "post_balance_algorithms"})
    for (const auto& e : p[kind]) {
      EXPECT_NE(text.find("  " + e["name"].get<std::string>() + ": "), std::string::npos) << e["name"];
      ++json_entries;
    }
  EXPECT_EQ(json_entries, ListedLines(text));
  bool saw_int = false;
  for (const auto& e : p["data"])
    for (const auto& param : e["params"])
      if (param["type"] == "int") {
        saw_int = true;
        EXPECT_TRUE(param["min"].is_number()) << param;
        EXPECT_TRUE(param["default"].is_string()) << param;
      }
  EXPECT_TRUE(saw_int);
}

TEST(CliJson, TraceGenAndImportSayWhatTheyWrote) {
  const std::string out = Dir("gen.csv");
  const nlohmann::json g = Json("trace gen --preset llava-665k --samples 37 --seed 4 -o " + out + " --json");
  EXPECT_EQ(g["samples"], 37);
  EXPECT_EQ(g["seed"], 4);
  EXPECT_EQ(g["preset"], "llava-665k");
  EXPECT_EQ(g["output"], out);
  const nlohmann::json stats = Json("trace stats " + out + " --json");
  EXPECT_EQ(stats["samples"], 37);
  const nlohmann::json list = Json("trace gen --list --json");
  EXPECT_GE(list["presets"].size(), 5u);
  for (const auto& e : list["presets"]) EXPECT_GT(e["samples"].get<int64_t>(), 0) << e;

  const std::string llava = Dir("llava.json");
  std::ofstream(llava)
      << R"([{"id": "a", "image": "x.jpg", "conversations": [{"from": "human", "value": "hi <image>"},
                                {"from": "gpt", "value": "hello there"}]},
                              {"id": "b", "conversations": [{"from": "human", "value": "text only"}]}])";
  const nlohmann::json imp =
      Json("trace import --format llava " + llava + " -o " + Dir("imp.csv") + " --json");
  EXPECT_EQ(imp["samples"], 2);
  EXPECT_EQ(imp["format"], "llava");
  EXPECT_EQ(imp["input"], llava);
}

TEST(CliJson, CalibratePrintsTheCoefficientsItWrote) {
  SyntheticRun run{Dir("run")};
  ASSERT_EQ(WriteSyntheticRun(run), "");
  const std::string profile = Dir("profile.csv");
  const nlohmann::json j = Json("calibrate " + run.dir + " -o " + profile + " --json");
  EXPECT_EQ(j["output"], profile);
  EXPECT_EQ(j["runs"].size(), 1u);
  ASSERT_EQ(j["fits"].size(), 6u);  // as the text says: 6 layer types
  // The profile's rows (source,kind,...,fwd_c0_us,fwd_token_us,...) hold the same coefficients.
  auto csv = CsvReader::Open(profile);
  ASSERT_TRUE(csv.ok());
  std::vector<std::string_view> f;
  ASSERT_TRUE(csv->Next(f));
  CsvHeader header(f);
  const int source = header.Find("source"), kind = header.Find("layer_kind"),
            fwd_token = header.Find("fwd_token_us");
  ASSERT_GE(source, 0);
  ASSERT_GE(kind, 0);
  ASSERT_GE(fwd_token, 0);
  std::map<std::string, double> profile_token_us;
  while (csv->Next(f))
    profile_token_us[std::string(f[source]) + "," + std::string(f[kind])] =
        std::stod(std::string(f[fwd_token]));
  int matched = 0;
  for (const auto& fit : j["fits"]) {
    const std::string type = fit["type"];
    if (!profile_token_us.count(type)) continue;
    const double json_value = fit["passes"]["fwd"]["coefficients"]["token_us"];
    EXPECT_NEAR(json_value, profile_token_us[type], 1e-6 * std::max(1.0, std::fabs(json_value))) << type;
    EXPECT_GT(fit["passes"]["fwd"]["samples"].get<int64_t>(), 0);
    ++matched;
  }
  EXPECT_GE(matched, 1);
}

TEST(CliJson, ValidateAPublishedSuiteHoldsTheRowsOfItsCsv) {
  const std::string scenario = Dir("small.yaml");
  std::ofstream(scenario) << "name: small\n"
                             "trace: {preset: llava-665k, samples: 256, seed: 1}\n"
                             "model: llava-1.5-7b\n"
                             "cluster: {preset: a100-4x200g, nodes: 1}\n"
                             "parallel: {dp: 2, tp: 2, pp: 2, micro_batches: 4}\n"
                             "policies: {data: {name: random, params: {batch_size: 2}}}\n"
                             "iterations: 2\nseed: 1\n";
  const std::string suite = Dir("pub.suite.yaml");
  std::ofstream(suite)
      << "name: pub\nentries:\n"
         "  - {name: c0, split: calibration, source: \"synthetic, row 0\", scenario: small.yaml, "
         "metric: iteration_time_s, measured: 1.5}\n"
         "  - {name: h0, split: held_out, source: \"synthetic, row 1\", scenario: small.yaml, "
         "override: {parallel.micro_batches: 8}, metric: iteration_time_s, measured: 2.5}\n"
         "  - {name: h1, split: held_out, source: \"synthetic, row 2\", scenario: small.yaml, "
         "metric: fits, measured: true}\n";
  const std::string out = Dir("pub-report");
  const nlohmann::json j = Json("validate " + suite + " -o " + out + " --json");
  ASSERT_EQ(j["entries"].size(), 3u);
  auto csv = CsvReader::Open(out + "/validation.csv");
  ASSERT_TRUE(csv.ok());
  std::vector<std::string_view> f;
  ASSERT_TRUE(csv->Next(f));
  CsvHeader header(f);
  std::map<std::string, std::pair<std::string, double>> rows;  // name -> split, predicted
  while (csv->Next(f))
    rows[std::string(f[header.Find("name")])] = {std::string(f[header.Find("split")]),
                                                 std::stod(std::string(f[header.Find("predicted")]))};
  double abs_error_sum = 0;
  int held_out_time = 0;
  for (const auto& e : j["entries"]) {
    const std::string name = e["name"];
    ASSERT_TRUE(rows.count(name)) << name;
    EXPECT_EQ(e["split"], rows[name].first);
    EXPECT_NEAR(e["predicted"].get<double>(), rows[name].second, 1e-5 * std::fabs(rows[name].second)) << name;
    if (e["split"] == "held_out" && e["metric"] == "iteration_time_s") {
      abs_error_sum += std::fabs(e["error"].get<double>());
      ++held_out_time;
    }
  }
  ASSERT_EQ(held_out_time, 1);
  EXPECT_DOUBLE_EQ(j["held_out_mape_fitted"].get<double>(), abs_error_sum / held_out_time);
  EXPECT_EQ(j["fits_statements"], 1);
}

}  // namespace
}  // namespace mmtwin::testing

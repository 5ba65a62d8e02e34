// SPDX-License-Identifier: Apache-2.0
// The one strict YAML reader (core/util/yaml_error.h LoadStrictYaml): a key given twice in any mapping is an
// error naming file:line, the key's path and the first occurrence, in every kind of file mmtwin reads: model
// specs, cluster presets, scenarios and sweeps (yaml-cpp alone keeps one of the two silently). And its one
// unknown-key check (CheckKeys), which every reader uses: the key's line and path and the valid keys.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "calibrate/validate.h"
#include "core/cluster/cluster.h"
#include "core/model/model.h"
#include "core/scenario/scenario.h"
#include "core/util/yaml_error.h"
#include "sweep/sweep.h"

namespace mmtwin {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ExpectError(const Status& st, const std::string& want) {
  ASSERT_FALSE(st.ok()) << "expected: " << want;
  EXPECT_NE(st.error().message().find(want), std::string::npos) << st.error().message();
}

TEST(StrictYamlTest, ClusterDuplicateKey) {
  const std::string text = Slurp(std::string(MMTWIN_SOURCE_DIR) + "/traces/clusters/a100-4x200g.yaml");
  ASSERT_TRUE(ParseCluster(text, "c.yaml").ok());
  ExpectError(ParseCluster(text + "gpus_per_node: 4\n", "c.yaml").status(),
              "gpus_per_node: duplicate key (first at line");
}

TEST(StrictYamlTest, ModelDuplicateKeyNested) {
  const std::string text = Slurp(std::string(MMTWIN_SOURCE_DIR) + "/traces/models/qwen2-1.5b.yaml");
  ASSERT_TRUE(ParseModel(text, "m.yaml", ".").ok()) << ParseModel(text, "m.yaml", ".").error().message();
  // A second `name:` at the top level.
  ExpectError(ParseModel(text + "name: other\n", "m.yaml", ".").status(), "m.yaml:");
  ExpectError(ParseModel(text + "name: other\n", "m.yaml", ".").status(),
              ": name: duplicate key (first at line");
  // Nested: a mapping inside a sequence.
  const std::string nested = "name: x\ncomponents:\n  - {name: a, name: b}\n";
  ExpectError(ParseModel(nested, "n.yaml", ".").status(), "n.yaml:3: components[0].name: duplicate key");
}

TEST(StrictYamlTest, ScenarioDuplicateKey) {
  const std::string text =
      "model: qwen2-1.5b\ntrace: {preset: internvl-1.2m, samples: 100}\nseed: 1\nseed: 2\n";
  ExpectError(ParseScenario(text, "s.yaml", ".").status(), "s.yaml:4: seed: duplicate key (first at line 3)");
  const std::string inner = "model: qwen2-1.5b\ntrace: {preset: internvl-1.2m, preset: lcs-558k}\n";
  ExpectError(ParseScenario(inner, "s.yaml", ".").status(), "s.yaml:2: trace.preset: duplicate key");
  // Also when overrides rewrite the text (a sweep's axes).
  ExpectError(ParseScenarioWithOverrides(text, "s.yaml", ".", {{"parallel.dp", "2"}}).status(),
              "s.yaml:4: seed: duplicate key");
}

TEST(StrictYamlTest, SweepDuplicateKey) {
  const std::string text =
      "name: sw\nbase: {model: qwen2-1.5b, trace: {preset: internvl-1.2m, samples: 100}}\n"
      "axes:\n  parallel.dp: [1, 2]\n  parallel.dp: [4]\n";
  ExpectError(ParseSweep(text, "sw.yaml", ".").status(),
              "sw.yaml:5: axes.parallel.dp: duplicate key (first at line 4)");
}

TEST(StrictYamlTest, CheckKeysNamesTheUnknownKeyAndTheValidOnes) {
  auto root = LoadStrictYaml("a: 1\nb:\n  c: 2\n  bogus: 3\n[x]: 4\n", "k.yaml");
  ASSERT_TRUE(root.ok()) << root.error().message();
  EXPECT_TRUE(CheckKeys((*root)["b"], "k.yaml", "b", {"c", "bogus"}).ok());
  const Status unknown = CheckKeys((*root)["b"], "k.yaml", "b", {"c", "d"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message(), "k.yaml:4: b.bogus: unknown key; valid keys are: c, d");
  // At the root the key is its own path.
  const Status top = CheckKeys(*root, "k.yaml", "", {"a"});
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.error().message(), "k.yaml:2: b: unknown key; valid keys are: a");
  const Status scalar = CheckKeys((*root)["a"], "k.yaml", "a", {"x", "y"});
  ASSERT_FALSE(scalar.ok());
  EXPECT_EQ(scalar.error().message(), "k.yaml:1: a: expected a mapping with keys x, y");
  const Status odd = CheckKeys(*root, "k.yaml", "", {"a", "b"});
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().message(), "k.yaml:5: keys must be plain names");
}

// Every reader's unknown key is CheckKeys' message: the same words, the key's line and path, the valid keys.
TEST(StrictYamlTest, EveryReaderNamesUnknownKeysWithTheValidList) {
  const std::string cluster = Slurp(std::string(MMTWIN_SOURCE_DIR) + "/traces/clusters/a100-4x200g.yaml");
  const long cluster_lines = std::count(cluster.begin(), cluster.end(), '\n');
  ExpectError(
      ParseCluster(cluster + "gpus: 8\n", "c.yaml").status(),
      "c.yaml:" + std::to_string(cluster_lines + 1) +
          ": gpus: unknown key; valid keys are: name, description, reference, nodes, gpus_per_node, "
          "device, nvlink_bytes_per_s, nvlink_latency_us, nics_per_node, nic_bytes_per_s, nic_latency_us");
  ExpectError(
      ParseModel("name: m\ncomponents:\n  - {name: llm, kind: llm, colour: red}\n", "m.yaml", ".").status(),
      "m.yaml:3: components[0].colour: unknown key; valid keys are: name, use, ");
  ExpectError(
      ParseScenario("trace: {preset: internvl-1.2m}\nmodel: qwen2-1.5b\nbackend: {cores: 2}\n", "s.yaml", ".")
          .status(),
      "s.yaml:3: backend.cores: unknown key; valid keys are: width_divisor, layers, warmup_iterations, "
      "timeout_s, threads");
  ExpectError(
      ParseSweep("name: sw\nbase: {model: qwen2-1.5b, trace: {preset: internvl-1.2m}}\nmodes: grid\n",
                 "sw.yaml", ".")
          .status(),
      "sw.yaml:3: modes: unknown key; valid keys are: name, description, base, mode, axes, iterations");
  const std::filesystem::path suite = std::filesystem::path(::testing::TempDir()) / "keys.suite.yaml";
  std::ofstream(suite) << "name: k\ncalibration: [a.yaml]\nheld_out: [b.yaml]\nscored: 1\n";
  ExpectError(LoadValidationSuite(suite.string()).status(),
              suite.string() +
                  ":4: scored: unknown key; valid keys are: name, description, notes, machine, calibration, held_out");
}

// Aliases are refused by every reader before any walk of the tree (issue 34): `&a [*a]` is a cycle that crashed
// the duplicate-key walk (exit 139), and nested aliases ("billion laughs") grew exponentially. Each text below is
// refused naming the file and the alias's line; the calls return, so a regression crashes or hangs this test.
TEST(StrictYamlTest, EveryReaderRefusesAliasesWithTheirLine) {
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    laughs += std::string(1, c) + ": &" + std::string(1, c) + " [*" + std::string(1, c - 1) + ", *" +
              std::string(1, c - 1) + ", *" + std::string(1, c - 1) + ", *" + std::string(1, c - 1) + "]\n";
  const std::string cycle = "&a [*a]\n", map_cycle = "name: x\nfoo: &a {b: *a}\n";
  ExpectError(LoadStrictYaml(cycle, "c.yaml").status(), "c.yaml:1: aliases (*name) are not supported");
  ExpectError(LoadStrictYaml(laughs, "l.yaml").status(), "l.yaml:2: aliases (*name) are not supported");
  ExpectError(LoadStrictYaml(map_cycle, "m.yaml").status(), "m.yaml:2: aliases");
  ExpectError(ParseCluster(cycle, "c.yaml").status(), "c.yaml:1: aliases");
  ExpectError(ParseModel(map_cycle, "m.yaml", ".").status(), "m.yaml:2: aliases");
  ExpectError(ParseScenario(laughs, "s.yaml", ".").status(), "s.yaml:2: aliases");
  ExpectError(ParseScenarioWithOverrides(cycle, "s.yaml", ".", {{"parallel.dp", "2"}}).status(),
              "s.yaml:1: aliases");
  ExpectError(ParseSweep(laughs, "sw.yaml", ".").status(), "sw.yaml:2: aliases");
  // An override value (a sweep axis value or --set) is refused too, naming its key.
  const std::string ok = "trace: {preset: internvl-1.2m}\nmodel: qwen2-1.5b\n";
  ASSERT_TRUE(ParseScenario(ok, "s.yaml", ".").ok());
  ExpectError(ParseScenarioWithOverrides(ok, "s.yaml", ".", {{"parallel", "&p {dp: *p}"}}).status(),
              "parallel:1: aliases");
  // A cluster preset file with an alias, loaded with device overrides (rewritten before it is parsed).
  const std::filesystem::path preset = std::filesystem::path(::testing::TempDir()) / "alias-preset.yaml";
  std::ofstream(preset) << map_cycle;
  ExpectError(LoadCluster(preset.string(), 0, {{"peak_flops", 1e15}}).status(),
              "alias-preset.yaml:2: aliases");
  ExpectError(LoadCluster(preset.string()).status(), "alias-preset.yaml:2: aliases");
  const std::filesystem::path suite = std::filesystem::path(::testing::TempDir()) / "alias.suite.yaml";
  std::ofstream(suite) << laughs;
  ExpectError(LoadValidationSuite(suite.string()).status(), "alias.suite.yaml:2: aliases");
  // Malformed streams on which yaml-cpp's parser hands out documents without end (found by cluster_fuzz with the
  // alias seeds): the scan reads the first document only, as YAML::Load does, and returns.
  const std::string endless("&a ,*&\xc7 [*aa]\n#");
  EXPECT_TRUE(LoadStrictYaml(endless, "h.yaml").ok());  // its first document has no alias event
  ExpectError(ParseScenario(endless, "h.yaml", ".").status(), "h.yaml:1: a scenario is a mapping");
  // Anchors without aliases and a '*' inside plain text stay valid.
  EXPECT_TRUE(LoadStrictYaml("a: &x 1\nb: '*not an alias*'\nc: 2 * 3\n", "ok.yaml").ok());
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The one strict YAML reader (core/util/yaml_error.h LoadStrictYaml): a key given twice in any mapping is an
// error naming file:line, the key's path and the first occurrence, in every kind of file mmtwin reads: model
// specs, cluster presets, scenarios and sweeps (yaml-cpp alone keeps one of the two silently).
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/cluster/cluster.h"
#include "core/model/model.h"
#include "core/scenario/scenario.h"
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

}  // namespace
}  // namespace mmtwin

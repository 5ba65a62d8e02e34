// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: scenario overrides (the sweep axes' and `--set` path). The input is `key=value`: the dotted
// key and its YAML value are applied to a fixed scenario with ParseScenarioWithOverrides, which must return a
// scenario or an Error (naming something); an accepted scenario must round-trip through FormatScenario.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/scenario/scenario.h"

namespace {
constexpr const char* kBase = R"(name: fuzz-base
trace: {preset: internvl-1.2m, samples: 64, seed: 1}
model: internvl-1.5-6b-20b
cluster: {preset: a100-4x200g, nodes: 2}
parallel: {dp: 2, tp: 2, pp: 2, vpp: 1, micro_batches: 4, zero_stage: 1}
policies: {data: isf, partition: bmp, recompute: adaptive, schedule: 1f1b}
iterations: 2
seed: 1
)";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<mmtwin::ScenarioOverride> overrides;
  size_t start = 0;
  while (start <= text.size() && overrides.size() < 4) {  // one override per line, at most four
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) overrides.push_back({line.substr(0, eq), line.substr(eq + 1)});
    start = end + 1;
  }
  if (overrides.empty()) return 0;
  mmtwin::Result<mmtwin::Scenario> s =
      mmtwin::ParseScenarioWithOverrides(kBase, "fuzz.yaml", "/nonexistent-fuzz-dir", overrides);
  if (!s.ok()) {
    if (s.error().message().empty()) __builtin_trap();
    return 0;
  }
  const std::string yaml = mmtwin::FormatScenario(*s);
  mmtwin::Result<mmtwin::Scenario> again = mmtwin::ParseScenario(yaml, "again.yaml", "/");
  if (!again.ok() || !(*again == *s)) __builtin_trap();
  return 0;
}

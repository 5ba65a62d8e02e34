// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the sweep parser (ParseSweep, YAML) must return a spec or an Error for any input, and the
// expansion of an accepted sweep must agree with SweepSize: runs numbered 0..n-1, each either valid (its resolved
// scenario parses back to itself) or carrying a non-empty error. Large sweeps are sized, not expanded.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sweep/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mmtwin::Result<mmtwin::SweepSpec> spec = mmtwin::ParseSweep(text, "fuzz.yaml", "/nonexistent-fuzz-dir");
  if (!spec.ok()) {
    if (spec.error().message().empty()) __builtin_trap();
    return 0;
  }
  const int64_t n = mmtwin::SweepSize(*spec);
  if (n < 0) __builtin_trap();
  if (n > 16) return 0;  // expansion cost grows with n; the parser is what is fuzzed
  mmtwin::Result<std::vector<mmtwin::SweepRun>> runs = mmtwin::ExpandSweep(*spec);
  if (!runs.ok()) __builtin_trap();  // only sweeps over kMaxSweepRuns may fail to expand
  if (static_cast<int64_t>(runs->size()) != n) __builtin_trap();
  for (size_t i = 0; i < runs->size(); ++i) {
    const mmtwin::SweepRun& r = (*runs)[i];
    if (r.index != static_cast<int>(i) || r.key.empty()) __builtin_trap();
    if (!r.error.empty()) continue;
    mmtwin::Result<mmtwin::Scenario> again = mmtwin::ParseScenario(r.resolved_yaml, "again.yaml", "/");
    if (!again.ok() || !(*again == r.scenario)) __builtin_trap();
  }
  return 0;
}

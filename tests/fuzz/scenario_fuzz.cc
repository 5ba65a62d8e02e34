// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the scenario parser (ParseScenario, YAML) must return a scenario or an Error for any
// input (yaml-cpp exceptions must not escape), and every scenario it accepts must round-trip: parsing
// FormatScenario(s) gives s back, and formatting that gives the same text. Parsing and checking apart agree
// with ParseScenario: ReadScenario refuses what it refuses with the same message, or CheckScenario on what
// ReadScenario read gives ParseScenario's verdict and message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/scenario/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mmtwin::Result<mmtwin::Scenario> s = mmtwin::ParseScenario(text, "fuzz.yaml", "/nonexistent-fuzz-dir");
  mmtwin::Result<mmtwin::Scenario> read = mmtwin::ReadScenario(text, "fuzz.yaml", "/nonexistent-fuzz-dir");
  const mmtwin::Status checked = read.ok() ? mmtwin::CheckScenario(*read) : read.status();
  if (checked.ok() != s.ok() || (!s.ok() && checked.error().message() != s.error().message())) std::abort();
  if (!s.ok()) return 0;
  const std::string yaml = mmtwin::FormatScenario(*s);
  mmtwin::Result<mmtwin::Scenario> again = mmtwin::ParseScenario(yaml, "fuzz.yaml", "/");
  if (!again.ok() || !(*again == *s) || mmtwin::FormatScenario(*again) != yaml) std::abort();
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// consumer SCENARIO [ENGINE]: simulates the scenario through the installed libraries' public driver (driver/simulate.h) and
// prints its run summary as `mmtwin simulate --json` does (core/records/records_codec.h). Exit 2 on an error,
// with the library's message.
#include <cstdio>

#include "core/records/records_codec.h"
#include "core/scenario/scenario.h"
#include "driver/simulate.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: consumer SCENARIO [ENGINE]\n");
    return 2;
  }
  auto scenario = mmtwin::LoadScenario(argv[1]);
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n", scenario.error().message().c_str());
    return 2;
  }
  if (argc == 3)
    scenario->engine = argv[2];  // as `mmtwin simulate --engine` (its options' defaults otherwise)
  auto result = mmtwin::Simulate(*scenario, mmtwin::SimulateOptions());
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.error().message().c_str());
    return 2;
  }
  std::printf("%s\n", mmtwin::SummaryToJson(result->summary).c_str());
  return 0;
}

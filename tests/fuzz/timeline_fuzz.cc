// SPDX-License-Identifier: Apache-2.0
// libFuzzer target (issue 32 / 34): the timeline importers (sim/whatif/timeline_import.h, and the same bytes as one
// rank's PyTorch profiler trace, kineto_import.h) must accept or refuse any bytes with a message, never crash; an
// accepted timeline's records stay inside the layout (DP 2 x PP 2, 4 micro-batches): devices 0..3, micro-batches
// -1..3, chunks 0..1, durations finite and >= 0.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "whatif/kineto_import.h"
#include "whatif/timeline_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mmtwin::ParallelConfig par;
  par.dp = 2;
  par.pp = 2;
  par.micro_batches = 4;
  mmtwin::ImportOptions options;
  options.mapping["custom*"] = "forward";
  for (int kineto = 0; kineto < 2; ++kineto) {
    mmtwin::Result<mmtwin::ImportedTimeline> t =
        kineto ? mmtwin::ImportKineto({{"fuzz.json", text}}, par, options)
               : mmtwin::ImportTimeline(text, "fuzz.json", par, options);
    if (!t.ok()) {
      if (t.error().message().empty()) __builtin_trap();
      continue;
    }
    for (const mmtwin::OpRecord& r : t->ops)
      if (r.device < 0 || r.device >= 4 || r.micro_batch < -1 || r.micro_batch >= 4 || r.chunk < 0 ||
          r.chunk >= 2 || !(r.duration_us >= 0) || !std::isfinite(r.start_us) || r.iteration < 0)
        __builtin_trap();
  }
  return 0;
}

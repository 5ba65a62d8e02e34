// SPDX-License-Identifier: Apache-2.0
// libFuzzer target (issue 34, item 10): the two measured-timing inputs of calibration and simulation must accept
// or refuse any bytes with a message, never crash. The first byte picks the parser: even, a cost-coefficient
// table (CoefficientCostModel::Parse; an accepted table must survive Format -> Parse unchanged and hold no
// negative or all-zero row); odd, a per-layer timings file (ParseLayerTimingsCsv; every accepted row within the
// bounds the parser promises).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cost/cost_model.h"
#include "core/records/layer_timings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    mmtwin::Result<mmtwin::CoefficientCostModel> t = mmtwin::CoefficientCostModel::Parse(
        text, "fuzz.csv", mmtwin::AnalyticCostModel(mmtwin::DeviceSpec{}));
    if (!t.ok()) {
      if (t.error().message().empty()) __builtin_trap();
      return 0;
    }
    const std::string formatted = t->Format();
    mmtwin::Result<mmtwin::CoefficientCostModel> again = mmtwin::CoefficientCostModel::Parse(
        formatted, "again.csv", mmtwin::AnalyticCostModel(mmtwin::DeviceSpec{}));
    if (!again.ok() || again->Format() != formatted) __builtin_trap();
    return 0;
  }
  mmtwin::Result<std::vector<mmtwin::LayerTiming>> rows = mmtwin::ParseLayerTimingsCsv(text, "layers.csv");
  if (!rows.ok()) {
    if (rows.error().message().empty()) __builtin_trap();
    return 0;
  }
  for (const mmtwin::LayerTiming& r : *rows)
    if (!(r.fwd_us >= 0 && r.fwd_us <= 1e12) || !(r.bwd_us >= 0 && r.bwd_us <= 1e12) ||
        !(r.recompute_us >= 0 && r.recompute_us <= 1e12) ||
        !(r.attention_pairs >= 0 && r.attention_pairs <= 1e19) || r.tokens < 0 || r.act_bytes < 0)
      __builtin_trap();
  return 0;
}

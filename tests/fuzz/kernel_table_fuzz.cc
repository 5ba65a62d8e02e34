// SPDX-License-Identifier: Apache-2.0
// libFuzzer target (issue 34, item 10): a GPU's kernel table (sim/calibrate/kernels.h, `mmtwin kernels`) must be
// accepted or refused with a message, never crash. An accepted table holds finite, non-negative numbers and
// positive times; every priced row's predicted time on a device with curves is finite and positive; on small
// tables the fit returns parameters inside their bounds.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibrate/kernels.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mmtwin::Result<mmtwin::KernelTable> t = mmtwin::ParseKernelTable(text, "fuzz.csv");
  if (!t.ok()) {
    if (t.error().message().empty()) __builtin_trap();
    return 0;
  }
  if (t->rows.empty()) __builtin_trap();
  mmtwin::DeviceSpec d;  // the H200 preset's curves (traces/clusters/h200-8x400g.yaml), written out
  d.peak_flops = 989e12, d.hbm_bytes_per_s = 4.8e12, d.kernel_overhead_us = 5.4;
  d.gemm_peak_fraction = 0.65, d.gemm_half_dim = 57, d.attn_fwd_peak_fraction = 0.5;
  d.attn_bwd_peak_fraction = 0.38, d.attn_half_span = 300, d.attn_half_head_dim = 29, d.hbm_peak_fraction = 0.83;
  int priced = 0;
  for (const mmtwin::KernelRow& r : t->rows) {
    for (double x : {r.m, r.n, r.k, r.batch, r.heads, r.span, r.head_dim, r.work})
      if (!(std::isfinite(x) && x >= 0)) __builtin_trap();
    if (!(std::isfinite(r.median_us) && r.median_us > 0)) __builtin_trap();
    if (!r.priced()) continue;
    ++priced;
    const double us = mmtwin::PredictKernelUs(d, r);
    if (!(us > 0) || std::isnan(us)) __builtin_trap();
  }
  if (priced > 0 && priced <= 6) {
    mmtwin::Result<mmtwin::DeviceSpec> f = mmtwin::FitKernelCurves(d, *t);
    if (f.ok()) {
      for (const mmtwin::KernelFitParam& p : mmtwin::KernelFitBounds()) {
        const double v = (*f).*p.field;
        if (!(v >= p.lo && v <= p.hi)) __builtin_trap();
      }
    } else if (f.error().message().empty()) {
      __builtin_trap();
    }
  }
  return 0;
}

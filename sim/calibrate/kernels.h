// SPDX-License-Identifier: Apache-2.0
// A GPU's measured kernel table (backend/gpu/kernel_sweep.py) against the compute curves of the analytic cost
// model (core/cost/cost_model.h: AnalyticCostModel::GemmUs, AttentionFwdUs / AttentionBwdUs, MemoryUs, each plus
// DeviceSpec::kernel_overhead_us, the fixed time of one kernel), and the curve parameters fitted to it.
//
// The table is CSV with '#' comment lines (the machine, the date, the commit); columns family, dtype, m, n, k,
// batch, heads, span, head_dim, causal, pass, work, median_us (others are ignored). Families:
//   gemm    m, n, k: one (m x k).(k x n) GEMM (pass fwd, linear_fwd, linear_dgrad, linear_wgrad: the layout);
//   attn    batch sequences of `span` positions, `heads` heads of head_dim, causal 0/1, pass fwd or bwd;
//   stream  `work` bytes read and written by a memory-bound kernel (pass copy, add, gelu, layernorm).
// Only bf16 rows are priced (the presets' peak_flops is the bf16 tensor-core peak); other dtypes are kept and
// counted as not priced.
//
// Split (calibration / held-out): within each group (family, and pass for attn and stream), rows in file order
// alternate, the first calibration, so that both halves span every shape range the sweep covers. The fit sees
// the calibration rows only; held-out errors are predictions.
//
// Fit: the eight curve parameters (gemm_peak_fraction, gemm_half_dim, attn_fwd_peak_fraction,
// attn_bwd_peak_fraction, attn_half_span, attn_half_head_dim, hbm_peak_fraction, kernel_overhead_us) minimise
// the sum of squared log errors (log predicted / measured) over the calibration rows: Levenberg-Marquardt with
// a forward-difference Jacobian from the preset's values, each step clamped into fixed bounds (KernelFitBounds);
// deterministic. peak_flops and hbm_bytes_per_s stay the preset's (datasheet figures).
#pragma once

#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/status.h"

namespace mmtwin {

enum class KernelFamily { kGemm, kAttention, kStream };
enum class KernelSplit { kCalibration, kHeldOut };

struct KernelRow {
  KernelFamily family = KernelFamily::kGemm;
  std::string dtype, pass;
  double m = 0, n = 0, k = 0;             // gemm
  double batch = 0, heads = 0, span = 0;  // attn
  double head_dim = 0;
  bool causal = false;
  double work = 0;       // FLOPs (gemm, attn) or bytes (stream), as the sweep counted them
  double median_us = 0;  // measured
  long line = 0;         // in the table file
  KernelSplit split = KernelSplit::kCalibration;
  bool priced() const { return dtype == "bf16"; }
  // "gemm", "attn/fwd", "stream/copy": the group the split alternates within and the report tabulates.
  std::string group() const;
};

struct KernelTable {
  std::string path;
  std::vector<std::string> comments;  // the '#' lines, without '#'
  std::vector<KernelRow> rows;        // split assigned
};

// Reads and checks a table: an unreadable file, a missing column, a bad number, an unknown family or pass, or a
// non-positive time is an error naming `file:line: field`.
Result<KernelTable> ReadKernelTable(const std::string& path);
Result<KernelTable> ParseKernelTable(const std::string& text, const std::string& name);

// The curve model's time for one row on `device` (which must have a compute curve), microseconds.
double PredictKernelUs(const DeviceSpec& device, const KernelRow& row);

struct KernelFitParam {
  const char* name;  // the DeviceSpec field, as a cluster YAML spells it under device:
  double DeviceSpec::*field;
  double lo, hi;  // the search bounds
};
// The eight fitted parameters and their bounds.
const std::vector<KernelFitParam>& KernelFitBounds();

// `device` with the eight parameters fitted on the table's calibration rows (see above). Error: the device has
// no compute curve, or the table has no priced calibration row.
Result<DeviceSpec> FitKernelCurves(const DeviceSpec& device, const KernelTable& table);

// Errors per group and split: mean absolute percentage error, the worst, and the signed mean.
struct KernelErrorStats {
  std::string group;
  KernelSplit split = KernelSplit::kCalibration;
  int rows = 0;
  double mape = 0, worst = 0, mean = 0;  // fractions (0.1 = 10%)
};
std::vector<KernelErrorStats> KernelErrors(const DeviceSpec& device, const KernelTable& table);
// Over every priced row of one split.
KernelErrorStats KernelErrorsOverall(const DeviceSpec& device, const KernelTable& table, KernelSplit split);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "calibrate/kernels.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include <Eigen/Dense>

#include "core/cost/cost_model.h"
#include "core/util/csv.h"

namespace mmtwin {
namespace {

const char* FamilyName(KernelFamily f) {
  switch (f) {
    case KernelFamily::kGemm:
      return "gemm";
    case KernelFamily::kAttention:
      return "attn";
    case KernelFamily::kStream:
      return "stream";
  }
  return "?";
}

bool KnownPass(KernelFamily f, std::string_view p) {
  switch (f) {
    case KernelFamily::kGemm:
      return p == "fwd" || p == "linear_fwd" || p == "linear_dgrad" || p == "linear_wgrad";
    case KernelFamily::kAttention:
      return p == "fwd" || p == "bwd";
    case KernelFamily::kStream:
      return p == "copy" || p == "add" || p == "gelu" || p == "layernorm";
  }
  return false;
}

}  // namespace

std::string KernelRow::group() const {
  std::string g = FamilyName(family);
  if (family != KernelFamily::kGemm) g += "/" + pass;
  return g;
}

Result<KernelTable> ParseKernelTable(const std::string& text, const std::string& name) {
  CsvReader csv = CsvReader::FromString(text, name);
  std::vector<std::string_view> f;
  if (!csv.Next(f)) {
    if (!csv.status().ok()) return csv.status().error();
    return Error(name + ": no header (a kernel table from backend/gpu/kernel_sweep.py)");
  }
  const CsvHeader header(f);
  MMTWIN_RETURN_IF_ERROR(header.CheckUnique(csv));
  static const std::vector<std::string> kRequired = {"family", "dtype", "m",        "n",        "k",
                                                     "batch",  "heads", "span",     "head_dim", "causal",
                                                     "pass",   "work",  "median_us"};
  std::map<std::string, int> col;
  for (const std::string& c : kRequired) {
    col[c] = header.Find(c);
    if (col[c] < 0) return csv.ErrorAt(c, "missing column (kernel table: " + name + ")");
  }
  KernelTable table;
  table.path = name;
  std::map<std::string, int> seen;  // rows per group so far: the split alternates within a group
  while (csv.Next(f)) {
    if (f.size() < header.names().size()) return csv.ErrorAt("row", "fewer fields than the header");
    auto field = [&](const char* c) { return f[static_cast<size_t>(col[c])]; };
    auto number = [&](const char* c, double& out, bool required) -> Status {
      const std::string_view s = field(c);
      if (s.empty()) {
        if (required) return csv.ErrorAt(c, "empty (needed for this family)");
        out = 0;
        return Status();
      }
      if (!ParseDouble(s, out) || !std::isfinite(out) || out < 0)
        return csv.ErrorAt(c, "'" + std::string(s) + "' is not a non-negative number");
      return Status();
    };
    KernelRow r;
    r.line = csv.line();
    const std::string_view fam = field("family");
    if (fam == "gemm") {
      r.family = KernelFamily::kGemm;
    } else if (fam == "attn") {
      r.family = KernelFamily::kAttention;
    } else if (fam == "stream") {
      r.family = KernelFamily::kStream;
    } else {
      return csv.ErrorAt("family", "'" + std::string(fam) + "' is not one of gemm, attn, stream");
    }
    r.dtype = std::string(field("dtype"));
    r.pass = std::string(field("pass"));
    if (!KnownPass(r.family, r.pass))
      return csv.ErrorAt("pass", "'" + r.pass + "' is not a pass of " + FamilyName(r.family));
    const bool gemm = r.family == KernelFamily::kGemm, attn = r.family == KernelFamily::kAttention;
    MMTWIN_RETURN_IF_ERROR(number("m", r.m, gemm));
    MMTWIN_RETURN_IF_ERROR(number("n", r.n, gemm));
    MMTWIN_RETURN_IF_ERROR(number("k", r.k, gemm));
    MMTWIN_RETURN_IF_ERROR(number("batch", r.batch, attn));
    MMTWIN_RETURN_IF_ERROR(number("heads", r.heads, attn));
    MMTWIN_RETURN_IF_ERROR(number("span", r.span, attn));
    MMTWIN_RETURN_IF_ERROR(number("head_dim", r.head_dim, attn));
    MMTWIN_RETURN_IF_ERROR(number("work", r.work, true));
    MMTWIN_RETURN_IF_ERROR(number("median_us", r.median_us, true));
    if (!(r.median_us > 0)) return csv.ErrorAt("median_us", "must be positive");
    if (attn) {
      const std::string_view c = field("causal");
      if (c != "0" && c != "1") return csv.ErrorAt("causal", "'" + std::string(c) + "' is not 0 or 1");
      r.causal = c == "1";
    }
    if (gemm && !(r.m > 0 && r.n > 0 && r.k > 0)) return csv.ErrorAt("m", "m, n and k must be positive");
    if (attn && !(r.batch > 0 && r.heads > 0 && r.span > 0 && r.head_dim > 0))
      return csv.ErrorAt("span", "batch, heads, span and head_dim must be positive");
    if (r.family == KernelFamily::kStream && !(r.work > 0)) return csv.ErrorAt("work", "must be positive");
    if (r.priced()) {
      const int i = seen[r.group()]++;
      r.split = i % 2 == 0 ? KernelSplit::kCalibration : KernelSplit::kHeldOut;
    }
    table.rows.push_back(std::move(r));
  }
  if (!csv.status().ok()) return csv.status().error();
  table.comments = csv.comments();
  if (table.rows.empty()) return Error(name + ": no kernel rows");
  return table;
}

Result<KernelTable> ReadKernelTable(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseKernelTable(text, path);
}

double PredictKernelUs(const DeviceSpec& device, const KernelRow& r) {
  const AnalyticCostModel model(device);
  double us = 0;
  switch (r.family) {
    case KernelFamily::kGemm:
      us = model.GemmUs(r.m, r.n, r.k);
      break;
    case KernelFamily::kAttention: {
      const double pairs = r.batch * r.span * r.span, span_sum = r.batch * r.span;
      us = r.pass == "fwd" ? model.AttentionFwdUs(r.heads, r.head_dim, pairs, span_sum, r.causal)
                           : model.AttentionBwdUs(r.heads, r.head_dim, pairs, span_sum, r.causal);
      break;
    }
    case KernelFamily::kStream:
      us = model.MemoryUs(r.work);
      break;
  }
  return us + device.kernel_overhead_us;
}

const std::vector<KernelFitParam>& KernelFitBounds() {
  static const std::vector<KernelFitParam> kParams = {
      {"gemm_peak_fraction", &DeviceSpec::gemm_peak_fraction, 0.1, 1.2},
      {"gemm_half_dim", &DeviceSpec::gemm_half_dim, 0, 1000},
      {"attn_fwd_peak_fraction", &DeviceSpec::attn_fwd_peak_fraction, 0.05, 1.2},
      {"attn_bwd_peak_fraction", &DeviceSpec::attn_bwd_peak_fraction, 0.05, 1.2},
      {"attn_half_span", &DeviceSpec::attn_half_span, 0, 2000},
      {"attn_half_head_dim", &DeviceSpec::attn_half_head_dim, 0, 256},
      {"hbm_peak_fraction", &DeviceSpec::hbm_peak_fraction, 0.1, 1.2},
      {"kernel_overhead_us", &DeviceSpec::kernel_overhead_us, 0, 50},
  };
  return kParams;
}

Result<DeviceSpec> FitKernelCurves(const DeviceSpec& device, const KernelTable& table) {
  if (!device.has_compute_curve())
    return Error("device " + device.name + " has no compute curve (gemm_peak_fraction): nothing to fit");
  std::vector<const KernelRow*> cal;
  for (const KernelRow& r : table.rows)
    if (r.priced() && r.split == KernelSplit::kCalibration) cal.push_back(&r);
  if (cal.empty()) return Error(table.path + ": no bf16 calibration row to fit on");
  // Levenberg-Marquardt on the log residuals, forward-difference Jacobian, each step clamped into the bounds.
  const std::vector<KernelFitParam>& params = KernelFitBounds();
  const int np = static_cast<int>(params.size()), nr = static_cast<int>(cal.size());
  auto with = [&](const Eigen::VectorXd& x) {
    DeviceSpec d = device;
    for (int j = 0; j < np; ++j) d.*params[j].field = x[j];
    return d;
  };
  auto residuals = [&](const Eigen::VectorXd& x) {
    const DeviceSpec d = with(x);
    Eigen::VectorXd r(nr);
    for (int i = 0; i < nr; ++i) r[i] = std::log(PredictKernelUs(d, *cal[i]) / cal[i]->median_us);
    return r;
  };
  auto clamp = [&](Eigen::VectorXd x) {
    for (int j = 0; j < np; ++j) x[j] = std::clamp(x[j], params[j].lo, params[j].hi);
    return x;
  };
  Eigen::VectorXd x(np);
  for (int j = 0; j < np; ++j) x[j] = device.*params[j].field;
  x = clamp(x);
  Eigen::VectorXd r = residuals(x);
  double loss = r.squaredNorm(), lambda = 1e-3;
  for (int it = 0; it < 300; ++it) {
    Eigen::MatrixXd J(nr, np);
    for (int j = 0; j < np; ++j) {
      const double h = 1e-6 * std::max(std::fabs(x[j]), 1e-3 * (params[j].hi - params[j].lo));
      Eigen::VectorXd xh = x;
      // Step inward at the upper bound, so the difference stays inside it.
      const double step = x[j] + h > params[j].hi ? -h : h;
      xh[j] += step;
      J.col(j) = (residuals(xh) - r) / step;
    }
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 20 && !improved; ++tries) {
      Eigen::MatrixXd M = A;
      for (int j = 0; j < np; ++j) M(j, j) += lambda * std::max(A(j, j), 1e-12);
      const Eigen::VectorXd x_new = clamp(x - M.ldlt().solve(g));
      const Eigen::VectorXd r_new = residuals(x_new);
      const double l = r_new.squaredNorm();
      if (std::isfinite(l) && l < loss) {
        improved = true;
        const double gain = loss - l;
        x = x_new, r = r_new, loss = l;
        lambda = std::max(lambda / 3, 1e-12);
        if (gain < 1e-14 * std::max(1.0, loss)) it = 300;  // converged
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  return with(x);
}

std::vector<KernelErrorStats> KernelErrors(const DeviceSpec& device, const KernelTable& table) {
  std::vector<KernelErrorStats> out;
  for (const KernelRow& r : table.rows) {
    if (!r.priced()) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const KernelErrorStats& s) {
      return s.group == r.group() && s.split == r.split;
    });
    if (it == out.end()) {
      out.push_back({r.group(), r.split});
      it = out.end() - 1;
    }
    const double e = PredictKernelUs(device, r) / r.median_us - 1;
    it->rows++;
    it->mape += std::fabs(e);
    it->mean += e;
    it->worst = std::fabs(e) > std::fabs(it->worst) ? e : it->worst;
  }
  for (KernelErrorStats& s : out) {
    s.mape /= s.rows;
    s.mean /= s.rows;
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelErrorStats& a, const KernelErrorStats& b) {
    return a.group != b.group ? a.group < b.group : a.split < b.split;
  });
  return out;
}

KernelErrorStats KernelErrorsOverall(const DeviceSpec& device, const KernelTable& table, KernelSplit split) {
  KernelErrorStats s{"all", split};
  for (const KernelRow& r : table.rows) {
    if (!r.priced() || r.split != split) continue;
    const double e = PredictKernelUs(device, r) / r.median_us - 1;
    s.rows++;
    s.mape += std::fabs(e);
    s.mean += e;
    s.worst = std::fabs(e) > std::fabs(s.worst) ? e : s.worst;
  }
  if (s.rows > 0) {
    s.mape /= s.rows;
    s.mean /= s.rows;
  }
  return s;
}

}  // namespace mmtwin

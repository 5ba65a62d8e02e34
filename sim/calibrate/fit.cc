// SPDX-License-Identifier: Apache-2.0
// Robust non-negative least squares (fit.h).
#include "calibrate/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace mmtwin {
namespace {

constexpr double kHuberK = 1.345;
constexpr double kOutlierK = 3;  // reported outliers: |residual| > 3 robust sigmas
constexpr int kMaxIrlsSteps = 50;

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Weighted non-negative least squares on the columns in `cols` (scaled design `a`, weights' square roots
// folded into a and b): the best feasible solution over every subset of free columns.
Eigen::VectorXd SolveNonNegative(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                                 const std::vector<int>& cols) {
  const int k = static_cast<int>(cols.size());
  Eigen::VectorXd best = Eigen::VectorXd::Zero(a.cols());
  double best_ss = b.squaredNorm();  // the empty support: every coefficient 0
  for (uint32_t mask = 1; mask < (1u << k); ++mask) {
    std::vector<int> support;
    for (int j = 0; j < k; ++j)
      if (mask & (1u << j)) support.push_back(cols[j]);
    Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(support.size()));
    for (size_t j = 0; j < support.size(); ++j) sub.col(static_cast<Eigen::Index>(j)) = a.col(support[j]);
    const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(sub);
    if (qr.rank() < static_cast<Eigen::Index>(support.size())) continue;  // collinear on this support
    const Eigen::VectorXd c = qr.solve(b);
    if ((c.array() < 0).any()) continue;
    const double ss = (sub * c - b).squaredNorm();
    if (ss < best_ss * (1 - 1e-12)) {
      best_ss = ss;
      best.setZero();
      for (size_t j = 0; j < support.size(); ++j) best(support[j]) = c(static_cast<Eigen::Index>(j));
    }
  }
  return best;
}

}  // namespace

Result<LinearFit> FitNonNegative(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  if (x.empty()) return Error("no samples to fit");
  if (x.size() != y.size())
    return Error(std::to_string(x.size()) + " rows of features but " + std::to_string(y.size()) + " values");
  const size_t cols = x[0].size();
  if (cols == 0 || cols > 12) return Error("a fit needs 1 to 12 columns, not " + std::to_string(cols));
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd a(n, static_cast<Eigen::Index>(cols));
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const std::vector<double>& row = x[static_cast<size_t>(i)];
    if (row.size() != cols)
      return Error("row " + std::to_string(i) + " has " + std::to_string(row.size()) + " columns, not " +
                   std::to_string(cols));
    for (size_t j = 0; j < cols; ++j) {
      if (!std::isfinite(row[j])) return Error("row " + std::to_string(i) + ": a feature is not finite");
      a(i, static_cast<Eigen::Index>(j)) = row[j];
    }
    if (!std::isfinite(y[static_cast<size_t>(i)]))
      return Error("row " + std::to_string(i) + ": y is not finite");
    b(i) = y[static_cast<size_t>(i)];
  }

  // Identified columns: the first always (the intercept), the others when they vary. Scale each to max |x| = 1.
  LinearFit fit;
  fit.samples = n;
  fit.identified.assign(cols, false);
  std::vector<int> free_cols;
  Eigen::VectorXd col_scale = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(cols));
  for (size_t j = 0; j < cols; ++j) {
    const auto c = a.col(static_cast<Eigen::Index>(j));
    const double lo = c.minCoeff(), hi = c.maxCoeff();
    const double mag = c.cwiseAbs().maxCoeff();
    const bool varies = hi - lo > 1e-12 * std::max(1.0, mag);
    if ((j == 0 || varies) && mag > 0) {
      fit.identified[j] = true;
      free_cols.push_back(static_cast<int>(j));
      col_scale(static_cast<Eigen::Index>(j)) = mag;
    }
  }
  if (static_cast<Eigen::Index>(free_cols.size()) > n)
    return Error(std::to_string(n) + " samples cannot fit " + std::to_string(free_cols.size()) +
                 " coefficients");
  const Eigen::MatrixXd scaled = a * col_scale.cwiseInverse().asDiagonal();

  // IRLS with Huber weights; the first step is ordinary (weights 1).
  Eigen::VectorXd w = Eigen::VectorXd::Ones(n), c = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(cols));
  Eigen::VectorXd r = b;
  for (int step = 0; step < kMaxIrlsSteps; ++step) {
    const Eigen::VectorXd sw = w.cwiseSqrt();
    const Eigen::VectorXd next = SolveNonNegative(sw.asDiagonal() * scaled, sw.cwiseProduct(b), free_cols);
    r = b - scaled * next;
    std::vector<double> abs_r(static_cast<size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) abs_r[static_cast<size_t>(i)] = std::abs(r(i));
    fit.scale = 1.4826 * Quantile(abs_r, 0.5);
    const double change = (next - c).cwiseAbs().maxCoeff();
    c = next;
    if (fit.scale <= 0) break;  // more than half the rows fit exactly: nothing to down-weight
    for (Eigen::Index i = 0; i < n; ++i)
      w(i) =
          std::min(1.0, kHuberK * fit.scale / std::max(std::abs(r(i)), std::numeric_limits<double>::min()));
    if (step > 0 && change <= 1e-10 * std::max(1.0, c.cwiseAbs().maxCoeff())) break;
  }

  fit.coefficients.resize(cols);
  for (size_t j = 0; j < cols; ++j)
    fit.coefficients[j] = c(static_cast<Eigen::Index>(j)) / col_scale(static_cast<Eigen::Index>(j));
  const double mean = b.mean();
  const double ss_tot = (b.array() - mean).square().sum(), ss_res = r.squaredNorm();
  fit.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : (ss_res <= 1e-24 ? 1.0 : 0.0);
  std::vector<double> rel;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (b(i) > 0) rel.push_back(std::abs(r(i)) / b(i));
    if (fit.scale > 0 && std::abs(r(i)) > kOutlierK * fit.scale) ++fit.outliers;
  }
  fit.rel_residual_p50 = Quantile(rel, 0.5);
  fit.rel_residual_p90 = Quantile(rel, 0.9);
  fit.rel_residual_max = rel.empty() ? 0 : *std::max_element(rel.begin(), rel.end());
  return fit;
}

}  // namespace mmtwin

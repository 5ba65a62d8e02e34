// SPDX-License-Identifier: Apache-2.0
// Robust non-negative linear least squares, the fit behind `mmtwin calibrate` (calibrate/calibrate.h).
//
// Model: y_i ≈ sum_j c_j x_ij with every c_j ≥ 0 (a time cannot fall as work grows, and a negative intercept
// would price small micro-batches below zero). Robust to outliers (a rank descheduled for a moment, a page fault):
// iteratively reweighted least squares with Huber's weights, w_i = min(1, k s / |r_i|), k = 1.345 and s the
// residuals' scale, 1.4826 × their median absolute deviation (95% efficiency on Gaussian noise, bounded
// influence of the rest). Each weighted step is solved exactly: for a handful of columns the non-negative optimum is
// the best feasible unconstrained least-squares solution over the subsets of free columns (the KKT conditions:
// the optimum is the unconstrained solution on its own support), each by column-pivoted QR on scaled columns.
//
// Columns that do not vary over the rows (other than the first, the intercept when it is all ones) cannot be told
// apart from the intercept: they are fixed at 0 and reported as not identified.
//
//   LinearFit f = FitNonNegative({{1, 100, 1e4}, {1, 200, 4e4}, ...}, {35.2, 41.0, ...}).value();
//   f.coefficients  // c0, c_token, c_pair
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

struct LinearFit {
  std::vector<double> coefficients;  // one per column, ≥ 0
  std::vector<bool> identified;      // false: the column did not vary, its coefficient is fixed at 0
  int64_t samples = 0;
  int64_t outliers = 0;  // rows more than 3 robust sigmas (3 × scale) off the fit
  double r2 = 0;         // 1 - SS_res / SS_tot over every row (unweighted); 1 when y does not vary and fits
  double scale = 0;      // robust scale of the residuals (units of y)
  // |residual| / y over the rows with y > 0, as fractions: median, 90th percentile, largest.
  double rel_residual_p50 = 0, rel_residual_p90 = 0, rel_residual_max = 0;
};

// `x`: one row per sample, every row with the same number of columns (1 to 12); `y` one value per row. Errors:
// no rows, rows of different lengths, non-finite values, fewer rows than identified columns.
Result<LinearFit> FitNonNegative(const std::vector<std::vector<double>>& x, const std::vector<double>& y);

}  // namespace mmtwin

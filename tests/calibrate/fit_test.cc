// SPDX-License-Identifier: Apache-2.0
// Robust non-negative least squares (calibrate/fit.h): exact recovery, recovery under noise and outliers,
// the non-negativity constraint against a brute-force search, unidentified columns, errors.
#include "calibrate/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace mmtwin {
namespace {

struct Data {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
};

// Rows [1, tokens, pairs] with tokens in [200, 4000] and pairs = tokens² / spans for 1..8 spans.
Data Make(int n, const std::vector<double>& c, double noise, double outlier_share, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> tok(200, 4000);
  std::uniform_int_distribution<int> spans(1, 8);
  std::normal_distribution<double> gauss(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  Data d;
  for (int i = 0; i < n; ++i) {
    const double t = std::round(tok(rng)), p = t * t / spans(rng);
    const double clean = c[0] + c[1] * t + c[2] * p;
    double y = clean * (1 + noise * gauss(rng));
    if (u(rng) < outlier_share) y = clean * 3;  // a rank descheduled for a while
    d.x.push_back({1, t, p});
    d.y.push_back(y);
  }
  return d;
}

TEST(FitNonNegative, RecoversExactCoefficients) {
  const std::vector<double> c = {35, 0.061, 1.1e-6};
  const Data d = Make(50, c, 0, 0, 1);
  auto f = FitNonNegative(d.x, d.y);
  ASSERT_TRUE(f.ok()) << f.error().message();
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(f->coefficients[j], c[j], 1e-8 * c[j]) << j;
  EXPECT_NEAR(f->r2, 1, 1e-12);
  EXPECT_LT(f->rel_residual_max, 1e-9);
  EXPECT_EQ(f->samples, 50);
  EXPECT_EQ(f->outliers, 0);
}

TEST(FitNonNegative, RobustToNoiseAndOutliers) {
  const std::vector<double> c = {120, 0.9, 2e-5};
  const Data d = Make(400, c, 0.02, 0.05, 2);
  auto f = FitNonNegative(d.x, d.y);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_NEAR(f->coefficients[1], c[1], 0.03 * c[1]);
  EXPECT_NEAR(f->coefficients[2], c[2], 0.05 * c[2]);
  // The intercept is small next to the token term (≈ 2000 µs): judge it on the scale of the predictions.
  EXPECT_NEAR(f->coefficients[0], c[0], 0.02 * (c[0] + c[1] * 2000));
  // The 5% outliers (3x) are found; Gaussian rows beyond 3 sigmas are ~0.3%.
  EXPECT_GE(f->outliers, 12);
  EXPECT_LE(f->outliers, 35);
  EXPECT_LT(f->rel_residual_p50, 0.03);
  // Ordinary least squares (normal equations, Cramer's rule) is pulled up by the outliers: the robust fit is
  // closer on the token coefficient.
  double m[3][3] = {}, v[3] = {};
  for (size_t i = 0; i < d.y.size(); ++i)
    for (int r = 0; r < 3; ++r) {
      v[r] += d.x[i][r] * d.y[i];
      for (int k = 0; k < 3; ++k) m[r][k] += d.x[i][r] * d.x[i][k];
    }
  auto det = [](double a[3][3]) {
    return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
           a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
           a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
  };
  double m1[3][3];
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) m1[r][k] = k == 1 ? v[r] : m[r][k];
  const double ols_token = det(m1) / det(m);
  EXPECT_GT(std::abs(ols_token - c[1]), 2 * std::abs(f->coefficients[1] - c[1]))
      << "OLS " << ols_token << ", robust " << f->coefficients[1];
}

// Sum of squared residuals of c on d.
double Ss(const Data& d, const std::vector<double>& c) {
  double s = 0;
  for (size_t i = 0; i < d.y.size(); ++i) {
    double p = 0;
    for (size_t j = 0; j < c.size(); ++j) p += c[j] * d.x[i][j];
    s += (d.y[i] - p) * (d.y[i] - p);
  }
  return s;
}

TEST(FitNonNegative, NonNegativeOptimumMatchesBruteForce) {
  // y = -300 + 0.5 t exactly: the unconstrained fit has a negative intercept; the constrained one must put it at
  // 0 and be the best line through the origin. Small residuals everywhere (no outliers to down-weight), so the
  // robust fit is the least-squares one: compare with a fine grid over c_token >= 0, c0 >= 0.
  Data d;
  for (int t = 1000; t <= 2000; t += 50) {
    d.x.push_back({1, static_cast<double>(t)});
    d.y.push_back(-300 + 0.5 * t);
  }
  auto f = FitNonNegative(d.x, d.y);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->coefficients[0], 0);
  EXPECT_GT(f->coefficients[1], 0);
  // Through the origin: c = sum(t y) / sum(t²).
  double ty = 0, tt = 0;
  for (size_t i = 0; i < d.y.size(); ++i) {
    ty += d.x[i][1] * d.y[i];
    tt += d.x[i][1] * d.x[i][1];
  }
  const double best = Ss(d, {0, ty / tt});
  EXPECT_NEAR(f->coefficients[1], ty / tt, 0.01 * ty / tt);
  for (double c0 = 0; c0 <= 200; c0 += 2)
    for (double c1 = 0.2; c1 <= 0.6; c1 += 0.0005) EXPECT_GE(Ss(d, {c0, c1}), best * (1 - 1e-9));
}

TEST(FitNonNegative, ConstantColumnIsNotIdentified) {
  Data d;
  for (int i = 0; i < 10; ++i) {
    d.x.push_back({1, 512, 1000.0 * i});
    d.y.push_back(10 + 0.002 * 1000 * i);
  }
  auto f = FitNonNegative(d.x, d.y);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_TRUE(f->identified[0]);
  EXPECT_FALSE(f->identified[1]);  // tokens never vary: indistinguishable from the intercept
  EXPECT_TRUE(f->identified[2]);
  EXPECT_EQ(f->coefficients[1], 0);
  EXPECT_NEAR(f->coefficients[0], 10, 1e-9);
  EXPECT_NEAR(f->coefficients[2], 0.002, 1e-12);
}

TEST(FitNonNegative, ErrorsAreValues) {
  EXPECT_FALSE(FitNonNegative({}, {}).ok());
  EXPECT_NE(FitNonNegative({{1, 2}, {1}}, {1, 2}).error().message().find("row 1 has 1 columns"),
            std::string::npos);
  EXPECT_NE(FitNonNegative({{1, NAN}}, {1}).error().message().find("not finite"), std::string::npos);
  EXPECT_NE(FitNonNegative({{1, 2}}, {1, 2}).error().message().find("1 rows of features but 2 values"),
            std::string::npos);
  // Two rows, three varying columns.
  EXPECT_NE(FitNonNegative({{1, 2, 3}, {1, 5, 7}}, {1, 2}).error().message().find("cannot fit 3"),
            std::string::npos);
}

}  // namespace
}  // namespace mmtwin

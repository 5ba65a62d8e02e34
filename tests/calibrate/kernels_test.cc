// SPDX-License-Identifier: Apache-2.0
// The kernel table against the compute curves (sim/calibrate/kernels.h): reading with file:line errors, the
// calibration / held-out split, predictions equal to the cost model's own pieces, and the fit recovering known
// curve parameters from a table the curves themselves wrote (the oracle), seeing only the calibration rows.
#include "calibrate/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "core/cluster/cluster.h"
#include "core/cost/cost_model.h"

namespace mmtwin {
namespace {

const char* kHeader =
    "family,dtype,m,n,k,batch,heads,span,head_dim,causal,pass,work,median_us,min_us,rate_per_s\n";

DeviceSpec H200() {
  auto c = LoadCluster("h200-8x400g");
  EXPECT_TRUE(c.ok()) << c.error().message();
  return c->device;
}

// A table whose times are `device`'s own predictions: GEMMs on a grid, attention over spans, head dims and
// causality, streaming kernels over sizes.
std::string SyntheticTable(const DeviceSpec& d) {
  std::ostringstream t;
  t << "# synthetic: the curves' own times\n" << kHeader;
  auto row = [&](KernelRow r, const std::string& text) {
    r.median_us = PredictKernelUs(d, r);
    t << text << "," << r.work << "," << r.median_us << ",,\n";
  };
  for (double m : {128.0, 512.0, 2048.0, 8192.0})
    for (double n : {256.0, 1024.0, 4096.0, 14336.0})
      for (double k : {256.0, 1024.0, 4096.0}) {
        KernelRow r;
        r.family = KernelFamily::kGemm;
        r.dtype = "bf16";
        r.m = m, r.n = n, r.k = k, r.work = 2 * m * n * k;
        std::ostringstream s;
        s << "gemm,bf16," << m << "," << n << "," << k << ",,,,,,fwd";
        row(r, s.str());
      }
  for (int causal : {1, 0})
    for (double hd : {64.0, 128.0})
      for (double span : {256.0, 1024.0, 4096.0, 16384.0})
        for (const char* pass : {"fwd", "bwd"}) {
          KernelRow r;
          r.family = KernelFamily::kAttention;
          r.dtype = "bf16";
          r.pass = pass;
          r.batch = 16384 / span, r.heads = 32, r.span = span, r.head_dim = hd, r.causal = causal == 1;
          r.work = 1;
          std::ostringstream s;
          s << "attn,bf16,,,," << r.batch << ",32," << span << "," << hd << "," << causal << "," << pass;
          row(r, s.str());
        }
  for (double bytes : {4e6, 6.7e7, 1e9})
    for (const char* pass : {"copy", "add"}) {
      KernelRow r;
      r.family = KernelFamily::kStream;
      r.dtype = "bf16";
      r.pass = pass;
      r.work = bytes;
      std::ostringstream s;
      s << "stream,bf16," << bytes / 4 << ",,,,,,,," << pass;
      row(r, s.str());
    }
  return t.str();
}

TEST(KernelTableTest, ReadsRowsAndAlternatesTheSplitWithinEachGroup) {
  const std::string text = std::string(kHeader) +
                           "gemm,bf16,128,256,256,,,,,,fwd,16777216,5.31,4.74,3e12\n"
                           "attn,bf16,,,,64,16,256,64,1,fwd,8589934592,93.06,91.58,9e13\n"
                           "gemm,fp32,1024,4096,4096,,,,,,fwd,34359738368,677.9,676.2,5e13\n"
                           "attn,bf16,,,,64,16,256,64,1,bwd,21474836480,341.7,340.4,6e13\n"
                           "gemm,bf16,256,256,256,,,,,,linear_wgrad,33554432,5.5,5,6e12\n"
                           "attn,bf16,,,,32,16,512,64,0,fwd,17179869184,117.5,115.6,1e14\n";
  auto t = ParseKernelTable(text, "k.csv");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->rows.size(), 6u);
  EXPECT_EQ(t->rows[0].split, KernelSplit::kCalibration);  // gemm #0
  EXPECT_EQ(t->rows[1].split, KernelSplit::kCalibration);  // attn/fwd #0
  EXPECT_FALSE(t->rows[2].priced());                       // fp32: not priced, not counted in the split
  EXPECT_EQ(t->rows[3].split, KernelSplit::kCalibration);  // attn/bwd #0
  EXPECT_EQ(t->rows[4].split, KernelSplit::kHeldOut);      // gemm #1
  EXPECT_EQ(t->rows[5].split, KernelSplit::kHeldOut);      // attn/fwd #1
  EXPECT_EQ(t->rows[5].group(), "attn/fwd");
  EXPECT_FALSE(t->rows[5].causal);
  EXPECT_EQ(t->rows[1].line, 3);
}

TEST(KernelTableTest, BadInputNamesTheFileLineAndField) {
  auto msg = [](const std::string& body) {
    auto t = ParseKernelTable(std::string(kHeader) + body, "k.csv");
    return t.ok() ? std::string("ok") : t.error().message();
  };
  EXPECT_NE(msg("conv,bf16,1,1,1,,,,,,fwd,1,1,,\n").find("k.csv:2: family"), std::string::npos);
  EXPECT_NE(msg("gemm,bf16,1,1,1,,,,,,bwd,1,1,,\n").find("k.csv:2: pass"), std::string::npos);
  EXPECT_NE(msg("gemm,bf16,1,,1,,,,,,fwd,1,1,,\n").find("k.csv:2: n"), std::string::npos);
  EXPECT_NE(msg("gemm,bf16,1,1,1,,,,,,fwd,1,0,,\n").find("k.csv:2: median_us"), std::string::npos);
  EXPECT_NE(msg("attn,bf16,,,,1,1,1,1,yes,fwd,1,1,,\n").find("k.csv:2: causal"), std::string::npos);
  EXPECT_NE(msg("gemm,bf16,1,1,1,,,,,,fwd,1,1,,\ngemm,bf16,1,1,x,,,,,,fwd,1,1,,\n").find("k.csv:3: k"),
            std::string::npos);
  auto t = ParseKernelTable("family,dtype,m\n", "k.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("missing column"), std::string::npos) << t.error().message();
  EXPECT_FALSE(ReadKernelTable("/nonexistent/k.csv").ok());
}

// Each family's prediction is the cost model's piece plus one kernel's fixed time, with attention over
// `batch` sequences of `span` (pairs batch x span^2, span sum batch x span).
TEST(KernelTableTest, PredictionsAreTheCostModelsPieces) {
  const DeviceSpec d = H200();
  const AnalyticCostModel model(d);
  KernelRow g;
  g.family = KernelFamily::kGemm, g.dtype = "bf16", g.m = 4096, g.n = 14336, g.k = 4096;
  EXPECT_DOUBLE_EQ(PredictKernelUs(d, g), model.GemmUs(4096, 14336, 4096) + d.kernel_overhead_us);
  KernelRow a;
  a.family = KernelFamily::kAttention, a.dtype = "bf16", a.pass = "bwd";
  a.batch = 4, a.heads = 32, a.span = 4096, a.head_dim = 128, a.causal = true;
  EXPECT_DOUBLE_EQ(PredictKernelUs(d, a),
                   model.AttentionBwdUs(32, 128, 4 * 4096.0 * 4096, 4 * 4096.0, true) + d.kernel_overhead_us);
  KernelRow s;
  s.family = KernelFamily::kStream, s.dtype = "bf16", s.pass = "copy", s.work = 1e9;
  EXPECT_DOUBLE_EQ(PredictKernelUs(d, s), model.MemoryUs(1e9) + d.kernel_overhead_us);
}

// The oracle: a table written by known curves is fitted back to them from the preset's values, on the
// calibration half only, and the held-out half is then predicted almost exactly.
TEST(KernelFitTest, RecoversTheCurvesThatWroteTheTable) {
  DeviceSpec truth = H200();
  truth.gemm_peak_fraction = 0.78, truth.gemm_half_dim = 60, truth.attn_fwd_peak_fraction = 0.40;
  truth.attn_bwd_peak_fraction = 0.31, truth.attn_half_span = 300, truth.attn_half_head_dim = 12;
  truth.hbm_peak_fraction = 0.9, truth.kernel_overhead_us = 5.5;
  auto t = ParseKernelTable(SyntheticTable(truth), "synthetic.csv");
  ASSERT_TRUE(t.ok()) << t.error().message();
  DeviceSpec start = H200();  // far from the truth in every parameter
  start.gemm_peak_fraction = 0.5, start.gemm_half_dim = 150, start.attn_fwd_peak_fraction = 0.6;
  start.attn_bwd_peak_fraction = 0.5, start.attn_half_span = 100, start.attn_half_head_dim = 4;
  start.hbm_peak_fraction = 0.7, start.kernel_overhead_us = 2;
  EXPECT_GT(KernelErrorsOverall(start, *t, KernelSplit::kHeldOut).mape, 0.1);
  auto fit = FitKernelCurves(start, *t);
  ASSERT_TRUE(fit.ok()) << fit.error().message();
  for (const KernelFitParam& p : KernelFitBounds())
    EXPECT_NEAR((*fit).*p.field, truth.*p.field, 0.02 * truth.*p.field) << p.name;
  const KernelErrorStats held = KernelErrorsOverall(*fit, *t, KernelSplit::kHeldOut);
  EXPECT_GT(held.rows, 40);
  EXPECT_LT(held.mape, 0.005);
  // Per group too, and the split halves are both populated in every group.
  for (const KernelErrorStats& s : KernelErrors(*fit, *t)) {
    EXPECT_GT(s.rows, 0) << s.group;
    EXPECT_LT(s.mape, 0.01) << s.group;
  }
}

TEST(KernelFitTest, ADeviceWithoutCurvesOrATableWithoutCalibrationRowsIsAnError) {
  auto t = ParseKernelTable(std::string(kHeader) + "gemm,fp32,1,1,1,,,,,,fwd,1,1,,\n", "k.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(FitKernelCurves(H200(), *t).ok());
  DeviceSpec cpu = H200();
  cpu.gemm_peak_fraction = 0;
  auto s = ParseKernelTable(SyntheticTable(H200()), "s.csv");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(FitKernelCurves(cpu, *s).ok());
}

}  // namespace
}  // namespace mmtwin

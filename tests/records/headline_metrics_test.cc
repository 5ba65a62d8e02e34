// SPDX-License-Identifier: Apache-2.0
// The headline metrics (core/records/headline_metrics.h) that `mmtwin compare` and the GUI's Compare tab share:
// each name is the path of its field in summary.json (the record's own codec) and its getter reads that field;
// names and labels are unique, formats sane, and every direction is said.
#include "core/records/headline_metrics.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/records/records_codec.h"

namespace mmtwin {
namespace {

using nlohmann::json;

// A summary whose every numeric field holds its own value, so a getter reading the wrong field is caught.
RunSummary Distinct() {
  RunSummary s;
  s.iteration_time_us = {11, 12, 13, 14, 15, 16, 17};
  s.busy_ratio = 0.21;
  s.bubble_ratio = 0.22;
  s.idle_ratio = 0.23;
  s.exposed_comm_ratio = 0.24;
  s.recompute_ratio = 0.25;
  s.tokens_per_s = 26;
  s.samples_per_s = 27;
  s.mfu = 0.28;
  s.epoch_time_s = 29;
  s.gpu_days = 30;
  s.oom = true;
  s.data = {0.31, 0.32, 0.33, 34, 35, 36};
  s.recomputed_layers = 37;
  for (int k = 0; k < 2; ++k) {
    StageRecord st;
    st.stage = k;
    st.layers = 40 + k;
    st.fwd_us_mean = 42 + k;
    st.bwd_us_mean = 44 + k;
    st.recompute_us_mean = 46 + k;
    st.busy_ratio = 0.48 + k / 100.0;
    st.bubble_ratio = 0.50 + k / 100.0;
    st.idle_ratio = 0.52 + k / 100.0;
    st.peak_memory_bytes = int64_t{54 + k} << 30;
    s.stages.push_back(st);
  }
  return s;
}

double Number(const json& v) { return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>(); }

TEST(HeadlineMetrics, NamesAreSummaryJsonPathsAndGettersReadThem) {
  const RunSummary s = Distinct();
  const json j = json::parse(SummaryToJson(s));
  std::set<std::string> names, labels;
  for (const HeadlineMetric& m : HeadlineMetrics()) {
    SCOPED_TRACE(m.name);
    const json::json_pointer path("/" + std::string(m.name));
    ASSERT_TRUE(j.contains(path));
    EXPECT_EQ(Number(j.at(path)), m.get(s));
    EXPECT_TRUE(names.insert(m.name).second);
    EXPECT_TRUE(labels.insert(m.label).second);
    EXPECT_GT(m.scale, 0);
    EXPECT_GE(m.decimals, 0);
  }
  for (const StageMetric& m : StageMetrics()) {
    SCOPED_TRACE(m.name);
    for (size_t k = 0; k < s.stages.size(); ++k) {
      ASSERT_TRUE(j["stages"][k].contains(m.name));
      EXPECT_EQ(Number(j["stages"][k][m.name]), m.get(s.stages[k]));
    }
  }
  // The key figures a comparison must show, with the direction that makes a change an improvement.
  auto find = [](const std::string& name) {
    for (const HeadlineMetric& m : HeadlineMetrics())
      if (name == m.name) return &m;
    return static_cast<const HeadlineMetric*>(nullptr);
  };
  ASSERT_NE(find("iteration_time_us/p50"), nullptr);
  EXPECT_EQ(find("iteration_time_us/p50")->better, Better::kLower);
  EXPECT_EQ(find("iteration_time_us/p50")->scale, 1e-3);  // microseconds shown as ms
  EXPECT_STREQ(find("iteration_time_us/p50")->unit, "ms");
  ASSERT_NE(find("tokens_per_s"), nullptr);
  EXPECT_EQ(find("tokens_per_s")->better, Better::kHigher);
  ASSERT_NE(find("gpu_days"), nullptr);
  EXPECT_EQ(find("gpu_days")->better, Better::kLower);
  EXPECT_STREQ(BetterName(Better::kLower), "lower is better");
  EXPECT_STREQ(BetterName(Better::kNeither), "");
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/trace/stats.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mmtwin {

ModalityStats ComputeModalityStats(std::string name, std::vector<double> values, int bins) {
  ModalityStats m;
  m.name = std::move(name);
  bins = std::max(bins, 1);
  m.histogram.counts.assign(static_cast<size_t>(bins), 0);
  m.count = static_cast<int64_t>(values.size());
  if (values.empty()) return m;
  std::sort(values.begin(), values.end());
  // Kahan-free two-pass mean/variance is accurate enough for 1e7 values of these magnitudes.
  double sum = 0;
  for (double x : values) {
    sum += x;
    if (x != 0) ++m.nonzero;
  }
  m.sum = sum;
  m.mean = sum / static_cast<double>(values.size());
  double ss = 0;
  for (double x : values) ss += (x - m.mean) * (x - m.mean);
  m.std = std::sqrt(ss / static_cast<double>(values.size()));
  m.min = values.front();
  m.max = values.back();
  m.p50 = PercentileSorted(values, 50 / 100.0);
  m.p90 = PercentileSorted(values, 90 / 100.0);
  m.p99 = PercentileSorted(values, 99 / 100.0);
  m.histogram.lo = m.min;
  m.histogram.hi = m.max;
  const double width = (m.max - m.min) / bins;
  for (double x : values) {
    int b = width > 0 ? static_cast<int>((x - m.min) / width) : 0;
    b = std::clamp(b, 0, bins - 1);
    ++m.histogram.counts[static_cast<size_t>(b)];
  }
  return m;
}

TraceStats ComputeStats(const Trace& trace, int bins) {
  TraceStats st;
  st.samples = static_cast<int64_t>(trace.samples.size());
  const size_t n = trace.samples.size();
  std::vector<double> v(n);
  auto column = [&](const char* name, auto get) {
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(get(trace.samples[i]));
    st.modalities.push_back(ComputeModalityStats(name, v, bins));
  };
  column("images", [](const Sample& s) { return s.images; });
  column("image_tiles", [](const Sample& s) { return s.image_tiles; });
  column("video_frames", [](const Sample& s) { return s.video_frames; });
  column("audio_seconds", [](const Sample& s) { return s.audio_seconds; });
  column("text_tokens", [](const Sample& s) { return s.text_tokens; });
  std::vector<int64_t> counts(trace.subsets.size(), 0);
  for (const Sample& s : trace.samples)
    if (s.subset < counts.size()) ++counts[s.subset];
  for (size_t i = 0; i < trace.subsets.size(); ++i) st.subsets.push_back({trace.subsets[i], counts[i]});
  // Largest first (ties by name): the mix reads from the top, whatever order the file lists its subsets in.
  std::stable_sort(st.subsets.begin(), st.subsets.end(), [](const SubsetCount& a, const SubsetCount& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.name < b.name;
  });
  return st;
}

std::string FormatStatsText(const TraceStats& st) {
  std::string o;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld samples, %zu subsets%s%s\n\n", static_cast<long long>(st.samples),
                st.subsets.size(), st.model.empty() ? "" : ", model ", st.model.c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "%-14s %9s %14s %11s %11s %11s %11s %11s %11s %11s\n", "modality", "nonzero",
                "sum", "mean", "std", "min", "p50", "p90", "p99", "max");
  o += buf;
  for (const ModalityStats& m : st.modalities) {
    std::snprintf(buf, sizeof buf, "%-14s %9lld %14.10g %11.6g %11.6g %11.6g %11.6g %11.6g %11.6g %11.6g\n",
                  m.name.c_str(), static_cast<long long>(m.nonzero), m.sum, m.mean, m.std, m.min, m.p50,
                  m.p90, m.p99, m.max);
    o += buf;
  }
  if (st.over_context > 0) {
    std::snprintf(
        buf, sizeof buf,
        "%lld samples exceed the model's %lld-token context (max_context): simulate cuts them to it\n",
        static_cast<long long>(st.over_context), static_cast<long long>(st.max_context));
    o += buf;
  }
  o += "\n";
  // The name column is as wide as the longest name (at most 60 characters, longer names are cut).
  int width = 6;
  for (const SubsetCount& s : st.subsets)
    width = std::max(width, static_cast<int>(std::min<size_t>(s.name.size(), 60)));
  std::snprintf(buf, sizeof buf, "%-*s %10s %7s\n", width, "subset", "samples", "share");
  o += buf;
  for (const SubsetCount& s : st.subsets) {
    const double share =
        st.samples > 0 ? 100.0 * static_cast<double>(s.samples) / static_cast<double>(st.samples) : 0;
    const std::string name = s.name.size() > 60 ? s.name.substr(0, 57) + "..." : s.name;
    std::snprintf(buf, sizeof buf, "%-*s %10lld %6.2f%%\n", width, name.c_str(),
                  static_cast<long long>(s.samples), share);
    o += buf;
  }
  return o;
}

std::string StatsToJson(const TraceStats& st) {
  nlohmann::json j;
  j["samples"] = st.samples;
  if (!st.model.empty()) j["model"] = st.model;
  if (st.max_context > 0) {
    j["max_context"] = st.max_context;
    j["over_context"] = st.over_context;
  }
  nlohmann::json mods = nlohmann::json::object();
  for (const ModalityStats& m : st.modalities) {
    nlohmann::json x;
    x["count"] = m.count;
    x["nonzero"] = m.nonzero;
    x["sum"] = m.sum;
    x["mean"] = m.mean;
    x["std"] = m.std;
    x["min"] = m.min;
    x["max"] = m.max;
    x["p50"] = m.p50;
    x["p90"] = m.p90;
    x["p99"] = m.p99;
    x["histogram"] = {{"lo", m.histogram.lo}, {"hi", m.histogram.hi}, {"counts", m.histogram.counts}};
    mods[m.name] = std::move(x);
  }
  j["modalities"] = std::move(mods);
  nlohmann::json subs = nlohmann::json::array();
  for (const SubsetCount& s : st.subsets) subs.push_back({{"name", s.name}, {"samples", s.samples}});
  j["subsets"] = std::move(subs);
  return j.dump();
}

}  // namespace mmtwin

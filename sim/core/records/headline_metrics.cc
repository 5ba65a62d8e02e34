// SPDX-License-Identifier: Apache-2.0
// The headline metrics (headline_metrics.h).
#include "core/records/headline_metrics.h"

#include <algorithm>
#include <cmath>

namespace mmtwin {

const std::vector<HeadlineMetric>& HeadlineMetrics() {
  using S = const RunSummary&;
  constexpr Better kLower = Better::kLower, kHigher = Better::kHigher, kNeither = Better::kNeither;
  static const std::vector<HeadlineMetric> kMetrics = {
      {"iteration_time_us/p50", "iteration p50 (ms)", "ms", 1e-3, 2, kLower,
       [](S s) { return s.iteration_time_us.p50; }},
      {"iteration_time_us/p99", "iteration p99 (ms)", "ms", 1e-3, 2, kLower,
       [](S s) { return s.iteration_time_us.p99; }},
      {"iteration_time_us/mean", "iteration mean (ms)", "ms", 1e-3, 2, kLower,
       [](S s) { return s.iteration_time_us.mean; }},
      {"gpu_days", "GPU-days (epoch)", "GPU-days", 1, 3, kLower, [](S s) { return s.gpu_days; }},
      {"tokens_per_s", "tokens/s", "tokens/s", 1, 0, kHigher, [](S s) { return s.tokens_per_s; }},
      {"samples_per_s", "samples/s", "samples/s", 1, 2, kHigher, [](S s) { return s.samples_per_s; }},
      {"mfu", "MFU", "fraction", 1, 4, kHigher, [](S s) { return s.mfu; }},
      {"busy_ratio", "busy ratio", "fraction", 1, 4, kHigher, [](S s) { return s.busy_ratio; }},
      {"bubble_ratio", "bubble ratio", "fraction", 1, 4, kLower, [](S s) { return s.bubble_ratio; }},
      {"idle_ratio", "idle ratio", "fraction", 1, 4, kLower, [](S s) { return s.idle_ratio; }},
      {"recompute_ratio", "recompute ratio", "fraction", 1, 4, kLower, [](S s) { return s.recompute_ratio; }},
      {"exposed_comm_ratio", "exposed comm ratio", "fraction", 1, 4, kLower,
       [](S s) { return s.exposed_comm_ratio; }},
      {"recomputed_layers", "recomputed layers", "layers", 1, 0, kNeither,
       [](S s) { return double(s.recomputed_layers); }},
      {"data/pad_ratio", "pad ratio", "fraction", 1, 4, kLower, [](S s) { return s.data.pad_ratio; }},
      {"data/dist_ratio_vit", "dist ratio ViT", "fraction", 1, 4, kLower,
       [](S s) { return s.data.dist_ratio_vit; }},
      {"data/dist_ratio_llm", "dist ratio LLM", "fraction", 1, 4, kLower,
       [](S s) { return s.data.dist_ratio_llm; }},
      {"data/mean_batch_size", "mean batch size", "samples", 1, 3, kNeither,
       [](S s) { return s.data.mean_batch_size; }},
      {"oom", "OOM (1 = yes)", "", 1, 0, kLower, [](S s) { return s.oom ? 1.0 : 0.0; }},
  };
  return kMetrics;
}

const std::vector<StageMetric>& StageMetrics() {
  using T = const StageRecord&;
  constexpr Better kLower = Better::kLower, kHigher = Better::kHigher, kNeither = Better::kNeither;
  static const std::vector<StageMetric> kMetrics = {
      {"layers", "layers", "layers", 1, 0, kNeither, [](T s) { return double(s.layers); }},
      {"fwd_us_mean", "fwd (ms)", "ms", 1e-3, 2, kLower, [](T s) { return s.fwd_us_mean; }},
      {"bwd_us_mean", "bwd (ms)", "ms", 1e-3, 2, kLower, [](T s) { return s.bwd_us_mean; }},
      {"recompute_us_mean", "recompute (ms)", "ms", 1e-3, 2, kLower, [](T s) { return s.recompute_us_mean; }},
      {"busy_ratio", "busy", "fraction", 1, 4, kHigher, [](T s) { return s.busy_ratio; }},
      {"bubble_ratio", "bubble", "fraction", 1, 4, kLower, [](T s) { return s.bubble_ratio; }},
      {"idle_ratio", "idle", "fraction", 1, 4, kLower, [](T s) { return s.idle_ratio; }},
      {"peak_memory_bytes", "peak mem (GiB)", "GiB", 1.0 / (1024.0 * 1024 * 1024), 2, kLower,
       [](T s) { return double(s.peak_memory_bytes); }},
  };
  return kMetrics;
}

const char* BetterName(Better b) {
  switch (b) {
    case Better::kLower:
      return "lower is better";
    case Better::kHigher:
      return "higher is better";
    case Better::kNeither:
      break;
  }
  return "";
}

double GpuSecondsPerSample(const RunSummary& s) {
  return s.samples_per_s > 0 ? s.parallel.world_size() / s.samples_per_s : std::nan("");
}

int64_t PeakMemoryBytes(const RunSummary& s) {
  int64_t peak = 0;
  for (const StageRecord& st : s.stages) peak = std::max(peak, st.peak_memory_bytes);
  return peak;
}

}  // namespace mmtwin

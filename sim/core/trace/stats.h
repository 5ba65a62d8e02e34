// SPDX-License-Identifier: Apache-2.0
// Per-modality statistics of a trace: what `mmtwin trace stats` prints, and what generator tests compare
// against published dataset statistics.
//
// Contract: pure. Units are those of the column (counts, seconds, tokens). std is the population standard
// deviation; percentiles interpolate linearly between order statistics (numpy's default: p of n sorted values
// sits at rank p/100 * (n - 1)). Histograms have `bins` equal-width bins over [min, max] (the last bin
// includes max). An empty trace gives zero count and zeros everywhere.
//
//   TraceStats st = ComputeStats(trace);
//   std::cout << FormatStatsText(st);
//   MMTWIN_ASSIGN_OR_RETURN(ModelSpec m, LoadModel("internvl-1.5-6b-20b"));
//   AddModelStats(st, trace, m);            // vit_tokens and llm_tokens (core/trace/stats_model.cc)
//   std::string j = StatsToJson(st);          // {"samples": N, "modalities": {...}, "subsets": [...]}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace mmtwin {

struct ModelSpec;

inline constexpr int kDefaultHistogramBins = 20;

struct Histogram {
  double lo = 0;  // left edge of bin 0 (the minimum)
  double hi = 0;  // right edge of the last bin (the maximum)
  std::vector<int64_t> counts;
};

struct ModalityStats {
  std::string
      name;  // "images", "image_tiles", "video_frames", "audio_seconds", "text_tokens", "vit_tokens", ...
  int64_t count = 0;    // samples
  int64_t nonzero = 0;  // samples with a non-zero value
  double sum = 0;
  double mean = 0, std = 0, min = 0, max = 0, p50 = 0, p90 = 0, p99 = 0;
  Histogram histogram;
};

struct SubsetCount {
  std::string name;
  int64_t samples = 0;
};

struct TraceStats {
  int64_t samples = 0;
  std::vector<ModalityStats>
      modalities;                    // images, image_tiles, video_frames, audio_seconds, text_tokens[, model]
  std::vector<SubsetCount> subsets;  // most samples first (ties by name)
  std::string model;                 // name of the model whose token stats were added, or empty
  // The model's max_context (0 = none) and the samples whose LLM tokens exceed it (llm_tokens above is before the
  // cut: what the data holds; simulate cuts them, core/model/model.h).
  int64_t max_context = 0, over_context = 0;
};

// Statistics of one column of values (any order; taken by value because it is sorted).
ModalityStats ComputeModalityStats(std::string name, std::vector<double> values,
                                   int bins = kDefaultHistogramBins);
// The five trace columns and the per-subset counts. bins >= 1 (smaller values are treated as 1).
TraceStats ComputeStats(const Trace& trace, int bins = kDefaultHistogramBins);
// Appends vit_tokens and llm_tokens (TokensFor from core/model/model.h) and sets `model`. Defined in its own
// translation unit (stats_model.cc) so that users of the rest do not link the model code.
void AddModelStats(TraceStats& stats, const Trace& trace, const ModelSpec& model,
                   int bins = kDefaultHistogramBins);

// A readable table: one row per modality (nonzero, mean, std, min, p50, p90, p99, max), then the subsets with
// sample counts and shares.
std::string FormatStatsText(const TraceStats& stats);
std::string StatsToJson(const TraceStats& stats);

}  // namespace mmtwin

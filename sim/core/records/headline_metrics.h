// SPDX-License-Identifier: Apache-2.0
// The headline metrics of a run and of its stages: the one list that `mmtwin compare` (sim/cli/compare_cmd.cc: its
// table and --json) and the GUI's Compare tab (gui/views.h CompareView) show, in the same order, with the same
// labels, units and formats. A new metric is one line here.
//
//   for (const HeadlineMetric& m : HeadlineMetrics())
//     std::printf("%-20s %.*f %s\n", m.label, m.decimals, m.get(summary) * m.scale, m.unit);
//   // "iteration p50 (ms)   6980.31 ms"
#pragma once

#include <cstdint>
#include <vector>

#include "core/records/records.h"

namespace mmtwin {

// Which way a change of the metric is an improvement (the GUI colours deltas by it).
enum class Better : uint8_t { kLower, kHigher, kNeither };

template <class Record>
struct RecordMetric {
  // The field's path in the record's JSON, '/'-separated ("iteration_time_us/p50"): `mmtwin compare --json`'s key.
  const char* name;
  const char* label;  // what a table shows ("iteration p50 (ms)"), with the unit where it helps
  const char* unit;   // the unit of the shown value (after `scale`): "ms", "GiB", "tokens/s", "fraction", ...
  double scale;       // shown value = raw value * scale (e.g. 1e-3: microseconds shown as ms)
  int decimals;       // the shown value's decimals
  Better better;
  double (*get)(const Record&);  // the raw value (the record's unit: us, bytes, ratio, count)
};
using HeadlineMetric = RecordMetric<RunSummary>;
using StageMetric = RecordMetric<StageRecord>;

// Iteration p50 / p99 / mean, GPU-days, tokens/s, samples/s, MFU, busy / bubble / idle / recompute / exposed comm
// ratios, recomputed layers, pad ratio, dist ratios ViT / LLM, mean batch size, OOM (1 = yes).
const std::vector<HeadlineMetric>& HeadlineMetrics();
// Per stage: layers, forward / backward / recompute ms per micro-batch, busy / bubble / idle ratios, peak memory.
const std::vector<StageMetric>& StageMetrics();

// GPU-seconds per trained sample (world size / samples per second; NaN without throughput): what a speed-up between
// two runs compares (`mmtwin sweep`'s speed-up column, `mmtwin-report policies`). GPU-days per epoch would compare
// different amounts of data where data policies leave out different numbers of samples or the traces differ.
double GpuSecondsPerSample(const RunSummary& s);
// The worst pipeline stage's planned peak memory, bytes (0 without stages).
int64_t PeakMemoryBytes(const RunSummary& s);

// "lower is better", "higher is better" or "" (kNeither).
const char* BetterName(Better b);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Published-runs validation: real GPU training runs whose measured figures were published (a paper's table, a
// framework's README) are the ground truth; the simulator predicts each figure from a scenario describing the
// run, and no backend runs (the measured figures come from the suite file). `mmtwin validate` runs such a suite
// when the file has `entries:` (scenarios/validation/README.md, "Published runs"); the write-up is the report
// library's (report/published_suite.h).
//
// The suite file (YAML):
//   name: published
//   description: ...
//   notes: ...                                   # optional
//   fit:                                         # optional: device keys fitted on the calibration entries only
//     - {key: gemm_peak_fraction, device: A100-80GB-SXM4, min: 0.4, max: 0.95, on: time}
//   entries:
//     - name: megatron-sc21-1.7b                 # unique, a plain name
//       split: calibration                       # calibration | held_out (kept here, never changed by a run)
//       source: "Narayanan et al., SC'21, Table 1, row 1.7B"
//       scenario: published/megatron-gpt-1.7b.yaml   # relative to the suite file
//       override: {parallel.pp: 2}               # optional: scenario overrides (core/scenario/scenario.h)
//       metric: tflops_per_gpu                   # see PublishedMetric
//       flops: megatron                          # tflops_per_gpu / mfu: how the source counts FLOPs (below)
//       measured: 137
//       stage: 0                                 # memory metrics only: the pipeline stage (0-based); else the worst
//       mfu_peak_flops: 989e12                   # mfu only: the peak the source divides by, when it is not the
//                                                # scenario's device peak (a part slower than the one it names)
//       note: ...                                # optional: how the figure was read
//
// Metrics, and how the prediction is read from the simulated run summary (core/records/records.h):
//   iteration_time_s       mean iteration time, seconds
//   tflops_per_gpu         FLOPs per iteration (by `flops`) / (mean iteration time x GPUs), 1e12 FLOP/s
//   mfu                    the same FLOPs / (time x GPUs x the device's peak, or mfu_peak_flops where the entry
//                          names the peak its source divided by), a fraction (0.416, not 41.6)
//   tokens_per_s_per_gpu   LLM tokens per second per GPU
//   gpu_days               GPU-days per epoch (mean iteration time x iterations in the epoch x GPUs)
//   peak_memory_gib        the stage's planned peak memory per GPU, GiB (stage -1: the worst stage)
//   remaining_memory_gib   the device's memory minus that peak, GiB (as OmniBal's Table 7 reports it)
//   fits                   1 when no stage runs out of memory (usable memory, core/cluster/cluster.h), else 0;
//                          `measured: true | false`
// FLOP counts (`flops`): `mmtwin` = the simulator's model FLOPs (MFU's, records.h; the default), `megatron` =
// Narayanan et al. (SC'21) eq. 3, 96 B s l h^2 (1 + s / 6h + V / 16 l h), which counts the recomputed forward;
// `megatron-model` = Korthikanti et al. (2022) §6, 72 B s l h^2 (1 + s / 6h + V / 12 l h), model FLOPs without
// recomputation. B = global batch (sequences), s = sequence length, l, h, V = the LLM's layers, hidden size
// and vocabulary.
//
// Fitting (honest validation): each `fit` parameter is a numeric device key (cluster.device.KEY) fitted on the
// calibration entries whose cluster's device is `device` ("" = any) and whose metric is of family `on` (time:
// the throughput and time metrics; memory: the two memory metrics) by golden-section search in [min, max],
// minimizing the mean squared log ratio predicted / measured; parameters are fitted one after the other in file
// order, each with the ones before it applied; a parameter its entries do not depend on keeps the preset's value
// (reported as not identifiable). Held-out entries never enter a fit, and the report lists every
// fitted value with the entries it saw. Every entry is predicted twice: with the presets as they are ("prior")
// and with the fitted values ("fitted").
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/records/records.h"
#include "core/scenario/scenario.h"
#include "core/util/status.h"

namespace mmtwin {

enum class PublishedMetric {
  kIterationTimeS,
  kTflopsPerGpu,
  kMfu,
  kTokensPerSPerGpu,
  kGpuDays,
  kPeakMemoryGib,
  kRemainingMemoryGib,
  kFits,
};
const char* PublishedMetricName(PublishedMetric m);
// time: iteration time and throughput metrics (scored by the time MAPE); memory: the two memory metrics; fits.
enum class MetricFamily { kTime, kMemory, kFits };
MetricFamily FamilyOf(PublishedMetric m);
const char* FamilyName(MetricFamily f);

struct PublishedEntry {
  std::string name, source, note;
  bool held_out = false;
  std::string scenario;  // resolved path
  std::vector<ScenarioOverride> overrides;
  PublishedMetric metric = PublishedMetric::kIterationTimeS;
  std::string flops = "mmtwin";  // mmtwin | megatron | megatron-model
  double measured = 0;           // fits: 1 or 0
  int stage = -1;                // memory metrics: the stage, -1 = the worst
  double mfu_peak_flops = 0;     // mfu: the peak (FLOP/s) the source's MFU is relative to; 0 = the device's
  long line = 0;                 // where the entry starts in the suite file
};

struct PublishedFitParam {
  std::string key;     // device key (cluster.device.KEY)
  std::string device;  // DeviceSpec::name the parameter applies to; "" = every device
  double min = 0, max = 0;
  MetricFamily on = MetricFamily::kTime;
};

struct PublishedSuite {
  std::string name, description, notes, path;
  std::vector<PublishedFitParam> fit;
  std::vector<PublishedEntry> entries;
};

// True when the suite file at `path` is a published-runs suite (has `entries:`); false for a measured suite
// (calibrate/validate.h) or a file that does not parse (LoadValidationSuite then names the error).
bool IsPublishedSuite(const std::string& path);
// Parses and checks the suite: names unique and plain, split and metric known, scenarios present, `stage` only
// with memory metrics, `flops` only with tflops_per_gpu / mfu, fit keys numeric device keys with min < max, at
// least one calibration entry per fitted parameter. Errors name file:line: field.
Result<PublishedSuite> LoadPublishedSuite(const std::string& path);

// FLOPs per iteration of `formula` (megatron, megatron-model) for `global_batch` sequences of `seq` tokens through
// an LLM of `layers` layers, hidden size `hidden` and vocabulary `vocab` (see above).
double PaperFlopsPerIteration(const std::string& formula, double global_batch, double seq, double layers,
                              double hidden, double vocab);

// The simulated figure of `e` from a run's summary and scenario (the model and cluster it ran with). NaN when the
// metric does not apply (a memory metric's stage out of range).
Result<double> PredictedFigure(const PublishedEntry& e, const Scenario& scenario, const RunSummary& summary);

struct PublishedResult {
  PublishedEntry entry;
  std::string device;  // the cluster's device name
  double prior = 0;    // predicted with the presets as they are
  double fitted = 0;   // predicted with the fitted parameters (= prior when nothing is fitted)
};

struct FittedParam {
  PublishedFitParam param;
  double prior = 0;                        // the preset's value (of the first matching entry's cluster)
  double value = 0;                        // fitted
  double loss_prior = 0, loss_fitted = 0;  // mean squared log ratio over the entries it was fitted on
  // False when its entries do not depend on it (the same loss over [min, max]): it keeps the preset's value.
  bool identifiable = true;
  std::vector<std::string> fitted_on;      // entry names (calibration only)
};

struct PublishedReport {
  PublishedSuite suite;
  std::vector<FittedParam> fitted;
  std::vector<PublishedResult> results;  // in file order
  std::string command;                   // the command line that produced it
};

struct PublishedOptions {
  std::string suite;
  std::string command;  // shown in the report
  // Progress, one line at a time ("[i/n] NAME ...\n"). May be empty.
  std::function<void(const std::string&)> progress;
};

// Predicts every entry with the presets, fits the suite's parameters on the calibration entries, predicts every
// entry again with them. Errors name the entry (file:line: entries[i]) whose scenario does not load or simulate.
Result<PublishedReport> ValidatePublished(const PublishedOptions& options);

// Signed relative error of a result (fitted or prior); for fits entries 0 when predicted the same way, else 1.
double PublishedError(const PublishedResult& r, bool fitted);
// MAPE of the time-family entries of a split (held_out or calibration), fitted or prior; 0 when there are none.
double PublishedMape(const PublishedReport& r, bool held_out, bool fitted);
// Fits entries predicted the same way / all fits entries (fitted model).
std::pair<int, int> FitsAgreement(const PublishedReport& r, bool fitted);

// validation.csv: one row per entry: name, split, metric, source, measured, predicted (fitted), error,
// predicted_prior, error_prior, device, scenario (relative to the suite file).
std::string PublishedCsv(const PublishedReport& r);
// fitted.csv: one row per fitted parameter: key, device, on, prior, value, loss_prior, loss_fitted, fitted_on
// (entry names joined by ';').
std::string FittedCsv(const PublishedReport& r);

}  // namespace mmtwin

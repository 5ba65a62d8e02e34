// SPDX-License-Identifier: Apache-2.0
// What-if on a recorded run (`mmtwin replay`, issue 32): a run folder's op timeline (ops.csv, simulated or
// measured by mmtwin-train) replayed through mmtwin's dependency model, then re-evaluated with idealised
// durations to attribute the step time to data imbalance, pipeline partition imbalance and slow devices.
//
// Replay. The run's scenario (scenario.yaml) is planned again (BuildPlan: the partition, recompute, schedule and
// replayed iterations the run had; a run folder's plan.json, when there, must be that plan: a run recorded under
// another plan is refused), and for every iteration of ops.csv the op graph of that plan iteration is built as
// Simulate builds it (BuildPlanIterationGraph) and given the recorded durations:
//   - ops and records are grouped by (kind, device, micro-batch, chunk, and for TP / SP collectives and ZeRO-3
//     gathers the pass); a group with as many records as graph ops takes them one to one (graph order against
//     start time); otherwise the group's recorded total is shared among its graph ops in proportion to their
//     modelled durations (a backward the graph splits into gradient-bucket pieces or FSDP units, recorded whole);
//   - compute ops (forward, backward, recompute, backward_weight) always take recorded durations; communication
//     ops (collectives, sends, gathers, dispatch) take them in a simulated run and keep their modelled durations
//     in a measured one, whose records include the waiting a blocking send or collective does
//     (ReplayOptions::measured_comm takes them anyway);
//   - records the graph has no op for are not replayed: p2p_recv and dp_wait (waiting) are counted; the
//     optimizer steps follow the graph as Simulate adds them (the slowest device's recorded step; a simulated
//     run records none: the model's);
//   - a device with no record at all (some ranks profiled) takes, op by op, the mean of its stage's recorded
//     devices for its compute (counted in `filled`; ReplayOptions::fill_unrecorded_devices);
//   - any other graph op without a record keeps its modelled duration (counted in `unmatched`).
// The replayed step (the graph's analytic time plus the optimizer step) against the recorded step (the span of
// the iteration's records, plus the model's optimizer step for a simulated run, whose records do not hold it)
// validates the dependency model on the job itself: a simulated run replays to its own step time exactly.
//
// What-ifs, each on the replayed compute durations (communication unchanged), every op's duration >= 0:
//   data        each compute op set to the mean, over its stage's DP replicas and micro-batches, of the ops of the
//               same (stage, kind, chunk): the step with balanced data (OmniBal's and OrchMLLM's question);
//   partition   per (DP replica, micro-batch, kind), every stage's compute ops scaled so that the stage's sum
//               equals the mean over the stages: balanced stages at the same total work;
//   stragglers  each device's compute durations divided by its slowdown s = the median over its compute ops of
//               duration / (the median of the same (stage, kind, chunk, micro-batch) over the DP replicas): a
//               device consistently s times slower runs at the typical speed (with two replicas the typical one
//               is their mean);
//   stalls      each stalled pass (ReplayOptions::predict: beyond the far-out fence of its (stage, chunk, kind)'s
//               recorded / modelled ratios over the run) at that key's speed x its modelled duration: the step
//               without the run's transient stalls (the replayed step when it has none);
//   ideal       stalls, then stragglers, then data, then partition.
// Attribution of each: replayed step - what-if step (what that imbalance costs this job).
//
//   MMTWIN_ASSIGN_OR_RETURN(ReplayReport r, ReplayRunFolder("runs/job", {}));
//   r.iterations[0].replayed_us;  r.iterations[0].data_us;  r.ideal_ops;  // the ideal timeline, first iteration
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/records/records.h"
#include "core/scenario/scenario.h"
#include "core/util/status.h"

namespace mmtwin {

struct ReplayOptions {
  bool measured_comm = false;  // a measured run's communication ops take their recorded durations too
  // A device with no record in an iteration (a job profiled on some ranks only: `mmtwin import-timeline` of some
  // ranks' traces) takes, for each compute op, the mean of the same op (kind, micro-batch, chunk, pass) on the
  // recorded devices of its stage; false: its modelled durations (another model's speed, when the scenario only
  // stands for the job's layout).
  bool fill_unrecorded_devices = true;
  // Predict another scenario of the same job (the same parallel layout; another data, partition, recompute or
  // schedule policy) from this run: its plan's op graphs with mmtwin's modelled durations, every compute pass
  // scaled by this run's speed of the same (stage, chunk, kind) (of the kind over all stages where the run has
  // no such pass), communication modelled, the optimizer step this run recorded (a simulated run: the model's).
  // The job's own speed, mmtwin's relative costs of the other plan's micro-batches. The speed is recorded /
  // modelled summed over the run's passes of that key in every iteration, stalls left out: a pass whose ratio
  // lies beyond Tukey's far-out fence, Q3 + 3 IQR of the key's ratios (quartiles interpolated; only with 4 or
  // more passes), ran far slower than the job's typical speed (a padded plan's largest micro-batches stalling,
  // a preemption, a throttled clock), which the other plan need not meet (ReplayReport counts them).
  const Scenario* predict = nullptr;
};

struct ReplayIteration {
  int64_t iteration = 0;   // epoch index (ops.csv's `iteration`)
  double recorded_us = 0;  // the recorded step (above)
  double replayed_us = 0;  // the recorded durations through the dependency model
  double data_us = 0;      // what-ifs (above)
  double partition_us = 0;
  double stragglers_us = 0;
  double stalls_us = 0;
  double ideal_us = 0;
  int64_t matched = 0;    // graph ops given recorded durations
  int64_t unmatched = 0;  // graph ops of non-zero modelled duration without a record (modelled duration kept)
  int64_t filled = 0;     // compute ops of devices without any record, given their stage's recorded mean
  int64_t waits = 0;      // records of waiting (p2p_recv, dp_wait), not replayed
  // Per op-graph device (DeviceMesh::Device), its slowdown s of the stragglers what-if (1 = typical; 0 = no
  // compute to judge): the heatmap of slowdown by rank and step.
  std::vector<double> device_slowdown;
};

struct ReplayReport {
  std::string run_dir;
  RecordSource source = RecordSource::kSimulated;
  ParallelConfig parallel;
  std::vector<ReplayIteration> iterations;  // in ops.csv's order of first appearance
  // Means over the iterations.
  ReplayIteration mean;
  // The first iteration under the ideal what-if, as records (Perfetto-ready; source simulated).
  std::vector<OpRecord> ideal_ops;
  int devices = 0;  // op-graph devices (DP replicas x pipeline stages x SP ranks)
  // The run's compute passes of modelled time > 0 (over all iterations), the stalls among them (passes beyond
  // their (stage, chunk, kind)'s far-out fence, ReplayOptions::predict) and their recorded time above the speed
  // of the passes kept: what the run lost to them (0 for a simulated run, whose ratios are all 1).
  int64_t speed_passes = 0;
  int64_t stalled_passes = 0;
  double stall_us = 0;
  // ReplayOptions::predict: its scenario's name and the predicted step of each of its plan's iterations, and
  // their mean (empty / 0 without).
  std::string predicted_scenario;
  std::vector<double> predicted_us;
  double predicted_mean_us = 0;
};

// Replays the run folder `dir` (scenario.yaml and ops.csv required; plan.json checked when present). Errors
// (invalid input, naming the file and, where it has one, the line): the folder's (ReadRunFolder); an iteration
// that is not one of the plan's replayed iterations; a record whose device, micro-batch or chunk is outside the
// plan's layout; a plan.json that differs from the plan the scenario gives.
Result<ReplayReport> ReplayRunFolder(const std::string& dir, const ReplayOptions& options);

}  // namespace mmtwin

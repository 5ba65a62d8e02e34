// SPDX-License-Identifier: Apache-2.0
// The one builder of what a run's summary takes from its plan, shared by simulated runs (Simulate, simulate.h) and
// measured ones (the backend's MeasuredSummary, backend/measure.h): each adds only what it timed.
//
//   RunSummary s = PlannedRunSummary(run, RecordSource::kMeasured, "libtorch-gloo", iteration_us);
//   for (const PlanStage& ps : PlanStages(run)) { StageRecord st = PlannedStageRecord(ps); /* + timings */ }
#pragma once

#include <string>
#include <vector>

#include "core/records/records.h"
#include "driver/planner.h"

namespace mmtwin {

// The summary's header and iteration times: source, scenario, model, cluster, engine, parallel layout, the four
// policies, trace samples, iterations in the epoch and replayed (= iteration_us.size()), the iteration-time
// statistics with their 95% interval (IterationTimeStatsOf, core/records/records.h), the epoch projection
// (epoch_time_s = mean iteration time x iterations in the epoch, gpu_days = epoch_time_s x GPUs / 86400), the data
// policy's and the partition's metrics, the recomputed layers, and how an if_larger vision encoder priced the
// trace's images (images_at_upper_bound, image_sizes: from SampleTokens over the whole trace). `iteration_us`: one time per replayed (or
// measured) iteration, microseconds. Left for the caller: the time split, dispatch, throughput, MFU, OOM, stages.
RunSummary PlannedRunSummary(const PlannedRun& run, RecordSource source, const std::string& engine,
                             const std::vector<double>& iteration_us);

// The planned side of a stage's record: stage, layer range and labels, layers, params, recomputed layers, and the
// planned memory (model state, peak activation, peak, capacity, fits). Timing fields are left zero for the caller.
StageRecord PlannedStageRecord(const PlanStage& ps);

}  // namespace mmtwin

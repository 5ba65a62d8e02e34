// Measured run records (no Torch): what rank 0 makes of the ops every rank timed, in the simulator's schema
// (core/records/records.h) with source "measured", and the per-layer profile (the calibration input).
//
// Time split of a device (one TP group) over an iteration, measured:
//   busy           forward, backward, recompute and optimizer ops
//   bubble         waiting in a pipeline receive (p2p_recv ops: the neighbour had not sent yet)
//   exposed comm   waiting for the DP gradient collectives after the last backward (the part not overlapped)
//   idle           the rest: waiting for the slowest rank at the iteration's end, and the backend's own work
// Iteration time: from the earliest start to the latest end over every rank (clocks aligned to rank 0's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/driver/planner.h"
#include "core/records/records.h"

namespace mmtwin::backend {

// One layer of one micro-batch on one rank, measured (layers.csv).
struct LayerProfile {
  int64_t iteration = 0;
  int32_t device = 0, micro_batch = 0, layer = 0;
  int64_t tokens = 0;  // positions the layer processes (encoder positions, or LLM tokens)
  int32_t spans = 0;   // attention spans (tiles / frames / windows, or samples)
  double attention_pairs = 0;
  double fwd_us = 0, bwd_us = 0, recompute_us = 0;
};

// layers.csv: `# mmtwin-layers v1`, header iteration,device,micro_batch,layer,label,kind,tokens,spans,
// attention_pairs,fwd_us,bwd_us,recompute_us.
std::string LayersCsv(const std::vector<LayerProfile>& rows, const std::vector<Layer>& layers);

// Per rank and iteration: its peak allocated bytes (the counting allocator).
struct RankMemory {
  int rank = 0;
  int64_t peak_bytes = 0;
};

// The measured summary of the iterations so far. `ops` are every measured op (all iterations, start_us relative
// to each iteration's start), `iteration_us` one entry per measured iteration, `peak_bytes_per_stage` the largest
// peak of any rank of each pipeline stage. `engine`: "libtorch-gloo" or "libtorch-nccl".
RunSummary MeasuredSummary(const PlannedRun& run, const std::vector<OpRecord>& ops,
                           const std::vector<double>& iteration_us,
                           const std::vector<int64_t>& peak_bytes_per_stage, int warmup_iterations,
                           const std::string& engine);

// Writes RUNDIR as a unit (core/util/atomic_dir.h): summary.json, stages.csv, ops.csv (every measured op),
// trace.json (Perfetto, the last measured iteration), layers.csv, plan.json, scenario.yaml.
Status WriteMeasuredRun(const std::string& rundir, const PlannedRun& run, const RunSummary& summary,
                        const std::vector<OpRecord>& ops, const std::vector<LayerProfile>& layers);

}  // namespace mmtwin::backend

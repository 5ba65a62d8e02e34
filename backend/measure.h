// SPDX-License-Identifier: Apache-2.0
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

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/records/layer_timings.h"
#include "core/records/records.h"
#include "driver/planner.h"

namespace mmtwin::backend {

// The measured summary of the iterations so far: what the plan gives (PlannedRunSummary, driver/run_summary.h:
// header, iteration-time statistics, epoch projection) and the time split, throughput and stages of the ops. `ops` are every measured op (all iterations, start_us relative
// to each iteration's start), `iteration_us` one entry per measured iteration, `peak_bytes_per_stage` the largest
// peak of any rank of each pipeline stage. `engine`: "libtorch-gloo" or "libtorch-nccl".
RunSummary MeasuredSummary(const PlannedRun& run, const std::vector<OpRecord>& ops,
                           const std::vector<double>& iteration_us,
                           const std::vector<int64_t>& peak_bytes_per_stage, const std::string& engine);

// Writes RUNDIR as a unit (RunFolderWriter, core/records/run_folder.h): the summary and its stages, every measured
// op, the Perfetto trace of the last measured iteration, the per-layer timings, the plan and the scenario.
Status WriteMeasuredRun(const std::string& rundir, const PlannedRun& run, const RunSummary& summary,
                        const std::vector<OpRecord>& ops, const std::vector<LayerTiming>& layers);

// One measured iteration as rank 0 merged it from every rank.
struct MeasuredIteration {
  std::vector<OpRecord> ops;  // every rank's ops, start_us relative to the iteration's start
  std::vector<LayerTiming> layers;
  double iteration_us = 0;                    // earliest start to latest end over every rank
  std::vector<int64_t> peak_bytes_per_stage;  // the largest peak of any rank of each stage so far
};

// Keeps RUNDIR current off the training thread. Add() hands an iteration over and returns at once; a writer
// thread appends it to everything measured so far and rewrites RUNDIR as a unit (WriteMeasuredRun). Iterations
// that arrive while a write is under way are written together by the next one, so a slow disk costs records
// that lag, never training time. Flush() returns once every added iteration is in RUNDIR; the destructor
// flushes. RUNDIR is at every moment the complete records of some prefix of the added iterations.
// `run` must outlive the writer. Thread-safe: Add / Flush / writes from any thread.
class RecordWriter {
 public:
  // `machine`: where the run runs (machine.h), written into every summary with the load of that moment as its
  // end load.
  RecordWriter(std::string rundir, const PlannedRun& run, std::string engine, MachineRecord machine = {});
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Returns the first write error so far (ok when none), without waiting.
  Status Add(MeasuredIteration it);
  // Waits until every added iteration is written, or `timeout` has passed (then a "still writing" error); the
  // first write error otherwise.
  Status Flush(std::chrono::milliseconds timeout = std::chrono::hours(24));
  int64_t writes() const;      // rewrites of RUNDIR so far (fewer than iterations when writes were coalesced)
  int64_t iterations() const;  // iterations in RUNDIR

 private:
  void Loop();

  const std::string rundir_;
  const PlannedRun& run_;
  const std::string engine_;
  const MachineRecord machine_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::vector<MeasuredIteration> pending_;
  bool busy_ = false, stop_ = false;
  Status first_error_;
  int64_t writes_ = 0, written_iterations_ = 0;
  // Writer thread only: everything measured so far.
  std::vector<OpRecord> all_ops_;
  std::vector<LayerTiming> all_layers_;
  std::vector<double> iteration_us_;
  std::vector<int64_t> peak_bytes_per_stage_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace mmtwin::backend

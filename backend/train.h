// SPDX-License-Identifier: Apache-2.0
// mmtwin-train: the real backend's entry points (no Torch types here; backend/rank.cc and the parts it composes
// hold the LibTorch code, backend/README.md "How a rank is built").
//
// A job is N processes, one per rank of the plan's device mesh (core/plan/mesh.h: global rank = tp + TP * (dp +
// DP * pp)). Rank 0 plans the scenario with the public planner (BuildPlan) and hands the plan (PlanToJson) and
// the shapes of the plan's samples to every rank through the c10d TCPStore, so the trace is read once and no
// rank re-plans. Every rank then runs the plan's replayed iterations (after `backend.warmup_iterations`
// unmeasured ones): its pipeline rank's schedule in order, activations and gradients over c10d send / recv,
// recompute per layer as the plan says, DP gradient all-reduce per chunk bucket as soon as the chunk's last
// backward is done (overlapping the other chunks' backwards), AdamW. Every op is timed; rank 0 gathers the
// ops after every iteration, aligns the clocks and hands them to the measured records' writer thread
// (backend/measure.h: RecordWriter), which it flushes before it exits, also on SIGTERM / SIGINT / SIGHUP.
//
//   Rendezvous from the environment (torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; srun:
//   SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and MASTER_ADDR / MASTER_PORT), or from `mmtwin-train launch`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "core/util/status.h"

namespace mmtwin::backend {

struct Rendezvous {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// torchrun's variables first, then Slurm's; MASTER_ADDR / MASTER_PORT from the environment (defaults
// 127.0.0.1:29500). Errors name the variable ("RANK: 'x' is not an integer in [0, WORLD_SIZE)").
Result<Rendezvous> RendezvousFromEnv();

struct TrainOptions {
  std::string scenario;  // the scenario file
  std::string rundir;    // where rank 0 writes the measured run records
  // Tests and benchmarks:
  std::string dump_grads;  // folder: every rank writes grads.rankR.bin (its parameters' gradients and the
                           // loss after the first measured iteration's backward, before the optimizer step)
  int iterations = 0;      // measured iterations (0: the plan's replayed iterations)
  bool measure = true;     // false: no per-op timing (the benchmark's "measurement off")
  int die_rank = -1;       // fault injection: this rank kills itself (SIGKILL) ...
  int die_iteration = -1;  // ... at the start of this measured iteration
  int hang_rank = -1;      // fault injection: this rank stops answering at the start of die_iteration
  // Link calibration instead of training: rank 0 exchanges messages of 4 KiB .. 64 MiB (x4 steps) with every
  // other rank in turn (3 warm-up and `pingpong_reps` timed round trips per size) and writes RUNDIR/pingpong.csv
  // (core/records/pingpong.h) and scenario.yaml as a unit; `mmtwin calibrate --links RUNDIR` fits them.
  bool pingpong = false;
  int pingpong_reps = 20;
};

// One rank of a job: exit code 0 ok, 2 bad scenario, 3 a peer failed or timed out (the message names the rank
// and op), 1 other errors. Messages go to `err` prefixed with "mmtwin-train rank R: ".
int RunRank(const TrainOptions& options, const Rendezvous& rv, std::ostream& out, std::ostream& err);

// The single-process reference: the same plan's first replayed iteration (every DP rank's micro-batches) run
// through the whole model as one autograd graph per micro-batch, no recompute, no communication; writes
// DIR/grads.ref.bin in the format of TrainOptions::dump_grads. Micro-batches are padded when the plan says so
// (Plan::packed false), unless `force_packed`. Exit codes as RunRank.
int RunReference(const std::string& scenario, const std::string& dir, std::ostream& out, std::ostream& err,
                 bool force_packed = false);

}  // namespace mmtwin::backend

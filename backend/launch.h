// SPDX-License-Identifier: Apache-2.0
// `mmtwin-train launch`: start N local ranks like `torchrun --standalone --nproc-per-node N` (no Torch here).
//
// Before any process starts, the scenario is checked (LoadScenario with CheckScenario, CheckBackendScenario): a
// bad one exits 2 with file:line: field. Then a free port is picked for the c10d TCPStore, N children run
// `mmtwin-train run` with RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT set, and the launcher
// watches them: when one exits non-zero or dies by a signal, the others get SIGTERM and, after a grace of
// 5 s, SIGKILL; the launcher names the first failing rank and what it (and every rank still running) was doing
// ($MMTWIN_STATUS_DIR/rankR, a temporary folder) and exits 1 (3 when a rank reported a peer failure first).
// A watchdog stops the job the same way (exit 1, "no rank made progress") when no rank has rewritten its status
// line for 2 x backend.timeout_s + 5 s, so a hang no peer times out on still ends. SIGINT / SIGTERM to the
// launcher end every rank the same way (exit 128 + signal).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/scenario/scenario.h"
#include "core/util/status.h"

namespace mmtwin::backend {

// What the backend cannot run, refused before any process starts: a world size other than dp * tp * pp
// (`world_size`, when > 0, names where it came from in `world_source`, e.g. "--nproc"), tp > 1 (not yet),
// zero_stage > 1, a model whose projector downsample is not an integer, tp not dividing the heads.
Status CheckBackendScenario(const Scenario& s, int world_size, const std::string& world_source);

struct LaunchOptions {
  int nproc = 1;
  std::string scenario, rundir;
  std::vector<std::string> rank_args;  // passed to every `mmtwin-train run` after SCENARIO -o RUNDIR
};

// Returns the exit code (0 all ranks succeeded).
int Launch(const LaunchOptions& o, const std::string& self_exe, std::ostream& out, std::ostream& err);

}  // namespace mmtwin::backend

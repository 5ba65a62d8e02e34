// SPDX-License-Identifier: Apache-2.0
// The machine a measured run ran on (core/records/records.h MachineRecord), Torch-free: the host, its CPU and
// its load. Rank 0 fills the rest (ranks, threads, GPU, driver, LibTorch version) and the record writer
// (measure.h) refreshes the load at every write.
#pragma once

#include "core/records/records.h"

namespace mmtwin::backend {

// Host name, /proc/cpuinfo's first "model name", logical CPUs, and the 1-minute load average now as both the
// start and the end load (getloadavg(3); -1 where unavailable).
MachineRecord ThisMachine();

// getloadavg(3)'s 1-minute figure, -1 when unavailable.
double LoadAverage1m();

}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// SIGINT / SIGTERM as a cancellation flag, so a long command (simulate, sweep) can finish or abandon its work
// cleanly instead of dying half-way: the CLI installs the handlers, passes InterruptFlag() as the `cancel` flag of
// BuildPlan / Simulate / RunSweep, and on return reports the interruption and exits 128 + signal.
//
//   InstallInterruptHandlers();
//   opts.cancel = InterruptFlag();
//   ...
//   if (Interrupted()) return 128 + InterruptSignal();
//
// A second signal a second or more after the first restores the default action and re-raises it (the process
// dies at once; outputs written with core/util/atomic_dir.h stay whole); one within the second counts as the
// same request delivered twice (to the process and to its group). Forked children (SimGrid isolation,
// sweep workers) call RestoreDefaultSignals() so they do not inherit the flag-only handler. Library code only
// reads the flag; it never installs handlers or exits.
#pragma once

#include <atomic>

namespace mmtwin {

void InstallInterruptHandlers();
// Default SIGINT / SIGTERM actions (for a forked child).
void RestoreDefaultSignals();
// True once SIGINT or SIGTERM arrived after InstallInterruptHandlers (never true without the handlers).
const std::atomic<bool>* InterruptFlag();
bool Interrupted();
int InterruptSignal();  // the signal that set the flag (SIGINT or SIGTERM), 0 when none
// "SIGINT" / "SIGTERM" / "signal N".
const char* InterruptSignalName();

}  // namespace mmtwin

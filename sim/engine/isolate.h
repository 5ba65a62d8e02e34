// SPDX-License-Identifier: Apache-2.0
// Runs a piece of work in a forked child process and brings its result back, so that a library that aborts
// the process (SimGrid's xbt_die) or keeps global state (SimGrid's singleton engine) cannot harm the caller.
//
// Protocol: before fork(), the parent maps a shared anonymous region (MAP_SHARED | MAP_ANONYMOUS) holding a
// header {done flag, status code, error kind, error message (4 KiB)} and `result_bytes` of result space, and opens a
// pipe. The child points its stdout and stderr at the pipe, runs `work(result)`, stores the returned Status
// in the header, sets done and leaves with _exit(0) (no destructors, no atexit handlers). The parent drains
// the pipe (keeping its last 4 KiB) until end of file, then waitpid()s. Success = exit status 0, done set and
// an OK status; the result region is then copied to `result_out`. Otherwise an Error: the child's own error
// message, or "the SimGrid process was killed by signal N (name)" / "exited with status N", followed by the
// last lines the child printed. With timeout_s > 0 a child still running after that many seconds is killed
// (SIGKILL). After SIGINT / SIGTERM (core/util/interrupt.h: the flag is polled every 250 ms) the child is killed
// and the Error is Error::Cancelled(); the child restores the default signal actions.
//
// Error kinds: the child's own error keeps its kind (the header carries it); a child that died, exited non-zero
// or ran past the timeout, and a failed mmap / pipe / fork, are kExternal.
//
// The child inherits the parent's memory copy-on-write: inputs need no serialization.
//
//   std::vector<double> out(n);
//   MMTWIN_RETURN_IF_ERROR(RunIsolated(
//       n * sizeof(double), [&](void* r) { return Work(static_cast<double*>(r)); }, 0, out.data()));
#pragma once

#include <cstddef>
#include <functional>

#include "core/util/status.h"

namespace mmtwin {

Status RunIsolated(size_t result_bytes, const std::function<Status(void* result)>& work, double timeout_s,
                   void* result_out);

}  // namespace mmtwin

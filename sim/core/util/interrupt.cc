// SPDX-License-Identifier: Apache-2.0
// SIGINT / SIGTERM as a cancellation flag; see interrupt.h.
#include "core/util/interrupt.h"

#include <signal.h>

#include <time.h>
#include <cstdint>

namespace mmtwin {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
std::atomic<int64_t> g_first_ms{0};

int64_t NowMs() {  // clock_gettime is async-signal-safe
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

extern "C" void OnInterrupt(int sig) {
  if (g_interrupted.exchange(true)) {
    // A second signal a second or more after the first (Ctrl-C again): die now with the default action. One
    // within the second is the same request delivered twice (GNU timeout signals the process and then its
    // group; a terminal signals the whole foreground group) and is ignored.
    if (NowMs() - g_first_ms.load() < 1000) return;
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  g_first_ms.store(NowMs());
  g_signal.store(sig);
}

}  // namespace

void InstallInterruptHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll/read returns EINTR so the flag is seen at once
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

void RestoreDefaultSignals() {
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
}

const std::atomic<bool>* InterruptFlag() { return &g_interrupted; }
bool Interrupted() { return g_interrupted.load(); }
int InterruptSignal() { return g_signal.load(); }

const char* InterruptSignalName() {
  switch (g_signal.load()) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case 0:
      return "no signal";
    default:
      return "a signal";
  }
}

}  // namespace mmtwin

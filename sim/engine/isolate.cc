// SPDX-License-Identifier: Apache-2.0
// Fork-and-collect; see isolate.h for the protocol.
#include "engine/isolate.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <string>

#include "core/util/interrupt.h"

namespace mmtwin {
namespace {

constexpr size_t kMessageBytes = 4096;
constexpr size_t kOutputKeep = 4096;

struct Header {
  int done = 0;
  int ok = 0;
  int kind = 0;  // the child's ErrorKind, so that the parent's error has the kind the work's error had
  char message[kMessageBytes] = {};
};

size_t HeaderBytes() { return (sizeof(Header) + 63) / 64 * 64; }

std::string Tail(const std::string& out) {
  if (out.empty()) return "";
  std::string t = out.size() > kOutputKeep ? "..." + out.substr(out.size() - kOutputKeep) : out;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return "; its last output:\n" + t;
}

}  // namespace

Status RunIsolated(size_t result_bytes, const std::function<Status(void* result)>& work, double timeout_s,
                   void* result_out) {
  const size_t total = HeaderBytes() + result_bytes;
  void* mem = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return Error::External(std::string("simgrid engine: mmap failed: ") + std::strerror(errno));
  auto* header = new (mem) Header();
  void* result = static_cast<char*>(mem) + HeaderBytes();
  int fds[2];
  if (pipe(fds) != 0) {
    munmap(mem, total);
    return Error::External(std::string("simgrid engine: pipe failed: ") + std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    munmap(mem, total);
    return Error::External(std::string("simgrid engine: fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {             // child
    RestoreDefaultSignals();  // a Ctrl-C to the process group ends the SimGrid process at once
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    Status s;
    try {
      s = work(result);
    } catch (const std::exception& e) {
      s = Error::External(std::string("simgrid engine: SimGrid raised: ") + e.what());
    } catch (...) {
      s = Error::External("simgrid engine: SimGrid raised an unknown exception");
    }
    if (!s.ok()) {
      const std::string& m = s.error().message();
      std::memcpy(header->message, m.data(), std::min(m.size(), kMessageBytes - 1));
      header->kind = static_cast<int>(s.error().kind());
    }
    header->ok = s.ok() ? 1 : 0;
    __atomic_store_n(&header->done, 1, __ATOMIC_RELEASE);
    _exit(0);
  }
  // parent
  close(fds[1]);
  std::string output;
  bool timed_out = false;
  bool interrupted = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  for (;;) {
    // SIGINT / SIGTERM to this process (core/util/interrupt.h): stop the SimGrid process and report "cancelled".
    if (Interrupted()) {
      interrupted = true;
      kill(pid, SIGKILL);
      break;
    }
    int wait_ms = 250;  // re-check the interrupt flag at least this often
    if (timeout_s > 0) {
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        kill(pid, SIGKILL);
        break;
      }
      wait_ms = static_cast<int>(std::min(left * 1000 + 1, 250.0));
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;  // re-check the deadline
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end of file: the child is gone
    output.append(buf, static_cast<size_t>(got));
    if (output.size() > 4 * kOutputKeep) output.erase(0, output.size() - kOutputKeep);
  }
  close(fds[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  Status out;
  if (interrupted || (Interrupted() && WIFSIGNALED(wstatus))) {
    out = Error::Cancelled();
  } else if (timed_out) {
    out = Error::External("simgrid engine: the SimGrid process ran past the " + std::to_string(timeout_s) +
                          " s limit and was stopped" + Tail(output));
  } else if (__atomic_load_n(&header->done, __ATOMIC_ACQUIRE) && WIFEXITED(wstatus) &&
             WEXITSTATUS(wstatus) == 0) {
    if (header->ok) {
      if (result_bytes > 0) std::memcpy(result_out, result, result_bytes);
    } else {
      header->message[kMessageBytes - 1] = 0;
      out = Error(std::string(header->message) + Tail(output), static_cast<ErrorKind>(header->kind));
    }
  } else if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    out = Error::External("simgrid engine: the SimGrid process was killed by signal " + std::to_string(sig) +
                          " (" + strsignal(sig) + ")" + Tail(output));
  } else {
    out = Error::External("simgrid engine: the SimGrid process exited with status " +
                          std::to_string(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1) + Tail(output));
  }
  munmap(mem, total);
  return out;
}

}  // namespace mmtwin

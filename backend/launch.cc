// SPDX-License-Identifier: Apache-2.0
// `mmtwin-train launch` (launch.h).
#include "backend/launch.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/util/atomic_dir.h"
#include "core/util/interrupt.h"
#include "driver/planner.h"

namespace mmtwin::backend {

Status CheckBackendScenario(const Scenario& s, int world_size, const std::string& world_source) {
  const ParallelConfig& p = s.parallel;
  if (world_size > 0 && world_size != p.world_size())
    return Error(world_source + ": " + std::to_string(world_size) +
                 " processes, but the scenario's dp * tp * pp = " + std::to_string(p.dp) + " * " +
                 std::to_string(p.tp) + " * " + std::to_string(p.pp) + " = " +
                 std::to_string(p.world_size()) + " (" + (s.path.empty() ? s.name : s.path) + ": parallel)");
  MMTWIN_ASSIGN_OR_RETURN(ModelSpec m, LoadScenarioModel(s));
  // Tensor parallelism splits heads, KV heads and the FFN of every transformer block (backend/model.h).
  for (const Component& c : m.components) {
    if (c.tf.layers <= 0 || p.tp <= 1) continue;
    if (c.tf.heads % p.tp != 0 || c.tf.kv_heads % p.tp != 0)
      return ScenarioError(s, "parallel.tp",
                           std::to_string(p.tp) + " does not divide the " + std::to_string(c.tf.heads) +
                               " heads / " + std::to_string(c.tf.kv_heads) + " KV heads of '" + c.name +
                               "' (after backend.width_divisor)");
    if (c.tf.ffn % p.tp != 0)
      return ScenarioError(s, "parallel.tp",
                           std::to_string(p.tp) + " does not divide the FFN width " +
                               std::to_string(c.tf.ffn) + " of '" + c.name +
                               "' (after backend.width_divisor)");
    if (c.tf.qk_norm)
      return ScenarioError(s, "parallel.tp",
                           "'" + c.name +
                               "' normalizes Q and K over all heads (QK norm); the backend splits it "
                               "only with tp 1");
  }
  if (p.zero_stage > 1) return ScenarioError(s, "parallel.zero_stage", "the backend runs ZeRO stage 0 or 1");
  if (!s.frozen.empty())
    return ScenarioError(s, "model.frozen",
                         "the backend trains every component; frozen components are simulated only (mmtwin "
                         "simulate)");
  if (p.tp_comm_overlap && p.tp > 1)
    return ScenarioError(s, "parallel.tp_comm_overlap",
                         "the backend runs a block's TP collectives between its GEMMs (no Transformer Engine "
                         "userbuffers); the overlap is simulated only (mmtwin simulate)");
  if (p.sp > 1)
    return ScenarioError(s, "parallel.sp",
                         "the backend does not run sequence parallelism (sp " + std::to_string(p.sp) +
                             "); it is simulated only (mmtwin simulate)");
  if (s.encoder.name != "pipeline")
    return ScenarioError(s, "policies.encoder",
                         "the backend runs the encoders in the pipeline's first stage; '" + s.encoder.name +
                             "' is simulated only (mmtwin simulate)");
  if (s.schedule.name != "gpipe" && s.schedule.name != "1f1b" && s.schedule.name != "interleaved-1f1b")
    return ScenarioError(s, "policies.schedule",
                         "the backend runs gpipe, 1f1b and interleaved-1f1b, not '" + s.schedule.name +
                             "' (it does not split the backward into input and weight gradients)");
  for (size_t i = 0; i < m.components.size(); ++i) {
    const Component& c = m.components[i];
    if (c.kind != ComponentKind::kProjector) continue;
    const int e = EncoderOfProjector(m, static_cast<int>(i));
    if (e < 0) continue;
    const Component& enc = m.components[e];
    if (DownsampleFactor(enc) == 0)
      return ScenarioError(s, "model",
                           "the backend needs a whole number of encoder positions per LLM token for '" +
                               enc.name + "' (llm_tokens_per_unit)");
    const int64_t want = DownsampleFactor(enc) * enc.tf.hidden;
    if (c.projector_dims.front() != want)
      return ScenarioError(s, "model",
                           "projector '" + c.name + "' takes " + std::to_string(c.projector_dims.front()) +
                               " inputs, but " + std::to_string(DownsampleFactor(enc)) + " x '" + enc.name +
                               "' hidden " + std::to_string(enc.tf.hidden) + " = " + std::to_string(want));
  }
  return Status();
}

namespace {

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  int port = 29500;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string RankStatus(const std::string& dir, int r) {
  std::ifstream in(dir + "/rank" + std::to_string(r));
  std::string line;
  std::getline(in, line);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line.empty() ? "not started" : line;
}

std::string Describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return std::string("was killed by signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended";
}

}  // namespace

int Launch(const LaunchOptions& o, const std::string& self_exe, std::ostream& out, std::ostream& err) {
  auto scenario = LoadScenario(o.scenario);
  if (!scenario) {
    err << "mmtwin-train: " << scenario.error().message() << "\n";
    return 2;
  }
  if (Status st = CheckBackendScenario(*scenario, o.nproc, "launch: --nproc"); !st.ok()) {
    err << "mmtwin-train " << st.error().message() << "\n";
    return 2;
  }
  InstallInterruptHandlers();
  const int port = FreePort();
  // Where the ranks say what they are doing (one line each), for the failure message; removed at the end.
  char tmpl[] = "/tmp/mmtwin-train-XXXXXX";
  const char* made = ::mkdtemp(tmpl);
  const std::string status_dir = made ? made : "";
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      if (!dir.empty()) (void)RemoveTree(dir);  // not std::filesystem (core/util/atomic_dir.h says why)
    }
  } cleanup{status_dir};
  std::vector<pid_t> pids(o.nproc, -1);
  for (int r = 0; r < o.nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      err << "mmtwin-train: launch: fork failed: " << std::strerror(errno) << "\n";
      for (pid_t p : pids)
        if (p > 0) ::kill(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      RestoreDefaultSignals();
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("MMTWIN_STATUS_DIR", status_dir.c_str(), 1);
      std::vector<std::string> args = {"mmtwin-train", "run", o.scenario, "-o", o.rundir};
      args.insert(args.end(), o.rank_args.begin(), o.rank_args.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(self_exe.c_str(), argv.data());
      std::fprintf(stderr, "mmtwin-train: launch: cannot run %s: %s\n", self_exe.c_str(),
                   std::strerror(errno));
      ::_exit(127);
    }
    pids[r] = pid;
  }
  out << "mmtwin-train: launched " << o.nproc << " ranks (c10d store on 127.0.0.1:" << port << ")\n";
  out.flush();

  using Clock = std::chrono::steady_clock;
  int running = o.nproc, first_failed = -1, first_status = 0, code = 0;
  std::vector<std::string> failure_status(o.nproc);
  Clock::time_point kill_at{};
  bool terminating = false, stalled = false;
  const auto stall_limit = std::chrono::duration<double>(2 * scenario->backend.timeout_s + 5);
  Clock::time_point last_progress = Clock::now(), next_check = Clock::now();
  std::filesystem::file_time_type last_progress_file{};
  auto terminate_all = [&] {
    if (terminating) return;
    terminating = true;
    for (int r = 0; r < o.nproc; ++r)
      if (pids[r] > 0) {
        failure_status[r] = RankStatus(status_dir, r);
        ::kill(pids[r], SIGTERM);
      }
    kill_at = Clock::now() + std::chrono::seconds(5);
  };
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < o.nproc; ++r)
        if (pids[r] == pid) {
          pids[r] = -1;
          --running;
          const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
          if (!ok && first_failed < 0 && !terminating) {
            first_failed = r;
            first_status = status;
            failure_status[r] = RankStatus(status_dir, r);
            terminate_all();
          }
        }
      continue;
    }
    if (Interrupted() && !terminating) {
      code = 128 + InterruptSignal();
      terminate_all();
    }
    // Watchdog: every rank rewrites its status line at each op; when none has for twice the timeout (a hang
    // that no peer's receive or collective timed out on), the job is stopped.
    if (!terminating && Clock::now() > next_check) {
      next_check = Clock::now() + std::chrono::seconds(1);
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(status_dir, ec)) {
        const auto t = std::filesystem::last_write_time(e.path(), ec);
        if (!ec && t > last_progress_file) {
          last_progress_file = t;
          last_progress = Clock::now();
        }
      }
      if (Clock::now() - last_progress > stall_limit) {
        stalled = true;
        terminate_all();
      }
    }
    if (terminating && Clock::now() > kill_at)
      for (pid_t p : pids)
        if (p > 0) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (code != 0) {
    err << "mmtwin-train: interrupted (" << InterruptSignalName() << "); every rank was stopped\n";
    return code;
  }
  if (stalled && first_failed < 0) {
    err << "mmtwin-train: no rank made progress for "
        << static_cast<int64_t>(std::chrono::duration<double>(stall_limit).count())
        << " s (2 x backend.timeout_s + 5 s); the job was stopped\n";
    for (int r = 0; r < o.nproc; ++r)
      err << "mmtwin-train:   rank " << r << " was " << failure_status[r] << "\n";
    return 1;
  }
  if (first_failed < 0) return 0;
  err << "mmtwin-train: rank " << first_failed << " " << Describe(first_status) << " while "
      << failure_status[first_failed] << "; the job was stopped\n";
  for (int r = 0; r < o.nproc; ++r)
    if (r != first_failed && !failure_status[r].empty())
      err << "mmtwin-train:   rank " << r << " was " << failure_status[r] << "\n";
  return WIFEXITED(first_status) && WEXITSTATUS(first_status) == 3 ? 3 : 1;
}

}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// Sweep execution: a pool of forked workers (one process per run), results read back over pipes as JSON and
// written by this process only. A worker ends with _exit() so that it never flushes or closes anything it
// inherited (stdio buffers, the database connection).
#include "sweep/runner.h"

#include <nlohmann/json.hpp>

#include "core/records/records_codec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "core/util/csv.h"
#include "core/util/interrupt.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

using Clock = std::chrono::steady_clock;

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Child side: evaluate, write {"ok": true, "summary": ...} or {"ok": false, "error": "..."} to fd, _exit.
[[noreturn]] void WorkerMain(int fd, const SweepRun& run, const RunFunction& fn) {
  nlohmann::json reply;
  try {
    auto r = fn(run.scenario);
    if (r)
      reply = {{"ok", true}, {"summary_json", SummaryToJson(*r)}};
    else
      reply = {{"ok", false}, {"error", r.error().message()}};
  } catch (const std::exception& e) {
    reply = {{"ok", false}, {"error", std::string("exception: ") + e.what()}};
  } catch (...) {
    reply = {{"ok", false}, {"error", "unknown exception"}};
  }
  const std::string text = reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  ::_exit(0);
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;
  std::shared_ptr<const SweepRun> run;
  std::string buffer;
  Clock::time_point start;
};

std::string DescribeStatus(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "worker killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  }
  if (WIFEXITED(status)) return "worker exited with status " + std::to_string(WEXITSTATUS(status));
  return "worker ended abnormally";
}

}  // namespace

Result<RunSummary> RunScenario(const Scenario& scenario, const EngineOptions& engine,
                               std::shared_ptr<const PreparedData> prepared) {
  SimulateOptions opts;
  opts.engine = engine;
  opts.prepared = std::move(prepared);
  opts.trace_dp_replicas = 1;  // the sweep keeps summaries only
  MMTWIN_ASSIGN_OR_RETURN(SimulationResult r, Simulate(scenario, opts));
  return std::move(r.summary);
}

Status ParseShard(const std::string& text, int& shard, int& shards) {
  const size_t slash = text.find('/');
  int64_t i = 0, n = 0;
  if (slash == std::string::npos || !ParseInt64(text.substr(0, slash), i) ||
      !ParseInt64(text.substr(slash + 1), n) || n < 1 || n > 1000000 || i < 0 || i >= n)
    return Error("--shard: '" + text + "' is not i/N with 0 <= i < N (e.g. 0/4)");
  shard = static_cast<int>(i);
  shards = static_cast<int>(n);
  return Status();
}

std::string DefaultSession() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + std::to_string(std::time(nullptr));
}

namespace {

// The runs of a sweep, by index (ExpandRun, or a vector the caller built).
using RunSource = std::function<SweepRun(int64_t)>;

Result<SweepOutcome> RunSweepFrom(const SweepSpec& spec, int64_t count, const RunSource& source,
                                  ResultsDb& db, const SweepRunOptions& o) {
  // The trace and data plan the parent prepared for the runs being launched (consecutive runs with one
  // PreparedDataKey); a forked worker inherits it.
  std::shared_ptr<const PreparedData> prepared;
  const bool share = !o.run && o.share_prepared;
  const RunFunction fn =
      o.run ? o.run : RunFunction([&prepared](const Scenario& s) { return RunScenario(s, {}, prepared); });
  const std::string session = o.session.empty() ? DefaultSession() : o.session;
  const int jobs = std::max(1, o.jobs);

  // Resume: runs recorded ok under the same sweep digest are skipped by index without expanding them; others
  // are expanded and skipped when their key is recorded ok (by this or any other sweep).
  const std::string digest = SweepDigest(spec);
  std::set<int64_t> done_index;
  {
    MMTWIN_ASSIGN_OR_RETURN(std::vector<SweepInfo> sweeps, db.Sweeps());
    for (const SweepInfo& info : sweeps)
      if (info.name == spec.name && info.digest == digest) {
        MMTWIN_ASSIGN_OR_RETURN(done_index, db.OkIndices(spec.name));
      }
  }
  std::string axes_json = "[";
  for (size_t i = 0; i < spec.axes.size(); ++i) axes_json += (i ? ", \"" : "\"") + spec.axes[i].name + "\"";
  axes_json += "]";
  MMTWIN_RETURN_IF_ERROR(db.PutSweep({spec.name, spec.path, axes_json, static_cast<int>(count), digest}));
  MMTWIN_ASSIGN_OR_RETURN(std::set<std::string> done, db.OkKeys());

  SweepOutcome out;
  int64_t shard_runs = 0;  // runs of this shard, duplicates included
  for (int64_t i = 0; i < count; ++i) shard_runs += InShard(static_cast<int>(i), o.shard, o.shards) ? 1 : 0;
  std::set<std::string> seen;
  int64_t cursor = 0;      // next index to look at
  int64_t known_skip = 0;  // runs found done or duplicate so far
  int64_t duplicates = 0;  // runs whose key an earlier run of this sweep has
  // Distinct runs of the shard: exact once every run was looked at, else the runs minus the duplicates so far.
  auto finish = [&]() -> SweepOutcome& {
    out.in_shard = static_cast<int>(shard_runs - duplicates);
    return out;
  };
  // The next run of this shard to execute (expanded now), or nullopt when none is left.
  auto next_run = [&]() -> std::optional<SweepRun> {
    for (; cursor < count; ++cursor) {
      if (!InShard(static_cast<int>(cursor), o.shard, o.shards)) continue;
      if (done_index.count(cursor)) {
        ++out.skipped;
        ++known_skip;
        continue;
      }
      SweepRun r = source(cursor);
      ++out.expanded;
      if (!seen.insert(r.key).second) {
        ++known_skip;
        ++duplicates;
        continue;
      }
      if (done.count(r.key)) {
        ++out.skipped;
        ++known_skip;
        continue;
      }
      ++cursor;
      return r;
    }
    return std::nullopt;
  };

  // One run of look-ahead (pull() returns it first): whether the next run shares the prepared data.
  std::optional<SweepRun> lookahead;
  auto pull = [&]() -> std::optional<SweepRun> {
    if (lookahead) {
      std::optional<SweepRun> r = std::move(lookahead);
      lookahead.reset();
      return r;
    }
    return next_run();
  };

  const auto t0 = Clock::now();
  SweepProgress progress;
  // Runs left to execute, as far as is known: runs found done (or duplicate) further on lower it.
  auto update_total = [&]() { progress.total = static_cast<int>(shard_runs - known_skip); };
  update_total();

  auto record = [&](const SweepRun& run, RunRecord rec) -> Status {
    rec.run_key = run.key;
    rec.sweep = spec.name;
    rec.run_index = run.index;
    rec.axes = run.axes;
    rec.scenario_yaml = run.resolved_yaml;
    rec.session = session;
    rec.finished_at = UtcNow();
    MMTWIN_RETURN_IF_ERROR(db.Put(rec));
    ++out.executed;
    if (rec.status != "ok") ++out.errors;
    update_total();
    progress.done = out.executed;
    progress.errors = out.errors;
    progress.elapsed_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    progress.eta_seconds = progress.elapsed_seconds / progress.done * (progress.total - progress.done);
    progress.run = &run;
    progress.record = &rec;
    if (o.progress) o.progress(progress);
    return Status();
  };

  std::map<int, Worker> active;  // by fd
  auto kill_all = [&]() {
    for (auto& [fd, w] : active) {
      ::kill(w.pid, SIGKILL);
      int st = 0;
      while (::waitpid(w.pid, &st, 0) < 0 && errno == EINTR) {
      }
      ::close(fd);
    }
    active.clear();
  };
  auto stop_now = [&]() { return o.stop_after > 0 && out.executed >= o.stop_after; };
  auto cancelled = [&]() { return o.cancel && o.cancel->load(std::memory_order_relaxed); };

  bool more = true;  // next_run() may still return a run
  while (more || !active.empty()) {
    if (cancelled()) {
      kill_all();
      out.interrupted = true;
      return finish();
    }
    if (stop_now() && (more || !active.empty())) {
      kill_all();
      // Stopped with runs left: look ahead once, so "stopped" is not reported when the last run just finished.
      if (!active.empty() || pull()) out.stopped = true;
      return finish();
    }
    // Launch workers; invalid scenarios are recorded at once.
    while (more && static_cast<int>(active.size()) < jobs) {
      std::optional<SweepRun> expanded = pull();
      if (!expanded) {
        more = false;
        break;
      }
      auto shared = std::make_shared<const SweepRun>(std::move(*expanded));
      const SweepRun& run = *shared;
      if (!run.error.empty()) {
        RunRecord rec;
        rec.status = "error";
        rec.error = run.error;
        MMTWIN_RETURN_IF_ERROR(record(run, std::move(rec)));
        if (stop_now()) break;
        continue;
      }
      if (share) {
        const std::string key = PreparedDataKey(run.scenario);
        if (!prepared || (prepared->key != key && prepared->trace_key != PreparedTraceKey(run.scenario))) {
          prepared.reset();  // one at a time in this process
          // Only a group of consecutive runs is prepared here: a run that shares its key with no neighbour
          // prepares in its own worker, in parallel with the other workers, instead of serially in the parent.
          // Sharing the trace alone (the next run differs in its data plan, e.g. the seed) also counts.
          if (!lookahead) lookahead = next_run();
          const bool group = lookahead && lookahead->error.empty() &&
                             (PreparedDataKey(lookahead->scenario) == key ||
                              PreparedTraceKey(lookahead->scenario) == PreparedTraceKey(run.scenario));
          if (group) {
            const auto p0 = Clock::now();
            auto p = PrepareData(run.scenario, o.cancel);
            out.prepare_seconds += std::chrono::duration<double>(Clock::now() - p0).count();
            if (p) {
              prepared = std::move(*p);
              ++out.prepared;
            }  // else: the worker prepares it itself and records the error
          }
        }
        if (prepared) ++out.shared_runs;
      }
      int fds[2];
      if (::pipe(fds) != 0) {
        kill_all();
        return Error::External(std::string("sweep: pipe: ") + std::strerror(errno));
      }
      const pid_t parent = ::getpid();
      const pid_t pid = ::fork();
      if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        kill_all();
        return Error::External(std::string("sweep: fork: ") + std::strerror(errno));
      }
      if (pid == 0) {
        // Die with the sweep: a killed parent leaves no orphan workers running.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(4);
        // Its own process group (a terminal's Ctrl-C reaches only the parent, which stops the workers) and the
        // default signal actions (not the parent's flag-only handlers).
        ::setpgid(0, 0);
        RestoreDefaultSignals();
        ::close(fds[0]);
        for (const auto& [fd, w] : active) ::close(fd);
        WorkerMain(fds[1], run, fn);
      }
      ::close(fds[1]);
      ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
      Worker w;
      w.pid = pid;
      w.fd = fds[0];
      w.run = shared;
      w.start = Clock::now();
      active.emplace(fds[0], std::move(w));
    }
    if (active.empty()) continue;

    std::vector<pollfd> pfds;
    for (const auto& [fd, w] : active) pfds.push_back({fd, POLLIN, 0});
    const int n = ::poll(pfds.data(), pfds.size(), 1000);
    if (n < 0) {
      if (errno == EINTR) continue;
      kill_all();
      return Error::External(std::string("sweep: poll: ") + std::strerror(errno));
    }
    for (const pollfd& p : pfds) {
      if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& w = active.at(p.fd);
      char buf[65536];
      const ssize_t got = ::read(p.fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) {
        w.buffer.append(buf, static_cast<size_t>(got));
        continue;
      }
      // EOF (or a read error): the worker is done.
      ::close(p.fd);
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      RunRecord rec;
      rec.wall_seconds = std::chrono::duration<double>(Clock::now() - w.start).count();
      out.run_seconds += rec.wall_seconds;
      const nlohmann::json reply = nlohmann::json::parse(w.buffer, nullptr, false);
      const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      Result<RunSummary> summary = Error("no summary");
      if (clean && reply.is_object() && reply.value("ok", false) && reply.contains("summary_json") &&
          reply["summary_json"].is_string())
        summary = SummaryFromJson(reply["summary_json"].get<std::string>(), "run " + w.run->key);
      if (summary) {
        rec.status = "ok";
        rec.summary = std::move(*summary);
      } else if (clean && reply.is_object() && reply.value("ok", false)) {
        rec.status = "error";
        rec.error = "worker reply: " + summary.error().message();
      } else {
        rec.status = "error";
        if (clean && reply.is_object() && reply.contains("error") && reply["error"].is_string())
          rec.error = reply["error"].get<std::string>();
        else
          rec.error = DescribeStatus(status);
      }
      const std::shared_ptr<const SweepRun> finished = w.run;
      const SweepRun& run = *finished;
      active.erase(p.fd);
      if (cancelled() && WIFSIGNALED(status)) continue;  // killed by the interruption: not a run error
      if (Status st = record(run, std::move(rec)); !st.ok()) {
        kill_all();
        return st.error();
      }
      if (stop_now()) break;
    }
  }
  out.stopped = false;  // the loop ran out of runs
  return finish();
}

}  // namespace

Result<SweepOutcome> RunSweep(const SweepSpec& spec, ResultsDb& db, const SweepRunOptions& options) {
  return RunSweepFrom(
      spec, SweepSize(spec), [&spec](int64_t i) { return ExpandRun(spec, i); }, db, options);
}

Result<SweepOutcome> RunSweep(const SweepSpec& spec, const std::vector<SweepRun>& runs, ResultsDb& db,
                              const SweepRunOptions& options) {
  return RunSweepFrom(
      spec, static_cast<int64_t>(runs.size()), [&runs](int64_t i) { return runs[i]; }, db, options);
}

}  // namespace mmtwin

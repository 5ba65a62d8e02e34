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

// One invocation of a sweep (RunSweepFrom): this shard's runs in index order, skipped when recorded ok (resume)
// or duplicate, executed on up to `jobs` forked workers (a run whose scenario is invalid is recorded at once),
// each result recorded by this process as its worker ends. Cancellation and stop_after kill the workers still
// running (their runs are not recorded).
class SweepExecution {
 public:
  SweepExecution(const SweepSpec& spec, int64_t count, const RunSource& source, ResultsDb& db,
                 const SweepRunOptions& o)
      : spec_(spec),
        count_(count),
        source_(source),
        db_(db),
        o_(o),
        share_(!o.run && o.share_prepared),
        fn_(o.run ? o.run : RunFunction([this](const Scenario& s) { return RunScenario(s, {}, prepared_); })),
        session_(o.session.empty() ? DefaultSession() : o.session),
        jobs_(std::max(1, o.jobs)) {}

  Result<SweepOutcome> Run();

 private:
  // Resume: runs recorded ok under the same sweep digest are skipped by index without expanding them; others
  // are expanded and skipped when their key is recorded ok (by this or any other sweep). Records the sweep.
  Status Resume();
  // The next run of this shard to execute (expanded now), or nullopt when none is left.
  std::optional<SweepRun> NextRun();
  // NextRun, after the look-ahead run (which Prepare may have taken) if there is one.
  std::optional<SweepRun> Pull();
  Status Record(const SweepRun& run, RunRecord rec);
  // Starts workers until `jobs` run or no run is left (more_ false then).
  Status LaunchWorkers();
  // Shared preparation: the trace and data plan of a group of consecutive runs with one PreparedDataKey (or
  // PreparedTraceKey), prepared here once for the workers to inherit.
  void Prepare(const SweepRun& run);
  Status Fork(std::shared_ptr<const SweepRun> run);
  // Waits (at most 1 s) for the workers' replies; records the runs of the workers that ended.
  Status Collect();
  // The record of a worker that ended with `status`, from its reply.
  RunRecord RecordOf(const Worker& w, int status) const;
  void KillAll();
  bool StopNow() const { return o_.stop_after > 0 && out_.executed >= o_.stop_after; }
  // In this shard and accepted by SweepRunOptions::include.
  bool Included(int64_t i) const {
    return InShard(static_cast<int>(i), o_.shard, o_.shards) && (!o_.include || o_.include(i));
  }
  bool Cancelled() const { return o_.cancel && o_.cancel->load(std::memory_order_relaxed); }
  // Distinct runs of the shard: exact once every run was looked at, else the runs minus the duplicates so far.
  SweepOutcome& Finish() {
    out_.in_shard = static_cast<int>(shard_runs_ - duplicates_);
    return out_;
  }

  const SweepSpec& spec_;
  const int64_t count_;
  const RunSource& source_;
  ResultsDb& db_;
  const SweepRunOptions& o_;
  // The trace and data plan the parent prepared for the runs being launched (consecutive runs with one
  // PreparedDataKey); a forked worker inherits it.
  std::shared_ptr<const PreparedData> prepared_;
  const bool share_;
  const RunFunction fn_;
  const std::string session_;
  const int jobs_;

  std::set<int64_t> done_index_;
  std::set<std::string> done_;  // keys recorded ok
  SweepOutcome out_;
  int64_t shard_runs_ = 0;  // runs of this shard, duplicates included
  std::set<std::string> seen_;
  int64_t cursor_ = 0;      // next index to look at
  int64_t known_skip_ = 0;  // runs found done or duplicate so far
  int64_t duplicates_ = 0;  // runs whose key an earlier run of this sweep has
  // One run of look-ahead (Pull() returns it first): whether the next run shares the prepared data.
  std::optional<SweepRun> lookahead_;
  Clock::time_point t0_;
  SweepProgress progress_;
  std::map<int, Worker> active_;  // by fd
  bool more_ = true;              // NextRun() may still return a run
};

Status SweepExecution::Resume() {
  const std::string digest = SweepDigest(spec_);
  {
    MMTWIN_ASSIGN_OR_RETURN(std::vector<SweepInfo> sweeps, db_.Sweeps());
    for (const SweepInfo& info : sweeps)
      if (info.name == spec_.name && info.digest == digest) {
        MMTWIN_ASSIGN_OR_RETURN(done_index_, db_.OkIndices(spec_.name));
      }
  }
  std::string axes_json = "[";
  for (size_t i = 0; i < spec_.axes.size(); ++i) axes_json += (i ? ", \"" : "\"") + spec_.axes[i].name + "\"";
  axes_json += "]";
  MMTWIN_RETURN_IF_ERROR(db_.PutSweep({spec_.name, spec_.path, axes_json, static_cast<int>(count_), digest}));
  MMTWIN_ASSIGN_OR_RETURN(done_, db_.OkKeys());
  for (int64_t i = 0; i < count_; ++i) shard_runs_ += Included(i) ? 1 : 0;
  return Status();
}

std::optional<SweepRun> SweepExecution::NextRun() {
  for (; cursor_ < count_; ++cursor_) {
    if (!Included(cursor_)) continue;
    if (done_index_.count(cursor_)) {
      ++out_.skipped;
      ++known_skip_;
      continue;
    }
    SweepRun r = source_(cursor_);
    ++out_.expanded;
    if (!seen_.insert(r.key).second) {
      ++known_skip_;
      ++duplicates_;
      continue;
    }
    if (done_.count(r.key)) {
      ++out_.skipped;
      ++known_skip_;
      continue;
    }
    ++cursor_;
    return r;
  }
  return std::nullopt;
}

std::optional<SweepRun> SweepExecution::Pull() {
  if (lookahead_) {
    std::optional<SweepRun> r = std::move(lookahead_);
    lookahead_.reset();
    return r;
  }
  return NextRun();
}

Status SweepExecution::Record(const SweepRun& run, RunRecord rec) {
  rec.run_key = run.key;
  rec.sweep = spec_.name;
  rec.run_index = run.index;
  rec.axes = run.axes;
  rec.scenario_yaml = run.resolved_yaml;
  rec.session = session_;
  rec.finished_at = UtcNow();
  MMTWIN_RETURN_IF_ERROR(db_.Put(rec));
  ++out_.executed;
  if (rec.status != "ok") ++out_.errors;
  // Runs left to execute, as far as is known: runs found done (or duplicate) further on lower it.
  progress_.total = static_cast<int>(shard_runs_ - known_skip_);
  progress_.done = out_.executed;
  progress_.errors = out_.errors;
  progress_.elapsed_seconds = std::chrono::duration<double>(Clock::now() - t0_).count();
  progress_.eta_seconds = progress_.elapsed_seconds / progress_.done * (progress_.total - progress_.done);
  progress_.run = &run;
  progress_.record = &rec;
  if (o_.progress) o_.progress(progress_);
  return Status();
}

void SweepExecution::KillAll() {
  for (auto& [fd, w] : active_) {
    ::kill(w.pid, SIGKILL);
    int st = 0;
    while (::waitpid(w.pid, &st, 0) < 0 && errno == EINTR) {
    }
    ::close(fd);
  }
  active_.clear();
}

void SweepExecution::Prepare(const SweepRun& run) {
  const std::string key = PreparedDataKey(run.scenario);
  const std::string trace_key = PreparedTraceKey(run.scenario);
  if (o_.prepared && o_.prepared->key == key && prepared_ != o_.prepared) prepared_ = o_.prepared;
  const bool same_trace = prepared_ && prepared_->trace_key == trace_key;
  if (!prepared_ || prepared_->key != key) {
    // Only a group of consecutive runs is prepared here: a run that shares its key with no neighbour
    // prepares in its own worker, in parallel with the other workers, instead of serially in the parent.
    // Sharing the trace alone (the next run differs in its data plan, e.g. the seed) also counts; a
    // preparation of the same trace is kept for that, and reused (its trace and tokens) when the next runs
    // share a new data plan.
    if (!lookahead_) lookahead_ = NextRun();
    const bool next_ok = lookahead_ && lookahead_->error.empty();
    const bool data_group = next_ok && PreparedDataKey(lookahead_->scenario) == key;
    const bool trace_group = next_ok && PreparedTraceKey(lookahead_->scenario) == trace_key;
    if (data_group || (trace_group && !same_trace)) {
      std::shared_ptr<const PreparedData> reuse = same_trace ? prepared_ : nullptr;
      prepared_.reset();  // one at a time in this process (besides the one whose trace is reused)
      const auto p0 = Clock::now();
      auto p = PrepareData(run.scenario, o_.cancel, reuse.get());
      out_.prepare_seconds += std::chrono::duration<double>(Clock::now() - p0).count();
      if (p) {
        prepared_ = std::move(*p);
        ++out_.prepared;
      }  // else: the worker prepares it itself and records the error
    } else if (!same_trace) {
      prepared_.reset();
    }
  }
  if (prepared_) ++out_.shared_runs;
}

Status SweepExecution::Fork(std::shared_ptr<const SweepRun> run) {
  int fds[2];
  if (::pipe(fds) != 0) {
    KillAll();
    return Error::External(std::string("sweep: pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    KillAll();
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
    for (const auto& [fd, w] : active_) ::close(fd);
    WorkerMain(fds[1], *run, fn_);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  Worker w;
  w.pid = pid;
  w.fd = fds[0];
  w.run = std::move(run);
  w.start = Clock::now();
  active_.emplace(fds[0], std::move(w));
  return Status();
}

Status SweepExecution::LaunchWorkers() {
  while (more_ && static_cast<int>(active_.size()) < jobs_) {
    std::optional<SweepRun> expanded = Pull();
    if (!expanded) {
      more_ = false;
      break;
    }
    auto shared = std::make_shared<const SweepRun>(std::move(*expanded));
    const SweepRun& run = *shared;
    if (!run.error.empty()) {  // an invalid scenario: recorded at once
      RunRecord rec;
      rec.status = "error";
      rec.error = run.error;
      MMTWIN_RETURN_IF_ERROR(Record(run, std::move(rec)));
      if (StopNow()) break;
      continue;
    }
    if (share_) Prepare(run);
    MMTWIN_RETURN_IF_ERROR(Fork(std::move(shared)));
  }
  return Status();
}

RunRecord SweepExecution::RecordOf(const Worker& w, int status) const {
  RunRecord rec;
  rec.wall_seconds = std::chrono::duration<double>(Clock::now() - w.start).count();
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
  return rec;
}

Status SweepExecution::Collect() {
  std::vector<pollfd> pfds;
  for (const auto& [fd, w] : active_) pfds.push_back({fd, POLLIN, 0});
  const int n = ::poll(pfds.data(), pfds.size(), 1000);
  if (n < 0) {
    if (errno == EINTR) return Status();
    KillAll();
    return Error::External(std::string("sweep: poll: ") + std::strerror(errno));
  }
  for (const pollfd& p : pfds) {
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    Worker& w = active_.at(p.fd);
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
    RunRecord rec = RecordOf(w, status);
    out_.run_seconds += rec.wall_seconds;
    const std::shared_ptr<const SweepRun> finished = w.run;
    const SweepRun& run = *finished;
    active_.erase(p.fd);
    if (Cancelled() && WIFSIGNALED(status)) continue;  // killed by the interruption: not a run error
    if (Status st = Record(run, std::move(rec)); !st.ok()) {
      KillAll();
      return st.error();
    }
    if (StopNow()) break;
  }
  return Status();
}

Result<SweepOutcome> SweepExecution::Run() {
  MMTWIN_RETURN_IF_ERROR(Resume());
  t0_ = Clock::now();
  progress_.total = static_cast<int>(shard_runs_ - known_skip_);
  while (more_ || !active_.empty()) {
    if (Cancelled()) {
      KillAll();
      out_.interrupted = true;
      return Finish();
    }
    if (StopNow() && (more_ || !active_.empty())) {
      KillAll();
      // Stopped with runs left: look ahead once, so "stopped" is not reported when the last run just finished.
      if (!active_.empty() || Pull()) out_.stopped = true;
      return Finish();
    }
    MMTWIN_RETURN_IF_ERROR(LaunchWorkers());
    if (active_.empty()) continue;
    MMTWIN_RETURN_IF_ERROR(Collect());
  }
  out_.stopped = false;  // the loop ran out of runs
  return Finish();
}

Result<SweepOutcome> RunSweepFrom(const SweepSpec& spec, int64_t count, const RunSource& source,
                                  ResultsDb& db, const SweepRunOptions& o) {
  return SweepExecution(spec, count, source, db, o).Run();
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

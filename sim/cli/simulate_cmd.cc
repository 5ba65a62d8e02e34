// SPDX-License-Identifier: Apache-2.0
// mmtwin simulate: replay a scenario's iterations with an evaluation engine and write the run records.
// Outputs (the run folder RUNDIR written as a unit, core/records/run_folder.h): summary.json, stages.csv,
// trace.json (Chrome/Perfetto, one iteration), ops.csv (its ops) and scenario.yaml (the resolved scenario). Exit 0 ok, 1 the plan does not fit device memory (the
// outputs are still written and the short stages listed), 2 bad input, 128 + signal after SIGINT (130) or SIGTERM
// (143): the run is abandoned and the run folder left as it was, or, when the signal came while the folder was
// being written, the folder is completed first.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "core/util/interrupt.h"
#include "core/util/text.h"
#include "driver/simulate.h"

namespace mmtwin::cli {
namespace {

struct Options {
  std::string scenario, engine, rundir;
  bool contention = true;
  bool json = false;
  int trace_iteration = 0;
  int trace_replicas = SimulateOptions{}.trace_dp_replicas;
};

Status Convert(const SimulateArgs& a, Options& o) {
  o.scenario = a.scenario;
  o.engine = a.engine;
  o.rundir = a.rundir;
  o.json = a.json;
  if (a.contention != "on" && a.contention != "off")
    return Error("simulate: --contention: '" + a.contention + "' is not on or off");
  o.contention = a.contention == "on";
  if (a.trace_iteration_given) {
    int64_t k = 0;
    if (!ParseInt64(a.trace_iteration, k) || k < 0 || k > 1000000000)
      return Error("simulate: --trace-iteration: '" + a.trace_iteration + "' is not a non-negative integer");
    o.trace_iteration = static_cast<int>(k);
  }
  if (a.trace_replicas_given) {
    int64_t k = 0;
    if (!ParseInt64(a.trace_replicas, k) || k < 0 || k > 1000000)
      return Error("simulate: --trace-replicas: '" + a.trace_replicas +
                   "' is not a non-negative integer (0 draws every replica)");
    o.trace_replicas = static_cast<int>(k);
  }
  return Status();
}

// A one-line progress bar on stderr, drawn only when stderr is a terminal and the run has taken more than a
// second (short runs and redirected output stay clean).
class ProgressBar {
 public:
  ProgressBar() : tty_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() { Clear(); }

  void Update(double fraction) {
    if (!tty_) return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < 1.0) return;
    if (drawn_ && std::chrono::duration<double>(now - last_).count() < 0.1 && fraction < 1.0) return;
    last_ = now;
    fraction = std::isfinite(fraction) ? std::min(1.0, std::max(0.0, fraction)) : 0.0;
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(filled, '#');
    bar += std::string(kWidth - filled, '.');
    std::fprintf(stderr, "\r[%s] %5.1f%%  %.1f s", bar.c_str(), 100 * fraction, elapsed);
    std::fflush(stderr);
    drawn_ = true;
  }
  void Clear() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

// The run folder (core/records/run_folder.h) as a unit: a kill or an error at any moment leaves either the old
// complete folder or the new complete one, never a mix.
RunFolderWriter Outputs(const Scenario& s, const SimulationResult& r) {
  RunFolderWriter w;
  w.AddSummary(r.summary).AddTrace(r.trace_json).AddOps(r.ops);
  w.AddScenario(r.resolved_yaml.empty() ? FormatScenario(s) : r.resolved_yaml);
  return w;
}

void WriteSummary(const Scenario& s, const RunSummary& j, const std::string& dir,
                  const std::vector<std::string>& files, std::ostream& out) {
  WriteHeader(s, out);
  out << "engine          " << s.engine << "\n";
  out << "replayed        " << Count(j.iterations_replayed) << " of " << Count(j.iterations_in_epoch)
      << " iterations in the epoch" << (s.epoch ? " (whole epoch)" : " (sampled)") << ", seed " << s.seed
      << "\n";
  const IterationTimeStats& it = j.iteration_time_us;
  out << "iteration time  p50 " << Fixed(it.p50 / 1e3, 1) << " ms, p99 " << Fixed(it.p99 / 1e3, 1)
      << " ms, mean " << Fixed(it.mean / 1e3, 1) << " ms";
  // One replayed iteration has no spread to give an interval from (issue 33: it printed a zero-width one).
  if (j.iterations_replayed > 1)
    out << " (95% CI " << Fixed(it.ci95_low / 1e3, 1) << " .. " << Fixed(it.ci95_high / 1e3, 1) << " ms)\n";
  else
    out << " (one iteration replayed: no confidence interval; `iterations: N` replays more)\n";
  auto pct = [](double r) { return Fixed(100 * r, 1) + "%"; };
  // The four parts of GPU time (core/eval/analytic.h: busy + bubble + exposed comm + idle = T on every
  // device); recompute is inside busy, so it is printed as part of it, not beside it.
  out << "time split      busy " << pct(j.busy_ratio) << " (recompute " << pct(j.recompute_ratio)
      << " of it), exposed comm " << pct(j.exposed_comm_ratio) << ", bubble " << pct(j.bubble_ratio)
      << ", idle " << pct(j.idle_ratio) << "  (= 100% of GPU time)\n";
  if (j.dispatch_us_mean > 0)
    out << "data dispatch   " << Fixed(j.dispatch_us_mean / 1e3, 2)
        << " ms per micro-batch's all-to-all (stage 0); compute waited for it "
        << pct(j.exposed_dispatch_ratio) << " of GPU time\n";
  out << "throughput      " << Count(j.tokens_per_s) << " tokens/s, " << Fixed(j.samples_per_s, 1)
      << " samples/s, MFU " << pct(j.mfu) << "\n";
  out << "epoch           " << Significant(j.gpu_days) << " GPU-days projected for one epoch of the trace";
  out << " (" << Significant(j.epoch_time_s / 3600) << " h on " << s.parallel.world_size() << " GPUs)";
  out << "\n";
  out << "data balance    pad ratio " << Fixed(j.data.pad_ratio, 3) << ", dist ratio ViT "
      << Fixed(j.data.dist_ratio_vit, 3) << " / LLM " << Fixed(j.data.dist_ratio_llm, 3) << ", mean batch "
      << Fixed(j.data.mean_batch_size, 2) << " samples";
  // Samples the data policy left out of the epoch are said, not silently lost.
  if (j.data.samples_skipped > 0 || j.data.samples_dropped > 0)
    out << "; left out of the epoch: " << Count(static_cast<double>(j.data.samples_skipped)) << " skipped, "
        << Count(static_cast<double>(j.data.samples_dropped)) << " dropped of "
        << Count(static_cast<double>(j.trace_samples));
  out << "\n";
  // OmniBal Table 4's partition columns.
  // Images without a size under an encoder that keeps smaller images at their size: priced at its cap.
  if (j.images_at_upper_bound > 0)
    out << "images          " << Count(static_cast<double>(j.images_at_upper_bound))
        << (j.image_sizes == ImageSizes::kMixed ? " of the trace's images have" : " images (all) have")
        << " no size in the trace (image_px): priced at the encoder's resolution cap, an upper bound on "
           "the ViT's work and activations\n";
  // Samples longer than the model's context: cut to it, as the recipe does (core/model/model.h max_context).
  if (j.samples_truncated > 0)
    out << "context         " << Count(static_cast<double>(j.samples_truncated))
        << " of the trace's samples are longer than the model's " << Count(static_cast<double>(j.max_context))
        << "-token context (max_context): cut to it after their image tokens, as LLaVA's training does\n";
  out << "partition       cuts";
  for (int b : j.partition.bounds) out << " " << Count(b);
  out << "; VAR(fwd) " << Fixed(j.partition.var_fwd_us2 / 1e6, 1) << " ms^2, VAR(layers) "
      << Fixed(j.partition.var_layers, 1) << ", SUM(comm) " << Fixed(j.partition.sum_comm_bytes / 1e6, 1)
      << " MB\n";
  out << "\n";
  WriteSimStages(j.stages, out);
  WriteOom(j.oom_stages, out);
  out << "\noutputs         " << dir << "/{" << Join(files) << "}\n";
}

}  // namespace

int RunSimulate(const SimulateArgs& args, std::ostream& out, std::ostream& err) {
  InstallInterruptHandlers();  // from here on SIGINT / SIGTERM only set the flag, polled below
  Options o;
  if (Status st = Convert(args, o); !st.ok()) {
    err << "mmtwin " << st.error().message() << "\n";
    return 2;
  }
  auto scenario = LoadScenario(o.scenario);
  if (!scenario) {
    err << "mmtwin simulate: " << scenario.error().message() << "\n";
    return 2;
  }
  Scenario& s = *scenario;
  if (!o.engine.empty()) {
    if (Status st = CheckEngine(o.engine); !st.ok()) {
      err << "mmtwin simulate: --engine: " << st.error().message() << "\n";
      return 2;
    }
    s.engine = o.engine;
  }
  if (!args.cost.empty()) {
    // Relative to the working folder (a scenario's own `cost:` is relative to the scenario's folder).
    std::error_code ec;
    s.cost = args.cost == "analytic" ? args.cost : std::filesystem::absolute(args.cost, ec).string();
    if (s.cost != "analytic" && !std::filesystem::is_regular_file(s.cost, ec)) {
      err << "mmtwin simulate: --cost: '" << args.cost << "' is neither 'analytic' nor a readable file\n";
      return 2;
    }
  }
  const std::string dir = o.rundir.empty() ? "runs/" + s.name : o.rundir;

  SimulateOptions opts;
  opts.trace_iteration = o.trace_iteration;
  opts.trace_dp_replicas = o.trace_replicas;
  opts.engine.contention = o.contention;
  ProgressBar bar;
  // --progress: one line per percent for a parent process, "progress 1.000" last (the bar stays off).
  int reported_pct = -1;
  opts.progress = [&](double f) {
    if (!args.progress) return bar.Update(f);
    const int pct = std::isfinite(f) ? static_cast<int>(std::clamp(f, 0.0, 1.0) * 100) : 0;
    if (pct <= reported_pct) return;
    reported_pct = pct;
    err << "progress " << Fixed(pct / 100.0, 3) << "\n";
    err.flush();
  };
  if (s.engine == "analytic" && !o.contention) {
    err << "mmtwin simulate: --contention off applies to the simgrid engine (the analytic engine has no "
           "contention)\n";
    return 2;
  }
  opts.cancel = InterruptFlag();
  Result<SimulationResult> result = Simulate(s, opts);
  bar.Clear();
  if (Interrupted() ||
      (!result && result.error().cancelled())) {  // a cancellation is never shown as an error
    err << "mmtwin simulate: interrupted (" << InterruptSignalName() << "); nothing was written, " << dir
        << (std::filesystem::exists(dir) ? " is as it was" : " was not created") << "\n";
    return 128 + InterruptSignal();
  }
  if (!result) {
    err << "mmtwin simulate: " << result.error().message() << "\n";
    return 2;
  }
  const RunSummary& j = result->summary;
  if (o.trace_iteration >= j.iterations_replayed) {
    err << "mmtwin simulate: --trace-iteration " << o.trace_iteration << ": only "
        << Count(j.iterations_replayed) << " iterations were replayed (0.."
        << Count(j.iterations_replayed - 1) << ")\n";
    return 2;
  }
  const RunFolderWriter outputs = Outputs(s, *result);
  if (Status st = outputs.Write(dir); !st.ok()) {
    err << "mmtwin simulate: " << st.error().message() << "\n";
    return 2;
  }
  if (Interrupted()) {  // the signal came while writing: the folder was completed, then we stop
    err << "mmtwin simulate: interrupted (" << InterruptSignalName() << ") while writing; " << dir
        << " was completed first\n";
    return 128 + InterruptSignal();
  }
  const bool oom = j.oom;
  if (o.json) {
    out << SummaryToJson(j) << "\n";
    if (oom) WriteOom(j.oom_stages, err);
  } else {
    WriteSummary(s, j, dir, outputs.names(), out);
  }
  return oom ? 1 : 0;
}

}  // namespace mmtwin::cli

// SPDX-License-Identifier: Apache-2.0
// mmtwin import-timeline TRACE.json --scenario S -o RUNDIR [--map NAME=KIND]... [--map-file F] [--iteration N]: a
// Chrome / Perfetto trace-event timeline as a measured run folder for replay (sim/whatif/timeline_import.h).
// mmtwin replay RUN [-o DIR] [--json] [--measured-comm]: a run folder's recorded timeline (ops.csv, simulated or
// measured by mmtwin-train) replayed through mmtwin's dependency model, and the what-ifs that attribute its step
// time to data imbalance, partition imbalance and slow devices (sim/whatif/whatif.h). Exit 0, or 2 on bad input
// (the message names the file and line).
#include <cmath>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "cli/imported_run.h"
#include "core/records/perfetto.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/util/csv.h"
#include "driver/planner.h"
#include "whatif/kineto_import.h"
#include "whatif/timeline_import.h"
#include "whatif/whatif.h"

namespace mmtwin::cli {
namespace {

using nlohmann::json;

json IterationJson(const ReplayIteration& it) {
  json j = {
      {"recorded_us", it.recorded_us},   {"replayed_us", it.replayed_us},     {"data_us", it.data_us},
      {"partition_us", it.partition_us}, {"stragglers_us", it.stragglers_us}, {"stalls_us", it.stalls_us},
      {"ideal_us", it.ideal_us},         {"matched_ops", it.matched},         {"unmatched_ops", it.unmatched},
      {"filled_ops", it.filled},         {"wait_records", it.waits}};
  if (it.iteration >= 0) j["iteration"] = it.iteration;
  return j;
}

std::string Ms(double us) { return Fixed(us / 1e3, 1); }

std::string Share(double part, double whole) {
  return whole > 0 ? Fixed(100.0 * part / whole, 1) + "%" : std::string("n/a");
}

}  // namespace

int RunReplay(const ReplayArgs& a, std::ostream& out, std::ostream& err) {
  ReplayOptions options;
  options.measured_comm = a.measured_comm;
  Scenario predict;
  if (!a.predict.empty()) {
    auto s = LoadScenario(a.predict);
    if (!s) {
      err << "mmtwin replay: " << s.error().message() << "\n";
      return 2;
    }
    predict = *s;
    options.predict = &predict;
  }
  auto r = ReplayRunFolder(RunFolderOf(a.run), options);
  if (!r) {
    err << "mmtwin replay: " << r.error().message() << "\n";
    return 2;
  }
  const ReplayReport& rep = *r;
  if (!a.output.empty()) {
    const Status st = RunFolderWriter()
                          .AddOps(rep.ideal_ops)
                          .AddTrace(PerfettoTrace(rep.ideal_ops, rep.parallel, PerfettoOptions{4}) + "\n")
                          .Write(a.output);
    if (!st.ok()) {
      err << "mmtwin replay: " << st.error().message() << "\n";
      return 2;
    }
  }
  const ReplayIteration& m = rep.mean;
  if (a.json) {
    json j = {{"run", rep.run_dir}, {"source", RecordSourceName(rep.source)}, {"mean", IterationJson(m)}};
    j["iterations"] = json::array();
    for (const ReplayIteration& it : rep.iterations) j["iterations"].push_back(IterationJson(it));
    if (!a.output.empty()) j["ideal_timeline"] = a.output;
    j["stalls"] = {
        {"passes", rep.stalled_passes}, {"of_passes", rep.speed_passes}, {"excess_us", rep.stall_us}};
    if (options.predict)
      j["predicted"] = {{"scenario", rep.predicted_scenario},
                        {"step_us", rep.predicted_mean_us},
                        {"iterations_us", rep.predicted_us}};
    out << j.dump(2) << "\n";
    return 0;
  }
  out << "replay of " << rep.run_dir << " (" << RecordSourceName(rep.source) << ", " << rep.iterations.size()
      << " iteration" << (rep.iterations.size() == 1 ? "" : "s") << "): times in ms per step\n\n";
  const std::vector<std::string> head = {"iteration", "recorded",   "replayed", "error", "data",
                                         "partition", "stragglers", "stalls",   "ideal"};
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const std::string& name, const ReplayIteration& it) {
    const double e = it.recorded_us > 0 ? 100.0 * (it.replayed_us / it.recorded_us - 1) : NAN;
    rows.push_back({name, Ms(it.recorded_us), Ms(it.replayed_us),
                    std::isfinite(e) ? (e >= 0 ? "+" : "") + Fixed(e, 1) + "%" : "n/a", Ms(it.data_us),
                    Ms(it.partition_us), Ms(it.stragglers_us), Ms(it.stalls_us), Ms(it.ideal_us)});
  };
  for (const ReplayIteration& it : rep.iterations) row(std::to_string(it.iteration), it);
  if (rep.iterations.size() > 1) row("mean", m);
  WriteTextTable(head, rows, out);
  out << "\nwhat each costs this job (replayed - what-if, share of the replayed step):\n";
  out << "  data imbalance       " << Ms(m.replayed_us - m.data_us) << " ms ("
      << Share(m.replayed_us - m.data_us, m.replayed_us) << ")\n";
  out << "  partition imbalance  " << Ms(m.replayed_us - m.partition_us) << " ms ("
      << Share(m.replayed_us - m.partition_us, m.replayed_us) << ")\n";
  out << "  slow devices         " << Ms(m.replayed_us - m.stragglers_us) << " ms ("
      << Share(m.replayed_us - m.stragglers_us, m.replayed_us) << ")\n";
  out << "  stalls               " << Ms(m.replayed_us - m.stalls_us) << " ms ("
      << Share(m.replayed_us - m.stalls_us, m.replayed_us) << ")\n";
  out << "  all four             " << Ms(m.replayed_us - m.ideal_us) << " ms ("
      << Share(m.replayed_us - m.ideal_us, m.replayed_us) << ")\n";
  out << "ops: " << m.matched << " given recorded durations, ";
  if (m.filled > 0) out << m.filled << " of devices without records given their stage's recorded mean, ";
  out << m.unmatched << " without a record (modelled), " << m.waits << " wait records not replayed\n";
  if (rep.stalled_passes > 0)
    out << "stalls: " << rep.stalled_passes << " of " << rep.speed_passes
        << " compute passes ran far slower than their kind's typical speed on their stage (beyond Q3 + 3 IQR "
           "of "
           "recorded / modelled), "
        << Ms(rep.stall_us)
        << " ms above it over the run; the stalls what-if runs them at that speed, --predict leaves them out "
           "of "
           "the job's speed\n";
  if (!a.output.empty())
    out << "ideal timeline (first iteration): " << a.output << "/{ops.csv, trace.json}\n";
  if (options.predict)
    out << "predicted " << rep.predicted_scenario << ": " << Ms(rep.predicted_mean_us)
        << " ms per step (mean of " << rep.predicted_us.size()
        << " iterations; this run's speed per stage, mmtwin's relative costs)\n";
  return 0;
}

}  // namespace mmtwin::cli

namespace mmtwin::cli {

int RunImportTimeline(const ImportTimelineArgs& a, std::ostream& out, std::ostream& err) {
  auto fail = [&](const std::string& m) {
    err << "mmtwin import-timeline: " << m << "\n";
    return 2;
  };
  auto scenario = LoadScenario(a.scenario);
  if (!scenario) return fail(scenario.error().message());
  ImportOptions options;
  if (!a.map_file.empty()) {
    auto m = LoadTimelineMapping(a.map_file);
    if (!m) return fail(m.error().message());
    options.mapping = *m;
  }
  for (const std::string& kv : a.maps) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--map: '" + kv + "': expected NAME=KIND (or NAME=ignore; NAME may end in *)");
    options.mapping[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto run = PlanForReplay(*scenario);
  if (!run) return fail(run.error().message());
  options.iteration = a.iteration >= 0 ? a.iteration : run->plan.iterations.front().epoch_index;
  // One plain timeline, or PyTorch profiler traces (one per rank).
  std::vector<KinetoTrace> traces;
  bool kineto = false;
  for (const std::string& path : a.timelines) {
    auto text = ReadTimelineFile(path);
    if (!text) return fail(text.error().message());
    const bool k = LooksLikeKineto(*text);
    if (!traces.empty() && k != kineto)
      return fail(path + ": " + (k ? "a PyTorch profiler trace" : "not a PyTorch profiler trace") +
                  " beside " + traces.front().name + ", which " + (kineto ? "is one" : "is not"));
    kineto = k;
    traces.push_back({path, std::move(*text)});
  }
  if (!kineto && traces.size() > 1)
    return fail(
        "TIMELINE: " + std::to_string(traces.size()) +
        " files given; only PyTorch profiler traces come one per rank (a trace-event timeline is one file)");
  if (kineto && a.iteration < 0)
    for (const auto& it : run->plan.iterations) options.step_iterations.push_back(it.epoch_index);
  auto imported = kineto
                      ? ImportKineto(traces, run->plan.parallel, options)
                      : ImportTimeline(traces.front().text, traces.front().name, run->plan.parallel, options);
  if (!imported) return fail(imported.error().message());
  int64_t ignored = 0;
  for (const auto& [n, c] : imported->ignored) ignored += c;
  if (kineto) {
    out << "PyTorch profiler: " << traces.size() << " trace" << (traces.size() == 1 ? "" : "s") << ", "
        << imported->steps << " profiler step" << (imported->steps == 1 ? "" : "s") << ", "
        << imported->attributed_activities << " of " << imported->gpu_activities
        << " GPU activities in ops (GPU busy " << Fixed(imported->gpu_busy_us / 1000, 1)
        << " ms; the ops span " << Fixed(imported->op_span_us / 1000, 1) << " ms, launch gaps included)";
    if (imported->devices_without_trace > 0)
      out << "; " << imported->devices_without_trace
          << " device(s) of the layout without a trace (replayed with their stage's recorded mean)";
    out << "\n";
    for (const auto& [n, c] : imported->ignored) out << "  ignored: " << n << " x" << c << "\n";
  }
  const Status st =
      WriteImportedRun(imported->ops, *scenario, run->plan, a.output,
                       std::to_string(imported->ops.size()) + " ops of " + std::to_string(imported->events) +
                           " events (" + std::to_string(ignored) + " ignored by the mapping)",
                       out);
  if (!st.ok()) return fail(st.error().message());
  return 0;
}

}  // namespace mmtwin::cli

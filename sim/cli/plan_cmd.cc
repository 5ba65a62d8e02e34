// SPDX-License-Identifier: Apache-2.0
// mmtwin plan: partition, recomputation and memory per pipeline stage for a scenario, without replaying
// iterations (BuildPlan in driver/planner.h). Exit 0 when every stage fits its device memory, 1 when
// one does not (the short stages are listed), 2 on bad input, 128 + signal after SIGINT (130) or SIGTERM (143)
// during planning (BMP's candidate timing, adaptive recomputation): nothing is printed but the interruption.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/scenario/scenario.h"
#include "core/util/interrupt.h"
#include "driver/max_seq.h"
#include "driver/planner.h"

namespace mmtwin::cli {

namespace {

// --max-seq: one row per SP method (text, or JSON with --json).
int RunMaxSeq(const PlanArgs& args, const Scenario& scenario, std::ostream& out, std::ostream& err) {
  MaxSeqOptions o;
  o.step_tokens = args.step_tokens;
  o.policies = args.sp_policies;
  auto rows = MaxSequenceSearch(scenario, o);
  if (!rows) {
    err << "mmtwin plan: " << rows.error().message() << "\n";
    return 2;
  }
  if (args.json) {
    out << "[";
    for (size_t i = 0; i < rows->size(); ++i) {
      const MaxSeqRow& r = (*rows)[i];
      out << (i ? ",\n " : "") << "{\"policy\": \"" << r.policy << "\", \"sp\": " << r.sp
          << ", \"tp\": " << r.tp << ", \"dp\": " << r.dp << ", \"ulysses\": " << r.ulysses
          << ", \"ring\": " << r.ring << ", \"max_tokens\": " << r.max_tokens
          << ", \"peak_bytes\": " << r.peak_bytes << ", \"capacity_bytes\": " << r.capacity_bytes
          << ", \"probes\": " << r.probes << ", \"at_limit\": " << (r.at_limit ? "true" : "false")
          << ", \"available\": " << (r.unavailable.empty() ? "true" : "false")
          << ", \"below_step\": " << (r.unavailable.empty() && r.max_tokens == 0 ? "true" : "false") << "}";
    }
    out << "]\n";
    return 0;
  }
  WriteHeader(scenario, out);
  out << "max context per sequence-parallel method (bisection over the memory model, step " << o.step_tokens
      << " tokens)\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %5s %4s %5s %8s %14s %12s %9s %7s\n", "policy", "sp", "tp", "dp",
                "UxR", "max tokens", "tokens/GPU", "peak GiB", "probes");
  out << line;
  bool below_step = false;
  for (const MaxSeqRow& r : *rows) {
    if (!r.unavailable.empty()) {
      std::snprintf(line, sizeof line, "%-16s %5d %4d %5d  n/a: ", r.policy.c_str(), r.sp, r.tp, r.dp);
      out << line << r.unavailable << "\n";
      continue;
    }
    const std::string uxr = std::to_string(r.ulysses) + "x" + std::to_string(r.ring);
    if (r.max_tokens == 0) {  // not even one step fits: say so, not "0 tokens"
      below_step = true;
      const std::string below = "< " + std::to_string(o.step_tokens);
      std::snprintf(line, sizeof line, "%-16s %5d %4d %5d %8s %14s %12s %9s %7d\n", r.policy.c_str(), r.sp,
                    r.tp, r.dp, uxr.c_str(), below.c_str(), "-", "-", r.probes);
      out << line;
      continue;
    }
    std::snprintf(line, sizeof line, "%-16s %5d %4d %5d %8s %13lld%s %12lld %9.1f %7d\n", r.policy.c_str(),
                  r.sp, r.tp, r.dp, uxr.c_str(), static_cast<long long>(r.max_tokens), r.at_limit ? "+" : " ",
                  static_cast<long long>(r.max_tokens / std::max(1, r.sp * r.tp)),
                  static_cast<double>(r.peak_bytes) / (1ll << 30), r.probes);
    out << line;
  }
  out << "(+: the search limit fits; peak = the worst stage's planned peak per GPU at the maximum)\n";
  if (below_step)
    out << "(< STEP: not even one step of " << o.step_tokens
        << " tokens fits; a smaller --step-tokens finds the maximum)\n";
  return 0;
}

}  // namespace

int RunPlan(const PlanArgs& args, std::ostream& out, std::ostream& err) {
  const std::string& path = args.scenario;
  const bool json = args.json;
  auto scenario = LoadScenario(path);
  if (!scenario) {
    err << "mmtwin plan: " << scenario.error().message() << "\n";
    return 2;
  }
  if (args.max_seq) return RunMaxSeq(args, *scenario, out, err);
  InstallInterruptHandlers();  // from here on SIGINT / SIGTERM only set the flag, polled by BuildPlan
  PlanOptions po;
  po.cancel = InterruptFlag();
  auto run = BuildPlan(*scenario, po);
  if (Interrupted() || (!run && run.error().cancelled())) {
    err << "mmtwin plan: interrupted (" << InterruptSignalName() << ") while planning; nothing was printed\n";
    return 128 + InterruptSignal();
  }
  if (!run) {
    err << "mmtwin plan: " << run.error().message() << "\n";
    return 2;
  }
  const std::vector<PlanStage> stages = PlanStages(*run);
  std::vector<OomStage> oom_stages;
  for (const PlanStage& st : stages)
    if (!st.memory.fits)
      oom_stages.push_back({st.stage, st.memory.short_bytes, st.memory.peak_bytes, st.memory.capacity_bytes});
  const bool oom = !oom_stages.empty();
  if (json) {
    out << PlanReportJson(*run) << "\n";
    return oom ? 1 : 0;
  }
  WriteHeader(*scenario, out);
  out << "layers          " << Count(static_cast<double>(Layers(run->model).size())) << "\n";
  out << "\n";
  WritePlanStages(stages, out);
  if (args.memory) {
    out << "\n";
    WritePlanMemory(stages, out);
  }
  WriteOom(oom_stages, out);
  return oom ? 1 : 0;
}

}  // namespace mmtwin::cli

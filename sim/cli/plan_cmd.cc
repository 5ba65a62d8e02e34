// mmtwin plan: partition, recomputation and memory per pipeline stage for a scenario, without replaying
// iterations (BuildPlan in core/driver/planner.h). Exit 0 when every stage fits its device memory, 1 when
// one does not (the short stages are listed), 2 on bad input.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/driver/planner.h"
#include "core/scenario/scenario.h"

namespace mmtwin::cli {
namespace {

constexpr const char* kPlanUsage = R"(usage: mmtwin plan SCENARIO [--json]

Plans a scenario (scenarios/README.md) without replaying iterations: the layer -> pipeline stage partition,
the recomputed layers per stage, the mean forward time per micro-batch and the memory per GPU of every stage
(model states, peak activations, peak) against the device capacity. --json prints the plan as JSON.

Exit codes: 0 every stage fits, 1 a stage does not fit its device memory (listed), 2 bad input.
)";

}  // namespace

int RunPlan(const Args& args, std::ostream& out, std::ostream& err) {
  std::string path;
  bool json = false;
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      out << kPlanUsage;
      return 0;
    }
    if (a == "--json") {
      json = true;
    } else if (a.rfind("-", 0) == 0 && a.size() > 1) {
      err << "mmtwin plan: unknown option '" << a << "'\n" << kPlanUsage;
      return 2;
    } else if (path.empty()) {
      path = a;
    } else {
      err << "mmtwin plan: give one scenario file (got '" << path << "' and '" << a << "')\n" << kPlanUsage;
      return 2;
    }
  }
  if (path.empty()) {
    err << "mmtwin plan: a scenario file is required\n" << kPlanUsage;
    return 2;
  }
  auto scenario = LoadScenario(path);
  if (!scenario) {
    err << "mmtwin plan: " << scenario.error().message() << "\n";
    return 2;
  }
  auto run = BuildPlan(*scenario, {});
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
  WriteOom(oom_stages, out);
  return oom ? 1 : 0;
}

}  // namespace mmtwin::cli

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
int RunPlan(const PlanArgs& args, std::ostream& out, std::ostream& err) {
  const std::string& path = args.scenario;
  const bool json = args.json;
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

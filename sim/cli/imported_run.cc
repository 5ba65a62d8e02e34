// SPDX-License-Identifier: Apache-2.0
#include "cli/imported_run.h"

#include "core/records/run_folder.h"

namespace mmtwin::cli {

Result<PlannedRun> PlanForReplay(const Scenario& scenario) {
  PlanOptions options;
  options.memory_report = false;
  options.keep_trace = false;
  return BuildPlan(scenario, options);
}

Status WriteImportedRun(const std::vector<OpRecord>& ops, const Scenario& scenario, const Plan& plan,
                        const std::string& dir, const std::string& what, std::ostream& out) {
  MMTWIN_RETURN_IF_ERROR(
      RunFolderWriter().AddOps(ops).AddScenario(FormatScenario(scenario)).AddPlan(plan).Write(dir));
  out << "imported " << what << " into " << dir
      << "/{ops.csv, scenario.yaml, plan.json}; replay it with: mmtwin replay " << dir << "\n";
  return Status();
}

}  // namespace mmtwin::cli

// SPDX-License-Identifier: Apache-2.0
// What the commands that bring a recorded timeline to `mmtwin replay` share (import-timeline, import-chakra;
// export-chakra plans the same way): the job's plan, built as the replay rebuilds it (BuildPlan without the memory
// report, the trace not kept), and the measured run folder they write (ops.csv, scenario.yaml, plan.json: what
// `mmtwin replay` reads), with the line that says so.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/records/records.h"
#include "core/scenario/scenario.h"
#include "driver/planner.h"

namespace mmtwin::cli {

Result<PlannedRun> PlanForReplay(const Scenario& scenario);

// Writes the run folder as a unit; on success prints "imported WHAT into DIR/{ops.csv, scenario.yaml, plan.json};
// replay it with: mmtwin replay DIR".
Status WriteImportedRun(const std::vector<OpRecord>& ops, const Scenario& scenario, const Plan& plan,
                        const std::string& dir, const std::string& what, std::ostream& out);

}  // namespace mmtwin::cli

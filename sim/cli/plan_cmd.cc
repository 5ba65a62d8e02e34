// mmtwin plan: partition, recomputation and memory per pipeline stage for a scenario, without replaying
// iterations (PlanScenario in core/sim/simulate.h). Exit 0 when every stage fits its device memory, 1 when
// one does not (the short stages are listed), 2 on bad input.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/scenario/scenario.h"
#include "core/sim/simulate.h"

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
  auto plan = PlanScenario(*scenario);
  if (!plan) {
    err << "mmtwin plan: " << plan.error().message() << "\n";
    return 2;
  }
  const nlohmann::json& j = *plan;
  const bool oom = JBool(j, "oom");
  if (json) {
    out << j.dump(2) << "\n";
    return oom ? 1 : 0;
  }
  WriteHeader(*scenario, j, out);
  if (j.contains("layers")) out << "layers          " << JStr(j, "layers") << "\n";
  out << "\n";
  WritePlanStages(j, out);
  WriteOom(j, out);
  return oom ? 1 : 0;
}

}  // namespace mmtwin::cli

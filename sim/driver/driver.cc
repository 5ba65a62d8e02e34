// SPDX-License-Identifier: Apache-2.0
// Engine registry (driver.h). Built with MMTWIN_HAVE_SIMGRID when the SimGrid engine library is linked.
#include "driver/driver.h"

#ifdef MMTWIN_HAVE_SIMGRID
#include "engine/simgrid_engine.h"
#endif

namespace mmtwin {

const std::vector<EngineInfo>& Engines() {
#ifdef MMTWIN_HAVE_SIMGRID
  constexpr bool kSimGrid = true;
#else
  constexpr bool kSimGrid = false;
#endif
  static const std::vector<EngineInfo> kEngines = {
      {"analytic", "longest path over the op graph, no contention (fast enough to replay an epoch)", true},
      {"simgrid", "SimGrid discrete-event replay: shared links, ring collectives step by step", kSimGrid},
  };
  return kEngines;
}

Result<std::unique_ptr<Evaluator>> MakeEvaluator(const std::string& name, const ClusterSpec& cluster,
                                                 const EngineOptions& options) {
  if (name == "analytic") {
    if (!options.contention)
      return Error("contention off applies to the simgrid engine (the analytic engine has no contention)");
    return std::unique_ptr<Evaluator>(std::make_unique<AnalyticEvaluator>());
  }
  if (name == "simgrid") {
#ifdef MMTWIN_HAVE_SIMGRID
    SimGridOptions sg;
    sg.contention = options.contention;
    sg.timeout_s = options.timeout_s;
    return MakeSimGridEvaluator(cluster, sg);
#else
    (void)cluster;
    return Error(
        "this mmtwin was built without the SimGrid engine (install libsimgrid-dev and rebuild with "
        "-DMMTWIN_WITH_SIMGRID=ON)");
#endif
  }
  std::string valid;
  for (const EngineInfo& e : Engines()) valid += (valid.empty() ? "" : ", ") + e.name;
  return Error("unknown engine '" + name + "'; valid values are: " + valid);
}

}  // namespace mmtwin

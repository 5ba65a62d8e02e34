// SPDX-License-Identifier: Apache-2.0
// The engines a run can be timed with, chosen by name in the library (not by #ifdef in each client): the
// analytic evaluator (core/eval, always there) and the SimGrid engine (sim/engine, when this build has it).
// Simulate() makes the scenario's engine through MakeEvaluator unless it is handed one.
//
//   MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<Evaluator> ev, MakeEvaluator("simgrid", run.cluster, {}));
//   for (const EngineInfo& e : Engines()) std::cout << e.name << (e.available ? "" : " (not built)") << "\n";
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/eval/evaluator.h"
#include "core/util/status.h"

namespace mmtwin {

struct EngineOptions {
  bool contention = true;  // simgrid: shared links (false: every transfer at full bandwidth, = analytic)
  double timeout_s = 0;    // simgrid: upper bound on one iteration's replay (0 = none)
};

struct EngineInfo {
  std::string name;
  std::string description;
  bool available = true;  // built into this binary
};
// analytic, simgrid; in that order.
const std::vector<EngineInfo>& Engines();

// The evaluator `name` for op graphs priced on `cluster` (with the nodes the run uses). Errors: an unknown
// name (listing the valid ones), an engine this build lacks ("this mmtwin was built without the SimGrid
// engine (...)"), contention off for the analytic engine.
Result<std::unique_ptr<Evaluator>> MakeEvaluator(const std::string& name, const ClusterSpec& cluster,
                                                 const EngineOptions& options);

}  // namespace mmtwin

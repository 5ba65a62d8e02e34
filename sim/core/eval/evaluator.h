// SPDX-License-Identifier: Apache-2.0
// The evaluator interface: times one iteration's OpGraph. Two implementations: the analytic evaluator (longest
// path, no contention; core/eval/analytic.h) and the SimGrid engine (sim/engine/, its own library so the core
// links no SimGrid). Simulate() takes one through SimulateOptions; the CLI picks it by name (--engine).
//
//   AnalyticEvaluator analytic;
//   IterationTiming t;
//   MMTWIN_RETURN_IF_ERROR(analytic.Evaluate(graph, &t));
#pragma once

#include <string>

#include "core/eval/analytic.h"
#include "core/util/status.h"

namespace mmtwin {

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual std::string name() const = 0;
  // Fills start/finish of every op, the iteration time and the per-device breakdown (see analytic.h for the
  // meaning of busy, bubble, exposed comm and idle). May be called many times (one per replayed iteration).
  virtual Status Evaluate(const OpGraph& graph, IterationTiming* out) = 0;
};

class AnalyticEvaluator : public Evaluator {
 public:
  std::string name() const override { return "analytic"; }
  Status Evaluate(const OpGraph& graph, IterationTiming* out) override {
    EvaluateAnalytic(graph, out);
    return Status();
  }
};

}  // namespace mmtwin

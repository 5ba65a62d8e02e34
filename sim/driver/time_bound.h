// SPDX-License-Identifier: Apache-2.0
// A proven lower bound on a scenario's simulated mean iteration time, from its data plan and per-layer costs
// alone: before a partition, a recompute plan or an op graph exists. `mmtwin tune` (tune/tune.h) uses it to skip
// candidates that cannot beat the configurations it has already evaluated.
//
// Per replayed iteration and DP replica, with, per micro-batch m and layer l, the compute-lane times the op graph
// gives the layer (core/graph/op_graph.h; priced by the scenario's Pricer as without recompute):
//   f(m, l) = forward + its TP collectives      b(m, l) = backward (input and weight gradients) + its TP collectives
//   x(m, l) = b less the weight gradient (a split backward's B)
// The ops of one device's compute lane run one at a time, and everything the bound leaves out only adds time
// (recompute, the SP collectives, the overlap slowdown, the optimizer step, sends, DP collectives, barriers,
// dispatch). A pipeline rank holding layers [a, e) of the replica:
//   start  its first op is a forward of some micro-batch, which waits for that micro-batch's forward through the
//          layers before a on earlier ranks: at least P(a) = min_m sum_{l<a} f(m, l);
//   work   W(a, e) = sum_m sum_{l in [a,e)} (f + b)(m, l), one op at a time;
//   tail   a whole-backward schedule (gpipe, 1f1b, interleaved-1f1b) ends the rank with some micro-batch's
//          backward, which must still run back through the layers before a: Q(a) = min_m sum_{l<a} b(m, l), so
//          T >= P(a) + W(a, e) + Q(a). With a split backward (zb-h1, zb-h2) the rank's last B ends after all its
//          forwards and Bs and its gradient still runs back: T >= P(a) + max(W(a, e), F(a, e) + X(a, e) + Qx(a)),
//          F, X and Qx the sums of f and x as W and Q are of f + b.
// The partition is not known yet: with one chunk per rank (vpp = 1) the iteration's bound is the least, over
// every split of the layers into pp contiguous ranges, of the largest rank figure over all ranks and replicas,
// found by bisection on T with a greedy check (exact: a rank's figure grows with e and shrinks with a, since P
// and Q grow by at most one micro-batch's share of what W loses). With virtual stages (vpp > 1) a rank's chunks
// are not contiguous, and the bound is the mean over the ranks instead, per replica: (W_total + sum_{s<pp}
// (P(s) + Q(s))) / pp (chunk s starts at layer s or later), or its split-backward analogue. The mean over the
// replayed iterations bounds RunSummary::iteration_time_us.mean, and so gpu_days; the bound is scaled by
// (1 - 1e-6) to absorb the rounding of sums taken in another order than the op graph's.
//
// No bound (TimeBound::bounded false) for the encoders outside the pipeline (policies.encoder other than
// pipeline: their passes run on any rank), sequence parallelism (per-rank SP pricing: not modelled here), a cost
// model that prices some layer as NaN, or a data plan with fewer steps than one iteration.
//
//   TimeBoundCache cache;   // shared by scenarios on the same data plan (differing in pp, vpp, schedule, ...)
//   MMTWIN_ASSIGN_OR_RETURN(TimeBound b, IterationTimeLowerBound(scenario, *prepared, &cache));
//   if (b.bounded) ... b.iteration_us <= Simulate(scenario).summary.iteration_time_us.mean
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/scenario/scenario.h"
#include "core/util/status.h"
#include "driver/planner.h"

namespace mmtwin {

struct TimeBound {
  bool bounded = false;             // false: no bound for this scenario (above); the other fields are then 0
  double iteration_us = 0;          // <= the simulated mean iteration time, microseconds
  int64_t iterations_in_epoch = 0;  // as the plan counts them (epoch steps / micro-batches)
  int64_t replayed = 0;             // replayed iterations the mean is over
  double tokens = 0;  // LLM tokens over the replayed iterations (the summary's tokens/s numerator)
};

// What IterationTimeLowerBound keeps between calls: the per-replica prefix sums of the scenarios priced so far
// (by everything but pp, vpp, the schedule and the policies that do not change a layer's cost) and the bounds
// computed. Clear() between data plans to bound its memory (6 x (layers + 1) doubles per replica and replayed
// iteration of each distinct pricing).
class TimeBoundCache {
 public:
  struct Prefixes;  // time_bound.cc
  TimeBoundCache();
  ~TimeBoundCache();
  void Clear();

 private:
  friend Result<TimeBound> IterationTimeLowerBound(const Scenario&, const PreparedData&, TimeBoundCache*);
  std::map<std::string, std::shared_ptr<const Prefixes>> prefixes_;
  std::map<std::string, TimeBound> bounds_;
};

// The bound of `s` on `data`, which must be PrepareData(s) (an error names the mismatch). Errors: the
// scenario's model, cluster or cost model do not load, the schedule does not build (as BuildPlan's).
Result<TimeBound> IterationTimeLowerBound(const Scenario& s, const PreparedData& data,
                                          TimeBoundCache* cache = nullptr);

}  // namespace mmtwin

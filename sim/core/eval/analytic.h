// SPDX-License-Identifier: Apache-2.0
// The analytic evaluator: times an OpGraph (core/graph/op_graph.h) by longest path, without contention.
// An op starts at max(finish of its dependencies, finish of the previous op on the same lane of the same
// device) and runs for its duration_us. The iteration time T is the largest finish (the optimizer step is not
// modelled). One sweep over the ops in their stored topological order, no allocation when `out` is reused:
// tens of millions of ops per second on one core (tests/bench/evaluator_bench.cc).
//
// Per device (one TP group, index dp_idx * pp + pp_idx), all in microseconds, on the compute lane:
//   busy_us          sum of the compute-lane ops (forward + recompute + backward + TP collectives)
//   recompute_us     the recompute part of busy_us;  tp_us  the TP-collective part of busy_us
// The rest of [0, T] is split using the "replica alone" timing: the same graph evaluated with every barrier
// dependency replaced by the device's own replica's input to that barrier (OpGraph::local_deps), i.e. as if
// every other DP replica were exactly as fast. Its iteration time for replica d is local_time_us (<= T).
//   idle_us          T - local_time_us: everything the other DP replicas cost this device (the wait at the DP
//                    barriers at the end of the iteration and any compute delayed behind them, e.g. ZeRO-3)
//   exposed_comm_us  in the alone timing: compute-lane gaps whose binding (latest) dependency is an op of the
//                    device's DP lane (ZeRO-3 weight all-gathers) or of its dispatch lane (a forward of chunk 0
//                    waiting for its micro-batch's data-dispatch all-to-all), plus local_time_us minus the last compute
//                    finish of the whole replica (DP communication not hidden behind the replica's compute;
//                    this tail is the same for every device of the replica)
//   bubble_us        local_time_us - busy_us - exposed_comm_us: waiting on pipeline dependencies inside the
//                    replica (warm-up/cool-down, imbalance between stages, P2P transfers, the wait for the
//                    rest of the replica's pipeline to finish its compute)
//   exposed_dispatch_us  the part of exposed_comm_us blamed on the dispatch lane (stage-0 devices only)
//   dispatch_us, dispatch_ops  the device's data-dispatch all-to-all ops (and backward all-to-alls) as timed
//                    (their finish - start; with contention the SimGrid engine's), and how many micro-batches
//                    they served (the forward dispatch ops)
// so that busy_us + bubble_us + exposed_comm_us + idle_us == T for every device (up to rounding). With dp = 1
// idle_us = 0; with uniform costs and no communication, bubble_us / T = (P-1)/(M+P-1) for gpipe and 1f1b.
//
//   MMTWIN_ASSIGN_OR_RETURN(OpGraph g, BuildIterationGraph(pc, schedule, costs, statics, comm));
//   IterationTiming t;                 // reuse across iterations: no allocation after the first call
//   EvaluateAnalytic(g, &t);
//   double bubble = Totals(t).bubble_ratio;
#pragma once

#include <vector>

#include "core/graph/op_graph.h"

namespace mmtwin {

struct DeviceTiming {
  double busy_us = 0;
  double recompute_us = 0;
  double tp_us = 0;
  double bubble_us = 0;
  double exposed_comm_us = 0;
  double idle_us = 0;
  double local_time_us = 0;  // the device's replica's iteration time when timed alone
  double exposed_dispatch_us = 0;
  double dispatch_us = 0;
  int dispatch_ops = 0;
};

struct IterationTiming {
  double iteration_time_us = 0;  // T
  std::vector<double> start_us;  // per op of the graph
  std::vector<double> finish_us;
  std::vector<DeviceTiming> devices;    // per op-graph device (DeviceMesh::Device)
  std::vector<double> replica_time_us;  // per DP replica: its iteration time alone
  std::vector<double> local_finish_us;  // per op: finish in the replica-alone timing (empty when dp == 1)
};

// Ratios over all devices: sum over devices of the quantity / (devices * T). They add up to 1.
struct TimingTotals {
  double busy_ratio = 0, bubble_ratio = 0, idle_ratio = 0, exposed_comm_ratio = 0, recompute_ratio = 0;
};

void EvaluateAnalytic(const OpGraph& graph, IterationTiming* out);
IterationTiming EvaluateAnalytic(const OpGraph& graph);

// The iteration time T alone, equal bit for bit to EvaluateAnalytic's iteration_time_us (the same sweep in the
// same order, without the attribution and the replica-alone sweep: about a third of its work). `finish_us` is
// scratch (one entry per op afterwards; reuse it so repeated calls do not allocate). For callers that compare
// plans by T only (the bmp partition policy's candidates, driver/planner.cc).
double AnalyticIterationTimeUs(const OpGraph& graph, std::vector<double>* finish_us);

// The attribution step alone, for evaluators that time the graph themselves (the SimGrid engine): from
// out->start_us and out->finish_us (filled, one per op) it sets iteration_time_us, replica_time_us,
// local_finish_us and devices as above. The "replica alone" timing sweeps OpGraph::local_deps with
// `alone_duration_us` (one per op; EvaluateAnalytic passes graph.duration_us, the SimGrid engine each op's
// simulated finish - start, so contention slow-downs stay in the alone timing). busy_us counts
// graph.duration_us.
void AttributeDevices(const OpGraph& graph, const std::vector<double>& alone_duration_us,
                      IterationTiming* out);
TimingTotals Totals(const IterationTiming& t);

}  // namespace mmtwin

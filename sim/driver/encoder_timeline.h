// SPDX-License-Identifier: Apache-2.0
// The bubble scheduler's view of a timed LLM-only iteration (core/plan/encoder.h EncoderTimeline), for the planner
// (policies.encoder bubbles) and the tests: built from the op graph and its analytic timing, robust to the DP
// replicas' different data (one schedule serves them all): a rank's schedule op spans from the earliest start to
// the latest end of its compute-lane ops over the replicas, the first chunk's forward of micro-batch m starts at
// its earliest start and its backward (or B) ends at its latest end, and an encoder pass takes its longest time over the replicas (IterationCosts::encoder: forward and
// its TP collectives; recompute, backward and its TP collectives); the sends of its output and its gradient as
// one P2P transfer of the output's bytes by `comm` (the slowest replica's).
//
//   const IterationTiming t = EvaluateAnalytic(llm_only_graph);
//   EncoderTimeline tl = EncoderTimelineOf(llm_only_graph, t, schedule, costs, comm, /*backward=*/true);
//   MMTWIN_ASSIGN_OR_RETURN(schedule.encoder, PlaceEncoderPasses(schedule, tl, {}));
#pragma once

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/comm_cost.h"
#include "core/plan/encoder.h"

namespace mmtwin {

// `g` built from `s` (without encoder passes) and `costs` (with IterationCosts::encoder), timed as `t`.
EncoderTimeline EncoderTimelineOf(const OpGraph& g, const IterationTiming& t, const Schedule& s,
                                  const IterationCosts& costs, const CommCostModel& comm, bool backward);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Encoder placement policies (scenario key policies.encoder): where a multimodal model's encoders run, i.e. the
// layers before the LLM's first (vision and audio encoders and their projectors, Layers(model) [0, E)). One
// registry (core/util/registry.h); every policy is pure.
//
//   pipeline  (default) the encoders are layers of the pipeline, partitioned with the LLM's (the partition
//             policy decides; Megatron-LM puts them on the first chunk).
//   bubbles   Optimus (Feng et al., "Optimus: Accelerating Large-Scale Multi-Modal LLM Training by Bubble
//             Exploitation", USENIX ATC'25, §3-4): the encoders leave the pipeline, which holds the LLM alone
//             (the partition policy cuts the LLM's layers: Partition::bounds[0] = E), and every device holds a
//             replica of them (Optimus's encoder plan with PP_enc = 1 and TP_enc = the LLM's TP: DP_enc = dp x
//             pp replicas, their gradients synchronized over all of them). Micro-batch m's encoder forward runs
//             whole on one pipeline rank and must end, its output sent on, before the first chunk's forward of
//             m; its backward runs on the same rank after the first chunk's backward of m has sent the
//             gradient back (Optimus §4.3's dependencies EF_i <= F_i, EB_i >= B_i). Which rank and where in its
//             order: the bubble scheduler below, on the LLM pipeline's own timeline (Optimus fixes the LLM plan
//             first and schedules the encoder into its bubbles, §3.2).
//
// The bubble scheduler (PlaceEncoderPasses), on the LLM-only iteration timed without the encoders (the planner
// times its first replayed iteration): each rank's schedule ops span [earliest start, latest end] over the DP
// replicas; its bubbles are the gaps between consecutive ops (from the latest end of the ops before to the next
// op's earliest start: a pass there runs between the same two ops on every replica), the leading gap (before
// its first op: the pipeline's warm-up, a ZeRO gather) and the trailing one (after its last: the cool-down,
// the gradient synchronization) open-ended outward. The LLM timeline may start later by a shift S (the encoder
// work the bubbles cannot hide before the first forward): every op moves by S, the leading gaps grow by S.
//   1. Micro-batch by micro-batch in order (earliest deadline first), both passes at once: the forward's
//      deadline on rank r is the first chunk's forward start F_m + S, less the output's send time when r is not
//      the first chunk's rank; each rank offers its earliest gap where the forward fits whole before the
//      deadline, and then (the encoders training) its earliest gap that holds the backward from the gradient's
//      arrival on (the first chunk's backward end B_m + S, plus the gradient's send time from another rank; the
//      trailing gap always holds it). The rank whose backward would end first takes the micro-batch (a late
//      backward is what the iteration's tail exposes), then the one whose forward ends first, then the lower
//      rank; both gaps shrink by the passes.
//   2. If some forward fits nowhere in time, S grows by the least that would let one of its ranks' gaps hold
//      it (lateness, or a leading gap's shortfall) and step 1 starts again (at most 4 M + 16 rounds; then S =
//      the forwards' total, which rank 0's leading gap holds in order).
//   3. Each rank's passes go before the schedule op their gap precedes (Schedule::encoder's `before`), in
//      planned-start order within a gap.
// The planned iteration is max(the LLM's iteration + S, the passes' ends); the op graph's timing of the placed
// passes is never later but for the encoders' gradient synchronization, which the plan leaves out (its ops start
// as soon as their order and data allow, and the plan is one such timing; tested on two replicas' random costs).
// `fill` coarse is Optimus's InitSchedule (Alg. 2): forwards only in the leading gaps, backwards only in the
// trailing ones; fine (default) also uses the gaps between ops of at least `min_bubble_us` (Optimus's
// OptimizeSchedule moves micro-batches into those bubbles; it packs kernels, mmtwin whole passes: a bubble
// shorter than a pass stays empty), and keeps the coarse plan instead when that plans a shorter iteration (as
// Optimus returns the best schedule it has found: its greedy choices are not always better). The passes' times
// are those of the planner's timed iteration (each pass its longest over the replicas); the op graph then times
// every iteration with its own (a pass that does not fit delays what waits for it).
// mmtwin's choices where Optimus is open: PP_enc = 1 (no encoder pipeline across ranks; the paper searches
// PP_enc among the factors of PP), whole passes instead of kernels, no slowdown of LLM kernels that overlap an
// encoder pass (the paper assumes none), the encoder's gradient synchronization after the device's other
// gradient collectives (core/graph/op_graph.h), the encoders' activations held from a pass's forward to its
// backward on its rank (the paper's memory estimate ignores them, §4.5) and, since a rank then holds several
// micro-batches' at once, the encoders' layers recomputed whole (their inputs kept) under every recompute policy
// but none (the recompute policies plan the pipeline's chunks). The partition and recompute policies see the
// LLM's pipeline alone (its candidates timed without the encoders). Not with sequence parallelism, ZeRO-3 or a
// data dispatch (the scenario checker refuses them).
//
//   MMTWIN_ASSIGN_OR_RETURN(auto passes, PlaceEncoderPasses(schedule, timeline, {}));
//   schedule.encoder = std::move(passes);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model/model.h"
#include "core/plan/plan.h"
#include "core/util/registry.h"
#include "core/util/status.h"

namespace mmtwin {

// The LLM-only iteration as the bubble scheduler sees it (times in microseconds).
struct EncoderTimeline {
  // Per pipeline rank, each of its schedule ops (Schedule::per_rank order): the earliest start and the latest
  // end of its compute-lane ops over the DP replicas (one schedule serves them all).
  std::vector<std::vector<double>> op_start_us, op_end_us;
  // Per micro-batch: the first chunk's forward start and its backward end (the input gradient's, for a split
  // backward), the encoder passes' durations, and the sends of its output and its gradient between ranks.
  std::vector<double> first_forward_start_us, first_backward_end_us;
  std::vector<double> forward_us, backward_us;
  std::vector<double> output_send_us, gradient_send_us;
  double iteration_us = 0;  // the LLM-only iteration's time (its end, the gradient collectives included)
  bool backward = true;  // the encoders train (a frozen encoder with nothing trained before it: no backward)
};

struct EncoderPlacementOptions {
  bool fine = true;          // also the gaps between ops (else the leading / trailing gaps only)
  double min_bubble_us = 0;  // fine: gaps shorter than this are not used
};

// What the scheduler chose, for reports and tests.
struct EncoderPlacementReport {
  double shift_us = 0;                   // S
  double planned_us = 0;                 // the planned iteration: max(iteration_us + S, the passes' ends)
  bool coarse = false;                   // the coarse fill was kept (fine keeps it when its plan is shorter)
  std::vector<int> rank_of_micro_batch;  // each micro-batch's encoder rank
  std::vector<double> forward_start_us, backward_start_us;  // planned, on the shifted timeline
};

// Places every micro-batch's encoder passes (steps 1-4 above); Schedule::encoder of `s`. Errors: a timeline
// whose sizes do not match `s`, negative or non-finite durations.
Result<std::vector<std::vector<EncoderPass>>> PlaceEncoderPasses(const Schedule& s, const EncoderTimeline& t,
                                                                 const EncoderPlacementOptions& o,
                                                                 EncoderPlacementReport* report = nullptr);

// The registry's run function: Schedule::encoder from the timeline (pipeline: empty).
using EncoderPlacementFn = Result<std::vector<std::vector<EncoderPass>>> (*)(const Schedule&,
                                                                             const EncoderTimeline&,
                                                                             const Params&);
const PolicyRegistry<EncoderPlacementFn>& EncoderPlacements();

// E: the layers of `layers` (Layers(model)) before the LLM's first (0: the model has no encoder).
int EncoderLayerCount(const ModelSpec& model, const std::vector<Layer>& layers);

}  // namespace mmtwin

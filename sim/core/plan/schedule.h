// SPDX-License-Identifier: Apache-2.0
// Pipeline schedules: the order in which every pipeline rank runs the forwards and backwards of its chunks
// (core/plan/plan.h: Schedule, PipeOp). One explicit registry (name, one-line description); a schedule is a
// pure function of (pp, vpp, micro_batches) and is the same for every DP replica.
//
// Built in (sim/docs/algorithms.md §5):
//   gpipe             rank r: F(0..M-1) then B(0..M-1) of its chunk r. vpp must be 1.
//   1f1b              rank r: w = min(pp - r - 1, M) warm-up forwards, then pairs F(w + i), B(i) (1F1B steady
//                     state), then the cool-down backwards. vpp must be 1.
//   interleaved-1f1b  Megatron-LM's virtual pipeline: vpp >= 2 chunks per rank (chunk c on rank c % pp), the
//                     M * vpp forward "virtual micro-batches" of a rank visited in groups of pp micro-batches
//                     per chunk (k -> chunk (k mod pp*vpp) / pp, micro-batch (k / (pp*vpp)) * pp + k mod pp;
//                     backwards visit chunks in reverse); warm-up 2 (pp - r - 1) + (vpp - 1) pp forwards,
//                     capped at M * vpp, then 1F1B, then cool-down. Requires M % pp == 0.
//   zb-h1             Zero Bubble H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the backward
//                     split into B (input gradient, PassKind::kBackwardInput) and W (weight gradient,
//                     kBackwardWeight, priced as ChunkCost::bwd_weight_us). Rank r: min(pp - r - 1, M) warm-up
//                     forwards, then F, B, W steps with W of micro-batch i deferred until B of i + r ran, then
//                     the remaining B, W. At most pp micro-batches between F and W on every rank (1F1B's peak,
//                     on rank 0); on uniform costs and free links every rank's bubble is (pp - 1)(F + B - W)
//                     (1F1B: (pp - 1)(F + B + W)).
//   zb-h2             Zero Bubble H2: min(2(pp - r) - 1, M) warm-up forwards, then B, W, F steps with W deferred
//                     by 2r (the "parallelogram"): at most 2pp - 1 micro-batches held; on uniform costs with
//                     M >= 2pp - 1 rank 0 idles (pp - 1)(F + B - 2W) between its first and last op (zero
//                     when F + B = 2W), the other ranks no more. The paper's zero bubble also needs its optimizer post-validation, which
//                     lets the next iteration start in this one's tail; mmtwin times one iteration (iteration
//                     time = makespan, with rank r's start r F), so that overlap is not credited.
//   Both: vpp must be 1. Memory counts a micro-batch's activations as held from F to W (the paper's M_W, the
//   weight GEMMs' inputs and output gradients, is 32 of M_B's 34 s b h per layer: slightly high).
//
// Chunks are global chunk ids (0 .. pp*vpp - 1); micro-batches are 0 .. M-1.
//
//   MMTWIN_ASSIGN_OR_RETURN(Schedule s, BuildSchedule("1f1b", /*pp=*/4, /*vpp=*/1, /*micro_batches=*/8));
//   std::vector<int> peak = MaxInFlight(s);  // {4, 3, 2, 1}: micro-batch-chunks whose activations are held
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/plan/plan.h"
#include "core/util/registry.h"
#include "core/util/status.h"

namespace mmtwin {

// A schedule's builder: fills s.per_rank (sized pp, s.pp/vpp/micro_batches set) with its typed parameters.
using ScheduleFn = void (*)(Schedule& s, const Params& params);

// The registry (core/util/registry.h), in a fixed order. The built-in schedules take no parameters; any
// parameter given to them is an error listing the valid ones ("schedule '1f1b': unknown parameter 'bogus'").
const PolicyRegistry<ScheduleFn>& Schedules();
// (name, one-line description) of every schedule, in registry order.
const std::vector<std::pair<std::string, std::string>>& ScheduleNames();

// Builds the named schedule. Errors: unknown name ("unknown schedule 'x'; valid values are: gpipe, 1f1b,
// interleaved-1f1b, zb-h1, zb-h2"), an unknown or mistyped parameter, pp < 1, micro_batches < 1, vpp != 1
// for gpipe / 1f1b / zb-h1 / zb-h2, vpp < 2 or M % pp != 0 for interleaved-1f1b.
Result<Schedule> BuildSchedule(std::string_view name, int pp, int vpp, int micro_batches,
                               const std::map<std::string, std::string>& params = {});
// BuildSchedule's checks alone, without building it (which takes 2 * pp * vpp * micro_batches ops): the same
// errors.
Status CheckScheduleShape(std::string_view name, int pp, int vpp, int micro_batches,
                          const std::map<std::string, std::string>& params = {});

// Checks the structure: per_rank has pp entries; every op's chunk lies on its rank (chunk % pp == rank) and
// in [0, pp*vpp), micro-batch in [0, M); every (micro-batch, chunk) has exactly one forward and one backward
// on its rank, the forward first; the encoder passes as ValidateEncoderPasses.
Status ValidateSchedule(const Schedule& s);

// The encoder passes alone (Schedule::encoder; ValidateSchedule calls it): none, or pp lists; each pass a forward
// or a whole backward of a micro-batch in range, `before` non-decreasing within a rank and at most the rank's op
// count; one forward per micro-batch; backwards for none or for every micro-batch, each after its forward on the
// same rank.
Status ValidateEncoderPasses(const Schedule& s);

// Per rank: the largest number of micro-batch-chunks whose forward has run and whose backward has not yet
// (the activations the schedule keeps alive). 1F1B: min(pp - r, M); GPipe: M.
std::vector<int> MaxInFlight(const Schedule& s);

}  // namespace mmtwin

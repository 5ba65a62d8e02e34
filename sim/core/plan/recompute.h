// SPDX-License-Identifier: Apache-2.0
// Activation recomputation policies (sim/docs/algorithms.md §3, OmniBal §4.3): which layers rerun their
// forward before the backward instead of keeping their activations. One explicit registry, like the data and
// partition policies; every policy is pure.
//
//   RecomputeContext ctx{worst_profile, partition, parallel,
//                        MaxInFlight(schedule),                                           // core/plan/schedule.h
//                        RankModelStateBytes(parallel, partition, worst_profile.params),  // core/plan/memory.h
//                        ProfileBoundaryBytes(worst_profile, partition, parallel),
//                        80ll << 30};
//   RecomputeReport report;
//   MMTWIN_ASSIGN_OR_RETURN(RecomputePlan rc, RunRecomputePolicy("adaptive", {}, ctx, &report));
//   // or RunRecomputePolicy("block:4", {}, ctx): the Megatron policies need only profile, partition, parallel
//
// Built in (see RecomputePolicies() for parameters):
//   none      nothing recomputed
//   full      every transformer layer recomputed (Megatron recompute_granularity=full, uniform, N = 1)
//   selective Megatron recompute_granularity=selective: no layer recomputed whole; the cost model
//             (AnalyticOptions::selective_recompute, core/cost/cost_model.h) recomputes the attention core
//             inside each layer's backward and, without flash attention, stores no score activations
//   uniform   num_layers = N: each chunk's transformer layers in consecutive groups of N (a group never spans
//             two components), every layer recomputed, only each group's input kept (Megatron
//             recompute_method=uniform)
//   block     num_layers = N: the first N transformer layers of each chunk recomputed, the rest not (Megatron
//             recompute_method=block); N >= the chunk's layers recomputes all of them
//   adaptive  OmniBal balanced adaptive recomputation: per pipeline rank the fewest recomputed layers that fit
//             device memory, chosen by memory saved per recompute cost (below)
// The spellings "uniform:N" and "block:N" are accepted as name + num_layers.
//
// Recomputable layers: transformer blocks only (LayerKind::kTransformer; the layers Megatron checkpoints) that
// have a backward (Layer::backward not kNone: a frozen encoder with nothing trained before it stores nothing).
// Embeddings, projectors and the LM head are never recomputed. When profile.layers is empty every layer
// counts as a transformer block (tests, synthetic profiles).
//
// Encoding in RecomputePlan::layers (one entry per layer of Layers(model)):
//   0                   kept: its activations (act_bytes) are stored
//   kRecomputeKeepInput recomputed, its input is stored (act_bytes_recompute); every full / block / adaptive
//                       layer and the first layer of a uniform group
//   kRecomputeInGroup   recomputed, nothing stored: rematerialized from its uniform group's input
// Any non-zero value means "rerun the forward before the backward" (RecomputePlan::Count counts both). A
// consumer that treats every non-zero entry as kRecomputeKeepInput over-counts uniform:N memory by the
// group's inner inputs; LayerHeldActBytes gives the exact stored bytes.
//
// Adaptive, precisely. For pipeline rank r with chunks C_r, n = in_flight[r] forwards held at the peak (from
// the schedule, MaxInFlight), spread evenly over its chunks (n_c = n / vpp), and a set S of recomputed
// layers:
//   M_r(S) = model_state[r] + other[r] + reserve + sum_c n_c * held_c(S) + transient(S)
// where held_c is the chunk's stored activation bytes (LayerHeldActBytes summed) and the transient is the
// backward's peak above them (BackwardTransient in plan.h: rematerialized units and working memory, less what
// the layers already done have freed; max over the rank's chunks). EstimateRankMemory computes it. This
// matches ComputeMemory's walk when every micro-batch costs like the profile (give the profile of the worst
// micro-batch). Adaptive recomputes single layers (kRecomputeKeepInput); with t_l = act_l - act_recompute_l
// the transient is at most max_{l in S} t_l + W (W the rank's largest working memory), and each recomputed
// layer saves e_l = n_c * t_l of held activations: S surely fits when sum_S e_l covers the excess + max_S t_l
// + (W - the transient of the empty set) (a rank holding one micro-batch gains once two layers are
// recomputed).
//   1. If M_r(empty) fits: nothing. If even recomputing every layer with e_l > 0 does not fit: every
//      transformer layer of the rank (full; the memory report then says oom).
//   2. k = the fewest layers that surely fit (under the bound): for each cap T among the distinct t_l, the
//      smallest k_T whose k_T largest savings among the layers with t_l <= T cover the excess + T (+ the
//      working-memory term); k = min_T k_T.
//   3. For each T with k_T = k, choose k layers under T in order of saving per cost e_l / fwd_us_l (best
//      first; ties: larger saving, then earlier layer), taking a layer only when the remaining slots can
//      still cover the rest with the largest remaining savings; keep the cheapest set (sum of fwd_us). This
//      always ends with k layers that fit, and prefers cheap savings (ViT blocks in InternVL) when several
//      k-sets fit.
//   4. The bound over-counts the transient, so the chosen layers are dropped again, the most expensive first,
//      while the exact M_r still fits: the result fits, no layer of it can be dropped, and it has no more
//      layers than the fewest under the bound (tests/plan/recompute_test.cc checks all three by brute force).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan/partition.h"
#include "core/plan/plan.h"
#include "core/util/params.h"
#include "core/util/registry.h"
#include "core/util/status.h"

namespace mmtwin {

inline constexpr uint8_t kRecomputeKeepInput = 1;
inline constexpr uint8_t kRecomputeInGroup = 2;

struct RecomputeContext {
  LayerProfile profile;  // per-layer act bytes with/without recompute for the worst-case micro-batch
  Partition partition;
  ParallelConfig parallel;
  // adaptive only (the other policies ignore them):
  std::vector<int> in_flight;              // per pipeline rank: forwards held at the peak (MaxInFlight)
  std::vector<int64_t> model_state_bytes;  // per pipeline rank (RankModelStateBytes)
  std::vector<int64_t> other_bytes;        // per pipeline rank, e.g. boundary buffers; empty = 0
  int64_t capacity_bytes = 0;              // device memory
};

// Per-rank outcome of a policy under the adaptive memory estimate (filled for every policy when in_flight and
// model_state_bytes are given; empty otherwise).
struct RecomputeReport {
  std::string policy;
  std::map<std::string, std::string> params;
  std::vector<int> recomputed_layers;         // per pipeline rank
  std::vector<int64_t> estimated_peak_bytes;  // per pipeline rank, M_r(S) above
  std::vector<bool> fits;                     // per pipeline rank
};

using RecomputePolicyFn = Result<RecomputePlan> (*)(const RecomputeContext&, const Params&);

using RecomputePolicyInfo = RegistryEntry<RecomputePolicyFn>;
const PolicyRegistry<RecomputePolicyFn>& RecomputePolicyRegistry();

// The registry, in a fixed order: none, full, uniform, block, adaptive.
const std::vector<RecomputePolicyInfo>& RecomputePolicies();
// Error "unknown recompute policy 'x'; valid values are: none, full, uniform, block, adaptive".
Result<const RecomputePolicyInfo*> FindRecomputePolicy(std::string_view name);
// Parses "uniform:N" / "block:N" (N must agree with an explicit num_layers), validates the context and the
// parameters, runs the policy. The plan has one entry per profile layer.
Result<RecomputePlan> RunRecomputePolicy(std::string_view name,
                                         const std::map<std::string, std::string>& params,
                                         const RecomputeContext& ctx, RecomputeReport* report = nullptr);

// Stored activation bytes of each layer under `plan` (0 -> act_bytes, kRecomputeKeepInput ->
// act_bytes_recompute, kRecomputeInGroup -> 0), and their sum over each chunk of `partition`.
std::vector<int64_t> LayerHeldActBytes(const LayerProfile& profile, const RecomputePlan& plan);
std::vector<int64_t> ChunkHeldActBytes(const LayerProfile& profile, const Partition& partition,
                                       const RecomputePlan& plan);
// M_r(S) above for every pipeline rank; empty unless in_flight and model_state_bytes have pp entries and the
// partition lies within the profile.
std::vector<int64_t> EstimateRankMemory(const RecomputeContext& ctx, const RecomputePlan& plan);

// ---- Memory checks from a profile (for planners and bmp's fits_with_full_recompute) ----

// Boundary buffers per pipeline rank estimated from the profile, as ComputeMemory counts them from priced
// costs: the largest send of the rank's chunks plus the largest receive (the previous chunk's send), with
// send = boundary_bytes of the chunk's last layer / tp (the pricer's Megatron scatter/gather split).
std::vector<int64_t> ProfileBoundaryBytes(const LayerProfile& profile, const Partition& partition,
                                          const ParallelConfig& parallel);
// True when every pipeline rank fits `capacity_bytes` with every transformer layer recomputed
// (EstimateRankMemory of the full plan, model states RankModelStateBytes over profile.params, other bytes
// ProfileBoundaryBytes). in_flight: per rank, MaxInFlight of the schedule. Bind it into
// PartitionContext::fits_with_full_recompute:
//   ctx.fits_with_full_recompute = [&](const Partition& p) {
//     return FitsWithFullRecompute(worst_profile, p, parallel, in_flight, capacity); };
bool FitsWithFullRecompute(const LayerProfile& profile, const Partition& partition,
                           const ParallelConfig& parallel, const std::vector<int>& in_flight,
                           int64_t capacity_bytes);

}  // namespace mmtwin

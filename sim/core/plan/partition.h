// SPDX-License-Identifier: Apache-2.0
// Pipeline partition policies: cut the flattened layer list (Layers(model): encoders, projector, LLM) into
// pp * vpp contiguous chunks (sim/docs/algorithms.md §2, OmniBal §4.2). One registry template
// (core/util/registry.h: name, one-line description, typed parameters, run function) for every policy kind. Every policy is pure: the same
// LayerProfile, chunk count, parameters and callbacks give the same Partition.
//
//   PartitionContext ctx;
//   ctx.profile = profile;   // per-layer times and bytes for a representative micro-batch (the planner fills
//   it) ctx.chunks = pp * vpp; ctx.pp = pp; ctx.fits_with_full_recompute = [&](const Partition& p) { ... };
//   // optional ctx.evaluate = [&](const Partition& p) -> Result<double> { ... };  // optional, simulated
//   iteration time (us) PartitionReport report; MMTWIN_ASSIGN_OR_RETURN(Partition part,
//   RunPartitionPolicy("bmp", {{"radius", "2"}}, ctx, &report));
//
// Built in (see PartitionPolicies() for parameters):
//   uniform  equal layer counts: chunk c holds layers [floor(c*L/C), floor((c+1)*L/C)), so the L mod C extra
//            layers are spread evenly over the chunks (not piled on the first or last ones)
//   megatron Megatron-LM's split: the LLM's transformer blocks in equal counts per chunk (an error when they do
//            not divide, as Megatron asserts), everything before them (encoders, projector, embedding) on the
//            first chunk and the head on the last; first_blocks / last_blocks set the first / last chunk's
//            count (Megatron's --decoder-first/last-pipeline-num-layers); account_for_embedding /
//            account_for_loss count the embedding / the head as one block each, so the first / last chunk
//            holds one block less (Megatron's --account-for-embedding/loss-in-pipeline-split; with one block
//            per chunk, Llama 3's split: the first chunk only the embedding, the last only the head and loss).
//            Needs LayerProfile::layers.
//   params   exact min-max of per-chunk parameter counts (what DeepSpeed partition_method=parameters aims at)
//   profile  exact min-max of per-chunk forward time (the "profile-based" baseline of OmniBal Table 4)
// The time-balancing policies (profile, bmp) balance per-layer forward time as OmniBal profiles it (FWD(l_i),
// §4.2), which stands for the whole step while every layer's backward is about twice its forward. With frozen
// components (core/model/model.h LayerBackward) it is not: a frozen encoder with nothing trained before it has
// no backward at all. Their `balance` parameter: forward, training (forward + backward per layer) or auto
// (default: training when some layer's backward is not kFull, else forward, so that OmniBal's runs are
// unchanged). In bmp the choice replaces "fwd" in the anchor and the score below.
//   bmp      OmniBal balanced model partition: greedy anchor, every cut jittered within +-radius, candidates
//            ranked by a normalized VAR(fwd) + SUM(comm) score, the top K (plus the anchor) timed by the
//            evaluator, the fastest kept
//
// Exact min-max (params, profile): dynamic programming over (chunk, last layer), O(C * L^2). Among all
// partitions achieving the optimal maximum, a second DP picks the one with the smallest sum of squared chunk
// weights (i.e. the smallest variance), ties broken towards earlier cuts, so the result is unique and
// balanced even when one heavy layer fixes the maximum.
//
// BMP details (every choice documented here):
// - Anchor (greedy): walk the chunks in order; chunk c ends at the cut whose prefix weight is closest to
//   (remaining forward time) / (remaining chunks) (ties: the earlier cut), leaving at least one layer per
//   remaining chunk.
// - Candidates: anchor cut k moved by d_k in [-radius, radius] independently, kept when cuts stay strictly
//   increasing inside [1, L-1]: up to (2r+1)^(C-1) partitions, enumerated lazily (odometer order) without
//   storing them; only the best top_k by score are kept (a bounded max-heap). When the space exceeds
//   `max_candidates`, a deterministic sample of max_candidates offset vectors (Rng seeded by `seed`) is
//   scored instead, plus the anchor; the report says so (sampled = true).
// - Score (lower is better), both terms dimensionless:
//     score = VAR(fwd) / mean(fwd)^2 + comm_weight * SUM(comm) / ((C - 1) * max_boundary)
//   VAR(fwd) is the population variance of the chunks' forward times (OmniBal eq. 4 without the 1/N only
//   scales it by N), so the first term is the squared coefficient of variation; SUM(comm) is the sum of
//   boundary_bytes of the last layer of every chunk but the last (eq. 5), divided by its largest possible
//   value (every cut at the layer with the largest boundary among layers 0..L-2) so the second term is in [0,
//   1]. comm_weight = 0.1 (default) makes "every cut at the widest activation" cost as much as a 32%
//   coefficient of variation of chunk times. A term whose denominator is 0 counts 0.
// - Memory: with a fits_with_full_recompute callback, a candidate it rejects is dropped before it can enter the
//   top K (checked only for candidates that would enter it: about a thousand calls for 78k candidates in
//   partition_bench, all of them only when nearly everything is rejected).
// - Evaluation: the anchor (when it fits) is evaluated first, then the top_k candidates in ascending score
//   (the anchor is not evaluated twice): at most top_k + 1 evaluator calls. The fastest wins; ties keep the
//   earlier one (the anchor first), so bmp is never slower than its anchor on the evaluator. With a
//   lower_bound callback and prune = true (default), a candidate after the first whose bound is >= the
//   fastest time so far is skipped (report.evaluated_pruned): the same choice for less work. Without an
//   evaluator the best-scored valid candidate is returned. When no candidate fits memory, the anchor is
//   returned and report.memory_feasible is false (the memory report then says oom).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost/cost_model.h"
#include "core/model/model.h"
#include "core/plan/plan.h"
#include "core/util/params.h"
#include "core/util/registry.h"
#include "core/util/status.h"

namespace mmtwin {

// Per-layer quantities for one representative micro-batch (the planner fills it from the cost model; e.g. the
// mean micro-batch for partitioning, the worst one for recompute). Index = position in Layers(model).
// Times in microseconds per GPU; params whole (all TP ranks); boundary_bytes whole (the activation handed to
// the next layer, not divided by TP); act_bytes / act_bytes_recompute per GPU (stored for the backward
// without / with full recomputation of that layer); bwd_work_bytes per GPU (the backward's working memory,
// LayerCost::bwd_work_bytes; may be empty: none).
struct LayerProfile {
  std::vector<Layer> layers;
  std::vector<double> fwd_us, bwd_us;
  std::vector<int64_t> params, boundary_bytes, act_bytes, act_bytes_recompute;
  std::vector<int64_t> bwd_work_bytes;
  int64_t WorkBytes(int l) const {
    return l < static_cast<int>(bwd_work_bytes.size()) ? bwd_work_bytes[l] : 0;
  }

  int size() const { return static_cast<int>(fwd_us.size()); }
};
// Builds a profile from the layers and their costs for one micro-batch (e.g. Pricer::LayerCosts, or
// CostModel::Cost per layer); params come from Layer::params. Requires layers.size() == costs.size().
LayerProfile MakeLayerProfile(const std::vector<Layer>& layers, const std::vector<LayerCost>& costs);
// Every vector has the same length (layers may be empty: then only the numeric vectors are checked), times
// and bytes are finite and >= 0.
Status ValidateLayerProfile(const LayerProfile& p);

struct PartitionContext {
  LayerProfile profile;
  int chunks = 1;  // pp * vpp
  int pp = 1;
  // True when the partition fits device memory with every layer recomputed. Empty: everything fits.
  std::function<bool(const Partition&)> fits_with_full_recompute;
  // Simulated iteration time in microseconds (e.g. the analytic evaluator on a few sampled iterations).
  // Empty: bmp ranks candidates by score only. Errors propagate out of RunPartitionPolicy.
  std::function<Result<double>(const Partition&)> evaluate;
  // A lower bound on evaluate(p) in microseconds, never above it and cheaper (the planner's: the slowest DP
  // replicas of the last evaluation timed alone), valid once evaluate has run; 0 = no bound. bmp (parameter
  // prune) does not evaluate a candidate whose bound is already >= the fastest time so far: it could not be
  // chosen (that needs a strictly lower time), so the choice is the same. Empty: every candidate is evaluated.
  std::function<Result<double>(const Partition&)> lower_bound;
};

// What a policy chose and why, for reports (`mmtwin plan`, Table 4-style comparisons).
struct PartitionReport {
  std::string policy;
  std::map<std::string, std::string> params;  // resolved (defaults filled)
  // Metrics of the chosen partition (PartitionMetrics).
  double var_fwd_us2 = 0;  // population variance of per-chunk forward time (us^2)
  double mean_fwd_us = 0;
  double max_fwd_us = 0;
  int64_t sum_comm_bytes = 0;  // boundary bytes at the cuts (whole activation)
  double var_params = 0;       // population variance of per-chunk parameter counts
  double var_layers = 0;       // population variance of per-chunk layer counts
  // bmp only.
  Partition anchor;
  double score = 0;                  // score of the chosen partition (bmp formula)
  int64_t candidates = 0;            // candidates scored
  bool sampled = false;              // the candidate space exceeded max_candidates and was sampled
  int64_t memory_checks = 0;         // fits_with_full_recompute calls
  int64_t memory_rejected = 0;       // candidates dropped by it
  bool memory_feasible = true;       // some candidate fits (else the anchor is returned)
  std::vector<Partition> evaluated;  // in evaluation order (anchor first)
  // Per evaluated candidate: its time, or for a pruned one (evaluated_pruned[i] = 1) its lower bound, which is
  // >= the fastest time at that point, hence >= chosen_time_us.
  std::vector<double> evaluated_time_us;
  std::vector<uint8_t> evaluated_pruned;
  int64_t pruned = 0;          // candidates skipped by their lower bound
  double anchor_time_us = -1;  // -1 when not evaluated
  double chosen_time_us = -1;
};

// VAR/mean/max of chunk forward times, SUM(comm), VAR(params), VAR(layers) of `p` (fills those fields only).
void PartitionMetrics(const LayerProfile& profile, const Partition& p, PartitionReport& out);

using PartitionPolicyFn = Result<Partition> (*)(const PartitionContext&, const Params&, PartitionReport&);

using PartitionPolicyInfo = RegistryEntry<PartitionPolicyFn>;
const PolicyRegistry<PartitionPolicyFn>& PartitionPolicyRegistry();

// The registry, in a fixed order: uniform, megatron, params, profile, bmp.
const std::vector<PartitionPolicyInfo>& PartitionPolicies();
// Error "unknown partition policy 'x'; valid values are: uniform, megatron, params, profile, bmp".
Result<const PartitionPolicyInfo*> FindPartitionPolicy(std::string_view name);
// Validates the context (profile, 1 <= chunks <= layers, chunks % pp == 0) and the parameters, runs the
// policy and checks the result (ValidatePartition). `report` (optional) receives the metrics and bmp's search
// details.
Result<Partition> RunPartitionPolicy(std::string_view name, const std::map<std::string, std::string>& params,
                                     const PartitionContext& ctx, PartitionReport* report = nullptr);

// ---- Building blocks (exposed for tests and other planners) ----
// Each returns an empty Partition (no bounds) unless 1 <= chunks <= number of layers.

// Exact min-max contiguous partition of `weights` (>= 0) into `chunks` non-empty parts, tie-broken by the
// smallest sum of squares, then earlier cuts. Requires 1 <= chunks <= weights.size().
Partition MinMaxPartition(const std::vector<double>& weights, int chunks);
// Largest chunk weight of `p` over `weights`.
double MaxChunkWeight(const std::vector<double>& weights, const Partition& p);
// Equal layer counts, remainder spread evenly: bounds[c] = floor(c * layers / chunks).
Partition UniformPartition(int layers, int chunks);
// BMP's greedy anchor over forward times (see above).
Partition GreedyAnchorPartition(const std::vector<double>& fwd_us, int chunks);
// BMP score of `p` (see above).
double BmpScore(const LayerProfile& profile, const Partition& p, double comm_weight);

// Per pipeline rank: the first and last layer of its chunks (rank r holds chunks r, r + pp, ...), how many
// layers it holds and how many of them recompute. What the per-stage tables of plan and simulate show.
struct StageShape {
  int first_layer = -1, last_layer = -1, layers = 0, recomputed = 0;
};
std::vector<StageShape> StageShapes(const ParallelConfig& parallel, const Partition& partition,
                                    const RecomputePlan& recompute);

}  // namespace mmtwin

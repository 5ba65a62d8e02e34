// SPDX-License-Identifier: Apache-2.0
// Post-balancing policies (OrchMLLM): random mini-batches drawn per rank, then redistributed across the DP ranks
// every step by a post-balance algorithm, and placed node-wise to cut inter-node traffic.
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/balance/data_policy.h"
#include "core/balance/orchestrator.h"
#include "core/balance/placement.h"
#include "core/balance/post_balance.h"

namespace mmtwin {
namespace {

std::vector<std::string> AlgorithmNames() {
  std::vector<std::string> v;
  for (auto a : AllPostBalanceAlgorithms()) v.emplace_back(PostBalanceAlgorithmName(a));
  return v;
}

// Bytes one token of a phase occupies when moved (bf16 activations of the component's hidden size).
int64_t PhaseBytesPerToken(const ModelSpec& m, const std::string& phase) {
  const Component* c = nullptr;
  if (phase == "vit") c = m.Find(ComponentKind::kVision);
  if (phase == "audio") c = m.Find(ComponentKind::kAudio);
  if (phase == "llm" || !c) c = m.Find(ComponentKind::kLlm);
  return c ? 2 * std::max<int64_t>(1, c->tf.hidden) : 2;
}

// All-gather strawman as transfers: every rank sends the bytes it drew to every other rank.
void AllGatherTransfers(const std::vector<int>& origin, const std::vector<int64_t>& bytes, int d,
                        std::vector<DispatchTransfer>* out) {
  std::vector<int64_t> drawn(d, 0);
  for (size_t i = 0; i < origin.size(); ++i) drawn[origin[i]] += bytes[i];
  for (int src = 0; src < d; ++src)
    for (int dst = 0; dst < d; ++dst)
      if (src != dst && drawn[src] > 0) out->push_back({src, dst, drawn[src]});
}

// One length per sample and balanced phase, as an int64 tensor all-gathered (OrchMLLM §5.2.1: only the lengths
// l_ij are gathered before balancing).
constexpr int64_t kLengthBytes = 8;

// The dispatcher's own work of a step (core/plan/dispatch.h): the all-gather of every rank's lengths (torch's
// all_gather pads each rank's tensor to the largest mini-batch; only when the samples move by all-to-all: the
// all-gather strawman gathers the samples themselves) and the host time, per sample of the step.
DispatchOverhead StepOverhead(const DataStep& step, int phases, bool length_gather,
                              double host_us_per_sample) {
  size_t largest = 0, samples = 0;
  for (const MiniBatch& b : step.ranks) {
    largest = std::max(largest, b.samples.size());
    samples += b.samples.size();
  }
  DispatchOverhead o;
  if (length_gather)
    o.length_gather_bytes =
        static_cast<int64_t>(step.ranks.size()) * static_cast<int64_t>(largest) * phases * kLengthBytes;
  o.host_us = host_us_per_sample * static_cast<double>(samples);
  return o;
}

}  // namespace

// The dispatcher's host time per sample of the step on the critical path, microseconds. No published figure:
// fitted (least squares through the origin) on OrchMLLM Table 2's 128, 256, 512 and 1,024-GPU overheads (MLLM-10B,
// mini-batch 60: 18.49, 21.32, 24.64, 31.37 ms) minus mmtwin's forward all-to-all and length all-gather on
// scenarios/sweeps/orchmllm-scale.yaml's runs (11.63, 12.56, 13.35, 14.37 ms): 0.315 us per sample; the 64 and
// 2,560-GPU rows are held out (reports/fidelity.md). Table 2 grows linearly with the step's samples
// (d x 60): an O(n) host step between the length all-gather and the all-to-all.
const char* const kHostUsPerSampleDefault = "0.315";
const char* const kHostUsPerSampleHelp =
    "dispatcher host time per sample of the step (all ranks), microseconds, on the critical path "
    "before the all-to-all (default fitted on OrchMLLM Table 2, 128-1,024 GPUs)";
const char* const kKeepOwnHelp =
    "each rank keeps its own draw up to the balanced target and only the excess moves (bins come "
    "out heaviest draw first; node-wise placement puts them back near their draws)";

const std::vector<ParamSpec> kPostBalanceParams = {
    {"batch_size", ParamType::kInt, "16", "samples each DP rank draws before balancing", {}, 1, 1 << 20},
    {"algorithm", ParamType::kString, "lpt", "post-balance algorithm", AlgorithmNames()},
    {"lambda",
     ParamType::kDouble,
     "0",
     "beta/alpha: weight of the quadratic attention term per token^2",
     {},
     0,
     1e6},
    {"tolerance",
     ParamType::kDouble,
     "0",
     "quadratic comparator tolerance in tokens (0 = default)",
     {},
     0,
     1e18},
    {"phase", ParamType::kString, "llm", "sizes that are balanced", {"llm", "vit", "audio"}},
    {"node_wise", ParamType::kBool, "true", "place balanced bins on ranks to minimize inter-node bytes"},
    {"refine", ParamType::kBool, "false",
     "after lpt, kk or quadratic: pairwise swaps between the heaviest and lightest bins (RefineBySwaps)"},
    {"equal_size", ParamType::kBool, "false",
     "lpt and kk: every rank gets the same number of samples (floor or ceil of the mean)"},
    {"bytes_per_token",
     ParamType::kInt,
     "0",
     "bytes moved per token (0 = 2 x hidden of the phase's component)",
     {},
     0,
     1e9},
    {"dispatch",
     ParamType::kString,
     "all-to-all",
     "data dispatch charged per step: all-to-all (origin -> placed rank), all-gather (every rank's drawn "
     "bytes to "
     "every other rank) or none",
     {"all-to-all", "all-gather", "none"}},
    {"keep_own", ParamType::kBool, "false", kKeepOwnHelp},
    {"host_us_per_sample", ParamType::kDouble, kHostUsPerSampleDefault, kHostUsPerSampleHelp, {}, 0, 1e6},
};

Result<DataPlan> RunPostBalancePolicy(const DataPolicyContext& ctx, const Params& p) {
  MMTWIN_ASSIGN_OR_RETURN(PostBalanceAlgorithm alg, ParsePostBalanceAlgorithm(p.Str("algorithm")));
  const PostBalanceOptions opts{alg, p.Double("lambda"), p.Double("tolerance"), p.Bool("refine"),
                                p.Bool("equal_size")};
  const std::string phase = p.Str("phase");
  const auto& len = phase == "vit"     ? ctx.sizes->vit_tokens
                    : phase == "audio" ? ctx.sizes->audio_tokens
                                       : ctx.sizes->llm_tokens;
  const int64_t bytes_per_token =
      p.Int("bytes_per_token") > 0 ? p.Int("bytes_per_token") : PhaseBytesPerToken(*ctx.model, phase);
  DataPlan plan = RandomBatches(ctx, p.Int("batch_size"), 3);
  plan.packed = alg != PostBalanceAlgorithm::kPadded && alg != PostBalanceAlgorithm::kConv;
  const std::string dispatch = p.Str("dispatch");

  const int d = ctx.dp;
  double ratio_sum = 0, ratio_max = 0, before_ratio_sum = 0, max_over_mean_sum = 0;
  double a2a_sum = 0, inter_sum = 0, inter_identity_sum = 0, max_rank_inter_sum = 0,
         max_rank_inter_identity_sum = 0;
  double allgather_sum = 0;
  std::vector<int64_t> lengths, bytes;
  std::vector<int> origin;
  std::vector<uint32_t> sample_of_item, items;
  std::vector<size_t> rank_start;
  std::vector<DispatchTransfer> transfers;
  const bool all_to_all = dispatch == "all-to-all";
  for (DataStep& step : plan.steps) {
    lengths.clear();
    bytes.clear();
    origin.clear();
    sample_of_item.clear();
    rank_start.assign(1, 0);
    for (int r = 0; r < d; ++r) {
      for (uint32_t s : step.ranks[r].samples) {
        lengths.push_back(len[s]);
        bytes.push_back(len[s] * bytes_per_token);
        origin.push_back(r);
        sample_of_item.push_back(s);
      }
      rank_start.push_back(lengths.size());
    }
    // Rank r drew items rank_start[r] .. rank_start[r + 1] - 1 (the mini-batches before balancing).
    items.resize(lengths.size());
    for (size_t i = 0; i < items.size(); ++i) items[i] = static_cast<uint32_t>(i);
    auto bins =
        p.Bool("keep_own") ? PostBalanceKeepOwn(lengths, origin, d, opts) : PostBalance(lengths, d, opts);
    const double lb = CostLowerBound(lengths, d, opts);
    // One BinCost per bin (MaxBinCost's max, in bin order, and the total).
    double max_cost = 0, total_cost = 0;
    for (const auto& b : bins) {
      const double c = BinCost(lengths, b, opts);
      max_cost = std::max(max_cost, c);
      total_cost += c;
    }
    double max_before = 0;
    for (int r = 0; r < d; ++r)
      max_before = std::max(max_before, BinCost(lengths,
                                                std::span<const uint32_t>(items).subspan(
                                                    rank_start[r], rank_start[r + 1] - rank_start[r]),
                                                opts));
    const double ratio = lb > 0 ? max_cost / lb : 1;
    ratio_sum += ratio;
    ratio_max = std::max(ratio_max, ratio);
    if (total_cost > 0) max_over_mean_sum += max_cost / (total_cost / d);
    before_ratio_sum += lb > 0 ? max_before / lb : 1;
    Placement identity = PlaceIdentity(bins, origin, bytes, ctx.ranks_per_node);
    Placement placed =
        p.Bool("node_wise") ? PlaceNodeWise(bins, origin, bytes, ctx.ranks_per_node) : identity;
    a2a_sum += static_cast<double>(placed.total_moved_bytes);
    inter_sum += static_cast<double>(placed.total_inter_node_bytes);
    max_rank_inter_sum += static_cast<double>(placed.max_rank_inter_node_bytes);
    inter_identity_sum += static_cast<double>(identity.total_inter_node_bytes);
    max_rank_inter_identity_sum += static_cast<double>(identity.max_rank_inter_node_bytes);
    // All-gather strawman: every rank receives every other rank's samples.
    int64_t total_bytes = 0;
    for (int64_t b : bytes) total_bytes += b;
    allgather_sum += static_cast<double>(total_bytes) * (d - 1);
    // The dispatcher's own work, from the drawn mini-batches.
    const DispatchOverhead overhead = StepOverhead(step, 1, all_to_all, p.Double("host_us_per_sample"));
    for (int r = 0; r < d; ++r) step.ranks[r].samples.clear();
    // The transfers are gathered and aggregated in a reused buffer; the step keeps an exact-size copy.
    transfers.clear();
    for (size_t b = 0; b < bins.size(); ++b) {
      const int rank = placed.rank_of_bin[b];
      auto& dst = step.ranks[rank].samples;
      for (uint32_t item : bins[b]) {
        dst.push_back(sample_of_item[item]);
        if (all_to_all) transfers.push_back({origin[item], rank, bytes[item]});
      }
    }
    if (dispatch == "all-gather") AllGatherTransfers(origin, bytes, d, &transfers);
    AggregateTransfers(&transfers);
    step.dispatch.assign(transfers.begin(), transfers.end());
    if (dispatch != "none") step.dispatch_overhead = overhead;
  }
  const double n = std::max<size_t>(1, plan.steps.size());
  plan.metrics["max_load_over_lower_bound"] = ratio_sum / n;
  plan.metrics["max_load_over_lower_bound_worst"] = ratio_max;
  plan.metrics["max_load_over_lower_bound_before"] = before_ratio_sum / n;
  plan.metrics["max_over_mean_load"] = max_over_mean_sum / n;
  plan.metrics["all_to_all_bytes"] = a2a_sum / n;
  plan.metrics["inter_node_bytes"] = inter_sum / n;
  plan.metrics["max_rank_inter_node_bytes"] = max_rank_inter_sum / n;
  plan.metrics["inter_node_bytes_identity_placement"] = inter_identity_sum / n;
  plan.metrics["max_rank_inter_node_bytes_identity_placement"] = max_rank_inter_identity_sum / n;
  plan.metrics["all_gather_bytes"] = allgather_sum / n;
  plan.details_json = nlohmann::json{{"per_step_means", true}, {"bytes_per_token", bytes_per_token}}.dump();
  return plan;
}

}  // namespace mmtwin

namespace mmtwin {

const std::vector<ParamSpec> kOrchestratorParams = {
    {"batch_size", ParamType::kInt, "16", "samples each DP rank draws before balancing", {}, 1, 1 << 20},
    {"vision_algorithm", ParamType::kString, "lpt", "vision encoder phase (ViT tiles are not padded)",
     AlgorithmNames()},
    {"audio_algorithm", ParamType::kString, "padded", "audio encoder phase (Whisper pads to the longest)",
     AlgorithmNames()},
    {"llm_algorithm", ParamType::kString, "lpt", "LLM phase (varlen packed sequences)", AlgorithmNames()},
    {"vision_lambda", ParamType::kDouble, "0", "quadratic weight of the vision phase", {}, 0, 1e6},
    {"audio_lambda", ParamType::kDouble, "0", "quadratic weight of the audio phase", {}, 0, 1e6},
    {"llm_lambda", ParamType::kDouble, "0", "quadratic weight of the LLM phase", {}, 0, 1e6},
    {"node_wise", ParamType::kBool, "true", "exact node-wise placement of every phase's bins"},
    {"compose", ParamType::kBool, "true",
     "send encoder outputs straight to their LLM rank (one all-to-all each)"},
    {"dispatch",
     ParamType::kString,
     "all-to-all",
     "data dispatch charged per step: all-to-all (every forward all-to-all transfer of every phase), "
     "all-gather (the strawman: every rank's drawn input bytes of every phase to every other rank), both "
     "with "
     "the encoder-output gradients' backward all-to-all, or none",
     {"all-to-all", "all-gather", "none"}},
    {"keep_own", ParamType::kBool, "false", kKeepOwnHelp},
    {"host_us_per_sample", ParamType::kDouble, kHostUsPerSampleDefault, kHostUsPerSampleHelp, {}, 0, 1e6},
};

Result<DataPlan> RunOrchestratorPolicy(const DataPolicyContext& ctx, const Params& p) {
  ModelPhaseOptions mo;
  MMTWIN_ASSIGN_OR_RETURN(mo.vision.algorithm, ParsePostBalanceAlgorithm(p.Str("vision_algorithm")));
  MMTWIN_ASSIGN_OR_RETURN(mo.audio.algorithm, ParsePostBalanceAlgorithm(p.Str("audio_algorithm")));
  MMTWIN_ASSIGN_OR_RETURN(mo.llm.algorithm, ParsePostBalanceAlgorithm(p.Str("llm_algorithm")));
  mo.vision.lambda = p.Double("vision_lambda");
  mo.audio.lambda = p.Double("audio_lambda");
  mo.llm.lambda = p.Double("llm_lambda");
  const OrchestratorOptions oo{ctx.dp, ctx.ranks_per_node, p.Bool("node_wise"), p.Bool("compose"),
                               p.Bool("keep_own")};
  const std::string dispatch = p.Str("dispatch");
  DataPlan plan = RandomBatches(ctx, p.Int("batch_size"), 3);
  plan.packed =
      mo.llm.algorithm != PostBalanceAlgorithm::kPadded && mo.llm.algorithm != PostBalanceAlgorithm::kConv;

  struct PhaseSums {
    std::string name;
    double ratio = 0, ratio_before = 0, max_over_mean = 0, dispatch_bytes = 0, inter_node_bytes = 0,
           all_gather_bytes = 0;
  };
  std::vector<PhaseSums> sums;
  double a2a = 0, a2a_max_rank = 0, inter_max_rank = 0, all_gather = 0;
  int ops = 0;
  std::vector<Sample> samples;
  std::vector<int> origin;
  std::vector<uint32_t> ids;
  for (DataStep& step : plan.steps) {
    samples.clear();
    origin.clear();
    ids.clear();
    for (int r = 0; r < ctx.dp; ++r)
      for (uint32_t s : step.ranks[r].samples) {
        samples.push_back(ctx.trace->samples[s]);
        origin.push_back(r);
        ids.push_back(s);
      }
    MMTWIN_ASSIGN_OR_RETURN(std::vector<PhaseInput> phases, PhaseInputsForModel(*ctx.model, samples, mo));
    MMTWIN_ASSIGN_OR_RETURN(OrchestratorResult res, Orchestrate(origin, phases, oo));
    if (sums.empty())
      for (const auto& ph : res.phases) sums.push_back({ph.name});
    for (size_t k = 0; k < res.phases.size() && k < sums.size(); ++k) {
      const PhaseReport& ph = res.phases[k];
      sums[k].ratio += ph.max_over_lower_bound;
      sums[k].ratio_before += ph.lower_bound > 0 ? ph.max_load_before / ph.lower_bound : 1;
      sums[k].max_over_mean += ph.mean_load > 0 ? ph.max_load / ph.mean_load : 1;
      sums[k].dispatch_bytes += static_cast<double>(ph.dispatch.bytes);
      sums[k].inter_node_bytes += static_cast<double>(ph.dispatch.inter_node_bytes);
      sums[k].all_gather_bytes += static_cast<double>(ph.all_gather_total_bytes);
    }
    a2a += static_cast<double>(res.all_to_all_bytes);
    a2a_max_rank += static_cast<double>(res.max_rank_all_to_all_bytes);
    inter_max_rank += static_cast<double>(res.max_rank_inter_node_bytes);
    all_gather += static_cast<double>(res.all_gather_bytes);
    ops = res.all_to_all_ops;
    step.dispatch.clear();
    step.dispatch_backward.clear();
    // The encoder outputs' gradients go back to the encoder ranks whichever way the inputs were dispatched
    // (the all-gather strawman replaces only the input dispatch).
    if (dispatch != "none") {
      for (const Transfer& t : res.gradient_transfers)
        step.dispatch_backward.push_back({t.src, t.dst, t.bytes});
      AggregateTransfers(&step.dispatch_backward);
    }
    if (dispatch == "all-to-all") {
      for (const Transfer& t : res.transfers) step.dispatch.push_back({t.src, t.dst, t.bytes});
    } else if (dispatch == "all-gather") {
      // Drawn bytes per sample: its input to every phase it takes part in (the LLM: every sample).
      std::vector<int64_t> drawn_bytes(origin.size(), 0);
      for (size_t ph = 0; ph < phases.size(); ++ph)
        for (size_t i = 0; i < origin.size(); ++i)
          if (ph + 1 == phases.size() || phases[ph].lengths[i] > 0) drawn_bytes[i] += phases[ph].bytes[i];
      AllGatherTransfers(origin, drawn_bytes, ctx.dp, &step.dispatch);
    }
    AggregateTransfers(&step.dispatch);
    if (dispatch != "none")
      step.dispatch_overhead = StepOverhead(step, static_cast<int>(phases.size()), dispatch == "all-to-all",
                                            p.Double("host_us_per_sample"));
    // The plan records the LLM phase's mini-batches (what the pipeline runs); encoder phases are in the report.
    const PhaseReport& llm = res.phases.back();
    for (int r = 0; r < ctx.dp; ++r) {
      auto& dst = step.ranks[r].samples;
      dst.clear();
      for (uint32_t i : llm.rank_samples[r]) dst.push_back(ids[i]);
    }
  }
  const double n = std::max<size_t>(1, plan.steps.size());
  double inter_total = 0;
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& s : sums) {
    inter_total += s.inter_node_bytes / n;
    phases.push_back({{"phase", s.name},
                      {"max_load_over_lower_bound", s.ratio / n},
                      {"max_load_over_lower_bound_before", s.ratio_before / n},
                      {"max_over_mean_load", s.max_over_mean / n},
                      {"dispatch_bytes", s.dispatch_bytes / n},
                      {"inter_node_bytes", s.inter_node_bytes / n},
                      {"all_gather_bytes", s.all_gather_bytes / n}});
  }
  plan.details_json = nlohmann::json{{"phases", phases}, {"per_step_means", true}}.dump();
  if (!sums.empty()) plan.metrics["max_load_over_lower_bound"] = sums.back().ratio / n;
  plan.metrics["all_to_all_bytes"] = a2a / n;
  plan.metrics["max_rank_all_to_all_bytes"] = a2a_max_rank / n;
  plan.metrics["inter_node_bytes"] = inter_total;
  plan.metrics["max_rank_inter_node_bytes"] = inter_max_rank / n;
  plan.metrics["all_gather_bytes_per_rank"] = all_gather / n;
  plan.metrics["all_to_all_ops"] = ops;
  return plan;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// OrchMLLM's multimodal global orchestrator (§6): post-balance every phase of one training iteration (each
// encoder, then the LLM) and account for the all-to-all traffic that moves the samples.
//
// One iteration: n samples; origin_rank[i] is the DP rank that drew sample i (its raw data and text live
// there). phases = the encoders (vision, audio, ...) in any order, then the LLM phase LAST.
//
// - phases[p].lengths[i]: tokens of sample i in phase p. 0 = the sample has no input for that encoder; such
//   samples are left out of the encoder phase. The LLM phase includes every sample.
// - phases[p].bytes[i]: bytes of sample i's input to phase p, held at origin_rank[i]: pixels / mel frames for an
//   encoder; for the LLM the whole interleaved sequence (text + encoder outputs).
// - phases[p].output_bytes[i] (encoders only): bytes of the encoder's output for sample i that the LLM consumes
//   (empty = none). The LLM phase's text part = bytes - sum of the encoders' output_bytes.
//
// Per phase: balance with phases[p].options (PostBalance), place the bins on ranks (node-wise exact placement,
// or bin i -> rank i), and move the data by all-to-all:
// - encoder dispatch: input bytes, origin rank -> encoder rank.
// - compose = true: encoder output, encoder rank -> LLM rank directly (Pi_LLM o Pi_enc^-1, one all-to-all per
//   encoder); the text part, origin -> LLM rank. Forward all-to-alls: 2E + 1.
// - compose = false: encoder output, encoder rank -> origin (reset, one all-to-all per encoder), then Pi_LLM on
//   the text and on each encoder's output, origin -> LLM rank. Forward all-to-alls: 3E + 1.
// - The backward pass mirrors the encoder -> LLM moves (gradients of the encoder outputs): gradient_transfers,
//   not in the forward totals below.
//
// The LLM placement sees every piece where it actually is (text at the origin, encoder outputs at the encoder
// rank when composing), so node-wise placement minimizes the LLM all-to-all's max per-rank inter-node volume.
// Strawman (paper eq. 3): all-gather every mini-batch over a ring: each rank moves (d - 1) x max_r (bytes drawn
// on r).
//
// Units: lengths/tokens in tokens, *_bytes in bytes, loads in the phase algorithm's cost units (BinCost:
// tokens for lpt/kk/quadratic at lambda 0, padded tokens for padded).
//
//   OrchestratorOptions o{.dp = 64, .ranks_per_node = 8};
//   MMTWIN_ASSIGN_OR_RETURN(std::vector<PhaseInput> phases, PhaseInputsForModel(model, samples, {}));
//   MMTWIN_ASSIGN_OR_RETURN(OrchestratorResult r, Orchestrate(origin_rank, phases, o));
//   double vit_imbalance = r.phases[0].max_over_lower_bound;
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/balance/placement.h"
#include "core/balance/post_balance.h"
#include "core/model/model.h"
#include "core/trace/trace.h"
#include "core/util/status.h"

namespace mmtwin {

struct PhaseInput {
  std::string name;              // e.g. "vision", "audio", "llm"
  std::vector<int64_t> lengths;  // tokens per sample (see above)
  std::vector<int64_t> bytes;    // input bytes per sample, at its origin rank
  PostBalanceOptions options;
  std::vector<int64_t> output_bytes;  // encoders: output bytes per sample handed to the LLM (empty = none)
};

struct OrchestratorOptions {
  int dp = 1;              // data-parallel ranks
  int ranks_per_node = 8;  // node(r) = r / ranks_per_node
  bool node_wise = true;   // exact node-wise placement (else bin i -> rank i)
  bool compose = true;     // rearrangement composition for encoder outputs
  // Every phase keeps each rank's own draw and moves only the excess (PostBalanceKeepOwn; the bins come out
  // heaviest draw first, so identity placement puts them on other ranks and node-wise placement brings them
  // back). An encoder's "own draw" is the samples drawn on the rank, the LLM's likewise.
  bool keep_own = false;
};

// One piece of data moved from rank src to rank dst.
struct Transfer {
  int src = 0;
  int dst = 0;
  int64_t bytes = 0;
};

// Traffic of one all-to-all (or of a set of transfers).
struct Traffic {
  int64_t bytes = 0;                      // bytes whose destination rank != source rank
  int64_t max_rank_bytes = 0;             // max over ranks of max(bytes sent, bytes received)
  int64_t inter_node_bytes = 0;           // bytes whose destination node != source node
  int64_t max_rank_inter_node_bytes = 0;  // max over ranks of bytes received from other nodes
};

struct PhaseReport {
  std::string name;
  PostBalanceAlgorithm algorithm = PostBalanceAlgorithm::kLpt;
  int samples = 0;  // samples taking part in this phase
  // Balance, in cost units of the phase's algorithm (BinCost), over all dp ranks.
  double max_load = 0;  // after balancing
  double mean_load = 0;
  double lower_bound = 0;  // CostLowerBound
  double max_over_lower_bound = 1;
  double max_load_before = 0;  // the ranks' own mini-batches, without post-balancing
  int64_t max_tokens = 0;      // max over ranks of the phase tokens after balancing
  // Per rank: the samples (indices into origin_rank, ascending) it processes in this phase.
  std::vector<std::vector<uint32_t>> rank_samples;
  std::vector<int> rank_of_sample;  // per sample: its rank in this phase, -1 if absent
  // The input all-to-all, origin -> phase rank (LLM: the text part; encoder outputs are accounted below).
  Traffic dispatch;
  int64_t input_bytes = 0;             // total input bytes of the phase's samples
  int64_t all_gather_bytes = 0;        // strawman, per rank: (d-1) x max_r (bytes drawn on rank r)
  int64_t all_gather_total_bytes = 0;  // d x all_gather_bytes
  // Encoder phases: moving the outputs to the LLM ranks, both ways (totals count the chosen mode).
  int64_t output_bytes = 0;
  Traffic composed;  // encoder rank -> LLM rank
  Traffic two_step;  // encoder rank -> origin, then origin -> LLM rank (both all-to-alls summed)
};

struct OrchestratorResult {
  std::vector<PhaseReport> phases;  // in input order; the LLM is last
  int all_to_all_ops = 0;           // forward all-to-alls with the chosen mode (2E+1 composed, 3E+1 two-step)
  int64_t all_to_all_bytes = 0;     // total forward all-to-all bytes with the chosen mode
  // Sums over the forward all-to-alls (they run one after another) of their max per-rank volume, and of their
  // max per-rank bytes received from other nodes.
  int64_t max_rank_all_to_all_bytes = 0;
  int64_t max_rank_inter_node_bytes = 0;
  int64_t all_gather_bytes = 0;  // strawman per rank: sum over phases
  // Every forward all-to-all transfer with the chosen mode (encoder dispatch, composed or two-step encoder
  // outputs, LLM text), one entry per piece moved between two different ranks, in phase order.
  std::vector<Transfer> transfers;
  // The backward all-to-alls: every encoder-output transfer of `transfers` reversed (the gradient going back
  // from the LLM rank, or the origin, to where the output came from), in the same order.
  std::vector<Transfer> gradient_transfers;
};

Result<OrchestratorResult> Orchestrate(std::span<const int> origin_rank,
                                       const std::vector<PhaseInput>& phases, const OrchestratorOptions& o);

// Traffic of transfers (src rank, dst rank, bytes) among d ranks (Transfer is defined above).
Traffic AccountTraffic(std::span<const Transfer> transfers, int d, int ranks_per_node);

// Builds the phases of a model for trace samples, with TokensFor: vision (if the model has a vision encoder;
// length = vit_tokens, bytes = vision units (tiles or images, + frames) x 3 x image_px^2 x 2 (bf16 pixels; an
// if_larger encoder's image: its n^2 patches x patch_px^2 pixels), output = vision_llm_tokens x llm_hidden x 2), audio (if it has an audio encoder; length = audio_tokens, bytes = ceil(seconds x
// 100) frames x mel_bins x 2, output likewise), then llm (length = llm_tokens, bytes = llm_tokens x
// llm_hidden x 2).
struct ModelPhaseOptions {
  PostBalanceOptions vision{PostBalanceAlgorithm::kLpt, 0, 0};
  PostBalanceOptions audio{PostBalanceAlgorithm::kPadded, 0, 0};  // Whisper-style padded windows
  PostBalanceOptions llm{PostBalanceAlgorithm::kLpt, 0, 0};
};
Result<std::vector<PhaseInput>> PhaseInputsForModel(const ModelSpec& m, std::span<const Sample> samples,
                                                    const ModelPhaseOptions& o);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/balance/orchestrator.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace mmtwin {
namespace {

using Bins = std::vector<std::vector<uint32_t>>;

Status ValidatePhase(const PhaseInput& ph, size_t n, bool is_llm) {
  const std::string where = "orchestrator: phase '" + ph.name + "': ";
  auto count = [&](const char* field, size_t got) -> Status {
    if (got != n)
      return Error(where + field + " has " + std::to_string(got) + " entries, expected " + std::to_string(n) +
                   " (one per sample)");
    return Status();
  };
  MMTWIN_RETURN_IF_ERROR(count("lengths", ph.lengths.size()));
  MMTWIN_RETURN_IF_ERROR(count("bytes", ph.bytes.size()));
  if (!ph.output_bytes.empty()) {
    if (is_llm)
      return Error(where + "output_bytes: only encoder phases have outputs (the LLM phase is last)");
    MMTWIN_RETURN_IF_ERROR(count("output_bytes", ph.output_bytes.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    if (ph.lengths[i] < 0) return Error(where + "lengths[" + std::to_string(i) + "]: negative");
    if (ph.bytes[i] < 0) return Error(where + "bytes[" + std::to_string(i) + "]: negative");
    if (!ph.output_bytes.empty() && ph.output_bytes[i] < 0)
      return Error(where + "output_bytes[" + std::to_string(i) + "]: negative");
  }
  return Status();
}

void AddTraffic(Traffic& sum, const Traffic& t) {
  sum.bytes += t.bytes;
  sum.max_rank_bytes += t.max_rank_bytes;
  sum.inter_node_bytes += t.inter_node_bytes;
  sum.max_rank_inter_node_bytes += t.max_rank_inter_node_bytes;
}

}  // namespace

Traffic AccountTraffic(std::span<const Transfer> transfers, int d, int ranks_per_node) {
  Traffic t;
  const int c = std::max(1, ranks_per_node);
  std::vector<int64_t> sent(d, 0), recv(d, 0), recv_inter(d, 0);
  for (const Transfer& x : transfers) {
    if (x.src == x.dst || x.bytes == 0) continue;
    sent[x.src] += x.bytes;
    recv[x.dst] += x.bytes;
    t.bytes += x.bytes;
    if (x.src / c != x.dst / c) {
      recv_inter[x.dst] += x.bytes;
      t.inter_node_bytes += x.bytes;
    }
  }
  for (int r = 0; r < d; ++r) {
    t.max_rank_bytes = std::max({t.max_rank_bytes, sent[r], recv[r]});
    t.max_rank_inter_node_bytes = std::max(t.max_rank_inter_node_bytes, recv_inter[r]);
  }
  return t;
}

Result<OrchestratorResult> Orchestrate(std::span<const int> origin_rank,
                                       const std::vector<PhaseInput>& phases, const OrchestratorOptions& o) {
  const int d = o.dp;
  const int c = o.ranks_per_node;
  if (d < 1) return Error("orchestrator: dp: must be >= 1, got " + std::to_string(d));
  if (c < 1) return Error("orchestrator: ranks_per_node: must be >= 1, got " + std::to_string(c));
  if (phases.empty()) return Error("orchestrator: phases: need at least the LLM phase");
  const size_t n = origin_rank.size();
  for (size_t i = 0; i < n; ++i)
    if (origin_rank[i] < 0 || origin_rank[i] >= d)
      return Error("orchestrator: origin_rank[" + std::to_string(i) + "]: " + std::to_string(origin_rank[i]) +
                   " is not a rank in [0, " + std::to_string(d) + ")");
  const size_t num_phases = phases.size();
  const size_t encoders = num_phases - 1;
  for (size_t p = 0; p < num_phases; ++p)
    MMTWIN_RETURN_IF_ERROR(ValidatePhase(phases[p], n, p + 1 == num_phases));

  OrchestratorResult result;
  result.phases.resize(num_phases);
  for (size_t p = 0; p < num_phases; ++p) {
    const PhaseInput& ph = phases[p];
    const bool is_llm = p + 1 == num_phases;
    PhaseReport& rep = result.phases[p];
    rep.name = ph.name;
    rep.algorithm = ph.options.algorithm;

    // Items of this phase: samples with input (every sample for the LLM).
    std::vector<uint32_t> sample_of_item;
    std::vector<int64_t> len;
    for (size_t i = 0; i < n; ++i)
      if (is_llm || ph.lengths[i] > 0) {
        sample_of_item.push_back(static_cast<uint32_t>(i));
        len.push_back(ph.lengths[i]);
      }
    rep.samples = static_cast<int>(sample_of_item.size());
    const Bins bins = PostBalance(len, d, ph.options);

    std::vector<int> bin_of_item(len.size(), 0);
    for (int b = 0; b < d; ++b)
      for (uint32_t item : bins[b]) bin_of_item[item] = b;
    // Below, items are visited in sample order so the per-sample arrays are read sequentially.
    // Text part of a sample's LLM input (held at its origin) = LLM bytes - encoder outputs.
    auto text_bytes = [&](uint32_t s) {
      int64_t text = ph.bytes[s];
      for (size_t e = 0; e < encoders; ++e)
        if (!phases[e].output_bytes.empty()) text -= phases[e].output_bytes[s];
      return std::max<int64_t>(0, text);
    };

    // Pieces of data that must reach each bin's rank, where they are before the phase.
    std::vector<int> piece_src;
    std::vector<int64_t> piece_bytes;
    Bins piece_bins(d);
    for (size_t item = 0; item < len.size(); ++item) {
      const uint32_t s = sample_of_item[item];
      const int b = bin_of_item[item];
      auto add = [&](int src, int64_t bytes) {
        piece_bins[b].push_back(static_cast<uint32_t>(piece_src.size()));
        piece_src.push_back(src);
        piece_bytes.push_back(bytes);
      };
      if (!is_llm) {
        add(origin_rank[s], ph.bytes[s]);
        continue;
      }
      add(origin_rank[s], text_bytes(s));
      for (size_t e = 0; e < encoders; ++e) {
        if (phases[e].output_bytes.empty() || phases[e].output_bytes[s] == 0) continue;
        const int enc_rank = result.phases[e].rank_of_sample[s];
        add(o.compose && enc_rank >= 0 ? enc_rank : origin_rank[s], phases[e].output_bytes[s]);
      }
    }
    const Placement place = o.node_wise ? PlaceNodeWise(piece_bins, piece_src, piece_bytes, c)
                                        : PlaceIdentity(piece_bins, piece_src, piece_bytes, c);

    rep.rank_of_sample.assign(n, -1);
    rep.rank_samples.assign(d, {});
    std::vector<int64_t> rank_tokens(d, 0);
    std::vector<std::vector<uint32_t>> rank_items(d);
    for (int b = 0; b < d; ++b) rank_items[place.rank_of_bin[b]] = bins[b];
    // Dispatch traffic: for the LLM only the text part (encoder outputs are accounted per encoder below).
    std::vector<Transfer> moves;
    moves.reserve(len.size());
    std::vector<int64_t> drawn(d, 0);
    Bins before(d);
    for (size_t item = 0; item < len.size(); ++item) {
      const uint32_t s = sample_of_item[item];
      const int r = place.rank_of_bin[bin_of_item[item]];
      rep.rank_of_sample[s] = r;
      rep.rank_samples[r].push_back(s);  // ascending, as items are in sample order
      rank_tokens[r] += len[item];
      before[origin_rank[s]].push_back(static_cast<uint32_t>(item));
      rep.input_bytes += ph.bytes[s];
      drawn[origin_rank[s]] += ph.bytes[s];
      moves.push_back({origin_rank[s], r, is_llm ? text_bytes(s) : ph.bytes[s]});
    }

    // Balance.
    double sum_load = 0;
    for (int r = 0; r < d; ++r) {
      const double load = BinCost(len, rank_items[r], ph.options);
      rep.max_load = std::max(rep.max_load, load);
      sum_load += load;
      rep.max_tokens = std::max(rep.max_tokens, rank_tokens[r]);
    }
    rep.mean_load = sum_load / d;
    rep.lower_bound = CostLowerBound(len, d, ph.options);
    rep.max_over_lower_bound = rep.lower_bound > 0 ? rep.max_load / rep.lower_bound : 1.0;
    rep.max_load_before = MaxBinCost(len, before, ph.options);

    rep.dispatch = AccountTraffic(moves, d, c);
    for (const Transfer& t : moves)
      if (t.src != t.dst && t.bytes > 0) result.transfers.push_back(t);
    rep.all_gather_bytes = static_cast<int64_t>(d - 1) * *std::max_element(drawn.begin(), drawn.end());
    rep.all_gather_total_bytes = static_cast<int64_t>(d) * rep.all_gather_bytes;
  }

  // Encoder outputs to the LLM ranks, composed and two-step.
  const PhaseReport& llm = result.phases.back();
  for (size_t e = 0; e < encoders; ++e) {
    PhaseReport& rep = result.phases[e];
    if (phases[e].output_bytes.empty()) continue;
    std::vector<Transfer> direct, reset, forward;
    for (size_t s = 0; s < n; ++s) {
      const int enc_rank = rep.rank_of_sample[s];
      const int64_t bytes = phases[e].output_bytes[s];
      if (enc_rank < 0 || bytes == 0) continue;
      rep.output_bytes += bytes;
      direct.push_back({enc_rank, llm.rank_of_sample[s], bytes});
      reset.push_back({enc_rank, origin_rank[s], bytes});
      forward.push_back({origin_rank[s], llm.rank_of_sample[s], bytes});
    }
    rep.composed = AccountTraffic(direct, d, c);
    auto keep = [&](const std::vector<Transfer>& list) {
      for (const Transfer& t : list)
        if (t.src != t.dst && t.bytes > 0) {
          result.transfers.push_back(t);
          result.gradient_transfers.push_back({t.dst, t.src, t.bytes});
        }
    };
    if (o.compose) {
      keep(direct);
    } else {
      keep(reset);
      keep(forward);
    }
    rep.two_step = AccountTraffic(reset, d, c);
    AddTraffic(rep.two_step, AccountTraffic(forward, d, c));
  }

  // Totals for the chosen mode.
  Traffic total;
  for (size_t p = 0; p < num_phases; ++p) {
    const PhaseReport& rep = result.phases[p];
    AddTraffic(total, rep.dispatch);
    if (p < encoders) AddTraffic(total, o.compose ? rep.composed : rep.two_step);
    result.all_gather_bytes += rep.all_gather_bytes;
  }
  const int e = static_cast<int>(encoders);
  result.all_to_all_ops = o.compose ? 2 * e + 1 : 3 * e + 1;
  result.all_to_all_bytes = total.bytes;
  result.max_rank_all_to_all_bytes = total.max_rank_bytes;
  result.max_rank_inter_node_bytes = total.max_rank_inter_node_bytes;
  return result;
}

Result<std::vector<PhaseInput>> PhaseInputsForModel(const ModelSpec& m, std::span<const Sample> samples,
                                                    const ModelPhaseOptions& o) {
  const Component* llm_c = nullptr;
  const Component* vision_c = nullptr;
  const Component* audio_c = nullptr;
  for (const Component& comp : m.components) {
    if (comp.kind == ComponentKind::kLlm) llm_c = &comp;
    if (comp.kind == ComponentKind::kVision && !vision_c) vision_c = &comp;
    if (comp.kind == ComponentKind::kAudio && !audio_c) audio_c = &comp;
  }
  if (!llm_c) return Error("orchestrator: model '" + m.name + "' has no LLM component");
  const int64_t hidden_bytes = llm_c->tf.hidden * 2;  // bf16 activations per LLM token
  const size_t n = samples.size();
  std::vector<PhaseInput> phases;
  PhaseInput vision{"vision", std::vector<int64_t>(n), std::vector<int64_t>(n), o.vision,
                    std::vector<int64_t>(n)};
  PhaseInput audio{"audio", std::vector<int64_t>(n), std::vector<int64_t>(n), o.audio,
                   std::vector<int64_t>(n)};
  PhaseInput llm{"llm", std::vector<int64_t>(n), std::vector<int64_t>(n), o.llm, {}};
  for (size_t i = 0; i < n; ++i) {
    const Sample& s = samples[i];
    const SampleTokens t = TokensFor(m, s);
    if (vision_c) {
      const int64_t px = vision_c->input.image_px > 0 ? vision_c->input.image_px : 448;
      vision.lengths[i] = t.vit_tokens;
      vision.bytes[i] = t.vision_units * 3 * px * px * 2;
      const int64_t out_tokens =
          std::llround(static_cast<double>(t.vision_units) * vision_c->input.llm_tokens_per_unit);
      vision.output_bytes[i] = t.vit_tokens > 0 ? out_tokens * hidden_bytes : 0;
    }
    if (audio_c && t.audio_tokens > 0) {
      const int64_t mel = audio_c->input.mel_bins > 0 ? audio_c->input.mel_bins : 128;
      audio.lengths[i] = t.audio_tokens;
      audio.bytes[i] = static_cast<int64_t>(std::ceil(s.audio_seconds * 100 - 1e-9)) * mel * 2;
      // Same rounding as TokensFor's LLM tokens from audio.
      const double ratio = audio_c->input.tokens_per_second > 0
                               ? audio_c->input.llm_tokens_per_unit / audio_c->input.tokens_per_second
                               : 0;
      const int64_t out_tokens =
          static_cast<int64_t>(std::ceil(static_cast<double>(t.audio_tokens) * ratio - 1e-9));
      audio.output_bytes[i] = out_tokens * hidden_bytes;
    }
    llm.lengths[i] = t.llm_tokens;
    llm.bytes[i] = t.llm_tokens * hidden_bytes;
  }
  if (vision_c) phases.push_back(std::move(vision));
  if (audio_c) phases.push_back(std::move(audio));
  phases.push_back(std::move(llm));
  return phases;
}

}  // namespace mmtwin

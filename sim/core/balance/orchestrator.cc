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

Status CheckInputs(std::span<const int> origin_rank, const std::vector<PhaseInput>& phases,
                   const OrchestratorOptions& o) {
  const int d = o.dp;
  if (d < 1) return Error("orchestrator: dp: must be >= 1, got " + std::to_string(d));
  if (o.ranks_per_node < 1)
    return Error("orchestrator: ranks_per_node: must be >= 1, got " + std::to_string(o.ranks_per_node));
  if (phases.empty()) return Error("orchestrator: phases: need at least the LLM phase");
  const size_t n = origin_rank.size();
  for (size_t i = 0; i < n; ++i)
    if (origin_rank[i] < 0 || origin_rank[i] >= d)
      return Error("orchestrator: origin_rank[" + std::to_string(i) + "]: " + std::to_string(origin_rank[i]) +
                   " is not a rank in [0, " + std::to_string(d) + ")");
  for (size_t p = 0; p < phases.size(); ++p)
    MMTWIN_RETURN_IF_ERROR(ValidatePhase(phases[p], n, p + 1 == phases.size()));
  return Status();
}

// One run of Orchestrate on checked inputs: the phases balanced in order (each encoder phase before the LLM,
// whose pieces come from the encoders' ranks), then the encoder outputs' traffic and the totals.
class Orchestration {
 public:
  Orchestration(std::span<const int> origin_rank, const std::vector<PhaseInput>& phases,
                const OrchestratorOptions& o)
      : origin_rank_(origin_rank),
        phases_(phases),
        o_(o),
        d_(o.dp),
        c_(o.ranks_per_node),
        n_(origin_rank.size()),
        encoders_(phases.size() - 1) {}

  OrchestratorResult Run() {
    result_.phases.resize(phases_.size());
    for (size_t p = 0; p < phases_.size(); ++p) BalancePhase(p);
    for (size_t e = 0; e < encoders_; ++e) EncoderOutputs(e);
    Totals();
    return std::move(result_);
  }

 private:
  // A phase's items (samples with input; every sample for the LLM) and their bins.
  struct Items {
    std::vector<uint32_t> sample_of_item;
    std::vector<int64_t> len;
    Bins bins;
    std::vector<int> bin_of_item;
  };

  bool IsLlm(size_t p) const { return p + 1 == phases_.size(); }
  // Text part of a sample's LLM input (held at its origin) = LLM bytes - encoder outputs.
  int64_t TextBytes(uint32_t s) const {
    int64_t text = phases_.back().bytes[s];
    for (size_t e = 0; e < encoders_; ++e)
      if (!phases_[e].output_bytes.empty()) text -= phases_[e].output_bytes[s];
    return std::max<int64_t>(0, text);
  }
  Items BalanceItems(size_t p) const;
  Placement Place(size_t p, const Items& items) const;
  void BalancePhase(size_t p);
  void ReportBalance(size_t p, const Items& items, const std::vector<std::vector<uint32_t>>& rank_items,
                     const std::vector<int64_t>& rank_tokens, const Bins& before);
  void EncoderOutputs(size_t e);
  void Totals();

  const std::span<const int> origin_rank_;
  const std::vector<PhaseInput>& phases_;
  const OrchestratorOptions& o_;
  const int d_, c_;
  const size_t n_, encoders_;
  OrchestratorResult result_;
};

Orchestration::Items Orchestration::BalanceItems(size_t p) const {
  const PhaseInput& ph = phases_[p];
  Items x;
  for (size_t i = 0; i < n_; ++i)
    if (IsLlm(p) || ph.lengths[i] > 0) {
      x.sample_of_item.push_back(static_cast<uint32_t>(i));
      x.len.push_back(ph.lengths[i]);
    }
  if (o_.keep_own) {
    std::vector<int> origin(x.len.size());
    for (size_t item = 0; item < origin.size(); ++item) origin[item] = origin_rank_[x.sample_of_item[item]];
    x.bins = PostBalanceKeepOwn(x.len, origin, d_, ph.options);
  } else {
    x.bins = PostBalance(x.len, d_, ph.options);
  }
  x.bin_of_item.assign(x.len.size(), 0);
  for (int b = 0; b < d_; ++b)
    for (uint32_t item : x.bins[b]) x.bin_of_item[item] = b;
  return x;
}

// The bins' ranks: from the pieces of data that must reach each bin's rank, where they are before the phase.
// Items are visited in sample order so the per-sample arrays are read sequentially.
Placement Orchestration::Place(size_t p, const Items& items) const {
  const PhaseInput& ph = phases_[p];
  std::vector<int> piece_src;
  std::vector<int64_t> piece_bytes;
  Bins piece_bins(d_);
  for (size_t item = 0; item < items.len.size(); ++item) {
    const uint32_t s = items.sample_of_item[item];
    const int b = items.bin_of_item[item];
    auto add = [&](int src, int64_t bytes) {
      piece_bins[b].push_back(static_cast<uint32_t>(piece_src.size()));
      piece_src.push_back(src);
      piece_bytes.push_back(bytes);
    };
    if (!IsLlm(p)) {
      add(origin_rank_[s], ph.bytes[s]);
      continue;
    }
    add(origin_rank_[s], TextBytes(s));
    for (size_t e = 0; e < encoders_; ++e) {
      if (phases_[e].output_bytes.empty() || phases_[e].output_bytes[s] == 0) continue;
      const int enc_rank = result_.phases[e].rank_of_sample[s];
      add(o_.compose && enc_rank >= 0 ? enc_rank : origin_rank_[s], phases_[e].output_bytes[s]);
    }
  }
  return o_.node_wise ? PlaceNodeWise(piece_bins, piece_src, piece_bytes, c_)
                      : PlaceIdentity(piece_bins, piece_src, piece_bytes, c_);
}

void Orchestration::BalancePhase(size_t p) {
  const PhaseInput& ph = phases_[p];
  const bool is_llm = IsLlm(p);
  PhaseReport& rep = result_.phases[p];
  rep.name = ph.name;
  rep.algorithm = ph.options.algorithm;
  const Items items = BalanceItems(p);
  rep.samples = static_cast<int>(items.sample_of_item.size());
  const Placement place = Place(p, items);

  rep.rank_of_sample.assign(n_, -1);
  rep.rank_samples.assign(d_, {});
  std::vector<int64_t> rank_tokens(d_, 0);
  std::vector<std::vector<uint32_t>> rank_items(d_);
  for (int b = 0; b < d_; ++b) rank_items[place.rank_of_bin[b]] = items.bins[b];
  // Dispatch traffic: for the LLM only the text part (encoder outputs are accounted per encoder below).
  std::vector<Transfer> moves;
  moves.reserve(items.len.size());
  std::vector<int64_t> drawn(d_, 0);
  Bins before(d_);
  for (size_t item = 0; item < items.len.size(); ++item) {
    const uint32_t s = items.sample_of_item[item];
    const int r = place.rank_of_bin[items.bin_of_item[item]];
    rep.rank_of_sample[s] = r;
    rep.rank_samples[r].push_back(s);  // ascending, as items are in sample order
    rank_tokens[r] += items.len[item];
    before[origin_rank_[s]].push_back(static_cast<uint32_t>(item));
    rep.input_bytes += ph.bytes[s];
    drawn[origin_rank_[s]] += ph.bytes[s];
    moves.push_back({origin_rank_[s], r, is_llm ? TextBytes(s) : ph.bytes[s]});
  }
  ReportBalance(p, items, rank_items, rank_tokens, before);
  rep.dispatch = AccountTraffic(moves, d_, c_);
  for (const Transfer& t : moves)
    if (t.src != t.dst && t.bytes > 0) result_.transfers.push_back(t);
  rep.all_gather_bytes = static_cast<int64_t>(d_ - 1) * *std::max_element(drawn.begin(), drawn.end());
  rep.all_gather_total_bytes = static_cast<int64_t>(d_) * rep.all_gather_bytes;
}

// The phase's loads per rank against the lower bound and the load before balancing.
void Orchestration::ReportBalance(size_t p, const Items& items,
                                  const std::vector<std::vector<uint32_t>>& rank_items,
                                  const std::vector<int64_t>& rank_tokens, const Bins& before) {
  const PostBalanceOptions& options = phases_[p].options;
  PhaseReport& rep = result_.phases[p];
  double sum_load = 0;
  for (int r = 0; r < d_; ++r) {
    const double load = BinCost(items.len, rank_items[r], options);
    rep.max_load = std::max(rep.max_load, load);
    sum_load += load;
    rep.max_tokens = std::max(rep.max_tokens, rank_tokens[r]);
  }
  rep.mean_load = sum_load / d_;
  rep.lower_bound = CostLowerBound(items.len, d_, options);
  rep.max_over_lower_bound = rep.lower_bound > 0 ? rep.max_load / rep.lower_bound : 1.0;
  rep.max_load_before = MaxBinCost(items.len, before, options);
}

// Encoder e's outputs to the LLM ranks, composed and two-step; the chosen mode's transfers (and their
// gradients back) go to the result.
void Orchestration::EncoderOutputs(size_t e) {
  const PhaseReport& llm = result_.phases.back();
  PhaseReport& rep = result_.phases[e];
  if (phases_[e].output_bytes.empty()) return;
  std::vector<Transfer> direct, reset, forward;
  for (size_t s = 0; s < n_; ++s) {
    const int enc_rank = rep.rank_of_sample[s];
    const int64_t bytes = phases_[e].output_bytes[s];
    if (enc_rank < 0 || bytes == 0) continue;
    rep.output_bytes += bytes;
    direct.push_back({enc_rank, llm.rank_of_sample[s], bytes});
    reset.push_back({enc_rank, origin_rank_[s], bytes});
    forward.push_back({origin_rank_[s], llm.rank_of_sample[s], bytes});
  }
  rep.composed = AccountTraffic(direct, d_, c_);
  auto keep = [&](const std::vector<Transfer>& list) {
    for (const Transfer& t : list)
      if (t.src != t.dst && t.bytes > 0) {
        result_.transfers.push_back(t);
        result_.gradient_transfers.push_back({t.dst, t.src, t.bytes});
      }
  };
  if (o_.compose) {
    keep(direct);
  } else {
    keep(reset);
    keep(forward);
  }
  rep.two_step = AccountTraffic(reset, d_, c_);
  AddTraffic(rep.two_step, AccountTraffic(forward, d_, c_));
}

// Totals for the chosen mode.
void Orchestration::Totals() {
  Traffic total;
  for (size_t p = 0; p < phases_.size(); ++p) {
    const PhaseReport& rep = result_.phases[p];
    AddTraffic(total, rep.dispatch);
    if (p < encoders_) AddTraffic(total, o_.compose ? rep.composed : rep.two_step);
    result_.all_gather_bytes += rep.all_gather_bytes;
  }
  const int e = static_cast<int>(encoders_);
  result_.all_to_all_ops = o_.compose ? 2 * e + 1 : 3 * e + 1;
  result_.all_to_all_bytes = total.bytes;
  result_.max_rank_all_to_all_bytes = total.max_rank_bytes;
  result_.max_rank_inter_node_bytes = total.max_rank_inter_node_bytes;
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
  MMTWIN_RETURN_IF_ERROR(CheckInputs(origin_rank, phases, o));
  return Orchestration(origin_rank, phases, o).Run();
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
      const EncoderInput& in = vision_c->input;
      const int64_t px = in.image_px > 0 ? in.image_px : 448;
      const int64_t frames = s.video_frames, images = t.vision_units - frames;
      // An if_larger encoder's image is fed at its own size: its n^2 patches of patch_px^2 pixels each.
      const int64_t image_pixels = in.resize == ImageResize::kIfLarger
                                       ? (t.vit_span_tokens - in.cls_tokens) * in.patch_px * in.patch_px
                                       : px * px;
      vision.lengths[i] = t.vit_tokens;
      vision.bytes[i] = (images * image_pixels + frames * px * px) * 3 * 2;
      vision.output_bytes[i] = t.vit_tokens > 0 ? t.vision_llm_tokens * hidden_bytes : 0;
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

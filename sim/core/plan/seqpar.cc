// SPDX-License-Identifier: Apache-2.0
#include "core/plan/seqpar.h"

#include <algorithm>

#include "core/util/numeric.h"

namespace mmtwin {

const char* SpMethodName(SpMethod m) {
  switch (m) {
    case SpMethod::kNone:
      return "none";
    case SpMethod::kRing:
      return "ring";
    case SpMethod::kZigzagRing:
      return "zigzag-ring";
    case SpMethod::kUlysses:
      return "ulysses";
    case SpMethod::k2d:
      return "2d";
    case SpMethod::kMegatronCp:
      return "megatron-cp";
    case SpMethod::kMegatronCpTp:
      return "megatron-cp+tp";
    case SpMethod::kMegatronCpAg:
      return "megatron-cp-ag";
    case SpMethod::kCornstarchCp:
      return "cornstarch-cp";
  }
  return "?";
}

SpRingImpl SpRingImplOf(SpMethod m) {
  switch (m) {
    case SpMethod::kMegatronCp:
    case SpMethod::kMegatronCpTp:
      return SpRingImpl::kTeP2p;
    case SpMethod::kMegatronCpAg:
      return SpRingImpl::kTeAllGather;
    case SpMethod::kCornstarchCp:
      return SpRingImpl::kCornstarchAllGather;
    default:
      return SpRingImpl::kRingFlashAttn;
  }
}

namespace {

ParamSpec KvParam() {
  return {"kv",
          ParamType::kString,
          "replicate",
          "GQA KV heads fewer than the Ulysses degree: replicate them (extra all-to-all bytes, LongVILA "
          "§4.1) or error",
          {"replicate", "error"}};
}

ParamSpec ShardingParam() {
  return {"sharding",
          ParamType::kString,
          "two-stage",
          "MM-SP two-stage sharding (frames spread evenly, then tokens re-sharded evenly: redistribution "
          "bytes charged) "
          "or one-stage (the sequence cut at frame boundaries, each sample's text on one rank)",
          {"two-stage", "one-stage"}};
}

ParamSpec UpdateParam() {
  return {"update",
          ParamType::kString,
          "fused",
          "ring-flash-attention's per-step fp32 output update (_update_out_and_lse, torch.jit.script): fused "
          "into one kernel (10 bytes per output element) or its 13 element-wise kernels (34 bytes); an "
          "assumption: whether TorchScript's fuser merges them is not published",
          {"fused", "unfused"}};
}

std::vector<SpPolicyInfo> Entries() {
  return {
      {"none", "no sequence parallelism (parallel.sp must be 1)", {}, SpMethod::kNone},
      {"ring",
       "RingAttention: contiguous shards, KV passed around a P2P ring, causal work imbalanced",
       {ShardingParam(), UpdateParam()},
       SpMethod::kRing},
      {"zigzag-ring",
       "zigzag ring attention (ring-flash-attention): 2S chunks, rank r holds r and 2S-1-r, causal work "
       "balanced",
       {ShardingParam(), UpdateParam()},
       SpMethod::kZigzagRing},
      {"ulysses",
       "DeepSpeed-Ulysses: 4 all-to-alls per layer, degree limited by the (KV) heads",
       {KvParam(), ShardingParam()},
       SpMethod::kUlysses},
      {"2d",
       "2D-Attention / USP (LongVILA MM-SP): Ulysses inside a node x zigzag ring across nodes",
       {KvParam(), ShardingParam(), UpdateParam()},
       SpMethod::k2d},
      {"megatron-cp",
       "Megatron-LM context parallelism (TransformerEngine P2P): load-balanced (zigzag) ring over all SP "
       "ranks",
       {ShardingParam()},
       SpMethod::kMegatronCp},
      {"megatron-cp+tp",
       "Megatron-LM CP across nodes with tensor parallelism (parallel.tp > 1) inside a node",
       {ShardingParam()},
       SpMethod::kMegatronCpTp},
      {"megatron-cp-ag",
       "Megatron-LM CP, cp_comm_type all_gather (TransformerEngine): KV all-gathered per layer, exposed",
       {ShardingParam()},
       SpMethod::kMegatronCpAg},
      {"cornstarch-cp",
       "Cornstarch mask-aware CP: token blocks weighted by the KV cells they attend (bidirectional vision "
       "spans counted) and dealt to ranks by LPT; KV all-gathered per head group, pipelined with the "
       "attention",
       {{"block_tokens",
         ParamType::kInt,
         "128",
         "tokens per block of the makespan split (Cornstarch MakespanMinContextParallelSplitter block_size)",
         {}},
        {"heads_stride",
         ParamType::kInt,
         "1",
         "query heads per pipelined KV all-gather (ContextParallelBitfieldAttention heads_stride); must "
         "divide "
         "the heads per GPU",
         {}}},
       SpMethod::kCornstarchCp},
  };
}

bool Divides(int a, int b) { return a > 0 && b % a == 0; }

}  // namespace

const PolicyRegistry<SpPolicyFn>& SpPolicyRegistry() {
  static const PolicyRegistry<SpPolicyFn> r("sequence-parallel policy", "sp policy", Entries());
  return r;
}

Result<SpLayout> ResolveSpLayout(const std::string& policy, const std::map<std::string, std::string>& params,
                                 const ParallelConfig& pc, int gpus_per_node, const TransformerConfig& llm) {
  const PolicyRegistry<SpPolicyFn>& reg = SpPolicyRegistry();
  auto found = reg.Find(policy);
  if (!found.ok()) return Error("policies.sp: " + found.error().message());
  const SpPolicyInfo& e = **found;
  auto p = reg.Validate(e, params);
  if (!p.ok()) return Error("policies.sp: " + p.error().message());
  SpLayout l;
  l.method = e.run;
  l.sp = std::max(1, pc.sp);
  const int S = l.sp;
  if (pc.sp < 1) return Error("parallel.sp: must be >= 1, got " + std::to_string(pc.sp));
  if (l.method == SpMethod::kNone) {
    if (S != 1) {
      std::string methods;
      for (const SpPolicyInfo& x : reg.entries())
        if (x.run != SpMethod::kNone) methods += (methods.empty() ? "" : ", ") + x.name;
      return Error("parallel.sp: " + std::to_string(S) +
                   " needs a sequence-parallel policy (policies.sp: one of " + methods + ")");
    }
    if (pc.sp_ulysses > 1 || pc.sp_ring > 1)
      return Error(std::string(pc.sp_ulysses > 1 ? "parallel.sp_ulysses" : "parallel.sp_ring") +
                   ": applies to policies.sp 2d only (no sequence parallelism here)");
    return l;
  }
  const bool replicate = p->values().count("kv") && p->Str("kv") == "replicate";
  l.one_stage = pc.sp_one_stage || (p->values().count("sharding") && p->Str("sharding") == "one-stage");
  l.fused_update = !(p->values().count("update") && p->Str("update") == "unfused");
  const int heads = llm.heads, kv = llm.kv_heads > 0 ? llm.kv_heads : llm.heads;
  const int per_node = gpus_per_node > 0 ? gpus_per_node : 1;
  auto ulysses_ok = [&](int u) {
    return Divides(u, heads) && (Divides(u, kv) || (replicate && Divides(kv, u)));
  };
  switch (l.method) {
    case SpMethod::kUlysses:
      l.ulysses = S;
      l.ring = 1;
      break;
    case SpMethod::k2d: {
      if (pc.sp_ulysses > 0) {
        l.ulysses = pc.sp_ulysses;
      } else if (pc.sp_ring > 0) {
        l.ulysses = S / pc.sp_ring;
      } else {  // the largest U that divides S and the heads and fits a node with its TP ranks
        l.ulysses = 1;
        for (int u = 1; u <= S; ++u)
          if (S % u == 0 && pc.tp * u <= per_node && ulysses_ok(u)) l.ulysses = u;
      }
      l.ring = l.ulysses > 0 ? S / l.ulysses : 0;
      break;
    }
    case SpMethod::kMegatronCpTp:
      if (pc.tp <= 1) return Error("policies.sp: megatron-cp+tp needs parallel.tp > 1 (TP inside the node)");
      [[fallthrough]];
    default:
      l.ulysses = 1;
      l.ring = S;
      break;
  }
  // sp_ulysses / sp_ring choose the split of the 2d policy; the other methods have a fixed one (Ulysses over
  // all S ranks, or a ring of S), which the keys may restate but not change: say so by name (their product
  // may well equal sp).
  if (l.method != SpMethod::k2d &&
      ((pc.sp_ulysses > 0 && pc.sp_ulysses != l.ulysses) || (pc.sp_ring > 0 && pc.sp_ring != l.ring)))
    return Error(std::string(pc.sp_ulysses > 0 && pc.sp_ulysses != l.ulysses ? "parallel.sp_ulysses"
                                                                             : "parallel.sp_ring") +
                 ": applies to policies.sp 2d only (policy " + e.name + " runs " +
                 (l.method == SpMethod::kUlysses ? "Ulysses over all " + std::to_string(S) + " ranks"
                                                 : "a ring over all " + std::to_string(S) + " ranks") +
                 "); remove it, or set policies.sp: 2d");
  if (l.ulysses < 1 || l.ring < 1 || l.ulysses * l.ring != S ||
      (pc.sp_ulysses > 0 && pc.sp_ulysses != l.ulysses) || (pc.sp_ring > 0 && pc.sp_ring != l.ring))
    return Error("parallel.sp: sp_ulysses x sp_ring must equal sp (" + std::to_string(S) + ") for policy " +
                 e.name + " (Ulysses degree " + std::to_string(l.ulysses) + ", ring degree " +
                 std::to_string(l.ring) + ")");
  if (l.ulysses > 1) {
    const std::string field = l.method == SpMethod::kUlysses ? "parallel.sp" : "parallel.sp_ulysses";
    if (!Divides(l.ulysses, heads))
      return Error(field + ": Ulysses degree " + std::to_string(l.ulysses) + " does not divide the LLM's " +
                   std::to_string(heads) + " attention heads (model llm heads)");
    if (!Divides(l.ulysses, kv)) {
      if (!replicate)
        return Error(field + ": Ulysses degree " + std::to_string(l.ulysses) + " does not divide the LLM's " +
                     std::to_string(kv) +
                     " KV heads (model llm kv_heads; policies.sp params kv: replicate allows it)");
      if (!Divides(kv, l.ulysses))
        return Error(field + ": Ulysses degree " + std::to_string(l.ulysses) + " is not a multiple of the " +
                     std::to_string(kv) + " KV heads: they cannot be replicated evenly");
      l.replicate_kv = true;
    }
  }
  l.split = l.method == SpMethod::kRing           ? SpSplit::kContiguous
            : l.method == SpMethod::kCornstarchCp ? SpSplit::kMakespan
                                                  : SpSplit::kZigzag;
  if (l.method == SpMethod::kCornstarchCp) {
    const int64_t block = p->Int("block_tokens"), stride = p->Int("heads_stride");
    if (block < 1 || block > (int64_t{1} << 20))
      return Error("policies.sp: block_tokens " + std::to_string(block) + " is not in [1, 1048576]");
    const int heads_per_gpu = heads / std::max(1, pc.tp);
    if (stride < 1 || heads_per_gpu % stride != 0)
      return Error("policies.sp: heads_stride " + std::to_string(stride) + " does not divide the " +
                   std::to_string(heads_per_gpu) + " query heads per GPU (model llm heads / parallel.tp)");
    if (l.one_stage)
      return Error(
          "parallel.sp_one_stage: cornstarch-cp cuts the sequence into its own makespan blocks; "
          "one-stage sharding does not apply");
    l.block_tokens = static_cast<int>(block);
    l.heads_stride = static_cast<int>(stride);
  }
  l.ulysses_in_node = pc.tp * l.ulysses <= per_node;
  l.ring_in_node = pc.tp * S <= per_node;
  return l;
}

int64_t SpPaddedTokens(int64_t n, int64_t units) {
  if (units <= 1 || n <= 0) return std::max<int64_t>(0, n);
  return (n + units - 1) / units * units;
}

int64_t SpPadUnits(const SpLayout& l) {
  if (l.split == SpSplit::kMakespan) return 1;
  return static_cast<int64_t>(l.ring) * (l.split == SpSplit::kZigzag && l.ring > 1 ? 2 : 1) * l.ulysses;
}

namespace {

// Square pairs of a query chunk i against a KV chunk j, in units of k^2 (causal, equal chunks).
inline double BlockUnits(int i, int j) { return i > j ? 2.0 : i == j ? 1.0 : 0.0; }

}  // namespace

int64_t SpanExtraCells(int64_t a, int64_t b, int64_t c, int64_t d, int64_t v) {
  const int64_t qe = std::min(b, v), de = std::min(d, v);  // queries and keys inside the span
  if (a >= qe || c >= de) return 0;
  int64_t cells = 0;
  // Queries below c (q + 1 <= c): every key of [c, de).
  const int64_t below = std::max<int64_t>(0, std::min(qe, c) - a);
  cells += below * (de - c);
  // Queries q >= c: the keys (q, de), de - 1 - q of them, while q < de - 1.
  const int64_t lo = std::max(a, c), hi = std::min(qe, de - 1);
  if (hi > lo) {
    const int64_t m = hi - lo, first = de - 1 - lo, last = de - hi;
    cells += m * (first + last) / 2;
  }
  return cells;
}

std::vector<std::vector<double>> RankStepPairs(SpSplit split, int ring,
                                               const std::vector<int64_t>& sample_tokens,
                                               const std::vector<int64_t>& vision_spans) {
  const int R = std::max(1, ring);
  const int parts = split == SpSplit::kZigzag ? 2 * R : R;
  double k2 = 0;  // sum over samples of k^2, k = the sample's chunk length
  for (int64_t n : sample_tokens) {
    const double k = static_cast<double>(n) / parts;
    k2 += k * k;
  }
  auto chunks = [&](int r, int out[2]) {
    out[0] = r;
    if (split == SpSplit::kZigzag) {
      out[1] = 2 * R - 1 - r;
      return 2;
    }
    return 1;
  };
  std::vector<std::vector<double>> out(R, std::vector<double>(R, 0.0));
  for (int r = 0; r < R; ++r) {
    int q[2], nq = chunks(r, q);
    for (int s = 0; s < R; ++s) {
      int kv[2], nkv = chunks((r - s + R) % R, kv);
      double u = 0;
      for (int a = 0; a < nq; ++a)
        for (int b = 0; b < nkv; ++b) u += BlockUnits(q[a], kv[b]);
      out[r][s] = u * k2;
      // Bidirectional vision spans: the cells above the diagonal inside each sample's span, 2 pairs each.
      for (size_t j = 0; j < vision_spans.size() && j < sample_tokens.size(); ++j) {
        const int64_t v = vision_spans[j], n = sample_tokens[j];
        if (v <= 1 || n <= 0) continue;
        const int64_t k = n / parts;  // n is padded to a multiple of parts
        for (int a = 0; a < nq; ++a)
          for (int b = 0; b < nkv; ++b)
            out[r][s] += 2.0 * static_cast<double>(
                                   SpanExtraCells(q[a] * k, (q[a] + 1) * k, kv[b] * k, (kv[b] + 1) * k, v));
      }
    }
  }
  return out;
}

SpMakespan MakespanSplit(int ring, int64_t block_tokens, const std::vector<int64_t>& sample_tokens,
                         const std::vector<int64_t>& vision_spans) {
  const int R = std::max(1, ring);
  const int64_t B = std::max<int64_t>(1, block_tokens);
  // Square pairs of positions [a, b) of a sample with span v: 2 v - 1 each inside the span, 2 p + 1 after it.
  auto pairs = [](int64_t a, int64_t b, int64_t v) {
    double w = 0;
    const int64_t in_end = std::min(b, v);
    if (in_end > a) w += static_cast<double>(in_end - a) * static_cast<double>(2 * v - 1);
    const int64_t lo = std::max(a, v);
    if (b > lo) w += static_cast<double>(b - lo) * static_cast<double>(b + lo);  // sum of 2p + 1 over [lo, b)
    return w;
  };
  int64_t total = 0;
  for (int64_t n : sample_tokens) total += std::max<int64_t>(0, n);
  const int64_t blocks = (total + B - 1) / B;
  std::vector<double> work(blocks, 0.0);
  std::vector<int64_t> size(blocks, 0);
  int64_t start = 0;  // the sample's first position in the packed sequence
  for (size_t j = 0; j < sample_tokens.size(); ++j) {
    const int64_t n = std::max<int64_t>(0, sample_tokens[j]);
    const int64_t v = j < vision_spans.size() ? std::min(vision_spans[j], n) : 0;
    for (int64_t p = 0; p < n;) {  // the sample's part in each block it touches
      const int64_t blk = (start + p) / B;
      const int64_t end = std::min(n, (blk + 1) * B - start);
      work[blk] += pairs(p, end, v);
      size[blk] += end - p;
      p = end;
    }
    start += n;
  }
  std::vector<int64_t> order(blocks);
  for (int64_t i = 0; i < blocks; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return work[x] > work[y]; });
  SpMakespan out;
  out.pairs.assign(R, 0.0);
  out.tokens.assign(R, 0);
  for (int64_t blk : order) {
    const int r = static_cast<int>(std::min_element(out.pairs.begin(), out.pairs.end()) - out.pairs.begin());
    out.pairs[r] += work[blk];
    out.tokens[r] += size[blk];
  }
  return out;
}

double PipelinedGatherUs(int groups, double gather_us, double compute_us, double serial_us) {
  const int g = std::max(1, groups);
  return gather_us + (g - 1) * std::max(gather_us, compute_us + serial_us) + compute_us + serial_us;
}

SpStepRows RankStepRows(SpSplit split, int ring, const std::vector<int64_t>& sample_tokens) {
  const int R = std::max(1, ring);
  double k = 0;  // sum over samples of the chunk length
  for (int64_t n : sample_tokens) k += static_cast<double>(n) / (split == SpSplit::kZigzag ? 2 * R : R);
  SpStepRows out;
  out.q.assign(R, std::vector<double>(R, 0.0));
  out.kv = out.q;
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < R; ++s) {
      if (split == SpSplit::kZigzag) {
        out.q[r][s] = s == 0 || s <= r ? 2 * k : k;
        out.kv[r][s] = s == 0 || s > r ? 2 * k : k;
      } else if (s <= r) {
        out.q[r][s] = k;
        out.kv[r][s] = k;
      }
    }
  return out;
}

std::vector<double> RankAttentionPairs(SpSplit split, int ring, const std::vector<int64_t>& sample_tokens,
                                       const std::vector<int64_t>& vision_spans) {
  std::vector<std::vector<double>> steps = RankStepPairs(split, ring, sample_tokens, vision_spans);
  std::vector<double> out(steps.size(), 0.0);
  for (size_t r = 0; r < steps.size(); ++r)
    for (double v : steps[r]) out[r] += v;
  return out;
}

namespace {

int64_t KvWidth(const TransformerConfig& llm, int ulysses, bool replicate_kv) {
  const int kv = llm.kv_heads > 0 ? llm.kv_heads : llm.heads;
  const int64_t hd = llm.head_dim > 0 ? llm.head_dim : (llm.heads > 0 ? llm.hidden / llm.heads : 0);
  return static_cast<int64_t>(replicate_kv ? std::max(kv, ulysses) : kv) * hd;
}

int64_t QWidth(const TransformerConfig& llm) {
  const int64_t hd = llm.head_dim > 0 ? llm.head_dim : (llm.heads > 0 ? llm.hidden / llm.heads : 0);
  return static_cast<int64_t>(llm.heads) * hd;
}

}  // namespace

int64_t UlyssesAllToAllBytes(const TransformerConfig& llm, int64_t tokens_per_rank, int ulysses, int tp,
                             bool replicate_kv) {
  if (ulysses <= 1 || tokens_per_rank <= 0) return 0;
  const double elems =
      static_cast<double>(tokens_per_rank) * (2.0 * QWidth(llm) + 2.0 * KvWidth(llm, ulysses, replicate_kv));
  return BytesOf(elems * 2.0 * (ulysses - 1) / ulysses / std::max(1, tp));
}

int64_t RingStepKvBytes(const TransformerConfig& llm, int64_t tokens_per_ring_rank, int ulysses, int tp,
                        bool replicate_kv) {
  if (tokens_per_ring_rank <= 0) return 0;
  const double elems = static_cast<double>(tokens_per_ring_rank) * 2.0 *
                       static_cast<double>(KvWidth(llm, ulysses, replicate_kv)) / std::max(1, ulysses);
  return BytesOf(elems * 2.0 / std::max(1, tp));
}

SpBufferBytes SpAttentionBufferBytes(const SpLayout& layout, const TransformerConfig& llm,
                                     int64_t tokens_per_ring_rank, int tp_in) {
  SpBufferBytes b;
  if (tokens_per_ring_rank <= 0) return b;
  const double T = static_cast<double>(tokens_per_ring_rank), U = std::max(1, layout.ulysses),
               R = std::max(1, layout.ring), tp = std::max(1, tp_in);
  const double kv_width = static_cast<double>(KvWidth(llm, layout.ulysses, layout.replicate_kv));
  double fwd = 0, bwd = 0;
  if (U > 1) {
    const double a2a = 2.0 * (T / U) * (static_cast<double>(QWidth(llm)) + 2.0 * kv_width) / tp;
    fwd += a2a;
    bwd += a2a;
  }
  if (R > 1) {
    const double kv = static_cast<double>(
        RingStepKvBytes(llm, tokens_per_ring_rank, layout.ulysses, tp_in, layout.replicate_kv));
    const double q = 2.0 * T * static_cast<double>(QWidth(llm)) / (U * tp);
    const double l = 4.0 * T * llm.heads / (U * tp);
    if (layout.method == SpMethod::kMegatronCp || layout.method == SpMethod::kMegatronCpTp) {
      fwd += (R - 1) * kv + R * (q + l);
      bwd += 4.0 * kv + q;
    } else if (layout.method == SpMethod::kMegatronCpAg) {
      fwd += 2.0 * R * kv + 2.0 * q + l;
      bwd += 4.0 * R * kv + 2.0 * q;
    } else if (layout.method == SpMethod::kCornstarchCp) {
      const double kv_rep = 2.0 * q;  // K and V repeated to every query head (repeat_kv), bf16
      const double groups =
          std::max(1.0, static_cast<double>(llm.heads) / tp / std::max(1, layout.heads_stride));
      fwd += R * kv_rep + 2.0 * q + l;
      bwd += R * kv_rep + R * kv_rep / groups + 2.0 * (q + kv_rep);
    } else {
      fwd += kv + 2.0 * q + l;
      bwd += 6.0 * kv + 2.0 * q;
    }
  }
  b.forward = BytesOf(fwd);
  b.backward = BytesOf(bwd);
  return b;
}

double RingPassUs(const std::vector<std::vector<double>>& step_us, double transfer_us, double* exposed_us) {
  const size_t steps = step_us.empty() ? 0 : step_us[0].size();
  std::vector<double> transfer(steps, transfer_us);
  if (steps > 0) transfer.back() = 0;  // the last step receives nothing
  return RingScheduleUs(step_us, {}, transfer, 0.0, exposed_us);
}

double RingScheduleUs(const std::vector<std::vector<double>>& compute_us,
                      const std::vector<std::vector<double>>& serial_us,
                      const std::vector<double>& transfer_us, double tail_transfer_us, double* exposed_us) {
  double worst = -1, worst_exposed = 0;
  for (size_t r = 0; r < compute_us.size(); ++r) {
    const auto& steps = compute_us[r];
    double t = 0, ex = 0;
    for (size_t s = 0; s < steps.size(); ++s) {
      const double tr = s < transfer_us.size() ? transfer_us[s] : 0.0;
      t += std::max(steps[s], tr);
      ex += std::max(0.0, tr - steps[s]);
      if (r < serial_us.size() && s < serial_us[r].size()) t += serial_us[r][s];
    }
    t += tail_transfer_us;
    ex += tail_transfer_us;
    if (t > worst) {
      worst = t;
      worst_exposed = ex;
    }
  }
  if (exposed_us) *exposed_us = std::max(0.0, worst_exposed);
  return std::max(0.0, worst);
}

}  // namespace mmtwin

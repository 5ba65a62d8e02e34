// SPDX-License-Identifier: Apache-2.0
// Sequence parallelism's closed forms (core/plan/seqpar.h), each against an oracle: brute-force causal pair
// counts, the ring's closed-form imbalance, zigzag's balance, the Ulysses all-to-all volume, the registry and
// the layout's refusals naming the field.
#include "core/plan/seqpar.h"

#include <gtest/gtest.h>

#include <numeric>

namespace mmtwin {
namespace {

TransformerConfig Llama3_8b() {
  TransformerConfig t;
  t.layers = 32;
  t.hidden = 4096;
  t.ffn = 14336;
  t.heads = 32;
  t.kv_heads = 8;
  t.head_dim = 128;
  t.causal = true;
  return t;
}

ParallelConfig Sp(int sp, int tp = 1) {
  ParallelConfig p;
  p.sp = sp;
  p.tp = tp;
  return p;
}

TEST(SeqParTest, RegistryListsTheNinePoliciesInOrderWithDescriptions) {
  std::vector<std::string> names;
  for (const SpPolicyInfo& e : SpPolicyRegistry().entries()) {
    names.push_back(e.name);
    EXPECT_FALSE(e.description.empty()) << e.name;
    EXPECT_EQ(SpMethodName(e.run), e.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"none", "ring", "zigzag-ring", "ulysses", "2d", "megatron-cp",
                                             "megatron-cp+tp", "megatron-cp-ag", "cornstarch-cp"}));
  // The ring implementations: ring-flash-attention, TransformerEngine P2P, TransformerEngine all-gather.
  EXPECT_EQ(SpRingImplOf(SpMethod::k2d), SpRingImpl::kRingFlashAttn);
  EXPECT_EQ(SpRingImplOf(SpMethod::kZigzagRing), SpRingImpl::kRingFlashAttn);
  EXPECT_EQ(SpRingImplOf(SpMethod::kMegatronCpTp), SpRingImpl::kTeP2p);
  EXPECT_EQ(SpRingImplOf(SpMethod::kMegatronCpAg), SpRingImpl::kTeAllGather);
  EXPECT_EQ(SpRingImplOf(SpMethod::kCornstarchCp), SpRingImpl::kCornstarchAllGather);
  auto bad = SpPolicyRegistry().Find("ringg");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("valid values are: none, ring, zigzag-ring"), std::string::npos);
  // Typed parameters: kv takes replicate or error.
  EXPECT_FALSE(SpPolicyRegistry().Validate("ulysses", {{"kv", "copy"}}).ok());
  EXPECT_FALSE(SpPolicyRegistry().Validate("ring", {{"kv", "error"}}).ok());
}

// Brute force in the cost model's units: a query token i and a key token j of the same sample count 2 when
// j < i, 1 when j == i (so that a sample sums to n^2, as the unsharded LayerWorkload does); with a
// bidirectional vision span of v tokens at the sample's start, also 2 when i < j < v.
std::vector<double> BruteForcePairs(SpSplit split, int R, const std::vector<int64_t>& lens,
                                    const std::vector<int64_t>& spans = {}) {
  std::vector<double> out(R, 0.0);
  for (size_t x = 0; x < lens.size(); ++x) {
    const int64_t n = lens[x], v = x < spans.size() ? spans[x] : 0;
    const int parts = split == SpSplit::kZigzag ? 2 * R : R;
    const int64_t k = n / parts;
    auto owner = [&](int64_t pos) {
      const int chunk = static_cast<int>(pos / k);
      return split == SpSplit::kZigzag && chunk >= R ? 2 * R - 1 - chunk : chunk;
    };
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= i; ++j) out[owner(i)] += j < i ? 2 : 1;
      for (int64_t j = i + 1; j < v; ++j) out[owner(i)] += 2;
    }
  }
  return out;
}

TEST(SeqParTest, RankPairsEqualBruteForceOnPackedVariableLengthSamples) {
  for (SpSplit split : {SpSplit::kContiguous, SpSplit::kZigzag})
    for (int R : {1, 2, 3, 4}) {
      const int64_t units = split == SpSplit::kZigzag ? 2 * R : R;
      std::vector<int64_t> lens = {SpPaddedTokens(13, units), SpPaddedTokens(40, units),
                                   SpPaddedTokens(7, units)};
      const std::vector<double> got = RankAttentionPairs(split, R, lens);
      const std::vector<double> want = BruteForcePairs(split, R, lens);
      ASSERT_EQ(got.size(), want.size());
      for (int r = 0; r < R; ++r) EXPECT_DOUBLE_EQ(got[r], want[r]) << "R " << R << " rank " << r;
      double total = 0, square = 0;
      for (double v : got) total += v;
      for (int64_t n : lens) square += static_cast<double>(n) * n;
      EXPECT_DOUBLE_EQ(total, square);  // the same attention work as without SP
    }
}

// Bidirectional vision spans (ModelSpec::bidirectional_vision): every rank's pairs equal the brute force over
// the mask, and a sample sums to n^2 + v (v - 1), the unsharded workload's (core/cost ComponentWorkload).
TEST(SeqParTest, RankPairsWithVisionSpansEqualBruteForce) {
  for (SpSplit split : {SpSplit::kContiguous, SpSplit::kZigzag})
    for (int R : {1, 2, 3, 4}) {
      const int64_t units = split == SpSplit::kZigzag ? 2 * R : R;
      const std::vector<int64_t> lens = {SpPaddedTokens(13, units), SpPaddedTokens(40, units),
                                         SpPaddedTokens(7, units), SpPaddedTokens(30, units)};
      const std::vector<int64_t> spans = {5, 33, 0, 30};  // inside, across chunks, none, the whole sample
      const std::vector<double> got = RankAttentionPairs(split, R, lens, spans);
      const std::vector<double> want = BruteForcePairs(split, R, lens, spans);
      for (int r = 0; r < R; ++r) EXPECT_DOUBLE_EQ(got[r], want[r]) << "R " << R << " rank " << r;
      double total = 0, expected = 0;
      for (double v : got) total += v;
      for (size_t x = 0; x < lens.size(); ++x)
        expected += static_cast<double>(lens[x]) * lens[x] + static_cast<double>(spans[x]) * (spans[x] - 1);
      EXPECT_DOUBLE_EQ(total, expected);
    }
}

// SpanExtraCells against counting, on every range pair of a 12-token sample and every span.
TEST(SeqParTest, SpanExtraCellsIsTheCount) {
  const int64_t n = 12;
  for (int64_t v = 0; v <= n; ++v)
    for (int64_t a = 0; a <= n; ++a)
      for (int64_t b = a; b <= n; ++b)
        for (int64_t c = 0; c <= n; ++c)
          for (int64_t d = c; d <= n; d += 3) {
            int64_t count = 0;
            for (int64_t q = a; q < b; ++q)
              for (int64_t k = c; k < d; ++k) count += q < k && k < v;
            ASSERT_EQ(SpanExtraCells(a, b, c, d, v), count)
                << a << " " << b << " " << c << " " << d << " " << v;
          }
}

// Cornstarch's makespan split: blocks weighted by their masked pairs, LPT to the least loaded rank. The ranks'
// pairs sum to the samples' n^2 + v (v - 1); each rank's pairs and tokens are those of the blocks LPT gives it,
// recomputed here from a per-token brute force; and no rank is above (4/3 - 1/(3R)) of the optimum's bound
// max(total / R, largest block) (Graham's LPT bound).
TEST(SeqParTest, MakespanSplitIsLptOverMaskedBlocks) {
  const std::vector<int64_t> lens = {300, 70, 513, 64, 1000};
  const std::vector<int64_t> spans = {256, 0, 500, 64, 0};
  for (int R : {1, 2, 3, 4, 8})
    for (int64_t B : {1, 16, 128}) {
      const SpMakespan m = MakespanSplit(R, B, lens, spans);
      // Per-token pairs over the packed sequence, then blocks, then LPT by hand.
      std::vector<double> token_pairs;
      for (size_t x = 0; x < lens.size(); ++x)
        for (int64_t p = 0; p < lens[x]; ++p)
          token_pairs.push_back(p < spans[x] ? 2.0 * spans[x] - 1 : 2.0 * p + 1);
      const int64_t total_tokens = static_cast<int64_t>(token_pairs.size());
      const int64_t blocks = (total_tokens + B - 1) / B;
      std::vector<double> work(blocks, 0.0);
      std::vector<int64_t> size(blocks, 0);
      for (int64_t t = 0; t < total_tokens; ++t) {
        work[t / B] += token_pairs[t];
        ++size[t / B];
      }
      std::vector<int64_t> order(blocks);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return work[x] > work[y]; });
      std::vector<double> load(R, 0.0);
      std::vector<int64_t> tokens(R, 0);
      for (int64_t blk : order) {
        int best = 0;
        for (int r = 1; r < R; ++r)
          if (load[r] < load[best]) best = r;
        load[best] += work[blk];
        tokens[best] += size[blk];
      }
      ASSERT_EQ(m.pairs.size(), static_cast<size_t>(R));
      for (int r = 0; r < R; ++r) {
        EXPECT_DOUBLE_EQ(m.pairs[r], load[r]) << "R " << R << " B " << B << " rank " << r;
        EXPECT_EQ(m.tokens[r], tokens[r]) << "R " << R << " B " << B << " rank " << r;
      }
      double sum = 0, expected = 0;
      for (double v : m.pairs) sum += v;
      for (size_t x = 0; x < lens.size(); ++x)
        expected += static_cast<double>(lens[x]) * lens[x] + static_cast<double>(spans[x]) * (spans[x] - 1);
      EXPECT_DOUBLE_EQ(sum, expected);
      const double bound = std::max(expected / R, *std::max_element(work.begin(), work.end()));
      EXPECT_LE(*std::max_element(m.pairs.begin(), m.pairs.end()),
                (4.0 / 3 - 1.0 / (3 * R)) * bound * (1 + 1e-12));
    }
}

// Where the zigzag split loses its balance and the makespan split keeps it: one 8,192-token sample whose first
// 4,096 tokens are a bidirectional image span, over 8 ranks. Zigzag's rank 0 holds the span's first chunk, whose
// queries attend to the whole span: well above the mean. The makespan split (128-token blocks) is within 1% of
// the mean.
TEST(SeqParTest, BidirectionalSpansUnbalanceZigzagButNotTheMakespanSplit) {
  const int R = 8;
  const std::vector<int64_t> lens = {8192}, spans = {4096};
  const std::vector<double> zz = RankAttentionPairs(SpSplit::kZigzag, R, lens, spans);
  const SpMakespan ms = MakespanSplit(R, 128, lens, spans);
  const double mean = (8192.0 * 8192 + 4096.0 * 4095) / R;
  const double zz_max = *std::max_element(zz.begin(), zz.end());
  const double ms_max = *std::max_element(ms.pairs.begin(), ms.pairs.end());
  EXPECT_NEAR(zz_max / mean, 1.175, 1e-3);  // rank 0: chunks 0 and 15, 1.175 by brute force over the tokens
  EXPECT_LT(ms_max / mean, 1.01);
  // Without the span, zigzag is exact and the makespan split within 1% too.
  const std::vector<double> causal = RankAttentionPairs(SpSplit::kZigzag, R, lens);
  for (double v : causal) EXPECT_DOUBLE_EQ(v, 8192.0 * 8192 / R);
  const SpMakespan ms_causal = MakespanSplit(R, 128, lens);
  EXPECT_LT(*std::max_element(ms_causal.pairs.begin(), ms_causal.pairs.end()) / (8192.0 * 8192 / R), 1.01);
}

// Cornstarch's pipelined gather: the closed form, and its limits (one group: gather then compute; gathers
// much faster than compute: only the first gather exposed).
TEST(SeqParTest, PipelinedGatherIsItsClosedForm) {
  EXPECT_DOUBLE_EQ(PipelinedGatherUs(1, 3, 5, 0), 8);
  EXPECT_DOUBLE_EQ(PipelinedGatherUs(4, 1, 5, 0), 1 + 3 * 5 + 5);
  EXPECT_DOUBLE_EQ(PipelinedGatherUs(4, 7, 5, 1), 7 + 3 * 7 + 6);
}

TEST(SeqParTest, ZigzagGivesEveryRankTheSameAttentionWorkOnAUniformSequence) {
  for (int R : {2, 4, 8, 16, 32}) {
    const int64_t n = 2 * R * 1024;
    const std::vector<double> pairs = RankAttentionPairs(SpSplit::kZigzag, R, {n});
    for (int r = 0; r < R; ++r)
      EXPECT_DOUBLE_EQ(pairs[r], static_cast<double>(n) * n / R) << "R " << R << " rank " << r;
  }
}

TEST(SeqParTest, RingCausalImbalanceIsItsClosedForm) {
  for (int R : {2, 4, 8, 16}) {
    const int64_t n = R * 4096;
    const double k = static_cast<double>(n) / R;
    const std::vector<double> pairs = RankAttentionPairs(SpSplit::kContiguous, R, {n});
    for (int r = 0; r < R; ++r) EXPECT_DOUBLE_EQ(pairs[r], (2.0 * r + 1) * k * k);
    const double mean = std::accumulate(pairs.begin(), pairs.end(), 0.0) / R;
    EXPECT_DOUBLE_EQ(*std::max_element(pairs.begin(), pairs.end()) / mean, (2.0 * R - 1) / R);
    // Step s of rank r uses the KV of rank (r - s) mod R: a full block below the diagonal, nothing above it.
    const auto steps = RankStepPairs(SpSplit::kContiguous, R, {n});
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s) {
        const int src = (r - s + R) % R;
        EXPECT_DOUBLE_EQ(steps[r][s], src < r ? 2 * k * k : src == r ? k * k : 0.0);
      }
  }
}

// The general schedule: per step max(compute, transfer) + serial, then the exposed tail. Two ranks, three
// steps, transfers 3, 6, 0 us, serial 1 us per step on rank 1, tail 2 us.
TEST(SeqParTest, RingScheduleIsItsClosedForm) {
  double exposed = -1;
  const double t = RingScheduleUs({{5, 1, 2}, {1, 1, 9}}, {{}, {1, 1, 1}}, {3, 6, 0}, 2, &exposed);
  // rank 0: 5 + 6 + 2 + 2 = 15 (exposed 5 + 2); rank 1: 3 + 1 + 6 + 1 + 9 + 1 + 2 = 23 (exposed 2 + 5 + 2).
  EXPECT_DOUBLE_EQ(t, 23);
  EXPECT_DOUBLE_EQ(exposed, 9);
  // A per-step overhead o on each of R steps whose compute outlasts the transfer adds exactly R x o.
  const double base = RingScheduleUs({{10, 10, 10, 10}}, {}, {4, 4, 4, 0}, 0, nullptr);
  EXPECT_DOUBLE_EQ(RingScheduleUs({{10.5, 10.5, 10.5, 10.5}}, {}, {4, 4, 4, 0}, 0, nullptr) - base, 4 * 0.5);
}

// Rows per step: zigzag rank r of R covers 2k query rows at step 0 and steps s <= r, k after; its KV rows 2k at
// step 0 and steps s > r, k otherwise; the contiguous ring k against k on steps s <= r, nothing after.
TEST(SeqParTest, StepRowsAreTheClosedForms) {
  const int R = 4;
  const SpStepRows z = RankStepRows(SpSplit::kZigzag, R, {800, 80});  // k = 100 + 10
  for (int r = 0; r < R; ++r) {
    double q = 0;
    for (int s = 0; s < R; ++s) {
      EXPECT_DOUBLE_EQ(z.q[r][s], s == 0 || s <= r ? 220 : 110) << r << " " << s;
      EXPECT_DOUBLE_EQ(z.kv[r][s], s == 0 || s > r ? 220 : 110) << r << " " << s;
      q += z.q[r][s];
    }
    EXPECT_DOUBLE_EQ(q, 110.0 * (R + r + 1));  // 2k (r + 1) + k (R - 1 - r)
  }
  const SpStepRows c = RankStepRows(SpSplit::kContiguous, R, {400});
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < R; ++s) EXPECT_DOUBLE_EQ(c.q[r][s], s <= r ? 100 : 0);
}

TEST(SeqParTest, RingPassOverlapsEachStepWithItsTransfer) {
  // Rank 0: steps 5, 1, 2 (the last step has no transfer); rank 1: 1, 1, 9. Transfer 3 us.
  double exposed = -1;
  const double t = RingPassUs({{5, 1, 2}, {1, 1, 9}}, 3, &exposed);
  // rank 0: max(5,3) + max(1,3) + 2 = 10, exposed 2; rank 1: 3 + 3 + 9 = 15, exposed 4.
  EXPECT_DOUBLE_EQ(t, 15);
  EXPECT_DOUBLE_EQ(exposed, 4);
  // Compute longer than every transfer hides it.
  EXPECT_DOUBLE_EQ(RingPassUs({{5, 5, 5}}, 1, &exposed), 15);
  EXPECT_DOUBLE_EQ(exposed, 0);
}

TEST(SeqParTest, UlyssesAllToAllBytesAreTheClosedForm) {
  const TransformerConfig t = Llama3_8b();
  // (U-1)/U * tokens * (2 * heads * head_dim + 2 * kv_heads * head_dim) * 2 bytes / tp.
  for (int U : {2, 4, 8})
    for (int tp : {1, 2}) {
      const int64_t tokens = 32768;
      const double want = (U - 1.0) / U * tokens * (2.0 * 32 * 128 + 2.0 * 8 * 128) * 2 / tp;
      EXPECT_EQ(UlyssesAllToAllBytes(t, tokens, U, tp, false), static_cast<int64_t>(want)) << U << " " << tp;
    }
  // Replicated KV heads (U = 16 > 8 KV heads): K and V move 16 heads' width.
  const double rep = 15.0 / 16 * 1000 * (2.0 * 32 * 128 + 2.0 * 16 * 128) * 2;
  EXPECT_EQ(UlyssesAllToAllBytes(t, 1000, 16, 1, true), static_cast<int64_t>(rep));
  EXPECT_GT(UlyssesAllToAllBytes(t, 1000, 16, 1, true), UlyssesAllToAllBytes(t, 1000, 16, 1, false));
  EXPECT_EQ(UlyssesAllToAllBytes(t, 1000, 1, 1, false), 0);
  // Ring step: tokens * 2 (K, V) * kv width / U * 2 bytes / tp.
  EXPECT_EQ(RingStepKvBytes(t, 4096, 1, 1, false), 4096 * 2 * 8 * 128 * 2);
  EXPECT_EQ(RingStepKvBytes(t, 4096, 4, 2, false), 4096 * 2 * 8 * 128 * 2 / 4 / 2);
}

// SP buffers of one attention layer (SpAttentionBufferBytes): closed forms; Megatron CP's forward keeps every
// ring step's KV and output, so at a fixed shard it grows with the ring while ring-flash-attention's does not.
TEST(SeqParTest, AttentionBufferBytesAreTheClosedForms) {
  const TransformerConfig t = Llama3_8b();  // 32 heads, 8 KV heads of 128
  const int64_t T = 8192;
  SpLayout l;
  l.method = SpMethod::kUlysses;
  l.sp = l.ulysses = 4;
  const double a2a = 2.0 * (T / 4) * (32 * 128 + 2 * 8 * 128);
  EXPECT_EQ(SpAttentionBufferBytes(l, t, T, 1).forward, static_cast<int64_t>(a2a));
  EXPECT_EQ(SpAttentionBufferBytes(l, t, T, 1).backward, static_cast<int64_t>(a2a));
  EXPECT_EQ(SpAttentionBufferBytes(l, t, T, 2).forward, static_cast<int64_t>(a2a / 2));
  const double kv = static_cast<double>(RingStepKvBytes(t, T, 1, 1, false));
  const double q = 2.0 * T * 32 * 128, lse = 4.0 * T * 32;
  for (int R : {2, 8, 64}) {
    SpLayout ring;
    ring.method = SpMethod::kZigzagRing;
    ring.sp = ring.ring = R;
    EXPECT_EQ(SpAttentionBufferBytes(ring, t, T, 1).forward, static_cast<int64_t>(kv + 2 * q + lse)) << R;
    EXPECT_EQ(SpAttentionBufferBytes(ring, t, T, 1).backward, static_cast<int64_t>(6 * kv + 2 * q)) << R;
    SpLayout cp = ring;
    cp.method = SpMethod::kMegatronCp;
    EXPECT_EQ(SpAttentionBufferBytes(cp, t, T, 1).forward, static_cast<int64_t>((R - 1) * kv + R * (q + lse)))
        << R;
    EXPECT_EQ(SpAttentionBufferBytes(cp, t, T, 1).backward, static_cast<int64_t>(4 * kv + q)) << R;
  }
  SpLayout none;
  EXPECT_EQ(SpAttentionBufferBytes(none, t, T, 1).forward, 0);
  EXPECT_EQ(SpAttentionBufferBytes(l, t, 0, 1).backward, 0);
}

TEST(SeqParTest, UlyssesRefusesADegreeThatDoesNotDivideTheHeadsNamingTheField) {
  const TransformerConfig t = Llama3_8b();
  auto r = ResolveSpLayout("ulysses", {}, Sp(12), 8, t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind(
                "parallel.sp: Ulysses degree 12 does not divide the LLM's 32 attention heads", 0),
            0u)
      << r.error().message();
  // KV heads: 16 divides 32 heads but not 8 KV heads: an error with kv: error, replication by default.
  auto e = ResolveSpLayout("ulysses", {{"kv", "error"}}, Sp(16), 8, t);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(
      e.error().message().rfind("parallel.sp: Ulysses degree 16 does not divide the LLM's 8 KV heads", 0),
      0u);
  auto ok = ResolveSpLayout("ulysses", {}, Sp(16), 8, t);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_TRUE(ok->replicate_kv);
  EXPECT_EQ(ok->ulysses, 16);
  EXPECT_FALSE(ok->ulysses_in_node);  // 16 GPUs span two 8-GPU nodes
  // Beyond the heads: no replication helps (LongVILA §4.1: at most 32).
  EXPECT_FALSE(ResolveSpLayout("ulysses", {}, Sp(64), 8, t).ok());
  // 2d names its own field.
  ParallelConfig p = Sp(16);
  p.sp_ulysses = 3;
  auto d = ResolveSpLayout("2d", {}, p, 8, t);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().message().rfind("parallel.sp", 0), 0u) << d.error().message();
}

TEST(SeqParTest, LayoutPutsUlyssesInsideANodeAndTheRingAcross) {
  const TransformerConfig t = Llama3_8b();
  auto l = ResolveSpLayout("2d", {}, Sp(32), 8, t);
  ASSERT_TRUE(l.ok()) << l.error().message();
  EXPECT_EQ(l->ulysses, 8);  // the largest degree dividing 32 heads and 8 KV heads inside an 8-GPU node
  EXPECT_EQ(l->ring, 4);
  EXPECT_TRUE(l->ulysses_in_node);
  EXPECT_FALSE(l->ring_in_node);
  EXPECT_EQ(l->split, SpSplit::kZigzag);
  EXPECT_EQ(SpPadUnits(*l), 8 * 4 * 2);
  auto ring = ResolveSpLayout("ring", {}, Sp(4), 8, t);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring->split, SpSplit::kContiguous);
  EXPECT_TRUE(ring->ring_in_node);
  EXPECT_EQ(SpPadUnits(*ring), 4);
  // megatron-cp+tp needs TP; sp > 1 needs a policy; none with sp 1 is fine.
  auto cptp = ResolveSpLayout("megatron-cp+tp", {}, Sp(4), 8, t);
  ASSERT_FALSE(cptp.ok());
  EXPECT_EQ(cptp.error().message().rfind("policies.sp:", 0), 0u);
  auto cptp2 = ResolveSpLayout("megatron-cp+tp", {}, Sp(4, 8), 8, t);
  ASSERT_TRUE(cptp2.ok());
  EXPECT_FALSE(cptp2->ring_in_node);
  EXPECT_FALSE(ResolveSpLayout("none", {}, Sp(2), 8, t).ok());
  EXPECT_TRUE(ResolveSpLayout("none", {}, Sp(1), 8, t).ok());
  // Padding: ceil to the units.
  EXPECT_EQ(SpPaddedTokens(100, 16), 112);
  EXPECT_EQ(SpPaddedTokens(112, 16), 112);
  EXPECT_EQ(SpPaddedTokens(5, 1), 5);
}

}  // namespace
}  // namespace mmtwin

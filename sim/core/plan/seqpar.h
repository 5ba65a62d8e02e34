// SPDX-License-Identifier: Apache-2.0
// Sequence parallelism (long context; LongVILA §4, sim/docs/algorithms.md §6): the SP policy registry, the SP
// group's device layout, and the closed-form pieces that price one LLM layer of one micro-batch on one SP rank.
//
// An SP group of S = parallel.sp ranks (the device mesh's sp dimension, core/plan/mesh.h) holds one sequence
// (one micro-batch, packed samples) split along the tokens. Methods (registry below):
//   ring          RingAttention (Liu et al. 2023): every sample cut into S contiguous shards, rank r holds
//                 shard r; S steps per attention, step s computes against the KV of rank (r - s) mod S while
//                 that KV goes on to rank r + 1 (P2P, overlapped with the step's compute).
//   zigzag-ring   zhuzilin/ring-flash-attention's zigzag: every sample cut into 2S chunks, rank r holds chunks r
//                 and 2S-1-r, which balances the causal work.
//   ulysses       DeepSpeed-Ulysses (Jacobs et al. 2023): four all-to-alls per attention layer (Q, K, V in,
//                 O out) turn sequence shards into head shards; S must divide the heads, and the KV heads (or
//                 they are replicated to S heads: parameter kv, the extra bytes are charged).
//   2d            2D-Attention / USP (LongVILA's MM-SP): Ulysses of degree U inside a node (NVLink all-to-all)
//                 x zigzag ring of degree R = S / U across nodes (P2P over the NICs).
//   megatron-cp   Megatron-LM context parallelism: a zigzag ring over all S ranks (its load-balanced 2S split),
//                 TransformerEngine's P2P implementation (cp_comm_type p2p, see "ring implementations").
//   megatron-cp+tp  the same ring across nodes with tensor parallelism (parallel.tp > 1) inside the node.
//   megatron-cp-ag  Megatron-LM CP with cp_comm_type all_gather (TransformerEngine AttnFuncWithCPAndKVAllGather,
//                 Llama 3 §3.3.2): the KV of all S ranks all-gathered once per layer (exposed), then the rank's
//                 two zigzag chunks attend to their causal KV prefixes; the backward all-gathers again and
//                 reduce-scatters dK, dV (exposed).
//   cornstarch-cp Cornstarch's mask-aware context parallelism (cornstarch-org/Cornstarch:
//                 MakespanMinContextParallelSplitter in cornstarch/distributed/context_parallel/splitters.py,
//                 ContextParallelBitfieldAttention in
//                 cornstarch/shardformer/layers/context_parallel_bitfield_attention.py): the packed sequence cut into
//                 blocks of block_tokens, each block weighted by the KV cells its queries attend under the
//                 multimodal mask (causal text, bidirectional vision spans: ModelSpec::bidirectional_vision),
//                 blocks assigned heaviest first to the least loaded rank (LPT; MakespanSplit). The KV (repeated
//                 to every query head, repeat_kv) all-gathered per group of heads_stride heads on a side stream,
//                 the attention of group g waiting for its gather only (pipelined); the backward gathers
//                 again and reduce-scatters each group's dK, dV on the compute stream (exposed).
//
// Ring implementations (SpRingImplOf), priced per step and rank by SpAttentionOf (core/plan/pricing.cc) from the
// per-step query / KV rows (RankStepRows) and the schedule RingScheduleUs; every step's attention kernel is
// priced at its own block (the cost model's per-pair and per-query-row terms: a small block runs below peak),
// every extra kernel pays DeviceSpec::kernel_overhead_us, memory-bound kernels run at hbm_bytes_per_s x
// hbm_peak_fraction:
//   ring-flash-attention (ring, zigzag-ring, 2d's ring; zhuzilin/ring-flash-attention zigzag_ring_flash_attn.py /
//     ring_flash_attn.py, the implementation LongVILA builds on): forward per step one flash-attention call,
//     then on the same stream the output and LSE update in fp32 (utils.py _update_out_and_lse; kRfaUpdate*),
//     zigzag's second-half steps writing their slice back (kRfaSliceCopyBytes); the next KV's send/recv
//     (batch_isend_irecv) overlaps the step and is waited at its end; the fp32 output cast to bf16 at the end.
//     Backward: per step the flash-attention backward (kFlashBwdKernels), dq += in fp32 (kFp32AccumBytes), then
//     dk, dv += in fp32; the KV (bf16) and the previous step's dK, dV (fp32, twice the KV bytes) travel
//     during the step; the last dK, dV transfer after the loop is exposed (d_kv_comm.wait()); the first step
//     casts dq, dk, dv to fp32 and the end casts them back (kCastBytes).
//   TransformerEngine P2P (megatron-cp, megatron-cp+tp; TE 2.x context_parallel.py AttnFuncWithCPAndKVP2P,
//     non-FP8 bf16 path): K and V concatenated into one buffer (kBf16CopyBytes); steps alternate between two
//     CUDA streams with the next step's P2P posted when the step starts; the LSE correction runs on the other
//     stream (hidden); the outputs are corrected once after the loop, one fused kernel per step in bf16
//     (flash_attn_fwd_out_correction: kBf16AddBytes, the first kBf16CopyBytes). Backward: per step dq add_ in
//     bf16, then dK, dV add_ in bf16 after the wait; the step sends KV and the accumulated dKV in one bf16
//     buffer (the first step KV only, the last dKV only); nothing exposed after the loop.
//   TransformerEngine all-gather (megatron-cp-ag): see the method above; the all-gather and reduce-scatter are
//     collectives over the R ring ranks, one for K and one for V, each of R x RingStepKvBytes / 2 bytes per rank,
//     priced by NCCL's model (core/plan/collective.h) when the ring sits in one node of a cluster whose
//     collectives are "nccl", else (across nodes, as the SimGrid engine replays them) rings of R - 1 steps at the
//     SP link (latency each, (R - 1) x RingStepKvBytes per GPU in all); cornstarch-cp's
//     per-head-group gathers and reduce-scatters likewise; the
//     gathered KV reordered by index_select (kBf16CopyBytes per element), q's halves made contiguous and the two
//     partial outputs copied into one (kBf16CopyBytes each); backward dq copied, dK, dV added over each step's
//     KV prefix (kBf16AddBytes).
//
// Units: tokens, bytes (bf16 = 2 bytes per element), microseconds. "Square pairs" are the cost model's
// attention unit (core/cost/cost_model.h: LayerWorkload::attn_pairs is span^2 and the model halves it for a
// causal layer): a causal block of k x k tokens strictly below the diagonal counts 2 k^2 square pairs, a
// diagonal block k^2, a block above the diagonal 0. With these units a sample of n tokens cut into any number of
// equal blocks sums to n^2 over all ranks, the same as without SP.
//
//   MMTWIN_ASSIGN_OR_RETURN(SpLayout l, ResolveSpLayout("2d", {}, parallel, cluster.gpus_per_node, llm.tf));
//   std::vector<double> pairs = RankAttentionPairs(SpSplit::kZigzag, l.ring, {n});   // equal on every rank
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/plan/plan.h"
#include "core/util/registry.h"

namespace mmtwin {

enum class SpMethod : uint8_t {
  kNone,
  kRing,
  kZigzagRing,
  kUlysses,
  k2d,
  kMegatronCp,
  kMegatronCpTp,
  kMegatronCpAg,
  kCornstarchCp
};
// "none", "ring", "zigzag-ring", "ulysses", "2d", "megatron-cp", "megatron-cp+tp", "megatron-cp-ag",
// "cornstarch-cp".
const char* SpMethodName(SpMethod m);

// How the ring part splits the micro-batch: every sample in S contiguous shards, or in 2S zigzag chunks (rank r:
// r and 2S-1-r); or (kMakespan, cornstarch-cp) the packed sequence in blocks assigned by LPT on their masked
// work (MakespanSplit).
enum class SpSplit : uint8_t { kContiguous, kZigzag, kMakespan };

// The resolved SP layout of a plan. sp = ulysses * ring.
struct SpLayout {
  SpMethod method = SpMethod::kNone;
  int sp = 1;       // parallel.sp
  int ulysses = 1;  // head-parallel (all-to-all) degree, the inner (consecutive-rank) sub-group
  int ring = 1;     // ring degree, the outer sub-group (ranks tp * ulysses apart)
  SpSplit split = SpSplit::kZigzag;
  bool replicate_kv = false;  // Ulysses: KV heads replicated up to `ulysses` heads (kv: replicate)
  // Sharding of a multimodal sample (parameter sharding, LongVILA §4.2 and §5.1.3): false = MM-SP two-stage
  // (frames spread evenly for the encoder, then every token re-sharded evenly, the vision embeddings'
  // redistribution charged); true = one-stage (the sequence cut where the frames are: each rank's LLM tokens
  // are its frames' tokens, a sample's text on one rank, samples' texts dealt round-robin; no redistribution).
  bool one_stage = false;
  // Layout: the Ulysses sub-group sits inside one node iff tp * ulysses <= gpus_per_node (ranks are tp-fastest,
  // then sp); the ring crosses nodes iff tp * sp > gpus_per_node (gpus_per_node <= 0: every GPU its own node).
  bool ulysses_in_node = true;
  bool ring_in_node = true;
  // ring-flash-attention's per-step output update (policies.sp params update): one fused kernel (true) or the
  // element-wise ops of _update_out_and_lse one by one.
  bool fused_update = true;
  // cornstarch-cp (policies.sp params): tokens per block of the makespan split, and query heads per pipelined
  // KV all-gather (Cornstarch's block_size 128 and heads_stride 1).
  int block_tokens = 128;
  int heads_stride = 1;
  bool operator==(const SpLayout&) const = default;
};

// The implementation whose per-step structure prices a layout's ring (see "ring implementations" above).
enum class SpRingImpl : uint8_t { kRingFlashAttn, kTeP2p, kTeAllGather, kCornstarchAllGather };
SpRingImpl SpRingImplOf(SpMethod m);

// Constants of the ring implementations, HBM bytes per element (bf16 2 bytes, fp32 4) or kernels per call:
// ring-flash-attention utils.py _update_out_and_lse (commit 0b90df9, torch.jit.script): block_out.to(fp32)
// 2 + 4, exp(lse - new_lse) * out 4 + 4, exp(block_lse - new_lse) * block_out 4 + 4, their sum 4 + 4 + 4:
// 34 bytes per output element in 13 element-wise kernels (the LSE's are per head, not per element); fused into
// one kernel it reads out (4) and block_out (2) and writes out (4): 10.
inline constexpr double kRfaUpdateUnfusedBytes = 34, kRfaUpdateFusedBytes = 10;
inline constexpr int kRfaUpdateUnfusedKernels = 13;
// zigzag_ring_flash_attn.py, steps on the second query half: out[slice_] = slice_out copies the fp32 slice
// (read 4, write 4) and its LSE: 8 bytes per element, 2 kernels.
inline constexpr double kRfaSliceCopyBytes = 8;
// fp32 accumulator += bf16 block (dq += dq_buffer; dk, dv likewise): read 4 + 2, write 4.
inline constexpr double kFp32AccumBytes = 10;
// bf16 <-> fp32 cast (.to(torch.float32), .to(q.dtype)): read 2 + write 4 (or 4 + 2).
inline constexpr double kCastBytes = 6;
// bf16 add_ in place (TE's dq.add_, dk.add_, out.add_ of the output correction): read 2 + 2, write 2.
inline constexpr double kBf16AddBytes = 6;
// bf16 copy (torch.cat, copy_, index_select, .contiguous()): read 2, write 2.
inline constexpr double kBf16CopyBytes = 4;
// flash-attention 2 backward launches three kernels per call (flash_api.cpp run_mha_bwd: dot(dO, O), the
// dq/dk/dv loop, the dq conversion); the cost model counts two per layer (KernelCounts).
inline constexpr int kFlashBwdKernels = 3;

using SpPolicyFn = SpMethod;
using SpPolicyInfo = RegistryEntry<SpPolicyFn>;
// The SP policies in a fixed order (names, one-line descriptions, typed parameters): `mmtwin policies`, the
// scenario parser and the planner read it.
const PolicyRegistry<SpPolicyFn>& SpPolicyRegistry();

// Resolves the policy for `parallel` (parallel.sp, sp_ulysses, sp_ring, tp) on nodes of `gpus_per_node` GPUs
// for an LLM with `llm` attention heads. Errors name the scenario field: "parallel.sp: ..." (a Ulysses degree
// that does not divide llm heads, or the KV heads with kv: error; sp > 1 with policy none; sp_ulysses x sp_ring
// != sp), "policies.sp: ..." (megatron-cp+tp with tp 1). 2d with sp_ulysses = 0 takes the largest U dividing
// sp and the heads (and the KV heads unless replicated) with tp * U <= gpus_per_node.
Result<SpLayout> ResolveSpLayout(const std::string& policy, const std::map<std::string, std::string>& params,
                                 const ParallelConfig& parallel, int gpus_per_node,
                                 const TransformerConfig& llm);

// Tokens one sample of `n` tokens occupies after dummy-token padding to a multiple of `units` (S for a
// contiguous ring, 2S for zigzag, U for Ulysses alone): ceil(n / units) * units. The padded tokens' labels are
// ignored, but they are computed.
int64_t SpPaddedTokens(int64_t n, int64_t units);
// Padding units of a layout: ring * (2 for zigzag, else 1) * ulysses; 1 for the makespan split (blocks cross
// the samples of the packed sequence: nothing is padded).
int64_t SpPadUnits(const SpLayout& l);

// Square pairs (see above) each of the `ring` ranks computes per attention layer for a packed micro-batch
// whose samples have `sample_tokens` (already padded) tokens, each sample split on its own (varlen: attention
// never crosses samples). Closed forms for one sample of n tokens, k = n / ring (contiguous) or n / (2 ring)
// (zigzag): contiguous rank r: (2r + 1) k^2; zigzag every rank: 4 ring k^2 = n^2 / ring. `vision_spans`
// (empty, or one per sample): the tokens of each sample's bidirectional vision span at its start
// (ModelSpec::bidirectional_vision); a query chunk then also attends to the span's later tokens in a KV chunk,
// 2 pairs per extra cell (SpanExtraCells), so that a sample's pairs sum to n^2 + v (v - 1) over the ranks.
// The split is kContiguous or kZigzag (kMakespan: MakespanSplit).
std::vector<double> RankAttentionPairs(SpSplit split, int ring, const std::vector<int64_t>& sample_tokens,
                                       const std::vector<int64_t>& vision_spans = {});
// The same per ring step: out[r][s] = square pairs of rank r at step s (KV from rank (r - s) mod ring).
std::vector<std::vector<double>> RankStepPairs(SpSplit split, int ring,
                                               const std::vector<int64_t>& sample_tokens,
                                               const std::vector<int64_t>& vision_spans = {});

// KV cells that queries [a, b) attend in keys [c, d) beyond the causal ones, for a sample whose first v tokens
// attend to each other bidirectionally: #{(q, k) : a <= q < b, c <= k < d, q < k < v}. Positions are the
// sample's own.
int64_t SpanExtraCells(int64_t a, int64_t b, int64_t c, int64_t d, int64_t v);

// Cornstarch's makespan split (cornstarch-cp): the packed sequence (the samples of `sample_tokens` one after the
// other) cut into blocks of `block_tokens` (the last shorter); a block's work is its tokens' square pairs, a
// token at position p of a sample with span v taking 2 v - 1 if p < v (the whole span), else 2 p + 1 (its causal
// prefix), so a sample sums to n^2 + v (v - 1) as RankAttentionPairs; blocks in descending work (ties: the
// earlier block first, a choice: Cornstarch's reversed numpy argsort takes the later) each go to the rank with
// the least work so far (ties: the lower rank, as its heap of (load, rank)). Per rank its square pairs and its
// tokens.
struct SpMakespan {
  std::vector<double> pairs;
  std::vector<int64_t> tokens;
};
SpMakespan MakespanSplit(int ring, int64_t block_tokens, const std::vector<int64_t>& sample_tokens,
                         const std::vector<int64_t>& vision_spans = {});

// Rows each ring step's attention kernel covers: q[r][s] query rows and kv[r][s] KV rows (tokens, summed over
// the samples; 0 where the step computes nothing). Zigzag (k = n / 2R per sample): step 0 the rank's 2k
// against its 2k (causal), a step s <= r its 2k queries against the first k of the KV, a step s > r the last
// k queries against all 2k; contiguous (k = n / R): steps s <= r k against k, steps s > r nothing (causal).
struct SpStepRows {
  std::vector<std::vector<double>> q, kv;
};
SpStepRows RankStepRows(SpSplit split, int ring, const std::vector<int64_t>& sample_tokens);

// Ulysses all-to-all bytes one GPU sends per attention layer and pass (forward; the backward moves the same
// bytes back): four all-to-alls of the rank's tokens_per_rank positions, Q and O of width heads * head_dim, K
// and V of width kv_width = max(kv_heads, U if replicated) * head_dim, each keeping 1/U at home:
//   (U - 1) / U * tokens_per_rank * (2 * q_width + 2 * kv_width) * 2 bytes / tp.
int64_t UlyssesAllToAllBytes(const TransformerConfig& llm, int64_t tokens_per_rank, int ulysses, int tp,
                             bool replicate_kv);
// KV bytes one ring step moves per GPU in the forward: tokens_per_ring_rank * 2 (K, V) * kv_width / ulysses * 2
// bytes / tp (after the Ulysses all-to-all a rank holds 1/U of the KV heads of its ring shard).
int64_t RingStepKvBytes(const TransformerConfig& llm, int64_t tokens_per_ring_rank, int ulysses, int tp,
                        bool replicate_kv);

// Communication and accumulation buffers of one attention layer on one GPU, bytes, allocated in its forward /
// backward and freed when it ends (one layer at a time). T = tokens_per_ring_rank (the ring shard one Ulysses
// group shares), U = ulysses, t = tp, kv = RingStepKvBytes, q = 2·T·q_width / (U·t) (bf16 output of the rank's
// heads), l = 4·T·heads / (U·t) (fp32 softmax statistics):
//   Ulysses (U > 1), both passes: the all-to-alls' receive buffers of Q, K, V (dO, dQ, dK, dV in the
//     backward), 2·(T / U)·(q_width + 2·kv_width) / t (DeepSpeed-Ulysses' _SeqAllToAll returns a new tensor).
//   ring / zigzag-ring / 2d's ring (ring-flash-attention, the implementation LongVILA builds on): forward the
//     next step's K, V in flight (kv) and the fp32 output and statistics accumulators (2·q + l); backward the
//     KV and dKV blocks sent and received (4·kv, two of each), fp32 dK, dV accumulators (2·kv) and the fp32 dQ
//     (2·q).
//   megatron-cp (+tp) (TransformerEngine 1.x AttnFuncWithCPAndKVP2P, which Megatron-Core's CP calls): the
//     forward allocates a receive buffer for every ring step (p2p_comm_buffers[i + 1] = empty_like(...)) and a
//     partial output and statistics per step (out_per_step, softmax_lse_per_step), all alive until the forward
//     ends: (R - 1)·kv + R·(q + l), which grows with the whole sequence, not the shard; backward the double
//     KV / dKV buffers (4·kv) and dQ (q).
//   megatron-cp-ag (AttnFuncWithCPAndKVAllGather): forward the gathered K, V and their reordered copy (2·R·kv),
//     the two partial outputs and the merged one (2·q) and the statistics (l); backward the gathered KV and its
//     copy (2·R·kv), the full-sequence dK, dV (R·kv) and the per-step dK, dV over the KV prefixes (R·kv), dQ
//     and its per-step halves (2·q).
//   cornstarch-cp (ContextParallelBitfieldAttention; kv with the KV repeated to every query head): forward the
//     gathered K, V of every head group, allocated up front (R·kv), the per-group outputs and their
//     concatenation (2·q) and statistics (l); backward the gathered K, V again (R·kv), one group's
//     full-sequence dK, dV at a time (R·kv / groups), the per-group dq, dK, dV and their clones (2·(q + kv)).
struct SpBufferBytes {
  int64_t forward = 0, backward = 0;
};
SpBufferBytes SpAttentionBufferBytes(const SpLayout& layout, const TransformerConfig& llm,
                                     int64_t tokens_per_ring_rank, int tp);

// cornstarch-cp's pipelined all-gather: `groups` equal head groups, each gathered in gather_us (on a side
// stream, one after the other, all issued at once) and then computed in compute_us, with serial_us after each
// computation on the compute stream (the backward's reduce-scatter). The pass takes
//   gather_us + (groups - 1) max(gather_us, compute_us + serial_us) + compute_us + serial_us
// (the first gather exposed, then whichever of the gathers and the computations is slower).
double PipelinedGatherUs(int groups, double gather_us, double compute_us, double serial_us);

// Time of one ring attention pass of the slowest rank, steps overlapped with their P2P: rank r takes
//   sum over s < ring-1 of max(step_us[r][s], transfer_us) + step_us[r][ring-1]
// (ring-flash-attention posts the next KV's send/recv, computes the current block, then waits). Returns the
// maximum over ranks (the SP group waits for its slowest rank at the next layer) and, in *exposed_us, the part of
// that rank's time that is transfer beyond its compute.
double RingPassUs(const std::vector<std::vector<double>>& step_us, double transfer_us, double* exposed_us);

// The general schedule: rank r takes sum over s of max(compute_us[r][s], transfer_us[s]) + serial_us[r][s]
// (the step's compute overlaps the transfer posted with it; serial work waits for the transfer), then
// tail_transfer_us exposed after the loop. serial_us may be empty (none). Returns the slowest rank's time and,
// in *exposed_us, its transfer time beyond its compute plus the tail.
double RingScheduleUs(const std::vector<std::vector<double>>& compute_us,
                      const std::vector<std::vector<double>>& serial_us,
                      const std::vector<double>& transfer_us, double tail_transfer_us, double* exposed_us);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/plan/schedule.h"

#include <algorithm>
#include <cstdint>

namespace mmtwin {
namespace {

PipeOp Fwd(int m, int c) { return PipeOp{PassKind::kForward, m, c}; }
PipeOp Bwd(int m, int c) { return PipeOp{PassKind::kBackward, m, c}; }

void BuildGpipe(Schedule& s) {
  for (int r = 0; r < s.pp; ++r) {
    auto& ops = s.per_rank[r];
    for (int m = 0; m < s.micro_batches; ++m) ops.push_back(Fwd(m, r));
    for (int m = 0; m < s.micro_batches; ++m) ops.push_back(Bwd(m, r));
  }
}

void Build1f1b(Schedule& s) {
  const int M = s.micro_batches;
  for (int r = 0; r < s.pp; ++r) {
    auto& ops = s.per_rank[r];
    const int warmup = std::min(s.pp - r - 1, M);
    for (int m = 0; m < warmup; ++m) ops.push_back(Fwd(m, r));
    for (int i = 0; i < M - warmup; ++i) {
      ops.push_back(Fwd(warmup + i, r));
      ops.push_back(Bwd(i, r));
    }
    for (int m = M - warmup; m < M; ++m) ops.push_back(Bwd(m, r));
  }
}

// Megatron-LM forward_backward_pipelining_with_interleaving (get_model_chunk_id / microbatch id in a group).
void BuildInterleaved(Schedule& s) {
  const int pp = s.pp, vpp = s.vpp, M = s.micro_batches;
  const int total = M * vpp, group = pp * vpp;
  for (int r = 0; r < pp; ++r) {
    auto chunk_of = [&](int k, bool forward) {
      int model_chunk = (k % group) / pp;
      if (!forward) model_chunk = vpp - 1 - model_chunk;
      return model_chunk * pp + r;
    };
    auto mb_of = [&](int k) { return (k / group) * pp + k % pp; };
    auto F = [&](int k) { return Fwd(mb_of(k), chunk_of(k, true)); };
    auto B = [&](int k) { return Bwd(mb_of(k), chunk_of(k, false)); };
    auto& ops = s.per_rank[r];
    const int warmup = std::min(2 * (pp - r - 1) + (vpp - 1) * pp, total);
    for (int k = 0; k < warmup; ++k) ops.push_back(F(k));
    for (int i = 0; i < total - warmup; ++i) {
      ops.push_back(F(warmup + i));
      ops.push_back(B(i));
    }
    for (int k = total - warmup; k < total; ++k) ops.push_back(B(k));
  }
}

PipeOp InputGrad(int m, int c) { return PipeOp{PassKind::kBackwardInput, m, c}; }
PipeOp WeightGrad(int m, int c) { return PipeOp{PassKind::kBackwardWeight, m, c}; }

// Qi et al. 2024 handcrafted zero-bubble schedules (schedule.h): `warmup` forwards, then the steady state
// (ZB-H1: F, B, W; ZB-H2: B, W, F), W of micro-batch i run only once the B of micro-batch i + `defer` has
// (the deferred W's fill the bubbles), then the remaining B's and W's.
void BuildZeroBubble(Schedule& s, bool h2) {
  const int M = s.micro_batches;
  for (int r = 0; r < s.pp; ++r) {
    auto& ops = s.per_rank[r];
    const int warmup = std::min(h2 ? 2 * (s.pp - r) - 1 : s.pp - r - 1, M);
    const int defer = h2 ? 2 * r : r;
    int f = 0, b = 0, w = 0;
    while (f < warmup) ops.push_back(Fwd(f++, r));
    auto weight = [&] {
      if (b - 1 - w >= defer) ops.push_back(WeightGrad(w++, r));
    };
    while (b < M) {
      if (!h2 && f < M) ops.push_back(Fwd(f++, r));
      ops.push_back(InputGrad(b++, r));
      weight();
      if (h2 && f < M) ops.push_back(Fwd(f++, r));
    }
    while (w < M) ops.push_back(WeightGrad(w++, r));
  }
}

void BuildGpipeWith(Schedule& s, const Params&) { BuildGpipe(s); }
void BuildZbH1With(Schedule& s, const Params&) { BuildZeroBubble(s, /*h2=*/false); }
void BuildZbH2With(Schedule& s, const Params&) { BuildZeroBubble(s, /*h2=*/true); }
void Build1f1bWith(Schedule& s, const Params&) { Build1f1b(s); }
void BuildInterleavedWith(Schedule& s, const Params&) { BuildInterleaved(s); }

}  // namespace

const PolicyRegistry<ScheduleFn>& Schedules() {
  static const PolicyRegistry<ScheduleFn> r(
      "schedule", "schedule",
      {{"gpipe",
        "GPipe: all forwards, then all backwards; keeps M micro-batches of activations",
        {},
        &BuildGpipeWith},
       {"1f1b",
        "PipeDream-flush 1F1B: min(pp-r-1, M) warm-up forwards, then one forward one backward, then "
        "cool-down",
        {},
        &Build1f1bWith},
       {"interleaved-1f1b",
        "Megatron interleaved 1F1B: vpp chunks per rank (chunk c on rank c % pp), micro-batches in groups of "
        "pp",
        {},
        &BuildInterleavedWith},
       {"zb-h1",
        "Zero Bubble H1 (Qi et al. 2024): backward split into input (B) and weight (W) gradients, W deferred "
        "by r on rank r; 1F1B's peak memory (pp micro-batches), bubble (pp-1)(F+B-W)",
        {},
        &BuildZbH1With},
       {"zb-h2",
        "Zero Bubble H2 (Qi et al. 2024): 2(pp-r)-1 warm-up forwards, W deferred by 2r; peak 2pp-1 "
        "micro-batches, rank 0 idles (pp-1)(F+B-2W) inside its span",
        {},
        &BuildZbH2With}});
  return r;
}

const std::vector<std::pair<std::string, std::string>>& ScheduleNames() {
  static const std::vector<std::pair<std::string, std::string>> names = [] {
    std::vector<std::pair<std::string, std::string>> v;
    for (const auto& e : Schedules().entries()) v.emplace_back(e.name, e.description);
    return v;
  }();
  return names;
}

Status CheckScheduleShape(std::string_view name, int pp, int vpp, int micro_batches,
                          const std::map<std::string, std::string>& params) {
  MMTWIN_ASSIGN_OR_RETURN(const RegistryEntry<ScheduleFn>* entry, Schedules().Find(name));
  MMTWIN_RETURN_IF_ERROR(Schedules().Validate(*entry, params));
  const std::string n(name);
  if (pp < 1) return Error("schedule " + n + ": pp must be >= 1, got " + std::to_string(pp));
  if (micro_batches < 1)
    return Error("schedule " + n + ": micro_batches must be >= 1, got " + std::to_string(micro_batches));
  if (n == "interleaved-1f1b") {
    if (vpp < 2)
      return Error("schedule interleaved-1f1b: vpp (virtual stages per rank) must be >= 2, got " +
                   std::to_string(vpp) + " (use 1f1b for vpp = 1)");
    if (micro_batches % pp != 0)
      return Error("schedule interleaved-1f1b: micro_batches (" + std::to_string(micro_batches) +
                   ") must be a multiple of pp (" + std::to_string(pp) + ")");
  } else if (vpp != 1) {
    return Error("schedule " + n + ": vpp must be 1, got " + std::to_string(vpp) +
                 " (virtual stages need interleaved-1f1b)");
  }
  return Status();
}

Result<Schedule> BuildSchedule(std::string_view name, int pp, int vpp, int micro_batches,
                               const std::map<std::string, std::string>& params) {
  MMTWIN_RETURN_IF_ERROR(CheckScheduleShape(name, pp, vpp, micro_batches, params));
  MMTWIN_ASSIGN_OR_RETURN(const RegistryEntry<ScheduleFn>* entry, Schedules().Find(name));
  MMTWIN_ASSIGN_OR_RETURN(const Params p, Schedules().Validate(*entry, params));
  const std::string n(name);
  Schedule s;
  s.name = n;
  s.pp = pp;
  s.vpp = vpp;
  s.micro_batches = micro_batches;
  s.per_rank.assign(pp, {});
  for (auto& ops : s.per_rank) ops.reserve(2 * static_cast<size_t>(micro_batches) * vpp);
  entry->run(s, p);
  return s;
}

Status ValidateSchedule(const Schedule& s) {
  if (s.pp < 1 || s.vpp < 1 || s.micro_batches < 1)
    return Error("schedule '" + s.name + "': pp, vpp and micro_batches must be >= 1");
  if (static_cast<int>(s.per_rank.size()) != s.pp)
    return Error("schedule '" + s.name + "': has " + std::to_string(s.per_rank.size()) +
                 " ranks, expected pp = " + std::to_string(s.pp));
  const int chunks = s.pp * s.vpp, M = s.micro_batches;
  // state per (m, c): 0 nothing, 1 forward seen, 2 input gradient (B) seen, 3 backward complete
  std::vector<uint8_t> state(static_cast<size_t>(M) * chunks, 0);
  for (int r = 0; r < s.pp; ++r) {
    for (const PipeOp& op : s.per_rank[r]) {
      const char* pass = op.kind == PassKind::kForward          ? "forward"
                         : op.kind == PassKind::kBackwardInput  ? "input-gradient backward"
                         : op.kind == PassKind::kBackwardWeight ? "weight-gradient backward"
                                                                : "backward";
      const std::string what = std::string(pass) + " of micro-batch " + std::to_string(op.micro_batch) +
                               " chunk " + std::to_string(op.chunk) + " on rank " + std::to_string(r);
      if (op.chunk < 0 || op.chunk >= chunks || op.chunk % s.pp != r)
        return Error("schedule '" + s.name + "': " + what + ": chunk not on this rank");
      if (op.micro_batch < 0 || op.micro_batch >= M)
        return Error("schedule '" + s.name + "': " + what + ": micro-batch out of range");
      uint8_t& st = state[static_cast<size_t>(op.micro_batch) * chunks + op.chunk];
      if (op.kind == PassKind::kForward) {
        if (st != 0) return Error("schedule '" + s.name + "': " + what + ": duplicate forward");
        st = 1;
      } else if (op.kind == PassKind::kBackwardWeight) {
        if (st != 2)
          return Error("schedule '" + s.name + "': " + what +
                       (st == 3 ? ": duplicate backward" : ": weight gradient before its input gradient"));
        st = 3;
      } else {
        if (st == 0) return Error("schedule '" + s.name + "': " + what + ": backward before its forward");
        if (st >= 2) return Error("schedule '" + s.name + "': " + what + ": duplicate backward");
        st = op.kind == PassKind::kBackwardInput ? 2 : 3;
      }
    }
  }
  for (int m = 0; m < M; ++m)
    for (int c = 0; c < chunks; ++c)
      if (const uint8_t st = state[static_cast<size_t>(m) * chunks + c]; st != 3)
        return Error("schedule '" + s.name + "': micro-batch " + std::to_string(m) + " chunk " +
                     std::to_string(c) + " is missing its " +
                     (st == 0   ? "forward"
                      : st == 1 ? "backward"
                                : "weight-gradient backward"));
  return ValidateEncoderPasses(s);
}

Status ValidateEncoderPasses(const Schedule& s) {
  if (!s.HasEncoderPasses()) return Status();
  if (static_cast<int>(s.encoder.size()) != s.pp)
    return Error("schedule '" + s.name + "': encoder passes for " + std::to_string(s.encoder.size()) +
                 " ranks, expected pp = " + std::to_string(s.pp));
  const int M = s.micro_batches;
  std::vector<int> fwd_rank(M, -1), bwd_rank(M, -1);
  int backwards = 0;
  for (int r = 0; r < s.pp; ++r) {
    int before = 0;
    for (const EncoderPass& e : s.encoder[r]) {
      const std::string what =
          std::string(e.kind == PassKind::kForward ? "encoder forward" : "encoder backward") +
          " of micro-batch " + std::to_string(e.micro_batch) + " on rank " + std::to_string(r);
      if (e.kind != PassKind::kForward && e.kind != PassKind::kBackward)
        return Error("schedule '" + s.name + "': an encoder pass on rank " + std::to_string(r) +
                     " is neither a forward nor a whole backward");
      if (e.micro_batch < 0 || e.micro_batch >= M)
        return Error("schedule '" + s.name + "': " + what + ": micro-batch out of range");
      if (e.before < before || e.before > static_cast<int>(s.per_rank[r].size()))
        return Error("schedule '" + s.name + "': " + what + ": position " + std::to_string(e.before) +
                     " is not in [" + std::to_string(before) + ", " + std::to_string(s.per_rank[r].size()) +
                     "] (the rank's passes in run order)");
      before = e.before;
      if (e.kind == PassKind::kForward) {
        if (fwd_rank[e.micro_batch] >= 0)
          return Error("schedule '" + s.name + "': " + what + ": duplicate encoder forward");
        fwd_rank[e.micro_batch] = r;
      } else {
        if (fwd_rank[e.micro_batch] != r)
          return Error("schedule '" + s.name + "': " + what + ": not after its forward on the same rank");
        if (bwd_rank[e.micro_batch] >= 0)
          return Error("schedule '" + s.name + "': " + what + ": duplicate encoder backward");
        bwd_rank[e.micro_batch] = r;
        ++backwards;
      }
    }
  }
  for (int m = 0; m < M; ++m) {
    if (fwd_rank[m] < 0)
      return Error("schedule '" + s.name + "': micro-batch " + std::to_string(m) + " has no encoder forward");
    if (backwards > 0 && bwd_rank[m] < 0)
      return Error("schedule '" + s.name + "': micro-batch " + std::to_string(m) +
                   " has no encoder backward (the others have one)");
  }
  return Status();
}

std::vector<int> MaxInFlight(const Schedule& s) {
  std::vector<int> out(s.per_rank.size(), 0);
  for (size_t r = 0; r < s.per_rank.size(); ++r) {
    int cur = 0;
    for (const PipeOp& op : s.per_rank[r]) {
      cur += op.kind == PassKind::kForward ? 1 : EndsBackward(op.kind) ? -1 : 0;
      out[r] = std::max(out[r], cur);
    }
  }
  return out;
}

}  // namespace mmtwin

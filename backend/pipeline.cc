// SPDX-License-Identifier: Apache-2.0
// The pipeline runner of a rank (pipeline.h): forwards, backwards, recompute, pipeline sends and receives, and
// the data-dispatch all-to-alls, timed.
#include "backend/pipeline.h"

#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <string>

#include "backend/device.h"
#include "backend/torch_runtime.h"

namespace mmtwin::backend {
namespace {

// Parts with fresh leaves: detached, requiring grad (the cut between layers).
State Cut(const State& s) {
  State c;
  for (const at::Tensor& t : s.done) c.done.push_back(t.detach().requires_grad_(true));
  if (s.x.defined()) c.x = s.x.detach().requires_grad_(true);
  return c;
}

// Layer workload for the profile: the simulator's own (MicroBatch::workloads), so calibration fits the features
// the cost model prices.
void Workload(const mmtwin::Layer& l, const MicroBatch& mb, LayerTiming& p) {
  const LayerWorkload& w = mb.workloads.at(static_cast<size_t>(l.component));
  p.tokens = w.tokens;
  p.spans = static_cast<int32_t>(w.sequences);
  p.attention_pairs = w.attn_pairs;
}

// Backward of one layer cut: outputs `out` with gradients `grads` (empty: the loss); returns the gradients of
// `in`'s parts (zeros where a part received none).
std::vector<at::Tensor> BackwardCut(const State& in, const State& out, const std::vector<at::Tensor>& grads) {
  if (out.loss.defined()) {
    torch::autograd::backward({out.loss}, {});
  } else {
    const std::vector<at::Tensor> outs = out.Parts();
    std::vector<at::Tensor> o, g;
    for (size_t i = 0; i < outs.size() && i < grads.size(); ++i)
      if (outs[i].requires_grad() && grads[i].defined()) {
        o.push_back(outs[i]);
        g.push_back(grads[i]);
      }
    if (!o.empty()) torch::autograd::backward(o, g);
  }
  std::vector<at::Tensor> r;
  for (const at::Tensor& t : in.Parts()) r.push_back(t.grad().defined() ? t.grad() : at::zeros_like(t));
  return r;
}

}  // namespace

PipelineRunner::PipelineRunner(const Plan& plan, const ModelSpec& model, const DeviceMesh& mesh, int rank,
                               std::map<int, std::vector<std::unique_ptr<Layer>>>& layers, CommGroupPtr pp,
                               CommGroupPtr dp, StatusBoard& status, OpRecorder& recorder, Timeline& timeline)
    : plan_(plan),
      model_layers_(Layers(model)),
      mesh_(mesh),
      rank_(rank),
      coord_(mesh.Coord(rank)),
      layers_(layers),
      pp_(std::move(pp)),
      dp_(std::move(dp)),
      status_(status),
      recorder_(recorder),
      timeline_(timeline) {}

// A kept layer alone, or a recomputed group (a 1 followed by 2s) of the chunk's layers.
std::vector<PipelineRunner::Group> PipelineRunner::GroupsOf(int chunk) const {
  std::vector<Group> g;
  const int a = plan_.partition.bounds[chunk], b = plan_.partition.bounds[chunk + 1];
  const auto& rc = plan_.recompute.layers;
  for (int l = a; l < b;) {
    const uint8_t f = l < static_cast<int>(rc.size()) ? rc[l] : 0;
    if (f == 0) {
      g.push_back({l, l + 1, false});
      ++l;
      continue;
    }
    int e = l + 1;
    while (e < b && e < static_cast<int>(rc.size()) && rc[e] == 2) ++e;
    g.push_back({l, e, true});
    l = e;
  }
  return g;
}

void PipelineRunner::BeginIteration(const IterationData& it, const std::vector<MicroBatch>& mbs) {
  it_ = &it;
  mbs_ = &mbs;
  losses_.clear();
  backwards_left_.clear();
  for (const PipeOp& op : plan_.schedule.per_rank[coord_.pp])
    if (EndsBackward(op.kind)) ++backwards_left_[op.chunk];
}

void PipelineRunner::RunSchedule(const BackwardHook& on_backward) {
  for (const PipeOp& op : plan_.schedule.per_rank[coord_.pp]) {
    if (op.kind == PassKind::kForward)
      Forward(op.micro_batch, op.chunk);
    else
      Backward(op.micro_batch, op.chunk, on_backward);
  }
  it_ = nullptr;
}

void PipelineRunner::SendState(const std::vector<at::Tensor>& parts, bool has_x, int peer_pp, int tag,
                               OpKind kind, int m, int chunk) {
  const Mark t0 = timeline_.Now();
  PendingSend ps;
  at::Tensor header = at::zeros({64}, at::TensorOptions().dtype(at::kLong));
  auto* h = header.data_ptr<int64_t>();
  h[0] = static_cast<int64_t>(parts.size());
  h[1] = has_x ? 1 : 0;
  std::vector<at::Tensor> flat;
  for (size_t i = 0; i < parts.size() && i < 30; ++i) {
    h[2 + 2 * i] = parts[i].size(0);
    h[3 + 2 * i] = parts[i].dim() > 1 ? parts[i].size(1) : 1;
    flat.push_back(parts[i].detach().reshape({-1}));
  }
  ps.header_t = header.to(ComputeDevice());  // NCCL sends device tensors only
  ps.payload_t = flat.empty() ? at::zeros({0}, FloatOptions()) : at::cat(flat, 0).contiguous();
  std::vector<at::Tensor> hv{ps.header_t}, pv{ps.payload_t};
  ps.header = pp_->send(hv, peer_pp, 2 * tag);
  ps.payload = pp_->send(pv, peer_pp, 2 * tag + 1);
  const int64_t bytes = ps.payload_t.numel() * 4;
  sends_.push_back(std::move(ps));
  recorder_.Record(kind, kind == OpKind::kP2pSendActivation ? Lane::kP2pForward : Lane::kP2pBackward, m,
                   chunk, t0, timeline_.Now(), bytes);
}

std::vector<at::Tensor> PipelineRunner::RecvState(int peer_pp, int tag, bool& has_x, PassKind pass, int m,
                                                  int chunk) {
  const Mark t0 = timeline_.Now();
  const RankGroup pipe = mesh_.Group(MeshDim::kPp, rank_);
  const std::string what = std::string(pass == PassKind::kForward ? "activation" : "gradient") + " of mb " +
                           std::to_string(m) + " chunk " + std::to_string(chunk) + " from rank " +
                           std::to_string(pipe.ranks[peer_pp]);
  status_.SetOp("waiting for the " + what);
  at::Tensor header = at::zeros({64}, LongOptions());
  std::vector<at::Tensor> hv{header};
  try {
    pp_->recv(hv, peer_pp, 2 * tag)->wait();
    const at::Tensor host = header.cpu();  // the sizes decide the payload's: the schedule waits here anyway
    const int64_t* h = host.data_ptr<int64_t>();
    const int64_t n = h[0];
    has_x = h[1] != 0;
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) total += h[2 + 2 * i] * h[3 + 2 * i];
    at::Tensor payload = at::empty({total}, FloatOptions());
    std::vector<at::Tensor> pv{payload};
    pp_->recv(pv, peer_pp, 2 * tag + 1)->wait();
    std::vector<at::Tensor> parts;
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = h[2 + 2 * i], c = h[3 + 2 * i];
      parts.push_back(payload.narrow(0, at, r * c).view({r, c}));
      at += r * c;
    }
    recorder_.Record(OpKind::kP2pRecv, pass == PassKind::kForward ? Lane::kP2pForward : Lane::kP2pBackward, m,
                     chunk, t0, timeline_.Now(), total * 4, pass);
    return parts;
  } catch (const std::exception& e) {
    ThrowPeerFailure(status_.iteration() + ": waiting for the " + what, e);
  }
}

// The data-dispatch all-to-all of post-balancing and the orchestrator before micro-batch m's first forward, among
// the stage-0 ranks of the DP replicas (this rank's DP group): each sends and receives the plan's bytes
// (IterationData::dispatch[m], core/plan/dispatch.h) with c10d's all-to-all. The payload is the planned volume;
// the synthetic inputs themselves are drawn at the destination from (seed, sample), so what arrives is not read.
// The orchestrator's backward all-to-all (IterationData::dispatch_backward[m], the encoder outputs' gradients
// going back) runs the same way at the start of chunk 0's backward of m, once its gradient has arrived.
void PipelineRunner::Dispatch(int m, const std::vector<std::vector<DispatchTransfer>>& lists, PassKind pass) {
  if (plan_.parallel.dp == 1 || m >= static_cast<int>(lists.size()) || lists[m].empty()) return;
  const int dp = plan_.parallel.dp, me = coord_.dp;
  const std::string what = pass == PassKind::kForward ? "dispatch all-to-all" : "backward all-to-all";
  std::vector<int64_t> send(dp, 0), recv(dp, 0);
  for (const DispatchTransfer& t : lists[m]) {
    const int64_t floats = (t.bytes + 3) / 4;
    if (t.src_rank == me) send[t.dst_rank] += floats;
    if (t.dst_rank == me) recv[t.src_rank] += floats;
  }
  int64_t n_send = 0, n_recv = 0;
  for (int r = 0; r < dp; ++r) n_send += send[r], n_recv += recv[r];
  status_.SetOp(what + " of mb " + std::to_string(m));
  at::Tensor out = at::empty({n_send}, FloatOptions()).fill_(static_cast<float>(me));
  at::Tensor in = at::empty({n_recv}, FloatOptions());
  const Mark t0 = timeline_.Now();
  try {
    dp_->alltoall_base(in, out, recv, send)->wait();
  } catch (const std::exception& e) {
    ThrowPeerFailure(status_.iteration() + ": " + what + " of mb " + std::to_string(m), e);
  }
  recorder_.Record(OpKind::kDispatch, Lane::kDispatch, m, 0, t0, timeline_.Now(), n_send * 4, pass);
}

void PipelineRunner::Forward(int m, int chunk) {
  const int pp = plan_.parallel.pp;
  const MicroBatch& mb = (*mbs_)[m];
  if (chunk == 0) Dispatch(m, it_->dispatch, PassKind::kForward);
  status_.SetOp("forward mb " + std::to_string(m) + " chunk " + std::to_string(chunk));
  State s;
  if (chunk > 0) {
    const int prev = PipeRankOfChunk(chunk - 1, pp);
    bool has_x = false;
    std::vector<at::Tensor> parts;
    if (prev == coord_.pp) {
      parts = local_acts_[{m, chunk}];
      has_x = local_has_x_[{m, chunk}];
      local_acts_.erase({m, chunk});
    } else {
      parts = RecvState(prev, Tag(0, m, chunk), has_x, PassKind::kForward, m, chunk);
    }
    s = State::FromParts(std::move(parts), has_x);
  }
  const Mark t0 = timeline_.Now();
  Held held;
  auto& layers = layers_[chunk];
  const int first = plan_.partition.bounds[chunk];
  AutocastScope autocast;  // backend.autocast: bf16 (device.h); off again when the chunk's forward ends
  for (const Group& g : GroupsOf(chunk)) {
    Held::Entry e;
    e.group = g;
    e.in = Cut(s);
    const int64_t live0 = LiveBytes();
    const Mark g0 = timeline_.Now();
    if (g.recompute) {
      at::NoGradGuard no_grad;
      State x = e.in;
      for (int l = g.first; l < g.last; ++l) x = layers[l - first]->Forward(std::move(x), mb);
      s = x;
    } else {
      e.out = layers[g.first - first]->Forward(e.in, mb);
      s = e.out;
    }
    const Mark g1 = timeline_.Now();
    if (recorder_.measuring())
      for (int l = g.first; l < g.last; ++l) {
        LayerTiming p;
        p.micro_batch = m;
        p.layer = l;
        if (!g.recompute) {
          // Memory the forward left allocated (what it saved for its backward, and its output), and the
          // output's own bytes (the next layer's input: what a recomputed layer keeps).
          p.act_bytes = std::max<int64_t>(0, LiveBytes() - live0);
          p.out_bytes = s.x.defined() ? static_cast<int64_t>(s.x.nbytes()) : 0;
        }
        Workload(model_layers_[l], mb, p);
        recorder_.AddLayer(std::move(p), g0, g1, g.last - g.first);
      }
    held.entries.push_back(std::move(e));
  }
  held.out = s;
  recorder_.Record(OpKind::kForward, Lane::kCompute, m, chunk, t0, timeline_.Now());
  // Kept as a tensor: reading it would make the host wait for the GPU (loss_sum() reads them).
  if (s.loss.defined()) losses_.push_back(s.loss.detach());
  const bool last = chunk == plan_.parallel.chunks() - 1;
  if (!last) {
    const int next = PipeRankOfChunk(chunk + 1, pp);
    std::vector<at::Tensor> parts = s.Parts();
    if (next == coord_.pp) {
      local_acts_[{m, chunk + 1}] = parts;
      local_has_x_[{m, chunk + 1}] = s.x.defined();
    } else {
      SendState(parts, s.x.defined(), next, Tag(0, m, chunk + 1), OpKind::kP2pSendActivation, m, chunk);
    }
  }
  held_[{m, chunk}] = std::move(held);
}

void PipelineRunner::Backward(int m, int chunk, const BackwardHook& on_backward) {
  const int pp = plan_.parallel.pp;
  const MicroBatch& mb = (*mbs_)[m];
  const bool last = chunk == plan_.parallel.chunks() - 1;
  std::vector<at::Tensor> grads;
  if (!last) {
    const int next = PipeRankOfChunk(chunk + 1, pp);
    bool has_x = false;
    if (next == coord_.pp) {
      grads = local_grads_[{m, chunk}];
      local_grads_.erase({m, chunk});
    } else {
      grads = RecvState(next, Tag(1, m, chunk), has_x, PassKind::kBackward, m, chunk);
    }
  }
  if (chunk == 0 && it_) Dispatch(m, it_->dispatch_backward, PassKind::kBackward);
  status_.SetOp("backward mb " + std::to_string(m) + " chunk " + std::to_string(chunk));
  Held held = std::move(held_[{m, chunk}]);
  held_.erase({m, chunk});
  auto& layers = layers_[chunk];
  const int first = plan_.partition.bounds[chunk];
  const Mark t0 = timeline_.Now();
  OpRecorder::Spans rc_spans;
  std::map<int, OpRecorder::Spans> layer_bwd, layer_rc;
  std::map<int, int64_t> layer_work;  // the backward's working memory per layer (bytes above its start)
  for (int e = static_cast<int>(held.entries.size()) - 1; e >= 0; --e) {
    Held::Entry& en = held.entries[e];
    if (!en.group.recompute) {
      const Mark b0 = timeline_.Now();
      const int64_t live0 = StartWindow();
      grads = BackwardCut(en.in, en.out, grads);
      layer_bwd[en.group.first].emplace_back(b0, timeline_.Now());
      layer_work[en.group.first] = WindowGrowth(live0);
      continue;
    }
    // Recompute the group from its kept input, one cut per layer, then run their backwards.
    const Mark r0 = timeline_.Now();
    std::vector<std::pair<State, State>> cuts;
    State x = en.in;
    {
      AutocastScope autocast;  // the recompute repeats the forward as it ran; the backwards run outside it
      for (int l = en.group.first; l < en.group.last; ++l) {
        State in = Cut(x);
        const Mark l0 = timeline_.Now();
        State out = layers[l - first]->Forward(in, mb);
        layer_rc[l].emplace_back(l0, timeline_.Now());
        cuts.emplace_back(in, out);
        x = out;
      }
    }
    rc_spans.emplace_back(r0, timeline_.Now());
    for (int i = static_cast<int>(cuts.size()) - 1; i >= 0; --i) {
      const Mark b0 = timeline_.Now();
      const int64_t live0 = StartWindow();
      grads = BackwardCut(cuts[i].first, cuts[i].second, grads);
      layer_bwd[en.group.first + i].emplace_back(b0, timeline_.Now());
      layer_work[en.group.first + i] = WindowGrowth(live0);
    }
  }
  recorder_.RecordBackward(m, chunk, t0, std::move(rc_spans), timeline_.Now());
  recorder_.SetLayerBackward(m, first, plan_.partition.bounds[chunk + 1], std::move(layer_bwd),
                             std::move(layer_rc), layer_work);
  if (chunk > 0) {
    const int prev = PipeRankOfChunk(chunk - 1, pp);
    const bool has_x = held.entries.front().in.x.defined();
    if (prev == coord_.pp) {
      local_grads_[{m, chunk - 1}] = grads;
    } else {
      SendState(grads, has_x, prev, Tag(1, m, chunk - 1), OpKind::kP2pSendGradient, m, chunk);
    }
  }
  on_backward(chunk, --backwards_left_[chunk] == 0);
}

void PipelineRunner::FinishSends() {
  for (PendingSend& s : sends_) {
    try {
      s.header->wait();
      s.payload->wait();
    } catch (const std::exception& e) {
      ThrowPeerFailure(status_.iteration() + ": completing a pipeline send", e);
    }
  }
  sends_.clear();
}

double PipelineRunner::loss_sum() const {
  double total = 0;
  for (const at::Tensor& l : losses_) total += l.item<double>();
  return total;
}

}  // namespace mmtwin::backend

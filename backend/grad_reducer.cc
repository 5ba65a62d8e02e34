// SPDX-License-Identifier: Apache-2.0
// The DP gradient buckets of a rank: all-reduce (ZeRO 0) or reduce-scatter (ZeRO-1), overlapping the backward
// (grad_reducer.h).
#include "backend/grad_reducer.h"

#include <algorithm>
#include <utility>

#include "backend/device.h"

namespace mmtwin::backend {

GradientReducer::GradientReducer(const Plan& plan, int dp_peer,
                                 std::map<int, std::vector<at::Tensor>> chunk_params, CommGroupPtr dp,
                                 StatusBoard& status, OpRecorder& recorder, Timeline& timeline)
    : plan_(plan),
      zero1_(plan.parallel.zero_stage == 1 && plan.parallel.dp > 1),
      dp_peer_(dp_peer),
      chunk_params_(std::move(chunk_params)),
      dp_(std::move(dp)),
      status_(status),
      recorder_(recorder),
      timeline_(timeline) {}

void GradientReducer::StartChunk(int chunk) {
  if (plan_.parallel.dp == 1) return;
  const int64_t cap = std::max<int64_t>(4, plan_.dp_bucket_bytes / 4);  // fp32 elements per bucket
  std::vector<at::Tensor> cur, cur_params;
  int64_t n = 0;
  int bucket = 0;
  auto flush = [&] {
    if (cur.empty()) return;
    DpBucket b;
    std::vector<at::Tensor> flat;
    for (const at::Tensor& g : cur) flat.push_back(g.reshape({-1}));
    b.numel = n;
    b.grads = cur;
    b.params = cur_params;
    const double t0 = NowUs();
    if (zero1_) {
      const int64_t dp = plan_.parallel.dp, padded = (n + dp - 1) / dp * dp;
      if (padded > n) flat.push_back(at::zeros({padded - n}, FloatOptions()));
      b.flat = at::cat(flat, 0);
      b.recv = at::empty({padded}, FloatOptions());
      std::vector<int64_t> equal;  // empty: equal splits
      b.work = dp_->alltoall_base(b.recv, b.flat, equal, equal);
    } else {
      b.flat = at::cat(flat, 0);
      std::vector<at::Tensor> v{b.flat};
      b.work = dp_->allreduce(v);
    }
    b.rec.kind = OpKind::kDpCollective;
    b.rec.lane = Lane::kDp;
    b.rec.chunk = chunk;
    b.rec.bucket = bucket++;
    b.rec.bytes = b.flat.numel() * 4;
    b.rec.start_us = t0;
    buckets_.push_back(std::move(b));
    cur.clear();
    cur_params.clear();
    n = 0;
  };
  const auto it = chunk_params_.find(chunk);
  if (it != chunk_params_.end())
    for (const at::Tensor& p : it->second) {
      if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
      cur.push_back(p.grad());
      cur_params.push_back(p);
      n += p.numel();
      if (n >= cap) flush();
    }
  flush();
}

void GradientReducer::Poll() {
  for (DpBucket& b : buckets_)
    if (!b.done && b.work->isCompleted()) {
      b.done = true;
      b.rec.duration_us = NowUs() - b.rec.start_us;
    }
}

void GradientReducer::Finish(bool whole_gradients) {
  const Mark t0 = timeline_.Now();
  status_.SetOp("DP gradient all-reduce");
  for (DpBucket& b : buckets_) {
    try {
      b.work->wait();
    } catch (const std::exception& e) {
      ThrowPeerFailure(
          status_.iteration() + ": DP gradient all-reduce of chunk " + std::to_string(b.rec.chunk), e);
    }
    if (!b.done) b.rec.duration_us = NowUs() - b.rec.start_us;
    if (zero1_) {
      b.shard = b.recv.view({plan_.parallel.dp, -1}).sum(0);
      // Tests (dump_grads) read every gradient whole: gather the reduced shards back (not done in training).
      if (whole_gradients)
        WriteBack(b.grads, GatherShards(*dp_, plan_.parallel.dp, b.shard, b.rec.chunk, "gradient", status_));
    } else {
      WriteBack(b.grads, b.flat);
    }
    OpRecord r = b.rec;
    r.micro_batch = -1;
    r.peer = dp_peer_;
    recorder_.RecordTimed(r);
  }
  if (zero1_)
    for (DpBucket& b : buckets_) reduced_.push_back(std::move(b));
  buckets_.clear();
  if (plan_.parallel.dp > 1) recorder_.Record(OpKind::kDpWait, Lane::kDp, -1, 0, t0, timeline_.Now());
}

void WriteBack(std::vector<at::Tensor>& tensors, const at::Tensor& flat) {
  int64_t at = 0;
  for (at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, at, t.numel()).view_as(t));
    at += t.numel();
  }
}

at::Tensor GatherShards(CommGroup& group, int dp, const at::Tensor& shard, int chunk, const std::string& what,
                        const StatusBoard& status) {
  std::vector<at::Tensor> outs;
  for (int i = 0; i < dp; ++i) outs.push_back(at::empty_like(shard));
  std::vector<std::vector<at::Tensor>> out{outs};
  std::vector<at::Tensor> in{shard.contiguous()};
  try {
    group.allgather(out, in)->wait();
  } catch (const std::exception& e) {
    ThrowPeerFailure(status.iteration() + ": ZeRO-1 all-gather of the " + what + " shards of chunk " +
                         std::to_string(chunk),
                     e);
  }
  return at::cat(out[0], 0);
}

}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// AdamW over a rank's parameters, or its ZeRO-1 shards followed by the all-gather (optimizer.h).
#include "backend/optimizer.h"

#include <cmath>

namespace mmtwin::backend {

void AdamW(at::Tensor p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, int64_t step) {
  const double lr = 1e-4, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  const double c1 = 1 - std::pow(b1, static_cast<double>(step)),
               c2 = 1 - std::pow(b2, static_cast<double>(step));
  m.mul_(b1).add_(g, 1 - b1);
  v.mul_(b2).addcmul_(g, g, 1 - b2);
  p.mul_(1 - lr * wd);
  p.addcdiv_(m / c1, (v / c2).sqrt_().add_(eps), -lr);
}

Optimizer::Optimizer(std::vector<at::Tensor> params, bool zero1, int dp_rank, int dp, CommGroupPtr dp_group,
                     int dp_peer, StatusBoard& status, OpRecorder& recorder, Timeline& timeline)
    : params_(std::move(params)),
      zero1_(zero1),
      dp_rank_(dp_rank),
      dp_(dp),
      dp_group_(std::move(dp_group)),
      dp_peer_(dp_peer),
      status_(status),
      recorder_(recorder),
      timeline_(timeline) {
  if (!zero1_)
    for (const at::Tensor& p : params_) {
      adam_m_.push_back(at::zeros_like(p));
      adam_v_.push_back(at::zeros_like(p));
    }
}

void Optimizer::Step(std::vector<DpBucket>& reduced) {
  const Mark t0 = timeline_.Now();
  at::NoGradGuard no_grad;
  ++step_;
  if (!zero1_) {
    for (size_t i = 0; i < params_.size(); ++i) {
      at::Tensor p = params_[i];
      if (p.grad().defined()) AdamW(p, p.grad(), adam_m_[i], adam_v_[i], step_);
    }
    recorder_.Record(OpKind::kOptimizer, Lane::kCompute, -1, 0, t0, timeline_.Now());
    return;
  }
  status_.SetOp("ZeRO-1 optimizer step");
  const int64_t me = dp_rank_, dp = dp_;
  std::vector<std::pair<DpBucket*, at::Tensor>> updated;
  for (DpBucket& b : reduced) {
    const int64_t shard = b.shard.numel();
    std::vector<at::Tensor> flat;
    for (const at::Tensor& p : b.params) flat.push_back(p.detach().reshape({-1}));
    if (shard * dp > b.numel) flat.push_back(at::zeros({shard * dp - b.numel}, b.shard.options()));
    at::Tensor mine = at::cat(flat, 0).narrow(0, me * shard, shard).clone();
    auto& mv = shard_m_v_[{b.rec.chunk, b.rec.bucket}];
    if (!mv.first.defined()) mv = {at::zeros_like(mine), at::zeros_like(mine)};
    AdamW(mine, b.shard, mv.first, mv.second, step_);
    updated.emplace_back(&b, mine);
  }
  recorder_.Record(OpKind::kOptimizer, Lane::kCompute, -1, 0, t0, timeline_.Now());
  status_.SetOp("ZeRO-1 all-gather of the updated parameters");
  for (auto& [b, mine] : updated) {
    const Mark g0 = timeline_.Now();
    const at::Tensor all = GatherShards(*dp_group_, dp_, mine, b->rec.chunk, "parameter", status_);
    WriteBack(b->params, all);
    if (OpRecord* r = recorder_.Record(OpKind::kDpAllGather, Lane::kDp, -1, b->rec.chunk, g0, timeline_.Now(),
                                       all.numel() * 4)) {
      r->bucket = b->rec.bucket;
      r->peer = dp_peer_;
    }
  }
  reduced.clear();
}

}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// The optimizer of a rank: one AdamW step per iteration (lr 1e-4, betas 0.9 / 0.95, eps 1e-8, weight decay
// 0.1, fp32; the single-process reference takes the same step: reference.cc).
//
//   ZeRO 0   every parameter that has a gradient, with its moments (zeros, made at construction).
//   ZeRO-1   (GradientReducer::zero1) only this rank's shard of every bucket the gradient reducer reduced
//            (grad_reducer.h: the bucket's parameters flat, padded to a multiple of dp, shard dp_rank), with
//            moments that exist for the shard only (zeros at the first step, kept by (chunk, bucket): the
//            buckets are the same in every iteration); then the updated shards are all-gathered over the DP
//            group and written back into the parameters, bucket after bucket.
// Records (op_recorder.h): the step as an optimizer op; ZeRO-1 each bucket's all-gather as a dp_all_gather op
// with the bucket and the DP ring successor as peer. A peer that fails throws PeerFailure.
#pragma once

#include <ATen/ATen.h>
#include "backend/comm.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "backend/grad_reducer.h"
#include "backend/op_recorder.h"
#include "backend/rank_support.h"
#include "backend/timeline.h"

namespace mmtwin::backend {

// AdamW step `step` (from 1), in place on `p` (a parameter or a ZeRO-1 shard of one) with its moments `m`,
// `v`. Element-wise: a shard updated alone is the same as the shard of the whole update.
void AdamW(at::Tensor p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, int64_t step);

class Optimizer {
 public:
  // `params`: this rank's parameters; `dp_rank` of `dp` replicas; `dp_peer` the DP ring successor's device.
  Optimizer(std::vector<at::Tensor> params, bool zero1, int dp_rank, int dp, CommGroupPtr dp_group,
            int dp_peer, StatusBoard& status, OpRecorder& recorder, Timeline& timeline);

  // ZeRO 0: every parameter's .grad(). ZeRO-1: the shards of `reduced` (GradientReducer::reduced()), which
  // is cleared once the parameters are written back.
  void Step(std::vector<DpBucket>& reduced);

 private:
  const std::vector<at::Tensor> params_;
  const bool zero1_;
  const int dp_rank_, dp_;
  CommGroupPtr dp_group_;
  const int dp_peer_;
  StatusBoard& status_;
  OpRecorder& recorder_;
  Timeline& timeline_;
  int64_t step_ = 0;
  std::vector<at::Tensor> adam_m_, adam_v_;  // ZeRO 0: per parameter
  // ZeRO-1: the moments of this rank's shard of each bucket, by (chunk, bucket).
  std::map<std::pair<int, int>, std::pair<at::Tensor, at::Tensor>> shard_m_v_;
};

}  // namespace mmtwin::backend

// SPDX-License-Identifier: Apache-2.0
// The gradient reducer of a rank: the DP reduction of its chunks' gradients, in buckets, overlapping the
// backward.
//
// A chunk's gradients are final once its last backward of the iteration is done: the pipeline runner then calls
// StartChunk (pipeline.h: BackwardHook), which cuts the chunk's parameters, in order, into buckets of
// Plan::dp_bucket_bytes (a bucket closes once it reaches the size) and starts each bucket's collective over the
// DP group at once, so they run while the other chunks' backwards go on. Poll (after every backward) notes the
// buckets done so far; Finish (after the schedule) waits for the rest.
//   ZeRO 0        an all-reduce (sum) of the bucket's flat gradients, written back into every .grad().
//   ZeRO-1        (parallel.zero_stage 1, dp > 1) a reduce-scatter: Gloo has none, so an all-to-all of the flat
//                 gradient padded to a multiple of dp, this rank summing the dp pieces of its own shard. The
//                 buckets and their shards go to the optimizer (optimizer.h), which updates the shard only.
// Nothing runs with dp 1. Records (op_recorder.h): one dp_collective op per bucket, from its start to its
// completion as Poll or Finish first saw it, and the wait in Finish (dp_wait) when dp > 1. A peer that fails
// or times out throws PeerFailure naming the chunk.
#pragma once

#include <ATen/ATen.h>
#include "backend/comm.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/op_recorder.h"
#include "backend/rank_support.h"
#include "backend/timeline.h"
#include "core/plan/plan.h"

namespace mmtwin::backend {

// One DP gradient bucket of a chunk.
struct DpBucket {
  c10::intrusive_ptr<c10d::Work> work;
  at::Tensor flat;                 // the bucket's gradients, flat (ZeRO-1: padded to a multiple of dp)
  at::Tensor recv;                 // ZeRO-1: the dp pieces of this rank's shard
  at::Tensor shard;                // ZeRO-1: this rank's shard of the summed gradient, after Finish
  int64_t numel = 0;               // gradient elements (without the padding)
  std::vector<at::Tensor> grads;   // written back after the all-reduce (ZeRO 0)
  std::vector<at::Tensor> params;  // the bucket's parameters, in order
  OpRecord rec;                    // kind, lane, chunk, bucket index in the chunk, bytes, start, duration
  bool done = false;
};

class GradientReducer {
 public:
  // `chunk_params`: this rank's parameters per chunk, in order; `dp_peer`: the DP ring successor's device (the
  // records' peer). Everything referenced must outlive the reducer.
  GradientReducer(const Plan& plan, int dp_peer, std::map<int, std::vector<at::Tensor>> chunk_params,
                  CommGroupPtr dp, StatusBoard& status, OpRecorder& recorder, Timeline& timeline);

  bool zero1() const { return zero1_; }
  void StartChunk(int chunk);
  void Poll();
  // Waits for every bucket of the iteration and records it. ZeRO-1: the shards are summed; with
  // `whole_gradients` (the tests' gradient dump) they are also all-gathered back into every .grad(), which
  // training does not do.
  void Finish(bool whole_gradients);
  // ZeRO-1: the buckets Finish reduced this iteration, for the optimizer's step (which clears them).
  std::vector<DpBucket>& reduced() { return reduced_; }

 private:
  const Plan& plan_;
  const bool zero1_;
  const int dp_peer_;
  const std::map<int, std::vector<at::Tensor>> chunk_params_;
  CommGroupPtr dp_;
  StatusBoard& status_;
  OpRecorder& recorder_;
  Timeline& timeline_;
  std::vector<DpBucket> buckets_;  // started this iteration
  std::vector<DpBucket> reduced_;  // ZeRO-1
};

// Copies consecutive pieces of `flat` into `tensors` (each its own numel, in order).
void WriteBack(std::vector<at::Tensor>& tensors, const at::Tensor& flat);

// All-gather of equal shards over the DP group of `dp` ranks: the whole (padded) flat tensor. A peer that fails
// or times out throws PeerFailure("<iteration>: ZeRO-1 all-gather of the <what> shards of chunk <chunk>: ...").
at::Tensor GatherShards(CommGroup& group, int dp, const at::Tensor& shard, int chunk, const std::string& what,
                        const StatusBoard& status);

}  // namespace mmtwin::backend

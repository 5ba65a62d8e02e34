// SPDX-License-Identifier: Apache-2.0
// The pipeline runner of a rank: its pipeline rank's schedule (Plan::schedule, core/plan/schedule.h: gpipe,
// 1f1b, interleaved-1f1b) run in order over the layers of its chunks, one iteration at a time.
//
//   forward (m, c)   the input from chunk c - 1: a c10d receive over the pipeline group (a shape header, then
//                    the parts flat) or, when this rank also holds c - 1, handed over in process; when c is 0
//                    first the data-dispatch all-to-all of m over the DP group (IterationData::dispatch). Then
//                    the layers, one cut at a time (a cut: the input's parts as fresh leaves that require grad,
//                    so each layer's backward runs and is timed alone); a recomputed group (Plan::recompute: a
//                    1 followed by 2s) runs without autograd and keeps only its input. The output goes to chunk
//                    c + 1 (an asynchronous send, or in process); the last chunk's loss is summed (loss_sum).
//   backward (m, c)  the output's gradient from chunk c + 1 (received or in process), on chunk 0 first the
//                    backward all-to-all of m (IterationData::dispatch_backward), then the cuts' backwards in
//                    reverse, a recomputed group re-run from its kept input just before its backward; the
//                    input's gradient goes to chunk c - 1. Then `on_backward(c, complete)`, complete when it was
//                    chunk c's last backward of the iteration (its gradients are final: the gradient reducer
//                    starts its buckets).
//
// Timing (op_recorder.h): every forward, backward, recompute, send (the time to post it), receive (the wait)
// and dispatch all-to-all as an op, and each layer's forward, backward, recompute, the memory its forward left
// allocated and its backward's working memory as a profile row. A peer that fails or times out throws
// PeerFailure naming the iteration, the op and the peer. The status board says which op runs.
#pragma once

#include <ATen/ATen.h>
#include "backend/comm.h"

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "backend/model.h"
#include "backend/op_recorder.h"
#include "backend/rank_support.h"
#include "backend/timeline.h"
#include "core/plan/mesh.h"
#include "core/plan/plan.h"

namespace mmtwin::backend {

class PipelineRunner {
 public:
  // Called after every backward of (m, c) with c and whether it was c's last backward of the iteration.
  using BackwardHook = std::function<void(int chunk, bool chunk_complete)>;

  // `layers`: this rank's chunks and their layers (Layers(model) from Plan::partition's bounds); `pp` is this
  // rank's pipeline group, `dp` its DP group (the dispatch all-to-alls). Everything referenced must outlive
  // the runner.
  PipelineRunner(const Plan& plan, const ModelSpec& model, const DeviceMesh& mesh, int rank,
                 std::map<int, std::vector<std::unique_ptr<Layer>>>& layers, CommGroupPtr pp, CommGroupPtr dp,
                 StatusBoard& status, OpRecorder& recorder, Timeline& timeline);

  // Before the iteration's start: `it` and this DP rank's micro-batches of it (both must live until
  // RunSchedule returns); resets the loss.
  void BeginIteration(const IterationData& it, const std::vector<MicroBatch>& mbs);
  // Runs this pipeline rank's schedule of the iteration.
  void RunSchedule(const BackwardHook& on_backward);
  // Waits for the iteration's sends to complete.
  void FinishSends();
  // The sum of the losses of this rank's micro-batches in the iteration (0 but on the last chunk's ranks).
  double loss_sum() const;  // waits for the GPU

 private:
  // What the forward of (micro-batch, chunk) keeps for its backward, per layer group.
  struct Group {
    int first = 0, last = 0;  // layers [first, last)
    bool recompute = false;
  };
  struct Held {
    struct Entry {
      Group group;
      State in, out;  // out is empty for a recomputed group
    };
    std::vector<Entry> entries;
    State out;  // the chunk's output (or the loss)
  };
  struct PendingSend {
    c10::intrusive_ptr<c10d::Work> header, payload;
    at::Tensor header_t, payload_t;
  };

  std::vector<Group> GroupsOf(int chunk) const;
  void Forward(int m, int chunk);
  void Backward(int m, int chunk, const BackwardHook& on_backward);
  // The forward dispatch (pass forward) or the backward all-to-all (pass backward) of micro-batch m.
  void Dispatch(int m, const std::vector<std::vector<DispatchTransfer>>& lists, PassKind pass);
  void SendState(const std::vector<at::Tensor>& parts, bool has_x, int peer_pp, int tag, OpKind kind, int m,
                 int chunk);
  std::vector<at::Tensor> RecvState(int peer_pp, int tag, bool& has_x, PassKind pass, int m, int chunk);
  int Tag(int dir, int m, int chunk) const {
    return ((dir * plan_.parallel.micro_batches + m) * plan_.parallel.chunks() + chunk);
  }

  const Plan& plan_;
  const std::vector<mmtwin::Layer> model_layers_;  // Layers(model): each layer's component
  const DeviceMesh& mesh_;
  const int rank_;
  const MeshCoord coord_;
  std::map<int, std::vector<std::unique_ptr<Layer>>>& layers_;
  CommGroupPtr pp_, dp_;
  StatusBoard& status_;
  OpRecorder& recorder_;
  Timeline& timeline_;

  // Per iteration.
  const IterationData* it_ = nullptr;
  const std::vector<MicroBatch>* mbs_ = nullptr;
  std::map<std::pair<int, int>, Held> held_;
  std::map<std::pair<int, int>, std::vector<at::Tensor>> local_acts_, local_grads_;  // same-rank handoff
  std::map<std::pair<int, int>, bool> local_has_x_;
  std::vector<PendingSend> sends_;
  std::map<int, int> backwards_left_;  // chunk -> backwards still to run this iteration
  std::vector<at::Tensor> losses_;     // the last chunk's losses of the iteration
};

}  // namespace mmtwin::backend

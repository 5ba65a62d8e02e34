// SPDX-License-Identifier: Apache-2.0
// A job's op timeline in Chrome / Perfetto trace-event JSON (`mmtwin import-timeline`, issue 32) as measured op
// records, ready for `mmtwin replay` (whatif.h): the trace an mmtwin run writes (trace.json), a backend's, or one
// written by a training framework's timers, with the layout given by the job's scenario.
//
// The trace: {"traceEvents": [...]} or a bare array; complete events ("ph": "X", ts and dur in microseconds) are
// ops, metadata ("M") name processes; other phases are ignored. Per event:
//   - device: the process named "dp D / stage S" (mmtwin's traces; DeviceMesh::Device(D, S)), else the one named
//     "rank N" or "device N" (an op-graph device: one TP group), else pid - 1 (mmtwin's convention);
//   - kind: the event's `cat` when it is an op kind name (core/graph/op_graph.h OpKindName: mmtwin's traces),
//     else its name through the mapping: the options' entries first, then the defaults below; a name maps by
//     exact match or, for entries ending in '*', by prefix. "ignore" drops the event (counted). A name that
//     maps to nothing is an error listing every such name with its count: nothing is dropped silently.
//       default (Megatron-LM's timer names)   forward-compute forward, backward-compute backward,
//         forward-recompute recompute, forward-send p2p_send_activation, backward-send p2p_send_gradient,
//         forward-recv / backward-recv p2p_recv, grads-reduce-scatter / grads-all-reduce dp_collective,
//         params-all-gather dp_all_gather, optimizer optimizer, and ignore for the timers that enclose others
//         (forward-backward, batch-generator, optimizer-* parts, train-step*); and the PyTorch profiler's:
//         "## forward ##" forward, "## backward ##" backward, "## optimizer ##" and Optimizer.step#* optimizer,
//         Optimizer.zero_grad#* ignore, nccl:all_reduce / nccl:reduce_scatter / nccl:_reduce_scatter_base /
//         gloo:all_reduce dp_collective, nccl:all_gather / nccl:_all_gather_base dp_all_gather,
//         nccl:broadcast / gloo:broadcast ignore;
//   - micro-batch and chunk: args micro_batch (or microbatch, mb) and chunk (or model_chunk); without a chunk,
//     the device's pipeline stage (its one chunk without interleaving); a compute, send, TP or SP event without
//     a micro-batch takes its place in order among the device's events of that kind, pass and chunk (the k-th
//     forward is micro-batch k: true of 1F1B and GPipe; interleaved schedules need the args);
//   - pass (TP and SP collectives, ZeRO-3 gathers): args pass ("forward" / "backward"), else "bwd" or
//     "backward" in the name means the backward;
//   - iteration: args iteration (or step), else ImportOptions::iteration.
// Checked: events on one (process, thread) must not overlap (an error naming both events), waits (p2p_recv,
// dp_wait) aside, which overlap the transfer they wait for; a device outside the layout is an error naming the
// event.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/records/records.h"
#include "core/util/status.h"

namespace mmtwin {

struct ImportOptions {
  std::map<std::string, std::string> mapping;  // event name (or PREFIX*) -> op kind name or "ignore"
  int64_t iteration = 0;                       // for events without an iteration argument
  // PyTorch profiler traces (kineto_import.h): the epoch iteration of the k-th profiler step (ProfilerStep#N in
  // order); empty = iteration + k.
  std::vector<int64_t> step_iterations;
};

struct ImportedTimeline {
  std::vector<OpRecord> ops;               // source measured, lanes by kind
  std::map<std::string, int64_t> ignored;  // event name -> events mapped to "ignore"
  int64_t events = 0;                      // complete events read
  // PyTorch profiler traces only (kineto_import.h), else 0: GPU activities (kernels, copies, sets) read and
  // attributed to ops, their summed time and the ops' summed spans (first kernel start to last kernel end), the
  // profiler steps, and the devices of the layout that had no trace (`mmtwin replay` gives their compute the recorded
  // mean of their stage, ReplayOptions::fill_unrecorded_devices).
  int64_t gpu_activities = 0, attributed_activities = 0;
  double gpu_busy_us = 0, op_span_us = 0;
  int64_t steps = 0, devices_without_trace = 0;
};

// Parses `json_text` (named `name` in messages: "NAME: event 12 ('F3.c1', pid 5, tid 1): ...") against the
// layout `parallel` (dp, pp, sp; the devices are its op-graph devices).
Result<ImportedTimeline> ImportTimeline(const std::string& json_text, const std::string& name,
                                        const ParallelConfig& parallel, const ImportOptions& options);

// A timeline file's text: plain, or gzip-compressed (.json.gz, as torch.profiler's tensorboard_trace_handler
// writes with use_gzip) when mmtwin was built with zlib (Debian: zlib1g-dev); a compressed file without it, or
// one that inflates beyond 4 GiB, is an error naming the file.
Result<std::string> ReadTimelineFile(const std::string& path);

// The mapping file (YAML, a flat mapping of names to kinds): errors name file, line and the entry.
Result<std::map<std::string, std::string>> LoadTimelineMapping(const std::string& path);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// PyTorch profiler (Kineto) traces as measured op records (`mmtwin import-timeline rank-*.json[.gz]`, issue 32):
// the kernels of each rank's trace aggregated to ops by the record_function ranges (annotations) that launched
// them, then read as timeline_import.h reads any timeline (the same mapping, micro-batch order, checks).
//
// Input: one trace per rank, as torch.profiler writes it (export_chrome_trace, tensorboard_trace_handler): an
// object with traceEvents; distributedInfo.rank names the rank (else the file's place in the list) and
// distributedInfo.world_size, when present, must be the scenario's. A rank is a global rank (tp fastest,
// core/plan/mesh.h); the op-graph device of a TP group takes its tp-rank-0 trace, the others are skipped
// (counted). Times are the traces' own microseconds (ts, dur), taken as one clock across ranks.
//
// Aggregation, per trace:
//   - steps: complete events named ProfilerStep#N; the k-th in time order is the epoch iteration
//     ImportOptions::step_iterations[k] (else iteration + k; more steps than step_iterations is an error naming
//     the trace). Work launched outside every step is dropped and
//     counted ("(outside a profiler step)") when the trace has steps.
//   - GPU activities: complete events of cat kernel, gpu_memcpy, gpu_memset, each with args.correlation; its
//     launch is the cuda_runtime / cuda_driver event with the same correlation (its ts on the launching thread).
//     An activity without a launch is dropped and counted ("(no launch record)").
//   - annotations: the CPU's other complete events whose names map (TimelineMappingEntries: --map entries, then
//     the defaults, Megatron-LM's timers and the profiler's own names). Names that map to nothing are
//     transparent (aten ops, module ranges).
//   - attribution: an activity belongs to the innermost mapped annotation that contains its launch on the
//     launching thread, else to the innermost one containing it on the training loop's thread, the one that
//     opens the profiler steps (the autograd thread launches the backward inside the main thread's
//     "## backward ##"; ranges of other threads, a data loader's, never claim it); a trace without steps takes
//     the shortest containing range of any other thread of the process. An annotation mapped to
//     ignore drops it (counted under the annotation's name). An activity under no mapped annotation is an error
//     that lists the innermost annotations of all such activities with their counts and GPU time
//     ("(no annotation)" when none): map them (--map NAME=KIND or NAME=ignore; ProfilerStep#* covers the rest).
//   - ranges of one kind directly inside each other are one op, the outermost ("## optimizer ##" around
//     "Optimizer.step#SGD.step").
//   - ops: one per mapped annotation instance with activities, from its first activity's start to its last's
//     end on the GPU (launch gaps included: the time the op holds its stream); a trace without GPU activities
//     (CPU only) gives one op per mapped annotation, its own span.
// The ops then go through ImportTimeline's event reader: kind, device, micro-batch by order among the device's
// ops of that kind in the step, the overlap check per lane (compute ops on one stream must not overlap: the
// message names both annotations).
//
//   std::vector<KinetoTrace> files = {{"rank-0.json", text0}, {"rank-1.json", text1}};
//   MMTWIN_ASSIGN_OR_RETURN(ImportedTimeline t, ImportKineto(files, run.plan.parallel, options));
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/util/status.h"
#include "whatif/timeline_import.h"

namespace mmtwin {

struct KinetoTrace {
  std::string name;  // its path, in messages
  std::string text;  // the JSON
};

// Whether `text` looks like a PyTorch profiler trace (a JSON object whose first bytes hold traceEvents and
// whose top level names a Kineto field: schemaVersion, deviceProperties, distributedInfo or baseTimeNanoseconds)
// rather than a plain trace-event timeline. A cheap sniff of the text's start; ImportKineto checks the rest.
bool LooksLikeKineto(const std::string& text);

Result<ImportedTimeline> ImportKineto(const std::vector<KinetoTrace>& traces, const ParallelConfig& parallel,
                                      const ImportOptions& options);

}  // namespace mmtwin

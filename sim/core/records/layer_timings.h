// SPDX-License-Identifier: Apache-2.0
// Per-layer timings of a measured run (layers.csv in a backend RUNDIR): what calibration fits
// (calibrate/calibrate.h). One row per (iteration, device, micro-batch, layer) the device ran.
//
// layers.csv: a version line `# mmtwin-layers v3`, the header
//   iteration,device,micro_batch,layer,label,kind,tokens,spans,attention_pairs,fwd_us,bwd_us,recompute_us,
//   act_bytes,out_bytes,bwd_work_bytes
// then one row per layer run. tokens / spans / attention_pairs are the layer's workload in the micro-batch exactly
// as the simulator prices it (core/cost ComponentWorkload: positions, attention spans, and the sum over spans of
// span² — the full square; the cost model halves it for causal layers). Times in µs on that device: forward,
// backward, and the recompute forward (0 when the layer was not recomputed). Memory of a layer run without
// recompute, in bytes on that device: act_bytes = what its forward left allocated (the tensors saved for its
// backward and its output; a live-bytes difference of the backend's counting allocator), out_bytes = its output
// activation alone (what the next layer keeps when it is recomputed); both 0 for recomputed layers and where
// the allocator could not be counted. bwd_work_bytes = the most the layer's backward allocated above what was
// live when it started (its working memory: gradients of its intermediates and of its input, before its saved
// tensors are freed; recomputed layers too, after their rematerialization), 0 where not counted. v2 files (no
// bwd_work_bytes) are read with bwd_work_bytes = -1 (not measured); v1 files (no memory columns) are refused:
// re-run the backend.
//
//   rows = ParseLayerTimingsCsv(text, "runs/a/layers.csv").value();   // a run folder's: ReadRunFolder (run_folder.h)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/util/status.h"

namespace mmtwin {

inline constexpr int kLayerTimingsVersion = 3;

struct LayerTiming {
  int64_t iteration = 0;  // epoch index of the iteration
  int32_t device = 0, micro_batch = 0, layer = 0;
  int64_t tokens = 0;
  int32_t spans = 0;
  double attention_pairs = 0;
  double fwd_us = 0, bwd_us = 0, recompute_us = 0;
  int64_t act_bytes = 0, out_bytes = 0;
  int64_t bwd_work_bytes = 0;  // -1: not measured (a v2 file)
  // Read back from the file (LayerTimingsCsv takes them from `layers`): the layer's label and kind.
  std::string label;
  LayerKind kind = LayerKind::kTransformer;
  long line = 0;  // the row's line in the file it was parsed from (for messages); 0 when built in code
};

// CSV text; label and kind come from layers[row.layer].
std::string LayerTimingsCsv(const std::vector<LayerTiming>& rows, const std::vector<Layer>& layers);
// Strict: errors name `name:line: field`; another version, a missing header or a malformed number is an error.
Result<std::vector<LayerTiming>> ParseLayerTimingsCsv(const std::string& text, const std::string& name);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The JSON pieces the record codecs share (records_json.h).
#include "core/records/records_json.h"

#include <algorithm>

namespace mmtwin {

using nlohmann::json;

json ParallelJson(const ParallelConfig& p) {
  return {{"dp", p.dp},
          {"tp", p.tp},
          {"pp", p.pp},
          {"vpp", p.vpp},
          {"micro_batches", p.micro_batches},
          {"zero_stage", p.zero_stage},
          {"world_size", p.world_size()}};
}

json PlannedStageJson(const StageRecord& s) {
  return {{"stage", s.stage},
          {"first_layer", s.first_layer},
          {"last_layer", s.last_layer},
          {"layer_labels", {s.first_layer_label, s.last_layer_label}},
          {"layers", s.layers},
          {"params", s.params},
          {"recomputed_layers", s.recomputed_layers},
          {"fwd_us_mean", s.fwd_us_mean},
          {"model_state_bytes", s.model_state_bytes},
          {"peak_activation_bytes", s.peak_activation_bytes},
          {"peak_memory_bytes", s.peak_memory_bytes},
          {"memory_capacity_bytes", s.memory_capacity_bytes},
          {"fragmentation_bytes", s.fragmentation_bytes},
          {"runtime_bytes", s.runtime_bytes},
          {"fits", s.fits}};
}

// Every term of a stage's planned peak (core/plan/memory.h); the terms after model_state_bytes sum to
// peak_bytes: weights + gradients + main gradients + optimizer + ZeRO-3 transients = model states; model
// states + activations + boundary buffers + workspaces = the allocated peak; + fragmentation + CUDA context +
// NCCL buffers + other = the peak.
json StageMemoryJson(const StageMemory& m) {
  return {{"weight_bytes", m.weight_bytes},
          {"grad_bytes", m.grad_bytes},
          {"main_grad_bytes", m.main_grad_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"zero3_transient_bytes", m.zero3_transient_bytes},
          {"model_state_bytes", m.model_state_bytes},
          {"peak_activation_bytes", m.peak_activation_bytes},
          {"boundary_bytes", m.boundary_bytes},
          {"workspace_bytes", m.workspace_bytes},
          {"allocated_peak_bytes", m.allocated_peak_bytes},
          {"fragmentation_bytes", m.fragmentation_bytes},
          {"microbatch_footprint_min_bytes", m.mb_footprint_min_bytes},
          {"microbatch_footprint_max_bytes", m.mb_footprint_max_bytes},
          {"cuda_context_bytes", m.cuda_context_bytes},
          {"nccl_bytes", m.nccl_bytes},
          {"other_bytes", m.other_bytes},
          {"peak_bytes", m.peak_bytes},
          {"capacity_bytes", m.capacity_bytes}};
}

json StageJson(const StageRecord& s) {
  json j = PlannedStageJson(s);
  j["bwd_us_mean"] = s.bwd_us_mean;
  j["recompute_us_mean"] = s.recompute_us_mean;
  j["busy_ratio"] = s.busy_ratio;
  j["bubble_ratio"] = s.bubble_ratio;
  j["idle_ratio"] = s.idle_ratio;
  j["dispatch_us_mean"] = s.dispatch_us_mean;
  j["exposed_dispatch_ratio"] = s.exposed_dispatch_ratio;
  return j;
}

Result<json> ParseJsonObject(const std::string& text, const std::string& name, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // The line of the byte where parsing stopped (e.byte counts from 1 for a parse error).
    size_t at = 0;
    if (const auto* pe = dynamic_cast<const json::parse_error*>(&e)) at = std::min(pe->byte, text.size());
    const long line =
        1 + static_cast<long>(std::count(text.begin(), text.begin() + (at > 0 ? at - 1 : 0), '\n'));
    // what(): "[json.exception.parse_error.101] parse error at line 3, column 1: syntax error while ...".
    std::string why = e.what();
    if (const size_t col = why.find("column "); col != std::string::npos)
      if (const size_t colon = why.find(": ", col); colon != std::string::npos) why = why.substr(colon + 2);
    return Error::At(name, line, "", "not valid JSON: " + why);
  }
  if (!j.is_object()) return Error(name + ": not " + what + " (JSON object expected)");
  return j;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Cluster presets: the GPU (peak FLOP/s, memory, HBM bandwidth, achieved matmul efficiency) and the fabric
// (nodes x GPUs per node, NVLink inside a node, NICs between nodes).
//
// Presets are YAML files under traces/clusters/ (traces/clusters/README.md documents keys and sources). Units
// are in the names: FLOP/s, bytes, bytes/s (per direction), microseconds.
//
//   MMTWIN_ASSIGN_OR_RETURN(ClusterSpec c, LoadCluster("h100-8x400g", /*nodes_override=*/16));
//   int world = c.world_size();            // 128
//   double nic = c.gpu_nic_bytes_per_s();  // one GPU's share of its node's NICs
// (Which node a rank or device is on is the device mesh's: core/plan/mesh.h.)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

// Largest cluster: nodes x gpus_per_node (<= 1024) ranks must fit an int.
constexpr int kMaxClusterNodes = 1 << 20;

struct DeviceSpec {
  std::string name;            // e.g. "A100-80GB-SXM4"
  double peak_flops = 0;       // dense BF16 tensor-core peak, FLOP/s
  int64_t memory_bytes = 0;    // device memory
  double hbm_bytes_per_s = 0;  // HBM bandwidth
  double efficiency = 0.5;  // achieved fraction of peak for every FLOP when the device has no curve (below)
  // What the training process cannot use for model states, activations and buffers (traces/clusters/README.md
  // gives each preset's value and its source):
  // Outside PyTorch's caching allocator (core/plan/memory.h RuntimeMemoryOf counts them per plan):
  int64_t cuda_context_bytes = 0;   // the CUDA context with its loaded kernels (cuBLAS, cuDNN, NCCL, PyTorch)
  int64_t nccl_buffsize_bytes = 0;  // NCCL_BUFFSIZE: one channel's buffer to one peer (NCCL default 4 MiB)
  int nccl_channels = 0;            // channels of one NCCL communicator (NCCL_DEBUG=INFO "N coll channels")
  int64_t reserved_bytes = 0;       // anything else outside the allocator (e.g. other processes' contexts)
  // Inside the allocator but not the model's:
  int64_t workspace_bytes = 0;        // cuBLAS workspace (CUBLAS_WORKSPACE_CONFIG)
  int64_t cudnn_workspace_bytes = 0;  // cuDNN convolution workspace (the encoders' patch / conv front ends)
  // The allocator's fragmentation (core/plan/memory.h FragmentationBytes): reserved exceeds the allocated peak
  // by at least fragmentation x reserved (the floor, a fraction in [0, 0.9]) and by fragmentation_spread x
  // (max - min) of the rank's per-micro-batch activation bytes (a coefficient in [0, 10]).
  double fragmentation = 0;
  double fragmentation_spread = 0;
  // How the walk estimates the excess above the floor (core/plan/memory.h): "spread" (fragmentation_spread x
  // the footprint spread) or "replay" (each stage's allocations and frees replayed through a model of PyTorch's
  // caching allocator, core/plan/caching_allocator.h; fragmentation_spread then unused).
  std::string allocator_model = "spread";
  // Fixed time of one kernel besides its FLOPs (launch, ramp-up and tail), microseconds: does not shrink with
  // tensor parallelism, so small TP shards run below FLOPs / tp (cost_model.h counts the kernels per layer).
  double kernel_overhead_us = 0;
  // Compute slowdown while a DP or dispatch collective runs on the same GPU (its CUDA blocks take SMs and memory
  // bandwidth): the compute lane progresses at 1 / (1 + overlap_slowdown) then (core/eval/overlap.h). 0: free
  // overlap.
  double overlap_slowdown = 0;
  // Compute curves of the analytic cost model (core/cost/cost_model.h; traces/clusters/README.md gives each
  // preset's values and their sources). gemm_peak_fraction == 0: no curve, every FLOP at peak x `efficiency`
  // (the CPU preset). Fit parameters (the lead fits them on published runs through cluster.device.KEY
  // overrides): all seven.
  double gemm_peak_fraction = 0;      // large bf16 GEMM rate / peak_flops (MAMF / peak)
  double gemm_half_dim = 0;           // elements: a GEMM dimension d runs at d / (d + gemm_half_dim) of it
  double attn_fwd_peak_fraction = 0;  // flash-attention forward rate / peak_flops (long spans, large heads)
  double attn_bwd_peak_fraction = 0;  // its backward's, counting 2.5x the forward's FLOPs (FlashAttention-2)
  double attn_half_span = 0;          // positions: a span s runs at s / (s + attn_half_span) of it
  double attn_half_head_dim = 0;      // elements: head dim d runs at d / (d + attn_half_head_dim) of it
  double hbm_peak_fraction = 0;       // achievable fraction of hbm_bytes_per_s (memory-bound kernels)
  bool has_compute_curve() const { return gemm_peak_fraction > 0; }
};

// The bytes the model's states, activations and buffers may take on a GPU before any plan is known: (memory -
// cuda_context - reserved) x (1 - fragmentation) - workspace - cudnn_workspace, at least 0. The plan-aware figure,
// less the NCCL buffers of the plan's process groups, is core/plan/memory.h PlanUsableMemoryBytes.
int64_t UsableMemoryBytes(const DeviceSpec& d);

// How the fabric runs collectives (core/plan/collective.h; traces/clusters/README.md gives each preset's values
// and their sources). model "ring": every collective a flat ring over the group at the slowest hop's link speed
// (the CPU / Gloo presets, and mmtwin before issue 28); "nccl": NCCL's algorithms (ring, tree, NVLS) and protocols
// as its tuning model prices them, chosen by message size and group shape.
struct CollectiveSpec {
  std::string model = "ring";  // "ring" | "nccl"
  // NVLink SHARP: the NVSwitch reduces in the switch (NVSwitch gen 3, H100 / H200 HGX); enables NCCL's NVLS
  // all-reduce.
  bool nvls = false;
  // Large-message bus bandwidth as a fraction of the link: nccl-tests busBw of a ring inside one node /
  // nvlink_bytes_per_s, across nodes / (the group's NIC bandwidth per node), of NVLS inside a node /
  // nvlink_bytes_per_s. Defaults: NCCL's own ceiling (1.0) until a preset cites a measurement.
  double nvlink_bus_fraction = 1.0;
  double nic_bus_fraction = 1.0;
  double nvls_bus_fraction = 1.0;
  // The pipeline's fill and drain beyond NCCL's latency model, per call, saturating with the message: us x bytes /
  // (bytes + half_bytes); ring and tree (LL128, Simple), and NVLS apart. nccl-tests' curves reach half their peak
  // bus bandwidth at 16-64 MiB where lat + bytes / bw predicts 1-4 MiB (fitted per preset on nccl-tests points,
  // scenarios/validation/nccl-tests.csv). 0: none.
  double pipeline_us = 0;
  double pipeline_half_bytes = 0;
  double nvls_pipeline_us = 0;
  double nvls_pipeline_half_bytes = 0;
  bool operator==(const CollectiveSpec&) const = default;
};

struct ClusterSpec {
  std::string name;
  std::string description;
  int nodes = 1;
  int gpus_per_node = 8;
  DeviceSpec device;
  double nvlink_bytes_per_s = 0;  // per GPU, per direction
  double nvlink_latency_us = 0;
  int nics_per_node = 0;
  double nic_bytes_per_s = 0;  // per NIC, per direction (achievable, e.g. 24 GB/s for HDR 200 Gb/s)
  double nic_latency_us = 0;
  CollectiveSpec collectives;  // optional `collectives:` section

  int world_size() const { return nodes * gpus_per_node; }
  // Inter-node bandwidth of one node (all its NICs), bytes/s per direction.
  double node_nic_bytes_per_s() const { return nics_per_node * nic_bytes_per_s; }
  // One GPU's inter-node bandwidth, bytes/s per direction: its share of the node's NICs (node_nic_bytes_per_s /
  // gpus_per_node, gpus_per_node below 1 counting as 1) when nics_per_node is given, else nic_bytes_per_s (then
  // already per GPU).
  double gpu_nic_bytes_per_s() const {
    return nics_per_node > 0 ? node_nic_bytes_per_s() / (gpus_per_node > 1 ? gpus_per_node : 1)
                             : nic_bytes_per_s;
  }
};

// Loads a preset by name (traces/clusters/NAME.yaml) or a file by path (contains '/' or ends in .yaml).
// The device keys whose values are words, not numbers (DeviceSpec::allocator_model): a scenario's
// `cluster.device` may override them with text (device_text_overrides below); every other key takes a number.
inline const std::vector<std::string> kDeviceTextKeys = {"allocator_model"};
// nodes_override > 0 replaces the preset's node count. device_overrides replace numeric keys of the preset's
// `device:` section before it is checked (a scenario's `cluster.device`, what-ifs such as a faster GPU, and the
// published-runs fit of calibrate/published.h), device_text_overrides the keys of kDeviceTextKeys (e.g.
// allocator_model: replay), with the preset's own checks: an unknown key or a value out of range is an error
// naming "device.KEY". An unknown name lists the valid ones.
Result<ClusterSpec> LoadCluster(const std::string& name_or_path, int nodes_override = 0,
                                const std::map<std::string, double>& device_overrides = {},
                                const std::map<std::string, std::string>& device_text_overrides = {});
// Parses YAML text (`name` for messages).
Result<ClusterSpec> ParseCluster(const std::string& yaml_text, const std::string& name);
// Names of every preset, sorted.
std::vector<std::string> ListClusters();
// MMTWIN_DATA_DIR/clusters (the MMTWIN_DATA_DIR environment variable overrides the build-time path).
std::string ClusterPresetDir();

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the cluster spec parser (ParseCluster, YAML) must return a spec or an Error for any input
// (yaml-cpp exceptions must not escape), and an accepted spec must be usable: positive sizes, bandwidths and
// memory, finite latencies, and a world size that does not overflow.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cluster/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mmtwin::Result<mmtwin::ClusterSpec> c = mmtwin::ParseCluster(text, "fuzz.yaml");
  if (!c.ok()) {
    if (c.error().message().empty()) __builtin_trap();
    return 0;
  }
  if (c->nodes < 1 || c->gpus_per_node < 1) __builtin_trap();
  if (static_cast<int64_t>(c->nodes) * c->gpus_per_node > INT32_MAX) __builtin_trap();
  if (!(c->device.peak_flops > 0) || !std::isfinite(c->device.peak_flops)) __builtin_trap();
  if (c->device.memory_bytes <= 0) __builtin_trap();
  if (!(c->device.efficiency > 0) || c->device.efficiency > 1) __builtin_trap();
  if (!(c->nvlink_bytes_per_s > 0) || !std::isfinite(c->nvlink_latency_us) || c->nvlink_latency_us < 0)
    __builtin_trap();
  (void)c->world_size();
  (void)c->node_nic_bytes_per_s();
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Cluster presets: every preset loads with the datasheet numbers, node override, rank -> node, errors.
#include "core/cluster/cluster.h"

#include <gtest/gtest.h>

#include "core/plan/mesh.h"

namespace mmtwin {
namespace {

TEST(ClusterTest, PresetsLoadWithDatasheetNumbers) {
  const std::vector<std::string> names = ListClusters();
  ASSERT_EQ(names, (std::vector<std::string>{"a100-2x200g", "a100-4x200g", "a100-8x200g", "cpu-2vcpu-gloo",
                                             "h100-8x400g", "h200-8x400g"}));
  for (const std::string& n : names) {
    if (n.starts_with("cpu-")) continue;  // the backend's CPU machine, below
    Result<ClusterSpec> c = LoadCluster(n);
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->name, n);
    EXPECT_EQ(c->gpus_per_node, 8);
    EXPECT_GT(c->device.efficiency, 0);
    EXPECT_LE(c->device.efficiency, 1);
    EXPECT_EQ(c->device.memory_bytes, n.starts_with("h200") ? 141'000'000'000LL : 80LL << 30);
    EXPECT_TRUE(c->device.has_compute_curve());
  }
  // The CPU machine the validation suite measures: one rank per "device", 4 ranks, 6 GiB each.
  ClusterSpec cpu = *LoadCluster("cpu-2vcpu-gloo");
  EXPECT_EQ(cpu.nodes * cpu.gpus_per_node, 4);
  EXPECT_EQ(cpu.device.memory_bytes, 6LL << 30);
  EXPECT_DOUBLE_EQ(cpu.device.peak_flops, 2.6e9 * 32);
  ClusterSpec a = *LoadCluster("a100-4x200g");
  EXPECT_DOUBLE_EQ(a.device.peak_flops, 312e12);
  EXPECT_DOUBLE_EQ(a.nvlink_bytes_per_s, 300e9);
  EXPECT_EQ(a.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(a.node_nic_bytes_per_s(), 96e9);
  EXPECT_EQ(LoadCluster("a100-2x200g")->nics_per_node, 2);
  ClusterSpec h = *LoadCluster("h100-8x400g");
  EXPECT_DOUBLE_EQ(h.device.peak_flops, 989e12);
  EXPECT_DOUBLE_EQ(h.device.hbm_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(h.nvlink_bytes_per_s, 450e9);
  EXPECT_EQ(h.nics_per_node, 8);
  EXPECT_EQ(h.world_size(), 64);
}

TEST(ClusterTest, NodeOverrideAndRankMapping) {
  ClusterSpec c = *LoadCluster("h100-8x400g", 16);
  EXPECT_EQ(c.nodes, 16);
  EXPECT_EQ(c.world_size(), 128);
  // Ranks fill the nodes in order (the device mesh's NodeOfRank), and the layout needs exactly the 16 nodes.
  ParallelConfig par;
  par.dp = 16;
  par.tp = 8;
  const DeviceMesh mesh(par, c.gpus_per_node);
  for (int r = 0; r < c.world_size(); ++r) {
    EXPECT_EQ(mesh.NodeOfRank(r), r / 8);
    EXPECT_LT(mesh.NodeOfRank(r), c.nodes);
  }
  EXPECT_EQ(NodesFor(c.world_size(), c.gpus_per_node), 16);
  // Each GPU's share of its node's NICs.
  EXPECT_DOUBLE_EQ(c.gpu_nic_bytes_per_s(), c.nics_per_node * c.nic_bytes_per_s / 8);
  EXPECT_FALSE(LoadCluster("h100-8x400g", -1).ok());
}

TEST(ClusterTest, LoadsByPath) {
  Result<ClusterSpec> c = LoadCluster(ClusterPresetDir() + "/a100-2x200g.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->nodes, 4);
}

TEST(ClusterTest, Errors) {
  Result<ClusterSpec> u = LoadCluster("tpu-pod");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(
      u.error().message(),
      "unknown cluster 'tpu-pod'; valid values are: a100-2x200g, a100-4x200g, a100-8x200g, cpu-2vcpu-gloo, "
      "h100-8x400g, h200-8x400g");
  const std::string base =
      "name: x\nnodes: 2\ngpus_per_node: 8\ndevice: {name: g, peak_flops: 1e12, memory_bytes: 8e9, "
      "hbm_bytes_per_s: 1e12}\nnvlink_bytes_per_s: 1e11\nnics_per_node: 1\nnic_bytes_per_s: 1e10\n";
  Result<ClusterSpec> ok = ParseCluster(base, "c.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->device.memory_bytes, 8000000000);
  EXPECT_DOUBLE_EQ(ok->device.efficiency, 0.5);  // default
  auto err = [](const std::string& text) {
    Result<ClusterSpec> r = ParseCluster(text, "c.yaml");
    return r.ok() ? std::string("OK") : r.error().message();
  };
  EXPECT_EQ(err(base + "nic_gbps: 3\n").substr(0, 31), "c.yaml:8: nic_gbps: unknown key");
  EXPECT_EQ(err("name: x\nnodes: two\n"), "c.yaml:2: nodes: 'two' is not a number");
  EXPECT_EQ(err("name: x\nnodes: 1.5\n"), "c.yaml:2: nodes: must be a whole number");
  EXPECT_NE(err("name: x\nnodes: 1\ngpus_per_node: 8\n").find("device: missing"), std::string::npos);
  std::string e = err("name: x\nnodes: [1\n");
  EXPECT_EQ(e.substr(0, 9), "c.yaml:3:") << e;
  std::string bad_eff = base;
  bad_eff.replace(bad_eff.find("hbm_bytes_per_s: 1e12}"), 22, "hbm_bytes_per_s: 1e12, efficiency: 1.5}");
  EXPECT_NE(err(bad_eff).find("device.efficiency: must be in (0, 1]"), std::string::npos);
}

TEST(ClusterTest, ValuesOutsideTheirRangeAreErrorsNotClampedOrNull) {
  // A NIC of 1e3 B/s or a latency of 1e300 us made the SimGrid engine run without end or write null times; a
  // node count past the rank arithmetic was silently clamped.
  const std::string base =
      "name: x\nnodes: 2\ngpus_per_node: 8\ndevice: {name: g, peak_flops: 1e12, memory_bytes: 8e9, "
      "hbm_bytes_per_s: 1e12}\nnvlink_bytes_per_s: 1e11\nnics_per_node: 1\n";
  auto err = [&](const std::string& tail, const std::string& nodes = "2") {
    std::string text = base + tail;
    text.replace(text.find("nodes: 2"), 8, "nodes: " + nodes);
    Result<ClusterSpec> r = ParseCluster(text, "c.yaml");
    return r.ok() ? std::string("OK") : r.error().message();
  };
  EXPECT_EQ(err("nic_bytes_per_s: 1e10\n"), "OK");
  EXPECT_EQ(err("nic_bytes_per_s: 1e3\n"),
            "c.yaml:7: nic_bytes_per_s: must be in [1e+06, 1e+14] (bytes/s per direction)");
  EXPECT_EQ(err("nic_bytes_per_s: 1e10\nnic_latency_us: 1e300\n"),
            "c.yaml:8: nic_latency_us: must be in [0, 1e+06] (microseconds)");
  EXPECT_EQ(
      err("nic_bytes_per_s: 1e10\n", "2097152"),
      "c.yaml:2: nodes: must be in [1, 1.04858e+06] (a larger cluster does not fit the rank arithmetic)");
  EXPECT_EQ(err("nic_bytes_per_s: 1e10\nnvlink_latency_us: 5e6\n"),
            "c.yaml:8: nvlink_latency_us: must be in [0, 1e+06] (microseconds)");
  std::string big_gpus = base + "nic_bytes_per_s: 1e10\n";
  big_gpus.replace(big_gpus.find("gpus_per_node: 8"), 16, "gpus_per_node: 4096");
  Result<ClusterSpec> r = ParseCluster(big_gpus, "c.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "c.yaml:3: gpus_per_node: must be in [1, 1024] (GPUs in one node)");
}

// Device memory the training process cannot use (issue 8, issue 27): the CUDA context and other bytes outside the
// allocator, workspaces inside it, and the allocator's fragmentation floor (core/plan/memory.h counts the NCCL
// buffers per plan).
TEST(ClusterTest, UsableMemoryLeavesOutReservedWorkspaceAndFragmentation) {
  DeviceSpec d;
  d.memory_bytes = 80LL << 30;
  EXPECT_EQ(UsableMemoryBytes(d), 80LL << 30);  // no terms: all of it
  d.reserved_bytes = 1LL << 30;
  d.cuda_context_bytes = 512LL << 20;
  d.workspace_bytes = 32LL << 20;
  d.cudnn_workspace_bytes = 16LL << 20;
  d.fragmentation = 0.05;
  EXPECT_EQ(UsableMemoryBytes(d),
            static_cast<int64_t>(static_cast<double>((79LL << 30) - (512LL << 20)) * 0.95 - (48LL << 20)));
  d.reserved_bytes = d.memory_bytes;
  EXPECT_EQ(UsableMemoryBytes(d), 0);
  // The GPU presets state every term (traces/clusters/README.md gives the sources).
  for (const char* n : {"a100-2x200g", "a100-4x200g", "h100-8x400g"}) {
    ClusterSpec c = *LoadCluster(n);
    EXPECT_EQ(c.device.reserved_bytes, 0) << n;
    EXPECT_EQ(c.device.cuda_context_bytes, 512LL << 20) << n;
    EXPECT_EQ(c.device.nccl_buffsize_bytes, 4LL << 20) << n;  // NCCL_BUFFSIZE's default
    EXPECT_GT(c.device.nccl_channels, 0) << n;
    EXPECT_GT(c.device.workspace_bytes, 0) << n;
    EXPECT_DOUBLE_EQ(c.device.fragmentation, 0.05) << n;
    EXPECT_GT(c.device.fragmentation_spread, 0) << n;
  }
  EXPECT_EQ(LoadCluster("h100-8x400g")->device.workspace_bytes, 32LL << 20);
  // Parsing: optional, zero allowed, ranges checked with file:line.
  const std::string base =
      "name: x\nnodes: 1\ngpus_per_node: 8\nnvlink_bytes_per_s: 1e11\nnics_per_node: 1\nnic_bytes_per_s: "
      "1e10\n"
      "device:\n  name: g\n  peak_flops: 1e12\n  memory_bytes: 8e9\n  hbm_bytes_per_s: 1e12\n";
  auto parse = [&](const std::string& tail) {
    Result<ClusterSpec> r = ParseCluster(base + tail, "c.yaml");
    return r.ok() ? std::string("OK ") + std::to_string(UsableMemoryBytes(r->device)) : r.error().message();
  };
  EXPECT_EQ(parse(""), "OK 8000000000");
  EXPECT_EQ(parse("  reserved_bytes: 0\n  workspace_bytes: 0\n  fragmentation: 0\n"), "OK 8000000000");
  // (8e9 - 1e9) x 0.5 - 1e9: the workspaces sit inside the allocator, after the fragmentation floor.
  EXPECT_EQ(parse("  reserved_bytes: 1e9\n  workspace_bytes: 1e9\n  fragmentation: 0.5\n"), "OK 2500000000");
  EXPECT_EQ(parse("  fragmentation: 0.95\n"),
            "c.yaml:12: device.fragmentation: must be in [0, 0.9] (fraction of the allocator's pool)");
  EXPECT_EQ(parse("  reserved_bytes: 9e9\n"),
            "c.yaml:12: device.reserved_bytes: must be in [0, 8e+09] (bytes, at most memory_bytes)");
  EXPECT_EQ(parse("  reserved_bytes: 5e9\n  workspace_bytes: 4e9\n"),
            "c.yaml:13: device.workspace_bytes: must be in [0, 3e+09] (bytes, at most memory_bytes - "
            "reserved_bytes)");
  EXPECT_EQ(parse("  workspace_bytes: -1\n"), "c.yaml:12: device.workspace_bytes: must be >= 0");
  EXPECT_EQ(parse("  cuda_context_bytes: 1e9\n  cudnn_workspace_bytes: 1e9\n  fragmentation: 0.5\n"),
            "OK 2500000000");
  EXPECT_EQ(
      parse("  nccl_channels: 65\n"),
      "c.yaml:12: device.nccl_channels: must be in [0, 64] (channels per communicator (NCCL's MAXCHANNELS "
      "is 32, 64 on recent NCCL))");
  EXPECT_EQ(
      parse("  fragmentation_spread: 11\n"),
      "c.yaml:12: device.fragmentation_spread: must be in [0, 10] (bytes stranded per byte of activation "
      "spread)");
  EXPECT_EQ(parse("  allocator_model: replay\n"), "OK 8000000000");
  EXPECT_EQ(parse("  allocator_model: exact\n"),
            "c.yaml:12: device.allocator_model: 'exact' is not one of spread, replay");
  EXPECT_EQ(parse("  kernel_overhead_us: 4\n"), "OK 8000000000");
  EXPECT_EQ(parse("  kernel_overhead_us: 2e4\n"),
            "c.yaml:12: device.kernel_overhead_us: must be in [0, 10000] (microseconds)");
  // The compute curve: four fractions together, half sizes >= 0.
  const std::string curve =
      "  gemm_peak_fraction: 0.8\n  attn_fwd_peak_fraction: 0.5\n  attn_bwd_peak_fraction: 0.4\n"
      "  hbm_peak_fraction: 0.85\n";
  EXPECT_EQ(parse(curve + "  gemm_half_dim: 100\n  attn_half_span: 0\n"), "OK 8000000000");
  EXPECT_EQ(parse("  gemm_peak_fraction: 0.8\n"),
            "c.yaml:8: device.attn_fwd_peak_fraction: missing: a compute curve gives gemm_peak_fraction, "
            "attn_fwd_peak_fraction, attn_bwd_peak_fraction and hbm_peak_fraction together");
  EXPECT_EQ(parse(curve + "  gemm_half_dim: -1\n"), "c.yaml:16: device.gemm_half_dim: must be >= 0");
  EXPECT_EQ(parse("  hbm_peak_fraction: 1.5\n"),
            "c.yaml:12: device.hbm_peak_fraction: must be in [0, 1] (fraction of the peak)");
  Result<ClusterSpec> with = ParseCluster(base + curve + "  gemm_half_dim: 100\n", "c.yaml");
  ASSERT_TRUE(with.ok());
  EXPECT_TRUE(with->device.has_compute_curve());
  EXPECT_DOUBLE_EQ(with->device.gemm_half_dim, 100);
  EXPECT_FALSE(ParseCluster(base, "c.yaml")->device.has_compute_curve());
}

}  // namespace
}  // namespace mmtwin

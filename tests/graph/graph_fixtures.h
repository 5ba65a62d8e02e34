// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the op-graph, evaluator and engine tests: a parallel layout, per-chunk statics, and a
// graph built from a named schedule (failures reported through GoogleTest).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/graph/op_graph.h"
#include "core/plan/schedule.h"

namespace mmtwin::fixtures {

inline ParallelConfig Pc(int dp, int pp, int vpp, int m, int zero = 0, int tp = 1) {
  ParallelConfig pc;
  pc.dp = dp;
  pc.tp = tp;
  pc.pp = pp;
  pc.vpp = vpp;
  pc.micro_batches = m;
  pc.zero_stage = zero;
  return pc;
}

// Every chunk synchronizes `grad_bytes` of gradients per GPU.
inline std::vector<ChunkStatic> Statics(int chunks, int64_t grad_bytes) {
  std::vector<ChunkStatic> v(chunks);
  for (auto& s : v) s.grad_bytes_per_gpu = grad_bytes;
  return v;
}

// A small cluster for the engine tests: `gpn` GPUs per node, NVLink 100 GB/s (2 us), one 10 GB/s NIC per GPU
// (5 us).
inline ClusterSpec Cluster(int nodes, int gpn) {
  ClusterSpec c;
  c.name = "test";
  c.nodes = nodes;
  c.gpus_per_node = gpn;
  c.nvlink_bytes_per_s = 100e9;
  c.nvlink_latency_us = 2;
  c.nics_per_node = gpn;
  c.nic_bytes_per_s = 10e9;
  c.nic_latency_us = 5;
  return c;
}

inline OpGraph MustBuild(const ParallelConfig& pc, const std::string& sched, const IterationCosts& costs,
                         const std::vector<ChunkStatic>& statics, const CommSpec& comm,
                         std::shared_ptr<const CommCostModel> comm_cost = nullptr) {
  auto s = BuildSchedule(sched, pc.pp, pc.vpp, pc.micro_batches);
  EXPECT_TRUE(s.ok()) << s.error().message();
  auto g = BuildIterationGraph(pc, *s, costs, statics, comm, std::move(comm_cost));
  EXPECT_TRUE(g.ok()) << g.error().message();
  return std::move(*g);
}

}  // namespace mmtwin::fixtures

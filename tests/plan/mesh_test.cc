// SPDX-License-Identifier: Apache-2.0
// The device mesh (core/plan/mesh.h): rank <-> coordinates, devices, groups and nodes against brute force over
// many shapes, and the op graph naming every transfer's peer with it.
#include "core/plan/mesh.h"

#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "graph/graph_fixtures.h"

namespace mmtwin {
namespace {

ParallelConfig Layout(int tp, int dp, int pp) {
  ParallelConfig p;
  p.tp = tp;
  p.dp = dp;
  p.pp = pp;
  return p;
}

TEST(DeviceMeshTest, RanksAndCoordinatesRoundTripInMegatronOrder) {
  for (int tp : {1, 2, 4})
    for (int sp : {1, 2, 3})
      for (int dp : {1, 3, 4})
        for (int pp : {1, 2, 5}) {
          const DeviceMesh mesh(Layout(tp, dp, pp), 8, sp);
          ASSERT_EQ(mesh.world_size(), tp * sp * dp * pp);
          int rank = 0;
          // Brute force: iterate the coordinates slowest (pp) to fastest (tp); ranks must count up.
          for (int p = 0; p < pp; ++p)
            for (int d = 0; d < dp; ++d)
              for (int s = 0; s < sp; ++s)
                for (int t = 0; t < tp; ++t, ++rank) {
                  const MeshCoord c{t, s, d, p};
                  EXPECT_EQ(mesh.Rank(c), rank);
                  EXPECT_EQ(mesh.Coord(rank), c);
                }
        }
}

TEST(DeviceMeshTest, DevicesArePipelineFastestTpGroups) {
  for (int sp : {1, 2})
    for (int dp : {1, 2, 5})
      for (int pp : {1, 3, 4}) {
        const DeviceMesh mesh(Layout(2, dp, pp), 8, sp);
        ASSERT_EQ(mesh.num_devices(), sp * dp * pp);
        std::set<int> seen;
        for (int d = 0; d < dp; ++d)
          for (int s = 0; s < sp; ++s)
            for (int p = 0; p < pp; ++p) {
              const int dev = mesh.Device(d, p, s);
              if (sp == 1) {
                EXPECT_EQ(dev, d * pp + p);  // the op graph's numbering, unchanged
              }
              EXPECT_EQ(mesh.DpOfDevice(dev), d);
              EXPECT_EQ(mesh.SpOfDevice(dev), s);
              EXPECT_EQ(mesh.PpOfDevice(dev), p);
              EXPECT_TRUE(seen.insert(dev).second);
              // Every TP rank of the device maps back to it; its first rank has tp = 0.
              const int first = mesh.FirstRankOfDevice(dev);
              EXPECT_EQ(mesh.Coord(first).tp, 0);
              for (int t = 0; t < 2; ++t) EXPECT_EQ(mesh.DeviceOfRank(first + t), dev);
              EXPECT_EQ(mesh.PipelineNeighbor(dev, 1), mesh.Device(d, (p + 1) % pp, s));
              EXPECT_EQ(mesh.PipelineNeighbor(dev, -1), mesh.Device(d, (p + pp - 1) % pp, s));
              EXPECT_EQ(mesh.DpNeighbor(dev, 1), mesh.Device((d + 1) % dp, p, s));
            }
        EXPECT_EQ(*seen.rbegin(), mesh.num_devices() - 1);
      }
}

TEST(DeviceMeshTest, GroupsPartitionTheWorld) {
  const DeviceMesh mesh(Layout(2, 3, 4), 8, 2);
  for (MeshDim dim : {MeshDim::kTp, MeshDim::kSp, MeshDim::kDp, MeshDim::kPp}) {
    const std::vector<RankGroup> groups = mesh.Groups(dim);
    ASSERT_EQ(static_cast<int>(groups.size()), mesh.world_size() / mesh.size(dim)) << MeshDimName(dim);
    std::vector<int> owner(mesh.world_size(), -1);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      ASSERT_EQ(static_cast<int>(groups[gi].ranks.size()), mesh.size(dim));
      for (size_t i = 0; i < groups[gi].ranks.size(); ++i) {
        const int r = groups[gi].ranks[i];
        EXPECT_EQ(owner[r], -1) << "rank " << r << " in two " << MeshDimName(dim) << " groups";
        owner[r] = static_cast<int>(gi);
        // Members differ only along dim, in increasing coordinate order.
        MeshCoord a = mesh.Coord(groups[gi].ranks[0]), b = mesh.Coord(r);
        const int ib = dim == MeshDim::kTp   ? b.tp
                       : dim == MeshDim::kSp ? b.sp
                       : dim == MeshDim::kDp ? b.dp
                                             : b.pp;
        EXPECT_EQ(ib, static_cast<int>(i));
        (dim == MeshDim::kTp ? a.tp : dim == MeshDim::kSp ? a.sp : dim == MeshDim::kDp ? a.dp : a.pp) = ib;
        EXPECT_EQ(a, b);
      }
    }
    EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0);
  }
  // TP groups are consecutive ranks (inside a node).
  EXPECT_EQ(mesh.Group(MeshDim::kTp, 5).ranks, (std::vector<int>{4, 5}));
}

TEST(DeviceMeshTest, NodesByBruteForce) {
  for (int gpn : {1, 2, 4, 8}) {
    const DeviceMesh mesh(Layout(2, 4, 3), gpn);
    // Brute force: hand out ranks to nodes in order, gpn each.
    std::map<int, int> node;
    for (int r = 0, n = 0, used = 0; r < mesh.world_size(); ++r) {
      node[r] = n;
      if (++used == gpn) ++n, used = 0;
    }
    for (int r = 0; r < mesh.world_size(); ++r) EXPECT_EQ(mesh.NodeOfRank(r), node[r]);
    for (int dev = 0; dev < mesh.num_devices(); ++dev)
      EXPECT_EQ(mesh.NodeOfDevice(dev), node[mesh.FirstRankOfDevice(dev)]);
  }
  const DeviceMesh unknown(Layout(2, 4, 3), 0);  // gpus_per_node unknown: every device its own node
  for (int dev = 0; dev < unknown.num_devices(); ++dev) EXPECT_EQ(unknown.NodeOfDevice(dev), dev);
  EXPECT_EQ(DeviceMesh(Layout(1, 2, 3), 0, 2).DeviceName(7), "dp 1 / sp 0 / stage 1");
  EXPECT_EQ(DeviceMesh(Layout(1, 2, 3)).DeviceName(4), "dp 1 / stage 1");
}

// The node fit, by brute force: the nodes a count of ranks fills (handing them out gpn at a time), whether a
// group of consecutive ranks fits in one, and whether a stage's whole DP group does (every rank of it on the
// node of its first rank).
TEST(DeviceMeshTest, NodeFitByBruteForce) {
  for (int gpn : {-1, 0, 1, 2, 3, 4, 8}) {
    for (int64_t ranks = 0; ranks <= 40; ++ranks) {
      int64_t nodes = 0;
      for (int64_t r = 0, used = 0; r < ranks; ++r)
        if (used++ % std::max(1, gpn) == 0) ++nodes;
      EXPECT_EQ(NodesFor(ranks, gpn), nodes) << ranks << " ranks, " << gpn << " per node";
      EXPECT_EQ(FitsInNode(ranks, gpn), gpn > 0 && nodes <= 1) << ranks << " ranks, " << gpn << " per node";
    }
  }
  EXPECT_EQ(NodesFor(INT64_MAX, 8), INT64_MAX / 8 + 1);  // no overflow
  for (int gpn : {1, 2, 4, 8, 16})
    for (int tp : {1, 2, 4})
      for (int dp : {1, 2, 3, 4})
        for (int sp : {1, 2}) {
          const DeviceMesh mesh(Layout(tp, dp, 2), gpn, sp);
          bool same_node = true;
          const int first = mesh.Group(MeshDim::kDp, 0).ranks.front();
          for (int d = 0; d < dp; ++d)
            for (int s = 0; s < sp; ++s)
              for (int t = 0; t < tp; ++t)
                same_node = same_node && mesh.NodeOfRank(mesh.Rank({t, s, d, 0})) == mesh.NodeOfRank(first);
          EXPECT_EQ(mesh.DpGroupInNode(), same_node) << "tp " << tp << " sp " << sp << " dp " << dp << " gpn " << gpn;
        }
  EXPECT_FALSE(DeviceMesh(Layout(1, 1, 1), 0).DpGroupInNode());  // unknown node size: never "in a node"
}

// The op graph names each transfer's peer with the mesh: an activation send goes to the device holding the
// next chunk, a gradient send to the one holding the previous chunk, a DP collective to its ring successor.
TEST(DeviceMeshTest, OpGraphNamesEveryPeer) {
  using namespace fixtures;
  for (const auto& [pp, vpp, sched] : std::vector<std::tuple<int, int, std::string>>{
           {4, 1, "1f1b"}, {2, 2, "interleaved-1f1b"}, {3, 1, "gpipe"}}) {
    const ParallelConfig pc = Pc(3, pp, vpp, 4, 1);
    IterationCosts costs;
    costs.Resize(pc.dp, pc.micro_batches, pc.chunks());
    for (ChunkCost& c : costs.costs) {
      c.fwd_us = 10;
      c.bwd_us = 20;
      c.send_bytes = 1 << 20;
    }
    CommSpec comm;
    comm.p2p_bytes_per_s = comm.dp_bytes_per_s = 1e11;
    comm.p2p_latency_us = comm.dp_latency_us = 1;
    const OpGraph g = MustBuild(pc, sched, costs, Statics(pc.chunks(), 64 << 20), comm);
    const DeviceMesh mesh(pc);
    int sends = 0, rings = 0;
    for (const Op& op : g.ops) {
      if (op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient) {
        ++sends;
        const int d = mesh.DpOfDevice(op.device);
        const int next = op.kind == OpKind::kP2pSendActivation ? op.chunk + 1 : op.chunk - 1;
        EXPECT_EQ(op.peer, mesh.Device(d, next % pp)) << g.Describe(&op - g.ops.data());
        EXPECT_NE(op.peer, op.device);
      } else if (op.kind == OpKind::kDpCollective) {
        ++rings;
        EXPECT_EQ(op.peer, mesh.Device((mesh.DpOfDevice(op.device) + 1) % pc.dp, mesh.PpOfDevice(op.device)));
      } else {
        EXPECT_EQ(op.peer, -1) << OpKindName(op.kind);
      }
    }
    EXPECT_GT(sends, 0);
    EXPECT_GT(rings, 0);
  }
}

// Hybrid sharding's groups per node against brute force on consecutive DP ranks filling nodes.
TEST(MeshTest, HybridShardRanksPerNodeIsTheBruteForceCount) {
  for (int per_node : {1, 2, 4, 8})
    for (int group : {1, 2, 4, 8, 16}) {
      const int dp = 64;
      auto node = [&](int r) { return r / per_node; };
      int shard = 0, replica = 0;
      for (int r = 0; r < group; ++r) shard += node(r) == node(0);        // shard group 0: ranks 0..group-1
      for (int r = 0; r < dp; r += group) replica += node(r) == node(0);  // replica group 0: every group-th
      const HybridGroupsPerNode got = HybridShardRanksPerNode(per_node, group);
      EXPECT_EQ(got.shard, shard) << per_node << " " << group;
      EXPECT_EQ(got.replica, replica) << per_node << " " << group;
    }
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The device mesh: how the GPUs of a run are arranged over the parallel dimensions, and the one place that
// turns coordinates into ranks, op-graph devices, groups and nodes (no other code writes `dp_idx * pp + pp_idx`
// or its inverse; tests/layering/layering_test.cc greps for it).
//
// Dimensions, fastest-varying first (Megatron's order): tp (tensor parallel, inside a node), sp (sequence /
// context parallel, core/plan/seqpar.h; size 1 without it, so those layouts are unchanged), dp (data
// parallel), pp (pipeline). Global rank = tp + TP * (sp + SP * (dp + DP * pp)).
//
// Op-graph devices: a TP group runs in lockstep, so the evaluators treat one TP group as one device (its TP
// ranks are folded into the layer costs and TP collectives). Devices are numbered pipeline-fastest:
// device = (dp * SP + sp) * PP + pp, so the devices of one DP replica (its pipeline) are consecutive; with
// SP = 1 this is dp * PP + pp.
//
// Nodes: ranks fill nodes in order, gpus_per_node at a time (node = rank / gpus_per_node); gpus_per_node <= 0
// means unknown, and then every device counts as its own node. How many nodes a layout fills and whether a group
// of consecutive ranks fits in one are written here only (NodesFor, FitsInNode, DeviceMesh::DpGroupInNode).
//
//   DeviceMesh mesh(parallel, cluster.gpus_per_node);
//   const int dev = mesh.Device(dp_idx, pp_idx);
//   const int next = mesh.PipelineNeighbor(dev, +1);   // the next stage of the same replica
//   for (int r : mesh.Group(MeshDim::kDp, mesh.FirstRankOfDevice(dev)).ranks) ...
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace mmtwin {

enum class MeshDim : uint8_t { kTp, kSp, kDp, kPp };
// "tp", "sp", "dp", "pp".
const char* MeshDimName(MeshDim d);

struct MeshCoord {
  int tp = 0, sp = 0, dp = 0, pp = 0;
  bool operator==(const MeshCoord&) const = default;
};

// The ranks that differ from one rank only along `dim`, in increasing coordinate order (a TP group, a DP
// group / ring, a pipeline).
struct RankGroup {
  MeshDim dim = MeshDim::kTp;
  std::vector<int> ranks;
};

// Nodes of gpus_per_node GPUs that `ranks` consecutive ranks fill: ceil(ranks / gpus_per_node), without overflow
// (gpus_per_node below 1 counts as 1, ranks below 0 as 0). E.g. the nodes a scenario needs: NodesFor(world, gpn).
int64_t NodesFor(int64_t ranks, int gpus_per_node);
// Whether `ranks` consecutive ranks, starting at a node boundary, fit in one node: gpus_per_node > 0 (known) and
// ranks <= gpus_per_node.
bool FitsInNode(int64_t ranks, int gpus_per_node);
// Hybrid sharding's groups (ParallelConfig::zero3_shard_group) inside a DP group with `dp_per_node` members per node
// (DeviceMesh::DpRanksPerNode): a shard group of `group` consecutive members has min(group, dp_per_node) per node,
// a replica group (members `group` apart) max(1, dp_per_node / group).
struct HybridGroupsPerNode {
  int shard = 1, replica = 1;
};
HybridGroupsPerNode HybridShardRanksPerNode(int dp_per_node, int group);

class DeviceMesh {
 public:
  // Sizes below 1 count as 1. sp: the sequence-parallel degree (1 = none).
  explicit DeviceMesh(const ParallelConfig& parallel, int gpus_per_node = 0, int sp = 1);

  int size(MeshDim d) const;
  int tp() const { return tp_; }
  int sp() const { return sp_; }
  int dp() const { return dp_; }
  int pp() const { return pp_; }
  int world_size() const { return tp_ * sp_ * dp_ * pp_; }
  int num_devices() const { return sp_ * dp_ * pp_; }  // TP groups
  int gpus_per_node() const { return gpus_per_node_; }

  // Global rank <-> coordinates (Megatron order above).
  int Rank(const MeshCoord& c) const;
  MeshCoord Coord(int rank) const;

  // Op-graph devices (TP groups) <-> coordinates (tp = 0).
  int Device(int dp_idx, int pp_idx, int sp_idx = 0) const { return (dp_idx * sp_ + sp_idx) * pp_ + pp_idx; }
  int DpOfDevice(int device) const { return device / pp_ / sp_; }
  int SpOfDevice(int device) const { return device / pp_ % sp_; }
  int PpOfDevice(int device) const { return device % pp_; }
  MeshCoord CoordOfDevice(int device) const {
    return {0, SpOfDevice(device), DpOfDevice(device), PpOfDevice(device)};
  }
  int DeviceOfRank(int rank) const;
  int FirstRankOfDevice(int device) const { return Rank(CoordOfDevice(device)); }
  // The device of the same replica (and sp index) `delta` pipeline stages away, wrapping around.
  int PipelineNeighbor(int device, int delta) const;
  // The device of the same stage (and sp index) `delta` DP replicas away, wrapping around (the DP ring).
  int DpNeighbor(int device, int delta) const;
  // On the op graph's mesh (GraphParallel: dp counts dp * sp replicas, SP groups are `sp_group` consecutive
  // replicas): the device of the same stage `delta` replicas away inside its SP group, wrapping (the SP ring).
  int SpGroupNeighbor(int device, int sp_group, int delta) const;
  // The same, inside the device's Ulysses sub-group (`ulysses` consecutive SP ranks): the member `delta` places on,
  // wrapping within the sub-group (the all-to-all's pairwise-exchange peers).
  int SpUlyssesPeer(int device, int sp_group, int ulysses, int delta) const;
  // The device that runs pipeline chunk `chunk` (PipeRankOfChunk) of replica dp_idx.
  int DeviceOfChunk(int dp_idx, int chunk) const { return Device(dp_idx, PipeRankOfChunk(chunk, pp_)); }

  // Node of a rank / of a device's first GPU (see above for gpus_per_node <= 0).
  int NodeOfRank(int rank) const;
  int NodeOfDevice(int device) const;
  // Whether a whole DP group (the tp * sp * dp consecutive ranks of one stage) fits in one node, so that DP rings
  // stay on NVLink: FitsInNode(tp * sp * dp, gpus_per_node). False when gpus_per_node is unknown.
  bool DpGroupInNode() const { return FitsInNode(static_cast<int64_t>(tp_) * sp_ * dp_, gpus_per_node_); }
  // Members of one stage's DP group (its sp * dp replicas, tp ranks apart) that share a node: gpus_per_node / tp,
  // within [1, sp * dp]; 1 when gpus_per_node is unknown. Its sub-groups: HybridShardRanksPerNode below.
  int DpRanksPerNode() const;

  // The group along `dim` that holds `rank`; every rank is in exactly one group per dimension.
  RankGroup Group(MeshDim dim, int rank) const;
  // Every group along `dim` (a partition of the world), ordered by their first rank.
  std::vector<RankGroup> Groups(MeshDim dim) const;
  // "dp 1 / stage 2" (with "sp S / " when sp > 1): how a device is named in traces and messages.
  std::string DeviceName(int device) const;

 private:
  int tp_, sp_, dp_, pp_, gpus_per_node_;
};

}  // namespace mmtwin

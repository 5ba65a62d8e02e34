// SPDX-License-Identifier: Apache-2.0
// The device mesh (mesh.h).
#include "core/plan/mesh.h"

#include <algorithm>

namespace mmtwin {

const char* MeshDimName(MeshDim d) {
  switch (d) {
    case MeshDim::kTp:
      return "tp";
    case MeshDim::kSp:
      return "sp";
    case MeshDim::kDp:
      return "dp";
    case MeshDim::kPp:
      return "pp";
  }
  return "?";
}

DeviceMesh::DeviceMesh(const ParallelConfig& p, int gpus_per_node, int sp)
    : tp_(std::max(p.tp, 1)),
      sp_(std::max({sp, p.sp, 1})),
      dp_(std::max(p.dp, 1)),
      pp_(std::max(p.pp, 1)),
      gpus_per_node_(gpus_per_node) {}

int DeviceMesh::size(MeshDim d) const {
  switch (d) {
    case MeshDim::kTp:
      return tp_;
    case MeshDim::kSp:
      return sp_;
    case MeshDim::kDp:
      return dp_;
    case MeshDim::kPp:
      return pp_;
  }
  return 1;
}

int DeviceMesh::Rank(const MeshCoord& c) const { return c.tp + tp_ * (c.sp + sp_ * (c.dp + dp_ * c.pp)); }

MeshCoord DeviceMesh::Coord(int rank) const {
  MeshCoord c;
  c.tp = rank % tp_;
  rank /= tp_;
  c.sp = rank % sp_;
  rank /= sp_;
  c.dp = rank % dp_;
  c.pp = rank / dp_;
  return c;
}

int DeviceMesh::DeviceOfRank(int rank) const {
  const MeshCoord c = Coord(rank);
  return Device(c.dp, c.pp, c.sp);
}

int DeviceMesh::PipelineNeighbor(int device, int delta) const {
  const int pp = ((PpOfDevice(device) + delta) % pp_ + pp_) % pp_;
  return Device(DpOfDevice(device), pp, SpOfDevice(device));
}

int DeviceMesh::DpNeighbor(int device, int delta) const {
  const int dp = ((DpOfDevice(device) + delta) % dp_ + dp_) % dp_;
  return Device(dp, PpOfDevice(device), SpOfDevice(device));
}

int64_t NodesFor(int64_t ranks, int gpus_per_node) {
  const int64_t gpn = std::max(1, gpus_per_node);
  const int64_t r = std::max<int64_t>(0, ranks);
  return r / gpn + (r % gpn != 0);
}

bool FitsInNode(int64_t ranks, int gpus_per_node) { return gpus_per_node > 0 && ranks <= gpus_per_node; }

int DeviceMesh::NodeOfRank(int rank) const {
  return gpus_per_node_ > 0 ? rank / gpus_per_node_ : DeviceOfRank(rank);
}

int DeviceMesh::NodeOfDevice(int device) const {
  return gpus_per_node_ > 0 ? FirstRankOfDevice(device) / gpus_per_node_ : device;
}

RankGroup DeviceMesh::Group(MeshDim dim, int rank) const {
  RankGroup g;
  g.dim = dim;
  MeshCoord c = Coord(rank);
  int* coord = dim == MeshDim::kTp   ? &c.tp
               : dim == MeshDim::kSp ? &c.sp
               : dim == MeshDim::kDp ? &c.dp
                                     : &c.pp;
  const int n = size(dim);
  g.ranks.reserve(n);
  for (int i = 0; i < n; ++i) {
    *coord = i;
    g.ranks.push_back(Rank(c));
  }
  return g;
}

std::vector<RankGroup> DeviceMesh::Groups(MeshDim dim) const {
  std::vector<RankGroup> out;
  for (int r = 0; r < world_size(); ++r) {
    RankGroup g = Group(dim, r);
    if (g.ranks.front() == r) out.push_back(std::move(g));
  }
  return out;
}

std::string DeviceMesh::DeviceName(int device) const {
  std::string s = "dp " + std::to_string(DpOfDevice(device)) + " / ";
  if (sp_ > 1) s += "sp " + std::to_string(SpOfDevice(device)) + " / ";
  return s + "stage " + std::to_string(PpOfDevice(device));
}

int DeviceMesh::SpGroupNeighbor(int device, int sp_group, int delta) const {
  if (sp_group <= 1) return device;
  const int replica = device / pp_ / sp_ * sp_ + device / pp_ % sp_;  // dp_idx * sp + sp_idx
  const int s = replica % sp_group;
  const int next = replica - s + ((s + delta) % sp_group + sp_group) % sp_group;
  return Device(next / sp_, device % pp_, next % sp_);
}

int DeviceMesh::SpUlyssesPeer(int device, int sp_group, int ulysses, int delta) const {
  if (sp_group <= 1 || ulysses <= 1) return device;
  const int replica = device / pp_ / sp_ * sp_ + device / pp_ % sp_;
  const int s = replica % sp_group, u = s % ulysses;
  const int next = replica - u + ((u + delta) % ulysses + ulysses) % ulysses;
  return Device(next / sp_, device % pp_, next % sp_);
}

int DeviceMesh::DpRanksPerNode() const {
  if (gpus_per_node_ <= 0) return 1;
  return std::clamp(gpus_per_node_ / tp_, 1, sp_ * dp_);
}

HybridGroupsPerNode HybridShardRanksPerNode(int dp_per_node, int group) {
  const int m = std::max(1, dp_per_node), g = std::max(1, group);
  return {std::min(g, m), std::max(1, m / g)};
}

}  // namespace mmtwin

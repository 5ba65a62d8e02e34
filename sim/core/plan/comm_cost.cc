// SPDX-License-Identifier: Apache-2.0
// Communication costs (comm_cost.h).
#include "core/plan/comm_cost.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

#include "core/plan/collective.h"
#include "core/plan/mesh.h"
#include "core/util/csv.h"
#include "core/util/text.h"

namespace mmtwin {
namespace {

constexpr CommKind kKinds[] = {CommKind::kP2p,           CommKind::kDispatch,
                               CommKind::kAllReduce,     CommKind::kReduceScatterAllGather,
                               CommKind::kReduceScatter, CommKind::kWeightAllGather};

// Ring collectives with per-step latency `lat` and bandwidth `bw` (the expressions the op graph always used).
double RingUs(const CommCall& c, double lat, double bw) {
  const int d = std::max(c.group, 1);
  const double frac = d > 1 ? static_cast<double>(d - 1) / d : 0.0;
  switch (c.kind) {
    case CommKind::kWeightAllGather:
      return c.buckets * (d - 1) * lat + frac * c.bytes / bw * 1e6;
    default:
      break;
  }
  const double volume_us = frac * static_cast<double>(c.bytes) / bw * 1e6;
  const double pass_latency_us = (d - 1) * lat;
  if (c.kind == CommKind::kAllReduce) return 2 * volume_us + 2 * pass_latency_us;
  if (c.kind == CommKind::kReduceScatterAllGather) return 2 * (volume_us + pass_latency_us);
  return volume_us + pass_latency_us;
}

double TransferUs(int64_t bytes, double lat, double bw) {
  return lat + (bytes > 0 ? static_cast<double>(bytes) / bw * 1e6 : 0.0);
}

}  // namespace

const char* CommKindName(CommKind k) {
  switch (k) {
    case CommKind::kP2p:
      return "p2p";
    case CommKind::kDispatch:
      return "dispatch";
    case CommKind::kAllReduce:
      return "all_reduce";
    case CommKind::kReduceScatterAllGather:
      return "reduce_scatter_all_gather";
    case CommKind::kReduceScatter:
      return "reduce_scatter";
    case CommKind::kWeightAllGather:
      return "weight_all_gather";
  }
  return "?";
}

bool ParseCommKind(const std::string& name, CommKind& out) {
  for (CommKind k : kKinds)
    if (name == CommKindName(k)) {
      out = k;
      return true;
    }
  return false;
}

namespace {

// The ring shapes' split (RingUs) into latency and volume.
CommTime RingTime(const CommCall& c, double lat, double bw) {
  const int d = std::max(c.group, 1);
  CommTime t;
  t.us = RingUs(c, lat, bw);
  const double frac = d > 1 ? static_cast<double>(d - 1) / d : 0.0;
  const double volume_us = frac * static_cast<double>(c.bytes) / bw * 1e6;
  switch (c.kind) {
    case CommKind::kAllReduce:
    case CommKind::kReduceScatterAllGather:
      t.volume_us = 2 * volume_us;
      t.steps = 2 * int64_t{d - 1};
      break;
    case CommKind::kWeightAllGather:
      t.volume_us = volume_us;
      t.steps = std::max<int64_t>(c.buckets, 1) * (d - 1);
      break;
    default:
      t.volume_us = volume_us;
      t.steps = d - 1;
  }
  t.latency_us = t.us - t.volume_us;
  t.steps = std::max<int64_t>(t.steps, 1);
  return t;
}

// NCCL's choice for a DP collective call (collective.h), its parts summed.
CommTime NcclTime(const CommCall& c, const CommSpec& comm) {
  const CollectiveLinks links{comm.nvlink_bytes_per_s, comm.nic_bytes_per_s, comm.collectives};
  const int d = std::max(c.group, 1);
  const int per_node = c.ranks_per_node > 0         ? c.ranks_per_node
                       : c.in_node                  ? d
                       : comm.dp_ranks_per_node > 0 ? std::min(comm.dp_ranks_per_node, d)
                                                    : 1;
  const CollectiveGroup group{d, per_node};
  CommTime t;
  auto add = [&](const CollectiveTime& x, double times = 1.0) {
    t.latency_us += times * x.latency_us;
    t.volume_us += times * x.volume_us;
    t.steps += static_cast<int64_t>(times) * x.steps;
  };
  t.steps = 0;
  switch (c.kind) {
    case CommKind::kAllReduce:
      add(NcclCollective(CollectiveOp::kAllReduce, c.bytes, group, links));
      break;
    case CommKind::kReduceScatterAllGather:
      add(NcclCollective(CollectiveOp::kReduceScatter, c.bytes, group, links));
      add(NcclCollective(CollectiveOp::kAllGather, c.bytes, group, links));
      break;
    case CommKind::kReduceScatter:
      add(NcclCollective(CollectiveOp::kReduceScatter, c.bytes, group, links));
      if (c.replicas > 1) {
        const int rep_per_node = c.replica_ranks_per_node > 0 ? c.replica_ranks_per_node : 1;
        add(NcclCollective(CollectiveOp::kAllReduce, c.bytes / d, {c.replicas, rep_per_node}, links));
      }
      break;
    case CommKind::kWeightAllGather: {
      const int64_t b = std::max<int64_t>(c.buckets, 1);
      // `b` calls of bytes / b: the latency b times, the volume once.
      const CollectiveTime one = NcclCollective(CollectiveOp::kAllGather, c.bytes / b, group, links);
      const CollectiveTime all = NcclCollective(CollectiveOp::kAllGather, c.bytes, group, links);
      t.latency_us += static_cast<double>(b) * one.latency_us;
      t.volume_us += all.volume_us;
      t.steps += b * one.steps;
      break;
    }
    default:
      break;
  }
  t.steps = std::max<int64_t>(t.steps, 1);
  t.us = t.latency_us + t.volume_us;
  return t;
}

// A gradient collective whose reducing phase moves `scale` bytes per byte of c.bytes (gradients reduced in
// fp32, CommSpec::grad_reduce_bytes_scale): the all-reduce and the reduce-scatter carry the scaled bytes;
// ZeRO-1/2's reduce-scatter + all-gather becomes a reduce-scatter of the scaled bytes and an all-gather of the
// 16-bit weights, each priced by `price` (the same shapes, so scale 1 gives the unsplit call's time). Other
// kinds, or scale 1: nullopt.
template <typename Price>
std::optional<CommTime> ScaledGradReduce(const CommCall& c, double scale, const Price& price) {
  if (scale == 1.0) return std::nullopt;
  const auto scaled = [&](int64_t b) {
    return static_cast<int64_t>(std::llround(static_cast<double>(b) * scale));
  };
  switch (c.kind) {
    case CommKind::kAllReduce:
    case CommKind::kReduceScatter: {
      CommCall r = c;
      r.bytes = scaled(c.bytes);
      return price(r);
    }
    case CommKind::kReduceScatterAllGather: {
      CommCall rs = c, ag = c;
      rs.kind = CommKind::kReduceScatter;
      rs.bytes = scaled(c.bytes);
      ag.kind = CommKind::kWeightAllGather;
      ag.buckets = 1;
      CommTime t = price(rs);
      const CommTime a = price(ag);
      t.latency_us += a.latency_us;
      t.volume_us += a.volume_us;
      t.us += a.us;
      t.steps += a.steps;
      return t;
    }
    default:
      return std::nullopt;
  }
}

// AnalyticCommCost::Time without the fp32 gradient scale.
CommTime AnalyticTime(const CommSpec& comm, const CommCall& c) {
  CommTime t;
  switch (c.kind) {
    case CommKind::kP2p:
      // Each hop on its own link when the layout is known (CommSpec::gpus_per_node); else the layout's one
      // pipeline link (p2p_*).
      if (comm.gpus_per_node > 0 && comm.nvlink_bytes_per_s > 0 && comm.nic_bytes_per_s > 0)
        t.us = c.in_node ? TransferUs(c.bytes, comm.nvlink_latency_us, comm.nvlink_bytes_per_s)
                         : TransferUs(c.bytes, comm.nic_latency_us, comm.nic_bytes_per_s);
      else
        t.us = TransferUs(c.bytes, comm.p2p_latency_us, comm.p2p_bytes_per_s);
      t.volume_us = t.us;
      return t;
    case CommKind::kDispatch:
      t.us = c.in_node ? comm.nvlink_latency_us + static_cast<double>(c.bytes) / comm.nvlink_bytes_per_s * 1e6
                       : comm.nic_latency_us + static_cast<double>(c.bytes) / comm.nic_bytes_per_s * 1e6;
      t.volume_us = t.us;
      return t;
    default:
      break;
  }
  CommCall call = c;
  // Hybrid sharding (CommSpec::dp_shard_group): ZeRO-3's collectives over the shard group, the gradient
  // reduce-scatter followed by the replicas' all-reduce of its shard.
  const int g = comm.dp_shard_group;
  if (g > 1 && call.replicas <= 1 && call.group > g && call.group % g == 0 &&
      (call.kind == CommKind::kReduceScatter || call.kind == CommKind::kWeightAllGather)) {
    const int members_per_node =
        comm.dp_ranks_per_node > 0 ? comm.dp_ranks_per_node : (call.in_node ? call.group : 1);
    call.replicas = call.kind == CommKind::kReduceScatter ? call.group / g : 1;
    call.group = g;
    const HybridGroupsPerNode per_node = HybridShardRanksPerNode(members_per_node, g);
    call.ranks_per_node = per_node.shard;
    call.replica_ranks_per_node = per_node.replica;
  }
  if (comm.collectives.model == "nccl" && call.group > 1) return NcclTime(call, comm);
  t = RingTime(call, comm.dp_latency_us, comm.dp_bytes_per_s);
  if (call.kind == CommKind::kReduceScatter && call.replicas > 1) {
    const CommTime ar =
        RingTime({CommKind::kAllReduce, call.bytes / std::max(call.group, 1), call.replicas, call.in_node},
                 comm.dp_latency_us, comm.dp_bytes_per_s);
    t.latency_us += ar.latency_us;
    t.volume_us += ar.volume_us;
    t.us += ar.us;
    t.steps += ar.steps;
  }
  return t;
}

}  // namespace

CommTime AnalyticCommCost::Time(const CommCall& c) const {
  const auto price = [this](const CommCall& x) { return AnalyticTime(comm_, x); };
  if (std::optional<CommTime> t = ScaledGradReduce(c, comm_.grad_reduce_bytes_scale, price)) return *t;
  return price(c);
}

const LinkCost* TableCommCost::Find(CommKind kind, bool in_node) const {
  auto it = table_.find({kind, in_node});
  return it == table_.end() ? nullptr : &it->second;
}

CommTime TableCommCost::Time(const CommCall& c) const {
  const LinkCost* row = Find(c.kind, c.in_node);
  if (!row) return fallback_.Time(c);
  if (c.kind == CommKind::kP2p || c.kind == CommKind::kDispatch) {
    CommTime t;
    t.us = t.volume_us = TransferUs(c.bytes, row->latency_us, row->bytes_per_s);
    return t;
  }
  const auto price = [row](const CommCall& x) { return RingTime(x, row->latency_us, row->bytes_per_s); };
  if (std::optional<CommTime> t = ScaledGradReduce(c, fallback_.comm().grad_reduce_bytes_scale, price))
    return *t;
  return price(c);
}

Result<TableCommCost> TableCommCost::Parse(const std::string& text, const std::string& name,
                                           AnalyticCommCost fallback) {
  TableCommCost t(std::move(fallback));
  std::istringstream in(text);
  std::string line;
  bool header = false;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (!header) {
      if (line != "kind,link,latency_us,bytes_per_s")
        return Error::At(name, n, "", "expected the header kind,link,latency_us,bytes_per_s");
      header = true;
      continue;
    }
    if (f.size() != 4) return Error::At(name, n, "", "expected 4 fields, got " + std::to_string(f.size()));
    CommKind kind;
    if (!ParseCommKind(f[0], kind))
      return Error::At(
          name, n, "kind",
          "'" + Abbreviate(f[0]) +
              "' is not one of p2p, dispatch, all_reduce, reduce_scatter_all_gather, reduce_scatter, "
              "weight_all_gather");
    if (f[1] != "nvlink" && f[1] != "nic")
      return Error::At(name, n, "link", "'" + Abbreviate(f[1]) + "' is not nvlink or nic");
    LinkCost cost;
    if (!ParseDouble(f[2], cost.latency_us) || !(cost.latency_us >= 0) || !std::isfinite(cost.latency_us))
      return Error::At(name, n, "latency_us", "'" + Abbreviate(f[2]) + "' is not a number >= 0");
    if (!ParseDouble(f[3], cost.bytes_per_s) || !(cost.bytes_per_s > 0) || !std::isfinite(cost.bytes_per_s))
      return Error::At(name, n, "bytes_per_s", "'" + Abbreviate(f[3]) + "' is not a number > 0");
    if (t.Find(kind, f[1] == "nvlink"))
      return Error::At(name, n, "", "duplicate row for " + f[0] + "," + f[1]);
    t.Set(kind, f[1] == "nvlink", cost);
  }
  if (!header) return Error::At(name, 1, "", "expected the header kind,link,latency_us,bytes_per_s");
  return t;
}

Result<TableCommCost> TableCommCost::Load(const std::string& path, AnalyticCommCost fallback) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return Parse(text, path, std::move(fallback));
}

std::string TableCommCost::Format() const {
  std::string out = "# mmtwin-comm-costs v1\nkind,link,latency_us,bytes_per_s\n";
  char buf[96];
  for (const auto& [key, cost] : table_) {
    std::snprintf(buf, sizeof buf, ",%.17g,%.17g\n", cost.latency_us, cost.bytes_per_s);
    out += std::string(CommKindName(key.first)) + (key.second ? ",nvlink" : ",nic") + buf;
  }
  return out;
}

}  // namespace mmtwin

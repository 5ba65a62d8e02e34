// SPDX-License-Identifier: Apache-2.0
// The communication-cost interface: how long one transfer or collective of the op graph takes, by kind, bytes and
// group. The op graph prices every P2P send, data-dispatch transfer and DP collective through it. Two
// implementations:
//   AnalyticCommCost  the link model of the layout (CommSpec from LayoutComm): latency + bytes / bandwidth per
//                     transfer; collectives by the cluster's collective model (CommSpec::collectives): "ring",
//                     flat rings at the DP link's speed (the formulas below), or "nccl", NCCL's algorithms
//                     and protocols by size and group shape (core/plan/collective.h);
//   TableCommCost     a measured table (e.g. fitted from the backend's runs): per (kind, link class) a latency and
//                     a bandwidth, used in the same transfer and ring shapes; kinds or links without a row fall
//                     back to the analytic model it was built from.
//
//   auto table = std::make_shared<TableCommCost>(AnalyticCommCost(run.Comm()));
//   table->Set(CommKind::kAllReduce, /*in_node=*/false, {.latency_us = 12.0, .bytes_per_s = 18e9});
//   MMTWIN_ASSIGN_OR_RETURN(OpGraph g, BuildIterationGraph(pc, schedule, costs, statics, comm, table));
//
// Table CSV ('#' comment lines allowed):
//   # mmtwin-comm-costs v1
//   kind,link,latency_us,bytes_per_s
//   all_reduce,nic,12.0,1.8e10
// kind: p2p, dispatch, all_reduce, reduce_scatter_all_gather, reduce_scatter, weight_all_gather; link: nvlink |
// nic. Times in microseconds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "core/plan/plan.h"
#include "core/util/status.h"

namespace mmtwin {

enum class CommKind : uint8_t {
  kP2p,                     // activation / gradient send between pipeline neighbours
  kDispatch,                // one transfer of a data-dispatch all-to-all
  kAllReduce,               // ZeRO-0 gradient bucket: ring all-reduce
  kReduceScatterAllGather,  // ZeRO-1/2 gradient bucket: ring reduce-scatter + all-gather
  kReduceScatter,           // ZeRO-3 gradient bucket: ring reduce-scatter
  kWeightAllGather,         // ZeRO-3 weights of a chunk: ring all-gather over `buckets` buckets
};
// "p2p", "dispatch", "all_reduce", "reduce_scatter_all_gather", "reduce_scatter", "weight_all_gather".
const char* CommKindName(CommKind k);
bool ParseCommKind(const std::string& name, CommKind& out);

// One priced communication: `bytes` per rank (a collective's buffer, a send's payload), the ring's `group` size,
// whether every link it crosses is inside a node (NVLink) and, for a chunk's weight all-gather, its bucket count.
// Hybrid sharding (ZeRO-3 within shard groups, replicated across them: parallel.zero3_shard_group): `group` is
// the shard group and `replicas` > 1 the number of groups; a ZeRO-3 gradient reduce-scatter is then followed by
// an all-reduce of its 1/group shard across the replicas. ranks_per_node / replica_ranks_per_node: members of
// the group / of a replica group (members `group` apart) that share a node, for the "nccl" model (0: the whole
// group if in_node, else CommSpec::dp_ranks_per_node, else 1).
struct CommCall {
  CommKind kind = CommKind::kP2p;
  int64_t bytes = 0;
  int group = 2;
  bool in_node = true;
  int64_t buckets = 1;
  int replicas = 1;
  int ranks_per_node = 0;
  int replica_ranks_per_node = 0;
};

// A collective's time split for the SimGrid replay: us = latency_us + volume_us, run as `steps` sequential ring
// steps (>= 1). A transfer: steps 1.
struct CommTime {
  double latency_us = 0;
  double volume_us = 0;
  double us = 0;
  int64_t steps = 1;
};

class CommCostModel {
 public:
  virtual ~CommCostModel() = default;
  virtual std::string name() const = 0;
  // Duration in microseconds (>= 0).
  virtual double Us(const CommCall& call) const = 0;
  // The same split into latency and volume, with the sequential steps it takes (the SimGrid engine's rings);
  // by default all volume, one step.
  virtual CommTime Time(const CommCall& call) const {
    CommTime t;
    t.us = t.volume_us = Us(call);
    return t;
  }
};

class AnalyticCommCost : public CommCostModel {
 public:
  explicit AnalyticCommCost(CommSpec comm) : comm_(std::move(comm)) {}
  std::string name() const override { return "analytic"; }
  // p2p: the layout's pipeline link (CommSpec::p2p_*; in_node is implied by the layout); dispatch: NVLink or the
  // GPU's NIC share by in_node; rings over the DP link (CommSpec::dp_*), d = group, frac = (d-1)/d:
  //   all_reduce 2 frac b / bw + 2 (d-1) lat; reduce_scatter_all_gather 2 (frac b / bw + (d-1) lat);
  //   reduce_scatter frac b / bw + (d-1) lat; weight_all_gather buckets (d-1) lat + frac b / bw.
  // With the "nccl" collective model (core/plan/collective.h, NCCL's choice per call): all_reduce one all-reduce;
  // reduce_scatter_all_gather a reduce-scatter and an all-gather; reduce_scatter a reduce-scatter (+ the
  // replicas' all-reduce of its shard, bytes / group); weight_all_gather `buckets` all-gathers of bytes / buckets.
  // Gradients reduced in fp32 (CommSpec::grad_reduce_bytes_scale 2): all_reduce and reduce_scatter move the
  // scaled bytes; reduce_scatter_all_gather is a reduce-scatter of the scaled bytes plus an all-gather of
  // `bytes` (ring: volume (scale + 1) frac b / bw, latency unchanged). TableCommCost scales its rows the same way.
  double Us(const CommCall& call) const override { return Time(call).us; }
  CommTime Time(const CommCall& call) const override;
  const CommSpec& comm() const { return comm_; }

 private:
  CommSpec comm_;
};

struct LinkCost {
  double latency_us = 0;
  double bytes_per_s = 0;
};

class TableCommCost : public CommCostModel {
 public:
  explicit TableCommCost(AnalyticCommCost fallback) : fallback_(std::move(fallback)) {}
  static Result<TableCommCost> Parse(const std::string& csv_text, const std::string& name,
                                     AnalyticCommCost fallback);
  static Result<TableCommCost> Load(const std::string& path, AnalyticCommCost fallback);

  std::string name() const override { return "table"; }
  // The analytic shapes with the row's latency and bandwidth for (kind, link); the fallback without a row.
  double Us(const CommCall& call) const override { return Time(call).us; }
  CommTime Time(const CommCall& call) const override;
  void Set(CommKind kind, bool in_node, LinkCost cost) { table_[{kind, in_node}] = cost; }
  const LinkCost* Find(CommKind kind, bool in_node) const;
  // CSV text in the format above (rows sorted).
  std::string Format() const;

 private:
  AnalyticCommCost fallback_;
  std::map<std::pair<CommKind, bool>, LinkCost> table_;
};

}  // namespace mmtwin

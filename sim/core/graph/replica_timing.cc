// SPDX-License-Identifier: Apache-2.0
// Timing one DP replica of an op graph alone, and when each replica's compute ends (ReplicaAloneTimeUs,
// ReplicaComputeEndUs; op_graph.h): bmp's candidate bounds.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/graph/op_graph.h"
#include "core/graph/op_graph_internal.h"
#include "core/plan/mesh.h"

namespace mmtwin {

using namespace graph_detail;

namespace {

// The ops of every DP replica in graph order (OpGraph::Source::replica_begin / replica_ops), made once per graph;
// replica_closed says whether each replica's ops depend (local_deps, lane order) on its own ops only.
void EnsureReplicaOps(OpGraph& g) {
  OpGraph::Source& src = g.source;
  const int D = g.parallel.dp, n = g.num_ops();
  if (src.replica_begin.size() == static_cast<size_t>(D) + 1) return;
  const DeviceMesh mesh(g.parallel);
  std::vector<int32_t> replica(n, -1);
  src.replica_begin.assign(D + 1, 0);
  for (int i = 0; i < n; ++i)
    if (g.ops[i].device >= 0) {
      replica[i] = mesh.DpOfDevice(g.ops[i].device);
      ++src.replica_begin[replica[i] + 1];
    }
  for (int d = 0; d < D; ++d) src.replica_begin[d + 1] += src.replica_begin[d];
  src.replica_ops.resize(src.replica_begin[D]);
  src.last_compute_op.assign(g.num_devices, -1);
  std::vector<int32_t> fill(src.replica_begin.begin(), src.replica_begin.end() - 1);
  src.replica_closed = true;
  for (int i = 0; i < n; ++i) {
    if (replica[i] < 0) continue;
    src.replica_ops[fill[replica[i]]++] = i;
    if (g.ops[i].lane == Lane::kCompute && g.ops[i].device < g.num_devices)
      src.last_compute_op[g.ops[i].device] = i;
    if (g.lane_prev[i] >= 0 && replica[g.lane_prev[i]] != replica[i]) src.replica_closed = false;
    for (int32_t j = g.dep_begin[i]; j < g.dep_begin[i + 1]; ++j)
      if (replica[g.local_deps[j]] != replica[i]) src.replica_closed = false;
  }
}

}  // namespace

std::optional<double> ReplicaAloneTimeUs(OpGraph* graph, int replica, std::span<const ChunkTimes> times,
                                         const std::vector<ChunkStatic>& statics,
                                         std::vector<double>* finish_us) {
  OpGraph& g = *graph;
  const ParallelConfig& pc = g.parallel;
  const int D = pc.dp, C = pc.chunks(), M = pc.micro_batches;
  const int n = g.num_ops();
  // RepriceDurations' conditions (there for the whole iteration, here for this replica's times).
  if (replica < 0 || replica >= D || times.size() != static_cast<size_t>(M) * C || C < 1 || g.sp_group > 1 ||
      !g.dispatch_begin.empty() || n == 0 || g.encoder)
    return std::nullopt;
  if (IsFsdp(pc)) return std::nullopt;
  if (!TimesFitShape(g, times)) return std::nullopt;
  std::vector<std::vector<BucketGroup>> groups;
  const bool new_statics = D > 1 && statics != g.source.statics;
  std::string error;
  if (new_statics && !StaticsFitInPlace(g, statics, &groups, &error)) return std::nullopt;
  const DeviceMesh mesh(pc, g.source.comm.gpus_per_node);
  EnsureRecipe(g, mesh);
  if (g.source.recipe_general > 0) return std::nullopt;
  EnsureReplicaOps(g);
  if (!g.source.replica_closed) return std::nullopt;

  const bool dp_in_node = DpInNode(pc, g.source.comm);
  const CommCostModel& comm_cost = *g.source.comm_cost;
  const OpGraph::Source::Recipe* recipe = g.source.recipe.data();
  const int32_t* cost_index = g.source.cost_index.data();
  const int32_t* lp = g.lane_prev.data();
  const int32_t* db = g.dep_begin.data();
  const int32_t* ldeps = g.local_deps.data();
  const int64_t base = static_cast<int64_t>(replica) * M * C, count = static_cast<int64_t>(M) * C;
  finish_us->resize(n);
  double* finish = finish_us->data();
  double T = 0;
  for (int32_t k = g.source.replica_begin[replica]; k < g.source.replica_begin[replica + 1]; ++k) {
    const int32_t i = g.source.replica_ops[k];
    const OpGraph::Source::Recipe r = recipe[i];
    double dur = g.duration_us[i];  // ops without a cost entry keep theirs (as RepriceDurations leaves them)
    if (r.code != kRecipeNone) {
      const int64_t x = cost_index[i] - base;
      if (x < 0 || x >= count || !RecipeUs(r, times[x], comm_cost, &dur)) return std::nullopt;
    } else if (new_statics) {  // the DP ops' durations for the new statics, as ApplyStatics gives them
      const Op& op = g.ops[i];
      if (op.kind == OpKind::kDpCollective) {
        dur = groups[op.chunk][g.ops[g.Deps(i)[0]].bucket].duration_us;
      } else if (op.kind == OpKind::kDpAllGather) {
        const ChunkStatic& st = statics[op.chunk];
        dur = comm_cost.Us({CommKind::kWeightAllGather, st.weight_bytes_per_gpu(), D, dp_in_node,
                            NumWeightBuckets(st, g.source.comm)});
      }
    }
    double s = lp[i] >= 0 ? finish[lp[i]] : 0.0;
    for (int32_t j = db[i], e = db[i + 1]; j < e; ++j) s = std::max(s, finish[ldeps[j]]);
    finish[i] = s + dur;
    T = std::max(T, finish[i]);
  }
  return T;
}

void ReplicaComputeEndUs(OpGraph* graph, const std::vector<double>& finish_us, std::vector<double>* out) {
  OpGraph& g = *graph;
  EnsureReplicaOps(g);
  const DeviceMesh mesh(g.parallel);
  out->assign(g.parallel.dp, 0.0);
  if (finish_us.size() != static_cast<size_t>(g.num_ops())) return;
  for (int dev = 0; dev < g.num_devices; ++dev) {
    const int32_t i = g.source.last_compute_op[dev];
    if (i < 0) continue;
    double& e = (*out)[mesh.DpOfDevice(dev)];
    e = std::max(e, finish_us[i]);
  }
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Internal to mmtwin_simgrid: the in-process SimGrid replay of one OpGraph (platform + activities + run), and
// the platform layout rules it shares with the public API. Includes no SimGrid header; replay.cc does.
//
// ReplayInProcess uses SimGrid's singleton engine: call it at most once per process (simgrid_engine.cc calls
// it in a forked child, see isolate.h). start_us / finish_us have graph.num_ops() entries; times in
// microseconds.
//
//   std::vector<double> s(g.num_ops()), f(g.num_ops());
//   MMTWIN_RETURN_IF_ERROR(ReplayInProcess(cluster, options, g, s.data(), f.data(), &stats));
#pragma once

#include "core/cluster/cluster.h"
#include "core/graph/op_graph.h"
#include "core/util/status.h"
#include "engine/simgrid_engine.h"

namespace mmtwin {

// Checks that the cluster can hold the graph's layout and that the graph was priced with PlatformComm().
Status CheckPlatform(const ClusterSpec& cluster, const OpGraph& graph);

// Node of device (dp_idx * pp + pp_idx): the node of its TP group's first GPU in Megatron order.
int NodeOfDevice(const ClusterSpec& cluster, const ParallelConfig& parallel, int device);

Status ReplayInProcess(const ClusterSpec& cluster, const SimGridOptions& options, const OpGraph& graph,
                       double* start_us, double* finish_us, SimGridReplayStats* stats);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Link calibration: what measured runs say about the links, and a cluster file with the fitted figures.
//
// Input: backend RUNDIRs with ops.csv (or pingpong.csv, below) (every measured op; core/records/records_codec.h) and scenario.yaml (its
// cluster and parallel layout place every op-graph device on a node: DeviceMesh).
//   P2P: each activation or gradient send of a micro-batch-chunk is paired with its receive (same iteration, DP
//        replica and micro-batch, the next chunk for activations, the previous for gradients; equal bytes). Pairs
//        whose receive was already waiting when the send was posted time the transfer, from the post to the
//        receive's end (packing, the wire and unpacking; other pairs are left out, their bytes may have arrived
//        before the receive began): transfer_us = latency_us + bytes / bytes_per_s, fitted per link class with the robust
//        non-negative fit (fit.h): `intra-node` (both devices on one node: the cluster's nvlink_* figures) and
//        `inter-node` (nic_*). (A send's own duration is only its post on the sender, not the transfer.)
//   Ping-pong: a RUNDIR of `mmtwin-train launch --pingpong` holds pingpong.csv (core/records/pingpong.h) instead
//        of ops.csv: each round trip of rank 0 with a peer is two transfers of the message, transfer_us =
//        round_trip_us / 2, in the class of the two ranks' nodes. Message sizes span 4 KiB to 64 MiB: the run
//        that pins latency and bandwidth apart where a training run's few activation sizes cannot.
//        When a class has at least min_samples ping-pong transfers, they alone fit it.
//   DP:  a gradient collective's measured duration includes the wait for the slowest replica, so only the
//        fastest 10% of each run's dp_collective ops are used, as a check: the bus bandwidth a ring all-reduce
//        of that size implies, 2 (n - 1) / n · bytes / duration (n = dp).
// A class with fewer than `min_samples` paired transfers is left unfitted (its figures stay the base cluster's).
//
//   MMTWIN_ASSIGN_OR_RETURN(LinkCalibration l, CalibrateLinks({"runs/a", "runs/b"}));
//   WriteFileAtomic("cpu-calibrated.yaml", FormatCalibratedCluster(base, l));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "core/cluster/cluster.h"
#include "core/util/status.h"

namespace mmtwin {

struct LinkClassFit {
  std::string link;  // "intra-node" or "inter-node"
  LinearFit fit;     // coefficients: latency_us, us per byte
  double latency_us = 0, bytes_per_s = 0;
};

struct LinkCalibration {
  std::vector<std::string> runs;
  std::string cluster;            // the runs' cluster (name or path, as their scenarios give it)
  std::vector<LinkClassFit> p2p;  // fitted classes only, intra-node first
  double dp_bus_bytes_per_s = 0;  // 0 when no run had dp > 1
  int64_t dp_samples = 0;         // the collectives kept (the fastest 10% of each run's)
  int64_t dp_collectives = 0;     // every DP collective seen
  int64_t pingpong_samples = 0;   // round trips read from ping-pong runs
};

Result<LinkCalibration> CalibrateLinks(const std::vector<std::string>& rundirs, int64_t min_samples = 8);

// `base` with the fitted classes' bandwidth and latency (intra-node -> nvlink_*, inter-node -> nic_* per NIC),
// as a cluster YAML file (traces/clusters/README.md) whose description and reference say where the figures came
// from. ParseCluster reads it back.
std::string FormatCalibratedCluster(const ClusterSpec& base, const LinkCalibration& links);
// A human-readable table (what `mmtwin calibrate --cluster-out` prints).
std::string FormatLinkTable(const LinkCalibration& links);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// Chakra execution traces (MLCommons Chakra: the format Chakra's feeder and ASTRA-sim read; issue 32 item 4): one
// iteration's op graph (core/graph/op_graph.h, as Simulate builds and times it: `mmtwin export-chakra` applies the
// overlap slowdown first) as one trace per rank, such traces read back, a replay of them with Chakra's semantics that
// gives the step time, and their op records for a run folder (`mmtwin import-chakra`, then `mmtwin replay`).
//
// Ranks. One per op-graph device, i.e. one tensor-parallel group (DeviceMesh::Device = (replica, stage), rank =
// replica * pp + stage): mmtwin prices a TP group's collectives inside its compute passes, so a rank stands for
// the whole TP group and its TP collectives are compute nodes of their priced duration.
//
// Files (WriteChakra). DIR/PREFIX.RANK.et in Chakra's framing (its protoio: every message preceded by its size as a
// varint32), the schema sim/interop/et_def.proto (Chakra's, verbatim): one GlobalMetadata (version kChakraVersion;
// attributes schema, mmtwin_ranks, mmtwin_pp, mmtwin_source), then the rank's nodes, ids 0..n-1 in dependency
// order. DIR/comm_group.json: {"PG": [ranks...]} for every process group a collective names (attribute pg_name),
// as ASTRA-sim's --comm-group-configuration reads it. The folder is written as a unit (atomic_dir.h).
//
// Nodes, from the graph's ops (barriers have no node: a collective's own synchronisation stands for them):
//   forward, recompute, backward, backward_weight, tp_collective    COMP_NODE (is_cpu_op false)
//   p2p_send_activation / p2p_send_gradient   COMM_SEND_NODE on the sender (comm_dst, comm_size = bytes, comm_tag)
//                                             and COMM_RECV_NODE on the receiver (comm_src, comm_size, comm_tag), a
//                                             data dependency of the op that waits for the send
//   dp_collective       COMM_COLL_NODE, comm_type ALL_REDUCE (ZeRO 0-2: all-reduce, or reduce-scatter + all-gather
//                       of the same volume) or REDUCE_SCATTER (ZeRO-3), comm_size = its buckets' bytes
//   dp_all_gather       COMM_COLL_NODE ALL_GATHER (ZeRO-3 weights)
//   sp_collective, dispatch   COMM_COLL_NODE ALL_TO_ALL
// Process groups: a collective's group is the ring its ops' peers form (DP ring, SP ring), or, without peers
// (dispatch), the ranks holding that kind of op. Every node has duration_micros (rounded to whole microseconds,
// Chakra's unit) and the attribute mmtwin_duration_us (the exact priced duration, a double), plus mmtwin_kind,
// mmtwin_micro_batch, mmtwin_chunk.
// Dependencies: data_deps = the op's dependencies on its own rank (a barrier replaced by what it waits for);
// ctrl_deps = the previous node of the same lane (compute, p2p forward, p2p backward, dp, dispatch: mmtwin runs a
// lane's ops one at a time, in order). A dependency on another rank's op that is not a send, and not a member's
// op the collective's group synchronises, becomes a zero-byte COMM_SEND / COMM_RECV pair (name "sync").
//
// Replay (ReplayChakra), Chakra's semantics as mmtwin's evaluator times ops: a node starts when its data and
// control dependencies have ended and lasts its duration; a RECV ends when its SEND ends; the k-th collective of a
// group on each member starts at max(that member's control dependencies, the latest data readiness over all
// members' k-th collective of the group) — the members synchronise their data, as the graph's barrier does. This is
// the analytic evaluator's longest path exactly (tests: pipelines, ZeRO-3, FSDP, 2D sequence parallelism) except
// where mmtwin prices an all-to-all per rank without a group barrier (the data dispatch of post-balancing; SP
// all-to-alls of members that are not ready together): the replay synchronises those, so it can only end later
// (scenarios/contention.yaml: 8,647.93 ms against 8,647.66 ms).
//
//   MMTWIN_ASSIGN_OR_RETURN(ChakraTrace t, ChakraFromGraph(graph, "scenario internvl-6b-20b, iteration 0"));
//   MMTWIN_RETURN_IF_ERROR(WriteChakra(t, "out/chakra", "mmtwin"));
//   MMTWIN_ASSIGN_OR_RETURN(ChakraTrace back, ReadChakra("out/chakra", "mmtwin"));
//   MMTWIN_ASSIGN_OR_RETURN(ChakraReplay r, ReplayChakra(back));   // r.step_us
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/op_graph.h"
#include "core/records/records.h"
#include "core/util/status.h"

namespace mmtwin {

inline constexpr char kChakraVersion[] = "0.0.4";
inline constexpr char kChakraSchema[] = "1.0.2-chakra.1.0.0";

// Chakra's NodeType and CollectiveCommType values (et_def.proto).
enum class ChakraNodeType : int { kComp = 4, kSend = 5, kRecv = 6, kColl = 7 };
enum class ChakraCollective : int { kAllReduce = 0, kAllGather = 2, kAllToAll = 6, kReduceScatter = 7 };

struct ChakraNode {
  uint64_t id = 0;
  std::string name;
  ChakraNodeType type = ChakraNodeType::kComp;
  std::vector<uint64_t> data_deps, ctrl_deps;
  uint64_t duration_micros = 0;
  double duration_us = 0;  // attribute mmtwin_duration_us
  // Communication (attributes; as Chakra's feeder reads them): comm_type and comm_size (int64), comm_src /
  // comm_dst / comm_tag (int32), pg_name (string).
  int comm_type = 0;
  int64_t comm_size = 0;
  int32_t comm_src = -1, comm_dst = -1, comm_tag = -1;
  std::string pg_name;
  std::string
      kind;  // mmtwin_kind: the op kind (OpKindName), "p2p_recv" for a receive, "sync" for a dependency's
             // zero-byte pair
  // mmtwin_micro_batch, mmtwin_chunk, and mmtwin_lane / mmtwin_pass / mmtwin_bucket / mmtwin_peer (the Op's lane,
  // pass, bucket and peer as their enum values): what the op records need to come back (ChakraOpRecords).
  int32_t micro_batch = -1, chunk = 0;
  int32_t lane = 0, pass = 0, bucket = 0, peer = -1;
};

struct ChakraRank {
  std::vector<ChakraNode> nodes;  // ids 0..n-1, every dependency on a smaller id
};

struct ChakraTrace {
  std::vector<ChakraRank> ranks;
  std::map<std::string, std::vector<int>> groups;  // pg_name -> its ranks (comm_group.json)
  int pp = 1;
  std::string source;      // what the trace is of (GlobalMetadata attribute mmtwin_source)
  int64_t iteration = -1;  // the epoch iteration it is (mmtwin_iteration); -1 = not known
};

// The graph as per-rank traces (see above). Errors: a graph whose collectives' groups cannot be found (a peer
// outside the graph, a rank in two groups of one kind).
Result<ChakraTrace> ChakraFromGraph(const OpGraph& graph, const std::string& source);

// Writes DIR/PREFIX.RANK.et and DIR/comm_group.json as one unit. Errors: an unwritable folder.
Status WriteChakra(const ChakraTrace& trace, const std::string& dir, const std::string& prefix);
// Reads DIR/PREFIX.0.et, .1.et, ... (until the first missing rank) and DIR/comm_group.json. Errors name the file
// and, for a bad node, its position: no rank 0, a message that does not parse, a node type or dependency mmtwin
// does not write, comm_group.json that is not {"PG": [ranks]}.
Result<ChakraTrace> ReadChakra(const std::string& dir, const std::string& prefix);

struct ChakraReplay {
  double step_us = 0;                                // the latest node end over all ranks
  std::vector<double> rank_end_us;                   // per rank
  std::vector<std::vector<double>> start_us;         // per rank, per node
  int64_t nodes = 0, collectives = 0, messages = 0;  // collective instances; send/recv pairs
};
// Replays the traces (see above), on mmtwin_duration_us (the exact durations) or, with `whole_micros`, on
// duration_micros as another Chakra consumer would. Errors: a RECV without its SEND (comm_src, comm_tag), a
// collective whose group's members issue different numbers of collectives on it, a group not in `groups`, a
// dependency cycle or deadlock (naming a node that never started).
Result<ChakraReplay> ReplayChakra(const ChakraTrace& trace, bool whole_micros = false);

// A trace mmtwin wrote, back as the op records of one iteration (source measured, `iteration` their epoch index):
// one per node that stands for an op (not the receives and zero-byte messages the export adds), its start from
// ReplayChakra; what `mmtwin import-chakra` writes as a run folder's ops.csv for `mmtwin replay`. Errors: a node
// without a known mmtwin_kind (naming it: a trace another tool wrote has none), ReplayChakra's.
Result<std::vector<OpRecord>> ChakraOpRecords(const ChakraTrace& trace, int64_t iteration);

// Whether this build can read and write Chakra traces (protobuf found at configure time).
bool ChakraAvailable();

}  // namespace mmtwin

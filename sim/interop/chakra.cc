// SPDX-License-Identifier: Apache-2.0
// Chakra traces from an op graph, and their replay (chakra.h); the protobuf files are chakra_io.cc.
#include "interop/chakra.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

namespace mmtwin {
namespace {

bool IsCompute(OpKind k) {
  return k == OpKind::kForward || k == OpKind::kRecompute || k == OpKind::kBackward ||
         k == OpKind::kBackwardWeight || k == OpKind::kTpCollective || k == OpKind::kEncoderForward ||
         k == OpKind::kEncoderBackward;
}
bool IsSend(OpKind k) { return k == OpKind::kP2pSendActivation || k == OpKind::kP2pSendGradient; }
bool IsCollective(OpKind k) {
  return k == OpKind::kDpCollective || k == OpKind::kDpAllGather || k == OpKind::kSpCollective ||
         k == OpKind::kDispatch;
}

// The collective's group key: which ring (or all-to-all set) a collective of this kind runs over.
enum class GroupKind { kDp, kSp, kDispatch };
GroupKind GroupOf(OpKind k) {
  if (k == OpKind::kSpCollective) return GroupKind::kSp;
  if (k == OpKind::kDispatch) return GroupKind::kDispatch;
  return GroupKind::kDp;
}

std::string NodeName(const Op& op) {
  std::string s = OpKindName(op.kind);
  if (op.micro_batch >= 0) s += " mb" + std::to_string(op.micro_batch);
  s += " c" + std::to_string(op.chunk);
  if (op.kind == OpKind::kDpCollective || op.pieces > 1) s += " #" + std::to_string(op.bucket);
  return s;
}

uint64_t Micros(double us) { return us > 0 ? static_cast<uint64_t>(std::llround(us)) : 0; }

}  // namespace

Result<ChakraTrace> ChakraFromGraph(const OpGraph& g, const std::string& source) {
  if (g.encoder)
    return Error(
        "op graph: encoder passes outside the pipeline (policies.encoder bubbles) are not exported to "
        "Chakra yet");
  const int n_dev = g.num_devices;
  const size_t n_ops = g.ops.size();
  ChakraTrace t;
  t.ranks.resize(static_cast<size_t>(std::max(n_dev, 0)));
  t.pp = std::max(1, g.parallel.pp);
  t.source = source;

  // Process groups: per group kind, the rings the ops' peers form (a device's successor), or for peerless kinds
  // the devices holding such ops.
  std::map<GroupKind, std::vector<int>> next;  // kind -> device -> successor (-1 none)
  std::map<GroupKind, std::set<int>> holders;
  for (const Op& op : g.ops) {
    if (!IsCollective(op.kind) || op.device < 0) continue;
    const GroupKind k = GroupOf(op.kind);
    holders[k].insert(op.device);
    if (op.peer < 0) continue;
    std::vector<int>& nx = next[k];
    nx.resize(static_cast<size_t>(n_dev), -1);
    if (op.peer >= n_dev)
      return Error("op graph: a collective's peer " + std::to_string(op.peer) + " is no device");
    int& s = nx[static_cast<size_t>(op.device)];
    if (s >= 0 && s != op.peer)
      return Error("op graph: device " + std::to_string(op.device) +
                   " has two successors in one kind of ring");
    s = op.peer;
  }
  std::map<std::pair<GroupKind, int>, std::string> group_of;  // (kind, device) -> pg name
  auto add_group = [&](GroupKind k, std::vector<int> members) {
    std::sort(members.begin(), members.end());
    std::string name;
    for (const auto& [n, ranks] : t.groups)
      if (ranks == members) name = n;
    if (name.empty()) {
      name = std::to_string(t.groups.size() + 1);
      t.groups[name] = members;
    }
    for (int d : members) group_of[{k, d}] = name;
  };
  for (const auto& [k, devices] : holders) {
    auto it = next.find(k);
    if (it == next.end()) {  // no peers: one group of every holder
      add_group(k, std::vector<int>(devices.begin(), devices.end()));
      continue;
    }
    std::set<int> seen;
    for (int d : devices) {
      if (seen.count(d)) continue;
      std::vector<int> ring;
      for (int x = d; x >= 0 && !seen.count(x); x = it->second[static_cast<size_t>(x)]) {
        seen.insert(x);
        ring.push_back(x);
      }
      add_group(k, ring);
    }
  }

  // Nodes, rank by rank in the graph's (topological) order; node_of[i] = op i's node on its device.
  std::vector<int64_t> node_of(n_ops, -1);
  auto add_node = [&](int rank, ChakraNode n) {
    ChakraRank& r = t.ranks[static_cast<size_t>(rank)];
    n.id = r.nodes.size();
    r.nodes.push_back(std::move(n));
    return static_cast<int64_t>(r.nodes.back().id);
  };
  // What a dependency on op j means for a node on `rank`: its own node, or (through barriers) the ops it waits
  // for. Remote ops end up in `remote`.
  std::vector<int32_t> stack;
  auto resolve = [&](int32_t j, int rank, std::vector<uint64_t>& local, std::vector<int32_t>& remote) {
    stack.assign(1, j);
    while (!stack.empty()) {
      const int32_t x = stack.back();
      stack.pop_back();
      const Op& o = g.ops[static_cast<size_t>(x)];
      if (o.kind == OpKind::kBarrier) {
        for (int32_t k = g.dep_begin[x]; k < g.dep_begin[x + 1]; ++k) stack.push_back(g.deps[k]);
      } else if (o.device == rank) {
        local.push_back(static_cast<uint64_t>(node_of[static_cast<size_t>(x)]));
      } else {
        remote.push_back(x);
      }
    }
  };
  int32_t next_tag = 0;
  std::vector<int32_t> send_tag(n_ops, -1);              // the tag of a p2p send op
  std::map<std::pair<int32_t, int>, uint64_t> received;  // (remote op, rank) -> its receive node
  for (size_t i = 0; i < n_ops; ++i) {
    const Op& op = g.ops[i];
    if (op.kind == OpKind::kBarrier) continue;
    if (op.device < 0 || op.device >= n_dev)
      return Error("op graph: op " + std::to_string(i) + " has no device");
    const int rank = op.device;
    std::vector<uint64_t> local;
    std::vector<int32_t> remote;
    for (int32_t k = g.dep_begin[i]; k < g.dep_begin[i + 1]; ++k) resolve(g.deps[k], rank, local, remote);
    // Remote dependencies: a p2p send's receive, a group member's op the collective synchronises, or a sync pair.
    std::string pg;
    if (IsCollective(op.kind)) pg = group_of[{GroupOf(op.kind), rank}];
    std::set<int32_t> done;
    for (int32_t x : remote) {
      if (!done.insert(x).second) continue;
      const Op& o = g.ops[static_cast<size_t>(x)];
      if (!pg.empty()) {
        const std::vector<int>& members = t.groups[pg];
        if (std::binary_search(members.begin(), members.end(), o.device)) continue;
      }
      // One receive per (remote op, rank): a send is received once, whichever ops of the rank wait for it.
      auto seen = received.find({x, rank});
      if (seen != received.end()) {
        local.push_back(seen->second);
        continue;
      }
      ChakraNode recv;
      recv.type = ChakraNodeType::kRecv;
      recv.comm_src = o.device;
      if (IsSend(o.kind)) {
        recv.name = "recv " + NodeName(o);
        recv.kind = "p2p_recv";
        recv.comm_size = o.bytes;
        recv.comm_tag = send_tag[static_cast<size_t>(x)];
      } else {  // a zero-byte message after the remote op
        ChakraNode send;
        send.type = ChakraNodeType::kSend;
        send.name = "sync after " + NodeName(o);
        send.kind = "sync";
        send.comm_dst = rank;
        send.comm_tag = next_tag++;
        send.data_deps = {static_cast<uint64_t>(node_of[static_cast<size_t>(x)])};
        add_node(o.device, send);
        recv.name = "sync before " + NodeName(op);
        recv.kind = "sync";
        recv.comm_tag = send.comm_tag;
      }
      const auto id = static_cast<uint64_t>(add_node(rank, recv));
      received[{x, rank}] = id;
      local.push_back(id);
    }
    ChakraNode n;
    n.name = NodeName(op);
    n.kind = OpKindName(op.kind);
    n.micro_batch = op.micro_batch;
    n.chunk = op.chunk;
    n.lane = static_cast<int32_t>(op.lane);
    n.pass = static_cast<int32_t>(op.pass);
    n.bucket = op.bucket;
    n.peer = op.peer;
    n.duration_us = op.duration_us;
    n.duration_micros = Micros(op.duration_us);
    std::sort(local.begin(), local.end());
    local.erase(std::unique(local.begin(), local.end()), local.end());
    n.data_deps = std::move(local);
    if (g.lane_prev[i] >= 0)
      n.ctrl_deps = {static_cast<uint64_t>(node_of[static_cast<size_t>(g.lane_prev[i])])};
    if (IsCompute(op.kind)) {
      n.type = ChakraNodeType::kComp;
    } else if (IsSend(op.kind)) {
      n.type = ChakraNodeType::kSend;
      n.comm_dst = op.peer;
      n.comm_size = op.bytes;
      n.comm_tag = send_tag[i] = next_tag++;
    } else if (IsCollective(op.kind)) {
      n.type = ChakraNodeType::kColl;
      n.comm_size = op.bytes;
      n.pg_name = pg;
      switch (op.kind) {
        case OpKind::kDpCollective:
          n.comm_type = static_cast<int>(g.parallel.zero_stage == 3 ? ChakraCollective::kReduceScatter
                                                                    : ChakraCollective::kAllReduce);
          break;
        case OpKind::kDpAllGather:
          n.comm_type = static_cast<int>(ChakraCollective::kAllGather);
          break;
        default:
          n.comm_type = static_cast<int>(ChakraCollective::kAllToAll);
          break;
      }
    } else {
      return Error(std::string("op graph: op kind ") + OpKindName(op.kind) + " has no Chakra node");
    }
    node_of[i] = add_node(rank, std::move(n));
  }
  return t;
}

Result<ChakraReplay> ReplayChakra(const ChakraTrace& t, bool whole_micros) {
  const size_t n_ranks = t.ranks.size();
  // Global index of (rank, node).
  std::vector<size_t> base(n_ranks + 1, 0);
  for (size_t r = 0; r < n_ranks; ++r) base[r + 1] = base[r] + t.ranks[r].nodes.size();
  const size_t n = base[n_ranks];
  auto at = [&](size_t r, uint64_t id) { return base[r] + static_cast<size_t>(id); };
  std::vector<const ChakraNode*> node(n);
  std::vector<size_t> rank_of(n);
  for (size_t r = 0; r < n_ranks; ++r)
    for (size_t i = 0; i < t.ranks[r].nodes.size(); ++i) {
      node[base[r] + i] = &t.ranks[r].nodes[i];
      rank_of[base[r] + i] = r;
    }
  auto where = [&](size_t x) {
    return "rank " + std::to_string(rank_of[x]) + " node " + std::to_string(node[x]->id) + " (" +
           node[x]->name + ")";
  };
  // Dependents and pending counts; a RECV also waits for its SEND.
  std::vector<std::vector<std::pair<size_t, bool>>> dependents(n);  // (node, through a control dependency)
  std::vector<int> pending(n, 0);
  std::map<std::tuple<size_t, size_t, int32_t>, size_t> sends;  // (src, dst, tag) -> send
  for (size_t x = 0; x < n; ++x)
    if (node[x]->type == ChakraNodeType::kSend) {
      if (node[x]->comm_dst < 0 || static_cast<size_t>(node[x]->comm_dst) >= n_ranks)
        return Error(where(x) + ": comm_dst " + std::to_string(node[x]->comm_dst) + " is no rank");
      sends[{rank_of[x], static_cast<size_t>(node[x]->comm_dst), node[x]->comm_tag}] = x;
    }
  std::vector<int64_t> send_of(n, -1);
  ChakraReplay out;
  out.nodes = static_cast<int64_t>(n);
  for (size_t x = 0; x < n; ++x) {
    const ChakraNode& nd = *node[x];
    for (const bool ctrl : {false, true})
      for (uint64_t d : ctrl ? nd.ctrl_deps : nd.data_deps) {
        if (d >= nd.id)
          return Error(where(x) + ": depends on node " + std::to_string(d) + ", not an earlier one");
        dependents[at(rank_of[x], d)].push_back({x, ctrl});
        ++pending[x];
      }
    if (nd.type == ChakraNodeType::kRecv) {
      auto it = sends.find({static_cast<size_t>(std::max(nd.comm_src, 0)), rank_of[x], nd.comm_tag});
      if (nd.comm_src < 0 || it == sends.end())
        return Error(where(x) + ": no send from rank " + std::to_string(nd.comm_src) + " with tag " +
                     std::to_string(nd.comm_tag));
      send_of[x] = static_cast<int64_t>(it->second);
      dependents[it->second].push_back({x, false});
      ++pending[x];
      ++out.messages;
    }
  }
  // Collective instances: the k-th collective of a group on each member.
  std::map<std::string, std::vector<std::vector<size_t>>> issued;  // pg -> per member position -> nodes
  std::map<std::pair<std::string, size_t>, size_t> member_pos;
  for (const auto& [pg, ranks] : t.groups)
    for (size_t i = 0; i < ranks.size(); ++i) member_pos[{pg, static_cast<size_t>(ranks[i])}] = i;
  std::vector<std::pair<std::string, size_t>> instance_of(n);  // (pg, k)
  for (size_t x = 0; x < n; ++x) {
    if (node[x]->type != ChakraNodeType::kColl) continue;
    const std::string& pg = node[x]->pg_name;
    auto g = t.groups.find(pg);
    if (g == t.groups.end())
      return Error(where(x) + ": process group '" + pg + "' is not in comm_group.json");
    auto m = member_pos.find({pg, rank_of[x]});
    if (m == member_pos.end())
      return Error(where(x) + ": rank " + std::to_string(rank_of[x]) + " is not a member of group " + pg);
    auto& per = issued[pg];
    per.resize(g->second.size());
    instance_of[x] = {pg, per[m->second].size()};
    per[m->second].push_back(x);
  }
  for (const auto& [pg, per] : issued)
    for (size_t i = 1; i < per.size(); ++i)
      if (per[i].size() != per[0].size())
        return Error("group " + pg + ": rank " + std::to_string(t.groups.at(pg)[i]) + " issues " +
                     std::to_string(per[i].size()) + " collectives on it, rank " +
                     std::to_string(t.groups.at(pg)[0]) + " " + std::to_string(per[0].size()));

  std::vector<double> data_ready(n, 0), ctrl_ready(n, 0), end(n, -1);
  std::map<std::pair<std::string, size_t>, int> arrived;  // instance -> members arrived
  std::deque<size_t> ready;
  for (size_t x = 0; x < n; ++x)
    if (pending[x] == 0) ready.push_back(x);
  auto duration = [&](size_t x) {
    return whole_micros ? static_cast<double>(node[x]->duration_micros) : node[x]->duration_us;
  };
  size_t finished = 0;
  auto finish = [&](size_t x, double e) {
    end[x] = e;
    ++finished;
    for (const auto& [y, ctrl] : dependents[x]) {
      if (ctrl)
        ctrl_ready[y] = std::max(ctrl_ready[y], e);
      else
        data_ready[y] = std::max(data_ready[y], e);
      if (--pending[y] == 0) ready.push_back(y);
    }
  };
  while (!ready.empty()) {
    const size_t x = ready.front();
    ready.pop_front();
    const ChakraNode& nd = *node[x];
    if (nd.type == ChakraNodeType::kColl) {
      const auto inst = instance_of[x];
      if (++arrived[inst] < static_cast<int>(t.groups.at(inst.first).size())) continue;
      // Every member has arrived: each starts at the members' latest data readiness or its own control order.
      const std::vector<std::vector<size_t>>& per = issued.at(inst.first);
      double data = 0;
      for (const auto& member : per) data = std::max(data, data_ready[member[inst.second]]);
      for (const auto& member : per) {
        const size_t y = member[inst.second];
        finish(y, std::max(data, ctrl_ready[y]) + duration(y));
      }
      ++out.collectives;
      continue;
    }
    if (nd.type == ChakraNodeType::kRecv) {  // ends with its send (data_ready holds the send's end)
      finish(x, std::max(data_ready[x], ctrl_ready[x]));
      continue;
    }
    finish(x, std::max(data_ready[x], ctrl_ready[x]) + duration(x));
  }
  if (finished < n) {
    for (size_t x = 0; x < n; ++x)
      if (end[x] < 0)
        return Error("deadlock: " + where(x) +
                     " never starts (a cycle, or a collective a member never reaches)");
  }
  out.rank_end_us.assign(n_ranks, 0);
  out.start_us.resize(n_ranks);
  for (size_t r = 0; r < n_ranks; ++r) out.start_us[r].resize(t.ranks[r].nodes.size());
  for (size_t x = 0; x < n; ++x) {
    out.rank_end_us[rank_of[x]] = std::max(out.rank_end_us[rank_of[x]], end[x]);
    out.step_us = std::max(out.step_us, end[x]);
    out.start_us[rank_of[x]][static_cast<size_t>(node[x]->id)] = end[x] - duration(x);
  }
  return out;
}

Result<std::vector<OpRecord>> ChakraOpRecords(const ChakraTrace& t, int64_t iteration) {
  MMTWIN_ASSIGN_OR_RETURN(ChakraReplay r, ReplayChakra(t));
  std::vector<OpRecord> out;
  for (size_t rank = 0; rank < t.ranks.size(); ++rank)
    for (const ChakraNode& n : t.ranks[rank].nodes) {
      if (n.kind == "p2p_recv" || n.kind == "sync") continue;
      OpRecord o;
      if (!ParseOpKind(n.kind, o.kind) || o.kind == OpKind::kBarrier)
        return Error("rank " + std::to_string(rank) + " node " + std::to_string(n.id) + " (" + n.name +
                     "): mmtwin_kind '" + n.kind +
                     "' is no op kind mmtwin writes (a trace of another tool?)");
      o.source = RecordSource::kMeasured;
      o.iteration = iteration;
      o.lane = static_cast<Lane>(n.lane);
      o.device = static_cast<int32_t>(rank);
      o.peer = n.peer;
      o.micro_batch = n.micro_batch;
      o.chunk = n.chunk;
      o.start_us = r.start_us[rank][static_cast<size_t>(n.id)];
      o.duration_us = n.duration_us;
      o.pass = static_cast<PassKind>(n.pass);
      o.bucket = n.bucket;
      o.bytes = n.comm_size;
      out.push_back(o);
    }
  std::stable_sort(out.begin(), out.end(),
                   [](const OpRecord& a, const OpRecord& b) { return a.start_us < b.start_us; });
  return out;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The in-process SimGrid replay: platform from the cluster, one activity DAG per OpGraph, Engine::run, times
// back. See replay.h and sim/engine/README.md.
#include "engine/replay.h"

#include "core/plan/mesh.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>

namespace mmtwin {
namespace {

namespace sg4 = simgrid::s4u;

constexpr double kHostSpeed = 1e9;  // flop/s of a device host: one microsecond of an op is 1000 flops

// The replay's DAG of activities, launched lazily: a SimGrid activity is created and started only when its
// last predecessor completes. (Creating the whole DAG up front with add_successor + vetoable_start makes
// every completion in SimGrid 3.32 cost time proportional to the activities created so far: quadratic; the
// default scenario's iteration did not finish in 10 minutes.) Zero-work executions (barriers, empty ops)
// complete at once without SimGrid. Handles of finished activities are dropped once the clock has moved past
// their end.
class Dag {
 public:
  enum Kind : uint8_t { kExec, kComm, kInstant };

  int32_t Add(Kind kind, int32_t from, int32_t to, double amount) {
    kind_.push_back(kind);
    from_.push_back(from);
    to_.push_back(to);
    amount_.push_back(amount);
    return static_cast<int32_t>(kind_.size() - 1);
  }
  void Edge(int32_t from, int32_t to) { edges_.push_back({from, to}); }
  size_t size() const { return kind_.size(); }

  // Runs everything; times in seconds per node.
  Status Run(const std::vector<sg4::Host*>& hosts, SimGridReplayStats* stats) {
    const size_t n = kind_.size();
    hosts_ = &hosts;
    pending_.assign(n, 0);
    succ_begin_.assign(n + 1, 0);
    for (const auto& [f, t] : edges_) {
      ++succ_begin_[f + 1];
      ++pending_[t];
    }
    for (size_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
    succ_.resize(edges_.size());
    std::vector<int32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
    for (const auto& [f, t] : edges_) succ_[fill[f]++] = t;
    edges_.clear();
    edges_.shrink_to_fit();
    start_s_.assign(n, -1);
    finish_s_.assign(n, -1);
    live_.assign(n, nullptr);
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { OnCompletion(a); });
    for (size_t i = 0; i < n; ++i)
      if (pending_[i] == 0) ready_.push_back(static_cast<int32_t>(i));
    Drain();
    sg4::Engine::get_instance()->run();
    if (!failure_.empty()) return Error(failure_);
    int64_t unfinished = 0;
    for (size_t i = 0; i < n; ++i) unfinished += finish_s_[i] < 0;
    if (unfinished > 0)
      return Error::External("simgrid engine: " + std::to_string(unfinished) + " of " + std::to_string(n) +
                             " activities never ran (a dependency cycle or a lost completion)");
    if (stats) {
      stats->executions = execs_;
      stats->communications = comms_;
      stats->joins = instants_;
    }
    return Status();
  }
  double start_s(int32_t i) const { return start_s_[i]; }
  double finish_s(int32_t i) const { return finish_s_[i]; }

 private:
  void Launch(int32_t i) {
    const double now = sg4::Engine::get_clock();
    start_s_[i] = now;
    void* tag = reinterpret_cast<void*>(static_cast<intptr_t>(i) + 1);
    if (kind_[i] == kInstant || (kind_[i] == kExec && amount_[i] <= 0)) {
      ++instants_;
      finish_s_[i] = now;
      Done(i);
    } else if (kind_[i] == kExec) {
      // An execution never shares its host (a device's compute lane runs one op at a time; the delay host has
      // more cores than activities), so it lasts exactly amount / speed: a kernel timer at that date, not a
      // SimGrid Exec. (SimGrid 3.32 files every Exec started from maestro in maestro's activity list and
      // removes it from that list, a linear scan, on completion: with thousands of devices that scan was
      // about 45% of the replay.)
      ++execs_;
      simgrid::kernel::timer::Timer::set(now + amount_[i] / kHostSpeed, [this, i] { ExecDone(i); });
    } else {
      ++comms_;
      const uint64_t size = amount_[i] > 0 ? static_cast<uint64_t>(std::llround(amount_[i])) : 0;
      sg4::CommPtr c = sg4::Comm::sendto_init((*hosts_)[from_[i]], (*hosts_)[to_[i]]);
      c->set_payload_size(size);
      c->set_data(tag);
      live_[i] = c;
      c->start();
    }
  }
  void ExecDone(int32_t i) {
    finish_s_[i] = sg4::Engine::get_clock();
    Done(i);
    Drain();
  }
  void Done(int32_t i) {
    for (int32_t j = succ_begin_[i]; j < succ_begin_[i + 1]; ++j)
      if (--pending_[succ_[j]] == 0) ready_.push_back(succ_[j]);
  }
  void Drain() {
    while (!ready_.empty()) {
      const int32_t i = ready_.back();
      ready_.pop_back();
      Launch(i);
    }
  }
  void OnCompletion(const sg4::Activity& a) {
    const intptr_t tag = reinterpret_cast<intptr_t>(a.get_data<void>());
    if (tag <= 0) return;
    const int32_t i = static_cast<int32_t>(tag - 1);
    const double now = sg4::Engine::get_clock();
    if (a.get_state() != sg4::Activity::State::FINISHED) {
      if (failure_.empty()) failure_ = "simgrid engine: a SimGrid activity failed or was cancelled";
      return;
    }
    if (now > release_clock_) {  // the kernel is done with activities that ended at earlier dates
      for (int32_t k : release_) live_[k] = nullptr;
      release_.clear();
      release_clock_ = now;
    }
    release_.push_back(i);
    finish_s_[i] = now;
    Done(i);
    Drain();
  }

  std::vector<Kind> kind_;
  std::vector<int32_t> from_, to_;
  std::vector<double> amount_;
  std::vector<std::pair<int32_t, int32_t>> edges_;
  std::vector<int32_t> pending_, succ_begin_, succ_, ready_, release_;
  std::vector<double> start_s_, finish_s_;
  std::vector<sg4::ActivityPtr> live_;
  const std::vector<sg4::Host*>* hosts_ = nullptr;
  double release_clock_ = 0;
  int64_t execs_ = 0, comms_ = 0, instants_ = 0;
  std::string failure_;
};

// An sp_collective op (core/graph/op_graph.h): the all-to-all as U - 1 pairwise-exchange transfers to the
// device's Ulysses peers, one after the other, then a delay (on the many-core delay host) making up the rest of
// the priced duration at the routes' no-contention speed; the ring's KV bytes as one transfer to the ring
// successor starting with the pass's first compute op (found along the compute lane), which the op's end also
// waits for.
Status AddSpCollective(const OpGraph& g, int i, const ClusterSpec& cluster, const ParallelConfig& pc,
                       const DeviceMesh& mesh, int delay_host, Dag& acts, std::vector<int32_t>& head,
                       std::vector<std::array<int32_t, 2>>& tail,
                       std::map<int32_t, std::vector<int32_t>>& co_start) {
  const Op& op = g.ops[i];
  const double nic_share = cluster.gpu_nic_bytes_per_s();
  auto seconds = [&](int a, int b, double bytes) {
    const bool nvlink = NodeOfDevice(cluster, pc, a) == NodeOfDevice(cluster, pc, b);
    const double bw = nvlink ? cluster.nvlink_bytes_per_s : nic_share;
    return (nvlink ? cluster.nvlink_latency_us : cluster.nic_latency_us) * 1e-6 + (bw > 0 ? bytes / bw : 0);
  };
  const int32_t start = acts.Add(Dag::kInstant, -1, -1, 0.0);
  head[i] = start;
  int32_t prev = start;
  double busy_s = 0;
  const int U = std::max(1, g.sp_ulysses);
  if (op.bytes > 0 && U > 1) {
    const double piece = static_cast<double>(op.bytes) / (U - 1);
    for (int j = 1; j < U; ++j) {
      const int peer = mesh.SpUlyssesPeer(op.device, g.sp_group, U, j);
      const int32_t c = acts.Add(Dag::kComm, op.device, peer, piece);
      acts.Edge(prev, c);
      prev = c;
      busy_s += seconds(op.device, peer, piece);
    }
  }
  const double rest_s = std::max(0.0, g.duration_us[i] * 1e-6 - busy_s);
  const int32_t delay = acts.Add(Dag::kExec, delay_host, -1, rest_s * kHostSpeed);
  acts.Edge(prev, delay);
  tail[i] = {delay, -1};
  if (op.ring_bytes > 0 && op.peer >= 0 && op.peer != op.device) {
    const bool fwd = op.pass == PassKind::kForward;
    int32_t first = -1;
    for (int32_t j = g.lane_prev[i]; j >= 0; j = g.lane_prev[j]) {
      const Op& p = g.ops[j];
      const bool same = p.micro_batch == op.micro_batch && p.chunk == op.chunk &&
                        (fwd ? (p.kind == OpKind::kForward || p.kind == OpKind::kTpCollective)
                             : (p.kind == OpKind::kBackward || p.kind == OpKind::kRecompute ||
                                p.kind == OpKind::kTpCollective));
      if (!same) break;
      first = j;
    }
    const int32_t ring = acts.Add(Dag::kComm, op.device, op.peer, static_cast<double>(op.ring_bytes));
    // It starts when the pass's first compute op may start: it gets that op's incoming edges (co_start).
    if (first >= 0)
      co_start[first].push_back(ring);
    else
      acts.Edge(start, ring);
    tail[i][1] = ring;
  }
  return Status();
}

bool IsRing(OpKind k) { return k == OpKind::kDpCollective || k == OpKind::kDpAllGather; }

// The ring an op belongs to: its chunk, kind, pass, the piece of the chunk's last backward that releases it
// (`ready`: buckets released by different pieces never share a ring) and bucket group (`merge` consecutive
// buckets per ring); a weight all-gather's own ring (FSDP: one per micro-batch and unit, Op::micro_batch and
// Op::bucket; a chunk's whole-weight gather: micro-batch -1, bucket 0).
uint64_t RingKey(const Op& op, int merge, int ready) {
  const uint32_t low = op.kind == OpKind::kDpAllGather
                           ? (static_cast<uint32_t>(op.micro_batch + 1) & ((1u << 24) - 1)) << 8 |
                                 (static_cast<uint32_t>(op.bucket) & 255u)
                           : static_cast<uint32_t>(op.bucket / merge);
  return (static_cast<uint64_t>(op.kind == OpKind::kDpAllGather) << 63) |
         (static_cast<uint64_t>(op.pass == PassKind::kBackward) << 62) |
         (static_cast<uint64_t>(ready & 255) << 54) |
         (static_cast<uint64_t>(static_cast<uint32_t>(op.chunk) & ((1u << 22) - 1)) << 32) | low;
}

// ---- Platform ----

// The engine's network model (sim/engine/README.md "Network model"), once the engine exists.
void ConfigureNetwork(const SimGridOptions& options) {
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/TCP-gamma", 1e30);  // no window bound on fast links
  sg4::Engine::set_config("network/crosstraffic", false);
  sg4::Engine::set_config("network/latency-factor", 1.0);
  sg4::Engine::set_config("network/bandwidth-factor", 1.0);
  sg4::Engine::set_config("network/weight-S", 0.0);
  for (const std::string& c : options.extra_config) sg4::Engine::set_config(c);
}

// Device pair -> whether it talks over NVLink (else the NICs).
using Routes = std::map<std::pair<int32_t, int32_t>, bool>;

// Which device pairs talk, and over which fabric: every pair once, the first set naming it deciding its fabric
// (pipeline sends, DP rings, data dispatch, SP).
Routes TalkingPairs(const ClusterSpec& cluster, const OpGraph& g, const DeviceMesh& mesh) {
  const ParallelConfig& pc = g.parallel;
  const bool dp_in_node = mesh.DpGroupInNode();  // the engine requires gpus_per_node >= 1
  std::set<std::pair<int32_t, int32_t>> p2p_pairs, ring_pairs, sp_pairs;
  for (int i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.ops[i];
    // The op graph names every transfer's peer (Op::peer): the receiving device of a send, the ring successor
    // of a DP collective.
    if (op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient)
      p2p_pairs.insert({op.device, op.peer});
    else if (IsRing(op.kind))
      ring_pairs.insert({op.device, op.peer});
    else if (op.kind == OpKind::kSpCollective) {  // SP: ring successor and Ulysses peers
      if (op.ring_bytes > 0 && op.peer >= 0 && op.peer != op.device) sp_pairs.insert({op.device, op.peer});
      if (op.bytes > 0)
        for (int j = 1; j < g.sp_ulysses; ++j)
          sp_pairs.insert({op.device, mesh.SpUlyssesPeer(op.device, g.sp_group, g.sp_ulysses, j)});
    }
  }
  auto nvlink_pair = [&](int32_t a, int32_t b, bool ring) {
    return (ring && dp_in_node) || NodeOfDevice(cluster, pc, a) == NodeOfDevice(cluster, pc, b);
  };
  Routes routes;
  for (const auto& ab : p2p_pairs) routes.emplace(ab, nvlink_pair(ab.first, ab.second, false));
  for (const auto& ab : ring_pairs) routes.emplace(ab, nvlink_pair(ab.first, ab.second, true));
  for (const DeviceTransfer& t : g.dispatch_transfers)
    routes.emplace(std::make_pair(t.src_device, t.dst_device),
                   nvlink_pair(t.src_device, t.dst_device, false));
  for (const auto& ab : sp_pairs) routes.emplace(ab, nvlink_pair(ab.first, ab.second, false));
  return routes;
}

// Builds the platform: every device has its own links (NVLink up/down, NIC up/down; a non-blocking switch per
// fabric), and a pair of devices talks over the sender's up and the receiver's down link of one fabric:
// NVLink iff the op graph prices the pair in a node. Only the pairs that talk get a route. Two layouts with the
// same routes:
// - hierarchical (default): a star zone whose children are pods of whole nodes, full zones of at most
//   options.pod_devices devices with routes for the pairs that talk inside the pod and one from each device
//   to the pod's gateway over its NIC up link and back over its NIC down link; a pair in two pods routes
//   device -> gateway -> gateway -> device, the star adding no link: the same two NIC links as a flat route.
//   Memory grows as devices x pod size instead of devices^2 (SimGrid's full zone keeps an N x N table:
//   4.3 GB at 32k devices). The links are created in the star before any pod: SimGrid checks a new link's
//   name against every zone below, so creating them in the pods costs zones^2.
// - flat (options.pod_devices = 0, or a pair that talks over NVLink across two pods): one full zone.
// Returns the hosts: one per device, then the delay host (zero-contention delays: more cores than activities).
class PlatformBuilder {
 public:
  PlatformBuilder(const ClusterSpec& cluster, const SimGridOptions& options, const OpGraph& g,
                  const Routes& routes)
      : cluster_(cluster), options_(options), pc_(g.parallel), devices_(g.num_devices), routes_(routes) {
    const int gpn = std::max(cluster.gpus_per_node, 1);
    // Pods: whole nodes, at most pod_devices devices (one node when a node holds more).
    const int devices_per_node = std::max(1, gpn / std::max(1, pc_.tp));
    nodes_per_pod_ = std::max(1, static_cast<int>(options.pod_devices) / devices_per_node);
    hierarchical_ = options.pod_devices > 0;
    for (const auto& [ab, nvlink] : routes)
      if (nvlink && PodOf(ab.first) != PodOf(ab.second)) hierarchical_ = false;
  }
  bool hierarchical() const { return hierarchical_; }

  Result<std::vector<sg4::Host*>> Build() {
    zone_ = hierarchical_ ? sg4::create_star_zone("mmtwin") : sg4::create_full_zone("mmtwin");
    hosts_.assign(devices_, nullptr);
    MakeLinks();
    for (const auto& [ab, nvlink] : routes_) MMTWIN_RETURN_IF_ERROR(Missing(ab.first, ab.second, nvlink));
    if (!hierarchical_) {
      for (int dev = 0; dev < devices_; ++dev)
        hosts_[dev] = zone_->create_host("device-" + std::to_string(dev), kHostSpeed)->seal();
      for (const auto& [ab, nvlink] : routes_) Route(zone_, ab.first, ab.second, nvlink);
    } else {
      MakePods();
    }
    sg4::Host* delay_host = zone_->create_host("delay", kHostSpeed)->set_core_count(1 << 30)->seal();
    hosts_.push_back(delay_host);
    zone_->seal();
    return std::move(hosts_);
  }

 private:
  int PodOf(int32_t dev) const { return NodeOfDevice(cluster_, pc_, dev) / nodes_per_pod_; }

  sg4::Link* MakeLink(const std::string& name, double bw, double latency_us) {
    const auto policy =
        options_.contention ? sg4::Link::SharingPolicy::SHARED : sg4::Link::SharingPolicy::FATPIPE;
    return zone_->create_link(name, bw)
        ->set_latency(latency_us * 1e-6 / 2)
        ->set_sharing_policy(policy)
        ->seal();
  }

  void MakeLinks() {
    const double nic_share = cluster_.gpu_nic_bytes_per_s();
    links_.assign(devices_, {});
    for (int dev = 0; dev < devices_; ++dev) {
      const std::string s = std::to_string(dev);
      if (cluster_.nvlink_bytes_per_s > 0) {
        links_[dev][0] = MakeLink("nvlink-up-" + s, cluster_.nvlink_bytes_per_s, cluster_.nvlink_latency_us);
        links_[dev][1] =
            MakeLink("nvlink-down-" + s, cluster_.nvlink_bytes_per_s, cluster_.nvlink_latency_us);
      }
      if (nic_share > 0) {
        links_[dev][2] = MakeLink("nic-up-" + s, nic_share, cluster_.nic_latency_us);
        links_[dev][3] = MakeLink("nic-down-" + s, nic_share, cluster_.nic_latency_us);
      }
    }
  }

  Status Missing(int32_t a, int32_t b, bool nvlink) const {
    if (links_[a][nvlink ? 0 : 2] != nullptr && links_[b][nvlink ? 1 : 3] != nullptr) return Status();
    return Error(std::string("simgrid engine: cluster '") + cluster_.name + "' has no " +
                 (nvlink ? "NVLink" : "NIC") + " bandwidth for the transfers from device " +
                 std::to_string(a) + " to device " + std::to_string(b));
  }

  void Route(sg4::NetZone* z, int32_t a, int32_t b, bool nvlink) {
    z->add_route(hosts_[a]->get_netpoint(), hosts_[b]->get_netpoint(), nullptr, nullptr,
                 {sg4::LinkInRoute(links_[a][nvlink ? 0 : 2]), sg4::LinkInRoute(links_[b][nvlink ? 1 : 3])},
                 false);
  }

  void MakePods() {
    std::vector<std::vector<int32_t>> pods;  // the devices of each pod, ascending
    for (int dev = 0; dev < devices_; ++dev) {
      const size_t pod = static_cast<size_t>(PodOf(dev));
      if (pods.size() <= pod) pods.resize(pod + 1);
      pods[pod].push_back(dev);
    }
    std::vector<std::vector<std::pair<std::pair<int32_t, int32_t>, bool>>> inside(pods.size());
    for (const auto& r : routes_)
      if (PodOf(r.first.first) == PodOf(r.first.second)) inside[PodOf(r.first.first)].push_back(r);
    for (size_t pod = 0; pod < pods.size(); ++pod) {
      if (pods[pod].empty()) continue;
      sg4::NetZone* z = sg4::create_full_zone("pod-" + std::to_string(pod));
      z->set_parent(zone_);
      simgrid::kernel::routing::NetPoint* gateway =
          z->create_router("pod-" + std::to_string(pod) + "-gateway");
      for (int32_t dev : pods[pod]) {
        hosts_[dev] = z->create_host("device-" + std::to_string(dev), kHostSpeed)->seal();
        if (links_[dev][2] != nullptr)
          z->add_route(hosts_[dev]->get_netpoint(), gateway, nullptr, nullptr,
                       {sg4::LinkInRoute(links_[dev][2])}, false);
        if (links_[dev][3] != nullptr)
          z->add_route(gateway, hosts_[dev]->get_netpoint(), nullptr, nullptr,
                       {sg4::LinkInRoute(links_[dev][3])}, false);
      }
      for (const auto& [ab, nvlink] : inside[pod]) Route(z, ab.first, ab.second, nvlink);
      z->seal();
      zone_->add_route(z->get_netpoint(), nullptr, gateway, gateway, {}, false);
      zone_->add_route(nullptr, z->get_netpoint(), gateway, gateway, {}, false);
    }
  }

  const ClusterSpec& cluster_;
  const SimGridOptions& options_;
  const ParallelConfig& pc_;
  const int devices_;
  const Routes& routes_;
  int nodes_per_pod_ = 1;
  bool hierarchical_ = false;
  sg4::NetZone* zone_ = nullptr;
  std::vector<sg4::Host*> hosts_;
  std::vector<std::array<sg4::Link*, 4>> links_;  // per device: nvlink up, nvlink down, nic up, nic down
};

// ---- Activities ----

// The activity DAG of a graph, and where each op sits in it: one head (what the op's predecessors gate) and up
// to two tails (its completion) per op. Built in this order (the activity numbering, the same on every
// platform): the ops (AddOps), the DP rings (AddRings), the dispatch joins and transfers (AddDispatch), then
// every op's dependencies and lane order (AddDependencies).
class ActivityBuilder {
 public:
  struct Ring {
    std::vector<std::vector<int32_t>> ops;  // per replica: the ops of the merged buckets, in bucket order
    int32_t first = -1;  // activity id of replica 0, step 0; replica r step s = first + r * steps + s
    int steps = 0;
  };

  ActivityBuilder(const ClusterSpec& cluster, const SimGridOptions& options, const OpGraph& g,
                  const DeviceMesh& mesh)
      : cluster_(cluster),
        options_(options),
        g_(g),
        pc_(g.parallel),
        mesh_(mesh),
        D_(mesh.dp()),
        devices_(g.num_devices),
        dp_in_node_(mesh.DpGroupInNode()),
        comm_cost_(g.source.comm_cost ? g.source.comm_cost
                                      : std::make_shared<const AnalyticCommCost>(g.source.comm)),
        head_(g.num_ops(), -1),  // -1: an op merged into the previous bucket's ring (no activity of its own)
        tail_(g.num_ops(), {-1, -1}) {
    merge_ = RingMerge();
  }

  Status Build() {
    MMTWIN_RETURN_IF_ERROR(AddOps());
    MMTWIN_RETURN_IF_ERROR(AddRings());
    MMTWIN_RETURN_IF_ERROR(AddDispatch());
    AddDependencies();
    return Status();
  }
  Dag& dag() { return acts_; }
  int merge() const { return merge_; }

  // Each op's start and finish in microseconds, from the finished DAG; merged buckets share their ring's span
  // in proportion to their priced durations.
  void ReadBack(double* start_us, double* finish_us) const;

 private:
  // Bucket merging: past options.max_ring_transfers ring transfers, `merge` consecutive gradient buckets (and
  // weight all-gather buckets) share one ring of summed bytes; the merged buckets' step latencies are added
  // as a delay after the ring, so without contention the time is unchanged.
  int RingMerge() const {
    // Ring flows per replica after step aggregation (options.max_ring_steps), summed over the ring ops.
    auto flows = [&](int64_t steps) {
      return options_.max_ring_steps > 0 ? std::min<int64_t>(steps, options_.max_ring_steps) : steps;
    };
    int64_t exact_transfers = 0;
    for (const Op& op : g_.ops)
      if (IsRing(op.kind)) exact_transfers += flows(OpComm(op).steps);
    if (options_.max_ring_transfers > 0 && exact_transfers > options_.max_ring_transfers)
      return static_cast<int>(std::min<int64_t>(
          (exact_transfers + options_.max_ring_transfers - 1) / options_.max_ring_transfers, 1 << 20));
    return 1;
  }

  Status AddOps();
  Status AddRings();
  // A DP op's time as its graph's communication model splits it (CommCostModel::Time): the latency of its
  // buckets' calls and the sequential steps they take (us = the op's priced duration).
  CommTime OpComm(const Op& op) const;
  Status AddDispatch();
  void AddDependencies();

  const ClusterSpec& cluster_;
  const SimGridOptions& options_;
  const OpGraph& g_;
  const ParallelConfig& pc_;
  const DeviceMesh& mesh_;
  const int D_, devices_;  // DP replicas; devices (the delay host's index)
  const bool dp_in_node_;
  const std::shared_ptr<const CommCostModel> comm_cost_;
  int merge_ = 1;
  Dag acts_;
  std::vector<int32_t> head_;
  std::vector<std::array<int32_t, 2>> tail_;
  std::map<uint64_t, Ring> rings_;  // ordered: the same activity numbering on every platform
  // Dispatch: per slot (micro-batch m's dispatch, or M + m its backward all-to-all), the op of each replica (its
  // head: an instant that releases its sends).
  std::map<int32_t, std::vector<int32_t>> dispatch_ops_;
  // Activities that start together with an op (the SP ring's KV transfer with its pass's first compute op).
  std::map<int32_t, std::vector<int32_t>> co_start_;
};

Status ActivityBuilder::AddOps() {
  for (int i = 0; i < g_.num_ops(); ++i) {
    const Op& op = g_.ops[i];
    if (op.kind == OpKind::kDispatch) {
      head_[i] = acts_.Add(Dag::kInstant, -1, -1, 0.0);
      std::vector<int32_t>& v = dispatch_ops_[g_.DispatchSlot(op)];
      if (v.empty()) v.assign(D_, -1);
      v[mesh_.DpOfDevice(op.device)] = i;
    } else if (op.kind == OpKind::kBarrier || (op.kind == OpKind::kDpCollective && op.buckets == 0)) {
      // A barrier, or the empty gradient op of a piece that completes no bucket (op_graph.h).
      head_[i] = tail_[i][0] = acts_.Add(Dag::kInstant, -1, -1, 0.0);
    } else if (op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient) {
      head_[i] = tail_[i][0] = acts_.Add(Dag::kComm, op.device, op.peer, static_cast<double>(op.bytes));
    } else if (IsRing(op.kind)) {
      // A gradient bucket's one dependency is its barrier, whose bucket field is the piece that releases it.
      const int ready =
          op.kind == OpKind::kDpCollective && !g_.Deps(i).empty() ? g_.ops[g_.Deps(i)[0]].bucket : 0;
      Ring& r = rings_[RingKey(op, merge_, ready)];
      if (r.ops.empty()) r.ops.resize(D_);
      r.ops[mesh_.DpOfDevice(op.device)].push_back(i);
    } else if (op.kind == OpKind::kSpCollective) {
      MMTWIN_RETURN_IF_ERROR(
          AddSpCollective(g_, i, cluster_, pc_, mesh_, devices_, acts_, head_, tail_, co_start_));
    } else {
      head_[i] = tail_[i][0] = acts_.Add(Dag::kExec, op.device, -1, g_.duration_us[i] * 1e-6 * kHostSpeed);
    }
  }
  return Status();
}

CommTime ActivityBuilder::OpComm(const Op& op) const {
  CommTime t;
  const int64_t buckets = std::max<int64_t>(op.buckets, 1);
  if (op.kind == OpKind::kDpCollective) {
    // The op's buckets: calls of about bytes / buckets each (the last bucket is smaller; only the split into
    // latency and volume uses this, the op keeps its priced duration).
    const CommKind kind = pc_.zero_stage == 0  ? CommKind::kAllReduce
                          : pc_.zero_stage < 3 ? CommKind::kReduceScatterAllGather
                                               : CommKind::kReduceScatter;
    const CommTime one = comm_cost_->Time({kind, op.bytes / buckets, D_, dp_in_node_});
    t.latency_us = static_cast<double>(buckets) * one.latency_us;
    t.steps = buckets * one.steps;
  } else {
    const CommTime all = comm_cost_->Time({CommKind::kWeightAllGather, op.bytes, D_, dp_in_node_, buckets});
    t.latency_us = all.latency_us;
    t.steps = all.steps;
  }
  t.us = op.duration_us;
  t.latency_us = std::clamp(t.latency_us, 0.0, t.us);
  t.volume_us = t.us - t.latency_us;
  t.steps = std::max<int64_t>(t.steps, 1);
  return t;
}

// One ring per group of DP ops (RingKey): replica d sends to d + 1 mod D at every step; step s of d waits for
// its own step s - 1 and for step s - 1 of d - 1 (the data it forwards). The ring replays the time its
// communication model priced (CommCostModel::Time: NCCL's algorithm choice, or the flat ring): k steps (the
// model's, at most options.max_ring_steps and at most T / the slowest hop's latency), each hop's transfer sized
// so that it lasts (T - delay) / k on its link without contention, and the latency the k hops do not already
// pay as a delay after the ring, on the delay host. Without contention the ring lasts exactly the priced T;
// with it, rings that share a link slow each other down.
Status ActivityBuilder::AddRings() {
  for (auto& [key, r] : rings_) {
    size_t members = 0;
    int32_t any = -1;
    for (const auto& v : r.ops)
      if (!v.empty()) {
        members = v.size();
        any = v[0];
      }
    for (int d = 0; d < D_; ++d)
      if (r.ops[d].size() != members)
        return Error("simgrid engine: DP collective " + g_.Describe(any) +
                     " has no counterpart on DP replica " + std::to_string(d));
    double total_us = 0, latency_us = 0;
    int64_t exact = 0;
    for (int32_t i : r.ops[0]) {
      const CommTime t = OpComm(g_.ops[i]);
      total_us += t.us;
      latency_us += t.latency_us;
      exact += t.steps;
    }
    if (r.ops[0].empty()) return Error("simgrid engine: empty DP collective");
    // The hops' links and the slowest hop's latency.
    double hop_latency_us = 0;
    std::vector<char> nvlink(D_);
    for (int d = 0; d < D_; ++d) {
      const int a = g_.ops[r.ops[d][0]].device, b = g_.ops[r.ops[(d + 1) % D_][0]].device;
      nvlink[d] = dp_in_node_ || NodeOfDevice(cluster_, pc_, a) == NodeOfDevice(cluster_, pc_, b);
      hop_latency_us =
          std::max(hop_latency_us, nvlink[d] ? cluster_.nvlink_latency_us : cluster_.nic_latency_us);
    }
    int64_t k = exact;
    if (options_.max_ring_steps > 0) k = std::min<int64_t>(k, options_.max_ring_steps);
    if (hop_latency_us > 0) k = std::min<int64_t>(k, static_cast<int64_t>(total_us / hop_latency_us));
    k = std::clamp<int64_t>(k, 1, 1 << 20);
    r.steps = static_cast<int>(k);
    const double delay_us = std::max(0.0, latency_us - static_cast<double>(k) * hop_latency_us);
    const double step_us = (total_us - delay_us) / static_cast<double>(k);
    const double delay_flops = delay_us * 1e-6 * kHostSpeed;
    const double nic = cluster_.gpu_nic_bytes_per_s();
    for (int d = 0; d < D_; ++d) {
      const int dev = g_.ops[r.ops[d][0]].device, next = g_.ops[r.ops[(d + 1) % D_][0]].device;
      const double lat = nvlink[d] ? cluster_.nvlink_latency_us : cluster_.nic_latency_us;
      const double bw = nvlink[d] ? cluster_.nvlink_bytes_per_s : nic;
      const double bytes = std::max(0.0, step_us - lat) * 1e-6 * bw;
      for (int s = 0; s < r.steps; ++s) {
        const int32_t id = acts_.Add(Dag::kComm, dev, next, bytes);
        if (d == 0 && s == 0) r.first = id;
      }
    }
    for (int d = 0; d < D_; ++d) {
      const int prev = (d + D_ - 1) % D_;
      for (int s = 1; s < r.steps; ++s) {
        acts_.Edge(r.first + d * r.steps + s - 1, r.first + d * r.steps + s);     // own previous step
        acts_.Edge(r.first + prev * r.steps + s - 1, r.first + d * r.steps + s);  // data from the predecessor
      }
      std::array<int32_t, 2> end = {r.first + d * r.steps + r.steps - 1,
                                    r.first + prev * r.steps + r.steps - 1};
      if (delay_flops > 0) {
        const int32_t delay = acts_.Add(Dag::kExec, devices_, -1, delay_flops);
        acts_.Edge(end[0], delay);
        acts_.Edge(end[1], delay);
        end = {delay, -1};
      }
      head_[r.ops[d][0]] = r.first + d * r.steps;
      for (int32_t i : r.ops[d]) tail_[i] = end;
    }
  }
  return Status();
}

// Dispatch all-to-all of micro-batch m (op_graph.h): once every replica's op has started, the dispatcher's own
// work (length all-gather, host time: OpGraph::dispatch_overhead_us) as a delay, then the transfers as chains,
// one transfer after the other per device and link class (NVLink, NIC): the senders' chains, or the receivers'
// when the op graph's price is set by a receive chain (AllToAllChains); every replica's op ends at a join of
// all the transfers. Without contention that lasts overhead + the longest chain, as the op graph prices it;
// with contention the flows that meet on a link share it (a sender chain's flows on the receivers' down links,
// a receiver chain's on the senders' up links).
Status ActivityBuilder::AddDispatch() {
  std::vector<TimedTransfer> timed;
  std::map<std::pair<int32_t, bool>, int32_t> chain_tail;  // (device, in node) -> its chain's last transfer
  for (const auto& [slot, ops] : dispatch_ops_) {
    for (int d = 0; d < D_; ++d)
      if (ops[d] < 0)
        return Error("simgrid engine: dispatch slot " + std::to_string(slot) + " has no op on DP replica " +
                     std::to_string(d));
    const int32_t join = acts_.Add(Dag::kInstant, -1, -1, 0.0);
    int32_t go = acts_.Add(Dag::kInstant, -1, -1, 0.0);
    for (int d = 0; d < D_; ++d) {
      acts_.Edge(head_[ops[d]], go);
      tail_[ops[d]] = {join, -1};
    }
    const double overhead_us = static_cast<size_t>(slot) < g_.dispatch_overhead_us.size()
                                   ? g_.dispatch_overhead_us[static_cast<size_t>(slot)]
                                   : 0.0;
    if (overhead_us > 0) {
      const int32_t delay = acts_.Add(Dag::kExec, devices_, -1, overhead_us * 1e-6 * kHostSpeed);
      acts_.Edge(go, delay);
      go = delay;
    }
    acts_.Edge(go, join);
    const std::span<const DeviceTransfer> transfers = g_.DispatchTransfers(slot);
    timed.clear();
    const double nic = cluster_.gpu_nic_bytes_per_s();
    for (const DeviceTransfer& t : transfers) {
      const bool nvlink =
          NodeOfDevice(cluster_, pc_, t.src_device) == NodeOfDevice(cluster_, pc_, t.dst_device);
      const double bw = nvlink ? cluster_.nvlink_bytes_per_s : nic;
      const double lat = nvlink ? cluster_.nvlink_latency_us : cluster_.nic_latency_us;
      timed.push_back({t.src_device, t.dst_device, nvlink, lat + static_cast<double>(t.bytes) / bw * 1e6});
    }
    const bool by_receiver = AllToAllChains(timed).receive_bound;
    chain_tail.clear();
    for (size_t k = 0; k < transfers.size(); ++k) {
      const DeviceTransfer& t = transfers[k];
      const int32_t c = acts_.Add(Dag::kComm, t.src_device, t.dst_device, static_cast<double>(t.bytes));
      auto [it, fresh] =
          chain_tail.try_emplace({by_receiver ? t.dst_device : t.src_device, timed[k].in_node}, c);
      acts_.Edge(fresh ? go : it->second, c);
      it->second = c;
      acts_.Edge(c, join);
    }
  }
  return Status();
}

// Dependencies and lane order: an op's head waits for the tails of its lane predecessor and of its explicit
// dependencies (and so do the activities that start with it).
void ActivityBuilder::AddDependencies() {
  std::vector<int32_t> preds;
  for (int i = 0; i < g_.num_ops(); ++i) {
    if (head_[i] < 0) continue;  // merged into its ring's first op: same barrier, lane order inside the ring
    preds.clear();
    auto add = [&](int32_t j) {
      for (int32_t a : tail_[j])
        if (a >= 0) preds.push_back(a);
    };
    if (g_.lane_prev[i] >= 0) add(g_.lane_prev[i]);
    for (int32_t j : g_.Deps(i)) add(j);
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (int32_t a : preds) acts_.Edge(a, head_[i]);
    if (auto it = co_start_.find(i); it != co_start_.end())
      for (int32_t x : it->second)
        for (int32_t a : preds) acts_.Edge(a, x);
  }
}

// ---- Times back ----

void ActivityBuilder::ReadBack(double* start_us, double* finish_us) const {
  for (int i = 0; i < g_.num_ops(); ++i) {
    if (head_[i] < 0) continue;
    start_us[i] = acts_.start_s(head_[i]) * 1e6;
    finish_us[i] = acts_.finish_s(tail_[i][0]) * 1e6;
    if (tail_[i][1] >= 0) finish_us[i] = std::max(finish_us[i], acts_.finish_s(tail_[i][1]) * 1e6);
  }
  for (const auto& [key, r] : rings_)
    for (const auto& v : r.ops) {
      if (v.size() < 2) continue;
      const double s0 = start_us[v[0]], f0 = finish_us[v[0]];
      double total = 0, done = 0;
      for (int32_t i : v) total += g_.duration_us[i];
      for (int32_t i : v) {
        start_us[i] = total > 0 ? s0 + (f0 - s0) * done / total : s0;
        done += g_.duration_us[i];
        finish_us[i] = total > 0 ? s0 + (f0 - s0) * done / total : f0;
      }
      finish_us[v.back()] = f0;
    }
}

}  // namespace

// Platform -> activities -> Engine::run -> times back.
Status ReplayInProcess(const ClusterSpec& cluster, const SimGridOptions& options, const OpGraph& g,
                       double* start_us, double* finish_us, SimGridReplayStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  MMTWIN_RETURN_IF_ERROR(CheckPlatform(cluster, g));
  const DeviceMesh mesh(g.parallel, cluster.gpus_per_node);

  int argc = 2;
  char arg0[] = "mmtwin-simgrid";
  char arg1[] = "--log=root.thresh:warning";
  char* argv[] = {arg0, arg1, nullptr};
  sg4::Engine engine(&argc, argv);
  ConfigureNetwork(options);

  const Routes routes = TalkingPairs(cluster, g, mesh);
  PlatformBuilder platform(cluster, options, g, routes);
  if (stats) stats->hierarchical_platform = platform.hierarchical();
  MMTWIN_ASSIGN_OR_RETURN(const std::vector<sg4::Host*> hosts, platform.Build());

  ActivityBuilder acts(cluster, options, g, mesh);
  MMTWIN_RETURN_IF_ERROR(acts.Build());
  MMTWIN_RETURN_IF_ERROR(acts.dag().Run(hosts, stats));

  acts.ReadBack(start_us, finish_us);
  if (stats) {
    stats->buckets_per_ring = acts.merge();
    stats->simulate_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return Status();
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "core/records/perfetto.h"

#include <cmath>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/plan/schedule.h"
#include "core/util/rng.h"

namespace mmtwin {
namespace {

struct Fixture {
  ParallelConfig pc;
  IterationCosts costs;
  OpGraph graph;
  IterationTiming timing;
};

Fixture Make(int dp, int pp, int vpp, int m, int zero, const char* sched, bool dispatch = false) {
  Fixture f;
  f.pc.dp = dp;
  f.pc.pp = pp;
  f.pc.vpp = vpp;
  f.pc.micro_batches = m;
  f.pc.zero_stage = zero;
  f.pc.tp = 2;
  Rng rng(42);
  f.costs.Resize(dp, m, f.pc.chunks());
  for (int d = 0; d < dp; ++d)
    for (int mb = 0; mb < m; ++mb)
      for (int c = 0; c < f.pc.chunks(); ++c) {
        ChunkCost& k = f.costs.At(d, mb, c);
        k.fwd_us = rng.Uniform(100, 1000);
        k.bwd_us = 2 * k.fwd_us;
        k.recompute_us = c % 2 == 0 ? k.fwd_us : 0;
        k.tp_fwd_us = rng.Uniform(1, 50);
        k.tp_bwd_us = rng.Uniform(1, 50);
        k.act_bytes = 1000000 + static_cast<int64_t>(rng.Below(1000000));
        k.send_bytes = c + 1 < f.pc.chunks() ? 4 << 20 : 0;
      }
  CommSpec comm;
  comm.p2p_bytes_per_s = 25e9;
  comm.p2p_latency_us = 5;
  comm.dp_bytes_per_s = 25e9;
  comm.dp_latency_us = 10;
  comm.dp_bucket_bytes = 40 << 20;
  if (dispatch) {  // every replica sends 8 MB to the next one before every micro-batch, across nodes
    comm.gpus_per_node = 2;
    comm.nvlink_bytes_per_s = 100e9;
    comm.nvlink_latency_us = 2;
    comm.nic_bytes_per_s = 10e9;
    comm.nic_latency_us = 5;
    f.costs.dispatch.assign(m, {});
    for (int mb = 0; mb < m; ++mb)
      for (int d = 0; d < dp; ++d) f.costs.dispatch[mb].push_back({d, (d + 1) % dp, 8 << 20});
  }
  std::vector<ChunkStatic> statics(f.pc.chunks());
  for (auto& s : statics) s.grad_bytes_per_gpu = 100 << 20;
  auto s = BuildSchedule(sched, pp, vpp, m);
  EXPECT_TRUE(s.ok());
  auto g = BuildIterationGraph(f.pc, *s, f.costs, statics, comm);
  EXPECT_TRUE(g.ok()) << g.error().message();
  f.graph = std::move(*g);
  f.timing = EvaluateAnalytic(f.graph);
  return f;
}

int64_t Ns(double us) { return std::llround(us * 1000.0); }

// The trace of the fixture's iteration, through its op records (what Simulate writes).
nlohmann::json Trace(const Fixture& f, const PerfettoOptions& o = {}) {
  return nlohmann::json::parse(PerfettoTrace(OpRecordsOf(f.graph, f.timing, f.costs, 0), f.pc, o));
}

void CheckWellFormed(const Fixture& f) {
  const nlohmann::json trace = Trace(f);
  // Round trip through text, as a viewer reads it.
  const nlohmann::json j = nlohmann::json::parse(trace.dump());
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.at("displayTimeUnit"), "ms");
  const auto& ev = j.at("traceEvents");
  ASSERT_TRUE(ev.is_array());
  std::map<int, std::string> process_names;
  std::set<std::pair<int, int>> thread_names;
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> spans;  // (pid, tid) -> [ts, end)
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> counters;               // pid -> (ts, bytes)
  size_t x_events = 0;
  for (const auto& e : ev) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name")) << e.dump();
    const std::string ph = e["ph"];
    const int pid = e["pid"], tid = e["tid"];
    EXPECT_GE(pid, 1);
    if (ph == "M") {
      ASSERT_TRUE(e.contains("args"));
      if (e["name"] == "process_name") process_names[pid] = e["args"]["name"];
      if (e["name"] == "thread_name") thread_names.insert({pid, tid});
    } else if (ph == "X") {
      ++x_events;
      ASSERT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("args") && e.contains("cat"))
          << e.dump();
      EXPECT_TRUE(e["args"].contains("micro_batch") && e["args"].contains("chunk") &&
                  e["args"].contains("bytes"));
      const double ts = e["ts"], dur = e["dur"];
      EXPECT_GE(ts, 0);
      EXPECT_GT(dur, 0);
      EXPECT_LE(ts + dur, f.timing.iteration_time_us + 1e-3);
      spans[{pid, tid}].push_back({Ns(ts), Ns(ts) + Ns(dur)});
    } else if (ph == "C") {
      ASSERT_TRUE(e.contains("ts") && e.contains("args") && e["args"].contains("bytes"));
      counters[pid].push_back({Ns(e["ts"].get<double>()), e["args"]["bytes"].get<int64_t>()});
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  // One process per device with its name, one named thread per lane.
  ASSERT_EQ(static_cast<int>(process_names.size()), f.graph.num_devices);
  for (int dev = 0; dev < f.graph.num_devices; ++dev) {
    EXPECT_EQ(process_names[dev + 1],
              "dp " + std::to_string(dev / f.pc.pp) + " / stage " + std::to_string(dev % f.pc.pp));
    for (int tid = 1; tid <= kNumLanes; ++tid) EXPECT_TRUE(thread_names.count({dev + 1, tid}));
  }
  // Every positive-duration op is drawn once.
  size_t drawn = 0;
  for (int i = 0; i < f.graph.num_ops(); ++i)
    drawn += f.graph.ops[i].device >= 0 && Ns(f.timing.finish_us[i]) > Ns(f.timing.start_us[i]);
  EXPECT_EQ(x_events, drawn);
  // No overlapping X events on one thread.
  for (auto& [key, v] : spans) {
    EXPECT_TRUE(thread_names.count(key));
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); ++i)
      EXPECT_LE(v[i - 1].second, v[i].first) << "pid " << key.first << " tid " << key.second;
  }
  // Activation counters: never negative, back to 0 at the end, peak = the largest in-flight sum.
  EXPECT_EQ(static_cast<int>(counters.size()), f.graph.num_devices);
  for (auto& [pid, v] : counters) {
    ASSERT_FALSE(v.empty());
    EXPECT_EQ(v.front().first, 0);
    for (size_t i = 1; i < v.size(); ++i) EXPECT_LE(v[i - 1].first, v[i].first);
    for (const auto& [t, b] : v) EXPECT_GE(b, 0);
    EXPECT_EQ(v.back().second, 0) << "pid " << pid;
  }
}

TEST(PerfettoTest, WellFormed1f1bWithDp) { CheckWellFormed(Make(2, 4, 1, 8, 1, "1f1b")); }
TEST(PerfettoTest, WellFormedInterleavedZero3) { CheckWellFormed(Make(2, 2, 2, 4, 3, "interleaved-1f1b")); }
TEST(PerfettoTest, WellFormedGpipeOneReplica) { CheckWellFormed(Make(1, 3, 1, 5, 0, "gpipe")); }
// The data-dispatch lane: its own thread (tid 5, "data dispatch"), one event per (replica, micro-batch).
TEST(PerfettoTest, WellFormedWithDispatch) {
  const Fixture f = Make(3, 2, 1, 4, 1, "1f1b", /*dispatch=*/true);
  CheckWellFormed(f);
  const nlohmann::json trace = Trace(f);
  int dispatch_events = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "dispatch") {
      ++dispatch_events;
      EXPECT_EQ(e["tid"], static_cast<int>(Lane::kDispatch) + 1);
      EXPECT_EQ(e["pid"].get<int>() % 2, 1);  // stage-0 devices only (pid = device + 1)
    } else if (e["ph"] == "M" && e["name"] == "thread_name" &&
               e["tid"] == static_cast<int>(Lane::kDispatch) + 1) {
      EXPECT_EQ(e["args"]["name"], "data dispatch");
    }
  EXPECT_EQ(dispatch_events, 3 * 4);
}

TEST(PerfettoTest, ActivationPeakMatchesInFlight) {
  // Uniform activation bytes: the counter's peak on stage r is min(pp - r, M) * act_bytes for 1F1B.
  Fixture f = Make(1, 4, 1, 8, 0, "1f1b");
  for (auto& k : f.costs.costs) k.act_bytes = 1000;
  const nlohmann::json j = Trace(f);
  std::map<int, int64_t> peak;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "C")
      peak[e["pid"].get<int>()] = std::max(peak[e["pid"].get<int>()], e["args"]["bytes"].get<int64_t>());
  for (int r = 0; r < 4; ++r) EXPECT_EQ(peak[r + 1], 1000 * std::min(4 - r, 8)) << r;
}

TEST(PerfettoTest, Deterministic) {
  const Fixture a = Make(2, 2, 1, 4, 2, "1f1b");
  const Fixture b = Make(2, 2, 1, 4, 2, "1f1b");
  EXPECT_EQ(Trace(a).dump(), Trace(b).dump());
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

TEST(PerfettoTest, MaxReplicasLimitsTheProcesses) {
  const Fixture f = Make(3, 2, 1, 4, 1, "1f1b");
  const nlohmann::json j = Trace(f, PerfettoOptions{.max_dp_replicas = 1});
  std::set<int> pids;
  for (const auto& e : j["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{1, 2}));
}

}  // namespace
}  // namespace mmtwin

namespace mmtwin {
namespace {

// A measured DP rank's records (mmtwin-train): the gradient all-reduce runs on the DP lane while the compute thread
// waits for it ("wait grad sync", lane dp too) and a pipeline receive's wait. The waits are drawn on the compute
// thread, so no thread has partly overlapping events (the wait used to sit on the DP track across the collective,
// which trace viewers draw wrongly and the import took for overlapping work); every event carries the iteration.
TEST(PerfettoTest, MeasuredWaitsAreDrawnOnTheComputeThread) {
  ParallelConfig pc;
  pc.dp = 2;
  auto rec = [](OpKind kind, Lane lane, double start, double dur) {
    OpRecord r;
    r.source = RecordSource::kMeasured;
    r.iteration = 7;
    r.kind = kind;
    r.lane = lane;
    r.device = 0;
    r.micro_batch = kind == OpKind::kDpCollective || kind == OpKind::kDpWait ? -1 : 0;
    r.start_us = start;
    r.duration_us = dur;
    return r;
  };
  const std::vector<OpRecord> ops = {
      rec(OpKind::kP2pRecv, Lane::kP2pForward, 0, 10),  rec(OpKind::kForward, Lane::kCompute, 10, 100),
      rec(OpKind::kBackward, Lane::kCompute, 110, 190), rec(OpKind::kDpCollective, Lane::kDp, 300, 100),
      rec(OpKind::kDpWait, Lane::kDp, 305, 110),        rec(OpKind::kOptimizer, Lane::kCompute, 415, 10)};
  const nlohmann::json j = nlohmann::json::parse(PerfettoTrace(ops, pc));
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> spans;
  int waits = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["args"]["iteration"], 7) << e.dump();
    const std::string cat = e["cat"];
    if (cat == "dp_wait" || cat == "p2p_recv") {
      EXPECT_EQ(e["tid"], 1) << e.dump();
      ++waits;
    }
    if (cat == "dp_collective") {
      EXPECT_EQ(e["tid"], static_cast<int>(Lane::kDp) + 1);
    }
    spans[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
        {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  }
  EXPECT_EQ(waits, 2);
  for (auto& [key, v] : spans) {
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); ++i)
      EXPECT_LE(v[i - 1].second, v[i].first + 1e-9) << "pid " << key.first << " tid " << key.second;
  }
}

}  // namespace
}  // namespace mmtwin

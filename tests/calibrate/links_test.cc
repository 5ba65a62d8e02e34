// SPDX-License-Identifier: Apache-2.0
// Link calibration (calibrate/links.h): sends paired with their receives recover known latency and bandwidth
// per link class, receives that began after the send are left out, the DP check keeps the fastest collectives,
// the cluster file reads back with the fitted figures, and bad input names the file.
#include "calibrate/links.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "calibrate/synthetic_runs.h"
#include "core/plan/mesh.h"
#include "core/records/pingpong.h"
#include "core/records/records_codec.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using testing::SyntheticRun;
using testing::WriteSyntheticRun;

// Per process: ctest runs this binary's tests as parallel processes, which share the temporary folder.
std::string Dir(const std::string& name) {
  return (fs::path(::testing::TempDir()) / ("links_" + std::to_string(::getpid()) + "_" + name)).string();
}

// True links: intra-node 20 µs + 5 GB/s, inter-node 80 µs + 1 GB/s.
double TransferUs(bool intra, int64_t bytes) {
  return intra ? 20 + static_cast<double>(bytes) / 5e9 * 1e6 : 80 + static_cast<double>(bytes) / 1e9 * 1e6;
}

// A DP2 x PP4 run on a cluster of 4 devices per node (Megatron order: DP inside PP), so the hop from pipeline
// stage 1 to 2 crosses nodes and the others do not; the test asks the mesh, as the code does.
std::string WriteRun(const std::string& dir, uint64_t seed, const std::string& cluster_file,
                     const std::string& host = "") {
  SyntheticRun run{dir};
  run.seed = seed;
  if (!host.empty()) {
    MachineRecord m;
    m.host = host;
    m.cores = 2;
    m.ranks = 8;
    run.machine = m;
  }
  run.scenario.cluster = cluster_file;
  run.scenario.nodes = 2;
  run.scenario.parallel.pp = 4;
  if (std::string e = WriteSyntheticRun(run); !e.empty()) return e;
  const DeviceMesh mesh(run.scenario.parallel, 4);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> size(100'000, 20'000'000);
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<OpRecord> ops;
  double t = 0;
  for (int it = 0; it < 6; ++it)
    for (int dp = 0; dp < 2; ++dp)
      for (int m = 0; m < 4; ++m)
        for (int hop = 0; hop < 3; ++hop)
          for (int grad = 0; grad < 2; ++grad) {
            const int from_chunk = grad ? hop + 1 : hop, to_chunk = grad ? hop : hop + 1;
            const int from = mesh.Device(dp, from_chunk), to = mesh.Device(dp, to_chunk);
            const bool intra = mesh.NodeOfDevice(from) == mesh.NodeOfDevice(to);
            const int64_t bytes = size(rng);
            OpRecord s;
            s.source = RecordSource::kMeasured;
            s.iteration = it;
            s.kind = grad ? OpKind::kP2pSendGradient : OpKind::kP2pSendActivation;
            s.lane = grad ? Lane::kP2pBackward : Lane::kP2pForward;
            s.device = from;
            s.micro_batch = m;
            s.chunk = from_chunk;
            s.bytes = bytes;
            s.start_us = t + 1000;
            s.duration_us = 30;  // the post: not the transfer
            OpRecord r = s;
            r.kind = OpKind::kP2pRecv;
            r.device = to;
            r.chunk = to_chunk;
            const bool late =
                (m + it) % 3 == 0;  // the receive begins after the bytes arrived: a local copy only
            r.start_us = late ? s.start_us + 2 * TransferUs(intra, bytes) : t;
            r.duration_us = late ? 5 : s.start_us + TransferUs(intra, bytes) * (1 + noise(rng)) - r.start_us;
            ops.push_back(s);
            ops.push_back(r);
            t += 1e5;
          }
  // DP collectives of 4 MB: 10% at the link's pace (bus 2 GB/s), the rest waiting for the other replica.
  for (int k = 0; k < 40; ++k) {
    OpRecord c;
    c.source = RecordSource::kMeasured;
    c.kind = OpKind::kDpCollective;
    c.lane = Lane::kDp;
    c.device = mesh.Device(k % 2, 0);
    c.micro_batch = -1;
    c.bytes = 4'000'000;
    c.duration_us = 2.0 * 1 / 2 * 4e6 / 2e9 * 1e6 * (k % 10 == 0 ? 1.0 : 3.0 + k);
    ops.push_back(c);
  }
  if (!WriteFileAtomic(dir + "/ops.csv", OpsCsv(ops)).ok()) return "ops";
  return "";
}

std::string ClusterFile() {
  const std::string path = Dir("four-per-node.yaml");
  std::ofstream(path) << "name: four-per-node\ndescription: test\nnodes: 2\ngpus_per_node: 4\n"
                         "device: {name: g, peak_flops: 1e12, memory_bytes: 8e9, hbm_bytes_per_s: 1e12}\n"
                         "nvlink_bytes_per_s: 1e11\nnvlink_latency_us: 1\nnics_per_node: 2\n"
                         "nic_bytes_per_s: 1e10\nnic_latency_us: 2\n";
  return path;
}

TEST(CalibrateLinks, RecoversLatencyAndBandwidthPerLinkClass) {
  const std::string cluster = ClusterFile();
  ASSERT_EQ(WriteRun(Dir("a"), 1, cluster), "");
  ASSERT_EQ(WriteRun(Dir("b"), 2, cluster), "");
  auto links = CalibrateLinks({Dir("a"), Dir("b")});
  ASSERT_TRUE(links.ok()) << links.error().message();
  ASSERT_EQ(links->p2p.size(), 2u);
  EXPECT_EQ(links->p2p[0].link, "intra-node");
  EXPECT_EQ(links->p2p[1].link, "inter-node");
  for (const LinkClassFit& f : links->p2p) {
    const bool intra = f.link == "intra-node";
    EXPECT_NEAR(f.bytes_per_s, intra ? 5e9 : 1e9, 0.03 * (intra ? 5e9 : 1e9)) << f.link;
    EXPECT_NEAR(f.latency_us, intra ? 20 : 80, 0.02 * TransferUs(intra, 5'000'000)) << f.link;
    EXPECT_GT(f.fit.samples, 0);
    EXPECT_GT(f.fit.r2, 0.99) << f.link;
  }
  int64_t paired = 0;
  for (const LinkClassFit& f : links->p2p) paired += f.fit.samples;
  // 2 runs x 6 iterations x 2 replicas x 4 micro-batches x 3 hops x 2 directions = 576 sends; the 8 (iteration,
  // micro-batch) pairs with (m + it) % 3 == 0 per run had late receives: 2 x 8 x 2 x 3 x 2 = 192 left out.
  EXPECT_EQ(paired, 576 - 192);
  EXPECT_EQ(links->p2p[0].fit.samples, 2 * links->p2p[1].fit.samples);  // hops 0-1 and 2-3 vs 1-2
  // DP: the fastest 10% are the link-paced ones: bus bandwidth 2 GB/s.
  EXPECT_EQ(links->dp_collectives, 80);
  EXPECT_EQ(links->dp_samples, 8);
  EXPECT_NEAR(links->dp_bus_bytes_per_s, 2e9, 1);

  // The cluster file reads back with the fitted figures (inter-node: per NIC, the node's 2 NICs share it).
  auto base = LoadCluster(cluster);
  ASSERT_TRUE(base.ok()) << base.error().message();
  auto back = ParseCluster(FormatCalibratedCluster(*base, *links), "calibrated.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->name, "four-per-node-calibrated");
  EXPECT_EQ(back->gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(back->device.peak_flops, 1e12);
  // The device's memory and kernel terms carry over (the same usable memory and per-kernel time).
  ClusterSpec with_terms = *base;
  with_terms.device.reserved_bytes = 1 << 30;
  with_terms.device.workspace_bytes = 8 << 20;
  with_terms.device.fragmentation = 0.05;
  with_terms.device.kernel_overhead_us = 4;
  auto terms = ParseCluster(FormatCalibratedCluster(with_terms, *links), "calibrated.yaml");
  ASSERT_TRUE(terms.ok()) << terms.error().message();
  EXPECT_EQ(UsableMemoryBytes(terms->device), UsableMemoryBytes(with_terms.device));
  EXPECT_DOUBLE_EQ(terms->device.kernel_overhead_us, 4);
  for (const LinkClassFit& f : links->p2p) {
    if (f.link == "intra-node") {
      EXPECT_NEAR(back->nvlink_bytes_per_s, f.bytes_per_s, 1e-5 * f.bytes_per_s);
      EXPECT_NEAR(back->nvlink_latency_us, f.latency_us, 1e-4 * f.latency_us);
    } else {
      EXPECT_NEAR(back->node_nic_bytes_per_s(), f.bytes_per_s, 1e-5 * f.bytes_per_s);
      EXPECT_NEAR(back->nic_latency_us, f.latency_us, 1e-4 * f.latency_us);
    }
  }
}

// A ping-pong run (mmtwin-train launch --pingpong) on the same 2 x 4 cluster, 8 ranks: peers 1-3 share rank
// 0's node, 4-7 do not. Round trips of 4 KiB .. 64 MiB are twice the true transfer, with 3% noise and every
// tenth one delayed 5x (a descheduled echo).
std::string WritePingPong(const std::string& dir, const std::string& cluster_file) {
  SyntheticRun run{dir};
  run.scenario.cluster = cluster_file;
  run.scenario.nodes = 2;
  run.scenario.parallel.dp = 8;
  run.scenario.parallel.pp = 1;
  if (std::string e = WriteSyntheticRun(run); !e.empty()) return e;
  fs::remove(dir + "/layers.csv");
  fs::remove(dir + "/summary.json");
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 0.03);
  std::vector<PingPongSample> rows;
  for (int peer = 1; peer < 8; ++peer)
    for (int64_t bytes = 4096; bytes <= (int64_t{64} << 20); bytes *= 4)
      for (int k = 0; k < 20; ++k) {
        const double rtt = 2 * TransferUs(peer < 4, bytes) * (1 + noise(rng)) * (k % 10 == 9 ? 5 : 1);
        rows.push_back({peer, bytes, rtt, 0});
      }
  if (!WriteFileAtomic(dir + "/pingpong.csv", PingPongCsv(rows)).ok()) return "pingpong";
  return "";
}

TEST(CalibrateLinks, PingPongRunsFitEachClassOverMessageSizes) {
  const std::string cluster = ClusterFile();
  ASSERT_EQ(WritePingPong(Dir("pingpong"), cluster), "");
  auto links = CalibrateLinks({Dir("pingpong")});
  ASSERT_TRUE(links.ok()) << links.error().message();
  EXPECT_EQ(links->pingpong_samples, 7 * 8 * 20);
  ASSERT_EQ(links->p2p.size(), 2u);
  for (const LinkClassFit& f : links->p2p) {
    const bool intra = f.link == "intra-node";
    EXPECT_EQ(f.fit.samples, (intra ? 3 : 4) * 8 * 20) << f.link;
    EXPECT_NEAR(f.bytes_per_s, intra ? 5e9 : 1e9, 0.03 * (intra ? 5e9 : 1e9)) << f.link;
    EXPECT_NEAR(f.latency_us, intra ? 20 : 80, intra ? 10 : 20) << f.link;
    EXPECT_GT(f.fit.outliers, 0) << f.link;  // the delayed echoes
  }
  // Together with training runs, the ping-pong samples fit the classes (the training runs' P2P are not mixed
  // in); the DP check still comes from the training runs.
  ASSERT_EQ(WriteRun(Dir("d"), 4, cluster), "");
  auto both = CalibrateLinks({Dir("d"), Dir("pingpong")});
  ASSERT_TRUE(both.ok()) << both.error().message();
  for (size_t i = 0; i < both->p2p.size(); ++i)
    EXPECT_EQ(both->p2p[i].fit.samples, links->p2p[i].fit.samples) << both->p2p[i].link;
  EXPECT_GT(both->dp_samples, 0);
  // A peer outside the scenario's world is an error naming the file, line and field.
  ASSERT_TRUE(WriteFileAtomic(Dir("pingpong") + "/pingpong.csv", PingPongCsv({{9, 4096, 50.0, 0}})).ok());
  auto bad = CalibrateLinks({Dir("pingpong")});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(Dir("pingpong") + "/pingpong.csv:3: peer: 9 is not a rank"),
            std::string::npos)
      << bad.error().message();
}

TEST(PingPongCsv, RoundTripAndStrictErrors) {
  const std::vector<PingPongSample> rows = {{1, 4096, 91.25, 0}, {3, 67108864, 36942.5, 0}};
  auto back = ParsePingPongCsv(PingPongCsv(rows), "p.csv");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].peer, 3);
  EXPECT_EQ((*back)[1].bytes, 67108864);
  EXPECT_DOUBLE_EQ((*back)[1].round_trip_us, 36942.5);
  EXPECT_EQ((*back)[1].line, 4);
  auto err = [](const std::string& text) {
    auto r = ParsePingPongCsv(text, "p.csv");
    return r.ok() ? std::string("ok") : r.error().message();
  };
  const std::string head = "# mmtwin-pingpong v1\npeer,bytes,round_trip_us\n";
  EXPECT_EQ(err(head + "1,4096,0\n"), "p.csv:3: round_trip_us: '0' is not a finite number > 0");
  EXPECT_EQ(err(head + "0,4096,5\n"), "p.csv:3: peer: '0' is not a rank >= 1");
  EXPECT_EQ(err(head + "1,0,5\n"), "p.csv:3: bytes: '0' is not an integer >= 1");
  EXPECT_NE(err("# mmtwin-pingpong v2\n").find("p.csv:1: expected the version line"), std::string::npos);
  EXPECT_NE(err("# mmtwin-pingpong v1\npeer,bytes\n").find("p.csv:2: expected the header"),
            std::string::npos);
}

TEST(CalibrateLinks, BadInputNamesTheFile) {
  SyntheticRun run{Dir("no-ops")};
  ASSERT_EQ(WriteSyntheticRun(run), "");
  auto r = CalibrateLinks({run.dir});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(run.dir + "/ops.csv"), std::string::npos) << r.error().message();
  ASSERT_EQ(WriteRun(Dir("c"), 3, ClusterFile()), "");
  SyntheticRun other{Dir("other-cluster")};
  ASSERT_EQ(WriteSyntheticRun(other), "");
  ASSERT_TRUE(WriteFileAtomic(other.dir + "/ops.csv", OpsCsv({})).ok());
  auto mixed = CalibrateLinks({Dir("c"), other.dir});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message().find("links are calibrated for one machine at a time"), std::string::npos)
      << mixed.error().message();
  EXPECT_FALSE(CalibrateLinks({}).ok());
}

// Issue 33, item 1: one machine is the machine the measured runs recorded, not the cluster label their scenarios
// name: runs of one host under two labels combine, runs of two hosts do not (the message names both).
TEST(CalibrateLinks, OneMachineIsTheRecordedHostNotTheClusterLabel) {
  const std::string a = ClusterFile();
  const std::string b = Dir("same-machine-other-label.yaml");
  std::filesystem::copy_file(a, b, std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(WriteRun(Dir("host-a-1"), 11, a, "host-a"), "");
  ASSERT_EQ(WriteRun(Dir("host-a-2"), 12, b, "host-a"), "");
  ASSERT_EQ(WriteRun(Dir("host-b"), 13, a, "host-b"), "");
  auto same = CalibrateLinks({Dir("host-a-1"), Dir("host-a-2")});
  EXPECT_TRUE(same.ok()) << same.error().message();
  auto two = CalibrateLinks({Dir("host-a-1"), Dir("host-b")});
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message().find("machine: ran on host-b, but " + Dir("host-a-1") + " ran on host-a"),
            std::string::npos)
      << two.error().message();
}

}  // namespace
}  // namespace mmtwin

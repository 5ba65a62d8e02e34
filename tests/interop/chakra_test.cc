// SPDX-License-Identifier: Apache-2.0
// Chakra execution traces (sim/interop/chakra.h): shipped scenarios' op graphs exported, written, read back and
// replayed with Chakra's semantics give the analytic evaluator's iteration time exactly (the trace keeps every
// dependency); the files carry Chakra's framing and field numbers (checked byte by byte from the protobuf wire
// format, not with protobuf); every send has its receive; bad traces are errors naming what is wrong; the CLI
// writes and replays them.
#include "interop/chakra.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "core/eval/analytic.h"
#include "core/util/csv.h"
#include "driver/planner.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / ("chakra_test_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

OpGraph GraphOf(const std::string& scenario) {
  auto s = LoadScenario(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/" + scenario);
  EXPECT_TRUE(s.ok()) << s.error().message();
  PlanOptions o;
  o.memory_report = false;
  o.keep_trace = false;
  auto run = BuildPlan(*s, o);
  EXPECT_TRUE(run.ok()) << run.error().message();
  auto pg = BuildPlanIterationGraph(*run, 0);
  EXPECT_TRUE(pg.ok()) << pg.error().message();
  return pg->graph;
}

// Shipped scenarios written and read back equal, replayed to the analytic evaluator's time.
void CheckRoundTrip(const std::string& name, const std::vector<std::string>& scenarios) {
  const fs::path dir = TempDir(name);
  for (const std::string& s : scenarios) {
    SCOPED_TRACE(s);
    const OpGraph g = GraphOf(s);
    auto t = ChakraFromGraph(g, s);
    ASSERT_TRUE(t.ok()) << t.error().message();
    ASSERT_EQ(t->ranks.size(), static_cast<size_t>(g.num_devices));
    const std::string out = (dir / fs::path(s).stem()).string();
    ASSERT_TRUE(WriteChakra(*t, out, "mmtwin").ok());
    auto back = ReadChakra(out, "mmtwin");
    ASSERT_TRUE(back.ok()) << back.error().message();
    ASSERT_EQ(back->ranks.size(), t->ranks.size());
    EXPECT_EQ(back->groups, t->groups);
    EXPECT_EQ(back->source, s);
    for (size_t r = 0; r < t->ranks.size(); ++r) {
      ASSERT_EQ(back->ranks[r].nodes.size(), t->ranks[r].nodes.size()) << "rank " << r;
      for (size_t i = 0; i < t->ranks[r].nodes.size(); ++i) {
        const ChakraNode &a = t->ranks[r].nodes[i], &b = back->ranks[r].nodes[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.type, b.type);
        EXPECT_EQ(a.data_deps, b.data_deps);
        EXPECT_EQ(a.ctrl_deps, b.ctrl_deps);
        EXPECT_EQ(a.duration_us, b.duration_us);
        EXPECT_EQ(a.duration_micros, b.duration_micros);
        EXPECT_EQ(a.comm_type, b.comm_type);
        EXPECT_EQ(a.comm_size, b.comm_size);
        EXPECT_EQ(a.comm_tag, b.comm_tag);
        EXPECT_EQ(a.pg_name, b.pg_name);
        EXPECT_EQ(a.kind, b.kind);
      }
    }
    std::vector<double> scratch;
    const double analytic = AnalyticIterationTimeUs(g, &scratch);
    auto replay = ReplayChakra(*back);
    ASSERT_TRUE(replay.ok()) << replay.error().message();
    EXPECT_NEAR(replay->step_us, analytic, 1e-9 * analytic);
    // With whole microseconds, as another consumer reads the trace: within half a microsecond per node.
    auto micros = ReplayChakra(*back, true);
    ASSERT_TRUE(micros.ok());
    EXPECT_NEAR(micros->step_us, analytic, 0.5 * static_cast<double>(micros->nodes));
  }
}

// Pipelines: 1F1B with DP gradient buckets, zero-bubble (split backward), interleaved with sequence-parallel TP.
TEST(ChakraTest, PipelinesReplayToTheAnalyticTimeExactly) {
  if (!ChakraAvailable()) GTEST_SKIP() << "built without protobuf";
  CheckRoundTrip("pipelines", {"default.yaml", "omnibal/internvl-6b-34b-omnibal.yaml",
                               "schedules/internvl-6b-20b-zb-h1.yaml",
                               "validation/published/korthikanti-175b-selective.yaml"});
}

// Sharded data parallelism: DeepSpeed ZeRO-3 gathers with a frozen tower, FSDP units, 2D sequence parallelism.
TEST(ChakraTest, ShardedLayoutsReplayToTheAnalyticTimeExactly) {
  if (!ChakraAvailable()) GTEST_SKIP() << "built without protobuf";
  CheckRoundTrip("sharded",
                 {"llava/llava-1.5-7b-finetune.yaml", "validation/published/torchtitan-llama3-70b-full.yaml",
                  "longvila/mmsp-32gpu.yaml"});
}

// Every op but the barriers is one node on its own rank; every p2p send has exactly one receive on its peer with the
// same tag and size; every collective names a group that holds its rank, and the members issue as many on it.
void CheckNodesSendsAndGroups(const std::string& scenario) {
  SCOPED_TRACE(scenario);
  const OpGraph g = GraphOf(scenario);
  auto t = ChakraFromGraph(g, "default");
  ASSERT_TRUE(t.ok());
  int64_t ops = 0, sends = 0;
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::kBarrier) continue;
    ++ops;
    sends += op.kind == OpKind::kP2pSendActivation || op.kind == OpKind::kP2pSendGradient;
  }
  int64_t nodes = 0, recvs = 0, send_nodes = 0;
  std::map<int32_t, const ChakraNode*> by_tag;
  std::map<std::pair<std::string, int>, int> per_member;
  for (size_t r = 0; r < t->ranks.size(); ++r)
    for (const ChakraNode& n : t->ranks[r].nodes) {
      nodes += n.type != ChakraNodeType::kRecv && n.kind != "sync";
      if (n.type == ChakraNodeType::kSend) {
        ++send_nodes;
        EXPECT_TRUE(by_tag.emplace(n.comm_tag, &n).second) << "tag " << n.comm_tag << " twice";
      }
      if (n.type == ChakraNodeType::kColl) {
        ASSERT_TRUE(t->groups.count(n.pg_name)) << n.name;
        const auto& m = t->groups.at(n.pg_name);
        EXPECT_NE(std::find(m.begin(), m.end(), static_cast<int>(r)), m.end()) << n.name;
        ++per_member[{n.pg_name, static_cast<int>(r)}];
      }
      for (uint64_t d : n.data_deps) EXPECT_LT(d, n.id);
    }
  EXPECT_EQ(nodes, ops);
  EXPECT_EQ(send_nodes, sends);  // default.yaml's graph needs no sync pairs
  for (size_t r = 0; r < t->ranks.size(); ++r)
    for (const ChakraNode& n : t->ranks[r].nodes) {
      if (n.type != ChakraNodeType::kRecv) continue;
      ++recvs;
      ASSERT_TRUE(by_tag.count(n.comm_tag));
      const ChakraNode& s = *by_tag.at(n.comm_tag);
      EXPECT_EQ(s.comm_dst, static_cast<int>(r));
      EXPECT_EQ(s.comm_size, n.comm_size);
    }
  EXPECT_EQ(recvs, sends);
  for (const auto& [pg, members] : t->groups) {
    std::set<int> counts;
    for (int m : members) counts.insert(per_member[{pg, m}]);
    EXPECT_EQ(counts.size(), 1u) << "group " << pg;
  }
}

TEST(ChakraTest, NodesSendsAndGroupsFollowTheGraph) {
  CheckNodesSendsAndGroups("default.yaml");                                          // 1F1B, DP 2 x PP 4
  CheckNodesSendsAndGroups("validation/published/korthikanti-175b-selective.yaml");  // interleaved, vpp 3
  CheckNodesSendsAndGroups("schedules/internvl-6b-20b-zb-h1.yaml");                  // split backward
}

// A send two ops of the receiving rank wait for is received once (a Chakra consumer matches one receive per send),
// and a dependency on another rank's compute becomes a zero-byte message; the replay is the analytic time.
TEST(ChakraTest, ASendIsReceivedOnceAndOtherRemoteDependenciesAreMessages) {
  OpGraph g;
  g.parallel.pp = 2;
  g.num_devices = 2;
  auto add = [&](OpKind kind, int device, double us, std::vector<int32_t> deps, int32_t lane_prev) {
    Op op;
    op.kind = kind;
    op.device = device;
    op.duration_us = us;
    op.micro_batch = 0;
    if (kind == OpKind::kP2pSendActivation) {
      op.lane = Lane::kP2pForward;
      op.peer = 1;
      op.bytes = 100;
    }
    g.dep_begin.push_back(static_cast<int32_t>(g.deps.size()));
    g.deps.insert(g.deps.end(), deps.begin(), deps.end());
    g.lane_prev.push_back(lane_prev);
    g.duration_us.push_back(us);
    g.ops.push_back(op);
  };
  add(OpKind::kForward, 0, 10, {}, -1);            // 0
  add(OpKind::kP2pSendActivation, 0, 2, {0}, -1);  // 1
  add(OpKind::kForward, 1, 5, {1}, -1);            // 2: waits for the send
  add(OpKind::kBackward, 1, 7, {1, 2}, 2);         // 3: waits for it too
  add(OpKind::kBackward, 0, 4, {0, 3}, 0);         // 4: waits for rank 1's backward: a message
  g.dep_begin.push_back(static_cast<int32_t>(g.deps.size()));
  g.local_deps = g.deps;
  auto t = ChakraFromGraph(g, "hand");
  ASSERT_TRUE(t.ok()) << t.error().message();
  int recvs1 = 0, sends1 = 0, recvs0 = 0;
  for (const ChakraNode& n : t->ranks[1].nodes) {
    recvs1 += n.type == ChakraNodeType::kRecv;
    sends1 += n.type == ChakraNodeType::kSend;
  }
  for (const ChakraNode& n : t->ranks[0].nodes) recvs0 += n.type == ChakraNodeType::kRecv;
  EXPECT_EQ(recvs1, 1);  // one receive for two waiting ops
  EXPECT_EQ(sends1, 1);  // the zero-byte message to rank 0
  EXPECT_EQ(recvs0, 1);
  auto r = ReplayChakra(*t);
  ASSERT_TRUE(r.ok()) << r.error().message();
  std::vector<double> scratch;
  EXPECT_DOUBLE_EQ(r->step_us, AnalyticIterationTimeUs(g, &scratch));
  EXPECT_DOUBLE_EQ(r->step_us, 10 + 2 + 5 + 7 + 4);
  EXPECT_EQ(r->messages, 2);
}

// Read a varint from `s` at `i` (the protobuf wire format, by hand).
uint64_t Varint(const std::string& s, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; i < s.size(); shift += 7) {
    const auto b = static_cast<uint8_t>(s[i++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  return v;
}

// Chakra's framing (a varint32 size before each message) and et_def.proto's field numbers, decoded by hand: the
// GlobalMetadata's field 1 (version), then Node messages whose field 1 (id) counts 0, 1, ... and field 3 (type)
// is a NodeType value.
TEST(ChakraTest, FilesCarryChakrasFramingAndFieldNumbers) {
  if (!ChakraAvailable()) GTEST_SKIP() << "built without protobuf";
  const fs::path dir = TempDir("framing");
  auto t = ChakraFromGraph(GraphOf("default.yaml"), "default");
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(WriteChakra(*t, (dir / "out").string(), "p").ok());
  auto bytes = ReadFile((dir / "out" / "p.0.et").string());
  ASSERT_TRUE(bytes.ok());
  const std::string& s = *bytes;
  size_t i = 0;
  const uint64_t meta_size = Varint(s, i);
  ASSERT_LE(i + meta_size, s.size());
  EXPECT_EQ(static_cast<uint8_t>(s[i]), 0x0a);  // field 1, length-delimited: version
  size_t j = i + 1;
  const uint64_t vlen = Varint(s, j);
  EXPECT_EQ(s.substr(j, vlen), kChakraVersion);
  i += meta_size;
  uint64_t expect_id = 0;
  while (i < s.size()) {
    const uint64_t size = Varint(s, i);
    ASSERT_LE(i + size, s.size());
    const size_t end = i + size;
    // Field 1 (id) is omitted when 0 (proto3); otherwise it comes first as a varint.
    uint64_t id = 0, type = 0;
    size_t k = i;
    while (k < end) {
      const uint64_t key = Varint(s, k);
      const uint64_t field = key >> 3, wire = key & 7;
      if (wire == 0) {
        const uint64_t v = Varint(s, k);
        if (field == 1) id = v;
        if (field == 3) type = v;
      } else if (wire == 2) {
        k += Varint(s, k);
      } else if (wire == 1) {
        k += 8;
      } else if (wire == 5) {
        k += 4;
      } else {
        FAIL() << "wire type " << wire;
      }
    }
    EXPECT_EQ(id, expect_id++);
    EXPECT_TRUE(type == 4 || type == 5 || type == 6 || type == 7) << type;
    i = end;
  }
  EXPECT_EQ(expect_id, t->ranks[0].nodes.size());
  auto groups = ReadFile((dir / "out" / "comm_group.json").string());
  ASSERT_TRUE(groups.ok());
  EXPECT_NE(groups->find("\"1\": ["), std::string::npos) << *groups;
}

ChakraTrace TwoRanks() {
  ChakraTrace t;
  t.ranks.resize(2);
  ChakraNode a;  // rank 0: compute 10 us, then send to rank 1
  a.id = 0;
  a.name = "f";
  a.duration_us = 10;
  ChakraNode s;
  s.id = 1;
  s.name = "send";
  s.type = ChakraNodeType::kSend;
  s.comm_dst = 1;
  s.comm_tag = 7;
  s.duration_us = 2;
  s.data_deps = {0};
  t.ranks[0].nodes = {a, s};
  ChakraNode r;  // rank 1: receive, then compute 5 us, then an all-reduce with rank 0's... none
  r.id = 0;
  r.name = "recv";
  r.type = ChakraNodeType::kRecv;
  r.comm_src = 0;
  r.comm_tag = 7;
  ChakraNode b;
  b.id = 1;
  b.name = "g";
  b.duration_us = 5;
  b.data_deps = {0};
  t.ranks[1].nodes = {r, b};
  return t;
}

// A hand-made trace by its closed form, and what makes a trace unreplayable.
TEST(ChakraTest, ReplayClosedFormAndErrors) {
  ChakraTrace t = TwoRanks();
  auto ok = ReplayChakra(t);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_DOUBLE_EQ(ok->step_us, 10 + 2 + 5);
  EXPECT_EQ(ok->rank_end_us, (std::vector<double>{12, 17}));
  EXPECT_EQ(ok->messages, 1);

  // A collective on both ranks: starts at the later member's data readiness.
  ChakraTrace c = TwoRanks();
  c.groups["1"] = {0, 1};
  for (int r = 0; r < 2; ++r) {
    ChakraNode n;
    n.id = 2;
    n.name = "ar";
    n.type = ChakraNodeType::kColl;
    n.pg_name = "1";
    n.duration_us = 3;
    n.data_deps = {1};
    c.ranks[static_cast<size_t>(r)].nodes.push_back(n);
  }
  auto coll = ReplayChakra(c);
  ASSERT_TRUE(coll.ok()) << coll.error().message();
  EXPECT_DOUBLE_EQ(coll->step_us, 17 + 3);
  EXPECT_EQ(coll->rank_end_us, (std::vector<double>{20, 20}));
  EXPECT_EQ(coll->collectives, 1);

  ChakraTrace lost = TwoRanks();
  lost.ranks[1].nodes[0].comm_tag = 8;
  EXPECT_EQ(ReplayChakra(lost).error().message(), "rank 1 node 0 (recv): no send from rank 0 with tag 8");
  ChakraTrace uneven = c;
  uneven.ranks[1].nodes.pop_back();
  EXPECT_EQ(ReplayChakra(uneven).error().message(), "group 1: rank 1 issues 0 collectives on it, rank 0 1");
  ChakraTrace stranger = c;
  stranger.groups["1"] = {0};
  EXPECT_EQ(ReplayChakra(stranger).error().message(),
            "rank 1 node 2 (ar): rank 1 is not a member of group 1");
  ChakraTrace forward = TwoRanks();
  forward.ranks[1].nodes[1].data_deps = {1};
  EXPECT_EQ(ReplayChakra(forward).error().message(),
            "rank 1 node 1 (g): depends on node 1, not an earlier one");
}

TEST(ChakraTest, BadFilesAreErrorsNamingTheFile) {
  if (!ChakraAvailable()) GTEST_SKIP() << "built without protobuf";
  const fs::path dir = TempDir("bad");
  EXPECT_EQ(ReadChakra((dir / "none").string(), "mmtwin").error().message(),
            (dir / "none").string() + "/mmtwin.0.et: no such file (rank 0 of the trace " +
                (dir / "none").string() + "/mmtwin.RANK.et)");
  ASSERT_TRUE(WriteChakra(TwoRanks(), (dir / "t").string(), "mmtwin").ok());
  // A truncated node.
  const fs::path f = dir / "t" / "mmtwin.1.et";
  auto bytes = ReadFile(f.string());
  ASSERT_TRUE(bytes.ok());
  std::ofstream(f, std::ios::binary) << bytes->substr(0, bytes->size() - 3);
  EXPECT_EQ(ReadChakra((dir / "t").string(), "mmtwin").error().message(),
            f.string() + ": node 1: does not parse as a Chakra Node");
  // comm_group.json naming a rank the trace does not have.
  ASSERT_TRUE(WriteChakra(TwoRanks(), (dir / "g").string(), "mmtwin").ok());
  std::ofstream(dir / "g" / "comm_group.json") << "{\"1\": [0, 5]}";
  EXPECT_EQ(ReadChakra((dir / "g").string(), "mmtwin").error().message(),
            (dir / "g" / "comm_group.json").string() + ": 1: 5 is not a rank of the trace (0..1)");
}

// export-chakra, then import-chakra: the run folder replays (mmtwin replay) exactly as `mmtwin simulate`'s run folder
// of the same scenario does, what-ifs included (the export carries Simulate's durations, overlap slowdown included).
TEST(ChakraTest, ExportedTracesImportAsARunThatReplaysLikeTheSimulatedOne) {
  if (!ChakraAvailable()) GTEST_SKIP() << "built without protobuf";
  const fs::path dir = TempDir("import");
  for (const std::string s : {"default.yaml", "validation/published/korthikanti-175b-selective.yaml"}) {
    SCOPED_TRACE(s);
    const std::string scenario = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/" + s;
    const std::string stem = fs::path(s).stem().string();
    const std::string traces = (dir / (stem + "-chakra")).string(),
                      imported = (dir / (stem + "-run")).string(),
                      simulated = (dir / (stem + "-sim")).string();
    ASSERT_EQ(testing::Mmtwin("export-chakra '" + scenario + "' -o '" + traces + "'").code, 0);
    auto imp =
        testing::Mmtwin("import-chakra '" + traces + "' --scenario '" + scenario + "' -o '" + imported + "'");
    ASSERT_EQ(imp.code, 0) << imp.out;
    ASSERT_EQ(testing::Mmtwin("simulate '" + scenario + "' -o '" + simulated + "'", false).code, 0);
    auto a = testing::Mmtwin("replay '" + imported + "' --json", false);
    auto b = testing::Mmtwin("replay '" + simulated + "' --json", false);
    ASSERT_EQ(a.code, 0) << a.out;
    ASSERT_EQ(b.code, 0) << b.out;
    const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
    EXPECT_EQ(ja["source"], "measured");
    const auto& ia = ja["iterations"][0];
    // The simulated folder replays every sampled iteration; the trace is its first.
    const auto& ib = jb["iterations"][0];
    EXPECT_EQ(ia["iteration"], ib["iteration"]);
    EXPECT_EQ(ia["unmatched_ops"], 0);
    for (const char* k : {"replayed_us", "data_us", "partition_us", "stragglers_us", "ideal_us"})
      EXPECT_NEAR(ia[k].get<double>(), ib[k].get<double>(), 1e-6 * ib[k].get<double>()) << k;
    EXPECT_NEAR(ia["recorded_us"].get<double>(), ia["replayed_us"].get<double>(),
                1e-9 * ia["replayed_us"].get<double>());
  }
  // A trace for another layout is refused.
  const std::string traces = (dir / "default-chakra").string();
  auto wrong =
      testing::Mmtwin("import-chakra '" + traces + "' --scenario '" + std::string(MMTWIN_SOURCE_DIR) +
                      "/scenarios/longvila/mmsp-32gpu.yaml' -o '" + (dir / "x").string() + "'");
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.out.find("8 ranks, but the scenario's layout has 32 op-graph devices"), std::string::npos)
      << wrong.out;
}

TEST(ChakraTest, CliExportsAndReplays) {
  if (!ChakraAvailable()) GTEST_SKIP() << "built without protobuf";
  const fs::path dir = TempDir("cli");
  const std::string out = (dir / "chakra").string();
  auto e = testing::Mmtwin("export-chakra " + std::string(MMTWIN_SOURCE_DIR) +
                           "/scenarios/default.yaml -o '" + out + "' --json");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("\"ranks\": 8"), std::string::npos) << e.out;
  auto r = testing::Mmtwin("replay-chakra '" + out + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("8 ranks"), std::string::npos) << r.out;
  auto bad = testing::Mmtwin("replay-chakra '" + (dir / "missing").string() + "'");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("mmtwin replay-chakra: "), std::string::npos) << bad.out;
  auto it = testing::Mmtwin("export-chakra " + std::string(MMTWIN_SOURCE_DIR) +
                            "/scenarios/default.yaml -o '" + out + "' --iteration 99");
  EXPECT_EQ(it.code, 2);
  EXPECT_NE(it.out.find("--iteration: 99 is not a replayed iteration"), std::string::npos) << it.out;
}

}  // namespace
}  // namespace mmtwin

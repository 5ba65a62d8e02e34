// SPDX-License-Identifier: Apache-2.0
// Layering (sim/README.md): the folders of sim/, backend/ and gui/ form layers, and an include may only point to
// the same layer or a lower one; the programs (the CLI, the backend, the GUI, the report generator) are the top
// layer and include nothing of one another. Third-party frameworks stay in their layer: only sim/engine includes
// SimGrid, only backend/ includes Torch, only gui/ includes Qt (so the report library sim/report is Qt-free: gui/
// holds its Qt plotter); the core's headers include no nlohmann/json (it reaches every translation unit that
// includes them and doubles their compile time). Always built (not only with SimGrid).
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

// The layers, by folder (repository-relative): an include may only point to the same rank or a lower one. Same
// rank below the clients: mutual includes allowed (trace <-> model: a trace's tokens depend on the model, the model
// zoo reads trace sizes). sim/core/ is exactly the core (0..7) and io (10) libraries; the engine and the clients of
// the core (driver, sweep, calibrate) are folders of sim/ beside it; the report library (sim/report: the reports,
// the validation write-ups, the chart writer; Qt-free) sits above sweep and calibrate, below the programs that use
// it (the CLI's `mmtwin validate`, gui/'s mmtwin-report), so calibrate cannot include it. The programs are the top
// rank, kClientRank, and a client includes no other client: each names its client, and only folders of the same
// client may include one another there.
constexpr int kClientRank = 20;
struct Layer {
  int rank = 0;
  std::string client;  // the program a client folder belongs to; "" below kClientRank
};
const std::map<std::string, Layer> kLayers = {
    {"sim/core/util", {0}},
    {"sim/core/trace", {1}},
    {"sim/core/model", {1}},
    {"sim/core/cluster", {2}},
    {"sim/core/cost", {3}},
    {"sim/core/plan", {4}},
    {"sim/core/balance", {5}},
    {"sim/core/graph", {6}},
    {"sim/core/eval", {7}},
    {"sim/core/scenario", {10}},
    {"sim/core/records", {10}},
    {"sim/engine", {11}},
    {"sim/driver", {12}},
    {"sim/sweep", {13}},
    {"sim/calibrate", {13}},
    {"sim/report", {14}},
    {"sim/tune", {14}},
    {"sim/whatif", {13}},
    {"sim/interop", {13}},
    {"sim/cli", {kClientRank, "mmtwin"}},
    {"backend", {kClientRank, "mmtwin-train"}},
    {"gui", {kClientRank, "mmtwin-gui"}},
};
// Folders of test code: they may include any layer (and are not ranked).
const std::vector<std::string> kTestFolders = {"tests", "gui/tests"};
// Layers of the core library proper (mmtwin_core): no JSON in their headers.
constexpr int kCoreTop = 7;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Under(const std::string& rel, const std::string& folder) { return rel.rfind(folder + "/", 0) == 0; }

// The layer folder of a repository-relative path ("sim/core/plan" for a file in that folder; the longest match), or
// "" when it is in none (test code, or outside every layer).
std::string FolderOf(const std::string& rel) {
  for (const std::string& t : kTestFolders)
    if (Under(rel, t)) return "";
  std::string best;
  for (const auto& [folder, layer] : kLayers)
    if (Under(rel, folder) && folder.size() > best.size()) best = folder;
  return best;
}

// Where a quoted include of `from` (repository-relative) points, as the build resolves it: the including file's own
// folder first, then the include roots (sim/ for the libraries and the CLI, the repository root for backend/).
// "" when no such file exists (e.g. a header generated at build time).
std::string Resolve(const fs::path& root, const std::string& from, const std::string& target) {
  for (const fs::path& base : {fs::path(from).parent_path(), fs::path("sim"), fs::path()}) {
    const fs::path candidate = (base / target).lexically_normal();
    if (fs::exists(root / candidate)) return candidate.generic_string();
  }
  return "";
}

// Why an include from `from` to `to` (both repository-relative) breaks the layering, or "" when it does not.
std::string Violation(const std::string& from, const std::string& to) {
  const std::string a = FolderOf(from), b = FolderOf(to);
  if (a.empty() || b.empty() || a == b) return "";
  const Layer& la = kLayers.at(a);
  const Layer& lb = kLayers.at(b);
  if (lb.rank > la.rank)
    return from + " (" + a + ", rank " + std::to_string(la.rank) + ") includes " + to + " (" + b + ", rank " +
           std::to_string(lb.rank) + "), a higher layer";
  if (la.rank == kClientRank && lb.rank == kClientRank && la.client != lb.client)
    return from + " (client " + la.client + ") includes " + to + " (client " + lb.client +
           "): clients share only the libraries below them";
  return "";
}

struct Include {
  std::string target;  // the quoted path
  bool angle = false;
};

std::vector<Include> Includes(const std::string& text) {
  static const std::regex re(R"re(^\s*#\s*include\s*([<"])([^>"]+)[>"])re");
  std::vector<Include> out;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, re)) out.push_back({m[2].str(), m[1].str() == "<"});
  return out;
}

std::vector<fs::path> Sources(const fs::path& root) {
  std::vector<fs::path> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".h" || ext == ".cc" || ext == ".cpp" || ext == ".hpp"))
      out.push_back(e.path());
  }
  return out;
}

bool IsSimGrid(const Include& i) {
  return i.angle && (i.target.rfind("simgrid/", 0) == 0 || i.target.rfind("xbt", 0) == 0);
}
bool IsTorch(const Include& i) {
  return i.angle && (i.target.rfind("torch/", 0) == 0 || i.target.rfind("ATen/", 0) == 0 ||
                     i.target.rfind("c10/", 0) == 0);
}
bool IsQt(const Include& i) {
  return i.angle && i.target.size() > 1 && i.target[0] == 'Q' &&
         (std::isupper(static_cast<unsigned char>(i.target[1])) || i.target.rfind("Qt", 0) == 0);
}

TEST(LayeringTest, IncludesPointDownTheLayers) {
  const fs::path root(MMTWIN_SOURCE_DIR);
  int checked = 0;
  std::map<std::string, int> files_per_folder;
  for (const char* top : {"sim", "backend", "gui"}) {
    for (const fs::path& file : Sources(root / top)) {
      const std::string rel = fs::relative(file, root).generic_string();
      if (Under(rel, "gui/tests")) continue;
      const std::string from = FolderOf(rel);
      ASSERT_FALSE(from.empty()) << rel << " is in no known layer: add its folder to kLayers and sim/README.md";
      ++files_per_folder[from];
      for (const Include& inc : Includes(Read(file))) {
        if (inc.angle) continue;
        const std::string to = Resolve(root, rel, inc.target);
        if (to.empty()) continue;  // generated at build time (e.g. git_describe.h)
        ++checked;
        const std::string why = Violation(rel, to);
        EXPECT_TRUE(why.empty()) << why;
      }
    }
  }
  EXPECT_GT(checked, 400);
  for (const auto& [folder, layer] : kLayers)
    EXPECT_GT(files_per_folder[folder], 0) << folder << " is ranked but holds no source: remove it from kLayers";
}

TEST(LayeringTest, FrameworksStayInTheirLayer) {
  const fs::path root(MMTWIN_SOURCE_DIR);
  int scanned = 0, simgrid_includes = 0;
  for (const char* top : {"sim", "backend", "gui", "tests"}) {
    for (const fs::path& file : Sources(root / top)) {
      const std::string rel = fs::relative(file, root).string();
      ++scanned;
      for (const Include& inc : Includes(Read(file))) {
        const bool engine = rel.rfind("sim/engine/", 0) == 0 || rel.rfind("tests/engine/", 0) == 0 ||
                            rel == "tests/bench/engine_bench.cc";
        if (IsSimGrid(inc)) {
          EXPECT_TRUE(engine) << rel << " includes SimGrid (<" << inc.target << ">); only sim/engine may";
          simgrid_includes += engine;
        }
        if (IsTorch(inc)) {
          EXPECT_TRUE(rel.rfind("backend/", 0) == 0 || rel.rfind("tests/backend/", 0) == 0)
              << rel << " includes Torch (<" << inc.target << ">); only backend/ may";
        }
        if (IsQt(inc)) {
          EXPECT_TRUE(rel.rfind("gui/", 0) == 0)  // the GUI's own tests live in gui/tests
              << rel << " includes Qt (<" << inc.target << ">); only gui/ may";
        }
      }
    }
  }
  EXPECT_GT(scanned, 100);
  EXPECT_GE(simgrid_includes, 1);  // sim/engine/replay.cc
  // The engine's public header is SimGrid-free: the driver includes it.
  for (const Include& inc : Includes(Read(root / "sim/engine/simgrid_engine.h")))
    EXPECT_FALSE(IsSimGrid(inc));
}

TEST(LayeringTest, CoreHeadersIncludeNoJson) {
  const fs::path root(MMTWIN_SOURCE_DIR);
  int headers = 0;
  for (const fs::path& file : Sources(root / "sim/core")) {
    if (file.extension() != ".h") continue;
    const std::string rel = fs::relative(file, root).generic_string();
    if (kLayers.at(FolderOf(rel)).rank > kCoreTop) continue;
    ++headers;
    for (const Include& inc : Includes(Read(file)))
      EXPECT_NE(inc.target, "nlohmann/json.hpp") << rel << ": keep JSON in .cc files (return text instead)";
  }
  EXPECT_GT(headers, 30);
}

// The node fit lives in the mesh too (NodesFor, FitsInNode, DeviceMesh::DpGroupInNode) and a GPU's NIC share in
// the cluster (ClusterSpec::gpu_nic_bytes_per_s): no `(world + gpus_per_node - 1) / gpus_per_node`,
// `tp * dp <= gpus_per_node` or `node_nic_bytes_per_s() / gpn` written out elsewhere in sim/.
const std::regex kNodeFit(
    R"re(\w\s*-\s*1\)\s*/\s*[\w.>-]*(gpn|gpus_per_node)\b|\btp\s*\*\s*[\w.>-]*dp\s*<=|node_nic_bytes_per_s\(\)\s*/)re");

TEST(LayeringTest, NodeFitOnlyInTheMesh) {
  const fs::path sim = fs::path(MMTWIN_SOURCE_DIR) / "sim";
  for (const fs::path& file : Sources(sim)) {
    const std::string rel = fs::relative(file, sim).string();
    if (rel.rfind("core/plan/mesh.", 0) == 0 || rel == "core/cluster/cluster.h") continue;
    std::istringstream in(Read(file));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const std::string code = line.substr(0, line.find("//"));
      EXPECT_FALSE(std::regex_search(code, kNodeFit))
          << rel << ":" << n << ": a node fit outside the mesh (use NodesFor / FitsInNode / DpGroupInNode): " << line;
    }
  }
  EXPECT_TRUE(std::regex_search("return (world + gpn - 1) / gpn;", kNodeFit));
  EXPECT_TRUE(std::regex_search("(s.parallel.world_size() + c->gpus_per_node - 1) / c->gpus_per_node", kNodeFit));
  EXPECT_TRUE(std::regex_search("const bool in = pc.tp * pc.dp <= gpn;", kNodeFit));
  EXPECT_TRUE(std::regex_search("c.node_nic_bytes_per_s() / gpn", kNodeFit));
  EXPECT_FALSE(std::regex_search("const bool in = mesh.DpGroupInNode();", kNodeFit));
}

// Device arithmetic lives in the device mesh (core/plan/mesh.h) only: no `dp_idx * pp + pp_idx`, `device / pp`
// or `device % pp` written out anywhere else in sim/.
const std::regex kDeviceArithmetic(
    R"re(\b(device|dev|src_device|dst_device|op\.device)\s*[/%]\s*\w|\b(d|dp_idx|replica)\s*\*\s*(P|pp|par\.pp|pc\.pp|parallel\.pp|p\.pp)\b|GlobalRank\()re");

TEST(LayeringTest, DeviceArithmeticOnlyInTheMesh) {
  const fs::path sim = fs::path(MMTWIN_SOURCE_DIR) / "sim";
  for (const fs::path& file : Sources(sim)) {
    const std::string rel = fs::relative(file, sim).string();
    if (rel.rfind("core/plan/mesh.", 0) == 0) continue;
    std::istringstream in(Read(file));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const size_t code_end = line.find("//");
      const std::string code = line.substr(0, code_end);
      EXPECT_FALSE(std::regex_search(code, kDeviceArithmetic))
          << rel << ":" << n << ": device arithmetic outside the mesh (use DeviceMesh): " << line;
    }
  }
  EXPECT_TRUE(std::regex_search("const int d = op.device / P;", kDeviceArithmetic));
  EXPECT_TRUE(std::regex_search("dev_sum[d * par.pp + r]", kDeviceArithmetic));
  EXPECT_FALSE(std::regex_search("const int dev = mesh.Device(d, r);", kDeviceArithmetic));
}

// The checks themselves, on fabricated lines: every upward include between two ranked folders and every edge
// between two clients is caught; downward edges and edges inside one folder are not; framework includes are seen.
TEST(LayeringTest, TheCheckerSeesViolations) {
  const auto inc =
      Includes("#include \"driver/simulate.h\"\n  #  include <QWidget>\n#  include <torch/torch.h>\n");
  ASSERT_EQ(inc.size(), 3u);
  EXPECT_EQ(inc[0].target, "driver/simulate.h");
  EXPECT_FALSE(inc[0].angle);
  EXPECT_TRUE(IsQt(inc[1]));
  EXPECT_TRUE(IsTorch(inc[2]));
  EXPECT_FALSE(IsQt(Include{"queue", true}));
  EXPECT_TRUE(IsSimGrid(Include{"simgrid/s4u.hpp", true}));

  // Resolution as the build does it: the including folder, then sim/, then the repository root.
  const fs::path root(MMTWIN_SOURCE_DIR);
  EXPECT_EQ(Resolve(root, "sim/sweep/runner.cc", "driver/simulate.h"), "sim/driver/simulate.h");
  EXPECT_EQ(Resolve(root, "backend/rank.cc", "backend/train.h"), "backend/train.h");
  EXPECT_EQ(Resolve(root, "gui/views.cc", "run_data.h"), "gui/run_data.h");
  EXPECT_EQ(Resolve(root, "gui/views.cc", "no/such/header.h"), "");

  int upward = 0, between_clients = 0;
  for (const auto& [a, la] : kLayers) {
    for (const auto& [b, lb] : kLayers) {
      const std::string why = Violation(a + "/x.cc", b + "/y.h");
      if (a == b || (lb.rank <= la.rank && (lb.rank < kClientRank || la.client == lb.client))) {
        EXPECT_EQ(why, "") << a << " -> " << b;
      } else {
        EXPECT_NE(why, "") << a << " -> " << b << " must be refused";
        upward += lb.rank > la.rank;
        between_clients += lb.rank == la.rank;
      }
    }
  }
  EXPECT_GT(upward, 100);
  EXPECT_GE(between_clients, 6);  // three clients or more, both directions
  // The named cases of the restructuring: the core never reaches its clients, clients never reach each other.
  EXPECT_NE(Violation("sim/core/plan/partition.cc", "sim/driver/planner.h"), "");
  EXPECT_NE(Violation("sim/driver/driver.cc", "sim/sweep/runner.h"), "");
  EXPECT_NE(Violation("sim/engine/replay.cc", "sim/driver/simulate.h"), "");
  EXPECT_NE(Violation("gui/views.cc", "sim/cli/cli_format.h"), "");
  EXPECT_NE(Violation("backend/measure.cc", "gui/run_data.h"), "");
  EXPECT_EQ(Violation("sim/cli/app.cc", "sim/sweep/runner.h"), "");
  // The reports: above calibrate (which asks nothing of them), below both programs that write them.
  EXPECT_NE(Violation("sim/calibrate/validate_suite.cc", "sim/report/validation_suite.h"), "");
  EXPECT_EQ(Violation("sim/report/validation.cc", "sim/calibrate/validate_suite.h"), "");
  EXPECT_EQ(Violation("sim/cli/validate_cmd.cc", "sim/report/validation_suite.h"), "");
  EXPECT_EQ(Violation("gui/report_plotter.cc", "sim/report/plotter.h"), "");
  EXPECT_NE(Violation("sim/report/report.cc", "gui/report.h"), "");
  EXPECT_EQ(Violation("tests/cli/cli_test.cc", "sim/cli/commands.h"), "");
}

}  // namespace

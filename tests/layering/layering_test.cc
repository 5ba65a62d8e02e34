// Layering (sim/README.md): the folders of sim/ form layers, and an include may only point to the same layer or
// a lower one. Third-party frameworks stay in their layer: only sim/engine includes SimGrid, only backend/
// includes Torch, only gui/ includes Qt; the core's headers include no nlohmann/json (it reaches every
// translation unit that includes them and doubles their compile time). Always built (not only with SimGrid).
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

// Rank of each folder: core (0..8), io (10), engine (11), driver and calibrate (12), sweep (13), cli (20). Same rank: mutual
// includes allowed (trace <-> model: a trace's tokens depend on the model, the model zoo reads trace sizes).
const std::map<std::string, int> kRank = {
    {"core/util", 0},    {"core/trace", 1},      {"core/model", 1},    {"core/cluster", 2},
    {"core/cost", 3},    {"core/plan", 4},       {"core/balance", 5},  {"core/graph", 6},
    {"core/eval", 7},    {"core/scenario", 10},  {"core/records", 10}, {"engine", 11},
    {"core/driver", 12}, {"core/calibrate", 12}, {"core/sweep", 13},   {"cli", 20},
};
// Layers of the core library proper (mmtwin_core): no JSON in their headers.
constexpr int kCoreTop = 7;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "core/plan" for sim/core/plan/x.h, "engine" for sim/engine/x.cc; "" when not in a known folder.
std::string FolderOf(const std::string& rel) {
  for (const auto& [folder, rank] : kRank)
    if (rel.rfind(folder + "/", 0) == 0) return folder;
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
  const fs::path sim = fs::path(MMTWIN_SOURCE_DIR) / "sim";
  int checked = 0;
  for (const fs::path& file : Sources(sim)) {
    const std::string rel = fs::relative(file, sim).string();
    const std::string from = FolderOf(rel);
    ASSERT_FALSE(from.empty()) << rel << " is in no known layer: add its folder to kRank and sim/README.md";
    for (const Include& inc : Includes(Read(file))) {
      if (inc.angle) continue;
      const std::string to = FolderOf(inc.target);
      if (to.empty()) continue;  // e.g. "cli/commands.h" resolved below
      ++checked;
      EXPECT_LE(kRank.at(to), kRank.at(from))
          << rel << " (" << from << ") includes " << inc.target << " (" << to << "), a higher layer";
    }
  }
  EXPECT_GT(checked, 100);
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
  const fs::path sim = fs::path(MMTWIN_SOURCE_DIR) / "sim";
  for (const fs::path& file : Sources(sim / "core")) {
    if (file.extension() != ".h") continue;
    const std::string rel = fs::relative(file, sim).string();
    if (kRank.at(FolderOf(rel)) > kCoreTop) continue;
    for (const Include& inc : Includes(Read(file)))
      EXPECT_NE(inc.target, "nlohmann/json.hpp") << rel << ": keep JSON in .cc files (return text instead)";
  }
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

// Docs and data cite only what is in the repository: no path into the sibling shared/ folder or an absolute /work
// path, and every cited sim/docs note exists.
TEST(LayeringTest, DocsCiteOnlyTheRepository) {
  const fs::path root(MMTWIN_SOURCE_DIR);
  // (Spelled in pieces so that this file does not match the checks it implements.)
  static const std::regex outside(std::string(R"re((\.\./sha)re") + R"re(red|/work/sha)re" +
                                  R"re(red|/work/main))re");
  static const std::regex cited(R"re(sim/docs/([a-z_]+\.md))re");
  int scanned = 0;
  for (const char* top : {"sim", "tests", "scenarios", "traces", "backend", "gui", "reports"}) {
    if (!fs::exists(root / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() ||
          (ext != ".md" && ext != ".h" && ext != ".cc" && ext != ".yaml" && ext != ".sh"))
        continue;
      const std::string rel = fs::relative(e.path(), root).string();
      if (rel == "tests/layering/layering_test.cc") continue;  // the patterns themselves
      const std::string text = Read(e.path());
      ++scanned;
      std::smatch m;
      EXPECT_FALSE(std::regex_search(text, m, outside))
          << rel << " cites a path outside the repository: " << m.str();
      for (auto it = std::sregex_iterator(text.begin(), text.end(), cited); it != std::sregex_iterator();
           ++it)
        EXPECT_TRUE(fs::exists(root / "sim/docs" / (*it)[1].str()))
            << rel << " cites missing sim/docs/" << (*it)[1];
    }
  }
  for (const char* f : {"README.md", "CMakeLists.txt"}) {
    std::smatch m;
    const std::string text = Read(root / f);
    EXPECT_FALSE(std::regex_search(text, m, outside))
        << f << " cites a path outside the repository: " << m.str();
  }
  EXPECT_GT(scanned, 100);
}

// The checks themselves: a fabricated upward include and framework includes are caught.
TEST(LayeringTest, TheCheckerSeesViolations) {
  const auto inc =
      Includes("#include \"core/driver/simulate.h\"\n  #  include <QWidget>\n#  include <torch/torch.h>\n");
  ASSERT_EQ(inc.size(), 3u);
  EXPECT_GT(kRank.at(FolderOf(inc[0].target)), kRank.at("core/plan"));
  EXPECT_TRUE(IsQt(inc[1]));
  EXPECT_TRUE(IsTorch(inc[2]));
  EXPECT_FALSE(IsQt(Include{"queue", true}));
  EXPECT_TRUE(IsSimGrid(Include{"simgrid/s4u.hpp", true}));
}

}  // namespace

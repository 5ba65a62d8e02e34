// Layering (style.md, from LLVM): only sim/engine/ may include SimGrid headers; the core and the CLI never
// do.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

TEST(LayeringTest, OnlyTheEngineIncludesSimGrid) {
  namespace fs = std::filesystem;
  const fs::path sim = fs::path(MMTWIN_SOURCE_DIR) / "sim";
  int scanned = 0, engine_includes = 0;
  for (const auto& e : fs::recursive_directory_iterator(sim)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const bool includes = text.find("#include <simgrid/") != std::string::npos ||
                          text.find("#include <xbt/") != std::string::npos;
    const std::string rel = fs::relative(e.path(), sim).string();
    const bool engine = rel.rfind("engine/", 0) == 0;
    ++scanned;
    if (engine) {
      engine_includes += includes;
      // The engine's public header is SimGrid-free too: the CLI includes it.
      if (rel == "engine/simgrid_engine.h") EXPECT_FALSE(includes) << rel;
    } else {
      EXPECT_FALSE(includes) << rel << " includes a SimGrid header";
    }
  }
  EXPECT_GT(scanned, 20);
  EXPECT_GE(engine_includes, 1);  // replay.cc
}

}  // namespace

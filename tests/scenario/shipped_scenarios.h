// SPDX-License-Identifier: Apache-2.0
// The shipped scenarios the golden and replay tests run: every scenario file under scenarios/ except sweeps/,
// tune/, goldens/, the validation suites (*.suite.yaml) and a file whose first line is "# no golden: REASON" (the
// 100k-GPU scale benchmark: ~45 s and 2.4 GB a run, far longer under the sanitizers; tests/update_goldens.sh skips
// it too). Sorted.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mmtwin::testing {

inline std::vector<std::filesystem::path> ShippedScenarios() {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(MMTWIN_SOURCE_DIR) / "scenarios";
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string rel = fs::relative(e.path(), root).string();
    if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
    if (rel.rfind("sweeps/", 0) == 0 || rel.rfind("tune/", 0) == 0 || rel.rfind("goldens/", 0) == 0) continue;
    if (rel.size() > 11 && rel.compare(rel.size() - 11, 11, ".suite.yaml") == 0) continue;
    std::ifstream in(e.path());
    std::string first;
    std::getline(in, first);
    if (first.rfind("# no golden:", 0) == 0) continue;
    out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mmtwin::testing

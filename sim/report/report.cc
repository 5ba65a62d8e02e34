// SPDX-License-Identifier: Apache-2.0
// The reports by name, the folder written as a unit, where the data is (report.h).
#include "report/report.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "core/util/atomic_dir.h"
#include "core/util/csv.h"
#include "report/changes.h"
#include "report/common.h"

#ifndef MMTWIN_REPORT_DATA_DIR
#define MMTWIN_REPORT_DATA_DIR "sim/report/data"
#endif
#ifndef MMTWIN_SOURCE_SCENARIOS_DIR
#define MMTWIN_SOURCE_SCENARIOS_DIR "scenarios"
#endif

namespace mmtwin::report {

namespace fs = std::filesystem;

namespace {

// <bin>/../share/mmtwin/SUB of the running executable when that folder exists, else "".
std::string Installed(const std::string& sub) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path dir = exe.parent_path().parent_path() / "share" / "mmtwin" / sub;
  return fs::is_directory(dir, ec) ? dir.string() : "";
}

}  // namespace

std::vector<std::string> ReportNames() { return {"omnibal", "orchmllm", "longvila", "tune", "policies", "validation"}; }

Status CheckOutputDir(const std::string& dir) {
  if (dir.empty()) return Error("no output folder given");
  std::error_code ec;
  const fs::path out = fs::absolute(dir, ec);
  if (ec) return Error(dir + ": " + ec.message());
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) return Error(dir + ": exists and is not a folder");
  const fs::path parent = out.parent_path();
  if (!fs::is_directory(parent, ec))
    return Error(dir + ": the parent folder " + parent.string() + " does not exist");
  if (access(parent.c_str(), W_OK | X_OK) != 0)
    return Error(dir + ": the parent folder " + parent.string() + " is not writable");
  if (fs::exists(out, ec) && access(out.c_str(), W_OK | X_OK) != 0) return Error(dir + ": not writable");
  return Status();
}

std::string ReportDbPath(const ReportOptions& o) {
  if (!o.db_path.empty()) return o.db_path;
  return "runs/reports/" + o.name + (o.reduced ? "-reduced" : "") + ".sqlite";
}

std::string ReportDataDir() {
  if (const char* env = std::getenv("MMTWIN_REPORT_DATA"); env && *env) return env;
  if (std::string dir = Installed("reports"); !dir.empty()) return dir;
  return MMTWIN_REPORT_DATA_DIR;
}

std::string DefaultScenariosDir() {
  std::error_code ec;
  if (fs::is_directory("scenarios/sweeps", ec)) return "scenarios";
  if (std::string dir = Installed("scenarios"); !dir.empty()) return dir;
  return MMTWIN_SOURCE_SCENARIOS_DIR;
}

Status CheckReportInputs(const ReportOptions& options) {
  bool known = false;
  std::string valid;
  for (const std::string& n : ReportNames()) {
    known = known || n == options.name;
    valid += (valid.empty() ? "" : ", ") + n;
  }
  if (!known) return Error("unknown report '" + options.name + "'; valid reports are: " + valid);
  MMTWIN_RETURN_IF_ERROR(CheckOutputDir(options.out_dir));
  MMTWIN_RETURN_IF_ERROR(internal::LoadReportData(options, options.name,
                                                  options.name == "validation" ? "runs.yaml" : "paper.yaml")
                             .status());
  if (!options.runs_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(options.runs_dir, ec))
      return Error("--runs " + options.runs_dir +
                   ": no such folder (it holds SUITE/runs/, the kept backend runs)");
  }
  return Status();
}

Status GenerateReport(const ReportOptions& options, Plotter& plotter) {
  MMTWIN_RETURN_IF_ERROR(CheckReportInputs(options));  // before the runs: bad input fails at once
  const std::string scenarios = options.scenarios_dir.empty() ? DefaultScenariosDir() : options.scenarios_dir;

  internal::ReportFiles files;
  if (options.name == "omnibal")
    MMTWIN_RETURN_IF_ERROR(internal::GenerateOmnibal(options, scenarios, plotter, files));
  else if (options.name == "orchmllm")
    MMTWIN_RETURN_IF_ERROR(internal::GenerateOrchmllm(options, scenarios, plotter, files));
  else if (options.name == "longvila")
    MMTWIN_RETURN_IF_ERROR(internal::GenerateLongvila(options, scenarios, plotter, files));
  else if (options.name == "tune")
    MMTWIN_RETURN_IF_ERROR(internal::GenerateTune(options, scenarios, plotter, files));
  else if (options.name == "policies")
    MMTWIN_RETURN_IF_ERROR(internal::GeneratePolicies(options, scenarios, plotter, files));
  else
    MMTWIN_RETURN_IF_ERROR(internal::GenerateValidation(options, scenarios, plotter, files));
  if (options.name == "validation") {
    // The index sits beside the suites' folders (and their kept runs): its files are written one by one.
    for (const auto& [name, content] : files)
      MMTWIN_RETURN_IF_ERROR(WriteFileAtomic(options.out_dir + "/" + name, content));
  } else {
    // Over an earlier generation: how the paper's figures moved (changes.h).
    if (auto old = ReadFile(options.out_dir + "/README.md"); old.ok())
      for (auto& [name, content] : files)
        if (name == "README.md") content = InsertBeforeAfter(content, BeforeAfterSection(*old, content));
    std::vector<std::pair<std::string, std::string_view>> views;
    for (const auto& [name, content] : files) views.emplace_back(name, content);
    MMTWIN_RETURN_IF_ERROR(WriteFolderAtomic(options.out_dir, views));
  }
  if (options.progress)
    options.progress("wrote " + options.out_dir + "/README.md and " + std::to_string(files.size() - 1) + " " +
                     (plotter.Extension() == "png" ? "PNG" : "SVG") + " plots");
  return Status();
}

}  // namespace mmtwin::report

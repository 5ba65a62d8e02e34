// SPDX-License-Identifier: Apache-2.0
// The run folder (run_folder.h).
#include "core/records/run_folder.h"

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "core/records/plan_codec.h"
#include "core/records/records_codec.h"
#include "core/util/atomic_dir.h"
#include "core/util/csv.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

constexpr RunFile kAllRunFiles[kNumRunFiles] = {RunFile::kSummary, RunFile::kStages,   RunFile::kOps,
                                                RunFile::kTrace,   RunFile::kScenario, RunFile::kLayers,
                                                RunFile::kPlan,    RunFile::kPingPong};

// Reads one file of the folder into `text`; false (and no error) when it is optional and absent.
Result<bool> ReadPart(const std::string& dir, RunFile f, bool required, std::string& text) {
  const std::string path = RunFilePath(dir, f);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (!required) return false;
    return Error::Io(path + ": missing from the run folder");
  }
  auto read = ReadFile(path);
  if (!read) return Error::Io(read.error().message());
  text = std::move(*read);
  return true;
}

// Moves a decoded part into its field of the folder, or returns the decoder's error.
template <class T>
Status Keep(Result<T> decoded, std::optional<T>& field) {
  if (!decoded.ok()) return decoded.error();
  field = std::move(*decoded);
  return Status();
}

// Decodes `text`, the content of file `f` of the folder, into its field of `run`.
Status Decode(RunFile f, std::string&& text, RunFolder& run) {
  const std::string path = RunFilePath(run.dir, f);
  switch (f) {
    case RunFile::kSummary:
      return Keep(SummaryFromJson(text, path), run.summary);
    case RunFile::kOps:
      return Keep(ParseOpsCsv(text, path), run.ops);
    case RunFile::kTrace:
      run.trace_json = std::move(text);
      return Status();
    case RunFile::kScenario:
      run.scenario_yaml = std::move(text);
      return Status();
    case RunFile::kLayers:
      return Keep(ParseLayerTimingsCsv(text, path), run.layers);
    case RunFile::kPlan:
      return Keep(PlanFromJson(text, path), run.plan);
    case RunFile::kPingPong:
      return Keep(ParsePingPongCsv(text, path), run.pingpong);
    case RunFile::kStages:
      break;
  }
  return Error::Internal(path + ": not read back; the summary holds the stages");
}

}  // namespace

const char* RunFileName(RunFile f) {
  switch (f) {
    case RunFile::kSummary:
      return "summary.json";
    case RunFile::kStages:
      return "stages.csv";
    case RunFile::kOps:
      return "ops.csv";
    case RunFile::kTrace:
      return "trace.json";
    case RunFile::kScenario:
      return "scenario.yaml";
    case RunFile::kLayers:
      return "layers.csv";
    case RunFile::kPlan:
      return "plan.json";
    case RunFile::kPingPong:
      return "pingpong.csv";
  }
  return "?";
}

std::string RunFilePath(const std::string& dir, RunFile f) { return dir + "/" + RunFileName(f); }

std::string RunFolderOf(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return path;
  const fs::path p(path);
  if (p.filename() == RunFileName(RunFile::kSummary)) {
    const std::string parent = p.parent_path().string();
    return parent.empty() ? "." : parent;
  }
  return path;
}

Result<RunFolder> ReadRunFolder(const std::string& dir, RunFiles required, RunFiles optional) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error::Io(dir + ": no such run folder");
  RunFolder run;
  run.dir = dir;
  for (RunFile f : kAllRunFiles) {
    const bool need = required.Has(f);
    if (!need && !optional.Has(f)) continue;
    std::string text;
    MMTWIN_ASSIGN_OR_RETURN(const bool present, ReadPart(dir, f, need, text));
    if (present) MMTWIN_RETURN_IF_ERROR(Decode(f, std::move(text), run));
  }
  return run;
}

Result<Scenario> ScenarioOf(const RunFolder& run) {
  const std::string path = RunFilePath(run.dir, RunFile::kScenario);
  if (!run.scenario_yaml) return Error::Internal(path + ": the run folder was read without its scenario");
  return ParseScenario(*run.scenario_yaml, path, run.dir.empty() ? "." : run.dir);
}

Result<RunSummary> LoadSummary(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    MMTWIN_ASSIGN_OR_RETURN(RunFolder run, ReadRunFolder(path, {RunFile::kSummary}));
    return std::move(*run.summary);
  }
  if (!fs::is_regular_file(path, ec))
    return Error::Io(path + ": no such summary (give a run folder or a " + RunFileName(RunFile::kSummary) +
                     ")");
  auto text = ReadFile(path);
  if (!text) return Error::Io(text.error().message());
  return SummaryFromJson(*text, path);
}

RunFolderWriter& RunFolderWriter::Add(RunFile f, std::string content) {
  auto it = std::find_if(files_.begin(), files_.end(), [&](const auto& file) { return file.first == f; });
  if (it != files_.end())
    it->second = std::move(content);
  else
    files_.emplace_back(f, std::move(content));
  return *this;
}

RunFolderWriter& RunFolderWriter::AddSummary(const RunSummary& s) {
  Add(RunFile::kSummary, SummaryToJson(s) + "\n");
  return Add(RunFile::kStages, StagesCsv(s.stages));
}

RunFolderWriter& RunFolderWriter::AddOps(const std::vector<OpRecord>& ops) {
  return Add(RunFile::kOps, OpsCsv(ops));
}

RunFolderWriter& RunFolderWriter::AddTrace(std::string perfetto_json) {
  return Add(RunFile::kTrace, std::move(perfetto_json));
}

RunFolderWriter& RunFolderWriter::AddScenario(std::string yaml) {
  return Add(RunFile::kScenario, std::move(yaml));
}

RunFolderWriter& RunFolderWriter::AddLayers(const std::vector<LayerTiming>& rows,
                                            const std::vector<Layer>& model_layers) {
  return Add(RunFile::kLayers, LayerTimingsCsv(rows, model_layers));
}

RunFolderWriter& RunFolderWriter::AddPlan(const Plan& plan) {
  return Add(RunFile::kPlan, PlanToJson(plan) + "\n");
}

RunFolderWriter& RunFolderWriter::AddPingPong(const std::vector<PingPongSample>& rows) {
  return Add(RunFile::kPingPong, PingPongCsv(rows));
}

std::vector<std::string> RunFolderWriter::names() const {
  std::vector<std::string> out;
  for (const auto& [f, content] : files_) out.emplace_back(RunFileName(f));
  return out;
}

Status RunFolderWriter::Write(const std::string& dir) const {
  std::vector<std::pair<std::string, std::string_view>> files;
  for (const auto& [f, content] : files_) files.emplace_back(RunFileName(f), content);
  return WriteFolderAtomic(dir, files);
}

}  // namespace mmtwin

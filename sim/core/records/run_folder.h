// SPDX-License-Identifier: Apache-2.0
// The run folder: the one owner of its file names, of writing it (as a unit) and of reading it back. Written by
// `mmtwin simulate -o`, the GUI and the backend (mmtwin-train); read by `mmtwin compare`, calibration and
// validation (sim/calibrate) and the GUI. Its files, each in the format of its codec:
//
//   summary.json   RunSummary (records_codec.h: SummaryToJson, one final newline)
//   stages.csv     StagesCsv(summary.stages): written with the summary, never read (summary.json holds the stages)
//   ops.csv        OpRecords (records_codec.h: OpsCsv): the traced iteration (simulated) or every measured op
//   trace.json     a Chrome / Perfetto trace (perfetto.h), as given
//   scenario.yaml  the resolved scenario (core/scenario/scenario.h FormatScenario), as given
//   layers.csv     per-layer timings of a measured run (layer_timings.h)
//   plan.json      the plan (plan_codec.h: PlanToJson, one final newline)
//   pingpong.csv   round trips of `mmtwin-train launch --pingpong` (pingpong.h)
//
//   MMTWIN_RETURN_IF_ERROR(RunFolderWriter().AddSummary(s).AddOps(ops).AddScenario(yaml).Write("runs/a"));
//   MMTWIN_ASSIGN_OR_RETURN(RunFolder run, ReadRunFolder("runs/a", {RunFile::kSummary}, {RunFile::kOps}));
//   if (run.ops) Show(*run.ops);   // ops.csv was optional: present or not, never half-read
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/plan/plan.h"
#include "core/records/layer_timings.h"
#include "core/records/pingpong.h"
#include "core/records/records.h"
#include "core/scenario/scenario.h"
#include "core/util/status.h"

namespace mmtwin {

enum class RunFile : uint8_t { kSummary, kStages, kOps, kTrace, kScenario, kLayers, kPlan, kPingPong };
inline constexpr int kNumRunFiles = 8;

// The file's name inside a run folder: "summary.json", "stages.csv", "ops.csv", "trace.json", "scenario.yaml",
// "layers.csv", "plan.json", "pingpong.csv".
const char* RunFileName(RunFile f);
// DIR/NAME (as messages name it).
std::string RunFilePath(const std::string& dir, RunFile f);
// The run folder a path names: the path when it is a folder, its folder when it is a run's summary file
// (RunFileName(kSummary)); any other path unchanged.
std::string RunFolderOf(const std::string& path);

// A set of run files, e.g. {RunFile::kSummary, RunFile::kOps}.
class RunFiles {
 public:
  constexpr RunFiles() = default;
  constexpr RunFiles(std::initializer_list<RunFile> files) {
    for (RunFile f : files) bits_ |= Bit(f);
  }
  constexpr bool Has(RunFile f) const { return (bits_ & Bit(f)) != 0; }

 private:
  static constexpr uint32_t Bit(RunFile f) { return uint32_t{1} << static_cast<int>(f); }
  uint32_t bits_ = 0;
};

// A run folder as read: each file asked for and present, decoded; the others empty.
struct RunFolder {
  std::string dir;
  std::optional<RunSummary> summary;
  std::optional<std::vector<OpRecord>> ops;
  std::optional<std::string> trace_json;
  std::optional<std::string> scenario_yaml;  // the text as written (ScenarioOf parses it)
  std::optional<std::vector<LayerTiming>> layers;
  std::optional<Plan> plan;
  std::optional<std::vector<PingPongSample>> pingpong;
};

// Reads the files of `required` (each must be there) and of `optional` (read when there) from the run folder
// `dir`. Asking for stages.csv is an error (internal): read the summary's stages. Errors:
//   - `dir` is not a folder, a required file is missing, a file cannot be read: Error::Io naming the path
//     ("runs/a: no such run folder", "runs/a/ops.csv: missing from the run folder");
//   - damaged content: invalid input naming the file and, where the format has lines, the line and field
//     ("runs/a/ops.csv:12: duration_us: 'x' is not valid", "runs/a/summary.json:3: not valid JSON: ...",
//     "runs/a/summary.json: iteration_time_us.p50: missing").
Result<RunFolder> ReadRunFolder(const std::string& dir, RunFiles required, RunFiles optional = {});

// The folder's scenario.yaml parsed as LoadScenario would (paths relative to the folder; errors name
// RunFilePath(dir, kScenario) and the line); an error (internal) when the folder was read without it.
Result<Scenario> ScenarioOf(const RunFolder& run);

// The summary of a run folder, or of a summary file itself when `path` is not a folder (what `mmtwin compare`
// takes). Errors as ReadRunFolder's; a path that is neither: Error::Io "PATH: no such summary (give a run folder
// or a summary.json)".
Result<RunSummary> LoadSummary(const std::string& path);

// Builds a run folder's files in memory (each Add encodes its part at once; adding a file again replaces it), then
// writes them as a unit (core/util/atomic_dir.h): the folder is at every moment either the complete old one or the
// complete new one. Files of the old folder that are not written again are kept.
class RunFolderWriter {
 public:
  RunFolderWriter& AddSummary(const RunSummary& s);  // summary.json and stages.csv
  RunFolderWriter& AddOps(const std::vector<OpRecord>& ops);
  RunFolderWriter& AddTrace(std::string perfetto_json);
  RunFolderWriter& AddScenario(std::string yaml);
  // layers.csv: `model_layers` (Layers(model)) give each row's label and kind.
  RunFolderWriter& AddLayers(const std::vector<LayerTiming>& rows, const std::vector<Layer>& model_layers);
  RunFolderWriter& AddPlan(const Plan& plan);
  RunFolderWriter& AddPingPong(const std::vector<PingPongSample>& rows);

  // The file names added so far, in the order added.
  std::vector<std::string> names() const;
  Status Write(const std::string& dir) const;

 private:
  RunFolderWriter& Add(RunFile f, std::string content);
  std::vector<std::pair<RunFile, std::string>> files_;
};

}  // namespace mmtwin

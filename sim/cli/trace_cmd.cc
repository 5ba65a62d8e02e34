// SPDX-License-Identifier: Apache-2.0
// `mmtwin trace import|gen|stats`: convert datasets into traces, synthesize traces, summarize them.
#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/model/model.h"
#include "core/trace/generate.h"
#include "core/trace/import.h"
#include "core/trace/stats.h"
#include "core/trace/trace.h"
#include "core/util/csv.h"

namespace mmtwin::cli {

namespace {

// "mmtwin trace SUB: problem" (`problem` starts with "SUB: "), exit 2.
int Usage(std::ostream& err, const std::string& problem) {
  err << "mmtwin trace " << problem << "\n";
  return 2;
}

int Fail(std::ostream& err, const std::string& sub, const Error& e) {
  err << "mmtwin trace " << sub << ": " << e.message() << "\n";
  return 2;
}

bool ParsePositive(const std::string& s, int64_t& out) { return ParseInt64(s, out) && out > 0; }

// Writes the trace; prints "wrote N samples to OUT", or with `json` {"output", "samples"} plus `about` (what it
// was made from).
int WriteOut(const std::string& sub, const Trace& t, const std::string& out_path, bool json,
             const nlohmann::json& about, std::ostream& out, std::ostream& err) {
  const Status s = WriteTrace(t, out_path);
  if (!s.ok()) return Fail(err, sub, s.error());
  if (json) {
    nlohmann::json j = about;
    j["output"] = out_path;
    j["samples"] = t.size();
    out << j.dump(2) << "\n";
  } else {
    out << "wrote " << t.size() << " samples to " << out_path << "\n";
  }
  return 0;
}

}  // namespace

int RunTraceImport(const TraceImportArgs& a, std::ostream& out, std::ostream& err) {
  const std::string& in = a.input;
  const std::string* out_path = &a.output;
  const std::string* format = &a.format;
  const bool has_map = !a.maps.empty();
  const bool has_tiles = a.tiles_given;
  const bool has_subset = a.subset_given;
  const nlohmann::json about = {{"format", a.format}, {"input", a.input}};

  if ((a.fps_given || a.max_frames_given) && *format != "csv")
    return Usage(err, "import: --fps and --max-frames apply to --format csv only");
  if (*format == "llava") {
    if (has_map) return Usage(err, "import: --map applies to --format csv only");
    LlavaImportOptions opt;
    if (has_tiles) {
      int64_t n;
      if (!ParsePositive(a.tiles_per_image, n) || n > 1000000)
        return Usage(err, "import: --tiles-per-image: '" + a.tiles_per_image + "' is not a positive integer");
      opt.tiles_per_image = static_cast<uint32_t>(n);
    }
    if (has_subset) opt.subset = a.subset;
    Result<Trace> t = ImportLlava(in, opt);
    if (!t) return Fail(err, "import", t.error());
    return WriteOut("import", *t, *out_path, a.json, about, out, err);
  }
  if (*format == "librispeech") {
    if (has_map || has_tiles || has_subset)
      return Usage(err, "import: --map, --tiles-per-image and --subset do not apply to --format librispeech");
    Result<Trace> t = ImportLibriSpeech(in);
    if (!t) return Fail(err, "import", t.error());
    return WriteOut("import", *t, *out_path, a.json, about, out, err);
  }
  if (*format == "csv") {
    if (has_tiles || has_subset)
      return Usage(err, "import: --tiles-per-image and --subset apply to --format llava only");
    CsvMapping mapping;
    bool video_seconds = false;
    for (const std::string& v : a.maps) {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        return Usage(err, "import: --map '" + v + "': expected TRACE_FIELD=SOURCE_COLUMN");
      mapping.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      video_seconds = video_seconds || v.substr(0, eq) == "video_seconds";
    }
    // --fps / --max-frames turn a video_seconds column into frames: without one they would change nothing.
    if ((a.fps_given || a.max_frames_given) && !video_seconds)
      return Usage(err, std::string("import: ") + (a.fps_given ? "--fps" : "--max-frames") +
                            ": applies to a video_seconds column (--map video_seconds=COLUMN), and none is "
                            "mapped");
    Result<Trace> t = ImportCsv(in, mapping, VideoSampling{a.fps, a.max_frames});
    if (!t) return Fail(err, "import", t.error());
    return WriteOut("import", *t, *out_path, a.json, about, out, err);
  }
  return Usage(err, "import: unknown format '" + *format + "'; valid values are: llava, librispeech, csv");
}

namespace {

std::string PresetNames() {
  std::string o;
  for (const GeneratorPreset& g : GeneratorPresets()) o += (o.empty() ? "" : ", ") + g.name;
  return o;
}

}  // namespace

int RunTraceGen(const TraceGenArgs& a, std::ostream& out, std::ostream& err) {
  if (a.list) {
    nlohmann::json presets = nlohmann::json::array();
    for (const GeneratorPreset& g : GeneratorPresets()) {
      if (a.json)
        presets.push_back({{"name", g.name}, {"samples", g.default_samples}, {"description", g.description}});
      else
        out << g.name << " (" << g.default_samples << " samples): " << g.description << "\n";
    }
    if (a.json) out << nlohmann::json{{"presets", presets}}.dump(2) << "\n";
    return 0;
  }
  const std::string* preset = &a.preset;
  const std::string* out_path = &a.output;
  const GeneratorPreset* found = nullptr;
  for (const GeneratorPreset& g : GeneratorPresets())
    if (g.name == *preset) found = &g;
  if (!found) {
    err << "mmtwin trace gen: --preset: unknown preset '" << *preset
        << "'; valid values are: " << PresetNames() << "\n";
    return 2;
  }
  int64_t samples = found->default_samples;
  if (a.samples_given && !ParsePositive(a.samples, samples))
    return Usage(err, "gen: --samples: '" + a.samples + "' is not a positive integer");
  uint64_t seed = 1;
  if (a.seed_given) {
    int64_t v;
    if (!ParseInt64(a.seed, v) || v < 0)
      return Usage(err, "gen: --seed: '" + a.seed + "' is not a non-negative integer");
    seed = static_cast<uint64_t>(v);
  }
  Result<Trace> t = GenerateTrace(*preset, samples, seed);
  if (!t) return Fail(err, "gen", t.error());
  return WriteOut("gen", *t, *out_path, a.json, {{"preset", *preset}, {"seed", seed}}, out, err);
}

int RunTraceStats(const TraceStatsArgs& a, std::ostream& out, std::ostream& err) {
  int64_t bins = kDefaultHistogramBins;
  if (a.bins_given && (!ParsePositive(a.bins, bins) || bins > 100000))
    return Usage(err, "stats: --bins: '" + a.bins + "' is not an integer in 1..100000");
  Result<Trace> t = ReadTrace(a.trace);
  if (!t) return Fail(err, "stats", t.error());
  TraceStats st = ComputeStats(*t, static_cast<int>(bins));
  if (!a.model.empty()) {
    Result<ModelSpec> model = LoadModel(a.model);
    if (!model) return Fail(err, "stats", model.error());
    AddModelStats(st, *t, *model, static_cast<int>(bins));
  }
  if (a.json) {
    nlohmann::json j = nlohmann::json::parse(StatsToJson(st));
    j["trace"] = a.trace;
    out << j.dump(2) << "\n";
  } else {
    out << a.trace << ": " << FormatStatsText(st);
  }
  return 0;
}

}  // namespace mmtwin::cli

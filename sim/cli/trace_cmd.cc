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

constexpr const char* kTraceUsage = R"(usage:
  mmtwin trace import --format llava|librispeech|csv IN -o OUT [--map field=column]... [--tiles-per-image N]
                      [--subset NAME]
  mmtwin trace gen --preset NAME [--samples N] [--seed S] -o OUT
  mmtwin trace stats TRACE [--json] [--model M] [--bins N]

import   llava: LLaVA conversation JSON (--tiles-per-image, default 1; --subset overrides the image-folder subset)
         librispeech: sample_id,audio_samples_16k,audio_seconds durations CSV
         csv: any CSV with a header; --map TRACE_FIELD=SOURCE_COLUMN, fields: sample_id, subset, images,
              image_tiles, video_frames, audio_seconds, text_tokens, meta
gen      presets: see `mmtwin trace gen --list`; --samples defaults to the real dataset's size, --seed to 1
stats    per-modality mean/std/percentiles and per-subset counts; --model adds vit_tokens and llm_tokens
Exit codes: 0 ok, 2 bad input (the message names file, line and field). Formats: traces/README.md.
)";

int Usage(std::ostream& err, const std::string& problem) {
  err << "mmtwin trace: " << problem << "\n" << kTraceUsage;
  return 2;
}

int Fail(std::ostream& err, const Error& e) {
  err << "mmtwin trace: " << e.message() << "\n";
  return 2;
}

bool ParsePositive(const std::string& s, int64_t& out) { return ParseInt64(s, out) && out > 0; }

// Flag parsing shared by the subcommands: `--name value` (or `--name=value`) options, bare flags,
// positionals.
struct Parsed {
  std::vector<std::pair<std::string, std::string>> options;
  std::vector<std::string> flags;
  std::vector<std::string> positional;
};

// `with_value` lists options that take a value; `bare` lists flags without one. Unknown options are errors.
bool ParseArgs(const Args& args, size_t start, const std::vector<std::string>& with_value,
               const std::vector<std::string>& bare, Parsed& p, std::string& problem) {
  for (size_t i = start; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.size() > 1 && a[0] == '-') {
      std::string value;
      bool has_value = false;
      const size_t eq = a.find('=');
      if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_value = true;
      }
      if (std::find(bare.begin(), bare.end(), a) != bare.end()) {
        if (has_value) {
          problem = "option " + a + " takes no value";
          return false;
        }
        p.flags.push_back(a);
        continue;
      }
      if (std::find(with_value.begin(), with_value.end(), a) == with_value.end()) {
        problem = "unknown option '" + a + "'";
        return false;
      }
      if (!has_value) {
        if (i + 1 >= args.size()) {
          problem = "option " + a + " needs a value";
          return false;
        }
        value = args[++i];
      }
      p.options.emplace_back(a, value);
    } else {
      p.positional.push_back(a);
    }
  }
  return true;
}

const std::string* Last(const Parsed& p, const std::string& name) {
  const std::string* v = nullptr;
  for (const auto& [k, val] : p.options)
    if (k == name) v = &val;
  return v;
}

bool HasFlag(const Parsed& p, const std::string& name) {
  return std::find(p.flags.begin(), p.flags.end(), name) != p.flags.end();
}

int WriteOut(const Trace& t, const std::string& out_path, std::ostream& out, std::ostream& err) {
  const Status s = WriteTrace(t, out_path);
  if (!s.ok()) return Fail(err, s.error());
  out << "wrote " << t.size() << " samples to " << out_path << "\n";
  return 0;
}

int Import(const Args& args, std::ostream& out, std::ostream& err) {
  Parsed p;
  std::string problem;
  if (!ParseArgs(args, 1, {"--format", "-o", "--output", "--map", "--tiles-per-image", "--subset"}, {}, p,
                 problem))
    return Usage(err, "import: " + problem);
  const std::string* format = Last(p, "--format");
  const std::string* out_path = Last(p, "-o");
  if (!out_path) out_path = Last(p, "--output");
  if (!format) return Usage(err, "import: missing --format (llava, librispeech or csv)");
  if (!out_path) return Usage(err, "import: missing -o OUT");
  if (p.positional.size() != 1)
    return Usage(err, "import: expected exactly one input file, got " + std::to_string(p.positional.size()));
  const std::string& in = p.positional[0];
  const bool has_map = Last(p, "--map") != nullptr;
  const bool has_tiles = Last(p, "--tiles-per-image") != nullptr;
  const bool has_subset = Last(p, "--subset") != nullptr;

  if (*format == "llava") {
    if (has_map) return Usage(err, "import: --map applies to --format csv only");
    LlavaImportOptions opt;
    if (has_tiles) {
      int64_t n;
      if (!ParsePositive(*Last(p, "--tiles-per-image"), n) || n > 1000000)
        return Usage(err, "import: --tiles-per-image: '" + *Last(p, "--tiles-per-image") +
                              "' is not a positive integer");
      opt.tiles_per_image = static_cast<uint32_t>(n);
    }
    if (has_subset) opt.subset = *Last(p, "--subset");
    Result<Trace> t = ImportLlava(in, opt);
    if (!t) return Fail(err, t.error());
    return WriteOut(*t, *out_path, out, err);
  }
  if (*format == "librispeech") {
    if (has_map || has_tiles || has_subset)
      return Usage(err, "import: --map, --tiles-per-image and --subset do not apply to --format librispeech");
    Result<Trace> t = ImportLibriSpeech(in);
    if (!t) return Fail(err, t.error());
    return WriteOut(*t, *out_path, out, err);
  }
  if (*format == "csv") {
    if (has_tiles || has_subset)
      return Usage(err, "import: --tiles-per-image and --subset apply to --format llava only");
    CsvMapping mapping;
    for (const auto& [k, v] : p.options) {
      if (k != "--map") continue;
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        return Usage(err, "import: --map '" + v + "': expected TRACE_FIELD=SOURCE_COLUMN");
      mapping.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    }
    Result<Trace> t = ImportCsv(in, mapping);
    if (!t) return Fail(err, t.error());
    return WriteOut(*t, *out_path, out, err);
  }
  return Usage(err, "import: unknown format '" + *format + "'; valid values are: llava, librispeech, csv");
}

std::string PresetNames() {
  std::string o;
  for (const GeneratorPreset& g : GeneratorPresets()) o += (o.empty() ? "" : ", ") + g.name;
  return o;
}

int Gen(const Args& args, std::ostream& out, std::ostream& err) {
  Parsed p;
  std::string problem;
  if (!ParseArgs(args, 1, {"--preset", "--samples", "--seed", "-o", "--output"}, {"--list"}, p, problem))
    return Usage(err, "gen: " + problem);
  if (HasFlag(p, "--list")) {
    for (const GeneratorPreset& g : GeneratorPresets())
      out << g.name << " (" << g.default_samples << " samples): " << g.description << "\n";
    return 0;
  }
  if (!p.positional.empty()) return Usage(err, "gen: unexpected argument '" + p.positional[0] + "'");
  const std::string* preset = Last(p, "--preset");
  const std::string* out_path = Last(p, "-o");
  if (!out_path) out_path = Last(p, "--output");
  if (!preset) return Usage(err, "gen: missing --preset NAME (valid values are: " + PresetNames() + ")");
  if (!out_path) return Usage(err, "gen: missing -o OUT");
  const GeneratorPreset* found = nullptr;
  for (const GeneratorPreset& g : GeneratorPresets())
    if (g.name == *preset) found = &g;
  if (!found) {
    err << "mmtwin trace: gen: unknown preset '" << *preset << "'; valid values are: " << PresetNames()
        << "\n";
    return 2;
  }
  int64_t samples = found->default_samples;
  if (const std::string* s = Last(p, "--samples"); s && !ParsePositive(*s, samples))
    return Usage(err, "gen: --samples: '" + *s + "' is not a positive integer");
  uint64_t seed = 1;
  if (const std::string* s = Last(p, "--seed")) {
    int64_t v;
    if (!ParseInt64(*s, v) || v < 0)
      return Usage(err, "gen: --seed: '" + *s + "' is not a non-negative integer");
    seed = static_cast<uint64_t>(v);
  }
  Result<Trace> t = GenerateTrace(*preset, samples, seed);
  if (!t) return Fail(err, t.error());
  return WriteOut(*t, *out_path, out, err);
}

int Stats(const Args& args, std::ostream& out, std::ostream& err) {
  Parsed p;
  std::string problem;
  if (!ParseArgs(args, 1, {"--model", "--bins"}, {"--json"}, p, problem))
    return Usage(err, "stats: " + problem);
  if (p.positional.size() != 1)
    return Usage(err, "stats: expected exactly one trace file, got " + std::to_string(p.positional.size()));
  int64_t bins = kDefaultHistogramBins;
  if (const std::string* b = Last(p, "--bins"); b && (!ParsePositive(*b, bins) || bins > 100000))
    return Usage(err, "stats: --bins: '" + *b + "' is not an integer in 1..100000");
  Result<Trace> t = ReadTrace(p.positional[0]);
  if (!t) return Fail(err, t.error());
  TraceStats st = ComputeStats(*t, static_cast<int>(bins));
  if (const std::string* m = Last(p, "--model")) {
    Result<ModelSpec> model = LoadModel(*m);
    if (!model) return Fail(err, model.error());
    AddModelStats(st, *t, *model, static_cast<int>(bins));
  }
  if (HasFlag(p, "--json")) {
    nlohmann::json j = nlohmann::json::parse(StatsToJson(st));
    j["trace"] = p.positional[0];
    out << j.dump(2) << "\n";
  } else {
    out << p.positional[0] << ": " << FormatStatsText(st);
  }
  return 0;
}

}  // namespace

int RunTrace(const Args& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return Usage(err, "missing subcommand (import, gen or stats)");
  const std::string& sub = args[0];
  if (sub == "-h" || sub == "--help" || sub == "help") {
    out << kTraceUsage;
    return 0;
  }
  if (sub == "import") return Import(args, out, err);
  if (sub == "gen" || sub == "generate") return Gen(args, out, err);
  if (sub == "stats") return Stats(args, out, err);
  return Usage(err, "unknown subcommand '" + sub + "'; valid values are: import, gen, stats");
}

}  // namespace mmtwin::cli

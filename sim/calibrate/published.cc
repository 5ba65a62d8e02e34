// SPDX-License-Identifier: Apache-2.0
// Published-runs validation (published.h): the suite file, predicting each entry, the fit on the calibration
// entries, the CSVs.
#include "calibrate/published.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "calibrate/suite_file.h"
#include "calibrate/validate.h"
#include "core/util/csv.h"
#include "core/util/text.h"
#include "core/util/yaml_error.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct MetricInfo {
  PublishedMetric metric;
  const char* name;
  MetricFamily family;
};
constexpr MetricInfo kMetrics[] = {
    {PublishedMetric::kIterationTimeS, "iteration_time_s", MetricFamily::kTime},
    {PublishedMetric::kTflopsPerGpu, "tflops_per_gpu", MetricFamily::kTime},
    {PublishedMetric::kMfu, "mfu", MetricFamily::kTime},
    {PublishedMetric::kTokensPerSPerGpu, "tokens_per_s_per_gpu", MetricFamily::kTime},
    {PublishedMetric::kGpuDays, "gpu_days", MetricFamily::kTime},
    {PublishedMetric::kPeakMemoryGib, "peak_memory_gib", MetricFamily::kMemory},
    {PublishedMetric::kRemainingMemoryGib, "remaining_memory_gib", MetricFamily::kMemory},
    {PublishedMetric::kFits, "fits", MetricFamily::kFits},
};
const char* const kFlopsFormulas[] = {"mmtwin", "megatron", "megatron-model"};

std::string CsvRow(const std::vector<std::string>& cells) {
  std::string row;
  for (size_t i = 0; i < cells.size(); ++i) row += (i ? "," : "") + CsvQuote(cells[i]);
  return row + "\n";
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Error EntryError(const std::string& file, const YAML::Node& n, size_t i, const std::string& field,
                 const std::string& reason) {
  return Error::At(file, LineOf(n), "entries[" + std::to_string(i) + "]" + (field.empty() ? "" : "." + field),
                   reason);
}

Result<double> NumberAt(const std::string& file, const YAML::Node& n, const std::string& field) {
  try {
    if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "not a scalar");
    const double v = n.as<double>();
    if (!std::isfinite(v)) throw YAML::Exception(n.Mark(), "not finite");
    return v;
  } catch (const YAML::Exception&) {
    return Error::At(file, LineOf(n), field, "expected a number");
  }
}

Result<PublishedSuite> Parse(const std::string& text, const std::string& file) {
  PublishedSuite suite;
  suite.path = file;
  MMTWIN_ASSIGN_OR_RETURN(SuiteFileHead head,
                          ReadSuiteHead(text, file, {"name", "description", "notes", "fit", "entries"}));
  const YAML::Node root = head.root;
  suite.name = head.name;
  suite.description = head.description;
  suite.notes = head.notes;
  const fs::path dir = fs::path(file).parent_path();

  const YAML::Node entries = root["entries"];
  if (!entries || !entries.IsSequence() || entries.size() == 0)
    return Error::At(file, entries ? LineOf(entries) : LineOf(root), "entries", "expected a non-empty list");
  std::set<std::string> names;
  for (size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node n = entries[i];
    if (!n.IsMap()) return EntryError(file, n, i, "", "expected a mapping");
    MMTWIN_RETURN_IF_ERROR(CheckKeys(n, file, "entries[" + std::to_string(i) + "]",
                                     {"name", "split", "source", "scenario", "override", "metric", "flops",
                                      "measured", "stage", "note", "mfu_peak_flops"}));
    PublishedEntry e;
    e.line = LineOf(n);
    for (const char* key : {"name", "split", "source", "scenario", "metric", "measured"})
      if (!n[key] || !n[key].IsScalar() || n[key].Scalar().empty())
        return EntryError(file, n[key] ? n[key] : n, i, key, "missing");
    e.name = n["name"].Scalar();
    if (!IsPlainName(e.name)) return EntryError(file, n["name"], i, "name", "must be a plain name");
    if (!names.insert(e.name).second)
      return EntryError(file, n["name"], i, "name", "'" + e.name + "' is used by another entry");
    const std::string split = n["split"].Scalar();
    if (split != "calibration" && split != "held_out")
      return EntryError(file, n["split"], i, "split", "'" + split + "': expected calibration or held_out");
    e.held_out = split == "held_out";
    e.source = n["source"].Scalar();
    if (n["note"]) e.note = n["note"].Scalar();
    fs::path p = n["scenario"].Scalar();
    if (p.is_relative()) p = dir / p;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
      return EntryError(file, n["scenario"], i, "scenario",
                        "'" + Abbreviate(n["scenario"].Scalar()) + "': no such file (" + p.string() + ")");
    e.scenario = p.lexically_normal().string();
    if (const YAML::Node o = n["override"]) {
      if (!o.IsMap()) return EntryError(file, o, i, "override", "expected a mapping {dotted.key: value}");
      for (const auto& kv : o) {
        const std::string key = kv.first.Scalar();
        if (Status st = CheckOverrideKey(key); !st.ok())
          return EntryError(file, kv.first, i, "override", st.error().message());
        YAML::Emitter em;
        em << YAML::Flow << kv.second;
        e.overrides.push_back({key, em.c_str()});
      }
    }
    const std::string metric = n["metric"].Scalar();
    bool known = false;
    for (const MetricInfo& m : kMetrics)
      if (metric == m.name) {
        e.metric = m.metric;
        known = true;
      }
    if (!known) {
      std::vector<std::string> valid;
      for (const MetricInfo& m : kMetrics) valid.push_back(m.name);
      return EntryError(file, n["metric"], i, "metric",
                        "unknown metric '" + metric + "'; valid values are: " + Join(valid));
    }
    const MetricFamily family = FamilyOf(e.metric);
    if (e.metric == PublishedMetric::kFits) {
      const std::string v = n["measured"].Scalar();
      if (v != "true" && v != "false")
        return EntryError(file, n["measured"], i, "measured", "fits: expected true or false");
      e.measured = v == "true" ? 1 : 0;
    } else {
      MMTWIN_ASSIGN_OR_RETURN(e.measured,
                              NumberAt(file, n["measured"], "entries[" + std::to_string(i) + "].measured"));
      if (e.measured < 0 || (e.measured == 0 && e.metric != PublishedMetric::kRemainingMemoryGib))
        return EntryError(file, n["measured"], i, "measured", "must be > 0");
    }
    if (const YAML::Node f = n["flops"]) {
      if (e.metric != PublishedMetric::kTflopsPerGpu && e.metric != PublishedMetric::kMfu)
        return EntryError(file, f, i, "flops", "only with metric tflops_per_gpu or mfu");
      e.flops = f.Scalar();
      if (std::find(std::begin(kFlopsFormulas), std::end(kFlopsFormulas), e.flops) ==
          std::end(kFlopsFormulas))
        return EntryError(
            file, f, i, "flops",
            "unknown FLOP count '" + e.flops + "'; valid values are: mmtwin, megatron, megatron-model");
    }
    if (const YAML::Node m = n["mfu_peak_flops"]) {
      if (e.metric != PublishedMetric::kMfu)
        return EntryError(file, m, i, "mfu_peak_flops", "only with metric mfu");
      MMTWIN_ASSIGN_OR_RETURN(e.mfu_peak_flops,
                              NumberAt(file, m, "entries[" + std::to_string(i) + "].mfu_peak_flops"));
      if (!(e.mfu_peak_flops >= 1e9 && e.mfu_peak_flops <= 1e18))
        return EntryError(file, m, i, "mfu_peak_flops", "expected a device peak in FLOP/s (1e9 to 1e18)");
    }
    if (const YAML::Node s = n["stage"]) {
      if (family != MetricFamily::kMemory)
        return EntryError(file, s, i, "stage", "only with metric peak_memory_gib or remaining_memory_gib");
      MMTWIN_ASSIGN_OR_RETURN(const double st, NumberAt(file, s, "entries[" + std::to_string(i) + "].stage"));
      if (st < 0 || st != std::floor(st) || st > 1e6)
        return EntryError(file, s, i, "stage", "expected a pipeline stage >= 0");
      e.stage = static_cast<int>(st);
    }
    suite.entries.push_back(std::move(e));
  }

  if (const YAML::Node fit = root["fit"]) {
    if (!fit.IsSequence()) return Error::At(file, LineOf(fit), "fit", "expected a list of parameters");
    for (size_t i = 0; i < fit.size(); ++i) {
      const YAML::Node n = fit[i];
      const std::string where = "fit[" + std::to_string(i) + "]";
      if (!n.IsMap()) return Error::At(file, LineOf(n), where, "expected a mapping");
      MMTWIN_RETURN_IF_ERROR(CheckKeys(n, file, where, {"key", "device", "min", "max", "on"}));
      PublishedFitParam p;
      if (!n["key"] || !n["key"].IsScalar()) return Error::At(file, LineOf(n), where + ".key", "missing");
      p.key = n["key"].Scalar();
      if (p.key == "name" || !IsPlainName(p.key))
        return Error::At(file, LineOf(n["key"]), where + ".key", "expected a numeric device key");
      if (n["device"]) p.device = n["device"].Scalar();
      for (const char* k : {"min", "max"})
        if (!n[k]) return Error::At(file, LineOf(n), where + "." + k, "missing");
      MMTWIN_ASSIGN_OR_RETURN(p.min, NumberAt(file, n["min"], where + ".min"));
      MMTWIN_ASSIGN_OR_RETURN(p.max, NumberAt(file, n["max"], where + ".max"));
      if (!(p.min < p.max)) return Error::At(file, LineOf(n["max"]), where + ".max", "must be > min");
      const std::string on = n["on"] ? n["on"].Scalar() : "time";
      if (on != "time" && on != "memory")
        return Error::At(file, LineOf(n["on"]), where + ".on", "'" + on + "': expected time or memory");
      p.on = on == "time" ? MetricFamily::kTime : MetricFamily::kMemory;
      suite.fit.push_back(p);
    }
  }
  return suite;
}

// One simulated run, cached by scenario file + overrides (an entry's and the fitted device keys).
struct Run {
  Scenario scenario;
  RunSummary summary;
  ClusterSpec cluster;
};

class Runner {
 public:
  explicit Runner(std::function<void(const std::string&)> progress) : progress_(std::move(progress)) {}

  // The entry's scenario (with its overrides and `device`), not simulated; errors name the entry.
  Result<Scenario> ScenarioOf(const PublishedSuite& suite, size_t i,
                              const std::map<std::string, double>& device) {
    const PublishedEntry& e = suite.entries[i];
    MMTWIN_ASSIGN_OR_RETURN(const std::string text, ReadFile(e.scenario));
    std::vector<ScenarioOverride> o = e.overrides;
    for (const auto& [key, value] : device) o.push_back({"cluster.device." + key, Num(value)});
    auto s = ParseScenarioWithOverrides(text, e.scenario, fs::path(e.scenario).parent_path().string(), o);
    if (!s) return Wrap(suite, i, s.error());
    return *s;
  }

  Result<const Run*> Simulated(const PublishedSuite& suite, size_t i,
                               const std::map<std::string, double>& device) {
    const PublishedEntry& e = suite.entries[i];
    std::string key = e.scenario;
    for (const ScenarioOverride& o : e.overrides) key += "\n" + o.key + "=" + o.yaml_value;
    for (const auto& [k, v] : device) key += "\ncluster.device." + k + "=" + Num(v);
    if (auto it = cache_.find(key); it != cache_.end()) return &it->second;
    MMTWIN_ASSIGN_OR_RETURN(Scenario s, ScenarioOf(suite, i, device));
    Run run;
    auto cluster = LoadScenarioCluster(s);
    if (!cluster) return Wrap(suite, i, cluster.error());
    run.cluster = *cluster;
    auto r = Simulate(s, SimulateOptions{});
    if (!r) return Wrap(suite, i, r.error());
    run.scenario = s;
    run.summary = r->summary;
    return &cache_.emplace(key, std::move(run)).first->second;
  }

  void Say(const std::string& text) {
    if (progress_) progress_(text);
  }

 private:
  static Error Wrap(const PublishedSuite& suite, size_t i, const Error& e) {
    return Error(suite.path + ":" + std::to_string(suite.entries[i].line) + ": entries[" + std::to_string(i) +
                 "] (" + suite.entries[i].name + "): " + e.message());
  }
  std::function<void(const std::string&)> progress_;
  std::map<std::string, Run> cache_;
};

// The device keys of `fitted` that apply to a cluster whose device is `device`.
std::map<std::string, double> DeviceOverrides(const std::vector<FittedParam>& fitted,
                                              const std::string& device) {
  std::map<std::string, double> out;
  for (const FittedParam& f : fitted)
    if (f.param.device.empty() || f.param.device == device) out[f.param.key] = f.value;
  return out;
}

// The squared log ratio of one prediction (memory: of the peaks, remaining memory turned into used memory).
double LossTerm(const PublishedEntry& e, double predicted, double memory_gib) {
  double p = predicted, m = e.measured;
  if (e.metric == PublishedMetric::kRemainingMemoryGib) {
    p = memory_gib - predicted;
    m = memory_gib - e.measured;
  }
  if (!(p > 0) || !(m > 0)) return 100.0;  // a prediction of nothing is as bad as it gets
  const double l = std::log(p / m);
  return l * l;
}

}  // namespace

const char* PublishedMetricName(PublishedMetric m) {
  for (const MetricInfo& i : kMetrics)
    if (i.metric == m) return i.name;
  return "?";
}

MetricFamily FamilyOf(PublishedMetric m) {
  for (const MetricInfo& i : kMetrics)
    if (i.metric == m) return i.family;
  return MetricFamily::kTime;
}

const char* FamilyName(MetricFamily f) {
  switch (f) {
    case MetricFamily::kTime:
      return "time";
    case MetricFamily::kMemory:
      return "memory";
    case MetricFamily::kFits:
      return "fits";
  }
  return "?";
}

bool IsPublishedSuite(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return false;
  try {
    const Result<YAML::Node> root = LoadStrictYaml(*text, path);  // a bad file is then refused by its reader
    return root.ok() && root->IsMap() && (*root)["entries"].IsDefined();
  } catch (const YAML::Exception&) {
    return false;
  }
}

Result<PublishedSuite> LoadPublishedSuite(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  MMTWIN_ASSIGN_OR_RETURN(PublishedSuite suite, GuardYaml(path, [&] { return Parse(text, path); }));
  // Every fitted parameter needs calibration entries to be fitted on (which device they run on is known only once
  // the scenarios load: ValidatePublished checks it again).
  for (size_t i = 0; i < suite.fit.size(); ++i) {
    bool any = false;
    for (const PublishedEntry& e : suite.entries) any |= !e.held_out && FamilyOf(e.metric) == suite.fit[i].on;
    if (!any)
      return Error(path + ": fit[" + std::to_string(i) + "]: no calibration entry of family " +
                   FamilyName(suite.fit[i].on) + " to fit " + suite.fit[i].key + " on");
  }
  return suite;
}

double PaperFlopsPerIteration(const std::string& formula, double B, double s, double l, double h, double V) {
  if (formula == "megatron") return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
  if (formula == "megatron-model")
    return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
  return std::numeric_limits<double>::quiet_NaN();
}

Result<double> PredictedFigure(const PublishedEntry& e, const Scenario& scenario, const RunSummary& summary) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double time_s = summary.iteration_time_us.mean * 1e-6;
  const double gpus = summary.parallel.world_size();
  MMTWIN_ASSIGN_OR_RETURN(const ClusterSpec cluster, LoadScenarioCluster(scenario));
  const double peak = cluster.device.peak_flops;
  auto paper_flops = [&]() -> Result<double> {
    if (scenario.trace.sequence_tokens <= 0)
      return Error("flops: " + e.flops + " needs a trace of fixed-length sequences (trace.sequence_tokens)");
    MMTWIN_ASSIGN_OR_RETURN(const ModelSpec model, LoadScenarioModel(scenario));
    const Component* llm = model.Find(ComponentKind::kLlm);
    if (!llm) return Error("flops: " + e.flops + " needs a model with an LLM");
    const double sequences = summary.samples_per_s * time_s;
    return PaperFlopsPerIteration(e.flops, sequences, static_cast<double>(scenario.trace.sequence_tokens),
                                  llm->tf.layers, static_cast<double>(llm->tf.hidden),
                                  static_cast<double>(llm->vocab));
  };
  switch (e.metric) {
    case PublishedMetric::kIterationTimeS:
      return time_s;
    case PublishedMetric::kTflopsPerGpu:
      if (e.flops == "mmtwin") return summary.mfu * peak / 1e12;
      {
        MMTWIN_ASSIGN_OR_RETURN(const double f, paper_flops());
        return f / (time_s * gpus) / 1e12;
      }
    case PublishedMetric::kMfu: {
      // The source's MFU is relative to the peak it names (mfu_peak_flops), the simulated run's to its device's.
      const double mfu_peak = e.mfu_peak_flops > 0 ? e.mfu_peak_flops : peak;
      if (e.flops == "mmtwin") return summary.mfu * peak / mfu_peak;
      MMTWIN_ASSIGN_OR_RETURN(const double f, paper_flops());
      return f / (time_s * gpus * mfu_peak);
    }
    case PublishedMetric::kTokensPerSPerGpu:
      return summary.tokens_per_s / gpus;
    case PublishedMetric::kGpuDays:
      return summary.gpu_days;
    case PublishedMetric::kPeakMemoryGib:
    case PublishedMetric::kRemainingMemoryGib: {
      double peak_bytes = 0;
      if (e.stage >= 0) {
        if (e.stage >= static_cast<int>(summary.stages.size())) return nan;
        peak_bytes = static_cast<double>(summary.stages[e.stage].peak_memory_bytes);
      } else {
        for (const StageRecord& st : summary.stages)
          peak_bytes = std::max(peak_bytes, static_cast<double>(st.peak_memory_bytes));
      }
      if (e.metric == PublishedMetric::kPeakMemoryGib) return peak_bytes / kGiB;
      return (static_cast<double>(cluster.device.memory_bytes) - peak_bytes) / kGiB;
    }
    case PublishedMetric::kFits:
      return summary.oom ? 0.0 : 1.0;
  }
  return nan;
}

Result<PublishedReport> ValidatePublished(const PublishedOptions& options) {
  PublishedReport report;
  MMTWIN_ASSIGN_OR_RETURN(report.suite, LoadPublishedSuite(options.suite));
  report.command = options.command;
  const PublishedSuite& suite = report.suite;
  Runner runner(options.progress);
  const size_t n = suite.entries.size();

  // The device of every entry's cluster, and the memory each figure is read against.
  std::vector<std::string> devices(n);
  std::vector<double> memory_gib(n);
  for (size_t i = 0; i < n; ++i) {
    MMTWIN_ASSIGN_OR_RETURN(const Scenario s, runner.ScenarioOf(suite, i, {}));
    auto c = LoadScenarioCluster(s);
    if (!c)
      return Error(suite.path + ":" + std::to_string(suite.entries[i].line) + ": " + c.error().message());
    devices[i] = c->device.name;
    memory_gib[i] = static_cast<double>(c->device.memory_bytes) / kGiB;
  }
  auto predict = [&](size_t i, const std::vector<FittedParam>& fitted) -> Result<double> {
    MMTWIN_ASSIGN_OR_RETURN(const Run* run, runner.Simulated(suite, i, DeviceOverrides(fitted, devices[i])));
    auto v = PredictedFigure(suite.entries[i], run->scenario, run->summary);
    if (!v)
      return Error(suite.path + ":" + std::to_string(suite.entries[i].line) + ": entries[" +
                   std::to_string(i) + "] (" + suite.entries[i].name + "): " + v.error().message());
    return *v;
  };

  // 1. The presets as they are.
  report.results.resize(n);
  for (size_t i = 0; i < n; ++i) {
    runner.Say("[" + std::to_string(i + 1) + "/" + std::to_string(n) + "] " +
               (suite.entries[i].held_out ? "held-out " : "calibration ") + suite.entries[i].name + "\n");
    report.results[i].entry = suite.entries[i];
    report.results[i].device = devices[i];
    MMTWIN_ASSIGN_OR_RETURN(report.results[i].prior, predict(i, {}));
  }

  // The value a device key has for entry i without the fit: the scenario's cluster.device, else the preset's.
  auto preset_value = [&](size_t i, const std::string& key) -> Result<double> {
    MMTWIN_ASSIGN_OR_RETURN(const Scenario s, runner.ScenarioOf(suite, i, {}));
    if (auto it = s.device.find(key); it != s.device.end()) return it->second;
    MMTWIN_ASSIGN_OR_RETURN(
        const std::string text,
        ReadFile(s.cluster.find('/') != std::string::npos ? s.cluster
                                                          : ClusterPresetDir() + "/" + s.cluster + ".yaml"));
    try {
      const Result<YAML::Node> root = LoadStrictYaml(text, s.cluster);
      if (!root.ok()) return std::nan("");
      const YAML::Node dev = (*root)["device"];
      return dev && dev[key] ? dev[key].as<double>() : std::nan("");
    } catch (const YAML::Exception&) {
      return std::nan("");
    }
  };

  // 2. The fit, parameter by parameter, on calibration entries only.
  std::vector<FittedParam> fitted;
  for (size_t k = 0; k < suite.fit.size(); ++k) {
    const PublishedFitParam& p = suite.fit[k];
    FittedParam f;
    f.param = p;
    std::vector<size_t> on;
    for (size_t i = 0; i < n; ++i)
      if (!suite.entries[i].held_out && FamilyOf(suite.entries[i].metric) == p.on &&
          (p.device.empty() || p.device == devices[i]))
        on.push_back(i);
    if (on.empty())
      return Error(suite.path + ": fit[" + std::to_string(k) + "] (" + p.key + " on " +
                   (p.device.empty() ? "any device" : p.device) + "): no calibration entry to fit it on");
    for (size_t i : on) f.fitted_on.push_back(suite.entries[i].name);
    MMTWIN_ASSIGN_OR_RETURN(f.prior, preset_value(on.front(), p.key));
    auto loss = [&](double value) -> Result<double> {
      std::vector<FittedParam> trial = fitted;
      FittedParam t = f;
      t.value = value;
      trial.push_back(t);
      double sum = 0;
      for (size_t i : on) {
        MMTWIN_ASSIGN_OR_RETURN(const double v, predict(i, trial));
        sum += LossTerm(suite.entries[i], v, memory_gib[i]);
      }
      return sum / static_cast<double>(on.size());
    };
    // Golden-section search over [min, max]: 12 narrowing steps leave 0.3% of the range.
    const double g = (std::sqrt(5.0) - 1) / 2;
    double a = p.min, b = p.max;
    double c = b - g * (b - a), d = a + g * (b - a);
    MMTWIN_ASSIGN_OR_RETURN(double fc, loss(c));
    MMTWIN_ASSIGN_OR_RETURN(double fd, loss(d));
    for (int step = 0; step < 12; ++step) {
      if (fc <= fd) {
        b = d;
        d = c;
        fd = fc;
        c = b - g * (b - a);
        MMTWIN_ASSIGN_OR_RETURN(fc, loss(c));
      } else {
        a = c;
        c = d;
        fc = fd;
        d = a + g * (b - a);
        MMTWIN_ASSIGN_OR_RETURN(fd, loss(d));
      }
      runner.Say("fit " + p.key + (p.device.empty() ? "" : " (" + p.device + ")") + ": step " +
                 std::to_string(step + 1) + "/12, [" + Num(a) + ", " + Num(b) + "]\n");
    }
    f.value = fc <= fd ? c : d;
    f.loss_fitted = std::min(fc, fd);
    double prior_loss = 0;
    for (size_t i : on) prior_loss += LossTerm(suite.entries[i], report.results[i].prior, memory_gib[i]);
    f.loss_prior = prior_loss / static_cast<double>(on.size());
    // A parameter its entries do not depend on (the loss the same over the whole range) is not identifiable from
    // them: it keeps its preset value rather than an arbitrary point of the range.
    MMTWIN_ASSIGN_OR_RETURN(const double at_min, loss(p.min));
    MMTWIN_ASSIGN_OR_RETURN(const double at_max, loss(p.max));
    const double scale = 1e-9 * (1.0 + f.loss_fitted);
    if (std::fabs(at_min - f.loss_fitted) < scale && std::fabs(at_max - f.loss_fitted) < scale &&
        std::isfinite(f.prior)) {
      f.identifiable = false;
      f.value = f.prior;
      f.loss_fitted = f.loss_prior;
    }
    fitted.push_back(f);
  }

  // 3. Every entry with the fitted values.
  for (size_t i = 0; i < n; ++i) {
    if (fitted.empty()) {
      report.results[i].fitted = report.results[i].prior;
      continue;
    }
    MMTWIN_ASSIGN_OR_RETURN(report.results[i].fitted, predict(i, fitted));
  }
  report.fitted = fitted;
  return report;
}

double PublishedError(const PublishedResult& r, bool fitted) {
  const double p = fitted ? r.fitted : r.prior;
  if (r.entry.metric == PublishedMetric::kFits) return (p > 0.5) == (r.entry.measured > 0.5) ? 0.0 : 1.0;
  return RelativeError(p, r.entry.measured);
}

double PublishedMape(const PublishedReport& r, bool held_out, bool fitted) {
  double sum = 0;
  int count = 0;
  for (const PublishedResult& x : r.results) {
    if (x.entry.held_out != held_out || FamilyOf(x.entry.metric) != MetricFamily::kTime) continue;
    sum += std::fabs(PublishedError(x, fitted));
    ++count;
  }
  return count ? sum / count : 0.0;
}

std::pair<int, int> FitsAgreement(const PublishedReport& r, bool fitted) {
  int same = 0, all = 0;
  for (const PublishedResult& x : r.results) {
    if (x.entry.metric != PublishedMetric::kFits) continue;
    ++all;
    same += PublishedError(x, fitted) == 0;
  }
  return {same, all};
}

std::string PublishedCsv(const PublishedReport& r) {
  const fs::path dir = fs::absolute(fs::path(r.suite.path)).parent_path();
  std::string out =
      "name,split,metric,source,measured,predicted,error,predicted_prior,error_prior,device,scenario\n";
  for (const PublishedResult& x : r.results) {
    const PublishedEntry& e = x.entry;
    out += CsvRow({e.name, e.held_out ? "held_out" : "calibration", PublishedMetricName(e.metric), e.source,
                   Num(e.measured), Num(x.fitted), Num(PublishedError(x, true)), Num(x.prior),
                   Num(PublishedError(x, false)), x.device,
                   fs::absolute(e.scenario).lexically_relative(dir).string()});
  }
  return out;
}

std::string FittedCsv(const PublishedReport& r) {
  std::string out = "key,device,on,prior,value,loss_prior,loss_fitted,fitted_on\n";
  for (const FittedParam& f : r.fitted)
    out += CsvRow({f.param.key, f.param.device, FamilyName(f.param.on), Num(f.prior), Num(f.value),
                   Num(f.loss_prior), Num(f.loss_fitted), Join(f.fitted_on, ";")});
  return out;
}

}  // namespace mmtwin

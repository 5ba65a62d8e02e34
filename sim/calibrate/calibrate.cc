// SPDX-License-Identifier: Apache-2.0
// Calibration from measured runs (calibrate.h).
#include "calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/cost/cost_model.h"
#include "core/plan/mesh.h"
#include "core/records/layer_timings.h"
#include "core/records/run_folder.h"
#include "core/scenario/scenario.h"

namespace mmtwin {
namespace {

struct Samples {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
};

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string TypeName(const LayerTypeFit& f) { return f.source + "," + LayerKindName(f.kind); }

// The fits of a layer type: time passes, then memory when fitted.
std::vector<std::pair<const char*, const LinearFit*>> PassList(const LayerTypeFit& f) {
  std::vector<std::pair<const char*, const LinearFit*>> p = {{"fwd", &f.fwd}, {"bwd", &f.bwd}};
  if (f.has_memory) {
    p.push_back({"act", &f.act});
    p.push_back({"kept", &f.kept});
  }
  if (f.has_work) p.push_back({"work", &f.work});
  return p;
}

}  // namespace

Result<Calibration> Calibrate(const std::vector<std::string>& rundirs, const CalibrationOptions& options) {
  if (rundirs.empty()) return Error("no run folders to calibrate from");
  Calibration cal;
  cal.runs = rundirs;
  std::set<std::string> models;
  struct Group {
    Samples fwd, bwd, act, kept, work;
  };
  std::map<std::pair<std::string, int>, Group> groups;  // (source, kind)
  std::vector<std::pair<double, double>> optimizer;     // (parameters per GPU, measured step us)
  std::string tp_from;
  for (size_t r = 0; r < rundirs.size(); ++r) {
    const std::string& dir = rundirs[r];
    MMTWIN_ASSIGN_OR_RETURN(RunFolder run, ReadRunFolder(dir, {RunFile::kSummary, RunFile::kScenario},
                                                         {RunFile::kLayers, RunFile::kOps}));
    const RunSummary& summary = *run.summary;
    const std::string summary_path = RunFilePath(dir, RunFile::kSummary);
    const std::string scenario_path = RunFilePath(dir, RunFile::kScenario);
    if (summary.source != RecordSource::kMeasured)
      return Error(summary_path + ": source: a simulated run; calibration fits measured runs (mmtwin-train)");
    // A loaded host stretches timings (issue 33: +-60% seen on two shared cores): a run whose 1-minute load
    // average exceeded the host's cores, at its start or its last write, is named.
    if (summary.machine && summary.machine->cores > 0) {
      const MachineRecord& m = *summary.machine;
      // Other work: the load at the start (before the ranks weigh in much), or at the end less the run's
      // own ranks x threads.
      const double own = static_cast<double>(std::max(1, m.ranks)) * std::max(1, m.threads_per_rank);
      const double others = std::max(m.load_avg_1m_start, m.load_avg_1m_end - own);
      if (others > m.cores)
        cal.warnings.push_back(dir + ": other work kept the host busy while it ran (load average " +
                               Fixed(m.load_avg_1m_start, 1) + " at the start, " +
                               Fixed(m.load_avg_1m_end, 1) + " at the end with its own " + Fixed(own, 0) +
                               " rank threads, on " + std::to_string(m.cores) +
                               " cores): its timings may be inflated; measure again on an idle host");
    }
    auto scenario = ScenarioOf(run);
    if (!scenario) return scenario.error().Wrap(dir);
    auto model = LoadScenarioModel(*scenario);
    if (!model) return model.error().Wrap(dir);
    if (summary.model != model->name)
      return Error(summary_path + ": model: '" + summary.model + "', but its " +
                   RunFileName(RunFile::kScenario) + " gives '" + model->name + "'");
    if (r == 0) {
      cal.tp = scenario->parallel.tp;
      tp_from = dir;
    } else if (scenario->parallel.tp != cal.tp) {
      return Error(scenario_path + ": parallel.tp: " + std::to_string(scenario->parallel.tp) + ", but " +
                   tp_from + " ran tp " + std::to_string(cal.tp) +
                   "; a profile holds the times of one TP degree (calibrate each tp separately)");
    }
    models.insert(model->name);
    // The optimizer ops, each of its device's pipeline stage.
    if (run.ops) {
      const ParallelConfig& par = scenario->parallel;
      const DeviceMesh mesh(par);
      for (const OpRecord& o : *run.ops) {
        if (o.kind != OpKind::kOptimizer || o.duration_us <= 0 || o.device < 0 ||
            o.device >= mesh.num_devices())
          continue;
        const size_t stage = static_cast<size_t>(mesh.PpOfDevice(o.device));
        if (stage >= summary.stages.size()) continue;
        const double per_gpu = OptimizerParamsPerGpu(static_cast<double>(summary.stages[stage].params),
                                                     par.tp, par.dp, par.zero_stage);
        if (!(per_gpu > 0)) continue;
        optimizer.emplace_back(per_gpu, o.duration_us);
      }
    }
    const std::string path = RunFilePath(dir, RunFile::kLayers);
    if (!run.layers)
      return Error::Io(path + ": missing from the run folder (a run of mmtwin-train keeps it)");
    const std::vector<LayerTiming>& rows = *run.layers;
    const std::vector<Layer> layers = Layers(*model);
    for (const LayerTiming& t : rows) {
      if (t.layer >= static_cast<int32_t>(layers.size()))
        return Error::At(path, t.line, "layer",
                         std::to_string(t.layer) + " is past the last layer of " + model->name + " (" +
                             std::to_string(layers.size()) + " layers): this file is from another model");
      const Layer& l = layers[static_cast<size_t>(t.layer)];
      if (l.label != t.label || l.kind != t.kind)
        return Error::At(path, t.line, "label",
                         "'" + t.label + "' (" + LayerKindName(t.kind) + ") but layer " +
                             std::to_string(t.layer) + " of " + model->name + " is '" + l.label + "' (" +
                             LayerKindName(l.kind) + "): this file is from another model");
      if (t.tokens <= 0) continue;
      const std::vector<double> x = {1.0, static_cast<double>(t.tokens), t.attention_pairs};
      auto& g =
          groups[{model->components.at(static_cast<size_t>(l.component)).source, static_cast<int>(l.kind)}];
      g.fwd.x.push_back(x);
      g.fwd.y.push_back(t.fwd_us);
      if (t.recompute_us > 0) {
        g.fwd.x.push_back(x);
        g.fwd.y.push_back(t.recompute_us);
      }
      g.bwd.x.push_back(x);
      g.bwd.y.push_back(t.bwd_us);
      if (t.recompute_us == 0 && t.act_bytes > 0) {
        g.act.x.push_back(x);
        g.act.y.push_back(static_cast<double>(t.act_bytes));
        g.kept.x.push_back({static_cast<double>(t.tokens)});
        g.kept.y.push_back(static_cast<double>(t.out_bytes));
      }
      // Working memory: every row that measured it (recomputed layers too: after their rematerialization
      // the backward is the same). A v2 file has none (-1).
      if (t.bwd_work_bytes > 0) {
        g.work.x.push_back(x);
        g.work.y.push_back(static_cast<double>(t.bwd_work_bytes));
      }
    }
  }
  cal.models.assign(models.begin(), models.end());
  double params_sum = 0, us_sum = 0;
  for (const auto& [params, us] : optimizer) params_sum += params, us_sum += us;
  if (!optimizer.empty() && params_sum > 0 && us_sum > 0) {
    cal.optimizer_samples = static_cast<int64_t>(optimizer.size());
    cal.optimizer_param_us = us_sum / params_sum;
    for (const auto& [params, us] : optimizer)
      cal.optimizer_rel_spread =
          std::max(cal.optimizer_rel_spread, std::abs(us / (cal.optimizer_param_us * params) - 1));
  }
  if (groups.empty())
    return Error("the runs measured no layer with work (every layers.csv row has 0 tokens)");
  for (auto& [key, g] : groups) {
    LayerTypeFit f;
    f.source = key.first;
    f.kind = static_cast<LayerKind>(key.second);
    const int64_t n = static_cast<int64_t>(g.bwd.y.size());
    if (n < options.min_samples)
      return Error("layer type '" + TypeName(f) + "': " + std::to_string(n) + " measured rows, at least " +
                   std::to_string(options.min_samples) +
                   " are needed to fit it (more measured iterations or calibration runs)");
    auto fwd = FitNonNegative(g.fwd.x, g.fwd.y);
    if (!fwd) return fwd.error().Wrap("layer type '" + TypeName(f) + "', forward");
    auto bwd = FitNonNegative(g.bwd.x, g.bwd.y);
    if (!bwd) return bwd.error().Wrap("layer type '" + TypeName(f) + "', backward");
    f.fwd = std::move(*fwd);
    f.bwd = std::move(*bwd);
    // Under-determined fits (issue 33, item 5): one run of one sequence length gives one token count per layer,
    // and the fit then puts everything into c0 (or c_token) with nothing to tell them apart.
    std::set<double> token_counts;
    for (const std::vector<double>& x : g.bwd.x) token_counts.insert(x[1]);
    if (static_cast<int>(token_counts.size()) < kMinDistinctTokenCounts)
      cal.warnings.push_back(
          "layer type '" + TypeName(f) + "': its " + std::to_string(n) + " rows hold " +
          std::to_string(token_counts.size()) + " distinct token count" +
          (token_counts.size() == 1 ? "" : "s") + ", so the per-token cost is not determined (fitted " +
          Sci(f.fwd.coefficients[1]) + " us per token forward); measure at least " +
          std::to_string(kMinDistinctTokenCounts) +
          " different token counts per layer type: runs of different sequence lengths, micro-batch sizes or "
          "data policies");
    for (const auto& [pass, fit] :
         {std::pair<const char*, const LinearFit*>{"forward", &f.fwd}, {"backward", &f.bwd}})
      if (fit->r2 < kMinR2 && static_cast<int>(token_counts.size()) >= kMinDistinctTokenCounts)
        cal.warnings.push_back("layer type '" + TypeName(f) + "': the " + pass +
                               " fit explains little (R^2 " + Fixed(fit->r2, 2) + " over " +
                               std::to_string(fit->samples) +
                               " rows): noisy timings (a loaded host?) or a layer the linear model does not "
                               "describe; more measured iterations help against noise");
    if (static_cast<int64_t>(g.act.y.size()) >= options.min_samples) {
      auto act = FitNonNegative(g.act.x, g.act.y);
      if (!act) return act.error().Wrap("layer type '" + TypeName(f) + "', activation bytes");
      auto kept = FitNonNegative(g.kept.x, g.kept.y);
      if (!kept) return kept.error().Wrap("layer type '" + TypeName(f) + "', kept bytes");
      f.has_memory = true;
      f.act = std::move(*act);
      f.kept = std::move(*kept);
    }
    if (static_cast<int64_t>(g.work.y.size()) >= options.min_samples) {
      auto work = FitNonNegative(g.work.x, g.work.y);
      if (!work) return work.error().Wrap("layer type '" + TypeName(f) + "', backward working bytes");
      f.has_work = true;
      f.work = std::move(*work);
    }
    cal.fits.push_back(std::move(f));
  }
  return cal;
}

std::string FormatProfile(const Calibration& c) {
  CoefficientCostModel table{AnalyticCostModel(DeviceSpec{})};
  for (const LayerTypeFit& f : c.fits) {
    TimeCoefficients t;
    t.fwd_c0_us = f.fwd.coefficients[0];
    t.fwd_token_us = f.fwd.coefficients[1];
    t.fwd_pair_us = f.fwd.coefficients[2];
    t.bwd_c0_us = f.bwd.coefficients[0];
    t.bwd_token_us = f.bwd.coefficients[1];
    t.bwd_pair_us = f.bwd.coefficients[2];
    if (f.has_memory) {
      t.has_memory = true;
      t.act_c0_bytes = f.act.coefficients[0];
      t.act_token_bytes = f.act.coefficients[1];
      t.act_pair_bytes = f.act.coefficients[2];
      t.kept_token_bytes = f.kept.coefficients[0];
    }
    if (f.has_work) {
      t.has_work = true;
      t.work_c0_bytes = f.work.coefficients[0];
      t.work_token_bytes = f.work.coefficients[1];
      t.work_pair_bytes = f.work.coefficients[2];
    }
    table.Set(f.source, f.kind, t);
  }
  if (c.optimizer_samples > 0) table.SetOptimizer(0, c.optimizer_param_us);
  std::string head =
      "# mmtwin calibrate: per-layer times fitted to measured runs (tp " + std::to_string(c.tp) + ")\n";
  for (const std::string& m : c.models) head += "# model: " + m + "\n";
  for (const std::string& r : c.runs) head += "# run: " + r + "\n";
  head +=
      "# fit per layer type and pass (fwd / bwd times, act / kept / backward work bytes): rows, R^2, "
      "|residual|/value p50 / "
      "p90 / max, outliers (> 3 robust sigmas)\n";
  for (const LayerTypeFit& f : c.fits)
    for (const auto& [pass, fitp] : PassList(f)) {
      const LinearFit& fit = *fitp;
      head += "#   " + TypeName(f) + " " + pass + ": n " + std::to_string(fit.samples) + ", R^2 " +
              Fixed(fit.r2, 4) + ", residual " + Fixed(100 * fit.rel_residual_p50, 1) + "% / " +
              Fixed(100 * fit.rel_residual_p90, 1) + "% / " + Fixed(100 * fit.rel_residual_max, 1) +
              "%, outliers " + std::to_string(fit.outliers) + "\n";
    }
  if (c.optimizer_samples > 0)
    head += "#   optimizer: n " + std::to_string(c.optimizer_samples) + " measured steps, " +
            Sci(c.optimizer_param_us) + " us per parameter, largest |step / fit - 1| " +
            Fixed(100 * c.optimizer_rel_spread, 1) + "%\n";
  // CoefficientCostModel::Format starts with its version line; the comments go after it.
  const std::string body = table.Format();
  const size_t eol = body.find('\n');
  return body.substr(0, eol + 1) + head + body.substr(eol + 1);
}

std::string CalibrationJson(const Calibration& c) {
  nlohmann::json fits = nlohmann::json::array();
  for (const LayerTypeFit& f : c.fits) {
    nlohmann::json passes = nlohmann::json::object();
    for (const auto& [pass, fitp] : PassList(f)) {
      const LinearFit& fit = *fitp;
      // The columns in the profile's order: time passes in us, memory passes in bytes; kept has tokens only.
      const bool time = pass[0] == 'f' || pass[0] == 'b';
      const std::string unit = time ? "_us" : "_bytes";
      const std::vector<std::string> names = {"c0" + unit, "token" + unit, "pair" + unit};
      nlohmann::json coefficients = nlohmann::json::object(), identified = nlohmann::json::object();
      const size_t first = fit.coefficients.size() == 1 ? 1 : 0;  // kept: token_bytes only
      for (size_t k = 0; k < fit.coefficients.size() && first + k < names.size(); ++k) {
        coefficients[names[first + k]] = fit.coefficients[k];
        identified[names[first + k]] =
            k < fit.identified.size() ? static_cast<bool>(fit.identified[k]) : true;
      }
      passes[pass] = {{"samples", fit.samples},
                      {"coefficients", coefficients},
                      {"identified", identified},
                      {"r2", fit.r2},
                      {"rel_residual_p50", fit.rel_residual_p50},
                      {"rel_residual_p90", fit.rel_residual_p90},
                      {"rel_residual_max", fit.rel_residual_max},
                      {"outliers", fit.outliers}};
    }
    fits.push_back(
        {{"type", TypeName(f)}, {"source", f.source}, {"kind", LayerKindName(f.kind)}, {"passes", passes}});
  }
  nlohmann::json j = {
      {"runs", c.runs}, {"models", c.models}, {"tp", c.tp}, {"fits", fits}, {"warnings", c.warnings}};
  if (c.optimizer_samples > 0)
    j["optimizer"] = {{"samples", c.optimizer_samples},
                      {"param_us", c.optimizer_param_us},
                      {"rel_spread", c.optimizer_rel_spread}};
  return j.dump(2);
}

std::string FormatCalibrationTable(const Calibration& c) {
  std::string out =
      "layer type                          pass  rows     c0_us   token_us    pair_us    R^2   p50    p90  "
      "outl\n";
  for (const LayerTypeFit& f : c.fits)
    for (const auto& [pass, fitp] : PassList(f)) {
      if (pass[0] == 'a' || pass[0] == 'k' || pass[0] == 'w') continue;  // memory: the table below
      const LinearFit& fit = *fitp;
      char line[256];
      std::snprintf(line, sizeof line, "%-35s %-4s %5lld %9s %10s %10s %6.4f %4.1f%% %5.1f%% %5lld\n",
                    TypeName(f).c_str(), pass, static_cast<long long>(fit.samples),
                    Sci(fit.coefficients[0]).c_str(), Sci(fit.coefficients[1]).c_str(),
                    Sci(fit.coefficients[2]).c_str(), fit.r2, 100 * fit.rel_residual_p50,
                    100 * fit.rel_residual_p90, static_cast<long long>(fit.outliers));
      out += line;
    }
  if (c.optimizer_samples > 0) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "%-35s %-4s %5lld %9s %10s (per parameter updated; largest deviation %.1f%%)\n",
                  "optimizer step", "step", static_cast<long long>(c.optimizer_samples), "0",
                  Sci(c.optimizer_param_us).c_str(), 100 * c.optimizer_rel_spread);
    out += line;
  }
  bool memory = false;
  for (const LayerTypeFit& f : c.fits) memory = memory || f.has_memory || f.has_work;
  if (!memory) return out;
  out +=
      "\nlayer type                          bytes rows  c0_bytes token_bytes pair_bytes    R^2   p50    p90 "
      " "
      "outl\n";
  for (const LayerTypeFit& f : c.fits) {
    std::vector<std::pair<const char*, const LinearFit*>> passes;
    if (f.has_memory) passes = {{"act", &f.act}, {"kept", &f.kept}};
    if (f.has_work) passes.push_back({"work", &f.work});
    for (const auto& [pass, fitp] : passes) {
      const LinearFit& fit = *fitp;
      const bool act = pass[0] != 'k';  // act and work: c0, token, pair; kept: token only
      char line[256];
      std::snprintf(line, sizeof line, "%-35s %-4s %5lld %9s %11s %10s %6.4f %4.1f%% %5.1f%% %5lld\n",
                    TypeName(f).c_str(), pass, static_cast<long long>(fit.samples),
                    act ? Sci(fit.coefficients[0]).c_str() : "-", Sci(fit.coefficients[act ? 1 : 0]).c_str(),
                    act ? Sci(fit.coefficients[2]).c_str() : "-", fit.r2, 100 * fit.rel_residual_p50,
                    100 * fit.rel_residual_p90, static_cast<long long>(fit.outliers));
      out += line;
    }
  }
  return out;
}

}  // namespace mmtwin

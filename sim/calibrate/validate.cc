// SPDX-License-Identifier: Apache-2.0
// Validation suites and their scores (validate.h); the write-up is report/validation_suite.h's.
#include "calibrate/validate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "calibrate/suite_file.h"
#include "core/util/csv.h"
#include "core/util/text.h"
#include "core/util/yaml_error.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

const StageRecord* StageOf(const RunSummary& s, size_t i) {
  return i < s.stages.size() ? &s.stages[i] : nullptr;
}

Result<ValidationSuite> ParseSuite(const std::string& text, const std::string& file) {
  ValidationSuite suite;
  suite.path = file;
  MMTWIN_ASSIGN_OR_RETURN(
      SuiteFileHead head,
      ReadSuiteHead(text, file, {"name", "description", "notes", "machine", "calibration", "held_out"}));
  const YAML::Node root = head.root;
  suite.name = head.name;
  suite.description = head.description;
  suite.notes = head.notes;
  if (const YAML::Node m = root["machine"]) {
    if (!m.IsScalar() || m.Scalar().empty()) return Error::At(file, LineOf(m), "machine", "expected text");
    suite.machine = m.Scalar();
  }
  const fs::path dir = fs::path(file).parent_path();
  for (const char* key : {"calibration", "held_out"}) {
    const YAML::Node list = root[key];
    if (!list || !list.IsSequence() || list.size() == 0)
      return Error::At(file, list ? LineOf(list) : LineOf(root), key,
                       "expected a non-empty list of scenario files");
    std::vector<std::string>& out = std::string(key) == "calibration" ? suite.calibration : suite.held_out;
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node v = list[i];
      const std::string field = std::string(key) + "[" + std::to_string(i) + "]";
      if (!v.IsScalar() || v.Scalar().empty())
        return Error::At(file, LineOf(v), field, "expected a scenario file");
      fs::path p = v.Scalar();
      if (p.is_relative()) p = dir / p;
      std::error_code ec;
      if (!fs::is_regular_file(p, ec))
        return Error::At(file, LineOf(v), field,
                         "'" + Abbreviate(v.Scalar()) + "': no such file (" + p.string() + ")");
      out.push_back(p.lexically_normal().string());
    }
  }
  std::set<std::string> cal(suite.calibration.begin(), suite.calibration.end());
  for (size_t i = 0; i < suite.held_out.size(); ++i)
    if (cal.count(suite.held_out[i]))
      return Error::At(file, LineOf(root["held_out"][i]), "held_out[" + std::to_string(i) + "]",
                       "'" + suite.held_out[i] +
                           "' is also a calibration scenario: held-out scenarios are never fitted on");
  return suite;
}

}  // namespace

Result<SuiteFileHead> ReadSuiteHead(const std::string& text, const std::string& file,
                                    const std::vector<std::string>& keys) {
  SuiteFileHead head;
  MMTWIN_ASSIGN_OR_RETURN(head.root, LoadStrictYaml(text, file));
  const YAML::Node& root = head.root;
  if (!root.IsMap()) return Error::At(file, LineOf(root), "", "a validation suite is a mapping");
  MMTWIN_RETURN_IF_ERROR(CheckKeys(root, file, "", keys));
  head.name =
      root["name"] && root["name"].IsScalar() ? root["name"].Scalar() : fs::path(file).stem().string();
  if (!IsPlainName(head.name))
    return Error::At(file, LineOf(root["name"]), "name",
                     "'" + Abbreviate(head.name) + "' must work as a file name");
  if (root["description"]) head.description = root["description"].Scalar();
  if (root["notes"]) head.notes = root["notes"].Scalar();
  return head;
}

double RelativeError(double predicted, double measured) {
  return measured != 0 ? (predicted - measured) / measured : 0;
}

Result<ValidationSuite> LoadValidationSuite(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return GuardYaml(path, [&] { return ParseSuite(text, path); });
}

double MemoryFit::Predict(const StageRecord& planned) const {
  if (fit.coefficients.size() != 3) return 0;
  return fit.coefficients[0] * static_cast<double>(planned.model_state_bytes) +
         fit.coefficients[1] * static_cast<double>(planned.peak_activation_bytes) + fit.coefficients[2];
}

Result<MemoryFit> FitMemory(const std::vector<std::pair<RunSummary, RunSummary>>& pairs) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& [measured, simulated] : pairs)
    for (size_t s = 0; s < measured.stages.size() && s < simulated.stages.size(); ++s) {
      if (measured.stages[s].peak_memory_bytes <= 0) continue;
      // Columns: model state, activations, and the fixed term last (so that columns 0-1 are the scaled ones).
      x.push_back({static_cast<double>(simulated.stages[s].model_state_bytes),
                   static_cast<double>(simulated.stages[s].peak_activation_bytes), 1.0});
      y.push_back(static_cast<double>(measured.stages[s].peak_memory_bytes));
    }
  if (x.size() < 3)
    return Error("the calibration runs measured " + std::to_string(x.size()) +
                 " stage peaks; the memory fit needs at least 3 (more calibration scenarios or stages)");
  // FitNonNegative treats column 0 as the intercept: put the constant first, then reorder.
  std::vector<std::vector<double>> xi;
  for (const auto& r : x) xi.push_back({r[2], r[0], r[1]});
  auto f = FitNonNegative(xi, y);
  if (!f) return f.error().Wrap("memory fit");
  MemoryFit m;
  m.fit = *f;
  m.fit.coefficients = {f->coefficients[1], f->coefficients[2], f->coefficients[0]};
  m.fit.identified = {f->identified[1], f->identified[2], f->identified[0]};
  return m;
}

double IterationMape(const ValidationReport& r, bool calibrated) {
  if (r.held_out.empty()) return 0;
  double sum = 0;
  for (const ScenarioValidation& v : r.held_out)
    sum += std::abs(RelativeError((calibrated ? v.calibrated : v.analytic).iteration_time_us.p50,
                                  v.measured.iteration_time_us.p50));
  return sum / static_cast<double>(r.held_out.size());
}

ValidationHeadline Headline(const ValidationReport& r) {
  ValidationHeadline h;
  h.mape_analytic = IterationMape(r, false);
  h.mape_calibrated = IterationMape(r, true);
  for (const ScenarioValidation& v : r.held_out) {
    const double m = v.measured.iteration_time_us.p50;
    if (std::abs(RelativeError(v.calibrated.iteration_time_us.p50, m)) >=
        std::abs(RelativeError(v.analytic.iteration_time_us.p50, m)))
      h.calibrated_beats_analytic = false;
    for (size_t s = 0; s < v.measured.stages.size(); ++s) {
      const StageRecord* c = StageOf(v.calibrated, s);
      if (!c) continue;
      h.worst_busy = std::max(h.worst_busy, std::abs(c->busy_ratio - v.measured.stages[s].busy_ratio));
      h.worst_bubble =
          std::max(h.worst_bubble, std::abs(c->bubble_ratio - v.measured.stages[s].bubble_ratio));
      if (s < v.calibrated_peak_bytes.size())
        h.worst_peak_memory =
            std::max(h.worst_peak_memory,
                     std::abs(RelativeError(v.calibrated_peak_bytes[s],
                                            static_cast<double>(v.measured.stages[s].peak_memory_bytes))));
    }
  }
  return h;
}

std::string ValidationCsv(const ValidationReport& r) {
  std::string out = "scenario,metric,stage,model,measured,predicted,error\n";
  auto row = [&](const std::string& sc, const std::string& metric, int stage, const char* model, double m,
                 double p, double err) {
    out += CsvQuote(sc) + "," + metric + "," + (stage < 0 ? "" : std::to_string(stage)) + "," + model + "," +
           Fmt("%.9g", m) + "," + Fmt("%.9g", p) + "," + Fmt("%.9g", err) + "\n";
  };
  for (const ScenarioValidation& v : r.held_out) {
    for (const auto& [model, s] : {std::pair<const char*, const RunSummary*>{"analytic", &v.analytic},
                                   {"calibrated", &v.calibrated}}) {
      const IterationTimeStats& m = v.measured.iteration_time_us;
      row(v.name, "iteration_p50_us", -1, model, m.p50, s->iteration_time_us.p50,
          RelativeError(s->iteration_time_us.p50, m.p50));
      row(v.name, "iteration_p99_us", -1, model, m.p99, s->iteration_time_us.p99,
          RelativeError(s->iteration_time_us.p99, m.p99));
      row(v.name, "iteration_mean_us", -1, model, m.mean, s->iteration_time_us.mean,
          RelativeError(s->iteration_time_us.mean, m.mean));
      row(v.name, "tokens_per_s", -1, model, v.measured.tokens_per_s, s->tokens_per_s,
          RelativeError(s->tokens_per_s, v.measured.tokens_per_s));
      for (size_t st = 0; st < v.measured.stages.size() && st < s->stages.size(); ++st) {
        const StageRecord& ms = v.measured.stages[st];
        const StageRecord& ps = s->stages[st];
        row(v.name, "busy_ratio", static_cast<int>(st), model, ms.busy_ratio, ps.busy_ratio,
            ps.busy_ratio - ms.busy_ratio);
        row(v.name, "bubble_ratio", static_cast<int>(st), model, ms.bubble_ratio, ps.bubble_ratio,
            ps.bubble_ratio - ms.bubble_ratio);
        if (s == &v.calibrated && st < v.calibrated_peak_bytes.size())
          row(v.name, "peak_memory_bytes", static_cast<int>(st), model,
              static_cast<double>(ms.peak_memory_bytes), v.calibrated_peak_bytes[st],
              RelativeError(v.calibrated_peak_bytes[st], static_cast<double>(ms.peak_memory_bytes)));
      }
    }
  }
  return out;
}

}  // namespace mmtwin

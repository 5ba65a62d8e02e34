// SPDX-License-Identifier: Apache-2.0
// Validation suites, scores and the report (validate.h).
#include "calibrate/validate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

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

double Rel(double predicted, double measured) {
  return measured != 0 ? (predicted - measured) / measured : 0;
}

std::string Pct(double rel) { return Fmt("%+.1f%%", 100 * rel); }

std::string Pts(double diff) { return Fmt("%+.1f", 100 * diff); }

const StageRecord* StageOf(const RunSummary& s, size_t i) {
  return i < s.stages.size() ? &s.stages[i] : nullptr;
}

Result<ValidationSuite> ParseSuite(const std::string& text, const std::string& file) {
  ValidationSuite suite;
  suite.path = file;
  MMTWIN_ASSIGN_OR_RETURN(const YAML::Node root, LoadStrictYaml(text, file));
  if (!root.IsMap()) return Error::At(file, LineOf(root), "", "a validation suite is a mapping");
  MMTWIN_RETURN_IF_ERROR(
      CheckKeys(root, file, "", {"name", "description", "notes", "calibration", "held_out"}));
  suite.name =
      root["name"] && root["name"].IsScalar() ? root["name"].Scalar() : fs::path(file).stem().string();
  if (!IsPlainName(suite.name))
    return Error::At(file, LineOf(root["name"]), "name",
                     "'" + Abbreviate(suite.name) + "' must work as a file name");
  if (root["description"]) suite.description = root["description"].Scalar();
  if (root["notes"]) suite.notes = root["notes"].Scalar();
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
    sum += std::abs(Rel((calibrated ? v.calibrated : v.analytic).iteration_time_us.p50,
                        v.measured.iteration_time_us.p50));
  return sum / static_cast<double>(r.held_out.size());
}

namespace {

void ScenarioTable(std::string& md, const std::vector<ScenarioValidation>& runs) {
  md +=
      "| scenario | dp×tp×pp | measured p50 (ms) | analytic p50 (error) | calibrated p50 (error) | measured "
      "p99 (ms) | "
      "calibrated p99 (error) | tokens/s measured | calibrated (error) |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  for (const ScenarioValidation& v : runs) {
    const ParallelConfig& p = v.measured.parallel;
    const double m50 = v.measured.iteration_time_us.p50, m99 = v.measured.iteration_time_us.p99;
    md += "| " + v.name + " | " + std::to_string(p.dp) + "×" + std::to_string(p.tp) + "×" +
          std::to_string(p.pp) + " | " + Fmt("%.1f", m50 / 1e3) + " | " +
          Fmt("%.1f", v.analytic.iteration_time_us.p50 / 1e3) + " (" +
          Pct(Rel(v.analytic.iteration_time_us.p50, m50)) + ") | " +
          Fmt("%.1f", v.calibrated.iteration_time_us.p50 / 1e3) + " (" +
          Pct(Rel(v.calibrated.iteration_time_us.p50, m50)) + ") | " + Fmt("%.1f", m99 / 1e3) + " | " +
          Fmt("%.1f", v.calibrated.iteration_time_us.p99 / 1e3) + " (" +
          Pct(Rel(v.calibrated.iteration_time_us.p99, m99)) + ") | " + Fmt("%.0f", v.measured.tokens_per_s) +
          " | " + Fmt("%.0f", v.calibrated.tokens_per_s) + " (" +
          Pct(Rel(v.calibrated.tokens_per_s, v.measured.tokens_per_s)) + ") |\n";
  }
}

void StageTable(std::string& md, const std::vector<ScenarioValidation>& runs) {
  md +=
      "| scenario | stage | busy measured | calibrated (Δ points) | bubble measured | calibrated (Δ points) "
      "| "
      "peak memory measured (MiB) | calibrated (error) |\n";
  md += "|---|---|---|---|---|---|---|---|\n";
  for (const ScenarioValidation& v : runs)
    for (size_t s = 0; s < v.measured.stages.size(); ++s) {
      const StageRecord& m = v.measured.stages[s];
      const StageRecord* c = StageOf(v.calibrated, s);
      if (!c) continue;
      const double peak = s < v.calibrated_peak_bytes.size() ? v.calibrated_peak_bytes[s] : 0;
      md += "| " + v.name + " | " + std::to_string(s) + " | " + Fmt("%.3f", m.busy_ratio) + " | " +
            Fmt("%.3f", c->busy_ratio) + " (" + Pts(c->busy_ratio - m.busy_ratio) + ") | " +
            Fmt("%.3f", m.bubble_ratio) + " | " + Fmt("%.3f", c->bubble_ratio) + " (" +
            Pts(c->bubble_ratio - m.bubble_ratio) + ") | " +
            Fmt("%.1f", static_cast<double>(m.peak_memory_bytes) / 1048576.0) + " | " +
            Fmt("%.1f", peak / 1048576.0) + " (" + Pct(Rel(peak, static_cast<double>(m.peak_memory_bytes))) +
            ") |\n";
    }
}

}  // namespace

ValidationHeadline Headline(const ValidationReport& r) {
  ValidationHeadline h;
  h.mape_analytic = IterationMape(r, false);
  h.mape_calibrated = IterationMape(r, true);
  for (const ScenarioValidation& v : r.held_out) {
    const double m = v.measured.iteration_time_us.p50;
    if (std::abs(Rel(v.calibrated.iteration_time_us.p50, m)) >=
        std::abs(Rel(v.analytic.iteration_time_us.p50, m)))
      h.calibrated_beats_analytic = false;
    for (size_t s = 0; s < v.measured.stages.size(); ++s) {
      const StageRecord* c = StageOf(v.calibrated, s);
      if (!c) continue;
      h.worst_busy = std::max(h.worst_busy, std::abs(c->busy_ratio - v.measured.stages[s].busy_ratio));
      h.worst_bubble =
          std::max(h.worst_bubble, std::abs(c->bubble_ratio - v.measured.stages[s].bubble_ratio));
      if (s < v.calibrated_peak_bytes.size())
        h.worst_peak_memory = std::max(
            h.worst_peak_memory, std::abs(Rel(v.calibrated_peak_bytes[s],
                                              static_cast<double>(v.measured.stages[s].peak_memory_bytes))));
    }
  }
  return h;
}

std::string ValidationMarkdown(const ValidationReport& r) {
  std::string md = "# Validation: " + r.suite.name + "\n\n";
  if (!r.suite.description.empty()) md += r.suite.description + "\n\n";
  md += "Machine: " + r.machine + "  \nCommand: `" + r.command + "`  \nSuite: `" + r.suite.path + "`\n\n";
  const ValidationHeadline h = Headline(r);
  md += "## Summary (held-out scenarios: never used by the fit)\n\n";
  md += "| figure | analytic | calibrated |\n|---|---|---|\n";
  md += "| iteration time p50, MAPE over " + std::to_string(r.held_out.size()) + " scenarios | " +
        Fmt("%.1f%%", 100 * h.mape_analytic) + " | " + Fmt("%.1f%%", 100 * h.mape_calibrated) + " |\n";
  md += "| worst per-stage busy error (points) | – | " + Fmt("%.1f", 100 * h.worst_busy) + " |\n";
  md += "| worst per-stage bubble error (points) | – | " + Fmt("%.1f", 100 * h.worst_bubble) + " |\n";
  md += "| worst per-stage peak memory error | – | " + Fmt("%.1f%%", 100 * h.worst_peak_memory) + " |\n\n";
  md += std::string("Calibrated beats analytic on every held-out scenario's iteration time: ") +
        (h.calibrated_beats_analytic ? "yes"
         : r.suite.notes.empty()     ? "**no** (see the table)"
                                     : "**no** (see the notes)") +
        ".\n\n";
  if (!r.suite.notes.empty()) md += "**Notes.** " + r.suite.notes + "\n\n";
  md += "![predicted against measured iteration time](scatter.svg)\n\n";
  md += "## Held-out scenarios\n\n";
  ScenarioTable(md, r.held_out);
  md += "\n![per-stage busy and bubble, measured and calibrated](stages.svg)\n\n";
  StageTable(md, r.held_out);
  md += "\n## Calibration runs (in-sample, for reference)\n\n";
  ScenarioTable(md, r.calibration_runs);
  md +=
      "\n## The fit\n\nPer-layer time and activation-byte coefficients (`profile.csv`), from the calibration "
      "runs only:\n\n```\n" +
      FormatCalibrationTable(r.calibration) + "```\n\n";
  const LinearFit& mf = r.memory.fit;
  if (mf.coefficients.size() == 3)
    md += "Memory: measured stage peak = " + Fmt("%.3f", mf.coefficients[0]) + " × planned model state + " +
          Fmt("%.3f", mf.coefficients[1]) + " × planned peak activations + " +
          Fmt("%.1f MiB", mf.coefficients[2] / 1048576.0) + " (" + std::to_string(mf.samples) +
          " calibration stages, R² " + Fmt("%.4f", mf.r2) + ").\n";
  return md;
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
          Rel(s->iteration_time_us.p50, m.p50));
      row(v.name, "iteration_p99_us", -1, model, m.p99, s->iteration_time_us.p99,
          Rel(s->iteration_time_us.p99, m.p99));
      row(v.name, "iteration_mean_us", -1, model, m.mean, s->iteration_time_us.mean,
          Rel(s->iteration_time_us.mean, m.mean));
      row(v.name, "tokens_per_s", -1, model, v.measured.tokens_per_s, s->tokens_per_s,
          Rel(s->tokens_per_s, v.measured.tokens_per_s));
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
              Rel(v.calibrated_peak_bytes[st], static_cast<double>(ms.peak_memory_bytes)));
      }
    }
  }
  return out;
}

namespace {

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

std::string Text(double x, double y, const std::string& t, const char* anchor = "middle", int size = 12,
                 const char* extra = "") {
  return "<text x=\"" + Fmt("%.1f", x) + "\" y=\"" + Fmt("%.1f", y) +
         "\" font-family=\"sans-serif\" font-size=\"" + std::to_string(size) + "\" text-anchor=\"" + anchor +
         "\" " + extra + ">" + Esc(t) + "</text>\n";
}

}  // namespace

std::string ScatterSvg(const ValidationReport& r) {
  const double w = 640, h = 520, left = 80, right = 190, top = 40, bottom = 60;
  double hi = 0;
  for (const ScenarioValidation& v : r.held_out)
    hi = std::max({hi, v.measured.iteration_time_us.p50, v.analytic.iteration_time_us.p50,
                   v.calibrated.iteration_time_us.p50});
  hi = hi > 0 ? hi * 1.05 / 1e3 : 1;  // ms
  // Round ticks: a step of 1, 2 or 5 x 10^k giving at most 6 intervals; the axes end on a tick.
  double step = std::pow(10.0, std::floor(std::log10(hi / 6)));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (hi / (f * step) <= 6) {
      step *= f;
      break;
    }
  const int ticks = static_cast<int>(std::ceil(hi / step));
  hi = ticks * step;
  const double pw = w - left - right, ph = h - top - bottom;
  auto px = [&](double ms) { return left + pw * ms / hi; };
  auto py = [&](double ms) { return top + ph * (1 - ms / hi); };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Fmt("%.0f", w) + "\" height=\"" +
                    Fmt("%.0f", h) + "\" viewBox=\"0 0 " + Fmt("%.0f", w) + " " + Fmt("%.0f", h) + "\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += Text(w / 2 - right / 2 + left / 2, 22,
              "Predicted vs measured iteration time (p50), held-out scenarios", "middle", 14);
  // Grid and ticks.
  for (int i = 0; i <= ticks; ++i) {
    const double v = step * i;
    svg += "<line x1=\"" + Fmt("%.1f", px(v)) + "\" y1=\"" + Fmt("%.1f", top) + "\" x2=\"" +
           Fmt("%.1f", px(v)) + "\" y2=\"" + Fmt("%.1f", top + ph) + "\" stroke=\"#ddd\"/>\n";
    svg += "<line x1=\"" + Fmt("%.1f", left) + "\" y1=\"" + Fmt("%.1f", py(v)) + "\" x2=\"" +
           Fmt("%.1f", left + pw) + "\" y2=\"" + Fmt("%.1f", py(v)) + "\" stroke=\"#ddd\"/>\n";
    svg += Text(px(v), top + ph + 18, Fmt("%.0f", v));
    svg += Text(left - 8, py(v) + 4, Fmt("%.0f", v), "end");
  }
  svg += "<rect x=\"" + Fmt("%.1f", left) + "\" y=\"" + Fmt("%.1f", top) + "\" width=\"" + Fmt("%.1f", pw) +
         "\" height=\"" + Fmt("%.1f", ph) + "\" fill=\"none\" stroke=\"black\"/>\n";
  svg += "<line x1=\"" + Fmt("%.1f", px(0)) + "\" y1=\"" + Fmt("%.1f", py(0)) + "\" x2=\"" +
         Fmt("%.1f", px(hi)) + "\" y2=\"" + Fmt("%.1f", py(hi)) +
         "\" stroke=\"#888\" stroke-dasharray=\"5,4\"/>\n";
  svg += Text(left + pw / 2, h - 18, "measured (ms)");
  svg += Text(22, top + ph / 2, "predicted (ms)", "middle", 12,
              ("transform=\"rotate(-90 22 " + Fmt("%.1f", top + ph / 2) + ")\"").c_str());
  for (const ScenarioValidation& v : r.held_out) {
    const double m = v.measured.iteration_time_us.p50 / 1e3;
    svg += "<circle cx=\"" + Fmt("%.1f", px(m)) + "\" cy=\"" +
           Fmt("%.1f", py(v.analytic.iteration_time_us.p50 / 1e3)) +
           "\" r=\"5\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"><title>" + Esc(v.name) +
           " analytic</title></circle>\n";
    svg += "<circle cx=\"" + Fmt("%.1f", px(m)) + "\" cy=\"" +
           Fmt("%.1f", py(v.calibrated.iteration_time_us.p50 / 1e3)) + "\" r=\"5\" fill=\"#1f77b4\"><title>" +
           Esc(v.name) + " calibrated</title></circle>\n";
  }
  // Legend.
  const double lx = left + pw + 20;
  svg += "<circle cx=\"" + Fmt("%.1f", lx) + "\" cy=\"" + Fmt("%.1f", top + 10) +
         "\" r=\"5\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n";
  svg += Text(lx + 12, top + 14, "analytic (" + Fmt("%.1f%%", 100 * IterationMape(r, false)) + " MAPE)",
              "start");
  svg += "<circle cx=\"" + Fmt("%.1f", lx) + "\" cy=\"" + Fmt("%.1f", top + 34) +
         "\" r=\"5\" fill=\"#1f77b4\"/>\n";
  svg += Text(lx + 12, top + 38, "calibrated (" + Fmt("%.1f%%", 100 * IterationMape(r, true)) + " MAPE)",
              "start");
  svg += "<line x1=\"" + Fmt("%.1f", lx - 6) + "\" y1=\"" + Fmt("%.1f", top + 58) + "\" x2=\"" +
         Fmt("%.1f", lx + 6) + "\" y2=\"" + Fmt("%.1f", top + 58) +
         "\" stroke=\"#888\" stroke-dasharray=\"5,4\"/>\n";
  svg += Text(lx + 12, top + 62, "predicted = measured", "start");
  svg += "</svg>\n";
  return svg;
}

std::string StageBarsSvg(const ValidationReport& r) {
  struct Bar {
    std::string label;
    double m_busy, m_bubble, c_busy, c_bubble;
  };
  std::vector<Bar> bars;
  for (const ScenarioValidation& v : r.held_out)
    for (size_t s = 0; s < v.measured.stages.size() && s < v.calibrated.stages.size(); ++s)
      bars.push_back({v.name + " s" + std::to_string(s), v.measured.stages[s].busy_ratio,
                      v.measured.stages[s].bubble_ratio, v.calibrated.stages[s].busy_ratio,
                      v.calibrated.stages[s].bubble_ratio});
  const double row = 34, left = 230, width = 560, top = 50;
  const double h = top + row * static_cast<double>(bars.size()) + 60, w = left + width + 40;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Fmt("%.0f", w) + "\" height=\"" +
                    Fmt("%.0f", h) + "\" viewBox=\"0 0 " + Fmt("%.0f", w) + " " + Fmt("%.0f", h) + "\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += Text(w / 2, 22, "Per-stage time split: measured (upper bar) vs calibrated prediction (lower bar)",
              "middle", 14);
  for (int i = 0; i <= 4; ++i) {
    const double x = left + width * i / 4.0;
    svg += "<line x1=\"" + Fmt("%.1f", x) + "\" y1=\"" + Fmt("%.1f", top - 6) + "\" x2=\"" + Fmt("%.1f", x) +
           "\" y2=\"" + Fmt("%.1f", h - 50) + "\" stroke=\"#ddd\"/>\n";
    svg += Text(x, h - 34, Fmt("%.0f%%", 25.0 * i));
  }
  auto seg = [&](double x0, double frac, double y, double bh, const char* color) {
    return "<rect x=\"" + Fmt("%.1f", x0) + "\" y=\"" + Fmt("%.1f", y) + "\" width=\"" +
           Fmt("%.1f", std::max(0.0, frac) * width) + "\" height=\"" + Fmt("%.1f", bh) + "\" fill=\"" +
           color + "\"/>\n";
  };
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    svg += Text(left - 8, y + 17, b.label, "end", 11);
    for (int k = 0; k < 2; ++k) {
      const double busy = k == 0 ? b.m_busy : b.c_busy, bubble = k == 0 ? b.m_bubble : b.c_bubble;
      const double yy = y + 2 + k * 14;
      svg += seg(left, busy, yy, 12, k == 0 ? "#2ca02c" : "#98df8a");
      svg += seg(left + busy * width, bubble, yy, 12, k == 0 ? "#ff7f0e" : "#ffbb78");
      svg += seg(left + (busy + bubble) * width, std::max(0.0, 1 - busy - bubble), yy, 12,
                 k == 0 ? "#7f7f7f" : "#c7c7c7");
    }
  }
  const double ly = h - 16;
  const std::vector<std::pair<const char*, const char*>> legend = {
      {"#2ca02c", "busy"}, {"#ff7f0e", "bubble"}, {"#7f7f7f", "idle + exposed comm"}};
  double lx = left;
  for (const auto& [color, name] : legend) {
    svg += "<rect x=\"" + Fmt("%.1f", lx) + "\" y=\"" + Fmt("%.1f", ly - 10) +
           "\" width=\"12\" height=\"12\" fill=\"" + color + "\"/>\n";
    svg += Text(lx + 16, ly, name, "start", 11);
    lx += 150;
  }
  svg += Text(left - 8, ly, "(lighter: predicted)", "end", 11);
  svg += "</svg>\n";
  return svg;
}

}  // namespace mmtwin

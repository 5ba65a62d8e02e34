// SPDX-License-Identifier: Apache-2.0
// mmtwin kernels TABLE.csv --cluster C [--fit] [-o DIR] [--json]: a GPU's measured kernel table
// (backend/gpu/kernel_sweep.py) against a cluster preset's compute curves, per kernel group and split, and with
// --fit the curve parameters fitted on the calibration rows and scored on the held-out ones
// (sim/calibrate/kernels.h). Exit 0, or 2 on bad input (the message names the file and line, or the option).
#include <cmath>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/kernels.h"
#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/cluster/cluster.h"
#include "core/util/atomic_dir.h"
#include "core/util/csv.h"

namespace mmtwin::cli {
namespace {

using nlohmann::json;

const char* SplitName(KernelSplit s) { return s == KernelSplit::kCalibration ? "calibration" : "held-out"; }

std::string Pct(double x) { return (x >= 0 ? "+" : "") + Fixed(100 * x, 1) + "%"; }

struct Scored {
  std::vector<KernelErrorStats> preset, fitted;
  KernelErrorStats preset_all[2], fitted_all[2];
};

std::vector<std::vector<std::string>> ErrorRows(const Scored& s, bool fit) {
  std::vector<std::vector<std::string>> rows;
  auto add = [&](const KernelErrorStats& p, const KernelErrorStats* f) {
    std::vector<std::string> r = {
        p.group,     SplitName(p.split), std::to_string(p.rows), Fixed(100 * p.mape, 1) + "%",
        Pct(p.mean), Pct(p.worst)};
    if (fit && f) {
      r.push_back(Fixed(100 * f->mape, 1) + "%");
      r.push_back(Pct(f->mean));
      r.push_back(Pct(f->worst));
    }
    rows.push_back(r);
  };
  for (size_t i = 0; i < s.preset.size(); ++i) add(s.preset[i], fit ? &s.fitted[i] : nullptr);
  for (int sp = 0; sp < 2; ++sp) add(s.preset_all[sp], fit ? &s.fitted_all[sp] : nullptr);
  return rows;
}

std::vector<std::string> ErrorHead(bool fit) {
  std::vector<std::string> h = {"group", "split", "rows", "preset MAPE", "mean", "worst"};
  if (fit) {
    h.push_back("fitted MAPE");
    h.push_back("mean");
    h.push_back("worst");
  }
  return h;
}

void MarkdownTable(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                   std::ostream& out) {
  out << "|";
  for (const auto& h : head) out << " " << h << " |";
  out << "\n|";
  for (size_t c = 0; c < head.size(); ++c) out << (c > 1 ? "---:|" : "---|");
  out << "\n";
  for (const auto& r : rows) {
    out << "|";
    for (const auto& x : r) out << " " << x << " |";
    out << "\n";
  }
}

std::string Shape(const KernelRow& r) {
  std::ostringstream s;
  switch (r.family) {
    case KernelFamily::kGemm:
      s << r.m << "x" << r.n << "x" << r.k;
      break;
    case KernelFamily::kAttention:
      s << r.batch << "x" << r.heads << "h x" << r.span << " d" << r.head_dim << (r.causal ? " causal" : "");
      break;
    case KernelFamily::kStream:
      s << r.work << " B";
      break;
  }
  return s.str();
}

}  // namespace

int RunKernels(const KernelsArgs& a, std::ostream& out, std::ostream& err) {
  auto table = ReadKernelTable(a.table);
  if (!table) {
    err << "mmtwin kernels: " << table.error().message() << "\n";
    return 2;
  }
  auto cluster = LoadCluster(a.cluster);
  if (!cluster) {
    err << "mmtwin kernels: --cluster: " << cluster.error().message() << "\n";
    return 2;
  }
  const DeviceSpec& preset = cluster->device;
  if (!preset.has_compute_curve()) {
    err << "mmtwin kernels: --cluster: " << a.cluster << "'s device " << preset.name
        << " has no compute curve (device.gemm_peak_fraction): a GPU preset is needed\n";
    return 2;
  }
  DeviceSpec fitted = preset;
  if (a.fit) {
    auto f = FitKernelCurves(preset, *table);
    if (!f) {
      err << "mmtwin kernels: " << f.error().message() << "\n";
      return 2;
    }
    fitted = *f;
  }
  int priced = 0, calibration = 0;
  for (const KernelRow& r : table->rows) {
    priced += r.priced();
    calibration += r.priced() && r.split == KernelSplit::kCalibration;
  }
  Scored s;
  s.preset = KernelErrors(preset, *table);
  s.fitted = KernelErrors(fitted, *table);
  for (int sp = 0; sp < 2; ++sp) {
    s.preset_all[sp] = KernelErrorsOverall(preset, *table, static_cast<KernelSplit>(sp));
    s.fitted_all[sp] = KernelErrorsOverall(fitted, *table, static_cast<KernelSplit>(sp));
  }
  const auto rows = ErrorRows(s, a.fit);
  const auto head = ErrorHead(a.fit);

  // The fitted parameters as a cluster file's device: block.
  std::ostringstream yaml;
  yaml << "# mmtwin kernels --fit: " << a.table << ", " << calibration << " calibration rows of " << priced
       << " priced (the held-out half never seen); start: " << a.cluster << "\n";
  for (const std::string& c : table->comments) yaml << "#" << c << "\n";
  yaml << "device:\n";
  for (const KernelFitParam& p : KernelFitBounds())
    yaml << "  " << p.name << ": " << Significant(fitted.*p.field, 4) << "\n";

  if (!a.output.empty()) {
    std::ostringstream md, csv;
    md << "# Kernel table against the compute curves: " << cluster->name << "\n\n"
       << "Command: `mmtwin kernels " << a.table << " --cluster " << a.cluster << (a.fit ? " --fit" : "")
       << " -o " << a.output << "`  \nTable: `" << a.table << "` (" << table->rows.size() << " rows, "
       << priced << " bf16 priced)";
    for (const std::string& c : table->comments) md << "  \n`" << c << "`";
    md << "\n\nEach row's time predicted by the analytic cost model's curves (sim/core/cost/cost_model.h) on "
          "the "
          "preset's device `"
       << preset.name
       << "`, against the measured median. Rows alternate between calibration and held-out within each group "
          "(sim/calibrate/kernels.h)"
       << (a.fit ? "; the fitted curves saw the calibration rows only, so their held-out errors are "
                   "predictions."
                 : ".")
       << "\n\n";
    MarkdownTable(head, rows, md);
    if (a.fit) {
      md << "\n## Fitted parameters (" << calibration
         << " calibration rows)\n\n| parameter | preset | fitted |\n|---|---:|---:|\n";
      for (const KernelFitParam& p : KernelFitBounds())
        md << "| `" << p.name << "` | " << Significant(preset.*p.field, 4) << " | "
           << Significant(fitted.*p.field, 4) << " |\n";
    }
    csv << "line,group,split,dtype,pass,shape,work,measured_us,preset_us,preset_error,fitted_us,fitted_"
           "error\n";
    for (const KernelRow& r : table->rows) {
      csv << r.line << "," << r.group() << "," << (r.priced() ? SplitName(r.split) : "not priced") << ","
          << r.dtype << "," << r.pass << "," << CsvQuote(Shape(r)) << "," << r.work << "," << r.median_us;
      if (r.priced()) {
        const double p = PredictKernelUs(preset, r), f = PredictKernelUs(fitted, r);
        csv << "," << p << "," << p / r.median_us - 1 << "," << f << "," << f / r.median_us - 1;
      } else {
        csv << ",,,,";
      }
      csv << "\n";
    }
    const std::string md_s = md.str(), csv_s = csv.str(), yaml_s = yaml.str();
    std::vector<std::pair<std::string, std::string_view>> files = {{"README.md", md_s},
                                                                   {"kernels.csv", csv_s}};
    if (a.fit) files.push_back({"fitted.yaml", yaml_s});
    const Status st = WriteFolderAtomic(a.output, files);
    if (!st.ok()) {
      err << "mmtwin kernels: -o: " << st.error().message() << "\n";
      return 2;
    }
  }

  if (a.json) {
    auto stats = [](const KernelErrorStats& e) {
      return json{{"group", e.group}, {"split", SplitName(e.split)},
                  {"rows", e.rows},   {"mape", e.mape},
                  {"mean", e.mean},   {"worst", e.worst}};
    };
    json j = {
        {"table", a.table}, {"cluster", cluster->name}, {"rows", table->rows.size()}, {"priced", priced}};
    j["preset"] = json::array();
    for (const auto& e : s.preset) j["preset"].push_back(stats(e));
    for (int sp = 0; sp < 2; ++sp) j["preset"].push_back(stats(s.preset_all[sp]));
    if (a.fit) {
      j["fitted"] = json::array();
      for (const auto& e : s.fitted) j["fitted"].push_back(stats(e));
      for (int sp = 0; sp < 2; ++sp) j["fitted"].push_back(stats(s.fitted_all[sp]));
      j["parameters"] = json::object();
      for (const KernelFitParam& p : KernelFitBounds())
        j["parameters"][p.name] = {{"preset", preset.*p.field}, {"fitted", fitted.*p.field}};
    }
    if (!a.output.empty()) j["output"] = a.output;
    out << j.dump(2) << "\n";
    return 0;
  }
  out << "kernels: " << a.table << " (" << table->rows.size() << " rows, " << priced << " bf16 priced, "
      << calibration << " of them calibration) against " << cluster->name << " (" << preset.name << ")\n\n";
  WriteTextTable(head, rows, out, 2);
  if (a.fit) {
    out << "\nfitted on the " << calibration << " calibration rows (held-out rows never seen):\n";
    for (const KernelFitParam& p : KernelFitBounds())
      out << "  " << p.name << ": " << Significant(preset.*p.field, 4) << " -> "
          << Significant(fitted.*p.field, 4) << "\n";
  }
  if (!a.output.empty()) out << "\nwrote " << a.output << "\n";
  return 0;
}

}  // namespace mmtwin::cli

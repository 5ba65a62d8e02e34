// SPDX-License-Identifier: Apache-2.0
// mmtwin compare RUN_A RUN_B [--json]: side-by-side summaries of two runs (folders written by
// `mmtwin simulate -o`, or their summary.json files): A, B, B - A and B / A for the key metrics, then the
// same per pipeline stage (the metrics of core/records/headline_metrics.h, which the GUI's Compare tab shows too).
// Exit 0, or 2 on bad input (a missing or unreadable summary).
#include <cmath>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_format.h"
#include "cli/commands.h"
#include "core/records/headline_metrics.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"

namespace mmtwin::cli {
namespace {

using nlohmann::json;

json Row(double a, double b) {
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  return {{"a", num(a)}, {"b", num(b)}, {"delta", num(b - a)}, {"ratio", num(a != 0 ? b / a : std::nan(""))}};
}

std::string Cell(double x, int prec, bool sign = false) {
  if (!std::isfinite(x)) return "n/a";
  std::string s = Fixed(x, prec);
  if (sign && x > 0) s = "+" + s;
  return s;
}

std::string PadL(const std::string& s, size_t w) { return Pad(s, w, true); }
std::string PadR(const std::string& s, size_t w) { return Pad(s, w); }

std::string Policies(const RunSummary& j) {
  return std::string(RecordSourceName(j.source)) + " by " + (j.engine.empty() ? "?" : j.engine) + "; data " +
         j.data_policy.name + ", partition " + j.partition_policy.name + ", recompute " +
         j.recompute_policy.name + ", schedule " + j.schedule_policy.name;
}

// Where a run's figures come from: the cluster a prediction is for, or the machine a measurement ran on
// (issue 33, item 1: a measured run's cluster is only its scenario's label).
std::string RanOn(const RunSummary& j) {
  if (j.source == RecordSource::kSimulated)
    return "predicted for " + j.cluster.preset + " (" + std::to_string(j.cluster.nodes) + " node" +
           (j.cluster.nodes == 1 ? "" : "s") + " of " + j.cluster.device + ")";
  if (!j.machine) return "measured (machine not recorded; the scenario's cluster: " + j.cluster.preset + ")";
  const MachineRecord& m = *j.machine;
  std::string s = "measured on " + (m.host.empty() ? std::string("?") : m.host) + ": ";
  s += m.gpu.empty() ? (m.cpu.empty() ? std::string("CPU") : m.cpu)
                     : m.gpu + (m.cuda_driver.empty() ? "" : ", CUDA driver " + m.cuda_driver);
  s += ", " + std::to_string(m.cores) + " cores, " + std::to_string(m.ranks) + " ranks";
  if (m.threads_per_rank > 0) s += " x " + std::to_string(m.threads_per_rank) + " threads";
  if (!m.torch.empty()) s += ", torch " + m.torch;
  if (m.load_avg_1m_start >= 0)
    s += ", load " + Fixed(m.load_avg_1m_start, 1) + " -> " + Fixed(m.load_avg_1m_end, 1);
  return s;
}

// A prediction for GPUs held against a CPU measurement (or the reverse) compares different hardware.
bool CpuAgainstGpu(const RunSummary& a, const RunSummary& b) {
  auto cpu_measured = [](const RunSummary& r) {
    return r.source == RecordSource::kMeasured && (!r.machine || r.machine->gpu.empty());
  };
  auto gpu_predicted = [](const RunSummary& r) {
    return r.source == RecordSource::kSimulated && r.cluster.device.rfind("cpu", 0) != 0;
  };
  return (cpu_measured(a) && gpu_predicted(b)) || (cpu_measured(b) && gpu_predicted(a));
}

// The machine record as summary.json has it (its one codec, core/records/records_codec.h); null for simulated runs.
json MachineJson(const RunSummary& r) {
  if (!r.machine) return nullptr;
  return json::parse(SummaryToJson(r))["machine"];
}

}  // namespace

int RunCompare(const CompareArgs& args, std::ostream& out, std::ostream& err) {
  const std::vector<std::string>& runs = args.runs;
  const bool as_json = args.json;
  if (runs.size() != 2) {
    err << "mmtwin compare: give two runs (run folders or " << RunFileName(RunFile::kSummary) << " files)\n";
    return 2;
  }
  auto a = LoadSummary(runs[0]);
  auto b = LoadSummary(runs[1]);
  for (const auto* r : {&a, &b})
    if (!*r) {
      err << "mmtwin compare: " << r->error().message() << "\n";
      return 2;
    }
  const RunSummary& A = *a;
  const RunSummary& B = *b;
  const std::vector<StageRecord>& sa = A.stages;
  const std::vector<StageRecord>& sb = B.stages;
  const size_t common = std::min(sa.size(), sb.size());

  if (as_json) {
    json j;
    j["a"] = {{"run", runs[0]},
              {"scenario", A.scenario},
              {"source", RecordSourceName(A.source)},
              {"ran_on", RanOn(A)},
              {"machine", MachineJson(A)}};
    j["b"] = {{"run", runs[1]},
              {"scenario", B.scenario},
              {"source", RecordSourceName(B.source)},
              {"ran_on", RanOn(B)},
              {"machine", MachineJson(B)}};
    j["different_hardware"] = CpuAgainstGpu(A, B);
    json m = json::object();
    for (const HeadlineMetric& x : HeadlineMetrics()) m[x.name] = Row(x.get(A), x.get(B));
    j["metrics"] = m;
    json st = json::array();
    for (size_t i = 0; i < common; ++i) {
      json s = {{"stage", i}};
      for (const StageMetric& x : StageMetrics()) s[x.name] = Row(x.get(sa[i]), x.get(sb[i]));
      st.push_back(s);
    }
    j["stages"] = st;
    j["stages_a"] = sa.size();
    j["stages_b"] = sb.size();
    out << j.dump(2) << "\n";
    return 0;
  }

  out << "A  " << runs[0] << ": " << A.scenario << " (" << Policies(A) << ")\n"
      << "   " << RanOn(A) << "\n";
  out << "B  " << runs[1] << ": " << B.scenario << " (" << Policies(B) << ")\n"
      << "   " << RanOn(B) << "\n";
  if (CpuAgainstGpu(A, B))
    out << "note: one side is a prediction for GPUs, the other a measurement on CPUs: the times are not "
           "comparable (simulate for the machine that ran it, e.g. cluster: {preset: cpu-2vcpu-gloo}, or "
           "calibrate first: mmtwin calibrate RUNDIR -o PROFILE, then simulate --cost PROFILE)\n";
  out << "\n";
  const size_t w0 = 20, w = 14;
  out << PadR("metric", w0) << PadL("A", w) << PadL("B", w) << PadL("B - A", w) << PadL("B / A", w) << "\n";
  for (const HeadlineMetric& x : HeadlineMetrics()) {
    const double va = x.get(A) * x.scale, vb = x.get(B) * x.scale;
    out << PadR(x.label, w0) << PadL(Cell(va, x.decimals), w) << PadL(Cell(vb, x.decimals), w)
        << PadL(Cell(vb - va, x.decimals, true), w) << PadL(va != 0 ? Cell(vb / va, 3) + "x" : "n/a", w)
        << "\n";
  }
  if (sa.size() != sb.size())
    out << "\nstages: A has " << sa.size() << ", B has " << sb.size() << "; comparing the first " << common
        << "\n";
  if (common > 0) {
    out << "\nper stage\n"
        << PadR("stage metric", w0) << PadL("A", w) << PadL("B", w) << PadL("B - A", w) << PadL("B / A", w)
        << "\n";
    for (size_t i = 0; i < common; ++i)
      for (const StageMetric& x : StageMetrics()) {
        const double va = x.get(sa[i]) * x.scale, vb = x.get(sb[i]) * x.scale;
        out << PadR("s" + std::to_string(i) + " " + x.label, w0) << PadL(Cell(va, x.decimals), w)
            << PadL(Cell(vb, x.decimals), w) << PadL(Cell(vb - va, x.decimals, true), w)
            << PadL(va != 0 ? Cell(vb / va, 3) + "x" : "n/a", w) << "\n";
      }
  }
  return 0;
}

}  // namespace mmtwin::cli

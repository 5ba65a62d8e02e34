// SPDX-License-Identifier: Apache-2.0
// The OrchMLLM report (`mmtwin-report orchmllm`): the ablations of §8.3 on 128 H100s, MFU and throughput from 64
// to 2,560 GPUs (§8.1, Fig. 8 / 9), the dispatcher's cost at those scales (Table 2) and the inter-node
// all-to-all volume against identity placement (Fig. 13). The paper's values are data/orchmllm/paper.yaml, the
// prose data/orchmllm/template.md.
//
// Sources: the sweeps scenarios/sweeps/orchmllm-ablation.yaml (ablations) and orchmllm-scale.yaml (scaling) run
// through the results database; figures the run records do not carry (the data policy's planning wall time and its
// per-phase dispatch volumes) come from re-planning a run's scenario here (PrepareData: the same trace, seed and
// data plan the run used), named in the run column as "sweep#index (plan)" or "(plan, node_wise=false)" for
// the identity placement.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/balance/data_policy.h"
#include "core/cluster/cluster.h"
#include "core/records/headline_metrics.h"
#include "core/scenario/scenario.h"
#include "driver/planner.h"
#include "report/common.h"

namespace mmtwin::report::internal {
namespace {

// orchmllm-scale.yaml's runs a reduced report keeps: MLLM-10B at 64 and 128 GPUs, orchestrator and random.
const std::vector<int> kReducedScaleRuns = {0, 1, 6, 7};
const std::vector<std::string> kScaleGpus = {"64", "128", "256", "512", "1024", "2560"};
// The H100's memory (the ablation prose says whether the orchestrator's 84B run fits in it).
constexpr double kH100MemoryGiB = 80;

struct Model {
  const char* name;   // zoo name
  const char* label;  // the paper's
};
constexpr Model kModels[] = {
    {"orchmllm-10b", "MLLM-10B"}, {"orchmllm-18b", "MLLM-18B"}, {"orchmllm-84b", "MLLM-84B"}};

struct Variant {
  const char* label;  // orchmllm.yaml's data label
  const char* name;   // as the table shows it
};
constexpr Variant kVariants[] = {{"orch", "OrchMLLM"},
                                 {"orch-nocomp", "w/o rearrangement composition"},
                                 {"orch-flat", "w/o node-wise placement"},
                                 {"orch-gather", "all-gather dispatch"},
                                 {"random", "w/o balance"}};

double PeakGiB(const RunSummary& s) { return static_cast<double>(PeakMemoryBytes(s)) / kGiB; }

int Gpus(const RunSummary& s) { return s.parallel.dp * s.parallel.tp * s.parallel.pp * s.parallel.sp; }

// LLM tokens per second per GPU (the paper's TPT).
double TokensPerGpu(const RunSummary& s) { return s.tokens_per_s / std::max(1, Gpus(s)); }

// What a run's data policy says, re-planned from its scenario (the run records keep only the data summary).
struct PlanFacts {
  int64_t steps = 0;
  int dp = 1;
  double plan_ms_per_step = kNaN;                     // RunDataPolicy wall time / steps (when timed)
  std::map<std::string, double> phase_inter_node_mb;  // per phase: inter-node MB per rank per step
  double inter_node_mb = 0;                           // all phases
};

// The per-rank inter-node volume of a data plan's phases (the orchestrator's details_json "phases").
Status ReadPhases(const DataPlan& plan, PlanFacts& f) {
  const nlohmann::json j = nlohmann::json::parse(plan.details_json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("phases") || !j.at("phases").is_array())
    return Error("the data plan has no per-phase report");
  for (const auto& ph : j.at("phases")) {
    if (!ph.is_object() || !ph.contains("phase") || !ph.at("phase").is_string() ||
        !ph.contains("inter_node_bytes") || !ph.at("inter_node_bytes").is_number())
      return Error("the data plan's per-phase report lacks phase or inter_node_bytes");
    const double mb = ph.at("inter_node_bytes").get<double>() / 1e6 / f.dp;
    f.phase_inter_node_mb[ph.at("phase").get<std::string>()] = mb;
    f.inter_node_mb += mb;
  }
  return Status();
}

// The data policy alone, timed on the prepared trace: the fastest of up to 3 repeats (one when a repeat takes
// over 2 s), in ms per step.
Result<double> TimeDataPolicy(const RunRecord& r, const Scenario& s, const PreparedData& pd, int64_t steps) {
  MMTWIN_ASSIGN_OR_RETURN(ModelSpec model, LoadScenarioModel(s));
  MMTWIN_ASSIGN_OR_RETURN(ClusterSpec cluster, LoadScenarioCluster(s, s.nodes));
  const SampleSizes sizes = ComputeSizes(model, *pd.trace);
  const DataPolicyContext ctx{
      pd.trace.get(), &model, &sizes, s.parallel.dp, std::max(1, cluster.gpus_per_node / s.parallel.tp),
      s.seed};
  double best_s = kNaN;
  for (int k = 0; k < 3; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    MMTWIN_ASSIGN_OR_RETURN(DataPlan again, RunDataPolicy(s.data.name, s.data.params, ctx));
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (again.steps.size() != pd.data.steps.size())
      return Error(RunRef(r) + ": the timed data plan differs from the run's");
    best_s = std::isnan(best_s) ? sec : std::min(best_s, sec);
    if (sec > 2) break;
  }
  return best_s * 1e3 / std::max<int64_t>(1, steps);
}

// Re-plans run `r`'s scenario (node-wise placement off when `identity`); with `timed`, times the data policy
// alone on the same trace.
Result<PlanFacts> Replan(const RunRecord& r, bool identity, bool timed, const ReportOptions& o) {
  MMTWIN_ASSIGN_OR_RETURN(Scenario s, ParseScenario(r.scenario_yaml, RunRef(r), "."));
  if (identity) s.data.params["node_wise"] = "false";
  if (o.progress)
    o.progress("plan: " + RunRef(r) + (identity ? " with node_wise=false" : "") + (timed ? ", timed" : ""));
  MMTWIN_ASSIGN_OR_RETURN(std::shared_ptr<const PreparedData> pd, PrepareData(s));
  PlanFacts f;
  f.steps = static_cast<int64_t>(pd->data.steps.size());
  f.dp = s.parallel.dp;
  MMTWIN_RETURN_IF_ERROR(ReadPhases(pd->data, f));
  if (timed) {
    MMTWIN_ASSIGN_OR_RETURN(f.plan_ms_per_step, TimeDataPolicy(r, s, *pd, f.steps));
  }
  return f;
}

struct OrchRuns {
  SweepRows ablation, scale;
};

struct OrchTables {
  ReportTable full, scale, cost, ablation, volume;
  std::vector<const ReportTable*> all() const { return {&full, &scale, &cost, &ablation, &volume}; }
};

// Ablations on 128 GPUs (orchmllm-ablation.yaml).
Status AblationTable(const OrchRuns& r, ReportTable& t) {
  for (const Model& m : kModels)
    for (const Variant& v : kVariants) {
      MMTWIN_ASSIGN_OR_RETURN(const RunRecord* x, Find(r.ablation, {{"model", m.name}, {"data", v.label}}));
      const std::string row = std::string(m.label) + ", " + v.name;
      const RunSummary& s = *x->summary;
      t.Add(row, "MFU (%)", 100 * s.mfu, 1, RunRef(*x));
      t.Add(row, "dispatch per step (ms)", s.dispatch_us_mean / 1e3, 2, RunRef(*x));
      t.Add(row, "peak memory (GiB)", PeakGiB(s), 1, RunRef(*x));
    }
  return Status();
}

// Inter-node dispatch volume per phase, node-wise vs identity placement, 128 GPUs.
Status VolumeTable(const OrchRuns& r, const ReportOptions& o, ReportTable& t) {
  for (const Model& m : kModels) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* nw, Find(r.ablation, {{"model", m.name}, {"data", "orch"}}));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* id,
                            Find(r.ablation, {{"model", m.name}, {"data", "orch-flat"}}));
    MMTWIN_ASSIGN_OR_RETURN(PlanFacts a, Replan(*nw, false, false, o));
    MMTWIN_ASSIGN_OR_RETURN(PlanFacts b, Replan(*id, false, false, o));
    for (const auto& [phase, id_mb] : b.phase_inter_node_mb) {
      if (id_mb <= 0) continue;
      const double nw_mb = a.phase_inter_node_mb.count(phase) ? a.phase_inter_node_mb.at(phase) : 0;
      const std::string row = std::string(m.label) + ", " + phase;
      const std::string ra = RunRef(*nw) + " (plan)", rb = RunRef(*id) + " (plan)";
      t.Add(row, "inter-node MB per rank, node-wise", nw_mb, 2, ra);
      t.Add(row, "inter-node MB per rank, identity", id_mb, 2, rb);
      t.Add(row, "node-wise / identity", nw_mb / id_mb, 3, ra + " / " + rb);
    }
  }
  return Status();
}

// MLLM-10B's OrchMLLM run at `gpus`, or null when a reduced sweep does not hold it.
Result<const RunRecord*> ScaleRun(const SweepRows& s, const std::string& gpus, const std::string& data) {
  auto found = Find(s, {{"model", "orchmllm-10b"}, {"gpus", gpus}, {"data", data}});
  if (found.ok()) return *found;
  if (s.name.find("-reduced") != std::string::npos) return static_cast<const RunRecord*>(nullptr);
  return found.error();
}

// MFU and throughput of MLLM-10B from 64 to 2,560 GPUs (the GPU counts the sweep holds).
Status ScalingTable(const OrchRuns& r, ReportTable& t) {
  for (const std::string& g : kScaleGpus) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* orch, ScaleRun(r.scale, g, "orch-60"));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* rnd, ScaleRun(r.scale, g, "random-60"));
    if (!orch || !rnd) continue;  // the reduced sweep keeps 64, 128
    const RunSummary &a = *orch->summary, &b = *rnd->summary;
    t.Add(g, "MFU (%), OrchMLLM", 100 * a.mfu, 1, RunRef(*orch));
    t.Add(g, "MFU (%), w/o balance", 100 * b.mfu, 1, RunRef(*rnd));
    t.Add(g, "MFU OrchMLLM / w/o balance", a.mfu / b.mfu, 2, RunRef(*orch) + " / " + RunRef(*rnd));
    t.Add(g, "TPT (tokens/s per GPU), OrchMLLM", TokensPerGpu(a), 0, RunRef(*orch));
    t.Add(g, "exposed comm (% of GPU time), OrchMLLM", 100 * a.exposed_comm_ratio, 1, RunRef(*orch));
  }
  return Status();
}

// The dispatcher's cost at scale: Table 2 beside mmtwin's dispatch time, forward time and planning time.
Status OverheadTable(const OrchRuns& r, const ReportOptions& o, ReportTable& t) {
  for (const std::string& g : kScaleGpus) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* x, ScaleRun(r.scale, g, "orch-60"));
    if (!x) continue;
    const RunSummary& s = *x->summary;
    MMTWIN_ASSIGN_OR_RETURN(PlanFacts nw, Replan(*x, false, true, o));
    MMTWIN_ASSIGN_OR_RETURN(PlanFacts id, Replan(*x, true, false, o));
    const std::string ref = RunRef(*x);
    t.Add(g, "dispatch overhead (ms)", s.dispatch_us_mean / 1e3, 2, ref);
    t.Add(g, "forward pass (s)", s.stages.empty() ? kNaN : s.stages[0].fwd_us_mean / 1e6, 2, ref);
    t.Add(g, "planning per step (ms)", nw.plan_ms_per_step, 1, ref + " (plan)");
    t.Add(g, "inter-node MB per rank, node-wise", nw.inter_node_mb, 2, ref + " (plan)");
    t.Add(g, "inter-node MB per rank, identity", id.inter_node_mb, 2, ref + " (plan, node_wise=false)");
  }
  return Status();
}

// The three MLLMs at 2,560 GPUs with the paper's mini-batches (Fig. 8 / 9); empty in a reduced report.
Status FullScaleTable(const OrchRuns& r, ReportTable& t) {
  struct Row {
    const Model& m;
    const char *orch, *rnd;
  };
  const Row rows[] = {{kModels[0], "orch-80", "random-65"},
                      {kModels[1], "orch-60", "random-40"},
                      {kModels[2], "orch-30", "random-15"}};
  for (const Row& x : rows) {
    auto a = Find(r.scale, {{"model", x.m.name}, {"gpus", "2560"}, {"data", x.orch}});
    auto b = Find(r.scale, {{"model", x.m.name}, {"gpus", "2560"}, {"data", x.rnd}});
    if (!a.ok() || !b.ok()) {
      if (r.scale.name.find("-reduced") != std::string::npos) return Status();  // no 2,560-GPU runs
      return a.ok() ? b.error() : a.error();
    }
    const RunSummary &sa = *(*a)->summary, &sb = *(*b)->summary;
    const std::string ra = RunRef(**a), rb = RunRef(**b);
    t.Add(x.m.label, "MFU (%), OrchMLLM", 100 * sa.mfu, 1, ra);
    t.Add(x.m.label, "MFU (%), w/o balance", 100 * sb.mfu, 1, rb);
    t.Add(x.m.label, "MFU OrchMLLM / w/o balance", sa.mfu / sb.mfu, 2, ra + " / " + rb);
    t.Add(x.m.label, "TPT (tokens/s per GPU), OrchMLLM", TokensPerGpu(sa), 0, ra);
    t.Add(x.m.label, "TPT OrchMLLM / w/o balance", TokensPerGpu(sa) / TokensPerGpu(sb), 2, ra + " / " + rb);
    // The paper chose these mini-batches by memory (§8.1): the planned peaks beside the H100's 80 GiB.
    t.Add(x.m.label, "peak memory (GiB), OrchMLLM", PeakGiB(sa), 1, ra);
    t.Add(x.m.label, "peak memory (GiB), w/o balance", PeakGiB(sb), 1, rb);
  }
  return Status();
}

Result<OrchTables> FillTables(const Paper& paper, const OrchRuns& r, const ReportOptions& o) {
  OrchTables t;
  for (auto [table, name] : {std::pair{&t.full, "full"},
                             {&t.scale, "scale"},
                             {&t.cost, "cost"},
                             {&t.ablation, "ablation"},
                             {&t.volume, "volume"}}) {
    MMTWIN_ASSIGN_OR_RETURN(*table, NewTable(paper, name));
  }
  MMTWIN_RETURN_IF_ERROR(FullScaleTable(r, t.full));
  MMTWIN_RETURN_IF_ERROR(ScalingTable(r, t.scale));
  MMTWIN_RETURN_IF_ERROR(OverheadTable(r, o, t.cost));
  MMTWIN_RETURN_IF_ERROR(AblationTable(r, t.ablation));
  MMTWIN_RETURN_IF_ERROR(VolumeTable(r, o, t.volume));
  return t;
}

}  // namespace

ChartSpec OrchmllmScalingChart(const ReportTable& full, const ReportTable& scale) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::kLines;
  c.title = "OrchMLLM on 64 to 2,560 H100s: MFU (%), mmtwin, with the paper's 2,560-GPU MLLM-84B point";
  c.y_label = "MFU (%)";
  c.x_label = "GPUs (H100, 8 per node)";
  c.categories = kScaleGpus;
  std::vector<double> orch, rnd, p84(kScaleGpus.size(), kNaN), m84(kScaleGpus.size(), kNaN);
  for (const std::string& g : kScaleGpus) {
    orch.push_back(Cell(scale, g, "MFU (%), OrchMLLM"));
    rnd.push_back(Cell(scale, g, "MFU (%), w/o balance"));
  }
  p84.back() = Cell(full, "MLLM-84B", "MFU (%), OrchMLLM", true);
  m84.back() = Cell(full, "MLLM-84B", "MFU (%), OrchMLLM");
  // Value labels would overlap the points at 2,560 GPUs, where the four series meet (the table has every
  // value): the two MLLM-84B points carry theirs in the legend, mmtwin's with its distance from the paper's.
  const double gap = m84.back() - p84.back();
  c.series = {{"mmtwin MLLM-10B, OrchMLLM", orch, false},
              {"mmtwin MLLM-10B, w/o balance", rnd, false},
              {"paper MLLM-84B (§8.1): " + FormatFixed(p84.back(), 1), p84, false},
              {"mmtwin MLLM-84B: " + FormatFixed(m84.back(), 1) + " (" + std::string(gap >= 0 ? "+" : "") +
                   FormatFixed(gap, 1) + " pts)",
               m84, false}};
  return c;
}

namespace {

// MFU by GPU count (the scaling lines with the 2,560-GPU MLLM-84B points) and the ablations' MFU.
Status ScalingAndAblationCharts(const OrchTables& t, Plotter& plotter, ReportFiles& files, Bindings& b) {
  MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "scaling", OrchmllmScalingChart(t.full, t.scale), files, b));
  {
    ChartSpec c;
    c.title = "OrchMLLM ablations on 128 H100s (mmtwin): MFU (%) per variant";
    c.y_label = "MFU (%)";
    for (const Model& m : kModels) c.categories.push_back(m.label);
    for (const Variant& v : kVariants) {
      std::vector<double> vals;
      for (const Model& m : kModels)
        vals.push_back(Cell(t.ablation, std::string(m.label) + ", " + v.name, "MFU (%)"));
      c.series.push_back({v.name, vals});
    }
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "ablation", c, files, b));
  }
  return Status();
}

// The all-to-all volume per phase and the dispatcher's cost (Table 2's paper line for every GPU count).
Status VolumeAndOverheadCharts(const OrchTables& t, Plotter& plotter, ReportFiles& files, Bindings& b) {
  {
    ChartSpec c;
    c.title = "Inter-node all-to-all volume per rank and step, 128 H100s (mmtwin; cf. Fig. 13)";
    c.y_label = "inter-node MB per rank per step";
    c.value_decimals = 1;
    std::vector<double> nw, id;
    for (const Figure& f : t.volume.rows)
      if (f.figure == "inter-node MB per rank, node-wise") {
        // "MLLM-10B, audio" -> "10B audio": nine categories must fit under the bars.
        std::string label = f.row;
        if (label.rfind("MLLM-", 0) == 0) label = label.substr(5);
        if (const size_t comma = label.find(", "); comma != std::string::npos) label.replace(comma, 2, " ");
        c.categories.push_back(label);
        nw.push_back(f.mmtwin);
        id.push_back(Cell(t.volume, f.row, "inter-node MB per rank, identity"));
      }
    c.series = {{"node-wise placement", nw}, {"identity placement (bin i → rank i)", id}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "a2a", c, files, b));
  }
  {
    ChartSpec c;
    c.kind = ChartSpec::Kind::kLines;
    c.title = "The dispatcher's cost per step, MLLM-10B, mini-batch 60 (paper Table 2 vs mmtwin)";
    c.y_label = "time per step (ms)";
    c.x_label = "GPUs (H100, 8 per node)";
    c.categories = kScaleGpus;
    std::vector<double> paper, disp, plan;
    for (const std::string& g : kScaleGpus) {
      paper.push_back(PaperNumber(t.cost.paper->Value(g, "dispatch overhead (ms)")));
      disp.push_back(Cell(t.cost, g, "dispatch overhead (ms)"));
      plan.push_back(Cell(t.cost, g, "planning per step (ms)"));
    }
    c.value_decimals = -1;  // the lines cross and meet; the table above has every value
    c.series = {{"paper: dispatcher overhead (" + t.cost.paper_ref + ")", paper},
                {"mmtwin: simulated dispatch all-to-all", disp},
                {"mmtwin: orchestrator planning (CPU)", plan}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "overhead", c, files, b));
  }
  return Status();
}

// The values the prose computes beyond single cells (the template reads cells itself).
void BindProse(const OrchTables& t, Bindings& b) {
  const bool full = !t.full.rows.empty();
  b.SetFlag("full_scale", full);
  b.SetValue("top", full ? "2560" : "128");  // the largest GPU count the report holds (a row label)
  b.SetValue("top_text", full ? "2,560" : "128");
  for (const Model& m : kModels) {
    const std::string model = m.label;
    b.SetValue("ablation_gain_" + model.substr(5),
               FixedOrNa(Cell(t.ablation, model + ", OrchMLLM", "MFU (%)") /
                             Cell(t.ablation, model + ", w/o balance", "MFU (%)"),
                         2));
  }
  b.SetFlag("orch84_over_memory",
            Cell(t.ablation, "MLLM-84B, OrchMLLM", "peak memory (GiB)") > kH100MemoryGiB);
}

}  // namespace

Status GenerateOrchmllm(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                        ReportFiles& files) {
  MMTWIN_ASSIGN_OR_RETURN(ReportData data, LoadReportData(o, "orchmllm"));
  OrchRuns runs;
  MMTWIN_RETURN_IF_ERROR(RunReportSweeps(
      o, scenarios,
      {{"orchmllm-ablation", &runs.ablation}, {"orchmllm-scale", &runs.scale, kReducedScaleRuns}}));
  MMTWIN_ASSIGN_OR_RETURN(OrchTables t, FillTables(data.paper, runs, o));
  if (!o.reduced) MMTWIN_RETURN_IF_ERROR(CheckPaperValuesShown(data.paper, t.all()));
  Bindings b;
  for (const ReportTable* x : t.all()) b.SetTable(x->name, x);
  ReportFiles images;
  MMTWIN_RETURN_IF_ERROR(ScalingAndAblationCharts(t, plotter, images, b));
  MMTWIN_RETURN_IF_ERROR(VolumeAndOverheadCharts(t, plotter, images, b));
  b.SetValue("header", Header(o));
  b.SetValue("ablation_iterations", Iterations(runs.ablation));
  b.SetValue("scale_iterations", Iterations(runs.scale));
  BindProse(t, b);
  MMTWIN_ASSIGN_OR_RETURN(std::string md, Render(data.tmpl, b));
  files.emplace_back("README.md", std::move(md));
  for (auto& f : images) files.push_back(std::move(f));
  return Status();
}

}  // namespace mmtwin::report::internal

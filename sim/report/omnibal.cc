// SPDX-License-Identifier: Apache-2.0
// The OmniBal report (`mmtwin-report omnibal`): Tables 2-7, the model-size study and a timeline of one iteration,
// baseline against OmniBal. The paper's values are data/omnibal/paper.yaml, the prose data/omnibal/template.md;
// this file runs the sweeps, fills the tables and binds the names the template uses.
#include <algorithm>
#include <array>
#include <cmath>

#include "core/plan/mesh.h"
#include "core/scenario/scenario.h"
#include "driver/simulate.h"
#include "report/common.h"

namespace mmtwin::report::internal {
namespace {

// Remaining device memory of stage i in GiB: the A100's 80 GiB minus the planned peak (the paper's VRAM_i).
constexpr double kA100MemoryGiB = 80;
double RemainingGiB(const RunSummary& s, size_t stage) {
  return stage < s.stages.size() ? kA100MemoryGiB - s.stages[stage].peak_memory_bytes / kGiB : kNaN;
}

// One simulated iteration's ops of DP replica 0 (its pipeline's stages and their comm lanes).
struct TimelineRun {
  std::vector<OpRecord> ops;
  ParallelConfig parallel;
  RunSummary summary;
};

Result<TimelineRun> SimulateOneIteration(const std::string& scenario_path, const ReportOptions& o) {
  MMTWIN_ASSIGN_OR_RETURN(Scenario s, LoadScenario(scenario_path));
  s.iterations = 1;
  s.epoch = false;
  if (o.reduced) s.trace.samples = kReducedSamples;
  if (o.progress) o.progress("timeline: simulating one iteration of " + scenario_path);
  SimulateOptions so;
  MMTWIN_ASSIGN_OR_RETURN(SimulationResult r, Simulate(s, so));
  TimelineRun t;
  t.parallel = r.summary.parallel;
  t.summary = r.summary;
  const DeviceMesh mesh(t.parallel);
  for (const OpRecord& op : r.ops)
    if (op.device >= 0 && op.device < mesh.num_devices() && mesh.DpOfDevice(op.device) == 0)
      t.ops.push_back(op);
  return t;
}

// The timelines of the baseline and OmniBal scenarios (6B+20B), one above the other on one time scale.
Status AddTimeline(const ReportOptions& o, const std::string& scenarios, Plotter& plotter, ReportFiles& files,
                   Bindings& b) {
  MMTWIN_ASSIGN_OR_RETURN(TimelineRun base,
                          SimulateOneIteration(scenarios + "/omnibal/internvl-6b-20b-baseline.yaml", o));
  MMTWIN_ASSIGN_OR_RETURN(TimelineRun omni,
                          SimulateOneIteration(scenarios + "/omnibal/internvl-6b-20b-omnibal.yaml", o));
  auto title = [](const std::string& what, const TimelineRun& t) {
    return what + ": one iteration, " + Fixed(t.summary.iteration_time_us.mean / 1e3, 0) +
           " ms, DP replica 0 of " + std::to_string(t.parallel.dp);
  };
  const std::vector<TimelinePanel> panels = {
      {title("Baseline (random batches, parameter partition, full recompute)", base), &base.ops,
       base.parallel},
      {title("OmniBal (ISF, BMP, adaptive recompute)", omni), &omni.ops, omni.parallel}};
  MMTWIN_ASSIGN_OR_RETURN(std::string image, plotter.Timelines(panels, kTimelineWidthPx, kTimelineHeightPx));
  const std::string file = "timeline." + plotter.Extension();
  files.emplace_back(file, std::move(image));
  b.SetFigure("timeline", file);
  return Status();
}

struct OmnibalRuns {
  SweepRows main, ablation, data, partition, datasets, models;
};

struct OmnibalTables {
  ReportTable main, ablation, data, partition, memory, datasets, models;
  std::vector<const ReportTable*> all() const {
    return {&main, &ablation, &data, &partition, &memory, &datasets, &models};
  }
};

// The model-size study's pairs (sweep omnibal-models): model id, the chart's short label.
struct ModelPair {
  const char* model;
  const char* label;
};
constexpr ModelPair kModelPairs[] = {
    {"internvl-6b-llama3-8b", "6B+8B"},          {"internvl-1.5-6b-20b", "6B+20B"},
    {"internvl-1.5-6b-34b", "6B+34B"},           {"internvl-6b-llama3-70b", "6B+70B"},
    {"internvl-6b-qwen1.5-110b", "6B+110B"},     {"eva-clip-1b-internlm2-20b", "EVA1B+20B"},
    {"eva-clip-4b-internlm2-20b", "EVA4B+20B"},  {"eva-clip-8b-internlm2-20b", "EVA8B+20B"},
    {"eva-clip-18b-internlm2-20b", "EVA18B+20B"}};

// The baseline (random batches) and OmniBal (ISF) runs of one model in a sweep.
struct Pair {
  const RunRecord *base, *omni;
};
Result<Pair> BaselineAndOmnibal(const SweepRows& s, const std::string& model) {
  MMTWIN_ASSIGN_OR_RETURN(const RunRecord* b, Find(s, {{"model", model}, {"data", "random"}}));
  MMTWIN_ASSIGN_OR_RETURN(const RunRecord* o, Find(s, {{"model", model}, {"data", "isf"}}));
  return Pair{b, o};
}

// GPU-days of both and the speed-up, as three rows of `t`.
void AddSpeedUp(ReportTable& t, const std::string& row, const Pair& p) {
  t.Add(row, "GPU-days, baseline", p.base->summary->gpu_days, 1, RunRef(*p.base));
  t.Add(row, "GPU-days, OmniBal", p.omni->summary->gpu_days, 1, RunRef(*p.omni));
  t.Add(row, "speed-up (baseline / OmniBal)", p.base->summary->gpu_days / p.omni->summary->gpu_days, 2,
        RunRef(*p.base) + " / " + RunRef(*p.omni));
}

// Table 2 (main), Table 3 (ablation) and Table 5 (data balance).
Status MainAblationData(const OmnibalRuns& r, OmnibalTables& t) {
  for (const auto& [model, label] :
       {std::pair{"internvl-1.5-6b-20b", "6B+20B"}, {"internvl-1.5-6b-34b", "6B+34B"}}) {
    MMTWIN_ASSIGN_OR_RETURN(Pair p, BaselineAndOmnibal(r.main, model));
    AddSpeedUp(t.main, label, p);
  }
  for (const char* step : {"baseline", "+data", "+data+model", "+data+model+memory"}) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* x, Find(r.ablation, {{"step", step}}));
    t.ablation.Add(step, "GPU-days", x->summary->gpu_days, 1, RunRef(*x));
  }
  for (const auto& [data, label] : {std::pair{"random", "baseline (random)"},
                                    {"length-group", "length-group"},
                                    {"device-group", "device-group"},
                                    {"isf", "ISF"}}) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* wo, Find(r.data, {{"data", data}, {"partition", "params"}}));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* w, Find(r.data, {{"data", data}, {"partition", "bmp"}}));
    const DataSummary& d = wo->summary->data;
    t.data.Add(label, "AVE-BS (samples)", d.mean_batch_size, 2, RunRef(*wo));
    t.data.Add(label, "pad ratio", d.pad_ratio, 3, RunRef(*wo));
    t.data.Add(label, "dist ratio ViT", d.dist_ratio_vit, 3, RunRef(*wo));
    t.data.Add(label, "dist ratio LLM", d.dist_ratio_llm, 3, RunRef(*wo));
    t.data.Add(label, "GPU-days w/o MB", wo->summary->gpu_days, 1, RunRef(*wo));
    t.data.Add(label, "GPU-days w MB", w->summary->gpu_days, 1, RunRef(*w));
  }
  return Status();
}

// Table 6 (partitions), Table 7 (remaining memory per stage), Table 4 (datasets) and the model-size study.
Status PartitionMemoryDatasetsModels(const OmnibalRuns& r, OmnibalTables& t) {
  MMTWIN_ASSIGN_OR_RETURN(const RunRecord* ref, Find(r.partition, {{"partition", "params"}}));
  for (const auto& [partition, label] : {std::pair{"params", "(1) parameter-based"},
                                         {"uniform", "(2) layer-based"},
                                         {"profile", "(3) profile-based"},
                                         {"bmp", "(4) BMP"}}) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* p, Find(r.partition, {{"partition", partition}}));
    const PartitionSummary& s = p->summary->partition;
    t.partition.Add(label, "VAR(param)", s.var_params / 1e18, 2, RunRef(*p));
    t.partition.Add(label, "VAR(num.layer)", s.var_layers, 1, RunRef(*p));
    t.partition.Add(label, "VAR(fwd.time)", s.var_fwd_us2 / 1e6, 1, RunRef(*p));
    t.partition.Add(label, "Δ SUM(comm) (MB)",
                    (static_cast<double>(s.sum_comm_bytes) - ref->summary->partition.sum_comm_bytes) / 1e6, 1,
                    RunRef(*p) + " − " + RunRef(*ref));
    t.partition.Add(label, "GPU-days", p->summary->gpu_days, 1, RunRef(*p));
  }
  for (const auto& [step, label] : {std::pair{"baseline", "baseline (min)"},
                                    {"+data+model", "+ data & model balance"},
                                    {"+data+model+memory", "+ memory balance"}}) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* p, Find(r.ablation, {{"step", step}}));
    for (size_t i = 0; i < 4; ++i)
      t.memory.Add(label, "VRAM_" + std::to_string(i + 1) + " (GiB)", RemainingGiB(*p->summary, i), 1,
                   RunRef(*p));
  }
  for (const auto& [dataset, label] : {std::pair{"llava-665k", "LLaVA-665K"},
                                       {"internvl-1.2m", "InternVL-1.2M"},
                                       {"lcs-558k", "LCS-558K"}}) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* b, Find(r.datasets, {{"dataset", dataset}, {"data", "random"}}));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* o, Find(r.datasets, {{"dataset", dataset}, {"data", "isf"}}));
    t.datasets.Add(label, "dist ratio ViT", o->summary->data.dist_ratio_vit, 3, RunRef(*o));
    t.datasets.Add(label, "dist ratio LLM", o->summary->data.dist_ratio_llm, 3, RunRef(*o));
    AddSpeedUp(t.datasets, label, {b, o});
  }
  for (const ModelPair& p : kModelPairs) {
    MMTWIN_ASSIGN_OR_RETURN(Pair x, BaselineAndOmnibal(r.models, p.model));
    AddSpeedUp(t.models, p.model, x);
  }
  return Status();
}

Result<OmnibalTables> FillTables(const Paper& paper, const OmnibalRuns& r) {
  OmnibalTables t;
  for (auto [table, name] : {std::pair{&t.main, "main"},
                             {&t.ablation, "ablation"},
                             {&t.data, "data"},
                             {&t.partition, "partition"},
                             {&t.memory, "memory"},
                             {&t.datasets, "datasets"},
                             {&t.models, "models"}}) {
    MMTWIN_ASSIGN_OR_RETURN(*table, NewTable(paper, name));
  }
  MMTWIN_RETURN_IF_ERROR(MainAblationData(r, t));
  MMTWIN_RETURN_IF_ERROR(PartitionMemoryDatasetsModels(r, t));
  return t;
}

// Per pair of the model-size study: the layout, OmniBal's per-stage layers and recomputed layers, the
// baseline's (parameter partition, every layer recomputed); one Markdown list item per pair.
Result<std::string> ModelSizeStages(const OmnibalRuns& r) {
  auto stages = [](const RunRecord& x) {
    std::string layers, recompute;
    for (const StageRecord& st : x.summary->stages) {
      layers += (layers.empty() ? "" : ", ") + std::to_string(st.first_layer) + ".." +
                std::to_string(st.last_layer);
      recompute += (recompute.empty() ? "" : ", ") + std::to_string(st.recomputed_layers);
    }
    return "layers " + layers + "; recomputed " + recompute;
  };
  std::string md;
  for (const ModelPair& p : kModelPairs) {
    MMTWIN_ASSIGN_OR_RETURN(Pair x, BaselineAndOmnibal(r.models, p.model));
    std::string layout;
    for (const auto& [axis, label] : x.omni->axes)
      if (axis == "layout") layout = label;
    md += std::string(md.empty() ? "" : "\n") + "- `" + p.model + "` (" + layout + "): OmniBal " +
          stages(*x.omni) + " (" + RunRef(*x.omni) + "); baseline " + stages(*x.base) + " (" +
          RunRef(*x.base) + ")";
  }
  return md;
}

// The charts of the tables (the series' paper values are the tables' paper column).
Status OmnibalCharts(const OmnibalTables& t, Plotter& plotter, ReportFiles& files, Bindings& b) {
  {
    ChartSpec c;
    c.title = "OmniBal ablation, InternVL-1.5 6B+20B on 128 A100s: GPU-days per epoch";
    c.y_label = "GPU-days per epoch";
    c.x_label = "balance added step by step";
    c.categories = {"baseline", "+data", "+data+model", "+data+model+memory"};
    c.series = {{"paper (" + t.ablation.paper_ref + ")", Column(t.ablation, "GPU-days", c.categories, true)},
                {"mmtwin", Column(t.ablation, "GPU-days", c.categories, false)}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "ablation", c, files, b));
  }
  {
    ChartSpec c;
    c.title = "Baseline vs OmniBal, 128 A100s: GPU-days per epoch";
    c.y_label = "GPU-days per epoch";
    c.categories = {"6B+20B baseline", "6B+20B OmniBal", "6B+34B baseline", "6B+34B OmniBal"};
    std::vector<double> paper, ours;
    for (const char* m : {"6B+20B", "6B+34B"})
      for (const char* f : {"GPU-days, baseline", "GPU-days, OmniBal"}) {
        paper.push_back(Cell(t.main, m, f, true));
        ours.push_back(Cell(t.main, m, f));
      }
    c.series = {{"paper (" + t.main.paper_ref + ")", paper}, {"mmtwin", ours}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "main", c, files, b));
  }
  {
    ChartSpec c;
    c.title = "Data balance methods, 6B+20B: GPU-days without / with model balance (MB)";
    c.y_label = "GPU-days per epoch";
    c.categories = {"baseline (random)", "length-group", "device-group", "ISF"};
    const std::string ref = " (" + t.data.paper_ref + ")";
    c.series = {{"paper w/o MB" + ref, Column(t.data, "GPU-days w/o MB", c.categories, true)},
                {"mmtwin w/o MB", Column(t.data, "GPU-days w/o MB", c.categories, false)},
                {"paper w MB" + ref, Column(t.data, "GPU-days w MB", c.categories, true)},
                {"mmtwin w MB", Column(t.data, "GPU-days w MB", c.categories, false)}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "data", c, files, b));
  }
  {
    ChartSpec c;
    c.title = "Pipeline partition methods, 6B+20B (ISF data, full recompute): GPU-days per epoch";
    c.y_label = "GPU-days per epoch";
    c.categories = {"(1) parameter-based", "(2) layer-based", "(3) profile-based", "(4) BMP"};
    c.series = {
        {"paper (" + t.partition.paper_ref + ")", Column(t.partition, "GPU-days", c.categories, true)},
        {"mmtwin", Column(t.partition, "GPU-days", c.categories, false)}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "partition", c, files, b));
  }
  return Status();
}

Status MoreOmnibalCharts(const OmnibalTables& t, Plotter& plotter, ReportFiles& files, Bindings& b) {
  {
    ChartSpec c;
    c.title = "Remaining memory per GPU by pipeline stage, 6B+20B (80 GiB minus the peak)";
    c.y_label = "remaining memory (GiB)";
    c.x_label = "pipeline stage";
    c.categories = {"S1", "S2", "S3", "S4"};
    auto stage_values = [&](const std::string& row, bool paper) {
      std::vector<double> v;
      for (int i = 1; i <= 4; ++i)
        v.push_back(Cell(t.memory, row, "VRAM_" + std::to_string(i) + " (GiB)", paper));
      return v;
    };
    const std::string ref = " (" + t.memory.paper_ref + ")";
    c.series = {{"paper +data&model" + ref, stage_values("+ data & model balance", true)},
                {"mmtwin +data&model", stage_values("+ data & model balance", false)},
                {"paper +memory" + ref, stage_values("+ memory balance", true)},
                {"mmtwin +memory", stage_values("+ memory balance", false)}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "memory", c, files, b));
  }
  {
    ChartSpec c;
    c.title = "Baseline vs OmniBal on three datasets, 6B+20B on 128 A100s: GPU-days per epoch";
    c.y_label = "GPU-days per epoch";
    c.x_label = "dataset (full synthetic trace of its generator preset)";
    c.categories = {"LLaVA-665K", "InternVL-1.2M", "LCS-558K"};
    const std::string ref = " (" + t.datasets.paper_ref + ")";
    c.series = {{"paper baseline" + ref, Column(t.datasets, "GPU-days, baseline", c.categories, true)},
                {"mmtwin baseline", Column(t.datasets, "GPU-days, baseline", c.categories, false)},
                {"paper OmniBal" + ref, Column(t.datasets, "GPU-days, OmniBal", c.categories, true)},
                {"mmtwin OmniBal", Column(t.datasets, "GPU-days, OmniBal", c.categories, false)}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "datasets", c, files, b));
  }
  {
    ChartSpec c;
    c.title = "Model size: GPU-days per epoch per vision + LLM pair, 128 A100s (mmtwin)";
    c.y_label = "GPU-days per epoch";
    c.x_label = "vision + LLM pair (InternViT-6B or EVA-CLIP; LLM size in B parameters)";
    std::vector<std::string> rows;
    for (const ModelPair& p : kModelPairs) {
      rows.push_back(p.model);
      c.categories.push_back(p.label);
    }
    c.value_decimals = 0;
    c.series = {{"baseline", Column(t.models, "GPU-days, baseline", rows, false)},
                {"OmniBal", Column(t.models, "GPU-days, OmniBal", rows, false)}};
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "models", c, files, b));
  }
  return Status();
}

// The values the prose computes beyond single cells (the template reads cells itself).
void BindProse(const OmnibalTables& t, Bindings& b) {
  const ReportTable& ds = t.datasets;
  b.SetValue("lcs_vs_paper",
             Cell(ds, "LCS-558K", "GPU-days, baseline") < Cell(ds, "LCS-558K", "GPU-days, baseline", true)
                 ? "lower"
                 : "higher");
  const std::string su = "speed-up (baseline / OmniBal)";
  b.SetValue("model_size_trend",
             Cell(t.models, "internvl-6b-qwen1.5-110b", su) > Cell(t.models, "internvl-6b-llama3-8b", su)
                 ? "grows"
                 : "falls");
  std::vector<double> eva;
  for (const char* m : {"eva-clip-1b-internlm2-20b", "eva-clip-4b-internlm2-20b", "eva-clip-8b-internlm2-20b",
                        "eva-clip-18b-internlm2-20b"})
    eva.push_back(Cell(t.models, m, su));
  b.SetValue("eva_speedup_min", Fixed(*std::min_element(eva.begin(), eva.end()), 2));
  b.SetValue("eva_speedup_max", Fixed(*std::max_element(eva.begin(), eva.end()), 2));
}

}  // namespace

Status GenerateOmnibal(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                       ReportFiles& files) {
  MMTWIN_ASSIGN_OR_RETURN(ReportData data, LoadReportData(o, "omnibal"));
  OmnibalRuns runs;
  MMTWIN_RETURN_IF_ERROR(RunReportSweeps(o, scenarios,
                                         {{"omnibal-main", &runs.main},
                                          {"omnibal-ablation", &runs.ablation},
                                          {"omnibal-data", &runs.data},
                                          {"omnibal-partition", &runs.partition},
                                          {"omnibal-datasets", &runs.datasets},
                                          {"omnibal-models", &runs.models}}));
  MMTWIN_ASSIGN_OR_RETURN(OmnibalTables t, FillTables(data.paper, runs));
  if (!o.reduced) MMTWIN_RETURN_IF_ERROR(CheckPaperValuesShown(data.paper, t.all()));
  Bindings b;
  for (const ReportTable* x : t.all()) b.SetTable(x->name, x);
  ReportFiles images;
  MMTWIN_RETURN_IF_ERROR(OmnibalCharts(t, plotter, images, b));
  MMTWIN_RETURN_IF_ERROR(MoreOmnibalCharts(t, plotter, images, b));
  MMTWIN_RETURN_IF_ERROR(AddTimeline(o, scenarios, plotter, images, b));
  b.SetValue("header", Header(o));
  for (const auto& [name, rows] : {std::pair{"main", &runs.main},
                                   {"ablation", &runs.ablation},
                                   {"data", &runs.data},
                                   {"partition", &runs.partition},
                                   {"datasets", &runs.datasets},
                                   {"models", &runs.models}})
    b.SetValue(std::string(name) + "_iterations", Iterations(*rows));
  MMTWIN_ASSIGN_OR_RETURN(std::string stages, ModelSizeStages(runs));
  b.SetValue("model_stages", stages);
  BindProse(t, b);
  MMTWIN_ASSIGN_OR_RETURN(std::string md, Render(data.tmpl, b));
  files.emplace_back("README.md", std::move(md));
  for (auto& f : images) files.push_back(std::move(f));
  return Status();
}

}  // namespace mmtwin::report::internal

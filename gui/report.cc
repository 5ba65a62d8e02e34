// SPDX-License-Identifier: Apache-2.0
#include "report.h"

#include <QLabel>
#include <QVBoxLayout>
#include <QWidget>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include <unistd.h>

#include "chart.h"
#include "driver/simulate.h"
#include "core/plan/mesh.h"
#include "core/scenario/scenario.h"
#include "sweep/results_db.h"
#include "sweep/runner.h"
#include "sweep/sweep.h"
#include "core/util/atomic_dir.h"
#include "core/util/csv.h"
#include "report_internal.h"
#include "views.h"

namespace mmtwin::gui {
namespace internal {
namespace {

namespace fs = std::filesystem;

// ---- the OmniBal report ----

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

Result<std::string> TimelinePng(const TimelineRun& base, const TimelineRun& omni) {
  QWidget page;
  page.setAutoFillBackground(true);
  QPalette pal = page.palette();
  pal.setColor(QPalette::Window, Qt::white);
  page.setPalette(pal);
  auto* layout = new QVBoxLayout(&page);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* a = new GanttView(&page);
  auto* b = new GanttView(&page);
  a->SetOps(&base.ops, base.parallel);
  b->SetOps(&omni.ops, omni.parallel);
  const double end = std::max(a->model().end_us(), b->model().end_us());
  a->SetFullSpan(end);
  b->SetFullSpan(end);
  a->SetInteractive(false);
  b->SetInteractive(false);
  a->SetTitle(QString("Baseline (random batches, parameter partition, full recompute): one iteration, %1 ms, "
                      "DP replica 0 of %2")
                  .arg(base.summary.iteration_time_us.mean / 1e3, 0, 'f', 0)
                  .arg(base.parallel.dp));
  b->SetTitle(QString("OmniBal (ISF, BMP, adaptive recompute): one iteration, %1 ms, DP replica 0 of %2")
                  .arg(omni.summary.iteration_time_us.mean / 1e3, 0, 'f', 0)
                  .arg(omni.parallel.dp));
  layout->addWidget(a);
  layout->addWidget(b);
  return RenderWidgetPng(page, kTimelineWidthPx, kTimelineHeightPx);
}

struct OmnibalRuns {
  SweepRows main, ablation, data, partition, datasets, models;
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

// "N sampled iterations" of a sweep's runs (the first run's; a sweep overrides every run's count).
std::string Iterations(const SweepRows& s) {
  const int64_t n = s.rows.empty() ? 0 : s.rows.front().summary->iterations_replayed;
  return std::to_string(n) + " sampled iteration" + (n == 1 ? "" : "s") + " per run";
}

// Table 4: baseline and OmniBal on three datasets.
Status DatasetsTable(const OmnibalRuns& r, std::vector<Table>& tables) {
  Table t{
      "Different datasets (Table 4)",
      "6B+20B with the omnibal-main layout (DP16 × TP2 × PP4, 128 A100s) on the full synthetic trace of each "
      "dataset's generator preset, sweep `omnibal-datasets` (" +
          Iterations(r.datasets) +
          "; its InternVL-1.2M runs are omnibal-main's). The paper does not name Table 4's model; its "
          "InternVL-1.2M row equals Table 2's 6B+20B row. The dist ratios are OmniBal's (the ISF run's data "
          "plan); the paper's speed-up is its two GPU-days' ratio.",
      "Table 4",
      "dataset",
      {}};
  struct Row {
    const char* dataset;
    const char* label;
    const char *vit, *llm, *base, *omni, *speedup;
  };
  for (const Row& x : {Row{"llava-665k", "LLaVA-665K", "0.02", "0.145", "43.3", "12.4", "3.49"},
                       Row{"internvl-1.2m", "InternVL-1.2M", "0.02", "0.14", "61.8", "21.3", "2.90"},
                       Row{"lcs-558k", "LCS-558K", "0.001", "0.029", "23.8", "7.5", "3.17"}}) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* b,
                            Find(r.datasets, {{"dataset", x.dataset}, {"data", "random"}}));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* o, Find(r.datasets, {{"dataset", x.dataset}, {"data", "isf"}}));
    t.rows.push_back({x.label, "dist ratio ViT", x.vit, o->summary->data.dist_ratio_vit, 3, RunRef(*o)});
    t.rows.push_back({x.label, "dist ratio LLM", x.llm, o->summary->data.dist_ratio_llm, 3, RunRef(*o)});
    t.rows.push_back({x.label, "GPU-days, baseline", x.base, b->summary->gpu_days, 1, RunRef(*b)});
    t.rows.push_back({x.label, "GPU-days, OmniBal", x.omni, o->summary->gpu_days, 1, RunRef(*o)});
    t.rows.push_back({x.label, "speed-up (baseline / OmniBal)", x.speedup,
                      b->summary->gpu_days / o->summary->gpu_days, 2, RunRef(*b) + " / " + RunRef(*o)});
  }
  tables.push_back(std::move(t));
  return Status();
}

// The model-size study: every vision + LLM pair, baseline and OmniBal.
Status ModelSizeTable(const OmnibalRuns& r, std::vector<Table>& tables) {
  Table t{
      "Model size: every vision + LLM pair (§5.4, Appendix A.2)",
      "Sweep `omnibal-models`: baseline (random batches of 4, parameter partition, full recompute) and "
      "OmniBal (ISF, BMP, adaptive recompute) per pair on 128 A100s, the full synthetic InternVL-1.2M "
      "trace, " +
          Iterations(r.models) +
          ". The layouts are mmtwin's (the `layout` axis; scenarios/README.md): TP inside a node, enough "
          "stages that the baseline fits, 256 micro-batches per step. The appendix table is not in the "
          "paper's text kept here, so only the two pairs of Table 2 (same layouts as omnibal-main, the same "
          "runs) have paper values.",
      "A.2; Table 2",
      "model",
      {}};
  for (const ModelPair& p : kModelPairs) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* b, Find(r.models, {{"model", p.model}, {"data", "random"}}));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* o, Find(r.models, {{"model", p.model}, {"data", "isf"}}));
    const std::string model = p.model;
    const bool t20 = model == "internvl-1.5-6b-20b", t34 = model == "internvl-1.5-6b-34b";
    t.rows.push_back({model, "GPU-days, baseline",
                      t20   ? "61.8"
                      : t34 ? "75.4"
                            : "",
                      b->summary->gpu_days, 1, RunRef(*b)});
    t.rows.push_back({model, "GPU-days, OmniBal",
                      t20   ? "21.3"
                      : t34 ? "30.5"
                            : "",
                      o->summary->gpu_days, 1, RunRef(*o)});
    t.rows.push_back({model, "speed-up (baseline / OmniBal)",
                      t20   ? "2.90"
                      : t34 ? "2.47"
                            : "",
                      b->summary->gpu_days / o->summary->gpu_days, 2, RunRef(*b) + " / " + RunRef(*o)});
  }
  tables.push_back(std::move(t));
  return Status();
}

// Per pair of the model-size study: the layout, OmniBal's per-stage layers and recomputed layers, the
// baseline's (parameter partition, every layer recomputed).
Result<std::string> ModelSizeStages(const OmnibalRuns& r) {
  std::string md =
      "Per pair, the layout and the plan each run chose: the layers of each pipeline stage (as `first..last` "
      "in the model's layer list: embeddings, ViT blocks, projector, LLM blocks, head) and how many of them "
      "recompute their activations in the backward.\n\n";
  auto stages = [](const RunRecord& x) {
    std::string layers, recompute;
    for (const StageRecord& st : x.summary->stages) {
      layers += (layers.empty() ? "" : ", ") + std::to_string(st.first_layer) + ".." +
                std::to_string(st.last_layer);
      recompute += (recompute.empty() ? "" : ", ") + std::to_string(st.recomputed_layers);
    }
    return "layers " + layers + "; recomputed " + recompute;
  };
  for (const ModelPair& p : kModelPairs) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* b, Find(r.models, {{"model", p.model}, {"data", "random"}}));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* o, Find(r.models, {{"model", p.model}, {"data", "isf"}}));
    std::string layout;
    for (const auto& [axis, label] : o->axes)
      if (axis == "layout") layout = label;
    md += "- `" + std::string(p.model) + "` (" + layout + "): OmniBal " + stages(*o) + " (" + RunRef(*o) +
          "); baseline " + stages(*b) + " (" + RunRef(*b) + ")\n";
  }
  return md + "\n";
}

Status OmnibalTables(const OmnibalRuns& r, std::vector<Table>& tables) {
  // Table 2: GPU-days and speed-up per pair.
  {
    Table t{"GPU-days per epoch and speed-up (Table 2, Megatron-DeepSpeed rows)",
            "InternVL-Chat-1.5 on InternVL-1.2M, 128 A100-80GB. Sweep `omnibal-main` (the scenarios "
            "`omnibal/internvl-6b-{20b,34b}-{baseline,omnibal}.yaml`, " +
                Iterations(r.main) + ").",
            "Table 2",
            "model",
            {}};
    struct Pair {
      const char* model;
      const char* label;
      const char *base, *omni, *speedup;
    };
    for (const Pair& p : {Pair{"internvl-1.5-6b-20b", "6B+20B", "61.8", "21.3", "2.90"},
                          Pair{"internvl-1.5-6b-34b", "6B+34B", "75.4", "30.5", "2.47"}}) {
      MMTWIN_ASSIGN_OR_RETURN(const RunRecord* b, Find(r.main, {{"model", p.model}, {"data", "random"}}));
      MMTWIN_ASSIGN_OR_RETURN(const RunRecord* o, Find(r.main, {{"model", p.model}, {"data", "isf"}}));
      t.rows.push_back({p.label, "GPU-days, baseline", p.base, b->summary->gpu_days, 1, RunRef(*b)});
      t.rows.push_back({p.label, "GPU-days, OmniBal", p.omni, o->summary->gpu_days, 1, RunRef(*o)});
      t.rows.push_back({p.label, "speed-up (baseline / OmniBal)", p.speedup,
                        b->summary->gpu_days / o->summary->gpu_days, 2, RunRef(*b) + " / " + RunRef(*o)});
    }
    tables.push_back(std::move(t));
  }
  // Table 3: the ablation.
  {
    Table t{"Ablation: data, model and memory balance (Table 3)",
            "6B+20B, sweep `omnibal-ablation` (each step adds one balance: ISF, then BMP, then adaptive "
            "recompute; " +
                Iterations(r.ablation) + ").",
            "Table 3",
            "step",
            {}};
    const std::pair<const char*, const char*> steps[] = {
        {"baseline", "61.8"}, {"+data", "51.9"}, {"+data+model", "29.0"}, {"+data+model+memory", "21.3"}};
    for (const auto& [step, paper] : steps) {
      MMTWIN_ASSIGN_OR_RETURN(const RunRecord* x, Find(r.ablation, {{"step", step}}));
      t.rows.push_back({step, "GPU-days", paper, x->summary->gpu_days, 1, RunRef(*x)});
    }
    tables.push_back(std::move(t));
  }
  // Table 5: data balance.
  {
    Table t{
        "Data balance: mini-batch methods (Table 5)",
        "6B+20B, sweep `omnibal-data`: four data methods, each with the parameter partition (w/o MB) and BMP "
        "(w MB), full recompute, " +
            Iterations(r.data) +
            ". Pad and dist ratios and AVE-BS are the data plan's "
            "over the epoch (the same with and without MB; shown from the w/o MB run).",
        "Table 5",
        "method",
        {}};
    struct Row {
      const char* data;
      const char* label;
      const char *ave_bs, *pad, *dist_vit, *dist_llm, *wo_mb, *w_mb;
    };
    for (const Row& x : {Row{"random", "baseline (random)", "4", "0.31", "0.34", "0.30", "61.8", "42.2"},
                         Row{"length-group", "length-group", "4", "0.20", "0.26", "0.13", "54.0", "40.0"},
                         Row{"device-group", "device-group", "4", "0.378", "0.125", "0.15", "54.5", "43.6"},
                         Row{"isf", "ISF", "4.6", "0", "0.02", "0.14", "51.9", "29.0"}}) {
      MMTWIN_ASSIGN_OR_RETURN(const RunRecord* wo, Find(r.data, {{"data", x.data}, {"partition", "params"}}));
      MMTWIN_ASSIGN_OR_RETURN(const RunRecord* w, Find(r.data, {{"data", x.data}, {"partition", "bmp"}}));
      const DataSummary& d = wo->summary->data;
      t.rows.push_back({x.label, "AVE-BS (samples)", x.ave_bs, d.mean_batch_size, 2, RunRef(*wo)});
      t.rows.push_back({x.label, "pad ratio", x.pad, d.pad_ratio, 3, RunRef(*wo)});
      t.rows.push_back({x.label, "dist ratio ViT", x.dist_vit, d.dist_ratio_vit, 3, RunRef(*wo)});
      t.rows.push_back({x.label, "dist ratio LLM", x.dist_llm, d.dist_ratio_llm, 3, RunRef(*wo)});
      t.rows.push_back({x.label, "GPU-days w/o MB", x.wo_mb, wo->summary->gpu_days, 1, RunRef(*wo)});
      t.rows.push_back({x.label, "GPU-days w MB", x.w_mb, w->summary->gpu_days, 1, RunRef(*w)});
    }
    tables.push_back(std::move(t));
  }
  // Table 6: model balance.
  {
    Table t{
        "Model balance: pipeline partitions (Table 6)",
        "6B+20B, sweep `omnibal-partition`: ISF data, full recompute, " + Iterations(r.partition) +
            ". mmtwin's "
            "VAR(param) is in (10^9 parameters)^2, VAR(fwd) in ms^2 of per-stage forward time, SUM(comm) the "
            "boundary activation bytes at the cuts in MB (10^6 bytes) relative to the parameter-based "
            "partition; the paper does not state its units for the variances.",
        "Table 6",
        "partition",
        {}};
    struct Row {
      const char* partition;
      const char* label;
      const char *var_param, *var_layers, *var_fwd, *dcomm, *days;
    };
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* ref, Find(r.partition, {{"partition", "params"}}));
    for (const Row& x : {Row{"params", "(1) parameter-based", "0.03", "13.4", "93.6", "0.0", "42.2"},
                         Row{"uniform", "(2) layer-based", "0.64", "1.2", "20.1", "8.2", "30.6"},
                         Row{"profile", "(3) profile-based", "0.85", "2.1", "6.5", "16.6", "30.9"},
                         Row{"bmp", "(4) BMP", "0.83", "1.5", "12.2", "-21.0", "29.0"}}) {
      MMTWIN_ASSIGN_OR_RETURN(const RunRecord* p, Find(r.partition, {{"partition", x.partition}}));
      const PartitionSummary& s = p->summary->partition;
      t.rows.push_back({x.label, "VAR(param)", x.var_param, s.var_params / 1e18, 2, RunRef(*p)});
      t.rows.push_back({x.label, "VAR(num.layer)", x.var_layers, s.var_layers, 1, RunRef(*p)});
      t.rows.push_back({x.label, "VAR(fwd.time)", x.var_fwd, s.var_fwd_us2 / 1e6, 1, RunRef(*p)});
      t.rows.push_back(
          {x.label, "Δ SUM(comm) (MB)", x.dcomm,
           (static_cast<double>(s.sum_comm_bytes) - ref->summary->partition.sum_comm_bytes) / 1e6, 1,
           RunRef(*p) + " − " + RunRef(*ref)});
      t.rows.push_back({x.label, "GPU-days", x.days, p->summary->gpu_days, 1, RunRef(*p)});
    }
    tables.push_back(std::move(t));
  }
  // Table 7: memory balance (remaining VRAM per stage).
  {
    Table t{
        "Memory balance: remaining device memory per stage (Table 7)",
        "6B+20B, the ablation's runs. Remaining VRAM_i = 80 GiB (A100-80GB) − the stage's planned peak "
        "memory "
        "per GPU. For the baseline the paper gives a range over iterations (min~max); mmtwin's planned peak "
        "is the worst replayed micro-batch, so it is compared with the paper's minimum.",
        "Table 7",
        "step",
        {}};
    struct Row {
      const char* step;
      const char* label;
      std::array<const char*, 4> vram;
      const char* days;
    };
    for (const Row& x :
         {Row{"baseline", "baseline (min)", {"13", "7.3", "7.3", "7.3"}, "61.8"},
          Row{"+data+model", "+ data & model balance", {"58.2", "56.2", "32.5", "32.7"}, "29.0"},
          Row{"+data+model+memory", "+ memory balance", {"12.3", "21.7", "24.7", "30.0"}, "21.3"}}) {
      MMTWIN_ASSIGN_OR_RETURN(const RunRecord* p, Find(r.ablation, {{"step", x.step}}));
      for (size_t i = 0; i < 4; ++i)
        t.rows.push_back({x.label, "VRAM_" + std::to_string(i + 1) + " (GiB)", x.vram[i],
                          RemainingGiB(*p->summary, i), 1, RunRef(*p)});
    }
    tables.push_back(std::move(t));
  }
  MMTWIN_RETURN_IF_ERROR(DatasetsTable(r, tables));
  return ModelSizeTable(r, tables);
}

Result<std::vector<Png>> OmnibalPlots(const std::vector<Table>& t) {
  std::vector<Png> pngs;
  auto add = [&](const std::string& name, const ChartSpec& c) { return AddChart(pngs, name, c); };
  {
    ChartSpec c;
    c.title = "OmniBal ablation, InternVL-1.5 6B+20B on 128 A100s: GPU-days per epoch";
    c.y_label = "GPU-days per epoch";
    c.x_label = "balance added step by step";
    const std::vector<std::string> rows = {"baseline", "+data", "+data+model", "+data+model+memory"};
    c.categories = rows;
    c.series = {{"paper (Table 3)", Column(t[1], "GPU-days", rows, true)},
                {"mmtwin", Column(t[1], "GPU-days", rows, false)}};
    MMTWIN_RETURN_IF_ERROR(add("ablation.png", c));
  }
  {
    ChartSpec c;
    c.title = "Baseline vs OmniBal, 128 A100s: GPU-days per epoch";
    c.y_label = "GPU-days per epoch";
    c.categories = {"6B+20B baseline", "6B+20B OmniBal", "6B+34B baseline", "6B+34B OmniBal"};
    std::vector<double> paper, ours;
    for (const char* m : {"6B+20B", "6B+34B"})
      for (const char* f : {"GPU-days, baseline", "GPU-days, OmniBal"}) {
        paper.push_back(Column(t[0], f, {m}, true)[0]);
        ours.push_back(Column(t[0], f, {m}, false)[0]);
      }
    c.series = {{"paper (Table 2)", paper}, {"mmtwin", ours}};
    MMTWIN_RETURN_IF_ERROR(add("main.png", c));
  }
  {
    ChartSpec c;
    c.title = "Data balance methods, 6B+20B: GPU-days without / with model balance (MB)";
    c.y_label = "GPU-days per epoch";
    const std::vector<std::string> rows = {"baseline (random)", "length-group", "device-group", "ISF"};
    c.categories = rows;
    c.series = {{"paper w/o MB (Table 5)", Column(t[2], "GPU-days w/o MB", rows, true)},
                {"mmtwin w/o MB", Column(t[2], "GPU-days w/o MB", rows, false)},
                {"paper w MB (Table 5)", Column(t[2], "GPU-days w MB", rows, true)},
                {"mmtwin w MB", Column(t[2], "GPU-days w MB", rows, false)}};
    MMTWIN_RETURN_IF_ERROR(add("data.png", c));
  }
  {
    ChartSpec c;
    c.title = "Pipeline partition methods, 6B+20B (ISF data, full recompute): GPU-days per epoch";
    c.y_label = "GPU-days per epoch";
    const std::vector<std::string> rows = {"(1) parameter-based", "(2) layer-based", "(3) profile-based",
                                           "(4) BMP"};
    c.categories = rows;
    c.series = {{"paper (Table 6)", Column(t[3], "GPU-days", rows, true)},
                {"mmtwin", Column(t[3], "GPU-days", rows, false)}};
    MMTWIN_RETURN_IF_ERROR(add("partition.png", c));
  }
  {
    ChartSpec c;
    c.title = "Remaining memory per GPU by pipeline stage, 6B+20B (80 GiB minus the peak)";
    c.y_label = "remaining memory (GiB)";
    c.x_label = "pipeline stage";
    c.categories = {"S1", "S2", "S3", "S4"};
    auto stage_values = [&](const std::string& row, bool paper) {
      std::vector<double> v;
      for (int i = 1; i <= 4; ++i)
        v.push_back(Column(t[4], "VRAM_" + std::to_string(i) + " (GiB)", {row}, paper)[0]);
      return v;
    };
    c.series = {{"paper +data&model (Table 7)", stage_values("+ data & model balance", true)},
                {"mmtwin +data&model", stage_values("+ data & model balance", false)},
                {"paper +memory (Table 7)", stage_values("+ memory balance", true)},
                {"mmtwin +memory", stage_values("+ memory balance", false)}};
    MMTWIN_RETURN_IF_ERROR(add("memory.png", c));
  }
  {
    ChartSpec c;
    c.title = "Baseline vs OmniBal on three datasets, 6B+20B on 128 A100s: GPU-days per epoch";
    c.y_label = "GPU-days per epoch";
    c.x_label = "dataset (full synthetic trace of its generator preset)";
    const std::vector<std::string> rows = {"LLaVA-665K", "InternVL-1.2M", "LCS-558K"};
    c.categories = rows;
    c.series = {{"paper baseline (Table 4)", Column(t[5], "GPU-days, baseline", rows, true)},
                {"mmtwin baseline", Column(t[5], "GPU-days, baseline", rows, false)},
                {"paper OmniBal (Table 4)", Column(t[5], "GPU-days, OmniBal", rows, true)},
                {"mmtwin OmniBal", Column(t[5], "GPU-days, OmniBal", rows, false)}};
    MMTWIN_RETURN_IF_ERROR(add("datasets.png", c));
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
    c.series = {{"baseline", Column(t[6], "GPU-days, baseline", rows, false)},
                {"OmniBal", Column(t[6], "GPU-days, OmniBal", rows, false)}};
    MMTWIN_RETURN_IF_ERROR(add("models.png", c));
  }
  return pngs;
}

// The figure `figure` of row `row` in table t: mmtwin's value (or the paper's).
double Val(const Table& t, const std::string& row, const std::string& figure, bool paper = false) {
  return Column(t, figure, {row}, paper)[0];
}

// "Where mmtwin differs and why": the prose is fixed, every number in it is read from the tables above.
std::string OmnibalDiffers(const std::vector<Table>& t) {
  const Table &main = t[0], &abl = t[1], &data = t[2], &part = t[3], &mem = t[4], &ds = t[5], &ms = t[6];
  auto f1 = [](double v) { return Fixed(v, 1); };
  auto f2 = [](double v) { return Fixed(v, 2); };
  std::string md = "## Where mmtwin differs and why\n\n";
  md +=
      "- **Baselines and OmniBal.** The 6B+20B baseline comes out at " +
      f1(Val(main, "6B+20B", "GPU-days, baseline")) + " GPU-days (paper 61.8) and OmniBal at " +
      f1(Val(main, "6B+20B", "GPU-days, OmniBal")) + " (21.3): a speed-up of " +
      f2(Val(main, "6B+20B", "speed-up (baseline / OmniBal)")) + "× against the paper's 2.90×; for 6B+34B " +
      f2(Val(main, "6B+34B", "speed-up (baseline / OmniBal)")) +
      "× against 2.47×. mmtwin prices every layer analytically at a fixed achieved fraction of the GPU's "
      "peak; "
      "it does not know the framework overheads, allocator stalls and stragglers of a real padded, randomly "
      "batched Megatron-DeepSpeed run, which is where a baseline loses most. The paper states neither its "
      "GPU "
      "count, TP degree nor micro-batch count: the layouts here are mmtwin's choices (scenarios/README.md), "
      "the same for baseline and OmniBal, so the speed-ups compare but the absolute GPU-days depend on "
      "them.\n";
  md += "- **Data balance alone gains more in mmtwin** (" + f1(Val(abl, "baseline", "GPU-days")) + " → " +
        f1(Val(abl, "+data", "GPU-days")) +
        " GPU-days; paper 61.8 → 51.9): mmtwin charges padding exactly (a random batch pads every sample to "
        "its longest) and ISF removes it all, while the rest of a real step (optimizer, data loading, kernel "
        "launch gaps) does not shrink with the tokens.\n";
  md +=
      "- **Model balance without data balance gains little in mmtwin** (random batches, parameter partition "
      "→ "
      "BMP: " +
      f1(Val(data, "baseline (random)", "GPU-days w/o MB")) + " → " +
      f1(Val(data, "baseline (random)", "GPU-days w MB")) + "; paper 61.8 → 42.2; device-group " +
      f1(Val(data, "device-group", "GPU-days w/o MB")) + " → " +
      f1(Val(data, "device-group", "GPU-days w MB")) +
      "). With unbalanced batches the step waits for the slowest DP replica (the timeline: DP replica 0 "
      "finishes its compute well before the gradient all-reduce can start), and a better partition of "
      "every replica's pipeline does not shorten that wait. The paper's larger gain suggests its baseline "
      "partition cost more than mmtwin's analytic pricing of it says.\n";
  md +=
      "- **Device-group is slower than random in mmtwin** (" +
      f1(Val(data, "device-group", "GPU-days w/o MB")) + " vs " +
      f1(Val(data, "baseline (random)", "GPU-days w/o MB")) +
      " GPU-days; paper 54.5 vs 61.8): grouping similar sizes across devices leaves the most padding of the "
      "four methods (pad ratio " +
      Fixed(Val(data, "device-group", "pad ratio"), 3) +
      ", paper 0.378), and mmtwin charges padded tokens at full price. Length-group lands on the paper (" +
      f1(Val(data, "length-group", "GPU-days w/o MB")) + " vs 54.0).\n";
  md +=
      "- **Pad and dist ratios** use the paper's definitions (core/balance/metrics.h) on a synthetic trace "
      "generated from InternVL-1.2M's published statistics, not the real dataset; the baseline's pad ratio "
      "(" +
      Fixed(Val(data, "baseline (random)", "pad ratio"), 3) + " vs 0.31) and ISF's AVE-BS (" +
      f2(Val(data, "ISF", "AVE-BS (samples)")) +
      " vs 4.6) are close; most dist ratios run higher than the paper's, for a reason not established here "
      "(the synthetic trace's size mix is the first suspect).\n";
  md +=
      "- **Partition variances** are in stated units here (VAR(param) in (10^9 parameters)², VAR(fwd.time) "
      "in "
      "ms²); the paper gives no units and evidently counts layers differently (mmtwin splits the model into "
      "its individual ViT and LLM blocks plus embeddings, projector and head, so the parameter-based "
      "partition's VAR(num.layer) is " +
      f1(Val(part, "(1) parameter-based", "VAR(num.layer)")) +
      " against 13.4). The comparable part is the GPU-days and their order: parameter-based is the slowest "
      "(" +
      f1(Val(part, "(1) parameter-based", "GPU-days")) + "; paper 42.2), BMP the fastest or tied (" +
      f1(Val(part, "(4) BMP", "GPU-days")) + "; 29.0). mmtwin's Δ SUM(comm) of BMP (" +
      f1(Val(part, "(4) BMP", "Δ SUM(comm) (MB)")) +
      " MB) does not reproduce the paper's −21.0 MB: mmtwin's BMP weighs communication at 0.1 in its "
      "candidate "
      "score and keeps the candidate fastest on the evaluator (core/plan/partition.h), so it does not trade "
      "step time for fewer boundary bytes.\n";
  md +=
      "- **Remaining memory** is 80 GiB minus mmtwin's planned per-GPU peak over the replayed micro-batches; "
      "the paper measured its GPUs. mmtwin leaves much more free memory than measured (baseline S2 " +
      f1(Val(mem, "baseline (min)", "VRAM_2 (GiB)")) + " GiB vs 7.3 GB; after +data&model S3 " +
      f1(Val(mem, "+ data & model balance", "VRAM_3 (GiB)")) +
      " vs 32.5): it counts model states, stored activations, one recomputed unit and boundary buffers plus "
      "a 5% fragmentation allowance, not the framework's own buffers (communication buckets, allocator "
      "caching), and only the sampled iterations, not the epoch's largest batch. The direction of "
      "the memory-balance step is reproduced: adaptive recompute spends the free memory (S1 " +
      f1(Val(mem, "+ data & model balance", "VRAM_1 (GiB)")) + " → " +
      f1(Val(mem, "+ memory balance", "VRAM_1 (GiB)")) + " GiB; paper 58.2 → 12.3).\n";
  md +=
      "- **Datasets (Table 4).** OmniBal's speed-up holds on all three datasets in mmtwin too (LLaVA-665K " +
      f2(Val(ds, "LLaVA-665K", "speed-up (baseline / OmniBal)")) + "× against the paper's 3.49×, LCS-558K " +
      f2(Val(ds, "LCS-558K", "speed-up (baseline / OmniBal)")) +
      "× against 3.17×), but the GPU-days of the smaller datasets come out " +
      (Val(ds, "LCS-558K", "GPU-days, baseline") < 23.8 ? "lower" : "higher") +
      " than measured (LCS-558K baseline " + f1(Val(ds, "LCS-558K", "GPU-days, baseline")) +
      " vs 23.8): their samples are at most one 448 px tile and a short text, so mmtwin's per-token pricing "
      "leaves little beyond the tokens, while a real step keeps the fixed costs mmtwin does not price (see "
      "the "
      "first point). ISF's dist ratios on these traces run well above the paper's (LCS-558K ViT " +
      Fixed(Val(ds, "LCS-558K", "dist ratio ViT"), 3) +
      " vs 0.001), for a reason not established here. The paper does not say which model Table 4 trained; "
      "mmtwin uses 6B+20B for all three.\n";
  md +=
      "- **Model size.** The paper's appendix table with the per-pair GPU-days is not in the text kept here, "
      "so only the Table 2 pairs have paper values. In mmtwin OmniBal's speed-up " +
      std::string(Val(ms, "internvl-6b-qwen1.5-110b", "speed-up (baseline / OmniBal)") >
                          Val(ms, "internvl-6b-llama3-8b", "speed-up (baseline / OmniBal)")
                      ? "grows"
                      : "falls") +
      " from the smallest to the largest LLM (6B+8B " +
      f2(Val(ms, "internvl-6b-llama3-8b", "speed-up (baseline / OmniBal)")) + "×, 6B+110B " +
      f2(Val(ms, "internvl-6b-qwen1.5-110b", "speed-up (baseline / OmniBal)")) + "×) and stays within " +
      f2(std::min({Val(ms, "eva-clip-1b-internlm2-20b", "speed-up (baseline / OmniBal)"),
                   Val(ms, "eva-clip-4b-internlm2-20b", "speed-up (baseline / OmniBal)"),
                   Val(ms, "eva-clip-8b-internlm2-20b", "speed-up (baseline / OmniBal)"),
                   Val(ms, "eva-clip-18b-internlm2-20b", "speed-up (baseline / OmniBal)")})) +
      "–" +
      f2(std::max({Val(ms, "eva-clip-1b-internlm2-20b", "speed-up (baseline / OmniBal)"),
                   Val(ms, "eva-clip-4b-internlm2-20b", "speed-up (baseline / OmniBal)"),
                   Val(ms, "eva-clip-8b-internlm2-20b", "speed-up (baseline / OmniBal)"),
                   Val(ms, "eva-clip-18b-internlm2-20b", "speed-up (baseline / OmniBal)")})) +
      "× over the EVA-CLIP sizes; the layouts are mmtwin's choices (more pipeline stages for the larger "
      "LLMs, a different layout for the baseline would change its GPU-days most), so the pairs compare "
      "within "
      "a layout, not across. The list under the table gives each run's stages and recomputed layers: the "
      "baseline recomputes every block, OmniBal's adaptive recompute only what its memory needs.\n";
  md +=
      "- **Not reproduced here**: Table 2's DeepSpeed ZeRO-3 rows, and the appendix's resolution, "
      "pretraining and 512-GPU studies.\n";
  return md;
}

}  // namespace

Status GenerateOmnibal(const ReportOptions& o, const std::string& scenarios,
                       std::vector<std::pair<std::string, std::string>>& files) {
  OmnibalRuns runs;
  MMTWIN_RETURN_IF_ERROR(RunReportSweeps(o, scenarios,
                                         {{"omnibal-main", &runs.main},
                                          {"omnibal-ablation", &runs.ablation},
                                          {"omnibal-data", &runs.data},
                                          {"omnibal-partition", &runs.partition},
                                          {"omnibal-datasets", &runs.datasets},
                                          {"omnibal-models", &runs.models}}));
  std::vector<Table> tables;
  MMTWIN_RETURN_IF_ERROR(OmnibalTables(runs, tables));
  MMTWIN_ASSIGN_OR_RETURN(std::vector<Png> pngs, OmnibalPlots(tables));
  MMTWIN_ASSIGN_OR_RETURN(TimelineRun base,
                          SimulateOneIteration(scenarios + "/omnibal/internvl-6b-20b-baseline.yaml", o));
  MMTWIN_ASSIGN_OR_RETURN(TimelineRun omni,
                          SimulateOneIteration(scenarios + "/omnibal/internvl-6b-20b-omnibal.yaml", o));
  MMTWIN_ASSIGN_OR_RETURN(std::string timeline, TimelinePng(base, omni));
  pngs.push_back({"timeline.png", std::move(timeline)});

  std::string md = Header("OmniBal (Wang et al.) reproduced by mmtwin", o);
  md +=
      "Paper: OmniBal (Wang et al.), balanced computation for VLM training. Table numbers follow the paper's "
      "text the project keeps (001 in the shared papers): Table 2 main results, Table 3 ablation, Table 4 "
      "datasets, Table 5 data balance, Table 6 model balance (the partition methods compared), Table 7 "
      "memory "
      "balance, and the model-size study of §5.4 (issue 13 cites another numbering, presumably of another "
      "version: data policies Table 3, partitions Table 4, ablation Table 7). "
      "Setup (scenarios/README.md, \"omnibal/\"): InternVL-Chat-1.5 6B+20B (DP16 × TP2 × PP4) and 6B+34B "
      "(DP8 × TP4 × PP4) on 128 A100-80GB (16 nodes of 4 GPUs, 4 × 200 Gb/s), the full synthetic "
      "InternVL-1.2M trace (1,267,819 samples), ZeRO-1, 1F1B; GPU-days are projected for one epoch from the "
      "sampled iterations' mean time.\n\n";
  md += "![GPU-days per epoch as balance is added, paper vs mmtwin](ablation.png)\n\n";
  md += TablesWithPlots(tables, {{"(Table 2", "main.png"},
                                 {"(Table 5", "data.png"},
                                 {"(Table 6", "partition.png"},
                                 {"(Table 7", "memory.png"},
                                 {"(Table 4", "datasets.png"},
                                 {"Model size", "models.png"}});
  MMTWIN_ASSIGN_OR_RETURN(std::string stages, ModelSizeStages(runs));
  md += stages;
  md += "### Timeline of one iteration, baseline vs OmniBal (6B+20B)\n\n";
  md +=
      "One simulated iteration of the scenarios `omnibal/internvl-6b-20b-baseline.yaml` and "
      "`-omnibal.yaml` (iteration 0, analytic engine), DP replica 0's four pipeline stages and their "
      "communication lanes, on one time scale; the grey shading on compute rows is time without compute "
      "(bubbles and idle). The iterations do not hold the same samples: ISF packs a different number per "
      "micro-batch.\n\n";
  md += "![timeline of one iteration, baseline above, OmniBal below](timeline.png)\n\n";
  md += OmnibalDiffers(tables);
  AddReportFiles(std::move(md), pngs, files);
  return Status();
}

}  // namespace internal

namespace fs = std::filesystem;
using internal::DefaultScenariosDir;

std::vector<std::string> ReportNames() { return {"omnibal", "orchmllm", "longvila", "validation"}; }

Status CheckOutputDir(const std::string& dir) {
  if (dir.empty()) return Error("no output folder given");
  std::error_code ec;
  const fs::path out = fs::absolute(dir, ec);
  if (ec) return Error(dir + ": " + ec.message());
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) return Error(dir + ": exists and is not a folder");
  const fs::path parent = out.parent_path();
  if (!fs::is_directory(parent, ec))
    return Error(dir + ": the parent folder " + parent.string() + " does not exist");
  if (access(parent.c_str(), W_OK | X_OK) != 0)
    return Error(dir + ": the parent folder " + parent.string() + " is not writable");
  if (fs::exists(out, ec) && access(out.c_str(), W_OK | X_OK) != 0) return Error(dir + ": not writable");
  return Status();
}

std::string ReportDbPath(const ReportOptions& o) {
  if (!o.db_path.empty()) return o.db_path;
  return "runs/reports/" + o.name + (o.reduced ? "-reduced" : "") + ".sqlite";
}

Status GenerateReport(const ReportOptions& options) {
  const std::vector<std::string> names = ReportNames();
  bool known = false;
  std::string valid;
  for (const std::string& n : names) {
    known = known || n == options.name;
    valid += (valid.empty() ? "" : ", ") + n;
  }
  if (!known) return Error("unknown report '" + options.name + "'; valid reports are: " + valid);
  const std::string scenarios = options.scenarios_dir.empty() ? DefaultScenariosDir() : options.scenarios_dir;
  MMTWIN_RETURN_IF_ERROR(CheckOutputDir(options.out_dir));  // before the runs: a bad -o fails at once

  std::vector<std::pair<std::string, std::string>> files;
  if (options.name == "omnibal")
    MMTWIN_RETURN_IF_ERROR(internal::GenerateOmnibal(options, scenarios, files));
  else if (options.name == "orchmllm")
    MMTWIN_RETURN_IF_ERROR(internal::GenerateOrchmllm(options, scenarios, files));
  else if (options.name == "longvila")
    MMTWIN_RETURN_IF_ERROR(internal::GenerateLongvila(options, scenarios, files));
  else
    MMTWIN_RETURN_IF_ERROR(internal::GenerateValidation(options, scenarios, files));
  if (options.name == "validation") {
    // The index sits beside the suites' folders (and their kept runs): its files are written one by one.
    for (const auto& [name, content] : files)
      MMTWIN_RETURN_IF_ERROR(WriteFileAtomic(options.out_dir + "/" + name, content));
  } else {
    std::vector<std::pair<std::string, std::string_view>> views;
    for (const auto& [name, content] : files) views.emplace_back(name, content);
    MMTWIN_RETURN_IF_ERROR(WriteFolderAtomic(options.out_dir, views));
  }
  if (options.progress)
    options.progress("wrote " + options.out_dir + "/README.md and " + std::to_string(files.size() - 1) +
                     " PNG plots");
  return Status();
}

}  // namespace mmtwin::gui

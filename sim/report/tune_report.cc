// SPDX-License-Identifier: Apache-2.0
// The tune report (`mmtwin-report tune`, issue 30 item 5; report.h): for each seed paper's setting, the shipped
// tune space scenarios/tune/SPACE.yaml searched by the tuner's own code (tune/tune.h: EnumerateTune, its
// evaluation sweep run into the report's database, RankTune), the paper's layout found among its candidates
// (paper.yaml facts: its axis values as `mmtwin tune` labels them) and set beside the tuner's best, both predicted
// by mmtwin, with what separates them and how long the search took. A best slower than the paper's layout would
// be a bug of the search (the paper's layout is one of the candidates): the report says so in its verdict.
#include <algorithm>
#include <cmath>
#include <map>

#include "report/common.h"
#include "report/tables.h"
#include "sweep/runner.h"
#include "tune/tune.h"

namespace mmtwin::report::internal {
namespace {

struct Setting {
  std::string row;  // the table's row label (paper.yaml tables.main.values)
  // scenarios/tune/SPACE.yaml; paper.yaml facts.SPACE holds the paper's layout as labelled.
  std::string space;
  std::string chart;  // the chart's category label (short)
};
const std::vector<Setting>& Settings() {
  static const std::vector<Setting> s = {
      {"OmniBal 6B+20B, 128 A100", "omnibal-6b-20b-128", "OmniBal 6B+20B, 128"},
      {"OmniBal 6B+34B, 128 A100", "omnibal-6b-34b-128", "OmniBal 6B+34B, 128"},
      {"OrchMLLM MLLM-10B, 64 H100", "orchmllm-10b-64", "OrchMLLM 10B, 64"},
      {"LongVILA-8B 256K, 32 H100", "longvila-8b-256k-32", "LongVILA 8B, 32"}};
  return s;
}

std::string Layout(const TuneSpace& space, const TuneCandidate& c) {
  std::string s = "dp " + std::to_string(c.dp);
  if (c.micro_batches > 0)
    s += ", " + std::to_string(c.micro_batches) + (c.micro_batches == 1 ? " micro-batch" : " micro-batches");
  return s + ", " + TuneAxesLabel(space, c);
}

// A reduced report's space: named NAME-reduced, kReducedIterations on at most kReducedSamples samples of a
// generated trace.
Status Reduce(TuneSpace& space) {
  SweepSpec& sw = space.sweep;
  sw.name += "-reduced";
  sw.iterations = std::to_string(kReducedIterations);
  MMTWIN_ASSIGN_OR_RETURN(Scenario base, ParseScenario(sw.base_text, sw.base_name, sw.base_dir));
  if (base.trace.file.empty() && base.trace.samples > kReducedSamples) {
    base.trace.samples = kReducedSamples;
    sw.base_text = FormatScenario(base);
  }
  return Status();
}

struct Searched {
  const Setting* setting = nullptr;
  TuneSpace space;
  TuneEnumeration e;
  TuneResult r;
  const TuneRow* best = nullptr;
  const TuneRow* paper = nullptr;  // the paper's layout's row (ranked or infeasible)
  int paper_rank = 0;              // 1-based among the fitting ones; 0 = it does not fit
  double run_seconds = 0;          // the evaluated runs' recorded wall times, summed
};

// "0.2693 GPU-days (busy 76.0%, bubble 19.6%, ...; peak 72.2 GiB)".
std::string Split(double gpu_days, const RunSummary& s, int64_t peak_bytes) {
  return Fixed(gpu_days, 4) + " GPU-days (busy " + Pct(s.busy_ratio) + ", bubble " + Pct(s.bubble_ratio) +
         ", idle " + Pct(s.idle_ratio) + ", exposed comm " + Pct(s.exposed_comm_ratio) + ", recompute " +
         Pct(s.recompute_ratio) + " of GPU time; peak " + Fixed(static_cast<double>(peak_bytes) / kGiB, 1) +
         " GiB)";
}

}  // namespace

Status GenerateTune(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                    ReportFiles& files) {
  MMTWIN_ASSIGN_OR_RETURN(ReportData data, LoadReportData(o, "tune"));
  MMTWIN_ASSIGN_OR_RETURN(std::unique_ptr<ResultsDb> db, OpenReportDb(o));
  std::vector<Searched> searched(Settings().size());
  for (size_t i = 0; i < Settings().size(); ++i) {
    Searched& x = searched[i];
    x.setting = &Settings()[i];
    const std::string file = scenarios + "/tune/" + x.setting->space + ".yaml";
    MMTWIN_ASSIGN_OR_RETURN(x.space, LoadTuneSpace(file));
    if (o.reduced) MMTWIN_RETURN_IF_ERROR(Reduce(x.space));
    MMTWIN_ASSIGN_OR_RETURN(x.e, EnumerateTune(x.space, /*prune=*/true));
    const SweepSpec sweep = EvaluationSweep(x.space, x.e);
    SweepRunOptions ro;
    ro.jobs = std::max(1, o.jobs);
    ro.progress = [&](const SweepProgress& p) {
      if (o.progress)
        o.progress("[" + sweep.name + " " + std::to_string(p.done) + "/" + std::to_string(p.total) + "] " +
                   LabelsOf(p.run->axes) + ": " +
                   (p.record->status == "ok" && p.record->summary
                        ? Fixed(p.record->summary->gpu_days, 3) + " GPU-days"
                        : "error: " + p.record->error));
    };
    if (o.progress)
      o.progress("tune " + file + " (" + std::to_string(x.e.evaluate.size()) + " candidates to evaluate)");
    // Exhaustive (no time bound): the paper's layout and its rank among every configuration that fits.
    TuneEvaluateOptions eo;
    eo.sweep = ro;
    eo.time_prune = false;
    MMTWIN_ASSIGN_OR_RETURN(TuneEvaluation ev, EvaluateTune(x.space, x.e, *db, eo));
    if (ev.interrupted) return Error("interrupted");
    const std::vector<RunRecord>& records = ev.records;
    x.r = RankTune(x.space, x.e, records);
    if (x.r.missing > 0)
      return Error(file + ": " + std::to_string(x.r.missing) + " candidates have no finished run");
    if (x.r.ranked.empty()) return Error(file + ": no candidate fits");
    x.best = &x.r.ranked.front();
    for (const RunRecord& rec : records)
      if (rec.status == "ok") x.run_seconds += rec.wall_seconds;
    // The paper's layout: the candidate with the axis values paper.yaml names.
    const auto fact = data.paper.facts.find(x.setting->space);
    if (fact == data.paper.facts.end())
      return Error(data.paper.file + ": facts." + x.setting->space + ": missing (the paper's layout)");
    for (size_t k = 0; k < x.r.ranked.size() && !x.paper; ++k)
      if (TuneAxesLabel(x.space, *x.r.ranked[k].candidate) == fact->second) {
        x.paper = &x.r.ranked[k];
        x.paper_rank = static_cast<int>(k) + 1;
      }
    for (const TuneRow& row : x.r.infeasible)
      if (!x.paper && TuneAxesLabel(x.space, *row.candidate) == fact->second) x.paper = &row;
    if (!x.paper)
      return Error(data.paper.file + ": facts." + x.setting->space + ": '" + fact->second +
                   "' is no evaluated candidate of " + file +
                   " (a candidate is labelled as `mmtwin tune` prints it)");
  }

  MMTWIN_ASSIGN_OR_RETURN(ReportTable main, NewTable(data.paper, "main"));
  bool no_slower = true, all_fit = true;
  std::string verdicts;
  std::string layouts;
  for (const Searched& x : searched) {
    const std::string& row = x.setting->row;
    const std::string ref = x.space.sweep.name;
    main.Add(row, "GPU-days, the paper's layout", x.paper->objective, 4,
             ref + " (rank " +
                 (x.paper_rank > 0 ? std::to_string(x.paper_rank) : std::string("none: does not fit")) + ")");
    main.Add(row, "GPU-days, the tuner's best", x.best->objective, 4, ref + " (rank 1)");
    main.Add(row, "best / the paper's layout", x.best->objective / x.paper->objective, 3, "");
    main.Add(row, "candidates simulated", static_cast<double>(x.e.evaluate.size()), 0,
             std::to_string(x.e.combinations) + " combinations, " + std::to_string(x.e.pruned.size()) +
                 " ruled out by the memory bound");
    main.Add(row, "simulation time of the search (s, one core)", x.run_seconds, 1, "");
    // The search's check: a paper's layout that fits is a candidate the best cannot be slower than. One that
    // does not fit (in mmtwin's memory model) is no candidate the search may pick.
    const bool slower = TuneBetter(TuneObjective::kGpuDays, x.paper->objective, x.best->objective);
    if (x.paper_rank > 0) no_slower = no_slower && !slower;
    all_fit = all_fit && x.paper_rank > 0;
    verdicts += "- " + row + ": ";
    if (x.paper_rank == 1)
      verdicts += "the paper's layout is the tuner's best";
    else if (x.paper_rank > 0)
      verdicts += "the tuner's best is " + Fixed(100 * (1 - x.best->objective / x.paper->objective), 1) +
                  "% fewer GPU-days than the paper's layout (rank " + std::to_string(x.paper_rank) + " of " +
                  std::to_string(x.r.ranked.size()) + " that fit)";
    else
      verdicts += "the paper's layout does not fit in mmtwin's memory model (planned peak " +
                  Fixed(static_cast<double>(x.paper->peak_memory_bytes) / kGiB, 1) + " GiB against " +
                  Fixed(static_cast<double>(x.paper->candidate->memory_limit_bytes) / kGiB, 1) +
                  " GiB allowed), so the search cannot pick it; the best that fits is " +
                  Fixed(100 * (x.best->objective / x.paper->objective - 1), 1) + "% " +
                  (slower ? "slower" : "faster") + " than mmtwin's prediction of it";
    verdicts += "\n";
    layouts += "- " + row + ": the paper's layout (" + Layout(x.space, *x.paper->candidate) + ") " +
               Split(x.paper->objective, x.paper->summary, x.paper->peak_memory_bytes) +
               (x.paper->fits ? "" : ", does not fit") + "; the tuner's best (" +
               Layout(x.space, *x.best->candidate) + ") " +
               Split(x.best->objective, x.best->summary, x.best->peak_memory_bytes) + "\n";
  }
  MMTWIN_RETURN_IF_ERROR(CheckPaperValuesShown(data.paper, {&main}));

  Bindings b;
  b.SetValue("header", Header(o, false));
  b.SetTable("main", &main);
  b.SetValue("layouts", layouts);
  b.SetFlag("no_slower", no_slower);
  b.SetFlag("all_fit", all_fit);
  b.SetValue("verdicts", verdicts);
  b.SetValue("iterations", o.reduced ? std::to_string(kReducedIterations) + " sampled iterations on " +
                                           std::to_string(kReducedSamples) + "-sample slices (reduced)"
                                     : "the iterations each space names");
  ChartSpec c;
  c.kind = ChartSpec::Kind::kBars;
  // The legend of the "(OOM)" mark only where a category carries it.
  c.title = std::string("Tuner's best against the paper's layout, GPU-days relative to it") +
            (all_fit ? "" : " (OOM: the paper's does not fit in mmtwin)");
  c.y_label = "GPU-days / the paper's layout's";
  c.value_decimals = 2;
  ChartSeries paper{"the paper's layout"}, best{"the tuner's best"};
  for (const Searched& x : searched) {
    c.categories.push_back(x.setting->chart + (x.paper_rank > 0 ? "" : " (OOM)"));
    paper.values.push_back(1.0);
    best.values.push_back(x.best->objective / x.paper->objective);
  }
  c.series = {paper, best};
  MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "best-vs-paper", c, files, b));
  // The Pareto front of each setting, objective against peak memory, relative to the paper's layout.
  ChartSpec f;
  f.kind = ChartSpec::Kind::kPoints;
  f.same_scale = false;
  f.title = "Pareto fronts: GPU-days (relative to the paper's layout) against peak memory";
  f.x_label = "peak memory per GPU, worst stage (GiB)";
  f.y_label = "GPU-days / the paper's layout's";
  f.value_decimals = -1;
  for (const Searched& x : searched) {
    ChartSeries s{x.setting->row};
    for (const TuneRow& p : x.r.pareto) {
      s.xs.push_back(static_cast<double>(p.peak_memory_bytes) / kGiB);
      s.values.push_back(p.objective / x.paper->objective);
    }
    f.series.push_back(std::move(s));
  }
  MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "pareto", f, files, b));
  MMTWIN_ASSIGN_OR_RETURN(std::string md, Render(data.tmpl, b));
  files.insert(files.begin(), {"README.md", std::move(md)});
  return Status();
}

}  // namespace mmtwin::report::internal

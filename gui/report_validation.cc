// SPDX-License-Identifier: Apache-2.0
// The validation report (`mmtwin-report validation`): every suite of scenarios/validation/ run through the same
// driver as `mmtwin validate` (calibrate/validate_suite.h) with its kept runs reused, and the index README
// over them: a summary table computed from the suites' results and a headline chart.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <unistd.h>

#include "chart.h"
#include "calibrate/validate_suite.h"
#include "core/util/csv.h"
#include "report_internal.h"

namespace mmtwin::gui::internal {
namespace {

namespace fs = std::filesystem;

// Where the kept runs were measured (the CI machine): the suites' README names it when every run was reused.
constexpr const char* kKeptRunsMachine = "2 vCPU AMD EPYC (KVM), 24 GiB, Debian 12";

std::string Pct(double v, int decimals = 1) { return Fixed(100 * v, decimals) + "%"; }
std::string SignedPct(double v) { return (v >= 0 ? "+" : "−") + Fixed(100 * std::abs(v), 1) + "%"; }

// What the index says about one suite, all from its ValidationReport.
struct SuiteResult {
  std::string name;
  SuiteValidation v;
  ValidationHeadline h;
};

std::string Ranks(const ValidationReport& r) {
  std::set<int> ranks;
  for (const auto* list : {&r.calibration_runs, &r.held_out})
    for (const ScenarioValidation& v : *list) ranks.insert(v.measured.parallel.world_size());
  std::string s;
  for (const int n : ranks) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s;
}

std::string Models(const ValidationReport& r) {
  std::set<std::string> models;
  for (const auto* list : {&r.calibration_runs, &r.held_out})
    for (const ScenarioValidation& v : *list) models.insert(v.measured.model);
  std::string s;
  for (const std::string& m : models) s += (s.empty() ? "" : ", ") + m;
  return s;
}

// Mean over the held-out scenarios of the p50 iteration time in s: measured, analytic or calibrated.
double MeanP50(const ValidationReport& r, int which) {
  if (r.held_out.empty()) return kNaN;
  double sum = 0;
  for (const ScenarioValidation& v : r.held_out)
    sum += (which == 0 ? v.measured : which == 1 ? v.analytic : v.calibrated).iteration_time_us.p50;
  return sum / static_cast<double>(r.held_out.size()) / 1e6;
}

// The held-out scenario with the largest calibrated p50 error, as "−6.5%, isf".
std::string WorstCalibrated(const ValidationReport& r) {
  const ScenarioValidation* worst = nullptr;
  double err = 0;
  for (const ScenarioValidation& v : r.held_out) {
    const double m = v.measured.iteration_time_us.p50;
    const double e = (v.calibrated.iteration_time_us.p50 - m) / m;
    if (!worst || std::abs(e) > std::abs(err)) {
      worst = &v;
      err = e;
    }
  }
  return worst ? SignedPct(err) + ", " + worst->name : "–";
}

// Whether the analytic model predicts a longer p50 than measured on every held-out scenario.
bool AnalyticSlowOnAll(const ValidationReport& r) {
  for (const ScenarioValidation& v : r.held_out)
    if (v.analytic.iteration_time_us.p50 <= v.measured.iteration_time_us.p50) return false;
  return !r.held_out.empty();
}

std::string MemoryModel(const ValidationReport& r) {
  const LinearFit& f = r.memory.fit;
  if (f.coefficients.size() != 3) return "–";
  return "`" + Fixed(f.coefficients[0], 3) + " × states + " + Fixed(f.coefficients[1], 3) +
         " × activations + " + Fixed(f.coefficients[2] / 1048576.0, 1) + " MiB`";
}

std::string SummaryTable(const std::vector<SuiteResult>& suites) {
  std::string md =
      "| suite | model (shrunk for CPUs) | ranks | held out | iteration p50 MAPE, analytic → calibrated | "
      "worst "
      "stage busy / bubble error (points) | worst stage peak memory error | report |\n"
      "|---|---|---:|---:|---|---|---:|---|\n";
  for (const SuiteResult& s : suites)
    md += "| `" + s.name + "` | " + Models(s.v.report) + " | " + Ranks(s.v.report) + " | " +
          std::to_string(s.v.report.held_out.size()) + " | " + Pct(s.h.mape_analytic) + " → " +
          Pct(s.h.mape_calibrated) + " | " + Fixed(100 * s.h.worst_busy, 1) + " / " +
          Fixed(100 * s.h.worst_bubble, 1) + " | " + Pct(s.h.worst_peak_memory) + " | [" + s.name + "](" +
          s.name + "/README.md) |\n";
  return md + "\n";
}

Result<std::string> HeadlineChart(const std::vector<SuiteResult>& suites) {
  ChartSpec c;
  c.title = "Iteration time p50, mean over each suite's held-out scenarios: measured vs predicted";
  c.y_label = "iteration time p50 (s)";
  c.x_label = "validation suite (held-out scenarios, never fitted on)";
  c.value_decimals = 2;
  std::vector<double> measured, analytic, calibrated;
  for (const SuiteResult& s : suites) {
    c.categories.push_back(s.name);
    measured.push_back(MeanP50(s.v.report, 0));
    analytic.push_back(MeanP50(s.v.report, 1));
    calibrated.push_back(MeanP50(s.v.report, 2));
  }
  c.series = {{"measured (mmtwin-train)", measured},
              {"analytic prediction", analytic},
              {"calibrated prediction", calibrated}};
  return RenderChartPng(c, kPlotWidthPx, kPlotHeightPx);
}

const SuiteResult* SuiteOf(const std::vector<SuiteResult>& suites, const std::string& name) {
  for (const SuiteResult& s : suites)
    if (s.name == name) return &s;
  return nullptr;
}

// The explanatory prose (hand-written about the kept runs; the figures in it are the suites' results).
std::string Prose(const std::vector<SuiteResult>& suites) {
  const SuiteResult* ws2 = SuiteOf(suites, "cpu-ws2");
  const SuiteResult* ws4 = SuiteOf(suites, "cpu-ws4");
  const SuiteResult* audio = SuiteOf(suites, "cpu-audio");
  std::string md = "## What the figures say\n\n";
  if (ws2)
    md +=
        "- **World size 2 (`cpu-ws2`) — the twin's figure.** The analytic model (FLOPs at half the core's "
        "AVX2 peak) is " +
        std::string(AnalyticSlowOnAll(ws2->v.report) ? "slow on every scenario" : "off") + " (MAPE " +
        Pct(ws2->h.mape_analytic) +
        "); fitted on three profiling runs (PP2 batches of 2 and 4, DP2 batches of 1), the calibrated model "
        "predicts " +
        std::to_string(ws2->v.report.held_out.size()) +
        " held-out scenarios — GPipe, full recompute, DP2, 8 micro-batches, OmniBal ISF data, the BMP "
        "partition, interleaved VPP2 and ZeRO-1 — within " +
        Pct(ws2->h.mape_calibrated) + " MAPE (worst " + WorstCalibrated(ws2->v.report) + ")" +
        (ws2->h.calibrated_beats_analytic ? " and beats the analytic model on every one" : "") +
        ". Per-stage busy and bubble fractions are within " +
        Fixed(100 * std::max(ws2->h.worst_busy, ws2->h.worst_bubble), 1) +
        " points everywhere, and peak memory within " + Pct(ws2->h.worst_peak_memory) +
        " on every stage (the worst is a small stage, where the fitted fixed term is a large part of the "
        "figure).\n";
  if (ws4)
    md +=
        "- **World size 4 (`cpu-ws4`): oversubscription, stated.** Four single-threaded ranks on two cores "
        "compute at a speed that depends on how many ranks compute at the same moment (all four in DP4: "
        "about half speed; one or two in a PP4 warm-up: full speed). The simulator gives each rank its own "
        "device and calibration fits one time per layer type, so the error follows each scenario's "
        "concurrency (MAPE " +
        Pct(ws4->h.mape_analytic) + " analytic, " + Pct(ws4->h.mape_calibrated) + " calibrated; worst " +
        WorstCalibrated(ws4->v.report) + ")" +
        (ws4->h.calibrated_beats_analytic ? "" : ", and calibration does not beat the analytic model there") +
        " (the suite's notes explain this in its report). This is a property of the test machine, not of the "
        "cost model; on a machine with a core (or a GPU) per rank the world-size-2 figures are the relevant "
        "ones.\n";
  if (audio)
    md +=
        "- **Audio encoder (`cpu-audio`).** Fitted on four runs (PP2 batches of 2 and 4, DP2 batches of 1 "
        "and 6), the calibrated model predicts GPipe, DP2 and OrchMLLM's own policies — post-balance and the "
        "orchestrator, with their real all-to-all dispatch — within " +
        Pct(audio->h.mape_calibrated) + " MAPE (worst " + WorstCalibrated(audio->v.report) +
        "); per-stage splits within " + Fixed(100 * std::max(audio->h.worst_busy, audio->h.worst_bubble), 1) +
        " points, peak memory within " + Pct(audio->h.worst_peak_memory) +
        ". The balanced policies are the worst: their per-phase balancing is what no calibration run "
        "exercises. Their all-to-alls block the compute and are counted as exposed communication in the "
        "measured records as in the simulated ones. Run-to-run variation is several percent here: the same "
        "orchestrator plan measured 9.78 s and 9.12 s p50 an hour apart (2026-11-25). Two backend fixes came "
        "from this suite: padded plans pad audio as the simulator prices it (before, the calibrated model "
        "was "
        "14–16% fast on the balanced policies), and oneDNN convolutions are off (they returned garbage "
        "conv1d "
        "gradients in the audio front end).\n";
  md += "\n## How memory is predicted\n\n";
  md +=
      "The backend counts every allocation (a counting CPU allocator) and records, per layer, the bytes its "
      "forward left allocated and its output's bytes (layers it did not recompute), and the most its "
      "backward "
      "allocated above what was live when it started (every layer: its working memory; `layers.csv` v3). "
      "`mmtwin calibrate` fits all three per layer type; the profile's memory columns replace the analytic "
      "(Korthikanti, bf16) activation bytes and add the working memory the analytic model leaves out. The "
      "simulator's memory walk (per schedule) then plays each chunk's backward layer by layer "
      "(`BackwardTransient`, core/plan/plan.h): a layer's saved activations are freed once its backward is "
      "done, a checkpointed unit is rematerialized just before its own backward, and each layer's working "
      "memory comes on top of what is live at that moment. A three-term linear model fitted on the "
      "calibration runs' stages maps planned model states and peak activations to the measured peak (the "
      "backend keeps fp32 weights, gradients and Adam moments where the planner assumes mixed precision, and "
      "the runtime its own bytes):\n\n";
  for (const SuiteResult& s : suites) md += "- `" + s.name + "`: " + MemoryModel(s.v.report) + "\n";
  md +=
      "\nAn activations' coefficient near 1 says the walk accounts for what the backward holds (before the "
      "walk played the backward layer by layer it was 1.094 and absorbed the backward's working memory in a "
      "fixed proportion, which does not hold when layers are recomputed or when the head's logits gradients "
      "dominate). The remaining error is the fixed term on the smallest stages.\n\n";
  return md;
}

// The index's hand-written parts about the runs and the links (measured once; mmtwin-report keeps them).
constexpr const char* kMachine =
    "Machine: 2 vCPU AMD EPYC (KVM), 24 GiB, Debian 12 (the CI machine), all measured 2026-11-25: the "
    "held-out "
    "runs of cpu-ws2 and cpu-ws4 at commit 8c6fde1 and of cpu-audio at 1d73c2a (the `isf` scenarios of "
    "cpu-ws2 "
    "and cpu-ws4 and cpu-audio's `orchestrator` and `post-balance` again in the afternoon, because this "
    "mmtwin "
    "plans or measures them differently: ISF's adaptive Q_t; the orchestrator's backward all-to-all; the "
    "dispatch counted as exposed communication in measured runs); every suite's calibration runs again in "
    "the "
    "evening at fc4f746, whose backend also measures each layer's backward working memory (`layers.csv` v3). "
    "Each scenario: 10 measured iterations after 1 warm-up, fp32, one thread per rank.\n\n";

constexpr const char* kLinks = R"(## Links

`mmtwin calibrate RUNDIR... -o PROFILE --cluster-out FILE [--links RUNDIR]` also fits the links
(calibrate/links.h): latency + bytes / bandwidth per link class, from a ping-pong run when given (`--links`),
else from the training runs' sends paired with their receives; the fastest tenth of the DP gradient collectives
give the ring all-reduce's bus bandwidth as a check. On this machine (loopback TCP through Gloo; measured once,
2026-11-25, not regenerated by `mmtwin-report`):

| input | transfers | latency | bandwidth | R² | DP ring bus bandwidth |
|---|---|---|---|---|---|
| ping-pong, 4 KiB–64 MiB ([links/pingpong](links/pingpong/pingpong.csv)) | 160 | 37.6 µs | 3.16 GB/s | 0.955 | – |
| the same, measured again a minute later | 160 | 34.2 µs | 3.11 GB/s | 0.953 | – |
| cpu-ws2's calibration runs (paired sends) | 100 | 1158 µs | 4.5 GB/s | ≈ 0 | 1.56 GB/s |
| cpu-audio's calibration runs (paired sends) | 100 | 309 µs | 0.66 GB/s | ≈ 0 | 1.11 GB/s |

The training runs' sends cannot pin latency and bandwidth apart: their messages span only about 0.7–1.6 MB, and
a transfer's end is seen by a receiver that may itself be descheduled on a shared 2-vCPU machine (R² ≈ 0; the two
suites' bandwidths differ 7×, and measuring cpu-ws2's calibration runs again moved its fit from 357 µs /
1.75 GB/s to the figures above). The ping-pong run spans four orders of magnitude of message size and times each
exchange on one clock: its fit is stable (two runs within 10% on latency, 2% on bandwidth), and its 3.1 GB/s
one-way bandwidth is twice the DP collectives' 1.1–1.6 GB/s bus bandwidth, which include the reduction and the
wait for the slower replica. Command:

```sh
build/backend/mmtwin-train launch --nproc 2 scenarios/validation/cpu-ws2/cal-dp2-b1.yaml \
    -o reports/validation/links/pingpong --pingpong
build/sim/mmtwin calibrate reports/validation/cpu-ws2/runs/cal-* -o /tmp/profile.csv \
    --cluster-out /tmp/cpu-calibrated.yaml --links reports/validation/links/pingpong
```

The validation above keeps the cluster preset's assumed loopback figures (2 GB/s, 30 µs; the ping-pong says
3.1 GB/s, 36 µs); on these runs the P2P time is well under 1% of the iteration (8–16 transfers of about 1 MB)
either way.

Not yet: the same suites on a GPU machine with NCCL (no GPU has been lent to this project's sessions).
)";

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

Status GenerateValidation(const ReportOptions& o, const std::string& scenarios,
                          std::vector<std::pair<std::string, std::string>>& files) {
  // The suites, in name order.
  std::vector<std::string> suite_files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(scenarios + "/validation", ec)) {
    const std::string f = e.path().filename().string();
    if (f.size() > 11 && f.substr(f.size() - 11) == ".suite.yaml") suite_files.push_back(e.path().string());
  }
  if (ec) return Error(scenarios + "/validation: " + ec.message());
  if (suite_files.empty()) return Error(scenarios + "/validation: no *.suite.yaml");
  std::sort(suite_files.begin(), suite_files.end());

  std::vector<SuiteResult> suites;
  int measured = 0, reused = 0;
  for (const std::string& file : suite_files) {
    MMTWIN_ASSIGN_OR_RETURN(ValidationSuite suite, LoadValidationSuite(file));
    ValidateSuiteOptions vo;
    vo.suite = file;
    vo.output = o.out_dir + "/" + suite.name;
    vo.runs = (o.runs_dir.empty() ? o.out_dir : o.runs_dir) + "/" + suite.name + "/runs";
    vo.reuse = true;
    vo.machine = kKeptRunsMachine;
    std::string pending;
    vo.progress = [&](const std::string& text) {
      pending += text;
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
        if (o.progress) o.progress(suite.name + " " + pending.substr(0, nl));
    };
    vo.command = o.command + "` — suite " + suite.name + ", alone: `mmtwin validate " + vo.suite + " -o " +
                 vo.output + " --runs " + vo.runs + " --reuse --machine " + ShellQuote(vo.machine);
    if (o.progress) o.progress("validation suite " + file);
    MMTWIN_ASSIGN_OR_RETURN(SuiteValidation v, ValidateSuite(vo));
    if (v.measured > 0) {  // the suite's README names where its runs were measured
      char host[256] = "";
      gethostname(host, sizeof host - 1);
      v.report.machine = std::string("this machine (") + host + ": " + std::to_string(v.measured) +
                         " runs measured again by mmtwin-report); the " + std::to_string(v.reused) +
                         " kept runs: " + kKeptRunsMachine;
      MMTWIN_RETURN_IF_ERROR(WriteFileAtomic(vo.output + "/README.md", ValidationMarkdown(v.report)));
    }
    measured += v.measured;
    reused += v.reused;
    suites.push_back({suite.name, std::move(v), {}});
    suites.back().h = Headline(suites.back().v.report);
  }

  std::string md = Header("Validation: predicted against measured, before and after calibration", o, false);
  md +=
      "How far mmtwin's predictions are from the real backend (`mmtwin-train`, LibTorch + c10d Gloo) on the "
      "machine that runs CI, on scenarios the calibration never saw. Every suite of `scenarios/validation/` "
      "is run by the driver behind `mmtwin validate` (calibrate/validate_suite.h) with its kept runs "
      "reused (" +
      std::to_string(reused) + " runs reused, " + std::to_string(measured) +
      " measured): the profile is fitted on the calibration runs only, each scenario simulated with the "
      "analytic model and with the profile, and the suite's own report written (per-scenario and per-stage "
      "tables, the fitted coefficients and two charts). Every figure below is computed from those "
      "results.\n\n";
  md += SummaryTable(suites);
  md += "![measured and predicted iteration time per suite](iteration.png)\n\n";
  const SuiteResult* ws4 = SuiteOf(suites, "cpu-ws4");
  md +=
      "The chart's means can agree while single scenarios do not (errors of opposite sign cancel in a mean: "
      "cpu-ws4's calibrated mean is close to the measured one at a MAPE of " +
      (ws4 ? Pct(ws4->h.mape_calibrated) : std::string("–")) +
      "); the table's MAPE and each suite's scatter plot (predicted against measured per scenario) are the "
      "figures to read.\n\n";
  md += kMachine;
  md += Prose(suites);
  md +=
      "## Commands\n\n"
      "The measured runs (summary.json, stages.csv, layers.csv, scenario.yaml and plan.json of each) are "
      "kept "
      "under each suite's `runs/`, so the reports regenerate from a clone without a backend:\n\n"
      "```sh\nbuild/gui/mmtwin-report validation     # or: build/gui/mmtwin-report all\n```\n\n"
      "A kept run is measured again when this mmtwin plans its scenario differently (as `mmtwin validate "
      "--reuse` does; the suite's README then names both machines); it needs `mmtwin-train` (built with "
      "LibTorch; found next to the executable, in the build tree's backend/, `$MMTWIN_TRAIN` or PATH). To "
      "measure a suite again from scratch (about 3, 4 and 8 minutes on the CI machine): `mmtwin validate "
      "scenarios/validation/SUITE.suite.yaml -o reports/validation/SUITE --runs /tmp/empty --machine TEXT`. "
      "Suite format and the scenarios: scenarios/validation/README.md.\n\n";
  md += kLinks;
  MMTWIN_ASSIGN_OR_RETURN(std::string chart, HeadlineChart(suites));
  std::vector<Png> pngs = {{"iteration.png", std::move(chart)}};
  AddReportFiles(std::move(md), pngs, files);
  return Status();
}

}  // namespace mmtwin::gui::internal

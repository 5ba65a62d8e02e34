// SPDX-License-Identifier: Apache-2.0
// Running a validation suite end to end (validate_suite.h).
#include "calibrate/validate_suite.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/records/plan_codec.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "core/util/interrupt.h"
#include "driver/planner.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A measured run can stand in for measuring `s` again when it measured the same scenario and, when the run kept
// its plan, the same plan this mmtwin builds for it now (a new mmtwin may plan the same scenario differently:
// another data policy default, another partition). `why` says why not.
bool Reusable(const std::string& dir, const Scenario& s, std::string* why) {
  auto run = ReadRunFolder(dir, {RunFile::kSummary, RunFile::kScenario});
  if (!run || run->summary->source != RecordSource::kMeasured) return false;
  auto ran = ScenarioOf(*run);
  if (!ran.ok() || FormatScenario(WithoutPricingKeys(*ran)) != FormatScenario(WithoutPricingKeys(s)))
    return false;
  auto kept = ReadRunFolder(dir, {}, {RunFile::kPlan});
  if (kept.ok() && !kept->plan) return true;  // older kept runs: the scenario decides
  auto now = BuildPlan(s, {});
  if (!kept.ok() || !now.ok()) {
    *why = "this mmtwin plans the scenario differently from the measured run";
    return false;
  }
  if (!SameRunPlan(*kept->plan, now->plan)) {
    *why = "this mmtwin plans the scenario differently from the measured run";
    return false;
  }
  return true;
}

// Rewrites the kept run's scenario with its file paths relative to the folder, and its plan's trace file likewise
// (the folder as a unit, its other files kept).
Status MakeRunPortable(const std::string& dir) {
  MMTWIN_ASSIGN_OR_RETURN(RunFolder run, ReadRunFolder(dir, {RunFile::kScenario}, {RunFile::kPlan}));
  MMTWIN_ASSIGN_OR_RETURN(Scenario ran, ScenarioOf(run));
  RunFolderWriter portable;
  portable.AddScenario(FormatScenario(WithPathsRelativeTo(std::move(ran), dir)));
  if (run.plan) {
    Plan& plan = *run.plan;
    std::error_code ec;
    if (fs::path(plan.trace.file).is_absolute())
      plan.trace.file = fs::path(plan.trace.file)
                            .lexically_normal()
                            .lexically_relative(fs::absolute(dir, ec))
                            .generic_string();
    portable.AddPlan(plan);
  }
  return portable.Write(dir);
}

struct Item {
  std::string path, rundir;
  Scenario scenario;
  bool held_out = false;
};

// The failure kind and its error, in one return.
Error Fail(ValidateFailure* failure, ValidateFailure kind, Error e) {
  if (failure) *failure = kind;
  return e;
}

// The suite's scenarios, calibration first; errors: a scenario that does not load, two with one name.
Result<std::vector<Item>> LoadItems(const ValidationSuite& suite, const std::string& runs) {
  std::vector<Item> items;
  std::set<std::string> names;
  for (int pass = 0; pass < 2; ++pass)
    for (const std::string& p : pass == 0 ? suite.calibration : suite.held_out) {
      MMTWIN_ASSIGN_OR_RETURN(Scenario s, LoadScenario(p));
      if (!names.insert(s.name).second)
        return Error(p + ": name: '" + s.name +
                     "' names another scenario of the suite too (each needs its own run folder)");
      items.push_back({p, runs + "/" + s.name, s, pass == 1});
    }
  return items;
}

// Measures every item not reused (see the header), counting both in `v`.
Status Measure(const ValidateSuiteOptions& o, const std::vector<Item>& items, const std::string& runs,
               SuiteValidation& v, ValidateFailure* failure) {
  auto say = [&](const std::string& text) {
    if (o.progress) o.progress(text);
  };
  if (!o.train.empty() && ::access(o.train.c_str(), X_OK) != 0)
    return Fail(failure, ValidateFailure::kBadInput,
                Error("--train: " + o.train + ": not an executable file"));
  const std::string train = FindTrain(o.train);
  const std::string logs = o.output + "/logs";
  std::error_code ec;
  fs::create_directories(logs, ec);
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    const int world = it.scenario.parallel.world_size();
    say("[" + std::to_string(i + 1) + "/" + std::to_string(items.size()) + "] " +
        (it.held_out ? "held-out " : "calibration ") + it.scenario.name + " (" + std::to_string(world) +
        (world == 1 ? " rank" : " ranks") + "): ");
    std::string why;
    if (o.reuse && Reusable(it.rundir, it.scenario, &why)) {
      say("reusing " + it.rundir + "\n");
      ++v.reused;
      continue;
    }
    if (!why.empty()) say(why + ": measuring again: ");
    if (train.empty()) {
      say("\n");
      return Fail(
          failure, ValidateFailure::kBadInput,
          Error("mmtwin-train not found (--train PATH, $MMTWIN_TRAIN, next to mmtwin, or on PATH); it is "
                "built when LibTorch is installed (backend/README.md)"));
    }
    const std::string log = logs + "/" + it.scenario.name + ".log";
    const auto t0 = std::chrono::steady_clock::now();
    // coreutils' timeout is the watchdog (exit 124 when it stopped the run); --foreground is not used, so the
    // run's whole process group gets the signal.
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.0f", std::max(1.0, o.run_timeout_s));
    const std::string cmd = std::string("timeout --kill-after=10 ") + limit + " " + ShellQuote(train) +
                            " launch --nproc " + std::to_string(world) + " " + ShellQuote(it.path) + " -o " +
                            ShellQuote(it.rundir) + " > " + ShellQuote(log) + " 2>&1";
    const int status = std::system(cmd.c_str());
    if (Interrupted())
      return Fail(failure, ValidateFailure::kInterrupted,
                  Error("interrupted; finished runs are kept in " + runs + " (--reuse picks them up)"));
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 124 || WEXITSTATUS(status) == 137)) {
      say("stopped\n");
      return Fail(failure, ValidateFailure::kBackend,
                  Error("the backend run of " + it.path + " did not finish within " + limit +
                        " s (--run-timeout) and was stopped (log " + log + ")"));
    }
    if (status != 0) {
      say("failed\n");
      auto text = ReadFile(log);
      std::string tail = text.ok() ? *text : "";
      if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
      return Fail(failure, ValidateFailure::kBackend,
                  Error("the backend run of " + it.path + " failed (log " + log + "):\n" + tail));
    }
    // The kept run names no machine's folders: its scenario's file paths relative to the run folder (LoadScenario
    // resolves them back), its plan's trace file likewise.
    if (Status st = MakeRunPortable(it.rundir); !st.ok())
      return Fail(failure, ValidateFailure::kBackend, st.error());
    ++v.measured;
    say(std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count()) +
        " s\n");
  }
  return Status();
}

// Fits on the calibration runs, simulates every scenario with both models, fits the memory terms.
Status Predict(const std::vector<Item>& items, const std::string& profile, ValidationReport& report) {
  std::vector<std::pair<RunSummary, RunSummary>> memory_pairs;
  for (const Item& it : items) {
    ScenarioValidation v;
    v.name = it.scenario.name;
    v.path = it.path;
    MMTWIN_ASSIGN_OR_RETURN(v.measured, LoadSummary(it.rundir));
    SimulateOptions so;
    so.cancel = InterruptFlag();
    Scenario analytic = it.scenario, calibrated = it.scenario;
    analytic.cost = "analytic";
    calibrated.cost = profile;
    auto ra = Simulate(analytic, so);
    auto rc = ra ? Simulate(calibrated, so) : ra;
    if (!ra || !rc) return (!ra ? ra : rc).error().Wrap("simulating " + it.path);
    v.analytic = ra->summary;
    v.calibrated = rc->summary;
    if (!it.held_out) {
      memory_pairs.push_back({v.measured, v.calibrated});
      report.calibration_runs.push_back(std::move(v));
    } else {
      report.held_out.push_back(std::move(v));
    }
  }
  MMTWIN_ASSIGN_OR_RETURN(report.memory, FitMemory(memory_pairs));
  for (auto* list : {&report.calibration_runs, &report.held_out})
    for (ScenarioValidation& v : *list)
      for (const StageRecord& st : v.calibrated.stages)
        v.calibrated_peak_bytes.push_back(report.memory.Predict(st));
  return Status();
}

}  // namespace

std::string FindTrain(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("MMTWIN_TRAIN"); env && *env) return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const fs::path& p :
         {self.parent_path() / "mmtwin-train", self.parent_path() / "../backend/mmtwin-train"})
      if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
  if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    size_t at = 0;
    while (at <= dirs.size()) {
      const size_t end = dirs.find(':', at);
      const std::string d = dirs.substr(at, end == std::string::npos ? std::string::npos : end - at);
      if (!d.empty() && ::access((fs::path(d) / "mmtwin-train").c_str(), X_OK) == 0)
        return d + "/mmtwin-train";
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return "";
}

// What the fit needs, checked before anything is measured (issue 34: a suite mixing models or TP degrees was
// measured for an hour, then refused): one TP degree over every scenario (a profile holds one degree's times),
// and every held-out scenario's layer types (component source, layer kind) among the calibration scenarios'
// (the profile has no coefficients for others).
Status CheckFitsOneProfile(const std::vector<Item>& items) {
  std::set<std::pair<std::string, int>> calibrated;
  const Item* first = nullptr;
  for (const Item& it : items) {
    if (!first) first = &it;
    if (it.scenario.parallel.tp != first->scenario.parallel.tp)
      return Error(it.path + ": parallel.tp: " + std::to_string(it.scenario.parallel.tp) + ", but " +
                   first->path + " has tp " + std::to_string(first->scenario.parallel.tp) +
                   "; a suite's profile holds the times of one TP degree (split the suite by tp)");
    MMTWIN_ASSIGN_OR_RETURN(ModelSpec m, LoadScenarioModel(it.scenario));
    for (const Layer& l : Layers(m)) {
      const std::pair<std::string, int> type{m.components[l.component].source, static_cast<int>(l.kind)};
      if (!it.held_out) {
        calibrated.insert(type);
      } else if (!calibrated.count(type)) {
        return Error(
            it.path + ": model: layer type '" + type.first + "," + LayerKindName(l.kind) + "' (layer " +
            l.label + " of " + m.name +
            ") is in no calibration scenario, so the fitted profile cannot price it; add a calibration "
            "scenario with this model or move this one out of the suite");
      }
    }
  }
  return Status();
}

Result<SuiteValidation> ValidateSuite(const ValidateSuiteOptions& o, ValidateFailure* failure) {
  if (failure) *failure = ValidateFailure::kBadInput;
  MMTWIN_ASSIGN_OR_RETURN(ValidationSuite suite, LoadValidationSuite(o.suite));
  const std::string runs = o.runs.empty() ? o.output + "/runs" : o.runs;
  MMTWIN_ASSIGN_OR_RETURN(std::vector<Item> items, LoadItems(suite, runs));
  MMTWIN_RETURN_IF_ERROR(CheckFitsOneProfile(items));

  SuiteValidation v;
  MMTWIN_RETURN_IF_ERROR(Measure(o, items, runs, v, failure));
  if (failure) *failure = ValidateFailure::kBadInput;

  // Fit on the calibration runs only.
  std::vector<std::string> cal_dirs;
  for (const Item& it : items)
    if (!it.held_out) cal_dirs.push_back(it.rundir);
  MMTWIN_ASSIGN_OR_RETURN(Calibration cal, Calibrate(cal_dirs));
  std::error_code ec;
  const std::string profile = fs::absolute(o.output + "/profile.csv", ec).string();
  if (Status st = WriteFileAtomic(profile, FormatProfile(cal)); !st.ok()) return st.error().Wrap("-o");

  ValidationReport& report = v.report;
  report.suite = suite;
  report.calibration = cal;
  report.machine = o.machine.empty() ? "(not given: --machine)" : o.machine;
  report.command = !o.command.empty()
                       ? o.command
                       : "mmtwin validate " + o.suite + " -o " + o.output +
                             (o.runs.empty() ? "" : " --runs " + o.runs) + (o.reuse ? " --reuse" : "") +
                             (o.machine.empty() ? "" : " --machine " + ShellQuote(o.machine));
  MMTWIN_RETURN_IF_ERROR(Predict(items, profile, report));

  if (Status st = WriteFileAtomic(o.output + "/validation.csv", ValidationCsv(report)); !st.ok())
    return st.error().Wrap("-o");
  if (failure) *failure = ValidateFailure::kNone;
  return v;
}

}  // namespace mmtwin

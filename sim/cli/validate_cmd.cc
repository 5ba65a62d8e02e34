// mmtwin validate SUITE.yaml -o OUTDIR [--runs DIR] [--train PATH] [--reuse] [--machine TEXT]: measure every
// scenario of a validation suite with the real backend (mmtwin-train launch, or reuse its run), fit the profile on
// the calibration runs only, simulate each held-out scenario with the analytic model and with the profile, and
// write the report (core/calibrate/validate.h): OUTDIR/README.md, validation.csv, scatter.svg, stages.svg,
// profile.csv. Exit 0, 1 when a backend run fails, 2 on bad input.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/calibrate/validate.h"
#include "core/driver/planner.h"
#include "core/driver/simulate.h"
#include "core/records/plan_codec.h"
#include "core/records/records_codec.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "core/util/interrupt.h"

namespace mmtwin::cli {
namespace {

namespace fs = std::filesystem;

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// --train, $MMTWIN_TRAIN, next to this executable (installed), the build tree's backend/, then PATH.
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

// A measured run of this scenario already in `dir`.
// A measured run can stand in for measuring `s` again when it measured the same scenario and, when the run kept
// its plan.json, the same plan this mmtwin builds for it now (a new mmtwin may plan the same scenario
// differently: another data policy default, another partition). `why` says why not.
bool Reusable(const std::string& dir, const Scenario& s, std::string* why) {
  auto summary = LoadSummary(dir);
  if (!summary || summary->source != RecordSource::kMeasured) return false;
  auto ran = LoadScenario(dir + "/scenario.yaml");
  if (!ran.ok() || FormatScenario(*ran) != FormatScenario(s)) return false;
  std::error_code ec;
  if (!fs::is_regular_file(dir + "/plan.json", ec)) return true;  // older kept runs: the scenario decides
  auto text = ReadFile(dir + "/plan.json");
  auto measured = text.ok() ? PlanFromJson(*text, dir + "/plan.json") : Result<Plan>(text.error());
  auto now = BuildPlan(s, {});
  if (!measured.ok() || !now.ok() ||
      !(measured->parallel == now->plan.parallel && measured->partition == now->plan.partition &&
        measured->recompute == now->plan.recompute && measured->schedule == now->plan.schedule &&
        measured->iterations == now->plan.iterations)) {
    *why = "this mmtwin plans the scenario differently from the measured run";
    return false;
  }
  return true;
}

Status MakeRunPortable(const std::string& dir) {
  MMTWIN_ASSIGN_OR_RETURN(Scenario ran, LoadScenario(dir + "/scenario.yaml"));
  MMTWIN_RETURN_IF_ERROR(
      WriteFileAtomic(dir + "/scenario.yaml", FormatScenario(WithPathsRelativeTo(std::move(ran), dir))));
  std::error_code ec;
  if (!fs::is_regular_file(dir + "/plan.json", ec)) return Status();
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(dir + "/plan.json"));
  MMTWIN_ASSIGN_OR_RETURN(Plan plan, PlanFromJson(text, dir + "/plan.json"));
  if (fs::path(plan.trace.file).is_absolute())
    plan.trace.file = fs::path(plan.trace.file)
                          .lexically_normal()
                          .lexically_relative(fs::absolute(dir, ec))
                          .generic_string();
  return WriteFileAtomic(dir + "/plan.json", PlanToJson(plan) + "\n");
}

struct Item {
  std::string path, rundir;
  Scenario scenario;
  bool held_out = false;
};

}  // namespace

int RunValidate(const ValidateArgs& a, std::ostream& out, std::ostream& err) {
  InstallInterruptHandlers();
  auto suite = LoadValidationSuite(a.suite);
  if (!suite) {
    err << "mmtwin validate: " << suite.error().message() << "\n";
    return 2;
  }
  const std::string runs = a.runs.empty() ? a.output + "/runs" : a.runs;
  std::vector<Item> items;
  std::set<std::string> names;
  for (int pass = 0; pass < 2; ++pass)
    for (const std::string& p : pass == 0 ? suite->calibration : suite->held_out) {
      auto s = LoadScenario(p);
      if (!s) {
        err << "mmtwin validate: " << s.error().message() << "\n";
        return 2;
      }
      if (!names.insert(s->name).second) {
        err << "mmtwin validate: " << p << ": name: '" << s->name
            << "' names another scenario of the suite too (each needs its own run folder)\n";
        return 2;
      }
      items.push_back({p, runs + "/" + s->name, *s, pass == 1});
    }

  // Measure.
  if (!a.train.empty() && ::access(a.train.c_str(), X_OK) != 0) {
    err << "mmtwin validate: --train: " << a.train << ": not an executable file\n";
    return 2;
  }
  const std::string train = FindTrain(a.train);
  const std::string logs = a.output + "/logs";
  std::error_code ec;
  fs::create_directories(logs, ec);
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    const int world = it.scenario.parallel.world_size();
    out << "[" << i + 1 << "/" << items.size() << "] " << (it.held_out ? "held-out " : "calibration ")
        << it.scenario.name << " (" << world << (world == 1 ? " rank" : " ranks") << "): ";
    std::string why;
    if (a.reuse && Reusable(it.rundir, it.scenario, &why)) {
      out << "reusing " << it.rundir << "\n";
      continue;
    }
    if (!why.empty()) out << why << ": measuring again: ";
    if (train.empty()) {
      out << "\n";
      err << "mmtwin validate: mmtwin-train not found (--train PATH, $MMTWIN_TRAIN, next to mmtwin, or on "
             "PATH); "
             "it is built when LibTorch is installed (backend/README.md)\n";
      return 2;
    }
    out.flush();
    const std::string log = logs + "/" + it.scenario.name + ".log";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string cmd = ShellQuote(train) + " launch --nproc " + std::to_string(world) + " " +
                            ShellQuote(it.path) + " -o " + ShellQuote(it.rundir) + " > " + ShellQuote(log) +
                            " 2>&1";
    const int status = std::system(cmd.c_str());
    if (Interrupted()) {
      err << "mmtwin validate: interrupted; finished runs are kept in " << runs
          << " (--reuse picks them up)\n";
      return 128 + InterruptSignal();
    }
    if (status != 0) {
      out << "failed\n";
      auto text = ReadFile(log);
      std::string tail = text.ok() ? *text : "";
      if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
      err << "mmtwin validate: the backend run of " << it.path << " failed (log " << log << "):\n" << tail;
      return 1;
    }
    // The kept run names no machine's folders: its scenario's file paths relative to the run folder (LoadScenario
    // resolves them back), its plan's trace file likewise, so a run folder committed to a repository reads the
    // same in any checkout.
    if (Status st = MakeRunPortable(it.rundir); !st.ok()) {
      err << "mmtwin validate: " << st.error().message() << "\n";
      return 1;
    }
    out << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count()
        << " s\n";
  }

  // Fit on the calibration runs only.
  std::vector<std::string> cal_dirs;
  for (const Item& it : items)
    if (!it.held_out) cal_dirs.push_back(it.rundir);
  auto cal = Calibrate(cal_dirs);
  if (!cal) {
    err << "mmtwin validate: " << cal.error().message() << "\n";
    return 2;
  }
  const std::string profile = fs::absolute(a.output + "/profile.csv", ec).string();
  if (Status st = WriteFileAtomic(profile, FormatProfile(*cal)); !st.ok()) {
    err << "mmtwin validate: -o: " << st.error().message() << "\n";
    return 2;
  }

  // Predict.
  ValidationReport report;
  report.suite = *suite;
  report.calibration = *cal;
  report.machine = a.machine.empty() ? "(not given: --machine)" : a.machine;
  report.command = "mmtwin validate " + a.suite + " -o " + a.output +
                   (a.runs.empty() ? "" : " --runs " + a.runs) + (a.reuse ? " --reuse" : "") +
                   (a.machine.empty() ? "" : " --machine " + ShellQuote(a.machine));
  std::vector<std::pair<RunSummary, RunSummary>> memory_pairs;
  for (const Item& it : items) {
    ScenarioValidation v;
    v.name = it.scenario.name;
    v.path = it.path;
    auto measured = LoadSummary(it.rundir);
    if (!measured) {
      err << "mmtwin validate: " << measured.error().message() << "\n";
      return 2;
    }
    v.measured = *measured;
    SimulateOptions so;
    so.cancel = InterruptFlag();
    Scenario analytic = it.scenario, calibrated = it.scenario;
    analytic.cost = "analytic";
    calibrated.cost = profile;
    auto ra = Simulate(analytic, so);
    auto rc = ra ? Simulate(calibrated, so) : ra;
    if (!ra || !rc) {
      err << "mmtwin validate: simulating " << it.path << ": " << (!ra ? ra : rc).error().message() << "\n";
      return 2;
    }
    v.analytic = ra->summary;
    v.calibrated = rc->summary;
    if (!it.held_out) {
      memory_pairs.push_back({v.measured, v.calibrated});
      report.calibration_runs.push_back(std::move(v));
    } else {
      report.held_out.push_back(std::move(v));
    }
  }
  auto memory = FitMemory(memory_pairs);
  if (!memory) {
    err << "mmtwin validate: " << memory.error().message() << "\n";
    return 2;
  }
  report.memory = *memory;
  for (auto* list : {&report.calibration_runs, &report.held_out})
    for (ScenarioValidation& v : *list)
      for (const StageRecord& st : v.calibrated.stages)
        v.calibrated_peak_bytes.push_back(report.memory.Predict(st));

  // Report.
  for (const auto& [name, text] :
       std::vector<std::pair<std::string, std::string>>{{"README.md", ValidationMarkdown(report)},
                                                        {"validation.csv", ValidationCsv(report)},
                                                        {"scatter.svg", ScatterSvg(report)},
                                                        {"stages.svg", StageBarsSvg(report)}})
    if (Status st = WriteFileAtomic(a.output + "/" + name, text); !st.ok()) {
      err << "mmtwin validate: -o: " << st.error().message() << "\n";
      return 2;
    }
  out << "iteration time p50, MAPE over " << report.held_out.size() << " held-out scenarios: analytic "
      << 100 * IterationMape(report, false) << "%, calibrated " << 100 * IterationMape(report, true) << "%\n"
      << "wrote " << a.output << "/README.md (and validation.csv, scatter.svg, stages.svg, profile.csv)\n";
  return 0;
}

}  // namespace mmtwin::cli

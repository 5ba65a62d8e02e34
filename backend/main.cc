// SPDX-License-Identifier: Apache-2.0
// mmtwin-train: the real backend (backend/README.md). Commands:
//   mmtwin-train launch --nproc N SCENARIO -o RUNDIR   start N local ranks (like torchrun --standalone)
//   mmtwin-train launch --nproc N SCENARIO -o RUNDIR --pingpong   time P2P round trips (link calibration)
//   mmtwin-train run SCENARIO -o RUNDIR                one rank, rendezvous from torchrun / srun variables
//   mmtwin-train reference SCENARIO -o DIR             the single-process reference gradients (tests)
// Exit codes: 0 ok, 2 bad input (file:line: field, or the option), 3 a peer failed or timed out, 1 other.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "backend/launch.h"
#include "backend/train.h"
#include "core/util/version.h"

namespace {

struct RankFlags {
  std::string dump_grads;
  int iterations = 0;
  bool no_measure = false;
  int die_rank = -1, die_iteration = -1, hang_rank = -1;
  bool pingpong = false;
  int pingpong_reps = 20;

  void Add(CLI::App* app) {
    app->add_flag(
        "--pingpong", pingpong,
        "link calibration instead of training: rank 0 times round trips with every other rank over "
        "message sizes 4 KiB .. 64 MiB and writes RUNDIR/pingpong.csv (for mmtwin calibrate --links)");
    app->add_option("--pingpong-reps", pingpong_reps, "timed round trips per message size and peer (20)")
        ->check(CLI::Range(1, 100000));
    app->add_option("--dump-grads", dump_grads,
                    "write each rank's gradients and loss of the first iteration to DIR/grads.rankR.bin");
    app->add_option("--iterations", iterations, "measured iterations (default: the plan's replayed ones)")
        ->check(CLI::Range(0, 1000000));
    app->add_flag("--no-measure", no_measure, "do not time ops (benchmarks: measurement off)");
    app->add_option("--die-rank", die_rank, "fault injection: this rank kills itself ...")->group("Testing");
    app->add_option("--die-iteration", die_iteration, "... at the start of this measured iteration")
        ->group("Testing");
    app->add_option("--hang-rank", hang_rank, "fault injection: this rank hangs at --die-iteration")
        ->group("Testing");
  }
  std::vector<std::string> Args() const {
    std::vector<std::string> a;
    if (!dump_grads.empty()) a.insert(a.end(), {"--dump-grads", dump_grads});
    if (iterations > 0) a.insert(a.end(), {"--iterations", std::to_string(iterations)});
    if (no_measure) a.push_back("--no-measure");
    if (die_rank >= 0) a.insert(a.end(), {"--die-rank", std::to_string(die_rank)});
    if (die_iteration >= 0) a.insert(a.end(), {"--die-iteration", std::to_string(die_iteration)});
    if (hang_rank >= 0) a.insert(a.end(), {"--hang-rank", std::to_string(hang_rank)});
    if (pingpong) a.insert(a.end(), {"--pingpong", "--pingpong-reps", std::to_string(pingpong_reps)});
    return a;
  }
  mmtwin::backend::TrainOptions Options(const std::string& scenario, const std::string& rundir) const {
    mmtwin::backend::TrainOptions o;
    o.scenario = scenario;
    o.rundir = rundir;
    o.dump_grads = dump_grads;
    o.iterations = iterations;
    o.measure = !no_measure;
    o.die_rank = die_rank;
    o.die_iteration = die_iteration;
    o.hang_rank = hang_rank;
    o.pingpong = pingpong;
    o.pingpong_reps = pingpong_reps;
    return o;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("mmtwin-train: run a scenario's plan on real processes (LibTorch + c10d) and measure it",
               "mmtwin-train");
  app.require_subcommand(1);
  app.set_version_flag("--version", mmtwin::VersionLine("mmtwin-train"),
                       "print the version and the commit it was built from");
  if (argc == 2 && std::string(argv[1]) == "--version") {  // no subcommand needed
    std::cout << mmtwin::VersionLine("mmtwin-train") << "\n";
    return 0;
  }
  std::string scenario, rundir = "runs/real";
  int nproc = 0;
  RankFlags flags;

  CLI::App* launch = app.add_subcommand("launch", "start N local ranks (like torchrun --standalone)");
  launch->add_option("--nproc", nproc, "ranks to start (= dp * tp * pp of the scenario)")
      ->required()
      ->check(CLI::Range(1, 4096));
  launch->add_option("scenario", scenario, "scenario file")->required();
  launch->add_option("-o,--output", rundir, "run folder for the measured records")->capture_default_str();
  flags.Add(launch);

  CLI::App* run =
      app.add_subcommand("run", "one rank: RANK/WORLD_SIZE/MASTER_* (torchrun) or SLURM_* (srun)");
  run->add_option("scenario", scenario, "scenario file")->required();
  run->add_option("-o,--output", rundir, "run folder (written by rank 0)")->capture_default_str();
  flags.Add(run);

  CLI::App* ref =
      app.add_subcommand("reference", "single-process reference gradients of the first iteration");
  ref->add_option("scenario", scenario, "scenario file")->required();
  ref->add_option("-o,--output", rundir, "folder for grads.ref.bin")->required();
  bool force_packed = false;
  ref->add_flag(
      "--packed", force_packed,
      "tests: pack the micro-batches even when the plan pads them (padding must not change gradients)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "mmtwin-train: " << e.what() << "\n"
              << "usage: mmtwin-train launch --nproc N SCENARIO -o RUNDIR (see --help)\n";
    return 2;
  }
  try {
    if (launch->parsed()) {
      mmtwin::backend::LaunchOptions o;
      o.nproc = nproc;
      o.scenario = scenario;
      o.rundir = rundir;
      o.rank_args = flags.Args();
      return mmtwin::backend::Launch(o, "/proc/self/exe", std::cout, std::cerr);
    }
    if (ref->parsed())
      return mmtwin::backend::RunReference(scenario, rundir, std::cout, std::cerr, force_packed);
    auto rv = mmtwin::backend::RendezvousFromEnv();
    if (!rv) {
      std::cerr << "mmtwin-train: " << rv.error().message() << "\n";
      return 2;
    }
    return mmtwin::backend::RunRank(flags.Options(scenario, rundir), *rv, std::cout, std::cerr);
  } catch (const std::bad_alloc&) {
    std::cerr << "mmtwin-train: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "mmtwin-train: internal error: " << e.what() << "\n";
  }
  return 1;
}

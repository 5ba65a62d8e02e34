// SPDX-License-Identifier: Apache-2.0
// mmtwin-report NAME|all [-o DIR] [--reduced] [--db FILE] [--scenarios DIR] [--runs DIR] [--jobs N]: regenerates a
// reproduction report (report/report.h) with its pictures drawn by the Qt plotter (report.h). Plots are drawn
// offscreen (QT_QPA_PLATFORM defaults to offscreen here). Exit codes: 0 written; 1 a run or the writing failed; 2 bad
// input, checked before anything runs (unknown report, bad option, unwritable folder, a broken paper.yaml /
// runs.yaml / template.md, a --runs folder that does not exist: report.h CheckReportInputs).
#include <QApplication>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "core/util/version.h"
#include "report.h"
#include "report/report.h"

namespace {

int Usage(std::ostream& os, int code) {
  std::string names;
  for (const std::string& n : mmtwin::report::ReportNames()) names += (names.empty() ? "" : ", ") + n;
  os << "usage: mmtwin-report NAME [-o DIR] [--reduced] [--db FILE] [--scenarios DIR] [--runs DIR] [--jobs "
        "N]\n"
        "       mmtwin-report --version\n"
        "  NAME             the report: "
     << names
     << "\n"
        "  -o DIR           output folder (default reports/NAME), written as a unit: README.md and PNG "
        "plots\n"
        "                   (validation: the index beside each suite's folder and its kept runs, reused)\n"
        "  --reduced        every run on a small slice of its trace, 2 iterations (tests)\n"
        "  --db FILE        results database reused between runs (default "
        "runs/reports/NAME[-reduced].sqlite)\n"
        "  --scenarios DIR  the scenarios folder (default ./scenarios, else the source tree's)\n"
        "  --runs DIR       validation: the folder holding SUITE/runs/, the kept backend runs (default: "
        "-o's)\n"
        "  --jobs N         sweep worker processes (default 2)\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::string command = "mmtwin-report";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  mmtwin::report::ReportOptions o;
  o.command = command;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= argc) return false;
      into = argv[++i];
      return true;
    };
    if (a == "-h" || a == "--help") return Usage(std::cout, 0);
    if (a == "--version") {
      std::cout << mmtwin::VersionLine("mmtwin-report") << "\n";
      return 0;
    }
    if (a == "-o" || a == "--out") {
      if (!value(o.out_dir)) return Usage(std::cerr, 2);
    } else if (a == "--db") {
      if (!value(o.db_path)) return Usage(std::cerr, 2);
    } else if (a == "--runs") {
      if (!value(o.runs_dir)) return Usage(std::cerr, 2);
    } else if (a == "--scenarios") {
      if (!value(o.scenarios_dir)) return Usage(std::cerr, 2);
    } else if (a == "--jobs") {
      std::string n;
      if (!value(n)) return Usage(std::cerr, 2);
      char* end = nullptr;
      const long j = std::strtol(n.c_str(), &end, 10);
      if (end == n.c_str() || *end || j < 1 || j > 256) {
        std::cerr << "mmtwin-report: --jobs: '" << n << "' is not an integer in [1, 256]\n";
        return 2;
      }
      o.jobs = static_cast<int>(j);
    } else if (a == "--reduced") {
      o.reduced = true;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "mmtwin-report: unknown option " << a << "\n";
      return Usage(std::cerr, 2);
    } else if (o.name.empty()) {
      o.name = a;
    } else {
      std::cerr << "mmtwin-report: more than one report name (" << o.name << ", " << a << ")\n";
      return 2;
    }
  }
  if (o.name.empty()) return Usage(std::cerr, 2);
  // `all`: every report into reports/NAME (from the repository root), one after the other.
  std::vector<std::string> names = {o.name};
  if (o.name == "all") {
    if (!o.out_dir.empty()) {
      std::cerr << "mmtwin-report: all writes reports/NAME for each report; -o is for one report\n";
      return 2;
    }
    if (!o.db_path.empty()) {
      std::cerr << "mmtwin-report: all uses one database per report; --db is for one report\n";
      return 2;
    }
    names = mmtwin::report::ReportNames();
  }
  // Every name and output folder is checked before anything runs.
  std::vector<mmtwin::report::ReportOptions> jobs;
  for (const std::string& name : names) {
    mmtwin::report::ReportOptions one = o;
    one.name = name;
    bool known = false;
    std::string valid;
    for (const std::string& n : mmtwin::report::ReportNames()) {
      known = known || n == name;
      valid += (valid.empty() ? "" : ", ") + n;
    }
    if (!known) {
      std::cerr << "mmtwin-report: unknown report '" << name << "'; valid reports are: " << valid
                << ", all\n";
      return 2;
    }
    if (one.out_dir.empty()) one.out_dir = "reports/" + name;
    if (const mmtwin::Status st = mmtwin::report::CheckReportInputs(one); !st.ok()) {
      std::cerr << "mmtwin-report: " << st.error().message() << "\n";
      return 2;
    }
    one.progress = [](const std::string& line) { std::cerr << line << "\n" << std::flush; };
    jobs.push_back(std::move(one));
  }
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);
  mmtwin::gui::QtPlotter plotter;
  for (const mmtwin::report::ReportOptions& one : jobs) {
    const mmtwin::Status st = mmtwin::report::GenerateReport(one, plotter);
    if (!st.ok()) {
      std::cerr << "mmtwin-report: " << one.name << ": " << st.error().message() << "\n";
      return 1;
    }
  }
  return 0;
}

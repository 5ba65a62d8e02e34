// SPDX-License-Identifier: Apache-2.0
// mmtwin calibrate RUNDIR... -o PROFILE [--min-samples N] [--cluster-out FILE [--links RUNDIR]...]: fit the per-layer time and memory
// model to measured runs (calibrate/calibrate.h) and write the profile a scenario's `cost:` or
// `mmtwin simulate --cost` reads; with --cluster-out also fit the links (calibrate/links.h) and write the
// runs' cluster with the fitted figures (from the RUNDIRs' ops.csv and the --links folders, such as ping-pong
// runs). Exit 0, or 2 on bad input.
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "calibrate/calibrate.h"
#include "calibrate/links.h"
#include "cli/commands.h"
#include "core/util/csv.h"

namespace mmtwin::cli {

int RunCalibrate(const CalibrateArgs& a, std::ostream& out, std::ostream& err) {
  CalibrationOptions options;
  if (a.min_samples_given) {
    int64_t n = 0;
    if (!ParseInt64(a.min_samples, n) || n < 3 || n > 1000000000) {
      err << "mmtwin calibrate: --min-samples: '" << a.min_samples << "' is not an integer in [3, 1e9]\n";
      return 2;
    }
    options.min_samples = n;
  }
  auto cal = Calibrate(a.runs, options);
  if (!cal) {
    err << "mmtwin calibrate: " << cal.error().message() << "\n";
    return 2;
  }
  for (const std::string& w : cal->warnings) err << "mmtwin calibrate: warning: " << w << "\n";
  if (!a.link_runs.empty() && a.cluster_out.empty()) {
    err << "mmtwin calibrate: --links: needs --cluster-out FILE (where the fitted links go)\n";
    return 2;
  }
  // Links first: a bad --cluster-out input must not leave a profile written halfway through the command.
  std::string cluster_yaml;
  std::string link_table;
  if (!a.cluster_out.empty()) {
    std::vector<std::string> link_runs = a.runs;
    link_runs.insert(link_runs.end(), a.link_runs.begin(), a.link_runs.end());
    auto links = CalibrateLinks(link_runs, options.min_samples);
    if (!links) {
      err << "mmtwin calibrate: --cluster-out: " << links.error().message() << "\n";
      return 2;
    }
    auto base = LoadCluster(links->cluster);
    if (!base) {
      err << "mmtwin calibrate: --cluster-out: " << base.error().message() << "\n";
      return 2;
    }
    cluster_yaml = FormatCalibratedCluster(*base, *links);
    link_table = FormatLinkTable(*links);
  }
  if (Status st = WriteFileAtomic(a.output, FormatProfile(*cal)); !st.ok()) {
    err << "mmtwin calibrate: -o: " << st.error().message() << "\n";
    return 2;
  }
  if (!a.json) {
    out << FormatCalibrationTable(*cal);
    out << "wrote " << a.output << " (" << cal->fits.size() << " layer types, tp " << cal->tp << ", from "
        << a.runs.size() << (a.runs.size() == 1 ? " run" : " runs") << ")\n";
  }
  if (!a.cluster_out.empty()) {
    if (Status st = WriteFileAtomic(a.cluster_out, cluster_yaml); !st.ok()) {
      err << "mmtwin calibrate: --cluster-out: " << st.error().message() << "\n";
      return 2;
    }
    if (!a.json) out << link_table << "wrote " << a.cluster_out << "\n";
  }
  if (a.json) {
    nlohmann::json j = nlohmann::json::parse(CalibrationJson(*cal));
    j["output"] = a.output;
    if (!a.cluster_out.empty()) j["cluster_out"] = a.cluster_out;
    out << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace mmtwin::cli

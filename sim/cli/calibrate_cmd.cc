// mmtwin calibrate RUNDIR... -o PROFILE [--min-samples N]: fit the per-layer time model to measured runs
// (core/calibrate/calibrate.h) and write the profile a scenario's `cost:` or `mmtwin simulate --cost` reads.
// Exit 0, or 2 on bad input.
#include <ostream>
#include <string>

#include "cli/commands.h"
#include "core/calibrate/calibrate.h"
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
  if (Status st = WriteFileAtomic(a.output, FormatProfile(*cal)); !st.ok()) {
    err << "mmtwin calibrate: -o: " << st.error().message() << "\n";
    return 2;
  }
  out << FormatCalibrationTable(*cal);
  out << "wrote " << a.output << " (" << cal->fits.size() << " layer types, tp " << cal->tp << ", from "
      << a.runs.size() << (a.runs.size() == 1 ? " run" : " runs") << ")\n";
  return 0;
}

}  // namespace mmtwin::cli

// Placeholder until the trace command lands.
#include <ostream>

#include "cli/commands.h"

namespace mmtwin::cli {
int RunTrace(const Args&, std::ostream&, std::ostream& err) {
  err << "mmtwin trace: not built yet\n";
  return 2;
}
}  // namespace mmtwin::cli

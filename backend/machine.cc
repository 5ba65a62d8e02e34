// SPDX-License-Identifier: Apache-2.0
#include "backend/machine.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace mmtwin::backend {

double LoadAverage1m() {
  double load[1] = {-1};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

MachineRecord ThisMachine() {
  MachineRecord m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.host = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) m.cpu = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  m.load_avg_1m_start = m.load_avg_1m_end = LoadAverage1m();
  return m;
}

}  // namespace mmtwin::backend

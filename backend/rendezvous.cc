// SPDX-License-Identifier: Apache-2.0
// Rendezvous from torchrun's or Slurm's environment (train.h).
#include <cstdlib>
#include <string>

#include "backend/train.h"
#include "core/util/csv.h"

namespace mmtwin::backend {
namespace {

// The first of `names` that is set; "" when none.
std::string Env(std::initializer_list<const char*> names, const char** which) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v && *v) {
      *which = n;
      return v;
    }
  *which = *names.begin();
  return "";
}

Result<int> IntEnv(std::initializer_list<const char*> names, int64_t lo, int64_t hi, int fallback,
                   const std::string& range) {
  const char* which = nullptr;
  const std::string v = Env(names, &which);
  if (v.empty()) {
    if (fallback >= 0) return fallback;
    return Error(std::string(which) +
                 ": not set (start the ranks with mmtwin-train launch, torchrun or srun)");
  }
  int64_t x = 0;
  if (!ParseInt64(v, x) || x < lo || x > hi)
    return Error(std::string(which) + ": '" + v + "' is not an integer in " + range);
  return static_cast<int>(x);
}

}  // namespace

Result<Rendezvous> RendezvousFromEnv() {
  Rendezvous rv;
  MMTWIN_ASSIGN_OR_RETURN(rv.world_size,
                          IntEnv({"WORLD_SIZE", "SLURM_NTASKS"}, 1, 1 << 20, -1, "[1, 1048576]"));
  MMTWIN_ASSIGN_OR_RETURN(rv.rank,
                          IntEnv({"RANK", "SLURM_PROCID"}, 0, rv.world_size - 1, -1, "[0, WORLD_SIZE)"));
  MMTWIN_ASSIGN_OR_RETURN(rv.local_rank,
                          IntEnv({"LOCAL_RANK", "SLURM_LOCALID"}, 0, 1 << 20, 0, "[0, 1048576]"));
  MMTWIN_ASSIGN_OR_RETURN(rv.master_port, IntEnv({"MASTER_PORT"}, 1, 65535, 29500, "[1, 65535]"));
  const char* which = nullptr;
  const std::string addr = Env({"MASTER_ADDR"}, &which);
  if (!addr.empty()) rv.master_addr = addr;
  return rv;
}

}  // namespace mmtwin::backend

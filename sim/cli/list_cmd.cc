// SPDX-License-Identifier: Apache-2.0
// mmtwin models | clusters | policies: what is built in, with one-line descriptions.
#include <cstdio>
#include <ostream>

#include "cli/commands.h"
#include "core/balance/data_policy.h"
#include "core/balance/post_balance.h"
#include "core/cluster/cluster.h"
#include "core/model/model.h"
#include "core/plan/partition.h"
#include "core/plan/recompute.h"
#include "core/plan/schedule.h"
#include "core/plan/seqpar.h"

namespace mmtwin::cli {

int RunList(const std::string& what, std::ostream& out, std::ostream& err) {
  if (what == "policies") {
    out << "data-balance policies (mmtwin balance --policy NAME [--param k=v]...):\n";
    for (const auto& p : DataPolicies()) {
      out << "  " << p.name << ": " << p.description << "\n" << DescribeParams(p.params, "      ");
    }
    out << "\npost-balance algorithms (--param algorithm=NAME):\n";
    for (const auto& a : PostBalanceAlgorithms().entries())
      out << "  " << a.name << ": " << a.description << "\n";
    out << "\npartition policies (scenario policies.partition):\n";
    for (const auto& p : PartitionPolicies())
      out << "  " << p.name << ": " << p.description << "\n" << DescribeParams(p.params, "      ");
    out << "\nrecompute policies (scenario policies.recompute; also uniform:N, block:N):\n";
    for (const auto& p : RecomputePolicies())
      out << "  " << p.name << ": " << p.description << "\n" << DescribeParams(p.params, "      ");
    out << "\nschedules (scenario policies.schedule):\n";
    for (const auto& [name, description] : ScheduleNames())
      out << "  " << name << ": " << description << "\n";
    out << "\nsequence-parallel policies (scenario policies.sp; degree parallel.sp, 2d: sp_ulysses x "
           "sp_ring):\n";
    for (const auto& p : SpPolicyRegistry().entries())
      out << "  " << p.name << ": " << p.description << "\n" << DescribeParams(p.params, "      ");
    return 0;
  }
  if (what == "models") {
    out << "model zoo (" << ModelZooDir() << "):\n";
    for (const auto& name : ListModels()) {
      auto m = LoadModel(name);
      if (!m) {
        err << "mmtwin models: " << m.error().message() << "\n";
        return 2;
      }
      char b[64];
      std::snprintf(b, sizeof b, "%8.2f B", static_cast<double>(TotalParams(*m)) / 1e9);
      out << "  " << name << std::string(name.size() < 28 ? 28 - name.size() : 1, ' ') << b << "  "
          << m->description << "\n";
    }
    return 0;
  }
  if (what == "clusters") {
    out << "cluster presets (" << ClusterPresetDir() << "):\n";
    for (const auto& name : ListClusters()) {
      auto c = LoadCluster(name);
      if (!c) {
        err << "mmtwin clusters: " << c.error().message() << "\n";
        return 2;
      }
      char b[160];
      std::snprintf(b, sizeof b, "%3d nodes x %d %s, NVLink %.0f GB/s, %d x %.0f GB/s NICs per node",
                    c->nodes, c->gpus_per_node, c->device.name.c_str(), c->nvlink_bytes_per_s / 1e9,
                    c->nics_per_node, c->nic_bytes_per_s / 1e9);
      out << "  " << name << std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') << b << "\n      "
          << c->description << "\n";
    }
    return 0;
  }
  err << "mmtwin: unknown listing '" << what << "'; valid values are: models, clusters, policies\n";
  return 2;
}

}  // namespace mmtwin::cli

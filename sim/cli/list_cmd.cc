// SPDX-License-Identifier: Apache-2.0
// mmtwin models | clusters | policies [--json]: what is built in, with one-line descriptions (--json: the same
// entries as one JSON object, numbers as numbers, each policy's typed parameters as declared).
#include <cstdio>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/balance/data_policy.h"
#include "core/balance/post_balance.h"
#include "core/cluster/cluster.h"
#include "core/model/model.h"
#include "core/plan/encoder.h"
#include "core/plan/partition.h"
#include "core/plan/recompute.h"
#include "core/plan/schedule.h"
#include "core/plan/seqpar.h"

namespace mmtwin::cli {

namespace {

// A policy's declared parameters: name, type, default, description, choices and range where set.
nlohmann::json ParamsJson(const std::vector<ParamSpec>& specs) {
  nlohmann::json a = nlohmann::json::array();
  for (const ParamSpec& p : specs) {
    nlohmann::json j = {{"name", p.name},
                        {"type", ParamTypeName(p.type)},
                        {"default", p.default_value},
                        {"description", p.description}};
    if (!p.choices.empty()) j["choices"] = p.choices;
    if (p.min > -1e300) j["min"] = p.min;
    if (p.max < 1e300) j["max"] = p.max;
    a.push_back(j);
  }
  return a;
}

template <typename Entries>
nlohmann::json EntriesJson(const Entries& entries) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : entries)
    a.push_back({{"name", e.name}, {"description", e.description}, {"params", ParamsJson(e.params)}});
  return a;
}

int ListJson(const std::string& what, std::ostream& out, std::ostream& err) {
  nlohmann::json j;
  if (what == "policies") {
    j["data"] = EntriesJson(DataPolicies());
    j["post_balance_algorithms"] = nlohmann::json::array();
    for (const auto& a : PostBalanceAlgorithms().entries())
      j["post_balance_algorithms"].push_back({{"name", a.name}, {"description", a.description}});
    j["partition"] = EntriesJson(PartitionPolicies());
    j["recompute"] = EntriesJson(RecomputePolicies());
    j["schedule"] = nlohmann::json::array();
    for (const auto& [name, description] : ScheduleNames())
      j["schedule"].push_back({{"name", name}, {"description", description}});
    j["sp"] = EntriesJson(SpPolicyRegistry().entries());
    j["encoder"] = EntriesJson(EncoderPlacements().entries());
  } else if (what == "models") {
    j["zoo"] = ModelZooDir();
    j["models"] = nlohmann::json::array();
    for (const auto& name : ListModels()) {
      auto m = LoadModel(name);
      if (!m) {
        err << "mmtwin models: " << m.error().message() << "\n";
        return 2;
      }
      nlohmann::json components = nlohmann::json::array();
      for (const Component& c : m->components) components.push_back(c.name);
      j["models"].push_back({{"name", name},
                             {"params", TotalParams(*m)},
                             {"description", m->description},
                             {"components", components}});
    }
  } else {
    j["presets"] = ClusterPresetDir();
    j["clusters"] = nlohmann::json::array();
    for (const auto& name : ListClusters()) {
      auto c = LoadCluster(name);
      if (!c) {
        err << "mmtwin clusters: " << c.error().message() << "\n";
        return 2;
      }
      j["clusters"].push_back({{"name", name},
                               {"description", c->description},
                               {"nodes", c->nodes},
                               {"gpus_per_node", c->gpus_per_node},
                               {"device",
                                {{"name", c->device.name},
                                 {"peak_flops", c->device.peak_flops},
                                 {"memory_bytes", c->device.memory_bytes},
                                 {"hbm_bytes_per_s", c->device.hbm_bytes_per_s}}},
                               {"nvlink_bytes_per_s", c->nvlink_bytes_per_s},
                               {"nics_per_node", c->nics_per_node},
                               {"nic_bytes_per_s", c->nic_bytes_per_s}});
    }
  }
  out << j.dump(2) << "\n";
  return 0;
}

}  // namespace

int RunList(const std::string& what, bool json, std::ostream& out, std::ostream& err) {
  if (what != "policies" && what != "models" && what != "clusters") {
    err << "mmtwin: unknown listing '" << what << "'; valid values are: models, clusters, policies\n";
    return 2;
  }
  // An empty zoo or preset folder is a wrong MMTWIN_DATA_DIR (or a broken install), not an empty listing.
  if (what == "models" && ListModels().empty()) {
    err << "mmtwin models: no model files in " << ModelZooDir()
        << " (MMTWIN_DATA_DIR, if set, must be the folder holding models/ and clusters/)\n";
    return 2;
  }
  if (what == "clusters" && ListClusters().empty()) {
    err << "mmtwin clusters: no cluster presets in " << ClusterPresetDir()
        << " (MMTWIN_DATA_DIR, if set, must be the folder holding models/ and clusters/)\n";
    return 2;
  }
  if (json) return ListJson(what, out, err);
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
    out << "\nencoder placements (scenario policies.encoder):\n";
    for (const auto& p : EncoderPlacements().entries())
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

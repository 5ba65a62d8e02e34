// SPDX-License-Identifier: Apache-2.0
// mmtwin balance: run one or more data-balance policies over a trace and report OmniBal/OrchMLLM metrics.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/balance/data_policy.h"
#include "core/balance/metrics.h"
#include "core/cluster/cluster.h"
#include "core/util/csv.h"

namespace mmtwin::cli {
namespace {

struct Options {
  std::string trace, model, cluster;
  int dp = 0;
  std::vector<std::string> policies;
  bool compare = false;
  std::map<std::string, std::string> params;
  uint64_t seed = 1;
  int ranks_per_node = 8;
  bool json = false;
};

Status Convert(const BalanceArgs& a, Options& o) {
  o.trace = a.trace;
  o.model = a.model;
  o.cluster = a.cluster;
  o.policies = a.policies;
  o.compare = a.compare;
  o.json = a.json;
  auto count = [](const char* flag, const std::string& v, int64_t lo, int64_t hi, const char* what,
                  int64_t& x) -> Status {
    if (!ParseInt64(v, x) || x < lo || x > hi)
      return Error("balance: " + std::string(flag) + ": '" + v + "' is not a valid " + what);
    return Status();
  };
  int64_t x = 0;
  if (a.dp_given) {
    MMTWIN_RETURN_IF_ERROR(count("--dp", a.dp, 1, 1000000, "positive count", x));
    o.dp = static_cast<int>(x);
  }
  if (a.seed_given) {
    MMTWIN_RETURN_IF_ERROR(count("--seed", a.seed, 0, INT64_MAX, "seed", x));
    o.seed = static_cast<uint64_t>(x);
  }
  if (a.ranks_given) {
    MMTWIN_RETURN_IF_ERROR(count("--ranks-per-node", a.ranks_per_node, 1, 1000000, "positive count", x));
    o.ranks_per_node = static_cast<int>(x);
  }
  for (const std::string& kv : a.params) MMTWIN_RETURN_IF_ERROR(ParseKeyValue(kv, o.params));
  if (o.trace.empty()) return Error("balance: --trace is required");
  if (o.model.empty()) return Error("balance: --model is required");
  if (o.dp < 1) return Error("balance: --dp is required (number of data-parallel ranks)");
  if (o.compare && o.policies.empty()) o.policies = {"random", "length-group", "device-group", "isf"};
  if (o.policies.empty()) return Error("balance: --policy is required (or --compare)");
  if (!o.compare && o.policies.size() > 1) return Error("balance: give one --policy, or use --compare P1,P2");
  return Status();
}

std::string Fmt(double x, int prec = 3) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, x);
  return b;
}

}  // namespace

int RunBalance(const BalanceArgs& args, std::ostream& out, std::ostream& err) {
  Options o;
  if (Status s = Convert(args, o); !s.ok()) {
    err << "mmtwin " << s.error().message() << "\n";
    return 2;
  }
  // Resolve every policy and check every parameter before the (slow) trace load.
  std::vector<const DataPolicyInfo*> infos;
  for (const auto& name : o.policies) {
    auto info = FindDataPolicy(name);
    if (!info) {
      err << "mmtwin balance: " << info.error().message() << "\n";
      return 2;
    }
    infos.push_back(*info);
  }
  for (const auto& [k, v] : o.params) {
    bool declared = false;
    for (auto* info : infos)
      for (auto& spec : info->params) declared |= spec.name == k;
    if (!declared) {
      // Let the single policy's validation produce the message listing its parameters.
      auto p = Params::Validate("policy '" + infos[0]->name + "'", infos[0]->params, {{k, v}});
      err << "mmtwin balance: --param: "
          << (p ? "parameter '" + k + "' is not declared by any compared policy" : p.error().message())
          << "\n";
      return 2;
    }
  }
  if (!o.cluster.empty()) {
    auto c = LoadCluster(o.cluster);
    if (!c) {
      err << "mmtwin balance: --cluster: " << c.error().message() << "\n";
      return 2;
    }
    o.ranks_per_node = c->gpus_per_node;  // node boundaries for node-wise placement and inter-node bytes
  }
  auto model = LoadModel(o.model);
  if (!model) {
    err << "mmtwin balance: --model: " << model.error().message() << "\n";
    return 2;
  }
  auto trace = ReadTrace(o.trace);
  if (!trace) {
    err << "mmtwin balance: " << trace.error().message() << "\n";
    return 2;
  }
  if (trace->samples.empty()) {
    err << "mmtwin balance: " << o.trace << ": the trace has no samples\n";
    return 2;
  }
  const SampleSizes sizes = ComputeSizes(*model, *trace);
  DataPolicyContext ctx{&*trace, &*model, &sizes, o.dp, o.ranks_per_node, o.seed};

  nlohmann::json all = nlohmann::json::array();
  std::vector<std::pair<DataMetrics, double>> rows;
  for (auto* info : infos) {
    std::map<std::string, std::string> mine;
    for (const auto& [k, v] : o.params)
      for (auto& spec : info->params)
        if (spec.name == k) mine[k] = v;
    const auto t0 = std::chrono::steady_clock::now();
    auto plan = RunDataPolicy(info->name, mine, ctx);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!plan) {
      err << "mmtwin balance: " << plan.error().message() << "\n";
      return 2;
    }
    const DataMetrics m = ComputeDataMetrics(*plan, sizes);
    nlohmann::json j = nlohmann::json::parse(MetricsToJson(*plan, m));
    j["trace"] = o.trace;
    j["model"] = model->name;
    j["seed"] = o.seed;
    all.push_back(j);
    rows.emplace_back(m, ms);
    if (!o.json && !o.compare) {
      out << "policy        " << plan->policy << "  (";
      bool first = true;
      for (const auto& [k, v] : plan->params) {
        out << (first ? "" : ", ") << k << "=" << v;
        first = false;
      }
      out << ")\n";
      out << "trace         " << o.trace << "  (" << trace->size() << " samples), model " << model->name
          << ", dp " << o.dp << "\n";
      out << "steps         " << m.steps << "  (" << m.samples_placed << " samples placed, "
          << m.samples_skipped << " skipped, " << m.samples_dropped << " left for an incomplete last step)\n";
      out << "AVE-BS        " << Fmt(m.mean_batch_size, 2) << "\n";
      out << "max seq len   ViT " << m.max_vit_tokens << ", LLM " << m.max_llm_tokens
          << " tokens per mini-batch\n";
      out << "pad ratio     " << Fmt(m.pad_ratio) << "\n";
      out << "dist ratio    ViT " << Fmt(m.dist_ratio_vit) << ", LLM " << Fmt(m.dist_ratio_llm) << "\n";
      for (const auto& [k, v] : plan->metrics)
        out << k << std::string(k.size() < 30 ? 30 - k.size() : 1, ' ') << v << "\n";
      out << "time          " << Fmt(ms, 1) << " ms\n";
    }
  }
  if (o.json) {
    out << (o.compare ? all.dump(2) : all[0].dump(2)) << "\n";
    return 0;
  }
  if (o.compare) {
    char line[256];
    std::snprintf(line, sizeof line, "%-14s %7s %9s %9s %9s %9s %9s %10s %9s %9s\n", "policy", "AVE-BS",
                  "max ViT", "max LLM", "pad", "dist ViT", "dist LLM", "placed", "skipped", "time ms");
    out << "trace " << o.trace << " (" << trace->size() << " samples), model " << model->name << ", dp "
        << o.dp << ", seed " << o.seed << "\n"
        << line;
    for (size_t i = 0; i < infos.size(); ++i) {
      const DataMetrics& m = rows[i].first;
      std::snprintf(line, sizeof line, "%-14s %7.2f %9lld %9lld %9.3f %9.3f %9.3f %10lld %9lld %9.1f\n",
                    infos[i]->name.c_str(), m.mean_batch_size, static_cast<long long>(m.max_vit_tokens),
                    static_cast<long long>(m.max_llm_tokens), m.pad_ratio, m.dist_ratio_vit, m.dist_ratio_llm,
                    static_cast<long long>(m.samples_placed), static_cast<long long>(m.samples_skipped),
                    rows[i].second);
      out << line;
    }
    // Dist ratios and maxima grow with the batch size: say so when the compared batch sizes differ.
    double lo = rows[0].first.mean_batch_size, hi = lo;
    for (const auto& r : rows) {
      lo = std::min(lo, r.first.mean_batch_size);
      hi = std::max(hi, r.first.mean_batch_size);
    }
    if (hi > lo * 1.05)
      out << "note: the policies ran with different batch sizes (AVE-BS " << Fmt(lo, 2) << " .. "
          << Fmt(hi, 2)
          << " samples per mini-batch per rank); compare at one batch size with --param batch_size=N (it "
             "applies to every compared policy that has it)\n";
  }
  return 0;
}

}  // namespace mmtwin::cli

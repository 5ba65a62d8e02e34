// mmtwin models | clusters | policies: what is built in, with one-line descriptions.
#include <cstdio>
#include <ostream>

#include "cli/commands.h"
#include "core/balance/data_policy.h"
#include "core/model/model.h"

namespace mmtwin::cli {

int RunList(const std::string& what, const Args& args, std::ostream& out, std::ostream& err) {
  if (what == "policies") {
    out << "data-balance policies (mmtwin balance --policy NAME [--param k=v]...):\n";
    for (const auto& p : DataPolicies()) {
      out << "  " << p.name << ": " << p.description << "\n" << DescribeParams(p.params, "      ");
    }
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
      out << "  " << name << std::string(name.size() < 28 ? 28 - name.size() : 1, ' ') << b << "  " << m->description
          << "\n";
    }
    return 0;
  }
  err << "mmtwin " << what << ": not available yet\n";
  return 2;
}

}  // namespace mmtwin::cli

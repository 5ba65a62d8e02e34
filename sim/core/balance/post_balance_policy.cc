// Stub until post_balance.h lands (replaced by the real implementation).
#include "core/balance/data_policy.h"

namespace mmtwin {
const std::vector<ParamSpec> kPostBalanceParams = {};
const std::vector<ParamSpec> kOrchestratorParams = {};
Result<DataPlan> RunPostBalancePolicy(const DataPolicyContext&, const Params&) { return Error("post-balance: not built"); }
Result<DataPlan> RunOrchestratorPolicy(const DataPolicyContext&, const Params&) { return Error("orchestrator: not built"); }
}  // namespace mmtwin

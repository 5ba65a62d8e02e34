// SPDX-License-Identifier: Apache-2.0
// What the GUI editor (gui/editor.cc) pays to check an edit of scenarios/default.yaml, before and after parsing
// and checking were split (core/scenario/scenario.h: ReadScenario, CheckScenario), in one binary so that the two
// run interleaved (--benchmark_enable_random_interleaving):
//   typed edit (ScenarioEditor::Reparse after the typing pause):
//     before: ParseScenario, then ValidateScenario, which printed the struct as YAML, parsed it again (stripping
//             the generated text's line numbers) and ran the planner's checks: LegacyValidateScenario below, the
//             removed code as it was (main at fd3d835) on today's parser;
//     after:  ReadScenario, then CheckAndResolveScenario on the struct (what ParseScenario is now);
//   form edit (ScenarioEditor::FormEdited: the override, the in-place edit compared with it, then the check):
//     before: OverrideScenarioYaml, ParseScenario of the current, in-place and overridden texts, then the typed
//             edit's check of the chosen text;
//     after:  OverrideScenarioYaml, ReadScenario of the three texts, CheckAndResolveScenario of the chosen one.
// The Qt work around them (setting the text, filling the form) is the same before and after and is left out.
#include <benchmark/benchmark.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "core/balance/data_policy.h"
#include "core/plan/partition.h"
#include "core/plan/recompute.h"
#include "core/plan/schedule.h"
#include "core/scenario/scenario.h"
#include "core/util/params.h"

namespace mmtwin {
namespace {

std::string DefaultText() {
  std::ifstream in(std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The removed ValidateScenario (sim/driver/planner.cc at fd3d835) with its CheckLayout: the round trip through
// FormatScenario and ParseScenario, then the planner's checks.
Status LegacyValidateScenario(const Scenario& s) {
  const std::string name = s.path.empty() ? (s.name.empty() ? "scenario" : s.name) : s.path;
  auto parsed = ParseScenario(FormatScenario(s), name, ".");
  if (!parsed) {
    std::string msg = parsed.error().message();
    const std::string prefix = name + ":";
    if (msg.rfind(prefix, 0) == 0) {
      size_t i = prefix.size();
      while (i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i]))) ++i;
      if (i > prefix.size() && i < msg.size() && msg[i] == ':') msg = prefix + msg.substr(i + 1);
    }
    return Error(msg);
  }
  MMTWIN_ASSIGN_OR_RETURN(ClusterSpec probe, LoadCluster(s.cluster));
  const ParallelConfig& par = s.parallel;
  if (par.dp < 1 || par.tp < 1 || par.pp < 1 || par.vpp < 1 || par.micro_batches < 1)
    return ScenarioError(s, "parallel", "parallel sizes must be >= 1");
  if (par.zero_stage < 0 || par.zero_stage > 3)
    return ScenarioError(s, "parallel.zero_stage", "must be 0..3");
  if (par.tp > probe.gpus_per_node) return ScenarioError(s, "parallel.tp", "exceeds a node");
  const int needed = (par.world_size() + probe.gpus_per_node - 1) / probe.gpus_per_node;
  if (s.nodes > 0 && s.nodes < needed) return ScenarioError(s, "cluster.nodes", "too few");
  auto params = [&](const std::string& kind, const PolicyRef& ref,
                    const std::vector<ParamSpec>& specs) -> Status {
    auto p = Params::Validate(kind + " policy '" + ref.name + "'", specs, ref.params);
    if (!p) return ScenarioError(s, "policies." + kind + ".params", p.error().message());
    return Status();
  };
  MMTWIN_ASSIGN_OR_RETURN(const DataPolicyInfo* data, FindDataPolicy(s.data.name));
  MMTWIN_RETURN_IF_ERROR(params("data", s.data, data->params));
  MMTWIN_ASSIGN_OR_RETURN(const PartitionPolicyInfo* part, FindPartitionPolicy(s.partition.name));
  MMTWIN_RETURN_IF_ERROR(params("partition", s.partition, part->params));
  MMTWIN_ASSIGN_OR_RETURN(const RecomputePolicyInfo* rc,
                          FindRecomputePolicy(s.recompute.name.substr(0, s.recompute.name.find(':'))));
  MMTWIN_RETURN_IF_ERROR(params("recompute", s.recompute, rc->params));
  if (auto sched = BuildSchedule(s.schedule.name, par.pp, par.vpp, par.micro_batches, s.schedule.params);
      !sched)
    return ScenarioError(s, "policies.schedule", sched.error().message());
  return Status();  // default.yaml's cost is analytic: the old cost-file branch did not run
}

// The typed edit's check of `text`: ok or not.
bool CheckTyped(const std::string& text, const std::string& name, bool before) {
  if (before) {
    Result<Scenario> parsed = ParseScenario(text, name, ".");
    return parsed.ok() && LegacyValidateScenario(*parsed).ok();
  }
  Result<Scenario> read = ReadScenario(text, name, ".");
  return read.ok() && CheckAndResolveScenario(std::move(*read)).ok();
}

// The form edit of parallel.dp (written on a line of its own in default.yaml, so the in-place edit applies).
bool CheckFormEdit(const std::string& current, const std::string& name, int dp, bool before) {
  const std::string value = std::to_string(dp);
  Result<std::string> edited = OverrideScenarioYaml(current, {{"parallel.dp", value}});
  if (!edited.ok()) return false;
  std::string in_place = current;
  const size_t at = in_place.find("dp: ");
  in_place.replace(at + 4, in_place.find(',', at) - at - 4, value);
  auto read = [&](const std::string& t) {
    return before ? ParseScenario(t, name, ".") : ReadScenario(t, name, ".");
  };
  Result<Scenario> chosen = read(*edited);
  Result<Scenario> now = read(current);
  Result<Scenario> a = read(in_place);
  if (!now.ok() || !a.ok() || !chosen.ok() || !(*a == *chosen)) return false;
  if (before)
    return CheckTyped(in_place, name, /*before=*/true);  // the old editor parsed the chosen text again
  return CheckAndResolveScenario(std::move(*a)).ok();
}

// Arguments: {0 = typed edit, 1 = form edit} x {0 = before, 1 = after}.
void BM_EditorCheck(benchmark::State& state) {
  const bool form = state.range(0) == 1, before = state.range(1) == 0;
  const std::string text = DefaultText(), name = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml";
  if (!CheckTyped(text, name, before) || !CheckFormEdit(text, name, 1, before)) {
    state.SkipWithError("scenarios/default.yaml does not check");
    return;
  }
  int dp = 2;
  for (auto _ : state) {
    dp = dp == 2 ? 1 : 2;
    const bool ok = form ? CheckFormEdit(text, name, dp, before) : CheckTyped(text, name, before);
    benchmark::DoNotOptimize(ok);
  }
  state.SetLabel(std::string(form ? "form edit" : "typed edit") +
                 (before ? ", before (round trip)" : ", after"));
}
BENCHMARK(BM_EditorCheck)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);

// CheckScenario alone on the parsed default.yaml: what BuildPlan now spends checking before it plans (it loads the
// model and the cluster again afterwards, from their caches).
void BM_CheckScenario(benchmark::State& state) {
  const std::string name = std::string(MMTWIN_SOURCE_DIR) + "/scenarios/default.yaml";
  Result<Scenario> s = ParseScenario(DefaultText(), name, ".");
  if (!s.ok()) {
    state.SkipWithError(s.error().message().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(CheckScenario(*s).ok());
}
BENCHMARK(BM_CheckScenario)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mmtwin

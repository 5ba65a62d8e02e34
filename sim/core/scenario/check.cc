// SPDX-License-Identifier: Apache-2.0
// Checking a scenario (scenario.h: CheckScenario): every check of its values, on the struct, whether parsed,
// edited in memory or built in code; the scenario's model and cost model. Errors name the field at the line
// Scenario::lines gives (ScenarioError), so a parsed file's errors carry their lines and a struct built in code
// names the field only.
#include <algorithm>
#include <filesystem>
#include <initializer_list>

#include "core/balance/data_policy.h"
#include "core/plan/encoder.h"
#include "core/plan/memory.h"
#include "core/plan/mesh.h"
#include "core/plan/partition.h"
#include "core/plan/recompute.h"
#include "core/plan/schedule.h"
#include "core/plan/seqpar.h"
#include "core/scenario/scenario.h"
#include "core/scenario/schema.h"
#include "core/trace/generate.h"
#include "core/util/params.h"
#include "core/util/text.h"

namespace mmtwin {
namespace {

namespace fs = std::filesystem;
using namespace scenario_schema;  // NOLINT: the key lists and ranges

// `field: reason` cited at the line of the first key of `at` that the scenario's file wrote, else where
// ScenarioError cites it (the field's own line, or its nearest parent's).
Error FieldError(const Scenario& s, const std::string& field, const std::string& reason,
                 std::initializer_list<std::string> at = {}) {
  if (!s.path.empty())
    for (const std::string& k : at)
      if (auto it = s.lines.find(k); it != s.lines.end()) return Error::At(s.path, it->second, field, reason);
  return ScenarioError(s, field, reason);
}

Status Range(const Scenario& s, const std::string& field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) return FieldError(s, field, OutOfRange(v, lo, hi));
  return Status();
}

Status Seed(const Scenario& s, const std::string& field, uint64_t seed) {
  if (seed <= static_cast<uint64_t>(INT64_MAX)) return Status();
  return FieldError(s, field,
                    std::to_string(seed) + " is out of range [0, " + std::to_string(INT64_MAX) + "]");
}

// `key.sub` when the file wrote the mapping form (model: {name: ...}, cluster: {preset: ...}), else `key`.
std::string WrittenAs(const Scenario& s, const std::string& key, const std::string& sub) {
  const std::string full = key + "." + sub;
  return s.lines.count(full) ? full : key;
}

// dp * tp * pp * sp, saturating (every factor >= 1 once the ranges are checked).
int64_t World(const ParallelConfig& p) {
  int64_t w = 1;
  for (const int64_t x : {p.dp, p.tp, p.pp, p.sp}) w = x > 0 && w > INT64_MAX / x ? INT64_MAX : w * x;
  return w;
}

std::string WorldName(const ParallelConfig& p) { return p.sp > 1 ? "dp * tp * pp * sp" : "dp * tp * pp"; }

Status CheckName(const Scenario& s) {
  if (s.name.empty()) return FieldError(s, "name", "must not be empty");
  if (!ValidUtf8(s.name)) return FieldError(s, "name", "not valid UTF-8");
  if (!IsPlainName(s.name))
    return FieldError(
        s, "name",
        "'" + Abbreviate(s.name) +
            "' must work as a folder name (runs/NAME): no '/', '\\', control characters, '.' or '..'");
  if (!ValidUtf8(s.description)) return FieldError(s, "description", "not valid UTF-8");
  return Status();
}

// The trace source: a file that exists, synthetic sequences, or a known generator preset (the order FormatScenario
// and the planner read them in).
Status CheckTrace(const Scenario& s) {
  const TraceSource& t = s.trace;
  if (!t.file.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(t.file, ec)) return FieldError(s, "trace.file", "no such file '" + t.file + "'");
    return Status();
  }
  if (t.sequence_tokens != 0) {
    MMTWIN_RETURN_IF_ERROR(Range(s, "trace.sequence_tokens", t.sequence_tokens, 1, kMaxSequenceTokens));
    if (t.samples < 0 || t.samples > kMaxTraceSamples)  // 0 = one sequence
      return Range(s, "trace.samples", t.samples, 1, kMaxTraceSamples);
    return Status();
  }
  if (t.preset.empty()) return FieldError(s, "trace.preset", "must not be empty");
  std::vector<std::string> names;
  bool known = false;
  for (const GeneratorPreset& p : GeneratorPresets()) {
    names.push_back(p.name);
    known = known || p.name == t.preset;
  }
  if (!known)
    return FieldError(s, "trace.preset",
                      "unknown trace preset '" + t.preset + "'; valid values are: " + Join(names));
  MMTWIN_RETURN_IF_ERROR(Range(s, "trace.samples", t.samples, 0, kMaxTraceSamples));
  return Seed(s, "trace.seed", t.seed);
}

// The model and cluster names and the numbers beside them (what they resolve to is CheckModelAndCluster's).
Status CheckModelAndClusterKeys(const Scenario& s) {
  if (s.model.empty()) return FieldError(s, WrittenAs(s, "model", "name"), "must not be empty");
  if (s.image_px != 0) MMTWIN_RETURN_IF_ERROR(Range(s, "model.image_px", s.image_px, 1, kMaxImagePx));
  if (s.cluster.empty()) return FieldError(s, WrittenAs(s, "cluster", "preset"), "must not be empty");
  return Range(s, "cluster.nodes", s.nodes, 0, kMaxWorld);
}

Status CheckParallel(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  for (const ParallelInt& f : kParallelInts)
    MMTWIN_RETURN_IF_ERROR(Range(s, std::string("parallel.") + f.key, p.*f.field, f.lo, f.hi));
  if (const auto& names = OptimizerMemoryNames();
      std::find(names.begin(), names.end(), p.optimizer_memory) == names.end())
    return FieldError(
        s, "parallel.optimizer_memory",
        "unknown optimizer memory layout '" + p.optimizer_memory + "'; valid values are: " + Join(names));
  if (p.zero3_impl.empty()) return FieldError(s, "parallel.zero3_impl", "must not be empty");
  if (std::find(kZero3Impls.begin(), kZero3Impls.end(), p.zero3_impl) == kZero3Impls.end())
    return FieldError(
        s, "parallel.zero3_impl",
        "unknown ZeRO-3 implementation '" + p.zero3_impl + "'; valid values are: " + Join(kZero3Impls));
  if (p.zero3_impl != "simple" && p.zero_stage != 3)
    return FieldError(s, "parallel.zero3_impl",
                      "'" + p.zero3_impl + "' applies to parallel.zero_stage 3 only (got " +
                          std::to_string(p.zero_stage) + "); remove it or set zero_stage: 3");
  if (p.zero3_shard_group != 0) {
    const int64_t zero_group = static_cast<int64_t>(p.dp) * std::max(1, p.sp);
    if (p.zero_stage != 3)
      return FieldError(
          s, "parallel.zero3_shard_group",
          "hybrid sharding needs parallel.zero_stage 3 (got " + std::to_string(p.zero_stage) + ")");
    if (zero_group % p.zero3_shard_group != 0)
      return FieldError(s, "parallel.zero3_shard_group",
                        std::to_string(p.zero3_shard_group) +
                            " does not divide the ZeRO group dp x sp = " + std::to_string(zero_group));
  }
  if (std::find(kGradReduceDtypes.begin(), kGradReduceDtypes.end(), p.grad_reduce_dtype) ==
      kGradReduceDtypes.end())
    return FieldError(s, "parallel.grad_reduce_dtype",
                      "unknown gradient reduction dtype '" + p.grad_reduce_dtype +
                          "'; valid values are: " + Join(kGradReduceDtypes));
  if (p.tp_comm_overlap && !p.tp_sequence_parallel)
    return FieldError(
        s, "parallel.tp_comm_overlap",
        "true needs parallel.tp_sequence_parallel true (Megatron-LM's --tp-comm-overlap overlaps "
        "the sequence-parallel all-gathers and reduce-scatters)");
  if (!p.overlap_grad_reduce && p.zero_stage == 3)
    return FieldError(
        s, "parallel.overlap_grad_reduce",
        "false needs parallel.zero_stage 0, 1 or 2 (ZeRO-3 gathers weights during the backward, so "
        "its gradient reduce-scatters always run inside it)");
  const int64_t world = World(p);
  if (world > kMaxWorld)
    return FieldError(
        s, "parallel",
        WorldName(p) + " = " + std::to_string(world) + " GPUs is more than " + std::to_string(kMaxWorld));
  return Status();
}

Status CheckPolicyName(const std::string& kind, const std::string& name) {
  if (kind == "data") return FindDataPolicy(name).status();
  if (kind == "partition") return FindPartitionPolicy(name).status();
  if (kind == "recompute") return FindRecomputePolicy(name.substr(0, name.find(':'))).status();  // "block:4"
  if (kind == "sp") return SpPolicyRegistry().Find(name).status();
  if (kind == "encoder") return EncoderPlacements().Find(name).status();
  return Schedules().Find(name).status();
}

// A policy's parameters against its registry entry ("uniform:N" / "block:N" is the shorthand for num_layers:
// RunRecomputePolicy checks that the two agree).
Status CheckPolicyParams(const std::string& kind, const PolicyRef& p) {
  auto params = [&](const std::vector<ParamSpec>& specs) {
    return Params::Validate(kind + " policy '" + p.name + "'", specs, p.params).status();
  };
  if (kind == "data") return params((*FindDataPolicy(p.name))->params);
  if (kind == "partition") return params((*FindPartitionPolicy(p.name))->params);
  if (kind == "recompute") return params((*FindRecomputePolicy(p.name.substr(0, p.name.find(':'))))->params);
  if (kind == "sp") return SpPolicyRegistry().Validate(p.name, p.params).status();
  if (kind == "encoder") return EncoderPlacements().Validate(p.name, p.params).status();
  return Schedules().Validate(p.name, p.params).status();
}

// Every policy's name and parameters against the registries.
Status CheckPolicies(const Scenario& s) {
  const std::pair<const char*, const PolicyRef*> kinds[] = {
      {"data", &s.data}, {"partition", &s.partition}, {"recompute", &s.recompute}, {"schedule", &s.schedule},
      {"sp", &s.sp},     {"encoder", &s.encoder}};
  for (const auto& [kind, ref] : kinds) {
    const std::string field = std::string("policies.") + kind;
    if (ref->name.empty()) return FieldError(s, field, "must not be empty", {field + ".name", field});
    if (Status known = CheckPolicyName(kind, ref->name); !known.ok())
      return FieldError(s, field, known.error().message(), {field + ".name", field});
    if (Status params = CheckPolicyParams(kind, *ref); !params.ok())
      return FieldError(s, field + ".params", params.error().message());
  }
  return Status();
}

// iterations, seed, engine, cost and backend.
Status CheckRun(const Scenario& s) {
  if (!s.epoch && (s.iterations < 1 || s.iterations > kMaxIterations))
    return FieldError(s, "iterations", BadIterations(std::to_string(s.iterations)));
  MMTWIN_RETURN_IF_ERROR(Seed(s, "seed", s.seed));
  if (s.engine.empty()) return FieldError(s, "engine", "must not be empty");
  if (Status st = CheckEngine(s.engine); !st.ok()) return FieldError(s, "engine", st.error().message());
  if (s.cost.empty()) return FieldError(s, "cost", "must not be empty");
  const BackendConfig& b = s.backend;
  MMTWIN_RETURN_IF_ERROR(Range(s, "backend.width_divisor", b.shrink.width_divisor, 1, kMaxWidthDivisor));
  for (const auto& [component, blocks] : b.shrink.layers)
    MMTWIN_RETURN_IF_ERROR(Range(s, "backend.layers." + component, blocks, 1, kMaxShrunkLayers));
  for (const BackendInt& f : kBackendInts)
    MMTWIN_RETURN_IF_ERROR(Range(s, std::string("backend.") + f.key, b.*f.field, f.lo, f.hi));
  if (!(b.timeout_s >= 1) || !(b.timeout_s <= kMaxTimeoutS))
    return FieldError(s, "backend.timeout_s", kBadTimeout);
  return Status();
}

// The sequence-parallel layout against the model's heads and the node size; its "field: reason" at the field's
// line (a parallel.* field not written: at parallel.sp's).
Status CheckSpLayout(const Scenario& s, const ModelSpec& model, int gpus_per_node) {
  if (s.parallel.sp <= 1 && s.sp.name == "none") return Status();
  const Component* llm = model.Find(ComponentKind::kLlm);
  auto layout =
      ResolveSpLayout(s.sp.name, s.sp.params, s.parallel, gpus_per_node, llm ? llm->tf : TransformerConfig{});
  if (layout) return Status();
  const std::string msg = layout.error().message();
  const size_t colon = msg.find(": ");
  const std::string field = colon == std::string::npos ? "parallel.sp" : msg.substr(0, colon);
  const std::string reason = colon == std::string::npos ? msg : msg.substr(colon + 2);
  return FieldError(s, field, reason, {field, field.rfind("parallel.", 0) == 0 ? "parallel.sp" : field});
}

// policies.encoder other than pipeline (core/plan/encoder.h): a model with encoders, whose LLM alone fills the
// pipeline's chunks, without what the encoder passes are not modelled with (SP, ZeRO-3, a data dispatch).
Status CheckEncoderPlacement(const Scenario& s, const ModelSpec& model, const std::vector<Layer>& layers) {
  if (s.encoder.name == "pipeline") return Status();
  const ParallelConfig& p = s.parallel;
  const std::string field = "policies.encoder";
  const int e = EncoderLayerCount(model, layers);
  if (e == 0)
    return FieldError(s, field,
                      "'" + s.encoder.name + "' moves the encoders out of the pipeline, but model '" +
                          model.name + "' has none");
  if (p.chunks() > static_cast<int>(layers.size()) - e)
    return FieldError(s, field,
                      "pp * vpp = " + std::to_string(p.chunks()) +
                          " pipeline chunks, but the LLM of model '" + model.name + "' has only " +
                          std::to_string(layers.size() - e) + " layers");
  if (p.sp > 1)
    return FieldError(s, field,
                      "'" + s.encoder.name + "' is not modelled with sequence parallelism (parallel.sp " +
                          std::to_string(p.sp) + ")");
  if (p.zero_stage == 3)
    return FieldError(s, field,
                      "'" + s.encoder.name + "' is not modelled with ZeRO-3 (parallel.zero_stage 3)");
  if (s.data.name == "post-balance" || s.data.name == "orchestrator") {
    const auto it = s.data.params.find("dispatch");
    if (it == s.data.params.end() || it->second != "none")
      return FieldError(s, field,
                        "'" + s.encoder.name +
                            "' is not modelled with a data dispatch all-to-all (policies.data " +
                            s.data.name + " with dispatch: none is)");
  }
  return Status();
}

// The rules across keys: the schedule for vpp, and what the model, the cluster and the cost file say about the
// layout; `gpus_per_node` (optional) receives the cluster's.
Status CheckModelAndCluster(const Scenario& s, int* gpus_per_node) {
  const ParallelConfig& p = s.parallel;
  if (p.vpp > 1 && s.schedule.name != "interleaved-1f1b")
    return FieldError(
        s, "parallel.vpp",
        "vpp > 1 needs the interleaved-1f1b schedule (policies.schedule is '" + s.schedule.name + "')");
  MMTWIN_ASSIGN_OR_RETURN(const ModelSpec model, LoadScenarioModel(s));
  const std::vector<Layer> model_layers = Layers(model);
  const int layers = static_cast<int>(model_layers.size());
  if (p.chunks() > layers)
    return FieldError(s, p.vpp > 1 ? "parallel.vpp" : "parallel.pp",
                      "pp * vpp = " + std::to_string(p.chunks()) + " pipeline chunks, but model '" +
                          model.name + "' has only " + std::to_string(layers) + " layers");
  MMTWIN_RETURN_IF_ERROR(CheckEncoderPlacement(s, model, model_layers));
  auto cluster = LoadScenarioCluster(s);
  if (!cluster) return cluster.error();
  const int gpn = cluster->gpus_per_node;
  if (gpus_per_node) *gpus_per_node = gpn;
  if (p.tp > gpn)
    return FieldError(s, "parallel.tp",
                      "tensor parallelism stays inside a node: tp " + std::to_string(p.tp) + " > " +
                          std::to_string(gpn) + " GPUs per node of cluster '" + cluster->name + "'");
  MMTWIN_RETURN_IF_ERROR(CheckSpLayout(s, model, gpn));
  const int64_t world = World(p);
  if (s.nodes > 0 && static_cast<int64_t>(s.nodes) * gpn < world)
    return FieldError(s, "cluster.nodes",
                      std::to_string(s.nodes) + " nodes x " + std::to_string(gpn) +
                          " GPUs = " + std::to_string(static_cast<int64_t>(s.nodes) * gpn) +
                          " GPUs, fewer than " + WorldName(p) + " = " + std::to_string(world));
  if (Status st = CheckScheduleShape(s.schedule.name, p.pp, p.vpp, p.micro_batches, s.schedule.params);
      !st.ok())
    return FieldError(s, "policies.schedule", st.error().message());
  if (s.cost != "analytic") {
    std::error_code ec;
    if (!fs::is_regular_file(s.cost, ec)) return FieldError(s, "cost", "no such file '" + s.cost + "'");
    if (auto cost = LoadScenarioCostModel(s, model, *cluster); !cost)
      return FieldError(s, "cost", cost.error().message());
  }
  return Status();
}

Status CheckImpl(const Scenario& s, int* gpus_per_node) {
  MMTWIN_RETURN_IF_ERROR(CheckName(s));
  MMTWIN_RETURN_IF_ERROR(CheckTrace(s));
  MMTWIN_RETURN_IF_ERROR(CheckModelAndClusterKeys(s));
  MMTWIN_RETURN_IF_ERROR(CheckParallel(s));
  MMTWIN_RETURN_IF_ERROR(CheckPolicies(s));
  MMTWIN_RETURN_IF_ERROR(CheckRun(s));
  return CheckModelAndCluster(s, gpus_per_node);
}

}  // namespace

Status CheckScenario(const Scenario& s) { return CheckImpl(s, nullptr); }

int ScenarioNodes(const Scenario& s, int gpus_per_node) {
  if (s.nodes > 0) return s.nodes;
  return static_cast<int>(NodesFor(World(s.parallel), gpus_per_node));
}

Result<Scenario> CheckAndResolveScenario(Scenario s) {
  int gpus_per_node = 1;
  MMTWIN_RETURN_IF_ERROR(CheckImpl(s, &gpus_per_node));
  s.nodes = ScenarioNodes(s, gpus_per_node);
  return s;
}

Result<ModelSpec> LoadScenarioModel(const Scenario& s) {
  auto m = LoadModel(s.model);
  if (!m) return FieldError(s, WrittenAs(s, "model", "name"), m.error().message());
  if (s.image_px > 0) {
    m = WithImagePx(*m, s.image_px);
    if (!m) return FieldError(s, "model.image_px", m.error().message());
  }
  if (s.token_merge > 0) {
    m = WithTokenMerge(*m, s.token_merge);
    if (!m) return FieldError(s, "model.token_merge", m.error().message());
  }
  if (!s.frozen.empty()) {
    m = WithFrozen(*m, s.frozen);
    if (!m) return FieldError(s, "model.frozen", m.error().message());
  }
  if (s.image_attention == "bidirectional") m->bidirectional_vision = true;
  if (!s.backend.shrink.active()) return m;
  auto shrunk = ShrinkModel(*m, s.backend.shrink);
  if (shrunk) return shrunk;
  // "layers.NAME: reason" -> at backend.layers.NAME; anything else at `backend`.
  const std::string msg = shrunk.error().message();
  const size_t colon = msg.find(": ");
  const std::string sub = colon == std::string::npos ? "" : msg.substr(0, colon);
  if (sub.rfind("layers.", 0) == 0 && s.backend.shrink.layers.count(sub.substr(7)))
    return FieldError(s, "backend." + sub, msg.substr(colon + 2));
  if (sub == "width_divisor") return FieldError(s, "backend.width_divisor", msg.substr(colon + 2));
  return FieldError(s, "backend", msg);
}

Result<ClusterSpec> LoadScenarioCluster(const Scenario& s, int nodes_override) {
  auto c = LoadCluster(s.cluster, nodes_override, s.device, s.device_text);
  if (c) return c;
  const std::string msg = c.error().message();
  // An override that fails the preset's checks names its scenario key (cluster.device.KEY).
  const size_t at = msg.find("device.");
  if ((!s.device.empty() || !s.device_text.empty()) && at != std::string::npos) {
    const std::string rest = msg.substr(at + 7);
    const std::string key = rest.substr(0, rest.find(':'));
    if ((s.device.count(key) || s.device_text.count(key)) && rest.find(": ") != std::string::npos)
      return FieldError(s, "cluster.device." + key, rest.substr(rest.find(": ") + 2),
                        {"cluster.device." + key, "cluster.device"});
  }
  return FieldError(s, "cluster", msg, {"cluster.preset", "cluster"});
}

Result<std::shared_ptr<const CostModel>> LoadScenarioCostModel(const Scenario& s, const ModelSpec& model,
                                                               const ClusterSpec& cluster) {
  AnalyticOptions options;
  options.tp = s.parallel.tp;
  options.sequence_parallel = s.parallel.tp_sequence_parallel;
  options.flash_attention = s.attention != "unfused";
  options.kernels = s.kernels;
  options.selective_recompute = s.recompute.name == "selective";
  AnalyticCostModel analytic(cluster.device, options);
  if (s.cost.empty() || s.cost == "analytic")
    return std::shared_ptr<const CostModel>(std::make_shared<AnalyticCostModel>(std::move(analytic)));
  MMTWIN_ASSIGN_OR_RETURN(CoefficientCostModel loaded,
                          CoefficientCostModel::Load(s.cost, std::move(analytic)));
  MMTWIN_RETURN_IF_ERROR(loaded.Supports(model));
  return std::shared_ptr<const CostModel>(std::make_shared<CoefficientCostModel>(std::move(loaded)));
}

}  // namespace mmtwin

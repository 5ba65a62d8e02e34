// SPDX-License-Identifier: Apache-2.0
// Scenario files: one YAML document describing a what-if run (scenarios/README.md documents every key).
//
//   name: internvl-6b-20b-omnibal
//   trace: {preset: internvl-1.2m, samples: 1267819, seed: 1}     # or {file: path/to/trace.csv}
//   model: internvl-1.5-6b-20b
//   cluster: {preset: a100-4x200g, nodes: 16}
//   parallel: {dp: 16, tp: 2, pp: 4, vpp: 1, micro_batches: 16, zero_stage: 1}
//   policies:
//     data: {name: isf, params: {iterations: 10}}
//     partition: {name: bmp, params: {radius: 2}}
//     recompute: adaptive                  # a bare name, or {name: ..., params: {...}}; "block:4" = block, N=4
//     schedule: 1f1b
//   iterations: 32        # sampled iterations (with a confidence interval), or "epoch" for the whole epoch
//   seed: 1
//
//   MMTWIN_ASSIGN_OR_RETURN(Scenario s, LoadScenario("scenarios/default.yaml"));
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cost/cost_model.h"
#include "core/model/model.h"
#include "core/plan/plan.h"
#include "core/util/status.h"

namespace mmtwin {

struct PolicyRef {
  std::string name;
  std::map<std::string, std::string> params;
};

struct TraceSource {
  std::string file;     // a trace CSV (relative paths resolve against the scenario file's folder)
  std::string preset;   // or a generator preset
  int64_t samples = 0;  // generator: 0 = the preset's default size
  uint64_t seed = 1;    // generator seed
  // Or `samples` synthetic text-only sequences of this many tokens each (long-context runs: the LongVILA system
  // experiments train batch-size-1 sequences of a given length; a sweep axis over sequence length, and what
  // `mmtwin plan --max-seq` varies). 0 = not used.
  int64_t sequence_tokens = 0;
};

// The real backend's settings (`backend:`; backend/README.md). The shrink also applies to the simulator, so
// that a simulated and a measured run of one scenario describe the same model (LoadScenarioModel).
struct BackendConfig {
  ModelShrink shrink;         // backend.width_divisor, backend.layers {component: blocks}
  int warmup_iterations = 1;  // run before the measured ones; neither recorded nor in the summary
  double timeout_s = 300;     // a collective or receive that waits longer ends the job
  int threads = 1;            // intra-op threads per rank (CPU)
  // Where each rank computes: "cpu" (Gloo between ranks), or "cuda": the GPU of the rank's LOCAL_RANK, NCCL
  // between ranks, CUDA events for times and the caching allocator's statistics for memory (a CUDA build of
  // mmtwin-train, backend/README.md).
  std::string device = "cpu";
  // Mixed precision of the forwards: "none" (fp32 throughout) or "bf16" (Torch's autocast: matmuls and
  // convolutions in bf16, reductions and the loss in fp32; parameters, gradients and AdamW in fp32).
  std::string autocast = "none";
  bool operator==(const BackendConfig&) const = default;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string path;  // the file it was loaded from ("" when built in code)
  TraceSource trace;
  std::string model;
  // `model: {name: ..., image_px: N}`: every vision encoder fed N-px tiles (WithImagePx, core/model/model.h:
  // encoder positions and LLM tokens per tile follow); 0 = the spec's own resolution.
  int image_px = 0;
  // `model: {name: ..., token_merge: N}`: every vision encoder merges N x N positions into one LLM token
  // (WithTokenMerge, core/model/model.h); 0 = the spec's own.
  int token_merge = 0;
  // `model: {name: ..., attention: unfused}`: the attention kernel. flash (the default) never stores the score
  // matrix; unfused (Megatron-LM before flash attention, the 2021-2022 papers' runs) stores softmax input, output
  // and dropout mask, 5 x heads x span^2 bytes per layer (Korthikanti et al. 2022, Table 2; cost_model.h).
  std::string attention = "flash";
  // `model: {name: ..., kernels: eager}`: how the memory-bound kernels run (KernelImpl, core/cost/cost_model.h):
  // fused (the default, Megatron-LM's fused kernels) or eager (PyTorch eager mode: HF transformers, torchtitan
  // without torch.compile), or a mapping per family, {default: eager, norm: fused} (torchtitan's fused_rmsnorm);
  // families norm, rotary, activation, residual, loss (fused | eager) and projections (fused | split).
  KernelImpl kernels;
  // `model: {name: ..., image_attention: bidirectional}`: the LLM attends bidirectionally within each sample's
  // vision tokens (ModelSpec::bidirectional_vision); causal (the default) like the text.
  std::string image_attention = "causal";
  // `model: {name: ..., frozen: [vision, ...]}`: components trained frozen (WithFrozen, core/model/model.h: no
  // gradients, optimizer states or gradient communication for them, and at most the input gradient in their
  // backward); empty = every component trains.
  std::vector<std::string> frozen;
  std::string cluster = "a100-4x200g";
  int nodes = 0;  // 0 = as many as the parallel layout needs: ceil(dp * tp * pp / gpus_per_node)
  // `cluster: {preset: ..., device: {KEY: number}}`: numeric keys of the preset's device replaced (a what-if GPU,
  // or the published-runs fit, calibrate/published.h); checked as the preset's own keys (LoadScenarioCluster).
  std::map<std::string, double> device;
  // The same mapping's keys that take words (kDeviceTextKeys, core/cluster/cluster.h: `allocator_model: replay`).
  std::map<std::string, std::string> device_text;
  ParallelConfig parallel;
  PolicyRef data{"random", {}};
  PolicyRef partition{"uniform", {}};
  PolicyRef recompute{"none", {}};
  PolicyRef schedule{"1f1b", {}};
  // Sequence parallelism (core/plan/seqpar.h: none, ring, zigzag-ring, ulysses, 2d, megatron-cp,
  // megatron-cp+tp); its degree is parallel.sp (sp_ulysses x sp_ring for 2d).
  PolicyRef sp{"none", {}};
  // Where the encoders run (core/plan/encoder.h: pipeline, bubbles).
  PolicyRef encoder{"pipeline", {}};
  int64_t iterations = 8;  // sampled iterations to replay
  bool epoch = false;      // replay every iteration of the epoch instead
  uint64_t seed = 1;       // policies' seed
  std::string engine = "analytic";
  // Per-layer time model: "analytic" (FLOPs at the device's achieved rate, core/cost) or a cost-coefficient
  // CSV (CoefficientCostModel, e.g. fitted from measurements; relative paths resolve against the scenario's
  // folder). FLOPs and bytes always come from the analytic model.
  std::string cost = "analytic";
  BackendConfig backend;
  // Where each key was written in `path`: dotted key ("trace.samples", "policies.data.params.radius") -> line.
  // For messages only (ScenarioError, CheckScenario); not compared by operator==, not written by FormatScenario.
  std::map<std::string, long> lines;
};

// "path:line: key: reason" for a key of a loaded scenario (the key's own line, else its nearest parent's), or
// "scenario NAME: key: reason" for one built in code. Planner and driver errors about a key use it, so every
// message names where to fix it.
Error ScenarioError(const Scenario& s, const std::string& dotted_key, const std::string& reason);

// Reading a scenario is two steps: parsing (the text into the struct) and checking (the struct's values).
//
//   MMTWIN_ASSIGN_OR_RETURN(Scenario s, ReadScenario(text, "x.yaml", "."));   // parse only
//   s.parallel.tp = 16;                                                       // edited in memory
//   MMTWIN_RETURN_IF_ERROR(CheckScenario(s));  // "x.yaml:5: parallel.tp: tensor parallelism stays inside..."
//
// ReadScenario parses, and nothing else: YAML syntax, unknown or duplicate keys, types, the range of every number
// and the shapes (trace: exactly one of file, preset and sequence_tokens; a policy is a name or {name, params}),
// each error `file:line: key: reason`. It records where each key was written (Scenario::lines), fills in the
// trace preset's default size and makes file paths absolute against `base_dir`. It looks nothing up (policy
// names, the model, the cluster, files: CheckScenario's), and `nodes` stays as written (0 = automatic).
Result<Scenario> ReadScenario(const std::string& yaml_text, const std::string& name,
                              const std::string& base_dir);
// Every check of a scenario's values, on the struct: a parsed one, one edited in memory (the GUI editor) or one
// built in code. Names (not empty, `name` a folder name), the trace source (preset known, file present), the
// ranges ReadScenario also checks, policy names and parameters against the registries (core/balance, core/plan),
// the engine, the model (zoo or file, model.image_px, backend.layers) and the cluster, and the cross-field rules:
// vpp > 1 needs interleaved-1f1b, pp * vpp <= the model's layers, tp within a node, the sequence-parallel layout
// (core/plan/seqpar.h), enough nodes for dp * tp * pp * sp, the schedule's shape (CheckScheduleShape), the cost
// file against the model. Reads the model, cluster and cost files, not the trace. The first error, naming the
// field: `file:line: key: reason` at the line Scenario::lines gives (the key's own, else its nearest parent's),
// `file: key: reason` when the key was not written, "scenario NAME: key: reason" for a struct built in code.
Status CheckScenario(const Scenario& s);
// CheckScenario, then an automatic `nodes` (0) resolved (ScenarioNodes): what ParseScenario returns for a text
// that ReadScenario read into `s`.
Result<Scenario> CheckAndResolveScenario(Scenario s);
// `s.nodes`, or, when it is 0 (automatic), just enough nodes of `gpus_per_node` GPUs for dp * tp * pp * sp.
int ScenarioNodes(const Scenario& s, int gpus_per_node);

// ReadScenario, then CheckAndResolveScenario: a scenario file's text, parsed and checked.
Result<Scenario> ParseScenario(const std::string& yaml_text, const std::string& name,
                               const std::string& base_dir);
// ParseScenario of the file's text (relative paths against the file's folder).
Result<Scenario> LoadScenario(const std::string& path);
// The scenario's model: the zoo spec or file, fed `model.image_px` tiles when set (WithImagePx), shrunk by
// `backend` when it sets a width divisor or layer counts (core/model/model.h: ShrinkModel). Errors name the
// scenario key.
Result<ModelSpec> LoadScenarioModel(const Scenario& s);
// The scenario's cluster: the preset or file `cluster` with `cluster.device` applied, `nodes_override` nodes
// (> 0) or the preset's. Errors are the loader's, with the key when it is a device override.
Result<ClusterSpec> LoadScenarioCluster(const Scenario& s, int nodes_override = 0);
// The cost model a scenario names: AnalyticCostModel for `cost: analytic`, else the CoefficientCostModel in the
// CSV file s.cost (its analytic part for `cluster`'s device and the layout's tp; checked against `model` with
// Supports). Errors are the loader's (the planner and CheckScenario name the key).
Result<std::shared_ptr<const CostModel>> LoadScenarioCostModel(const Scenario& s, const ModelSpec& model,
                                                               const ClusterSpec& cluster);
// The fully resolved scenario as YAML (every default filled in), written next to the run's outputs.
std::string FormatScenario(const Scenario& s);
// `s` with every absolute file path in it (trace file, model, cluster and cost files) made relative to `base_dir`
// (which LoadScenario / ParseScenario resolve them against again): a resolved scenario that names no machine's
// folders, for sweep run keys and for run folders kept in a repository. Zoo and preset names are left alone.
Scenario WithPathsRelativeTo(Scenario s, const std::string& base_dir);
// `s` as the real backend runs it: the keys that only say how the analytic model prices a kernel (model.attention,
// model.kernels; the backend runs its own LibTorch operators whatever they say) back at their defaults. Two
// scenarios with the same WithoutPricingKeys are the same backend run (validate's --reuse).
Scenario WithoutPricingKeys(Scenario s);

// Field-wise equality (ParseScenario(FormatScenario(s)) == s for a parsed s). `iterations` is compared only when
// `epoch` is false (an epoch replay ignores it); `path` and `lines` are not compared (where the text came from).
bool operator==(const PolicyRef& a, const PolicyRef& b);
bool operator==(const TraceSource& a, const TraceSource& b);
bool operator==(const Scenario& a, const Scenario& b);

// Evaluation engines a scenario (or `mmtwin simulate --engine`) may name: "analytic" and "simgrid" (whether
// this build has the SimGrid engine is the driver's business: driver/driver.h). CheckEngine: "unknown engine 'x';
// valid values are: analytic (...)".
const std::vector<std::string>& ScenarioEngines();
Status CheckEngine(const std::string& engine);

// Overrides (override.cc): sweep axes, the GUI's what-ifs; any scenario key by its dotted name.
//
//   MMTWIN_RETURN_IF_ERROR(ApplyOverride(s, "policies.partition.params.radius", "3"));
//   MMTWIN_ASSIGN_OR_RETURN(Scenario t, ParseScenarioWithOverrides(text, "x.yaml", ".",
//                                                                  {{"parallel.vpp", "2"},
//                                                                   {"policies.schedule", "interleaved-1f1b"}}));

// One override: a dotted scenario key ("policies.data", "parallel.pp", "cluster", "cluster.nodes",
// "policies.partition.params.radius") and its value as YAML text ("isf", "4", "{name: bmp, params: {radius: 2}}").
// A bare policy or cluster name under an overridden sub-key becomes a mapping ({name: bare} / {preset: bare}).
struct ScenarioOverride {
  std::string key;
  std::string yaml_value;
};

// OK when `dotted_key` names a scenario key (scenarios/README.md); else "unknown key 'x'; valid keys are: ...".
Status CheckOverrideKey(const std::string& dotted_key);
// The scenario YAML text with the overrides applied in order (not validated: parse the result).
Result<std::string> OverrideScenarioYaml(const std::string& yaml_text,
                                         const std::vector<ScenarioOverride>& overrides);
// Applies every override to the scenario text, then parses and checks once (ParseScenario; so keys that must change
// together, such as parallel.vpp and policies.schedule, can). Errors name `name`.
Result<Scenario> ParseScenarioWithOverrides(const std::string& yaml_text, const std::string& name,
                                            const std::string& base_dir,
                                            const std::vector<ScenarioOverride>& overrides);
// One override on a resolved scenario (through FormatScenario and ParseScenario). When cluster.nodes was the
// automatic value (just enough nodes for the layout), it stays automatic for the new layout or cluster.
Status ApplyOverride(Scenario& s, const std::string& dotted_key, const std::string& yaml_value);

}  // namespace mmtwin

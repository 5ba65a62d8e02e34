// SPDX-License-Identifier: Apache-2.0
// The scenario's keys and the ranges of its numbers (core-internal: scenario.cc, check.cc and override.cc include
// it): one table read by the parser (ReadScenario: the keys each mapping may hold, numbers read into their field
// within range), the checker (CheckScenario: the same ranges on a struct built in code) and the override key check
// (CheckOverrideKey). scenarios/README.md documents every key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/scenario/scenario.h"

namespace mmtwin::scenario_schema {

// The keys of each mapping of a scenario file.
inline const std::vector<std::string> kTopKeys = {"name",    "description", "trace",    "model",
                                                  "cluster", "parallel",    "policies", "iterations",
                                                  "seed",    "engine",      "cost",     "backend"};
inline const std::vector<std::string> kTraceKeys = {"file", "preset", "samples", "seed", "sequence_tokens"};
inline const std::vector<std::string> kModelKeys = {"name",    "image_px",        "token_merge", "attention",
                                                    "kernels", "image_attention", "frozen"};
inline const std::vector<std::string> kClusterKeys = {"preset", "nodes", "device"};
inline const std::vector<std::string> kParallelKeys = {"dp",
                                                       "tp",
                                                       "pp",
                                                       "vpp",
                                                       "micro_batches",
                                                       "zero_stage",
                                                       "tp_sequence_parallel",
                                                       "sp",
                                                       "sp_ulysses",
                                                       "sp_ring",
                                                       "zero3_impl",
                                                       "optimizer_memory",
                                                       "zero3_shard_group",
                                                       "overlap_grad_reduce",
                                                       "grad_reduce_dtype",
                                                       "tp_comm_overlap"};
inline const std::vector<std::string> kPolicyKinds = {"data",     "partition", "recompute",
                                                      "schedule", "sp",        "encoder"};
inline const std::vector<std::string> kPolicyKeys = {"name", "params"};
inline const std::vector<std::string> kBackendKeys = {
    "width_divisor", "layers", "warmup_iterations", "timeout_s", "threads", "device", "autocast"};
inline const std::vector<std::string> kBackendDevices = {"cpu", "cuda"};
inline const std::vector<std::string> kBackendAutocasts = {"none", "bf16"};

constexpr int64_t kMaxDegree = 1 << 20;    // dp, micro_batches, sp
constexpr int64_t kMaxSmallDegree = 4096;  // tp, pp, vpp
constexpr int64_t kMaxWorld = 1 << 24;     // dp * tp * pp * sp GPUs; cluster.nodes
constexpr int64_t kMaxIterations = 1000000000;
constexpr int64_t kMaxTraceSamples = 100000000;  // the generator's limit
constexpr int64_t kMaxSequenceTokens = int64_t{1} << 31;
constexpr int64_t kMaxImagePx = 1 << 16;
constexpr int64_t kMaxWidthDivisor = 1 << 16;
constexpr int64_t kMaxShrunkLayers = 10000;  // backend.layers.COMPONENT
constexpr double kMaxTimeoutS = 86400;       // backend.timeout_s in [1, kMaxTimeoutS]

// An integer key of `parallel` and the field it fills.
struct ParallelInt {
  const char* key;
  int ParallelConfig::*field;
  int64_t lo, hi;
};
inline constexpr ParallelInt kParallelInts[] = {
    {"dp", &ParallelConfig::dp, 1, kMaxDegree},
    {"tp", &ParallelConfig::tp, 1, kMaxSmallDegree},
    {"pp", &ParallelConfig::pp, 1, kMaxSmallDegree},
    {"vpp", &ParallelConfig::vpp, 1, kMaxSmallDegree},
    {"micro_batches", &ParallelConfig::micro_batches, 1, kMaxDegree},
    {"zero_stage", &ParallelConfig::zero_stage, 0, 3},
    {"sp", &ParallelConfig::sp, 1, kMaxDegree},
    {"sp_ulysses", &ParallelConfig::sp_ulysses, 0, kMaxDegree},
    {"sp_ring", &ParallelConfig::sp_ring, 0, kMaxDegree},
    {"zero3_shard_group", &ParallelConfig::zero3_shard_group, 0, kMaxDegree}};
inline const std::vector<std::string> kZero3Impls = {"simple", "fsdp", "deepspeed"};
inline const std::vector<std::string> kGradReduceDtypes = {"param", "fp32"};

// An integer key of `backend` and the field it fills.
struct BackendInt {
  const char* key;
  int BackendConfig::*field;
  int64_t lo, hi;
};
inline constexpr BackendInt kBackendInts[] = {
    {"warmup_iterations", &BackendConfig::warmup_iterations, 0, 1000},
    {"threads", &BackendConfig::threads, 1, 1024}};

// "5 is out of range [1, 4]": the one wording of a number outside its key's range.
inline std::string OutOfRange(int64_t v, int64_t lo, int64_t hi) {
  return std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}
// The wording of iterations outside [1, kMaxIterations] (the text as written, or the number).
inline std::string BadIterations(const std::string& written) {
  return "'" + written + "' is not an integer in [1, " + std::to_string(kMaxIterations) + "] or \"epoch\"";
}
inline constexpr const char* kBadTimeout = "expected seconds in [1, 86400]";

}  // namespace mmtwin::scenario_schema

// SPDX-License-Identifier: Apache-2.0
// The run records' codec (records_codec.h).
#include "core/records/records_codec.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/records/records_json.h"
#include "core/util/csv.h"
#include "core/util/text.h"

namespace mmtwin {
namespace {

using nlohmann::json;

json PolicyJson(const PolicyRecord& p) { return {{"name", p.name}, {"params", p.params}}; }

// Typed reads of a parsed summary with `name: a.b.c: reason` errors.
class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  Result<const json*> At(const json& j, const std::string& path, const std::string& key) const {
    if (!j.is_object() || !j.contains(key)) return Error(name_ + ": " + Field(path, key) + ": missing");
    return &j.at(key);
  }
  template <class T>
  Status Get(const json& j, const std::string& path, const std::string& key, T& out) const {
    MMTWIN_ASSIGN_OR_RETURN(const json* v, At(j, path, key));
    if constexpr (std::is_same_v<T, bool>) {
      if (!v->is_boolean()) return Bad(path, key, "a boolean");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v->is_string()) return Bad(path, key, "a string");
    } else if constexpr (std::is_integral_v<T>) {
      if (!v->is_number_integer()) return Bad(path, key, "an integer");
    } else {
      if (!v->is_number()) return Bad(path, key, "a number");
    }
    out = v->get<T>();
    return Status();
  }
  // The same for a key added after schema 1's first files: absent leaves `out` as it is.
  template <class T>
  Status GetOptional(const json& j, const std::string& path, const std::string& key, T& out) const {
    if (!j.is_object() || !j.contains(key)) return Status();
    return Get(j, path, key, out);
  }
  Error Bad(const std::string& path, const std::string& key, const std::string& what) const {
    return Error(name_ + ": " + Field(path, key) + ": expected " + what);
  }
  static std::string Field(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string name_;
};

Status ReadPolicy(const Reader& r, const json& policies, const std::string& key, PolicyRecord& p) {
  MMTWIN_ASSIGN_OR_RETURN(const json* v, r.At(policies, "policies", key));
  const std::string path = "policies." + key;
  MMTWIN_RETURN_IF_ERROR(r.Get(*v, path, "name", p.name));
  MMTWIN_ASSIGN_OR_RETURN(const json* params, r.At(*v, path, "params"));
  if (!params->is_object()) return r.Bad(path, "params", "an object");
  for (const auto& [k, x] : params->items()) {
    if (!x.is_string()) return r.Bad(path + ".params", k, "a string");
    p.params[k] = x.get<std::string>();
  }
  return Status();
}

Status ReadStage(const Reader& r, const json& j, const std::string& path, StageRecord& s) {
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "stage", s.stage));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "first_layer", s.first_layer));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "last_layer", s.last_layer));
  MMTWIN_ASSIGN_OR_RETURN(const json* labels, r.At(j, path, "layer_labels"));
  if (!labels->is_array() || labels->size() != 2 || !(*labels)[0].is_string() || !(*labels)[1].is_string())
    return r.Bad(path, "layer_labels", "two strings");
  s.first_layer_label = (*labels)[0].get<std::string>();
  s.last_layer_label = (*labels)[1].get<std::string>();
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "layers", s.layers));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "params", s.params));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "recomputed_layers", s.recomputed_layers));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "fwd_us_mean", s.fwd_us_mean));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "bwd_us_mean", s.bwd_us_mean));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "recompute_us_mean", s.recompute_us_mean));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "busy_ratio", s.busy_ratio));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "bubble_ratio", s.bubble_ratio));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "idle_ratio", s.idle_ratio));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "model_state_bytes", s.model_state_bytes));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "peak_activation_bytes", s.peak_activation_bytes));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "peak_memory_bytes", s.peak_memory_bytes));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "memory_capacity_bytes", s.memory_capacity_bytes));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, path, "fits", s.fits));
  MMTWIN_RETURN_IF_ERROR(r.GetOptional(j, path, "fragmentation_bytes", s.fragmentation_bytes));
  MMTWIN_RETURN_IF_ERROR(r.GetOptional(j, path, "runtime_bytes", s.runtime_bytes));
  MMTWIN_RETURN_IF_ERROR(r.GetOptional(j, path, "dispatch_us_mean", s.dispatch_us_mean));
  MMTWIN_RETURN_IF_ERROR(r.GetOptional(j, path, "exposed_dispatch_ratio", s.exposed_dispatch_ratio));
  return Status();
}

Result<RunSummary> ReadSummary(const json& j, const std::string& name) {
  const Reader r(name);
  if (!j.is_object()) return Error(name + ": not a summary.json (JSON object expected)");
  RunSummary s;
  if (j.contains("schema_version")) {
    MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "schema_version", s.schema_version));
    if (s.schema_version < 1 || s.schema_version > kRecordsSchemaVersion)
      return Error(name + ": schema_version: " + std::to_string(s.schema_version) +
                   " is not supported (this mmtwin reads 1.." + std::to_string(kRecordsSchemaVersion) + ")");
  }
  if (j.contains("source")) {
    std::string src;
    MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "source", src));
    if (src == "simulated")
      s.source = RecordSource::kSimulated;
    else if (src == "measured")
      s.source = RecordSource::kMeasured;
    else
      return Error(name + ": source: '" + src + "' is not simulated or measured");
  }
  MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "scenario", s.scenario));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "model", s.model));
  MMTWIN_ASSIGN_OR_RETURN(const json* cluster, r.At(j, "", "cluster"));
  MMTWIN_RETURN_IF_ERROR(r.Get(*cluster, "cluster", "preset", s.cluster.preset));
  MMTWIN_RETURN_IF_ERROR(r.Get(*cluster, "cluster", "nodes", s.cluster.nodes));
  MMTWIN_RETURN_IF_ERROR(r.Get(*cluster, "cluster", "device", s.cluster.device));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "engine", s.engine));
  MMTWIN_ASSIGN_OR_RETURN(const json* par, r.At(j, "", "parallel"));
  MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "dp", s.parallel.dp));
  MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "tp", s.parallel.tp));
  MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "pp", s.parallel.pp));
  MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "vpp", s.parallel.vpp));
  MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "micro_batches", s.parallel.micro_batches));
  MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "zero_stage", s.parallel.zero_stage));
  if (par->contains("zero3_impl"))
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "zero3_impl", s.parallel.zero3_impl));
  if (par->contains("optimizer_memory"))
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "optimizer_memory", s.parallel.optimizer_memory));
  if (par->contains("zero3_shard_group"))
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "zero3_shard_group", s.parallel.zero3_shard_group));
  if (par->contains("overlap_grad_reduce"))
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "overlap_grad_reduce", s.parallel.overlap_grad_reduce));
  if (par->contains("grad_reduce_dtype"))
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "grad_reduce_dtype", s.parallel.grad_reduce_dtype));
  if (par->contains("tp_comm_overlap"))
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "tp_comm_overlap", s.parallel.tp_comm_overlap));
  if (par->contains("sp")) {
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "sp", s.parallel.sp));
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "sp_ulysses", s.parallel.sp_ulysses));
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "sp_ring", s.parallel.sp_ring));
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "sp_method", s.parallel.sp_method));
    MMTWIN_RETURN_IF_ERROR(r.Get(*par, "parallel", "sp_one_stage", s.parallel.sp_one_stage));
    if (par->contains("sp_params")) {
      const json& m = par->at("sp_params");
      if (!m.is_object()) return r.Bad("parallel", "sp_params", "an object of strings");
      for (auto it = m.begin(); it != m.end(); ++it) {
        if (!it.value().is_string()) return r.Bad("parallel.sp_params", it.key(), "a string");
        s.parallel.sp_params[it.key()] = it.value().get<std::string>();
      }
    }
  }
  MMTWIN_ASSIGN_OR_RETURN(const json* policies, r.At(j, "", "policies"));
  MMTWIN_RETURN_IF_ERROR(ReadPolicy(r, *policies, "data", s.data_policy));
  MMTWIN_RETURN_IF_ERROR(ReadPolicy(r, *policies, "partition", s.partition_policy));
  MMTWIN_RETURN_IF_ERROR(ReadPolicy(r, *policies, "recompute", s.recompute_policy));
  MMTWIN_RETURN_IF_ERROR(ReadPolicy(r, *policies, "schedule", s.schedule_policy));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "trace_samples", s.trace_samples));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "iterations_in_epoch", s.iterations_in_epoch));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "iterations_replayed", s.iterations_replayed));
  MMTWIN_ASSIGN_OR_RETURN(const json* it, r.At(j, "", "iteration_time_us"));
  IterationTimeStats& t = s.iteration_time_us;
  for (auto [key, field] : {std::pair{"mean", &t.mean},
                            {"p50", &t.p50},
                            {"p99", &t.p99},
                            {"min", &t.min},
                            {"max", &t.max},
                            {"ci95_low", &t.ci95_low},
                            {"ci95_high", &t.ci95_high}})
    MMTWIN_RETURN_IF_ERROR(r.Get(*it, "iteration_time_us", key, *field));
  for (auto [key, field] : {std::pair{"busy_ratio", &s.busy_ratio},
                            {"bubble_ratio", &s.bubble_ratio},
                            {"idle_ratio", &s.idle_ratio},
                            {"exposed_comm_ratio", &s.exposed_comm_ratio},
                            {"recompute_ratio", &s.recompute_ratio},
                            {"tokens_per_s", &s.tokens_per_s},
                            {"samples_per_s", &s.samples_per_s},
                            {"mfu", &s.mfu},
                            {"epoch_time_s", &s.epoch_time_s},
                            {"gpu_days", &s.gpu_days}})
    MMTWIN_RETURN_IF_ERROR(r.Get(j, "", key, *field));
  MMTWIN_RETURN_IF_ERROR(r.GetOptional(j, "", "dispatch_us_mean", s.dispatch_us_mean));
  MMTWIN_RETURN_IF_ERROR(r.GetOptional(j, "", "exposed_dispatch_ratio", s.exposed_dispatch_ratio));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "oom", s.oom));
  MMTWIN_ASSIGN_OR_RETURN(const json* oom, r.At(j, "", "oom_stages"));
  if (!oom->is_array()) return r.Bad("", "oom_stages", "an array");
  for (size_t i = 0; i < oom->size(); ++i) {
    const std::string path = "oom_stages[" + std::to_string(i) + "]";
    OomStage o;
    MMTWIN_RETURN_IF_ERROR(r.Get((*oom)[i], path, "stage", o.stage));
    MMTWIN_RETURN_IF_ERROR(r.Get((*oom)[i], path, "short_bytes", o.short_bytes));
    MMTWIN_RETURN_IF_ERROR(r.Get((*oom)[i], path, "peak_memory_bytes", o.peak_memory_bytes));
    MMTWIN_RETURN_IF_ERROR(r.Get((*oom)[i], path, "memory_capacity_bytes", o.memory_capacity_bytes));
    s.oom_stages.push_back(o);
  }
  MMTWIN_ASSIGN_OR_RETURN(const json* data, r.At(j, "", "data"));
  MMTWIN_RETURN_IF_ERROR(r.Get(*data, "data", "pad_ratio", s.data.pad_ratio));
  MMTWIN_RETURN_IF_ERROR(r.Get(*data, "data", "dist_ratio_vit", s.data.dist_ratio_vit));
  MMTWIN_RETURN_IF_ERROR(r.Get(*data, "data", "dist_ratio_llm", s.data.dist_ratio_llm));
  MMTWIN_RETURN_IF_ERROR(r.Get(*data, "data", "mean_batch_size", s.data.mean_batch_size));
  MMTWIN_RETURN_IF_ERROR(r.Get(*data, "data", "samples_skipped", s.data.samples_skipped));
  MMTWIN_RETURN_IF_ERROR(r.Get(*data, "data", "samples_dropped", s.data.samples_dropped));
  MMTWIN_ASSIGN_OR_RETURN(const json* part, r.At(j, "", "partition"));
  MMTWIN_ASSIGN_OR_RETURN(const json* bounds, r.At(*part, "partition", "bounds"));
  if (!bounds->is_array()) return r.Bad("partition", "bounds", "an array of integers");
  for (const json& b : *bounds) {
    if (!b.is_number_integer()) return r.Bad("partition", "bounds", "an array of integers");
    s.partition.bounds.push_back(b.get<int>());
  }
  MMTWIN_RETURN_IF_ERROR(r.Get(*part, "partition", "var_fwd_us2", s.partition.var_fwd_us2));
  MMTWIN_RETURN_IF_ERROR(r.Get(*part, "partition", "sum_comm_bytes", s.partition.sum_comm_bytes));
  MMTWIN_RETURN_IF_ERROR(r.Get(*part, "partition", "var_params", s.partition.var_params));
  MMTWIN_RETURN_IF_ERROR(r.Get(*part, "partition", "var_layers", s.partition.var_layers));
  MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "recomputed_layers", s.recomputed_layers));
  if (j.contains("image_sizes")) {
    std::string sizes;
    MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "image_sizes", sizes));
    if (!ParseImageSizes(sizes, s.image_sizes))
      return Error(name + ": image_sizes: '" + sizes + "' is not unused, known, upper_bound or mixed");
    MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "images_at_upper_bound", s.images_at_upper_bound));
  }
  if (j.contains("samples_truncated")) {
    MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "max_context", s.max_context));
    MMTWIN_RETURN_IF_ERROR(r.Get(j, "", "samples_truncated", s.samples_truncated));
  }
  MMTWIN_ASSIGN_OR_RETURN(const json* stages, r.At(j, "", "stages"));
  if (!stages->is_array()) return r.Bad("", "stages", "an array");
  for (size_t i = 0; i < stages->size(); ++i) {
    StageRecord st;
    MMTWIN_RETURN_IF_ERROR(ReadStage(r, (*stages)[i], "stages[" + std::to_string(i) + "]", st));
    s.stages.push_back(std::move(st));
  }
  if (j.contains("machine")) {
    MMTWIN_ASSIGN_OR_RETURN(const json* mj, r.At(j, "", "machine"));
    MachineRecord m;
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "host", m.host));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "cpu", m.cpu));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "cores", m.cores));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "threads_per_rank", m.threads_per_rank));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "ranks", m.ranks));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "gpu", m.gpu));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "cuda_driver", m.cuda_driver));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "torch", m.torch));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "load_avg_1m_start", m.load_avg_1m_start));
    MMTWIN_RETURN_IF_ERROR(r.Get(*mj, "machine", "load_avg_1m_end", m.load_avg_1m_end));
    s.machine = std::move(m);
  }
  return s;
}

}  // namespace

const char* RecordSourceName(RecordSource s) {
  return s == RecordSource::kMeasured ? "measured" : "simulated";
}

const char* ImageSizesName(ImageSizes s) {
  switch (s) {
    case ImageSizes::kUnused:
      return "unused";
    case ImageSizes::kKnown:
      return "known";
    case ImageSizes::kUpperBound:
      return "upper_bound";
    case ImageSizes::kMixed:
      return "mixed";
  }
  return "?";
}

bool ParseImageSizes(const std::string& name, ImageSizes& out) {
  for (ImageSizes s : {ImageSizes::kUnused, ImageSizes::kKnown, ImageSizes::kUpperBound, ImageSizes::kMixed})
    if (name == ImageSizesName(s)) {
      out = s;
      return true;
    }
  return false;
}

ImageSizes ImageSizesOf(int64_t priced, int64_t unsized) {
  if (priced <= 0) return ImageSizes::kUnused;
  if (unsized <= 0) return ImageSizes::kKnown;
  return unsized >= priced ? ImageSizes::kUpperBound : ImageSizes::kMixed;
}

std::string SummaryToJson(const RunSummary& s) {
  json j;
  j["schema_version"] = s.schema_version;
  j["source"] = RecordSourceName(s.source);
  j["scenario"] = s.scenario;
  j["model"] = s.model;
  j["cluster"] = {{"preset", s.cluster.preset}, {"nodes", s.cluster.nodes}, {"device", s.cluster.device}};
  j["engine"] = s.engine;
  const ParallelConfig& p = s.parallel;
  j["parallel"] = ParallelJson(p);
  if (p.zero3_impl != "simple") j["parallel"]["zero3_impl"] = p.zero3_impl;
  if (p.optimizer_memory != "auto") j["parallel"]["optimizer_memory"] = p.optimizer_memory;
  if (p.zero3_shard_group != 0) j["parallel"]["zero3_shard_group"] = p.zero3_shard_group;
  if (!p.overlap_grad_reduce) j["parallel"]["overlap_grad_reduce"] = false;
  if (p.grad_reduce_dtype != "param") j["parallel"]["grad_reduce_dtype"] = p.grad_reduce_dtype;
  if (p.tp_comm_overlap) j["parallel"]["tp_comm_overlap"] = true;
  if (p.sp > 1) {  // only with sequence parallelism: summaries without it are unchanged
    j["parallel"]["sp"] = p.sp;
    j["parallel"]["sp_ulysses"] = p.sp_ulysses;
    j["parallel"]["sp_ring"] = p.sp_ring;
    j["parallel"]["sp_method"] = p.sp_method;
    j["parallel"]["sp_one_stage"] = p.sp_one_stage;
    if (!p.sp_params.empty()) j["parallel"]["sp_params"] = p.sp_params;
  }
  j["policies"] = {{"data", PolicyJson(s.data_policy)},
                   {"partition", PolicyJson(s.partition_policy)},
                   {"recompute", PolicyJson(s.recompute_policy)},
                   {"schedule", PolicyJson(s.schedule_policy)}};
  j["trace_samples"] = s.trace_samples;
  j["iterations_in_epoch"] = s.iterations_in_epoch;
  j["iterations_replayed"] = s.iterations_replayed;
  const IterationTimeStats& t = s.iteration_time_us;
  j["iteration_time_us"] = {{"mean", t.mean},
                            {"p50", t.p50},
                            {"p99", t.p99},
                            {"min", t.min},
                            {"max", t.max},
                            {"ci95_low", t.ci95_low},
                            {"ci95_high", t.ci95_high}};
  j["busy_ratio"] = s.busy_ratio;
  j["bubble_ratio"] = s.bubble_ratio;
  j["idle_ratio"] = s.idle_ratio;
  j["exposed_comm_ratio"] = s.exposed_comm_ratio;
  j["dispatch_us_mean"] = s.dispatch_us_mean;
  j["exposed_dispatch_ratio"] = s.exposed_dispatch_ratio;
  j["recompute_ratio"] = s.recompute_ratio;
  j["tokens_per_s"] = s.tokens_per_s;
  j["samples_per_s"] = s.samples_per_s;
  j["mfu"] = s.mfu;
  j["epoch_time_s"] = s.epoch_time_s;
  j["gpu_days"] = s.gpu_days;
  j["oom"] = s.oom;
  json oom = json::array();
  for (const OomStage& o : s.oom_stages)
    oom.push_back({{"stage", o.stage},
                   {"short_bytes", o.short_bytes},
                   {"peak_memory_bytes", o.peak_memory_bytes},
                   {"memory_capacity_bytes", o.memory_capacity_bytes}});
  j["oom_stages"] = oom;
  j["data"] = {{"pad_ratio", s.data.pad_ratio},
               {"dist_ratio_vit", s.data.dist_ratio_vit},
               {"dist_ratio_llm", s.data.dist_ratio_llm},
               {"mean_batch_size", s.data.mean_batch_size},
               {"samples_skipped", s.data.samples_skipped},
               {"samples_dropped", s.data.samples_dropped}};
  j["partition"] = {{"bounds", s.partition.bounds},
                    {"var_fwd_us2", s.partition.var_fwd_us2},
                    {"sum_comm_bytes", s.partition.sum_comm_bytes},
                    {"var_params", s.partition.var_params},
                    {"var_layers", s.partition.var_layers}};
  j["recomputed_layers"] = s.recomputed_layers;
  if (s.image_sizes != ImageSizes::kUnused) {  // only where an if_larger encoder priced images
    j["image_sizes"] = ImageSizesName(s.image_sizes);
    j["images_at_upper_bound"] = s.images_at_upper_bound;
  }
  if (s.samples_truncated > 0) {  // only where the model's context cut samples: other summaries are unchanged
    j["max_context"] = s.max_context;
    j["samples_truncated"] = s.samples_truncated;
  }
  json stages = json::array();
  for (const StageRecord& st : s.stages) stages.push_back(StageJson(st));
  j["stages"] = stages;
  if (s.machine) {  // measured runs only: simulated summaries are unchanged
    const MachineRecord& m = *s.machine;
    j["machine"] = {{"host", m.host},
                    {"cpu", m.cpu},
                    {"cores", m.cores},
                    {"threads_per_rank", m.threads_per_rank},
                    {"ranks", m.ranks},
                    {"gpu", m.gpu},
                    {"cuda_driver", m.cuda_driver},
                    {"torch", m.torch},
                    {"load_avg_1m_start", m.load_avg_1m_start},
                    {"load_avg_1m_end", m.load_avg_1m_end}};
  }
  return j.dump(2);
}

Result<RunSummary> SummaryFromJson(const std::string& text, const std::string& name) {
  MMTWIN_ASSIGN_OR_RETURN(const json j, ParseJsonObject(text, name, "a summary.json"));
  return ReadSummary(j, name);
}

std::string StagesCsv(const std::vector<StageRecord>& stages) {
  std::ostringstream csv;
  csv << "stage,first_layer,last_layer,layers,params,recomputed_layers,fwd_us_mean,bwd_us_mean,recompute_us_"
         "mean,"
         "busy_ratio,bubble_ratio,idle_ratio,model_state_bytes,peak_activation_bytes,peak_memory_bytes,"
         "memory_capacity_bytes,fits,dispatch_us_mean,exposed_dispatch_ratio\n";
  for (const StageRecord& s : stages)
    csv << s.stage << "," << s.first_layer << "," << s.last_layer << "," << s.layers << "," << s.params << ","
        << s.recomputed_layers << "," << s.fwd_us_mean << "," << s.bwd_us_mean << "," << s.recompute_us_mean
        << "," << s.busy_ratio << "," << s.bubble_ratio << "," << s.idle_ratio << "," << s.model_state_bytes
        << "," << s.peak_activation_bytes << "," << s.peak_memory_bytes << "," << s.memory_capacity_bytes
        << "," << (s.fits ? "true" : "false") << "," << s.dispatch_us_mean << "," << s.exposed_dispatch_ratio
        << "\n";
  return csv.str();
}

namespace {

// ops.csv v1 had no pass column; v2 (written now) appends it.
constexpr int kOpsVersion = 2;
constexpr const char* kOpsHeaderV1 =
    "source,iteration,kind,lane,device,peer,micro_batch,chunk,start_us,duration_us,bytes,tokens,"
    "attention_pairs,spans";
constexpr const char* kOpsHeader =
    "source,iteration,kind,lane,device,peer,micro_batch,chunk,start_us,duration_us,bytes,tokens,"
    "attention_pairs,spans,pass";

const char* PassName(PassKind k) {
  switch (k) {
    case PassKind::kForward:
      return "forward";
    case PassKind::kBackward:
      return "backward";
    case PassKind::kBackwardInput:
      return "backward_input";
    case PassKind::kBackwardWeight:
      return "backward_weight";
  }
  return "?";
}

// Appends the shortest decimal text that reads back as exactly `x` (std::to_chars), then `sep`.
void AppendNum(std::string& out, double x, char sep) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, r.ptr);
  out.push_back(sep);
}
void AppendInt(std::string& out, int64_t x, char sep) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, r.ptr);
  out.push_back(sep);
}
void AppendText(std::string& out, const char* text, char sep) {
  out.append(text);
  out.push_back(sep);
}

}  // namespace

// One row per op, appended in place (a 16k-GPU run writes millions of rows): no temporaries per field.
std::string OpsCsv(const std::vector<OpRecord>& ops) {
  std::string out = "# mmtwin-ops v" + std::to_string(kOpsVersion) + "\n" + kOpsHeader + "\n";
  out.reserve(out.size() + ops.size() * 96);
  for (const OpRecord& o : ops) {
    AppendText(out, RecordSourceName(o.source), ',');
    AppendInt(out, o.iteration, ',');
    AppendText(out, OpKindName(o.kind), ',');
    AppendText(out, LaneName(o.lane), ',');
    AppendInt(out, o.device, ',');
    AppendInt(out, o.peer, ',');
    AppendInt(out, o.micro_batch, ',');
    AppendInt(out, o.chunk, ',');
    AppendNum(out, o.start_us, ',');
    AppendNum(out, o.duration_us, ',');
    AppendInt(out, o.bytes, ',');
    AppendInt(out, o.tokens, ',');
    AppendNum(out, o.attention_pairs, ',');
    AppendInt(out, o.spans, ',');
    AppendText(out, PassName(o.pass), '\n');
  }
  return out;
}

Result<std::vector<OpRecord>> ParseOpsCsv(const std::string& text, const std::string& name) {
  std::vector<OpRecord> ops;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  bool header = false;
  auto kind_of = [](const std::string& s, OpKind& k) { return ParseOpKind(s, k); };
  auto lane_of = [](const std::string& s, Lane& l) {
    for (int i = 0; i < kNumLanes; ++i)
      if (s == LaneName(static_cast<Lane>(i))) {
        l = static_cast<Lane>(i);
        return true;
      }
    return false;
  };
  static const char* kFields[] = {
      "source",   "iteration",   "kind",  "lane",   "device",          "peer",  "micro_batch", "chunk",
      "start_us", "duration_us", "bytes", "tokens", "attention_pairs", "spans", "pass"};
  int version = kOpsVersion;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {  // comments; the version line must name a version this mmtwin reads
      if (line.rfind("# mmtwin-ops v", 0) == 0) {
        if (line == "# mmtwin-ops v1")
          version = 1;
        else if (line == "# mmtwin-ops v" + std::to_string(kOpsVersion))
          version = kOpsVersion;
        else
          return Error::At(name, line_no, "",
                           "unsupported version '" + line.substr(2) + "' (this mmtwin reads v1 and v" +
                               std::to_string(kOpsVersion) + ")");
      }
      continue;
    }
    const char* want_header = version == 1 ? kOpsHeaderV1 : kOpsHeader;
    if (!header) {
      if (line != want_header)
        return Error::At(name, line_no, "", std::string("expected the header ") + want_header);
      header = true;
      continue;
    }
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    const size_t fields = version == 1 ? 14 : 15;
    if (f.size() != fields)
      return Error::At(name, line_no, "",
                       "expected " + std::to_string(fields) + " fields, got " + std::to_string(f.size()));
    OpRecord o;
    auto bad = [&](int i) {
      return Error::At(name, line_no, kFields[i], "'" + Abbreviate(f[i]) + "' is not valid");
    };
    if (f[0] == "simulated")
      o.source = RecordSource::kSimulated;
    else if (f[0] == "measured")
      o.source = RecordSource::kMeasured;
    else
      return bad(0);
    int64_t v = 0;
    if (!ParseInt64(f[1], o.iteration)) return bad(1);
    if (!kind_of(f[2], o.kind)) return bad(2);
    if (!lane_of(f[3], o.lane)) return bad(3);
    int32_t* ints[] = {&o.device, &o.peer, &o.micro_batch, &o.chunk};
    for (int i = 0; i < 4; ++i) {
      if (!ParseInt64(f[4 + i], v) || v < INT32_MIN || v > INT32_MAX) return bad(4 + i);
      *ints[i] = static_cast<int32_t>(v);
    }
    if (!ParseDouble(f[8], o.start_us)) return bad(8);
    if (!ParseDouble(f[9], o.duration_us) || o.duration_us < 0) return bad(9);
    if (!ParseInt64(f[10], o.bytes) || o.bytes < 0) return bad(10);
    if (!ParseInt64(f[11], o.tokens) || o.tokens < 0) return bad(11);
    if (!ParseDouble(f[12], o.attention_pairs) || o.attention_pairs < 0) return bad(12);
    if (!ParseInt64(f[13], v) || v < 0 || v > INT32_MAX) return bad(13);
    o.spans = static_cast<int32_t>(v);
    if (version == 1) {  // v1 had no pass: a backward op's pass is its own kind's
      o.pass = o.kind == OpKind::kBackward         ? PassKind::kBackward
               : o.kind == OpKind::kBackwardWeight ? PassKind::kBackwardWeight
                                                   : PassKind::kForward;
    } else {
      bool known = false;
      for (PassKind k :
           {PassKind::kForward, PassKind::kBackward, PassKind::kBackwardInput, PassKind::kBackwardWeight})
        if (f[14] == PassName(k)) {
          o.pass = k;
          known = true;
        }
      if (!known) return bad(14);
    }
    ops.push_back(o);
  }
  if (!header)
    return Error::At(name, 1, "",
                     std::string("expected the header ") + (version == 1 ? kOpsHeaderV1 : kOpsHeader));
  return ops;
}

const std::vector<SummaryColumn>& SummaryColumns() {
  using S = const RunSummary&;
  static const std::vector<SummaryColumn> kColumns = {
      {"iteration_time_us_mean", "REAL", [](S s) -> SummaryValue { return s.iteration_time_us.mean; }},
      {"iteration_time_us_p50", "REAL", [](S s) -> SummaryValue { return s.iteration_time_us.p50; }},
      {"iteration_time_us_p99", "REAL", [](S s) -> SummaryValue { return s.iteration_time_us.p99; }},
      {"iteration_time_us_ci95_low", "REAL",
       [](S s) -> SummaryValue { return s.iteration_time_us.ci95_low; }},
      {"iteration_time_us_ci95_high", "REAL",
       [](S s) -> SummaryValue { return s.iteration_time_us.ci95_high; }},
      {"busy_ratio", "REAL", [](S s) -> SummaryValue { return s.busy_ratio; }},
      {"bubble_ratio", "REAL", [](S s) -> SummaryValue { return s.bubble_ratio; }},
      {"idle_ratio", "REAL", [](S s) -> SummaryValue { return s.idle_ratio; }},
      {"recompute_ratio", "REAL", [](S s) -> SummaryValue { return s.recompute_ratio; }},
      {"exposed_comm_ratio", "REAL", [](S s) -> SummaryValue { return s.exposed_comm_ratio; }},
      {"tokens_per_s", "REAL", [](S s) -> SummaryValue { return s.tokens_per_s; }},
      {"samples_per_s", "REAL", [](S s) -> SummaryValue { return s.samples_per_s; }},
      {"mfu", "REAL", [](S s) -> SummaryValue { return s.mfu; }},
      {"epoch_time_s", "REAL", [](S s) -> SummaryValue { return s.epoch_time_s; }},
      {"gpu_days", "REAL", [](S s) -> SummaryValue { return s.gpu_days; }},
      {"oom", "INTEGER", [](S s) -> SummaryValue { return int64_t{s.oom}; }},
      {"pad_ratio", "REAL", [](S s) -> SummaryValue { return s.data.pad_ratio; }},
      {"dist_ratio_vit", "REAL", [](S s) -> SummaryValue { return s.data.dist_ratio_vit; }},
      {"dist_ratio_llm", "REAL", [](S s) -> SummaryValue { return s.data.dist_ratio_llm; }},
      {"mean_batch_size", "REAL", [](S s) -> SummaryValue { return s.data.mean_batch_size; }},
      {"partition_var_fwd_us2", "REAL", [](S s) -> SummaryValue { return s.partition.var_fwd_us2; }},
      {"partition_var_params", "REAL", [](S s) -> SummaryValue { return s.partition.var_params; }},
      {"partition_var_layers", "REAL", [](S s) -> SummaryValue { return s.partition.var_layers; }},
      {"partition_sum_comm_bytes", "REAL", [](S s) -> SummaryValue { return s.partition.sum_comm_bytes; }},
      {"recomputed_layers", "REAL", [](S s) -> SummaryValue { return int64_t{s.recomputed_layers}; }},
      {"iterations_replayed", "REAL", [](S s) -> SummaryValue { return s.iterations_replayed; }},
      {"iterations_in_epoch", "REAL", [](S s) -> SummaryValue { return s.iterations_in_epoch; }},
      {"trace_samples", "REAL", [](S s) -> SummaryValue { return s.trace_samples; }},
      {"engine", "TEXT", [](S s) -> SummaryValue { return s.engine; }},
      {"source", "TEXT", [](S s) -> SummaryValue { return std::string(RecordSourceName(s.source)); }},
  };
  return kColumns;
}

}  // namespace mmtwin

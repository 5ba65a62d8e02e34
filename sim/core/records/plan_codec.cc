// SPDX-License-Identifier: Apache-2.0
// The plan's JSON codec (plan_codec.h).
#include "core/records/plan_codec.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/plan/schedule.h"
#include "core/records/records_json.h"

namespace mmtwin {
namespace {

using nlohmann::json;

// Field-named errors: "name: field: reason".
struct In {
  const std::string& name;
  Error Bad(const std::string& field, const std::string& what) const {
    return Error(name + ": " + field + ": " + what);
  }
  Result<const json*> Get(const json& j, const std::string& path, const char* key) const {
    if (!j.is_object() || !j.contains(key)) return Bad(path.empty() ? key : path + "." + key, "missing");
    return &j.at(key);
  }
  template <class T>
  Status Read(const json& j, const std::string& path, const char* key, T& out) const {
    MMTWIN_ASSIGN_OR_RETURN(const json* v, Get(j, path, key));
    const std::string field = path.empty() ? key : path + "." + key;
    if constexpr (std::is_same_v<T, bool>) {
      if (!v->is_boolean()) return Bad(field, "expected a boolean");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v->is_string()) return Bad(field, "expected a string");
    } else {
      if (!v->is_number_integer()) return Bad(field, "expected an integer");
    }
    out = v->get<T>();
    return Status();
  }
  Status ReadU64(const json& j, const std::string& path, const char* key, uint64_t& out) const {
    std::string s;
    MMTWIN_RETURN_IF_ERROR(Read(j, path, key, s));
    const std::string field = path.empty() ? key : path + "." + key;
    if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos)
      return Bad(field, "expected an unsigned 64-bit integer as a decimal string");
    errno = 0;
    char* end = nullptr;
    out = std::strtoull(s.c_str(), &end, 10);
    if (errno == ERANGE) return Bad(field, "out of range");
    return Status();
  }
};

// Schedule op codes: F forward, B whole backward, BI / BW the input / weight gradient of a split backward.
const char* PassCode(PassKind k) {
  switch (k) {
    case PassKind::kForward:
      return "F";
    case PassKind::kBackward:
      return "B";
    case PassKind::kBackwardInput:
      return "BI";
    case PassKind::kBackwardWeight:
      return "BW";
  }
  return "?";
}

bool PassOfCode(const std::string& code, PassKind& out) {
  for (PassKind k :
       {PassKind::kForward, PassKind::kBackward, PassKind::kBackwardInput, PassKind::kBackwardWeight})
    if (code == PassCode(k)) {
      out = k;
      return true;
    }
  return false;
}

Result<std::vector<int64_t>> Ints(const In& in, const json& v, const std::string& field) {
  if (!v.is_array()) return in.Bad(field, "expected an array of integers");
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (const json& x : v) {
    if (!x.is_number_integer()) return in.Bad(field, "expected an array of integers");
    out.push_back(x.get<int64_t>());
  }
  return out;
}

// The plan's identity: schema version, scenario, model, cluster, trace, seed, epoch, bucket size, packing.
Status ReadHeader(const In& in, const json& j, Plan& p) {
  MMTWIN_RETURN_IF_ERROR(in.Read(j, "", "schema_version", p.schema_version));
  if (p.schema_version != kPlanSchemaVersion)
    return in.Bad("schema_version", std::to_string(p.schema_version) +
                                        " is not supported (this mmtwin reads " +
                                        std::to_string(kPlanSchemaVersion) + ")");
  MMTWIN_RETURN_IF_ERROR(in.Read(j, "", "scenario", p.scenario));
  MMTWIN_RETURN_IF_ERROR(in.Read(j, "", "model", p.model));
  MMTWIN_RETURN_IF_ERROR(in.Read(j, "", "cluster", p.cluster));
  MMTWIN_RETURN_IF_ERROR(in.Read(j, "", "nodes", p.nodes));
  MMTWIN_ASSIGN_OR_RETURN(const json* trace, in.Get(j, "", "trace"));
  MMTWIN_RETURN_IF_ERROR(in.Read(*trace, "trace", "file", p.trace.file));
  MMTWIN_RETURN_IF_ERROR(in.Read(*trace, "trace", "preset", p.trace.preset));
  MMTWIN_RETURN_IF_ERROR(in.Read(*trace, "trace", "samples", p.trace.samples));
  MMTWIN_RETURN_IF_ERROR(in.ReadU64(*trace, "trace", "seed", p.trace.seed));
  MMTWIN_RETURN_IF_ERROR(in.ReadU64(*trace, "trace", "digest", p.trace.digest));
  MMTWIN_RETURN_IF_ERROR(in.ReadU64(j, "", "seed", p.seed));
  MMTWIN_RETURN_IF_ERROR(in.Read(j, "", "iterations_in_epoch", p.iterations_in_epoch));
  MMTWIN_RETURN_IF_ERROR(in.Read(j, "", "dp_bucket_bytes", p.dp_bucket_bytes));
  if (p.dp_bucket_bytes <= 0) return in.Bad("dp_bucket_bytes", "must be > 0");
  return in.Read(j, "", "packed", p.packed);
}

Status ReadParallel(const In& in, const json& j, ParallelConfig& pc) {
  MMTWIN_ASSIGN_OR_RETURN(const json* par, in.Get(j, "", "parallel"));
  MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "dp", pc.dp));
  MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "tp", pc.tp));
  MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "pp", pc.pp));
  MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "vpp", pc.vpp));
  MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "micro_batches", pc.micro_batches));
  MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "zero_stage", pc.zero_stage));
  MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "tp_sequence_parallel", pc.tp_sequence_parallel));
  if (par->contains("zero3_impl"))
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "zero3_impl", pc.zero3_impl));
  if (par->contains("optimizer_memory"))
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "optimizer_memory", pc.optimizer_memory));
  if (par->contains("zero3_shard_group"))
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "zero3_shard_group", pc.zero3_shard_group));
  if (par->contains("overlap_grad_reduce"))
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "overlap_grad_reduce", pc.overlap_grad_reduce));
  if (par->contains("grad_reduce_dtype"))
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "grad_reduce_dtype", pc.grad_reduce_dtype));
  if (par->contains("tp_comm_overlap"))
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "tp_comm_overlap", pc.tp_comm_overlap));
  if (par->contains("sp")) {
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "sp", pc.sp));
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "sp_ulysses", pc.sp_ulysses));
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "sp_ring", pc.sp_ring));
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "sp_method", pc.sp_method));
    MMTWIN_RETURN_IF_ERROR(in.Read(*par, "parallel", "sp_one_stage", pc.sp_one_stage));
    if (par->contains("sp_params")) {
      const json& m = par->at("sp_params");
      if (!m.is_object()) return in.Bad("parallel.sp_params", "expected an object of strings");
      for (auto it = m.begin(); it != m.end(); ++it) {
        if (!it.value().is_string()) return in.Bad("parallel.sp_params." + it.key(), "expected a string");
        pc.sp_params[it.key()] = it.value().get<std::string>();
      }
    }
    if (pc.sp < 1) return in.Bad("parallel", "sp must be >= 1");
  }
  if (pc.dp < 1 || pc.tp < 1 || pc.pp < 1 || pc.vpp < 1 || pc.micro_batches < 1)
    return in.Bad("parallel", "sizes must be >= 1");
  return Status();
}

// The partition's chunk bounds and the recompute flag of every layer.
Status ReadLayers(const In& in, const json& j, Plan& p) {
  MMTWIN_ASSIGN_OR_RETURN(const json* bounds, in.Get(j, "", "partition"));
  MMTWIN_ASSIGN_OR_RETURN(std::vector<int64_t> b, Ints(in, *bounds, "partition"));
  p.partition.bounds.assign(b.begin(), b.end());
  if (p.partition.bounds.empty()) return in.Bad("partition", "expected the chunk bounds");
  if (p.partition.bounds.front() < 0) return in.Bad("partition", "bounds must be >= 0");
  if (Status st = ValidatePartition(p.partition, p.partition.bounds.back(), p.parallel.chunks(),
                                    p.partition.bounds.front());
      !st.ok())
    return in.Bad("partition", st.error().message());
  MMTWIN_ASSIGN_OR_RETURN(const json* rc, in.Get(j, "", "recompute"));
  MMTWIN_ASSIGN_OR_RETURN(std::vector<int64_t> r, Ints(in, *rc, "recompute"));
  if (static_cast<int>(r.size()) != p.partition.bounds.back())
    return in.Bad("recompute",
                  "expected one entry per layer (" + std::to_string(p.partition.bounds.back()) + ")");
  for (int64_t x : r) {
    if (x < 0 || x > 2) return in.Bad("recompute", "entries are 0, 1 or 2");
    p.recompute.layers.push_back(static_cast<uint8_t>(x));
  }
  return Status();
}

Status ReadSchedule(const In& in, const json& j, const ParallelConfig& pc, Schedule& s) {
  MMTWIN_ASSIGN_OR_RETURN(const json* sched, in.Get(j, "", "schedule"));
  MMTWIN_RETURN_IF_ERROR(in.Read(*sched, "schedule", "name", s.name));
  MMTWIN_RETURN_IF_ERROR(in.Read(*sched, "schedule", "pp", s.pp));
  MMTWIN_RETURN_IF_ERROR(in.Read(*sched, "schedule", "vpp", s.vpp));
  MMTWIN_RETURN_IF_ERROR(in.Read(*sched, "schedule", "micro_batches", s.micro_batches));
  MMTWIN_ASSIGN_OR_RETURN(const json* per_rank, in.Get(*sched, "schedule", "per_rank"));
  if (!per_rank->is_array()) return in.Bad("schedule.per_rank", "expected an array per pipeline rank");
  for (size_t rank = 0; rank < per_rank->size(); ++rank) {
    const std::string field = "schedule.per_rank[" + std::to_string(rank) + "]";
    const json& ops = (*per_rank)[rank];
    if (!ops.is_array()) return in.Bad(field, "expected an array of [\"F\"|\"B\", micro_batch, chunk]");
    std::vector<PipeOp> list;
    for (const json& op : ops) {
      PassKind kind = PassKind::kForward;
      if (!op.is_array() || op.size() != 3 || !op[0].is_string() || !op[1].is_number_integer() ||
          !op[2].is_number_integer() || !PassOfCode(op[0].get<std::string>(), kind))
        return in.Bad(field, "expected an array of [\"F\"|\"B\"|\"BI\"|\"BW\", micro_batch, chunk]");
      list.push_back({kind, op[1].get<int32_t>(), op[2].get<int32_t>()});
    }
    s.per_rank.push_back(std::move(list));
  }
  // The encoder passes outside the pipeline (absent: none): per rank, ["EF"|"EB", micro_batch, before].
  if (const auto it = sched->find("encoder"); it != sched->end()) {
    if (!it->is_array()) return in.Bad("schedule.encoder", "expected an array per pipeline rank");
    for (size_t rank = 0; rank < it->size(); ++rank) {
      const std::string field = "schedule.encoder[" + std::to_string(rank) + "]";
      const json& passes = (*it)[rank];
      if (!passes.is_array())
        return in.Bad(field, "expected an array of [\"EF\"|\"EB\", micro_batch, before]");
      std::vector<EncoderPass> list;
      for (const json& e : passes) {
        if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_number_integer() ||
            !e[2].is_number_integer() || (e[0] != "EF" && e[0] != "EB"))
          return in.Bad(field, "expected an array of [\"EF\"|\"EB\", micro_batch, before]");
        list.push_back({e[0] == "EF" ? PassKind::kForward : PassKind::kBackward, e[1].get<int32_t>(),
                        e[2].get<int32_t>()});
      }
      s.encoder.push_back(std::move(list));
    }
  }
  if (s.pp != pc.pp || s.vpp != pc.vpp || s.micro_batches != pc.micro_batches)
    return in.Bad("schedule", "pp, vpp and micro_batches must equal the parallel layout's");
  if (Status st = ValidateSchedule(s); !st.ok()) return in.Bad("schedule", st.error().message());
  return Status();
}

// An iteration's sample ids per DP rank and micro-batch (`field`: the iteration's, for errors).
Status ReadMicroBatches(const In& in, const json& x, const std::string& field, const Plan& p,
                        IterationData& it) {
  const ParallelConfig& pc = p.parallel;
  MMTWIN_ASSIGN_OR_RETURN(const json* mbs, in.Get(x, field, "micro_batches"));
  if (!mbs->is_array() || static_cast<int>(mbs->size()) != pc.dp)
    return in.Bad(field + ".micro_batches", "expected dp = " + std::to_string(pc.dp) + " ranks");
  for (const json& rank : *mbs) {
    if (!rank.is_array() || static_cast<int>(rank.size()) != pc.micro_batches)
      return in.Bad(field + ".micro_batches",
                    "expected micro_batches = " + std::to_string(pc.micro_batches) + " per rank");
    std::vector<std::vector<uint32_t>> per_mb;
    for (const json& samples : rank) {
      MMTWIN_ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ints(in, samples, field + ".micro_batches"));
      std::vector<uint32_t> out;
      for (int64_t id : ids) {
        if (id < 0 || id >= p.trace.samples)
          return in.Bad(field + ".micro_batches", "sample " + std::to_string(id) +
                                                      " is outside the trace's " +
                                                      std::to_string(p.trace.samples) + " samples");
        out.push_back(static_cast<uint32_t>(id));
      }
      per_mb.push_back(std::move(out));
    }
    it.micro_batches.push_back(std::move(per_mb));
  }
  return Status();
}

// Dispatch transfer lists (`field`.`key`): at most one per micro-batch, [[src, dst, bytes], ...] each.
Status ReadTransferLists(const In& in, const json& lists, const std::string& field, const std::string& key,
                         const ParallelConfig& pc, std::vector<std::vector<DispatchTransfer>>& out) {
  if (!lists.is_array() || static_cast<int>(lists.size()) > pc.micro_batches)
    return in.Bad(field + "." + key, "expected at most one transfer list per micro-batch");
  for (const json& list : lists) {
    if (!list.is_array()) return in.Bad(field + "." + key, "expected [[src, dst, bytes], ...] lists");
    std::vector<DispatchTransfer> ts;
    for (const json& t : list) {
      if (!t.is_array() || t.size() != 3 || !t[0].is_number_integer() || !t[1].is_number_integer() ||
          !t[2].is_number_integer())
        return in.Bad(field + "." + key, "expected [[src, dst, bytes], ...] lists");
      DispatchTransfer d{t[0].get<int32_t>(), t[1].get<int32_t>(), t[2].get<int64_t>()};
      if (d.src_rank < 0 || d.src_rank >= pc.dp || d.dst_rank < 0 || d.dst_rank >= pc.dp || d.bytes < 0)
        return in.Bad(field + "." + key, "ranks must be in [0, dp) and bytes >= 0");
      ts.push_back(d);
    }
    out.push_back(std::move(ts));
  }
  return Status();
}

Status ReadIterations(const In& in, const json& j, Plan& p) {
  MMTWIN_ASSIGN_OR_RETURN(const json* its, in.Get(j, "", "iterations"));
  if (!its->is_array()) return in.Bad("iterations", "expected an array");
  for (size_t k = 0; k < its->size(); ++k) {
    const std::string field = "iterations[" + std::to_string(k) + "]";
    const json& x = (*its)[k];
    IterationData it;
    MMTWIN_RETURN_IF_ERROR(in.Read(x, field, "epoch_index", it.epoch_index));
    if (it.epoch_index < 0 || it.epoch_index >= p.iterations_in_epoch)
      return in.Bad(field + ".epoch_index",
                    "outside the epoch's " + std::to_string(p.iterations_in_epoch) + " iterations");
    MMTWIN_RETURN_IF_ERROR(ReadMicroBatches(in, x, field, p, it));
    MMTWIN_ASSIGN_OR_RETURN(const json* dispatch, in.Get(x, field, "dispatch"));
    MMTWIN_RETURN_IF_ERROR(ReadTransferLists(in, *dispatch, field, "dispatch", p.parallel, it.dispatch));
    if (x.contains("dispatch_backward"))
      MMTWIN_RETURN_IF_ERROR(ReadTransferLists(in, x.at("dispatch_backward"), field, "dispatch_backward",
                                               p.parallel, it.dispatch_backward));
    if (x.contains("dispatch_overhead")) {
      // [[length_gather_bytes, host_us], ...], one per micro-batch (core/plan/dispatch.h).
      const json& o = x.at("dispatch_overhead");
      const std::string key = field + ".dispatch_overhead";
      if (!o.is_array()) return in.Bad(key, "expected [[length_gather_bytes, host_us], ...]");
      for (const json& e : o) {
        if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_number())
          return in.Bad(key, "expected [[length_gather_bytes, host_us], ...]");
        DispatchOverhead d{e[0].get<int64_t>(), e[1].get<double>()};
        if (d.length_gather_bytes < 0 || !(d.host_us >= 0) || !std::isfinite(d.host_us))
          return in.Bad(key, "length_gather_bytes and host_us must be >= 0");
        it.dispatch_overhead.push_back(d);
      }
    }
    p.iterations.push_back(std::move(it));
  }
  return Status();
}

}  // namespace

std::string PlanToJson(const Plan& p) {
  json j;
  j["schema_version"] = p.schema_version;
  j["scenario"] = p.scenario;
  j["model"] = p.model;
  j["cluster"] = p.cluster;
  j["nodes"] = p.nodes;
  j["trace"] = {{"file", p.trace.file},
                {"preset", p.trace.preset},
                {"samples", p.trace.samples},
                {"seed", std::to_string(p.trace.seed)},
                {"digest", std::to_string(p.trace.digest)}};
  j["seed"] = std::to_string(p.seed);
  j["iterations_in_epoch"] = p.iterations_in_epoch;
  j["dp_bucket_bytes"] = p.dp_bucket_bytes;
  j["packed"] = p.packed;
  const ParallelConfig& par = p.parallel;
  j["parallel"] = {{"dp", par.dp},
                   {"tp", par.tp},
                   {"pp", par.pp},
                   {"vpp", par.vpp},
                   {"micro_batches", par.micro_batches},
                   {"zero_stage", par.zero_stage},
                   {"tp_sequence_parallel", par.tp_sequence_parallel}};
  if (par.zero3_impl != "simple") j["parallel"]["zero3_impl"] = par.zero3_impl;
  if (par.optimizer_memory != "auto") j["parallel"]["optimizer_memory"] = par.optimizer_memory;
  if (par.zero3_shard_group != 0) j["parallel"]["zero3_shard_group"] = par.zero3_shard_group;
  if (!par.overlap_grad_reduce) j["parallel"]["overlap_grad_reduce"] = false;
  if (par.grad_reduce_dtype != "param") j["parallel"]["grad_reduce_dtype"] = par.grad_reduce_dtype;
  if (par.tp_comm_overlap) j["parallel"]["tp_comm_overlap"] = true;
  if (par.sp > 1) {  // written only with sequence parallelism (plans without it read the same as before)
    j["parallel"]["sp"] = par.sp;
    j["parallel"]["sp_ulysses"] = par.sp_ulysses;
    j["parallel"]["sp_ring"] = par.sp_ring;
    j["parallel"]["sp_method"] = par.sp_method;
    j["parallel"]["sp_one_stage"] = par.sp_one_stage;
    if (!par.sp_params.empty()) j["parallel"]["sp_params"] = par.sp_params;
  }
  j["partition"] = p.partition.bounds;
  j["recompute"] = p.recompute.layers;
  json per_rank = json::array();
  for (const auto& rank : p.schedule.per_rank) {
    json ops = json::array();
    for (const PipeOp& op : rank) ops.push_back({PassCode(op.kind), op.micro_batch, op.chunk});
    per_rank.push_back(std::move(ops));
  }
  j["schedule"] = {{"name", p.schedule.name},
                   {"pp", p.schedule.pp},
                   {"vpp", p.schedule.vpp},
                   {"micro_batches", p.schedule.micro_batches},
                   {"per_rank", std::move(per_rank)}};
  if (p.schedule.HasEncoderPasses()) {
    json encoder = json::array();
    for (const auto& rank : p.schedule.encoder) {
      json passes = json::array();
      for (const EncoderPass& e : rank)
        passes.push_back({e.kind == PassKind::kForward ? "EF" : "EB", e.micro_batch, e.before});
      encoder.push_back(std::move(passes));
    }
    j["schedule"]["encoder"] = std::move(encoder);
  }
  json its = json::array();
  auto lists_json = [](const std::vector<std::vector<DispatchTransfer>>& lists) {
    json out = json::array();
    for (const auto& m : lists) {
      json list = json::array();
      for (const DispatchTransfer& t : m) list.push_back({t.src_rank, t.dst_rank, t.bytes});
      out.push_back(std::move(list));
    }
    return out;
  };
  for (const IterationData& it : p.iterations) {
    json x = {{"epoch_index", it.epoch_index},
              {"micro_batches", it.micro_batches},
              {"dispatch", lists_json(it.dispatch)}};
    // Only plans with a backward all-to-all carry the key (older plans read without it).
    bool any = false;
    for (const auto& m : it.dispatch_backward) any = any || !m.empty();
    if (any) x["dispatch_backward"] = lists_json(it.dispatch_backward);
    // Likewise the dispatcher's own work (length all-gather, host time) per micro-batch.
    bool overhead = false;
    for (const DispatchOverhead& o : it.dispatch_overhead) overhead = overhead || !o.empty();
    if (overhead) {
      json o = json::array();
      for (const DispatchOverhead& d : it.dispatch_overhead) o.push_back({d.length_gather_bytes, d.host_us});
      x["dispatch_overhead"] = std::move(o);
    }
    its.push_back(std::move(x));
  }
  j["iterations"] = std::move(its);
  return j.dump();
}

Result<Plan> PlanFromJson(const std::string& text, const std::string& name) {
  const In in{name};
  MMTWIN_ASSIGN_OR_RETURN(const json j, ParseJsonObject(text, name, "a plan"));
  Plan p;
  MMTWIN_RETURN_IF_ERROR(ReadHeader(in, j, p));
  MMTWIN_RETURN_IF_ERROR(ReadParallel(in, j, p.parallel));
  MMTWIN_RETURN_IF_ERROR(ReadLayers(in, j, p));
  MMTWIN_RETURN_IF_ERROR(ReadSchedule(in, j, p.parallel, p.schedule));
  if ((p.partition.EncoderLayers() > 0) != p.schedule.HasEncoderPasses())
    return in.Bad("schedule.encoder",
                  p.schedule.HasEncoderPasses()
                      ? "encoder passes, but the partition starts at layer 0"
                      : "the partition starts at layer " + std::to_string(p.partition.EncoderLayers()) +
                            " (the encoders outside the pipeline) but no encoder pass runs them");
  MMTWIN_RETURN_IF_ERROR(ReadIterations(in, j, p));
  return p;
}

}  // namespace mmtwin

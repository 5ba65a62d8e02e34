// SPDX-License-Identifier: Apache-2.0
// Cluster presets from YAML (yaml-cpp; every exception becomes an Error naming file:line and key).
#include "core/cluster/cluster.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "core/util/csv.h"
#include "core/util/data_dir.h"
#include "core/util/text.h"
#include "core/util/yaml_error.h"

namespace mmtwin {
namespace {

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  Status String(const YAML::Node& map, const std::string& where, const std::string& key, std::string& out,
                bool required) const {
    const YAML::Node n = map[key];
    if (!n.IsDefined()) return required ? Missing(map, where, key) : Status();
    if (!n.IsScalar()) return Error::At(file_, LineOf(n), Field(where, key), "expected a string");
    out = n.Scalar();
    return Status();
  }

  // A finite number > 0 (or >= 0 with allow_zero); integers may be written as 80e9.
  Status Number(const YAML::Node& map, const std::string& where, const std::string& key, double& out,
                bool required, bool allow_zero = false) const {
    const YAML::Node n = map[key];
    if (!n.IsDefined()) return required ? Missing(map, where, key) : Status();
    double v = 0;
    try {
      if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "not a scalar");
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      return Error::At(
          file_, LineOf(n), Field(where, key),
          "'" + Abbreviate((n.IsScalar() ? n.Scalar() : std::string("?"))) + "' is not a number");
    }
    if (!std::isfinite(v) || v < 0 || (v == 0 && !allow_zero))
      return Error::At(file_, LineOf(n), Field(where, key), allow_zero ? "must be >= 0" : "must be > 0");
    out = v;
    return Status();
  }

  Status Integer(const YAML::Node& map, const std::string& where, const std::string& key, int64_t& out,
                 bool required, bool allow_zero = false) const {
    double v = static_cast<double>(out);
    MMTWIN_RETURN_IF_ERROR(Number(map, where, key, v, required, allow_zero));
    if (v != std::floor(v) || v > 9.2e18)
      return Error::At(file_, LineOf(map[key]), Field(where, key), "must be a whole number");
    out = static_cast<int64_t>(v);
    return Status();
  }

  // `out` within [lo, hi] (read by Number or Integer before): else an error naming the key and the range.
  Status Range(const YAML::Node& map, const std::string& where, const std::string& key, double value,
               double lo, double hi, const std::string& why) const {
    if (!map[key].IsDefined() || (value >= lo && value <= hi)) return Status();
    return Error::At(file_, LineOf(map[key]), Field(where, key),
                     "must be in [" + Short(lo) + ", " + Short(hi) + "] (" + why + ")");
  }

  const std::string& file() const { return file_; }

 private:
  static std::string Short(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
  }
  static std::string Field(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }
  Error Missing(const YAML::Node& map, const std::string& where, const std::string& key) const {
    return Error::At(file_, LineOf(map), Field(where, key), "missing");
  }
  std::string file_;
};

// The compute curve (cluster.h): the three fractions in (0, 1], all or none; the half sizes >= 0 (0: no
// saturation), only with the fractions.
Status ReadComputeCurve(const Reader& r, const YAML::Node& dev, DeviceSpec& d) {
  struct Key {
    const char* name;
    double* out;
    bool fraction;
  };
  const Key keys[] = {{"gemm_peak_fraction", &d.gemm_peak_fraction, true},
                      {"attn_fwd_peak_fraction", &d.attn_fwd_peak_fraction, true},
                      {"attn_bwd_peak_fraction", &d.attn_bwd_peak_fraction, true},
                      {"hbm_peak_fraction", &d.hbm_peak_fraction, true},
                      {"gemm_half_dim", &d.gemm_half_dim, false},
                      {"attn_half_span", &d.attn_half_span, false},
                      {"attn_half_head_dim", &d.attn_half_head_dim, false}};
  int given = 0, fractions = 0;
  for (const Key& k : keys) {
    MMTWIN_RETURN_IF_ERROR(r.Number(dev, "device", k.name, *k.out, false, !k.fraction));
    MMTWIN_RETURN_IF_ERROR(k.fraction ? r.Range(dev, "device", k.name, *k.out, 0, 1, "fraction of the peak")
                                      : r.Range(dev, "device", k.name, *k.out, 0, 1e6, "elements"));
    if (dev[k.name].IsDefined()) {
      ++given;
      fractions += k.fraction;
    }
  }
  if (given == 0 || fractions == 4) return Status();
  for (const Key& k : keys)
    if (k.fraction && !dev[k.name].IsDefined())
      return Error::At(r.file(), LineOf(dev), std::string("device.") + k.name,
                       "missing: a compute curve gives gemm_peak_fraction, attn_fwd_peak_fraction, "
                       "attn_bwd_peak_fraction and hbm_peak_fraction together");
  return Status();
}

// The optional `collectives:` section (cluster.h CollectiveSpec).
Status ReadCollectives(const Reader& r, const YAML::Node& root, CollectiveSpec& out) {
  const YAML::Node n = root["collectives"];
  if (!n.IsDefined()) return Status();
  if (!n.IsMap()) return Error::At(r.file(), LineOf(n), "collectives", "expected a mapping");
  MMTWIN_RETURN_IF_ERROR(
      CheckKeys(n, r.file(), "collectives",
                {"model", "nvls", "nvlink_bus_fraction", "nic_bus_fraction", "nvls_bus_fraction",
                 "pipeline_us", "pipeline_half_bytes", "nvls_pipeline_us", "nvls_pipeline_half_bytes"}));
  MMTWIN_RETURN_IF_ERROR(r.String(n, "collectives", "model", out.model, false));
  if (out.model != "ring" && out.model != "nccl")
    return Error::At(r.file(), LineOf(n["model"]), "collectives.model",
                     "'" + Abbreviate(out.model) + "' is not one of ring, nccl");
  if (n["nvls"].IsDefined()) {
    const YAML::Node b = n["nvls"];
    const std::string v = b.IsScalar() ? b.Scalar() : "";
    if (v != "true" && v != "false")
      return Error::At(r.file(), LineOf(b), "collectives.nvls", "expected true or false");
    out.nvls = v == "true";
  }
  for (auto [key, value] : {std::pair<const char*, double*>{"nvlink_bus_fraction", &out.nvlink_bus_fraction},
                            {"nic_bus_fraction", &out.nic_bus_fraction},
                            {"nvls_bus_fraction", &out.nvls_bus_fraction}}) {
    MMTWIN_RETURN_IF_ERROR(r.Number(n, "collectives", key, *value, false));
    // NVLS reduces in the switch: its bus bandwidth (nccl-tests' ring-normalised figure) may pass the link's.
    MMTWIN_RETURN_IF_ERROR(r.Range(n, "collectives", key, *value, 1e-3,
                                   std::string(key) == "nvls_bus_fraction" ? 4 : 1,
                                   "fraction of the link's bandwidth"));
  }
  for (auto [key, value] : {std::pair<const char*, double*>{"pipeline_us", &out.pipeline_us},
                            {"nvls_pipeline_us", &out.nvls_pipeline_us}}) {
    MMTWIN_RETURN_IF_ERROR(r.Number(n, "collectives", key, *value, false, true));
    MMTWIN_RETURN_IF_ERROR(r.Range(n, "collectives", key, *value, 0, 1e6, "microseconds"));
  }
  for (auto [key, value] : {std::pair<const char*, double*>{"pipeline_half_bytes", &out.pipeline_half_bytes},
                            {"nvls_pipeline_half_bytes", &out.nvls_pipeline_half_bytes}}) {
    MMTWIN_RETURN_IF_ERROR(r.Number(n, "collectives", key, *value, false, true));
    MMTWIN_RETURN_IF_ERROR(r.Range(n, "collectives", key, *value, 0, 1e15, "bytes"));
  }
  return Status();
}

Result<ClusterSpec> ParseImpl(const std::string& text, const std::string& name) {
  const Reader r(name);
  ClusterSpec c;
  try {
    MMTWIN_ASSIGN_OR_RETURN(const YAML::Node root, LoadStrictYaml(text, name));
    MMTWIN_RETURN_IF_ERROR(CheckKeys(
        root, name, "",
        {"name", "description", "reference", "nodes", "gpus_per_node", "device", "nvlink_bytes_per_s",
         "nvlink_latency_us", "nics_per_node", "nic_bytes_per_s", "nic_latency_us", "collectives"}));
    MMTWIN_RETURN_IF_ERROR(r.String(root, "", "name", c.name, true));
    MMTWIN_RETURN_IF_ERROR(r.String(root, "", "description", c.description, false));
    int64_t v = 0;
    MMTWIN_RETURN_IF_ERROR(r.Integer(root, "", "nodes", v, true));
    MMTWIN_RETURN_IF_ERROR(r.Range(root, "", "nodes", static_cast<double>(v), 1, kMaxClusterNodes,
                                   "a larger cluster does not fit the rank arithmetic"));
    c.nodes = static_cast<int>(v);
    MMTWIN_RETURN_IF_ERROR(r.Integer(root, "", "gpus_per_node", v, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(root, "", "gpus_per_node", static_cast<double>(v), 1, 1024, "GPUs in one node"));
    c.gpus_per_node = static_cast<int>(v);
    const YAML::Node dev = root["device"];
    if (!dev.IsDefined()) return Error::At(name, LineOf(root), "device", "missing");
    MMTWIN_RETURN_IF_ERROR(CheckKeys(dev, name, "device",
                                     {"name",
                                      "peak_flops",
                                      "memory_bytes",
                                      "hbm_bytes_per_s",
                                      "efficiency",
                                      "reserved_bytes",
                                      "workspace_bytes",
                                      "fragmentation",
                                      "kernel_overhead_us",
                                      "overlap_slowdown",
                                      "cuda_context_bytes",
                                      "nccl_buffsize_bytes",
                                      "nccl_channels",
                                      "cudnn_workspace_bytes",
                                      "fragmentation_spread",
                                      "allocator_model",
                                      "gemm_peak_fraction",
                                      "gemm_half_dim",
                                      "attn_fwd_peak_fraction",
                                      "attn_bwd_peak_fraction",
                                      "attn_half_span",
                                      "attn_half_head_dim",
                                      "hbm_peak_fraction"}));
    MMTWIN_RETURN_IF_ERROR(r.String(dev, "device", "name", c.device.name, true));
    MMTWIN_RETURN_IF_ERROR(r.Number(dev, "device", "peak_flops", c.device.peak_flops, true));
    MMTWIN_RETURN_IF_ERROR(r.Integer(dev, "device", "memory_bytes", c.device.memory_bytes, true));
    MMTWIN_RETURN_IF_ERROR(r.Number(dev, "device", "hbm_bytes_per_s", c.device.hbm_bytes_per_s, true));
    MMTWIN_RETURN_IF_ERROR(r.Number(dev, "device", "efficiency", c.device.efficiency, false));
    if (c.device.efficiency > 1)
      return Error::At(name, LineOf(dev["efficiency"]), "device.efficiency", "must be in (0, 1]");
    // Ranges: wide enough for any real or what-if hardware, narrow enough that simulated times stay finite and
    // the SimGrid engine converges (a NIC of 1e3 B/s or a latency of 1e300 us gave null or endless runs).
    MMTWIN_RETURN_IF_ERROR(r.Range(dev, "device", "peak_flops", c.device.peak_flops, 1e9, 1e18, "FLOP/s"));
    MMTWIN_RETURN_IF_ERROR(r.Range(dev, "device", "memory_bytes", static_cast<double>(c.device.memory_bytes),
                                   1 << 20, 1e15, "bytes"));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(dev, "device", "hbm_bytes_per_s", c.device.hbm_bytes_per_s, 1e6, 1e15, "bytes/s"));
    MMTWIN_RETURN_IF_ERROR(r.Integer(dev, "device", "reserved_bytes", c.device.reserved_bytes, false, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Integer(dev, "device", "workspace_bytes", c.device.workspace_bytes, false, true));
    MMTWIN_RETURN_IF_ERROR(r.Number(dev, "device", "fragmentation", c.device.fragmentation, false, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Number(dev, "device", "kernel_overhead_us", c.device.kernel_overhead_us, false, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(dev, "device", "kernel_overhead_us", c.device.kernel_overhead_us, 0, 1e4, "microseconds"));
    MMTWIN_RETURN_IF_ERROR(
        r.Number(dev, "device", "overlap_slowdown", c.device.overlap_slowdown, false, true));
    MMTWIN_RETURN_IF_ERROR(r.Range(dev, "device", "overlap_slowdown", c.device.overlap_slowdown, 0, 4,
                                   "compute slowdown while a collective runs"));
    MMTWIN_RETURN_IF_ERROR(r.Range(dev, "device", "fragmentation", c.device.fragmentation, 0, 0.9,
                                   "fraction of the allocator's pool"));
    MMTWIN_RETURN_IF_ERROR(ReadComputeCurve(r, dev, c.device));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(dev, "device", "reserved_bytes", static_cast<double>(c.device.reserved_bytes), 0,
                static_cast<double>(c.device.memory_bytes), "bytes, at most memory_bytes"));
    MMTWIN_RETURN_IF_ERROR(r.Range(dev, "device", "workspace_bytes",
                                   static_cast<double>(c.device.workspace_bytes), 0,
                                   static_cast<double>(c.device.memory_bytes - c.device.reserved_bytes),
                                   "bytes, at most memory_bytes - reserved_bytes"));
    MMTWIN_RETURN_IF_ERROR(
        r.Integer(dev, "device", "cuda_context_bytes", c.device.cuda_context_bytes, false, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Integer(dev, "device", "cudnn_workspace_bytes", c.device.cudnn_workspace_bytes, false, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Integer(dev, "device", "nccl_buffsize_bytes", c.device.nccl_buffsize_bytes, false, true));
    v = 0;
    MMTWIN_RETURN_IF_ERROR(r.Integer(dev, "device", "nccl_channels", v, false, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(dev, "device", "nccl_channels", static_cast<double>(v), 0, 64,
                "channels per communicator (NCCL's MAXCHANNELS is 32, 64 on recent NCCL)"));
    c.device.nccl_channels = static_cast<int>(v);
    MMTWIN_RETURN_IF_ERROR(r.Range(dev, "device", "nccl_buffsize_bytes",
                                   static_cast<double>(c.device.nccl_buffsize_bytes), 0, 1LL << 32, "bytes"));
    MMTWIN_RETURN_IF_ERROR(
        r.Number(dev, "device", "fragmentation_spread", c.device.fragmentation_spread, false, true));
    MMTWIN_RETURN_IF_ERROR(r.Range(dev, "device", "fragmentation_spread", c.device.fragmentation_spread, 0,
                                   10, "bytes stranded per byte of activation spread"));
    MMTWIN_RETURN_IF_ERROR(r.String(dev, "device", "allocator_model", c.device.allocator_model, false));
    if (c.device.allocator_model != "spread" && c.device.allocator_model != "replay")
      return Error::At(r.file(), LineOf(dev["allocator_model"]), "device.allocator_model",
                       "'" + Abbreviate(c.device.allocator_model) + "' is not one of spread, replay");
    const int64_t outside = c.device.reserved_bytes + c.device.cuda_context_bytes;
    MMTWIN_RETURN_IF_ERROR(r.Range(dev, "device", "cuda_context_bytes", static_cast<double>(outside), 0,
                                   static_cast<double>(c.device.memory_bytes),
                                   "bytes, with reserved_bytes at most memory_bytes"));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(dev, "device", "cudnn_workspace_bytes",
                static_cast<double>(c.device.cudnn_workspace_bytes + c.device.workspace_bytes), 0,
                static_cast<double>(c.device.memory_bytes - outside),
                "bytes, with workspace_bytes at most memory_bytes - reserved_bytes - cuda_context_bytes"));
    MMTWIN_RETURN_IF_ERROR(r.Number(root, "", "nvlink_bytes_per_s", c.nvlink_bytes_per_s, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(root, "", "nvlink_bytes_per_s", c.nvlink_bytes_per_s, 1e6, 1e14, "bytes/s per direction"));
    MMTWIN_RETURN_IF_ERROR(r.Number(root, "", "nvlink_latency_us", c.nvlink_latency_us, false, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(root, "", "nvlink_latency_us", c.nvlink_latency_us, 0, 1e6, "microseconds"));
    v = 0;
    MMTWIN_RETURN_IF_ERROR(r.Integer(root, "", "nics_per_node", v, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(root, "", "nics_per_node", static_cast<double>(v), 1, 1024, "NICs in one node"));
    c.nics_per_node = static_cast<int>(v);
    MMTWIN_RETURN_IF_ERROR(r.Number(root, "", "nic_bytes_per_s", c.nic_bytes_per_s, true));
    MMTWIN_RETURN_IF_ERROR(
        r.Range(root, "", "nic_bytes_per_s", c.nic_bytes_per_s, 1e6, 1e14, "bytes/s per direction"));
    MMTWIN_RETURN_IF_ERROR(r.Number(root, "", "nic_latency_us", c.nic_latency_us, false, true));
    MMTWIN_RETURN_IF_ERROR(r.Range(root, "", "nic_latency_us", c.nic_latency_us, 0, 1e6, "microseconds"));
    MMTWIN_RETURN_IF_ERROR(ReadCollectives(r, root, c.collectives));
  } catch (const YAML::Exception& e) {
    return YamlError(name, e);
  }
  return c;
}

}  // namespace

std::string ClusterPresetDir() { return DataDir() + "/clusters"; }

std::vector<std::string> ListClusters() {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(ClusterPresetDir(), ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<ClusterSpec> ParseCluster(const std::string& yaml_text, const std::string& name) {
  return ParseImpl(yaml_text, name);
}

Result<ClusterSpec> LoadCluster(const std::string& name_or_path, int nodes_override,
                                const std::map<std::string, double>& device_overrides,
                                const std::map<std::string, std::string>& device_text_overrides) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".yaml");
  std::string path = name_or_path;
  if (!is_path) {
    path = ClusterPresetDir() + "/" + name_or_path + ".yaml";
    std::error_code ec;
    if (name_or_path.empty() || !std::filesystem::exists(path, ec))
      return Error("unknown cluster '" + name_or_path + "'; valid values are: " + Join(ListClusters()));
  }
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const bool overridden = !device_overrides.empty() || !device_text_overrides.empty();
  if (overridden) {
    // Rewrite the device section and parse the result: every override passes the preset's own checks.
    try {
      MMTWIN_ASSIGN_OR_RETURN(YAML::Node root, LoadStrictYaml(text, path));
      if (!root.IsMap() || !root["device"].IsMap())
        return Error(path + ": device: missing (needed by the device overrides)");
      for (const auto& [key, value] : device_overrides) {
        if (key == "name") return Error("device.name: cannot be overridden (a number is expected)");
        root["device"][key] = value;
      }
      for (const auto& [key, value] : device_text_overrides) {
        if (std::find(kDeviceTextKeys.begin(), kDeviceTextKeys.end(), key) == kDeviceTextKeys.end())
          return Error("device." + key + ": expected a number (text is for " + Join(kDeviceTextKeys) +
                       " only)");
        root["device"][key] = value;
      }
      YAML::Emitter e;
      e.SetDoublePrecision(17);
      e << root;
      text = e.c_str();
    } catch (const YAML::Exception& ex) {
      return YamlError(path, ex);
    }
  }
  // Parsed clusters per (path, text): a sweep parses each cluster file once (an edited file parses again).
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, ClusterSpec> cache;
  ClusterSpec c;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find({path, text});
    if (it != cache.end()) {
      c = it->second;
      cached = true;
    }
  }
  if (!cached) {
    MMTWIN_ASSIGN_OR_RETURN(c,
                            ParseImpl(text, overridden ? path + " (with cluster.device overrides)" : path));
    std::lock_guard<std::mutex> lock(mu);
    if (cache.size() > 256) cache.clear();  // bounded
    cache[{path, text}] = c;
  }
  if (nodes_override < 0 || nodes_override > kMaxClusterNodes)
    return Error("nodes override must be in [1, " + std::to_string(kMaxClusterNodes) + "], got " +
                 std::to_string(nodes_override));
  if (nodes_override > 0) c.nodes = nodes_override;
  return c;
}

int64_t UsableMemoryBytes(const DeviceSpec& d) {
  const double outside = static_cast<double>(d.memory_bytes - d.reserved_bytes - d.cuda_context_bytes);
  const double left =
      outside * (1.0 - d.fragmentation) - static_cast<double>(d.workspace_bytes + d.cudnn_workspace_bytes);
  return left <= 0 ? 0 : static_cast<int64_t>(left);
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
#include "cli/cli_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

#include "core/model/model.h"

namespace mmtwin::cli {
namespace {

std::string Labels(const std::string& first, const std::string& last) {
  return first == last ? first : first + " .. " + last;
}

std::string LayerRange(int first, int last) { return Count(first) + ".." + Count(last); }

std::string Params(double p) { return Fixed(p / 1e9, 2) + "B"; }

std::string Percent(double r) { return std::isnan(r) ? "n/a" : Fixed(100 * r, 1) + "%"; }

}  // namespace

std::string Fixed(double x, int prec) {
  if (std::isnan(x)) return "n/a";
  std::string s = fmt::format("{:.{}f}", x, prec);
  // A tiny negative value (a ratio of -1e-17 from rounding) prints as 0.0, not -0.0.
  if (s.size() > 1 && s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) s.erase(0, 1);
  return s;
}

std::string Significant(double x, int digits) {
  if (std::isnan(x)) return "n/a";
  if (x == 0 || !std::isfinite(x)) return Fixed(x, 0);
  const int before_point = static_cast<int>(std::floor(std::log10(std::fabs(x)))) + 1;
  return Fixed(x, std::clamp(digits - before_point, 0, 12));
}

std::string GiB(double bytes) { return std::isnan(bytes) ? "n/a" : Fixed(bytes / (1024.0 * 1024 * 1024), 1); }

std::string Pad(const std::string& s, size_t w, bool right) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

void WriteTextTable(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                    std::ostream& out, size_t right_from) {
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    w[c] = head[c].size();
    for (const auto& r : rows) w[c] = std::max(w[c], c < r.size() ? r[c].size() : 0);
  }
  auto line = [&](const std::vector<std::string>& r) {
    for (size_t c = 0; c < head.size(); ++c)
      out << (c ? "  " : "") << Pad(c < r.size() ? r[c] : "", w[c], c >= right_from);
    out << "\n";
  };
  line(head);
  for (const auto& r : rows) line(r);
}

std::string Count(double x) {
  if (std::isnan(x)) return "n/a";
  const std::string digits = fmt::format("{:.0f}", std::fabs(x));
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return (x < 0 ? "-" : "") + s;
}

std::string PolicyText(const PolicyRef& p) {
  if (p.params.empty()) return p.name;
  std::string s = p.name + "(";
  bool first = true;
  for (const auto& [k, v] : p.params) {
    s += (first ? "" : ", ") + k + "=" + v;
    first = false;
  }
  return s + ")";
}

void WriteHeader(const Scenario& s, std::ostream& out) {
  const ParallelConfig& p = s.parallel;
  out << "scenario        " << s.name << (s.description.empty() ? "" : ": " + s.description) << "\n";
  out << "model           " << s.model;
  // How it is priced when not the defaults: the image size, the attention kernel, the memory-bound kernels.
  std::vector<std::string> how;
  if (s.image_px > 0) how.push_back("vision encoders fed " + std::to_string(s.image_px) + " px tiles");
  if (s.attention != "flash") how.push_back("attention " + s.attention);
  if (s.kernels.any()) how.push_back("kernels " + KernelImplText(s.kernels));
  for (size_t i = 0; i < how.size(); ++i) out << (i == 0 ? " (" : "; ") << how[i];
  if (!how.empty()) out << ")";
  out << "\n";
  out << "cluster         " << s.cluster << ", " << s.nodes << " node" << (s.nodes == 1 ? "" : "s") << "; "
      << p.world_size() << " GPUs = dp " << p.dp << " x tp " << p.tp << " x pp " << p.pp;
  if (p.sp > 1) out << " x sp " << p.sp;
  if (p.vpp > 1) out << " (vpp " << p.vpp << ")";
  out << ", " << p.micro_batches << " micro-batches, ZeRO-" << p.zero_stage << "\n";
  // A TP degree that does not divide a component's heads is priced, not refused (issue 33, item 11): say how.
  if (p.tp > 1)
    if (Result<ModelSpec> m = LoadScenarioModel(s); m.ok())
      for (const Component& c : m->components) {
        const TransformerConfig& t = c.tf;
        if (t.layers == 0 || t.heads <= 0) continue;
        if (TpDividesHeads(t, p.tp)) continue;
        const int kv = t.kv_heads > 0 ? t.kv_heads : t.heads;
        const int q_rank = (t.heads + p.tp - 1) / p.tp, kv_rank = (kv + p.tp - 1) / p.tp;
        out << "tensor parallel tp " << p.tp << " does not divide " << c.name << "'s " << t.heads
            << " attention heads" << (kv != t.heads ? " (" + std::to_string(kv) + " KV heads)" : "")
            << ": priced as if padded to " << q_rank * p.tp
            << (kv != t.heads ? "/" + std::to_string(kv_rank * p.tp) : "") << ", the busiest rank computing "
            << q_rank << " heads (Megatron-LM itself refuses such a TP degree)\n";
      }
  // An SP policy at degree 1 runs as no SP (the sweep over degrees passes through it): said, not hidden.
  if (s.sp.name != "none" && p.sp <= 1)
    out << "sequence par.   policies.sp " << s.sp.name
        << " with parallel.sp 1: no sequence parallelism (set parallel.sp to split sequences)\n";
  out << "policies        data " << PolicyText(s.data) << ", partition " << PolicyText(s.partition)
      << ", recompute " << PolicyText(s.recompute) << ", schedule " << PolicyText(s.schedule);
  if (s.sp.name != "none") out << ", sp " << PolicyText(s.sp);
  if (s.encoder.name != "pipeline") out << ", encoder " << PolicyText(s.encoder);
  out << "\n";
  out << "trace           ";
  if (!s.trace.file.empty())
    out << s.trace.file;
  else if (s.trace.sequence_tokens > 0)
    out << Count(static_cast<double>(s.trace.samples)) << " text-only sequences of "
        << Count(static_cast<double>(s.trace.sequence_tokens)) << " tokens";
  else
    out << s.trace.preset << ", " << Count(static_cast<double>(s.trace.samples)) << " samples, seed "
        << s.trace.seed;
  out << "\n";
}

void WritePlanStages(const std::vector<PlanStage>& stages, std::ostream& out) {
  if (stages.empty()) {
    out << "(no stages)\n";
    return;
  }
  constexpr const char* kRow = "{:<5} {:<9} {:<40} {:>8} {:>7} {:>9} {:>9} {:>8} {:>9} {:>8} {:>5}\n";
  out << fmt::format(kRow, "stage", "layers", "first .. last", "params", "recomp", "fwd ms", "states", "act",
                     "peak", "capacity", "fits");
  out << std::string(5 + 9 + 40 + 8 + 7 + 9 + 9 + 8 + 9 + 8 + 5 + 10, '-') << "\n";
  for (const PlanStage& st : stages) {
    const StageMemory& m = st.memory;
    out << fmt::format(kRow, Count(st.stage), LayerRange(st.first_layer, st.last_layer),
                       Labels(st.first_layer_label, st.last_layer_label),
                       Params(static_cast<double>(st.params)), Count(st.recomputed_layers),
                       Fixed(st.fwd_us_mean / 1e3, 1), GiB(static_cast<double>(m.model_state_bytes)),
                       GiB(static_cast<double>(m.peak_activation_bytes)),
                       GiB(static_cast<double>(m.peak_bytes)), GiB(static_cast<double>(m.capacity_bytes)),
                       m.fits ? "yes" : "OOM");
  }
  out << "(memory in GiB per GPU: model states (weights, gradients, optimizer after TP/PP/ZeRO division), "
         "peak\n"
         " in-flight activations, peak total (with the runtime's CUDA context, NCCL buffers and workspaces "
         "and "
         "the\n allocator's fragmentation), capacity = the device's memory; fwd ms = mean forward time of "
         "one "
         "micro-batch through the stage)\n";
}

void WritePlanMemory(const std::vector<PlanStage>& stages, std::ostream& out) {
  if (stages.empty()) return;
  constexpr const char* kRow =
      "{:<5} {:>8} {:>7} {:>7} {:>8} {:>6} {:>8} {:>8} {:>6} {:>9} {:>6} {:>8} {:>6} {:>6} {:>8} {:>8}\n";
  out << fmt::format(kRow, "stage", "weights", "grads", "main_g", "optimzr", "zero3", "act", "boundary",
                     "wkspc", "allocated", "frag", "context", "nccl", "other", "peak", "capacity");
  out << std::string(5 + 8 + 7 + 7 + 8 + 6 + 8 + 8 + 6 + 9 + 6 + 8 + 6 + 6 + 8 + 8 + 15, '-') << "\n";
  const auto g = [](int64_t b) { return GiB(static_cast<double>(b)); };
  for (const PlanStage& st : stages) {
    const StageMemory& m = st.memory;
    out << fmt::format(kRow, Count(st.stage), g(m.weight_bytes), g(m.grad_bytes), g(m.main_grad_bytes),
                       g(m.optimizer_bytes), g(m.zero3_transient_bytes), g(m.peak_activation_bytes),
                       g(m.boundary_bytes), g(m.workspace_bytes), g(m.allocated_peak_bytes),
                       g(m.fragmentation_bytes), g(m.cuda_context_bytes), g(m.nccl_bytes), g(m.other_bytes),
                       g(m.peak_bytes), g(m.capacity_bytes));
  }
  out << "(GiB per GPU, every term of the peak (core/plan/memory.h): weights + grads + main_g (fp32 gradient "
         "buffer)\n + optimizer (master weights, moments) + zero3 (ZeRO-3 gathers in flight) = model states; "
         "+ "
         "act (in-flight\n activations and the largest transient) + boundary (P2P buffers) + wkspc (cuBLAS, "
         "cuDNN) "
         "= allocated;\n + frag (the caching allocator's reserved bytes above it) + context (CUDA context "
         "and "
         "libraries) + nccl\n (communicator buffers) + other (device.reserved_bytes) = peak)\n";
}

void WriteSimStages(const std::vector<StageRecord>& stages, std::ostream& out) {
  if (stages.empty()) {
    out << "(no stages)\n";
    return;
  }
  constexpr const char* kRow =
      "{:<5} {:<9} {:>8} {:>7} {:>8} {:>8} {:>9} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8}\n";
  out << fmt::format(kRow, "stage", "layers", "params", "recomp", "fwd ms", "bwd ms", "recomp ms", "busy",
                     "bubble", "idle", "states", "peak", "capacity");
  out << std::string(5 + 9 + 8 + 7 + 8 + 8 + 9 + 7 + 7 + 7 + 8 + 8 + 8 + 12, '-') << "\n";
  for (const StageRecord& st : stages) {
    out << fmt::format(
        kRow, Count(st.stage), LayerRange(st.first_layer, st.last_layer),
        Params(static_cast<double>(st.params)), Count(st.recomputed_layers), Fixed(st.fwd_us_mean / 1e3, 1),
        Fixed(st.bwd_us_mean / 1e3, 1), Fixed(st.recompute_us_mean / 1e3, 1), Percent(st.busy_ratio),
        Percent(st.bubble_ratio), Percent(st.idle_ratio), GiB(static_cast<double>(st.model_state_bytes)),
        GiB(static_cast<double>(st.peak_memory_bytes)), GiB(static_cast<double>(st.memory_capacity_bytes)));
  }
  out << "(times per micro-batch, means over the replayed iterations; memory in GiB per GPU)\n";
}

void WriteOom(const std::vector<OomStage>& oom_stages, std::ostream& out) {
  for (const OomStage& o : oom_stages)
    out << "OOM: stage " << o.stage << " is short by " << GiB(static_cast<double>(o.short_bytes))
        << " GiB of device memory\n";
}

}  // namespace mmtwin::cli

// SPDX-License-Identifier: Apache-2.0
// Typed run records: what a run (simulated by either engine, or measured by the backend) reports, in one
// schema. summary.json, stages.csv, the ops table and the sweep database's columns are generated from these
// structs by one codec (core/records/records_codec.h); `mmtwin compare`, the CLI's printer and `sweep table`
// read them back through it. A renamed field fails to compile in every reader instead of printing "n/a".
//
//   RunSummary s = result.summary;                 // from Simulate (source simulated)
//   std::string text = SummaryToJson(s);           // a run folder's summary (run_folder.h RunFolderWriter)
//   MMTWIN_ASSIGN_OR_RETURN(RunSummary back, SummaryFromJson(text, "runs/x/summary.json"));
//
// Units are in the names: _us microseconds, _bytes bytes, _ratio a fraction of device time, _s seconds.
// Ratios over devices are of GPU time (every device counts the whole iteration): busy + bubble + idle +
// exposed comm = 1 per device (core/eval/analytic.h defines each).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/eval/analytic.h"
#include "core/graph/op_graph.h"
#include "core/plan/plan.h"

namespace mmtwin {

// Version of the record schema; a reader accepts this version (and files without the field, written before
// it existed, as version 1).
inline constexpr int kRecordsSchemaVersion = 1;

enum class RecordSource : uint8_t { kSimulated, kMeasured };
// "simulated", "measured".
const char* RecordSourceName(RecordSource s);

struct IterationTimeStats {  // over the replayed (or measured) iterations, microseconds
  double mean = 0, p50 = 0, p99 = 0, min = 0, max = 0;
  double ci95_low = 0, ci95_high = 0;  // 95% interval of the epoch mean (finite-population correction)
};

// The iteration-time statistics of a run, simulated or measured: mean, p50, p99 (Percentile, core/util/text.h:
// linear interpolation), min and max of `times_us` (one entry per replayed or measured iteration, microseconds),
// and the 95% interval of the epoch's mean iteration time from this sample of its N = `iterations_in_epoch`
// iterations (n = times_us.size()):
//   mean -/+ 1.96 * sqrt(s2 / n) * sqrt(max(0, (N - n) / (N - 1)))
// with s2 the sample variance (divided by n - 1; 0 for one time) and the finite-population correction 0 when
// N <= 1 (so the interval is empty when every iteration was replayed). All zero for no times.
IterationTimeStats IterationTimeStatsOf(const std::vector<double>& times_us, int64_t iterations_in_epoch);

struct PolicyRecord {
  std::string name;
  std::map<std::string, std::string> params;
};

struct OomStage {
  int stage = 0;
  int64_t short_bytes = 0;  // peak - capacity
  int64_t peak_memory_bytes = 0;
  int64_t memory_capacity_bytes = 0;
};

// Whether an if_larger vision encoder knew the sizes of the images it priced: kUnused (no if_larger encoder or no
// image), kKnown (every size known), kUpperBound (none known: every image at the cap), kMixed.
enum class ImageSizes { kUnused, kKnown, kUpperBound, kMixed };
const char* ImageSizesName(ImageSizes s);  // "unused", "known", "upper_bound", "mixed"
bool ParseImageSizes(const std::string& name, ImageSizes& out);
// From the counts: `priced` images an if_larger encoder saw, `unsized` of them without a size.
ImageSizes ImageSizesOf(int64_t priced, int64_t unsized);

struct DataSummary {  // of the epoch's data plan (core/balance/metrics.h)
  double pad_ratio = 0, dist_ratio_vit = 0, dist_ratio_llm = 0, mean_batch_size = 0;
  int64_t samples_skipped = 0, samples_dropped = 0;
};

struct PartitionSummary {  // OmniBal Table 4's partition columns (core/plan/partition.h PartitionReport)
  std::vector<int> bounds;
  double var_fwd_us2 = 0;
  int64_t sum_comm_bytes = 0;
  double var_params = 0, var_layers = 0;
};

// One pipeline stage (pipeline rank; means over its DP replicas and the replayed iterations).
struct StageRecord {
  int stage = 0;
  int first_layer = 0, last_layer = 0;  // in Layers(model)
  std::string first_layer_label, last_layer_label;
  int layers = 0;
  int64_t params = 0;  // parameters held (whole, all TP ranks)
  int recomputed_layers = 0;
  double fwd_us_mean = 0, bwd_us_mean = 0, recompute_us_mean = 0;  // per micro-batch
  double busy_ratio = 0, bubble_ratio = 0, idle_ratio = 0;
  int64_t model_state_bytes = 0, peak_activation_bytes = 0, peak_memory_bytes = 0, memory_capacity_bytes = 0;
  // Two more terms of peak_memory_bytes (core/plan/memory.h; simulated runs, 0 in measured ones and in records
  // written before them): the caching allocator's reserved bytes above the allocated peak, and the runtime
  // outside the allocator (CUDA context, NCCL buffers, device.reserved_bytes). The rest of the peak beyond
  // model states, activations and these two is the pipeline's boundary buffers and the library workspaces.
  int64_t fragmentation_bytes = 0, runtime_bytes = 0;
  bool fits = true;
  // The data-dispatch all-to-all (post-balance / orchestrator; stage 0 only, 0 elsewhere or without one): mean
  // time per micro-batch of its all-to-all and, for the orchestrator, its backward all-to-all on this stage's
  // devices, and the share of their time the compute waited for them (part of the run's exposed_comm_ratio).
  double dispatch_us_mean = 0, exposed_dispatch_ratio = 0;
};

struct ClusterRecord {
  std::string preset;
  int nodes = 0;
  std::string device;
};

// Where a measured run ran (RunSummary::machine), apart from the cluster its scenario names: a CPU run of a
// scenario whose cluster is an A100 preset ran on the CPU, and comparisons and calibration must know it.
// Unknown strings are "", unknown numbers 0 (load averages -1).
struct MachineRecord {
  std::string host;                                     // hostname
  std::string cpu;                                      // /proc/cpuinfo "model name"
  int cores = 0;                                        // logical CPUs (std::thread::hardware_concurrency)
  int threads_per_rank = 0;                             // intra-op threads of each rank (backend.threads)
  int ranks = 0;                                        // ranks of the run on this machine (rank 0's host)
  std::string gpu;                                      // the GPU of rank 0 (CUDA runs), e.g. "NVIDIA H200"
  std::string cuda_driver;                              // CUDA driver version, e.g. "13.0"
  std::string torch;                                    // LibTorch version the backend was built with
  double load_avg_1m_start = -1, load_avg_1m_end = -1;  // getloadavg(3) at the start and the last write
};

struct RunSummary {
  int schema_version = kRecordsSchemaVersion;
  RecordSource source = RecordSource::kSimulated;
  std::string scenario, model;
  ClusterRecord cluster;
  std::string engine;       // analytic | simgrid (simulated), or the backend (measured)
  ParallelConfig parallel;  // world_size is derived
  PolicyRecord data_policy, partition_policy, recompute_policy, schedule_policy;
  int64_t trace_samples = 0, iterations_in_epoch = 0, iterations_replayed = 0;
  IterationTimeStats iteration_time_us;
  double busy_ratio = 0, bubble_ratio = 0, idle_ratio = 0, exposed_comm_ratio = 0, recompute_ratio = 0;
  // Data dispatch (see StageRecord): mean time of one micro-batch's all-to-all, and the exposed share of all
  // GPU time (part of exposed_comm_ratio). 0 without a dispatch.
  double dispatch_us_mean = 0, exposed_dispatch_ratio = 0;
  double tokens_per_s = 0, samples_per_s = 0;
  double mfu = 0;           // model FLOPs of real tokens / (time * GPUs * peak FLOP/s)
  double epoch_time_s = 0;  // mean iteration time * iterations in the epoch
  double gpu_days = 0;      // epoch_time_s * GPUs / 86400
  bool oom = false;
  std::vector<OomStage> oom_stages;
  DataSummary data;
  PartitionSummary partition;
  int recomputed_layers = 0;
  // How the trace's images were priced by an if_larger vision encoder (core/model/model.h ImageResize): the
  // images it priced at its resolution cap because the trace gives no size (Sample::image_px 0), so the ViT's
  // work and activations are upper bounds for them; and ImageSizesName of the whole trace.
  int64_t images_at_upper_bound = 0;
  ImageSizes image_sizes = ImageSizes::kUnused;
  // The model's max_context (core/model/model.h; 0 = none) and the trace samples longer than it, cut to it.
  int64_t max_context = 0, samples_truncated = 0;
  std::vector<StageRecord> stages;
  // Measured runs: where they ran (the cluster above is the scenario's label). Simulated runs: none.
  std::optional<MachineRecord> machine;
};

// One op of one iteration as it ran: the op graph's op with its timing and the workload it carried. Written
// by Simulate for the traced iteration, and by the backend for every measured op.
struct OpRecord {
  RecordSource source = RecordSource::kSimulated;
  int64_t iteration = 0;  // epoch index of the iteration
  OpKind kind = OpKind::kForward;
  Lane lane = Lane::kCompute;
  int32_t device = 0;        // op-graph device (one TP group); -1 for barriers
  int32_t peer = -1;         // Op::peer: a send's receiving device, a DP collective's ring successor; else -1
  int32_t micro_batch = -1;  // -1 for DP ops and barriers
  int32_t chunk = 0;
  double start_us = 0, duration_us = 0;
  PassKind pass = PassKind::kForward;  // tp_collective / dp_all_gather: the pass it belongs to
  int32_t bucket = 0;                  // dp_collective: bucket index within the chunk
  int64_t bytes = 0;                   // what the op moves (0 for compute)
  // forward / backward: the activation bytes this micro-batch-chunk holds from the end of its forward to the
  // end of its backward (recompute applied), per GPU; 0 for other ops.
  int64_t activation_bytes = 0;
  int64_t tokens = 0;          // compute ops: LLM tokens of the micro-batch (0 when not known)
  double attention_pairs = 0;  // compute ops: causal attention pairs of the micro-batch's LLM spans
  int32_t spans = 0;           // compute ops: samples (varlen spans) of the micro-batch
};

// The ops of one evaluated iteration as records, in graph order: kind, lane, device, micro-batch, chunk,
// timing, bytes and activation bytes, and each compute op's LLM tokens (from `costs`). The workload features
// that need the samples (attention_pairs, spans) are left 0 for the caller (Simulate fills them).
std::vector<OpRecord> OpRecordsOf(const OpGraph& graph, const IterationTiming& timing,
                                  const IterationCosts& costs, int64_t iteration);

}  // namespace mmtwin

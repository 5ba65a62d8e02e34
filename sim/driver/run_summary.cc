// SPDX-License-Identifier: Apache-2.0
// What a run's summary takes from its plan (run_summary.h).
#include "driver/run_summary.h"

namespace mmtwin {
namespace {

PolicyRecord PolicyOf(const PolicyRef& r) { return {r.name, r.params}; }

}  // namespace

RunSummary PlannedRunSummary(const PlannedRun& run, RecordSource source, const std::string& engine,
                             const std::vector<double>& iteration_us) {
  const Plan& plan = run.plan;
  RunSummary s;
  s.source = source;
  s.scenario = run.scenario.name;
  s.model = run.model.name;
  s.cluster = {run.cluster.name, run.cluster.nodes, run.cluster.device.name};
  s.engine = engine;
  s.parallel = plan.parallel;
  s.data_policy = PolicyOf(run.scenario.data);
  s.partition_policy = PolicyOf(run.scenario.partition);
  s.recompute_policy = PolicyOf(run.scenario.recompute);
  s.schedule_policy = PolicyOf(run.scenario.schedule);
  s.trace_samples = run.trace_samples;
  s.iterations_in_epoch = plan.iterations_in_epoch;
  s.iterations_replayed = static_cast<int64_t>(iteration_us.size());
  s.iteration_time_us = IterationTimeStatsOf(iteration_us, plan.iterations_in_epoch);
  s.epoch_time_s = s.iteration_time_us.mean * 1e-6 * plan.iterations_in_epoch;
  s.gpu_days = s.epoch_time_s * plan.parallel.world_size() / 86400.0;
  const DataMetrics& dm = run.data_metrics;
  s.data = {dm.pad_ratio,       dm.dist_ratio_vit,  dm.dist_ratio_llm,
            dm.mean_batch_size, dm.samples_skipped, dm.samples_dropped};
  const PartitionReport& pr = run.partition_report;
  s.partition = {plan.partition.bounds, pr.var_fwd_us2, pr.sum_comm_bytes, pr.var_params, pr.var_layers};
  s.recomputed_layers = plan.recompute.Count();
  const int64_t priced = run.token_counts.if_larger_images, unsized = run.token_counts.unsized_images;
  s.samples_truncated += run.token_counts.truncated_samples;
  s.max_context = run.model.max_context;
  s.images_at_upper_bound = unsized;
  s.image_sizes = ImageSizesOf(priced, unsized);
  return s;
}

StageRecord PlannedStageRecord(const PlanStage& ps) {
  StageRecord st;
  st.stage = ps.stage;
  st.first_layer = ps.first_layer;
  st.last_layer = ps.last_layer;
  st.first_layer_label = ps.first_layer_label;
  st.last_layer_label = ps.last_layer_label;
  st.layers = ps.layers;
  st.params = ps.params;
  st.recomputed_layers = ps.recomputed_layers;
  st.model_state_bytes = ps.memory.model_state_bytes;
  st.peak_activation_bytes = ps.memory.peak_activation_bytes;
  st.peak_memory_bytes = ps.memory.peak_bytes;
  st.memory_capacity_bytes = ps.memory.capacity_bytes;
  st.fragmentation_bytes = ps.memory.fragmentation_bytes;
  st.runtime_bytes = ps.memory.cuda_context_bytes + ps.memory.nccl_bytes + ps.memory.other_bytes;
  st.fits = ps.memory.fits;
  return st;
}

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The one codec of the run records (records.h): summary.json, stages.csv, ops.csv and the sweep database's
// summary columns. No JSON type in this header: JSON travels as text. The run folder that holds these files is
// run_folder.h's.
//
// summary.json (keys sorted; what `mmtwin simulate -o` writes): schema_version, source, scenario, model,
// cluster {preset, nodes, device}, engine, parallel {dp, tp, pp, vpp, micro_batches, zero_stage, world_size},
// policies {data, partition, recompute, schedule: {name, params}}, trace_samples, iterations_in_epoch,
// iterations_replayed, iteration_time_us {mean, p50, p99, min, max, ci95_low, ci95_high}, busy_ratio,
// bubble_ratio, idle_ratio, exposed_comm_ratio, dispatch_us_mean, exposed_dispatch_ratio (both optional when
// read: added within schema 1), recompute_ratio, tokens_per_s, samples_per_s, mfu,
// epoch_time_s, gpu_days, oom, oom_stages [{stage, short_bytes, peak_memory_bytes, memory_capacity_bytes}],
// data {pad_ratio, dist_ratio_vit, dist_ratio_llm, mean_batch_size, samples_skipped, samples_dropped},
// partition {bounds, var_fwd_us2, sum_comm_bytes, var_params, var_layers}, recomputed_layers,
// stages [StageRecord: {stage, first_layer, last_layer, layer_labels [first, last], layers, params,
// recomputed_layers, fwd_us_mean, bwd_us_mean, recompute_us_mean, busy_ratio, bubble_ratio, idle_ratio,
// model_state_bytes, peak_activation_bytes, peak_memory_bytes, memory_capacity_bytes, fits, dispatch_us_mean,
// exposed_dispatch_ratio}].
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "core/records/records.h"
#include "core/util/status.h"

namespace mmtwin {

// summary.json text (2-space indent, keys sorted, no final newline).
std::string SummaryToJson(const RunSummary& s);
// Parses summary.json text; `name` (the file) is used in messages: "runs/a/summary.json: iteration_time_us.p50:
// missing", "runs/a/summary.json:3: not valid JSON: ..." (a syntax error, with its line). Files written before the
// schema had `schema_version` / `source` read as version 1, simulated; a newer schema version is an error. A run
// folder's summary: LoadSummary / ReadRunFolder (run_folder.h).
Result<RunSummary> SummaryFromJson(const std::string& text, const std::string& name);

// stages.csv: a header line, then one row per stage (doubles printed with 6 significant digits).
std::string StagesCsv(const std::vector<StageRecord>& stages);

// ops.csv: a version line `# mmtwin-ops v2`, then the header source,iteration,kind,lane,device,peer,micro_batch,
// chunk,start_us,duration_us,bytes,tokens,attention_pairs,spans,pass (kind and lane by name: OpKindName,
// LaneName; pass forward | backward | backward_input | backward_weight: a TP collective's pass, a dispatch's
// direction, a split backward's half), one row per op. The parser skips '#' lines, also reads v1 (no pass
// column: a backward op's pass is taken from its kind, every other op's is forward) and rejects other versions.
std::string OpsCsv(const std::vector<OpRecord>& ops);
Result<std::vector<OpRecord>> ParseOpsCsv(const std::string& text, const std::string& name);

// The scalar columns of a summary that the sweep database stores and `sweep table` / `sweep export` show, in
// a fixed order: name (a SQL column name), SQL type, and the value. Generated from the record, so a new field
// is one line here and nowhere else.
using SummaryValue = std::variant<int64_t, double, std::string>;
struct SummaryColumn {
  const char* name;      // e.g. "iteration_p50_us"
  const char* sql_type;  // INTEGER | REAL | TEXT
  SummaryValue (*get)(const RunSummary&);
};
const std::vector<SummaryColumn>& SummaryColumns();

}  // namespace mmtwin

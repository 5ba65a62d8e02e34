// SPDX-License-Identifier: Apache-2.0
// Sweep files: a base scenario plus axes (cartesian product or zipped lists) over any scenario key, expanded
// deterministically into runs, each with a stable run key (scenarios/README.md, "Sweeps").
//
//   name: omnibal-data                 # default: the file name without .yaml
//   base: ../omnibal/internvl-6b-20b-baseline.yaml   # a scenario file (relative to this file) or a mapping
//   mode: cartesian                    # or zip (every axis the same length; run i takes value i of each)
//   iterations: 2                      # optional: overrides `iterations` of every run
//   axes:
//     - {key: policies.data, values: [random, length-group, device-group, isf], name: data}
//     - {key: policies.partition, values: [params, bmp]}
//     - {key: policies.recompute, values: [full, {name: block, params: {num_layers: 4}}], labels: [full,
//     block4]}
//
//   MMTWIN_ASSIGN_OR_RETURN(SweepSpec spec, LoadSweep("scenarios/sweeps/omnibal-data.yaml"));
//   MMTWIN_ASSIGN_OR_RETURN(std::vector<SweepRun> runs, ExpandSweep(spec));
//
// Cartesian order: the first axis varies slowest (row-major). A run whose overridden scenario does not
// validate (e.g. tp larger than a node) is kept with `error` set, so a sweep reports it instead of failing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/scenario/scenario.h"
#include "core/util/status.h"

namespace mmtwin {

struct SweepAxis {
  std::string key;                  // dotted scenario key (CheckOverrideKey)
  std::string name;                 // column name: given, else the key's last component (the full key
                                    // with '_' for '.' when two axes would share it)
  std::vector<std::string> values;  // each value as YAML text (flow style), used as the override
  std::vector<std::string> labels;  // each value as shown in tables and columns: `labels:` if given, else
                                    // a scalar's text or the value's flow YAML
  long line = 0;                    // line of the axis in the sweep file
};

struct SweepSpec {
  std::string name;
  std::string description;
  std::string path;               // the sweep file ("" when parsed from text)
  std::string base_text;          // base scenario YAML
  std::string base_name;          // where the base came from (for messages)
  std::string base_dir;           // relative paths in the base resolve here
  std::string base_default_name;  // the runs' scenario name when the base has none ("" = it has one)
  bool zip = false;               // mode: zip (else cartesian)
  std::vector<SweepAxis> axes;
  std::string iterations;  // "" = keep the base's; else an integer or "epoch"
};

struct SweepRun {
  int index = 0;
  std::string key;  // PortableRunKey(scenario, base folder); for a run that does not validate, a hash of its
                    // overrides
  std::vector<std::pair<std::string, std::string>> axes;  // (axis name, value label), in axis order
  std::vector<ScenarioOverride> overrides;
  Scenario scenario;          // valid when error is empty
  std::string resolved_yaml;  // FormatScenario(scenario)
  std::string error;          // the scenario did not validate
};

Result<SweepSpec> LoadSweep(const std::string& path);
// `name` is used in messages (`name:line: key: reason`); `base_dir` resolves a base file path. `extra_keys`: top-level
// keys a file built on the sweep format adds (a tune space, sim/tune/tune.h), accepted here and read by its caller.
Result<SweepSpec> ParseSweep(const std::string& yaml_text, const std::string& name,
                             const std::string& base_dir, const std::vector<std::string>& extra_keys = {});
// Number of runs: product of the axes' lengths (cartesian) or their common length (zip); 1 without axes.
int64_t SweepSize(const SweepSpec& spec);
// Run `index` (0 <= index < SweepSize) alone, exactly as ExpandSweep(spec)[index]: the sweep runner expands runs
// one at a time as workers free up, so a 10^6-run sweep starts at once and holds only the runs in flight.
SweepRun ExpandRun(const SweepSpec& spec, int64_t index);
// All runs in order (index 0..SweepSize-1). Errors only for sweeps over kMaxSweepRuns.
Result<std::vector<SweepRun>> ExpandSweep(const SweepSpec& spec);
// A 16-hex-digit key of what determines the runs (base text and folder, mode, iterations, axes with values and
// labels): equal digests mean run i is the same run. The results database stores it per sweep, so a resume
// skips the runs recorded ok at their index without expanding them.
std::string SweepDigest(const SweepSpec& spec);
constexpr int64_t kMaxSweepRuns = 1000000;

// A stable 16-hex-digit key of a resolved scenario text (64-bit FNV-1a).
std::string RunKey(const std::string& resolved_yaml);
// A run's key in the results database: RunKey of the resolved scenario with every absolute file path in it
// (trace file, model, cluster and cost files) made relative to `base_dir` (the sweep base's folder), so the
// same sweep run from two checkouts at different paths (Slurm shards on different nodes) gives the same keys
// and `mmtwin sweep --merge` dedupes them. Files are keyed by path, not content.
std::string PortableRunKey(Scenario scenario, const std::string& base_dir);
// {"axis name": value, ...} with numbers and booleans as JSON numbers/booleans, in axis order.
std::string AxesJson(const std::vector<std::pair<std::string, std::string>>& axes);

}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The LongVILA report (`mmtwin-report longvila`): MM-SP (2D attention) against the other sequence-parallel methods
// by sequence length on 32 H100s (Fig. 9 left) and on 64 H100s with Megatron-LM CP and CP + TP (Table 8), the
// longest trainable sequence by GPU count (Fig. 9 right), ZeRO-3's unsharded transients (FSDP vs DeepSpeed) and
// two-stage vs one-stage sharding (Table 5). The paper's values and claims are data/longvila/paper.yaml, the
// prose data/longvila/template.md.
//
// Sources: the sweeps scenarios/sweeps/longvila-32gpu.yaml, longvila-64gpu.yaml and longvila-sharding.yaml run
// through the results database; the max context figures are MaxSequenceSearch (driver/max_seq.h, the search
// behind `mmtwin plan --max-seq`) on scenarios/longvila/max-context-256.yaml with the GPU count (and ZeRO-3
// implementation, or for Megatron-LM's methods its ZeRO stage) overridden, named in the run column as
// "max-seq KEY=VALUE ..." (the overrides, applied in order with ParseScenarioWithOverrides; a ratio of two
// searches names both, "A / B").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "core/scenario/scenario.h"
#include "driver/max_seq.h"
#include "report/common.h"

namespace mmtwin::report::internal {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kSeqs = {"128K", "192K", "256K", "320K"};
// The methods in table order; 32 GPUs runs the first five, 64 GPUs all six.
const std::vector<std::string> kMethods = {"2d",      "zigzag-ring", "ring",
                                           "ulysses", "megatron-cp", "megatron-cp+tp"};
const std::vector<std::string> kMethods32(kMethods.begin(), kMethods.end() - 1);
// MaxSequenceSearch's methods, in table order.
const std::vector<std::string> kMaxSeqMethods = {"2d",          "zigzag-ring",    "ring", "ulysses",
                                                 "megatron-cp", "megatron-cp+tp", "none"};
// GPU counts of the max context search (8 per node; a reduced report searches them all: about 0.4 s).
const std::vector<int> kMaxSeqGpus = {8, 32, 64, 128, 256};
// The runs a reduced report keeps, 128K and 320K, every method: longvila-32gpu.yaml's (cartesian: zero3 x seq x
// method, the method fastest) and longvila-64gpu.yaml's (zip).
const std::vector<int> kReduced32Runs = {0,  1,  2,  3,  4,  15, 16, 17, 18, 19,
                                         20, 21, 22, 23, 24, 35, 36, 37, 38, 39};
const std::vector<int> kReduced64Runs = {0, 1, 2, 3, 4, 5, 18, 19, 20, 21, 22, 23};
const char* const kMaxSeqScenario = "longvila/max-context-256.yaml";
// Data parallelism alone "fails at long contexts" when it stops below this many K tokens on every GPU count.
constexpr double kLongContextK = 64;

bool Reduced(const SweepRows& s) { return s.name.find("-reduced") != std::string::npos; }

double IterMs(const RunRecord& r) { return r.summary->iteration_time_us.mean / 1e3; }

const char* Zero3Label(const std::string& impl) { return impl == "fsdp" ? "FSDP" : "DeepSpeed ZeRO-3"; }

std::string SpeedUpFigure(const std::string& other) {
  return "speed-up of 2d over " + other + " (" + other + " time / 2d time)";
}

// The methods Megatron-LM implements, searched again under its own data-parallel states (kMegatronStates).
const std::vector<std::string> kMegatronMethods = {"megatron-cp", "megatron-cp+tp"};
// Megatron-LM's data parallelism when LongVILA compared with it (arXiv 2408.10188, August 2024): DDP with the
// distributed optimizer (Megatron Core 0.6+), which shards the fp32 master weights and moments but keeps the bf16
// weights and the fp32 main gradients whole (6 + 12/d bytes per parameter, core/plan/memory.h "megatron");
// Megatron Core's own FSDP appears with 0.12 (2025, its CHANGELOG). So Megatron CP is also searched with
// parallel.zero_stage 1 (optimizer_memory auto = megatron), the suite's longvila-8b-256-2m-megatron-cp likewise.
const ScenarioOverride kMegatronStates = {"parallel.zero_stage", "1"};
const char* const kMegatronStatesLabel = "under Megatron-LM's distributed optimizer";

// One max context search: the scenario with `overrides`, every method of kMaxSeqMethods.
struct MaxSeqSearch {
  int gpus = 0;
  std::string zero3;  // "" = the scenario's (simple: no transients)
  std::string ref;    // "max-seq cluster.nodes=1 parallel.sp=8"
  std::map<std::string, MaxSeqRow> by_policy;
};

Result<MaxSeqSearch> SearchMaxSeq(const std::string& scenarios, int gpus, const std::string& zero3,
                                  const ReportOptions& o, const std::vector<ScenarioOverride>& extra = {},
                                  const std::vector<std::string>& methods = kMaxSeqMethods) {
  const fs::path file = fs::path(scenarios) / kMaxSeqScenario;
  std::ifstream in(file);
  if (!in) return Error(file.string() + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<ScenarioOverride> ov = {{"cluster.nodes", std::to_string(std::max(1, gpus / 8))},
                                      {"parallel.sp", std::to_string(gpus)}};
  if (!zero3.empty()) ov.push_back({"parallel.zero3_impl", zero3});
  ov.insert(ov.end(), extra.begin(), extra.end());
  MaxSeqSearch out;
  out.gpus = gpus;
  out.zero3 = zero3;
  out.ref = "max-seq";
  for (const ScenarioOverride& x : ov) out.ref += " " + x.key + "=" + x.yaml_value;
  if (o.progress) o.progress(out.ref + " (" + file.string() + ")");
  MMTWIN_ASSIGN_OR_RETURN(
      Scenario s, ParseScenarioWithOverrides(text.str(), file.string(), file.parent_path().string(), ov));
  MaxSeqOptions mo;
  mo.policies = methods;
  MMTWIN_ASSIGN_OR_RETURN(std::vector<MaxSeqRow> rows, MaxSequenceSearch(s, mo));
  for (MaxSeqRow& r : rows) out.by_policy[r.policy] = std::move(r);
  return out;
}

struct LvRuns {
  SweepRows sp32, sp64, sharding;
  std::vector<MaxSeqSearch> max_seq;        // by GPU count, the scenario's ZeRO-3 (simple)
  std::vector<MaxSeqSearch> max_seq_megatron;  // by GPU count, kMegatronMethods under kMegatronStates
  std::vector<MaxSeqSearch> max_seq_zero3;  // the largest GPU count, fsdp and deepspeed
};

struct LvTables {
  ReportTable sp32, sp64, ctx, zero3, sharding;
  std::vector<const ReportTable*> all() const { return {&sp32, &sp64, &ctx, &zero3, &sharding}; }
};

// "K tokens" (1K = 1,024 tokens, the search's step) of a method's maximum; NaN when the method cannot use it.
double MaxK(const MaxSeqSearch& m, const std::string& policy) {
  auto it = m.by_policy.find(policy);
  if (it == m.by_policy.end() || !it->second.unavailable.empty()) return kNaN;
  return it->second.max_tokens / 1024.0;
}

// The speed-up of 2d over `other` (other's time / 2d's), run column "other / 2d".
void AddSpeedUp(ReportTable& t, const std::string& row, const std::string& other, const RunRecord& a,
                const RunRecord& two_d) {
  t.Add(row, SpeedUpFigure(other), IterMs(a) / IterMs(two_d), 2, RunRef(a) + " / " + RunRef(two_d));
}

// SP methods by sequence length on 32 GPUs, under FSDP and DeepSpeed ZeRO-3.
Status Sp32Table(const LvRuns& r, ReportTable& t) {
  for (const std::string& z : {std::string("fsdp"), std::string("deepspeed")})
    for (const std::string& seq : kSeqs) {
      const std::string row = std::string(Zero3Label(z)) + ", " + seq;
      if (!Find(r.sp32, {{"zero3", z}, {"seq", seq}}).ok() && Reduced(r.sp32)) continue;  // 128K, 320K only
      std::map<std::string, const RunRecord*> m;
      for (const std::string& method : kMethods32) {
        MMTWIN_ASSIGN_OR_RETURN(m[method], Find(r.sp32, {{"zero3", z}, {"seq", seq}, {"sp", method}}));
        t.Add(row, "iteration time (ms), " + method, IterMs(*m[method]), 1, RunRef(*m[method]));
      }
      AddSpeedUp(t, row, "zigzag-ring", *m["zigzag-ring"], *m["2d"]);
      AddSpeedUp(t, row, "ulysses", *m["ulysses"], *m["2d"]);
      AddSpeedUp(t, row, "megatron-cp", *m["megatron-cp"], *m["2d"]);
      t.Add(row, "ring time / zigzag-ring time", IterMs(*m["ring"]) / IterMs(*m["zigzag-ring"]), 2,
            RunRef(*m["ring"]) + " / " + RunRef(*m["zigzag-ring"]));
    }
  return Status();
}

// SP methods by sequence length on 64 GPUs with Megatron CP and CP + TP (FSDP).
Status Sp64Table(const LvRuns& r, ReportTable& t) {
  for (const std::string& seq : kSeqs) {
    std::map<std::string, const RunRecord*> m;
    for (const std::string& method : kMethods) {
      auto found = Find(r.sp64, {{"seq", seq}, {"sp", method}});
      if (!found.ok()) break;
      m[method] = *found;
    }
    if (m.size() != kMethods.size()) {
      if (Reduced(r.sp64)) continue;  // the reduced sweep keeps 128K, 320K
      return Error("sweep " + r.sp64.name + ": no run of every method at " + seq);
    }
    for (const std::string& method : kMethods)
      t.Add(seq, "iteration time (ms), " + method, IterMs(*m[method]), 1, RunRef(*m[method]));
    AddSpeedUp(t, seq, "megatron-cp+tp", *m["megatron-cp+tp"], *m["2d"]);
    AddSpeedUp(t, seq, "megatron-cp", *m["megatron-cp"], *m["2d"]);
    AddSpeedUp(t, seq, "zigzag-ring", *m["zigzag-ring"], *m["2d"]);
    const RunRecord& two_d = *m["2d"];
    t.Add(seq, "exposed comm (% of GPU time), 2d", 100 * two_d.summary->exposed_comm_ratio, 1, RunRef(two_d));
    for (const char* method : {"megatron-cp+tp", "megatron-cp"})
      t.Add(seq, std::string("exposed comm (% of GPU time), ") + method,
            100 * m[method]->summary->exposed_comm_ratio, 1, RunRef(*m[method]));
    const StageRecord& st = two_d.summary->stages.at(0);
    t.Add(seq, "forward compute (ms), 2d", st.fwd_us_mean / 1e3, 1, RunRef(two_d));
    t.Add(seq, "backward compute (ms), 2d", st.bwd_us_mean / 1e3, 1, RunRef(two_d));
  }
  return Status();
}

// The longest sequence per method by GPU count (MaxSequenceSearch).
// Megatron-LM's methods also under kMegatronStates (rows "..., megatron-cp under Megatron-LM's distributed
// optimizer", ratios to 2d under the scenario's ZeRO-3, run column "ZeRO-3 search / Megatron search").
void MaxSeqTable(const LvRuns& r, ReportTable& t) {
  for (size_t i = 0; i < r.max_seq.size(); ++i) {
    const MaxSeqSearch& m = r.max_seq[i];
    const std::string row = std::to_string(m.gpus);
    for (const std::string& method : kMaxSeqMethods) {
      const double k = MaxK(m, method);
      if (!std::isfinite(k)) continue;  // the method cannot use this layout
      t.Add(row, "max context (K tokens), " + method, k, 0, m.ref);
    }
    std::vector<Figure> ratios = {
        {row, "max context (K tokens) per GPU, 2d", "", MaxK(m, "2d") / m.gpus, 1, m.ref},
        {row, "2d / ulysses max context", "", MaxK(m, "2d") / MaxK(m, "ulysses"), 1, m.ref},
        {row, "2d / megatron-cp+tp max context", "", MaxK(m, "2d") / MaxK(m, "megatron-cp+tp"), 2, m.ref}};
    if (i < r.max_seq_megatron.size()) {
      const MaxSeqSearch& g = r.max_seq_megatron[i];
      for (const std::string& method : kMegatronMethods) {
        const double k = MaxK(g, method);
        if (!std::isfinite(k)) continue;
        t.Add(row, "max context (K tokens), " + method + " " + kMegatronStatesLabel, k, 0, g.ref);
        ratios.push_back({row, "2d / " + method + " max context, " + kMegatronStatesLabel, "",
                          MaxK(m, "2d") / k, 2, m.ref + " / " + g.ref});
      }
    }
    for (const Figure& f : ratios)
      if (std::isfinite(f.mmtwin)) t.Add(f.row, f.figure, f.mmtwin, f.decimals, f.run);
  }
}

// ZeRO-3's implementation: max context with its transients, and the 2d iteration time under each (32 GPUs).
Status Zero3Table(const LvRuns& r, ReportTable& t) {
  if (r.max_seq.empty()) return Status();
  const MaxSeqSearch& none = r.max_seq.back();
  t.Add("none (simple)", "max context (K tokens), 2d", MaxK(none, "2d"), 0, none.ref);
  for (const MaxSeqSearch& m : r.max_seq_zero3)
    t.Add(Zero3Label(m.zero3), "max context (K tokens), 2d", MaxK(m, "2d"), 0, m.ref);
  for (const std::string& seq : kSeqs) {
    if (!Find(r.sp32, {{"seq", seq}}).ok() && Reduced(r.sp32)) continue;
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* f,
                            Find(r.sp32, {{"zero3", "fsdp"}, {"seq", seq}, {"sp", "2d"}}));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* d,
                            Find(r.sp32, {{"zero3", "deepspeed"}, {"seq", seq}, {"sp", "2d"}}));
    t.Add("FSDP, " + seq, "speed-up over DeepSpeed ZeRO-3 (DeepSpeed time / FSDP time), 2d",
          IterMs(*d) / IterMs(*f), 2, RunRef(*d) + " / " + RunRef(*f));
  }
  return Status();
}

// Two-stage vs one-stage sharding (longvila-sharding.yaml).
Status ShardingTable(const LvRuns& r, ReportTable& t) {
  for (const std::string g : {"2", "4", "8"}) {
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* two, Find(r.sharding, {{"gpus", g}, {"sharding", "two-stage"}}));
    MMTWIN_ASSIGN_OR_RETURN(const RunRecord* one, Find(r.sharding, {{"gpus", g}, {"sharding", "one-stage"}}));
    const double a = two->summary->iteration_time_us.p50 / 1e3, b = one->summary->iteration_time_us.p50 / 1e3;
    t.Add(g, "p50 iteration time (ms), two-stage", a, 1, RunRef(*two));
    t.Add(g, "p50 iteration time (ms), one-stage", b, 1, RunRef(*one));
    t.Add(g, "two-stage speed-up (%) (one-stage / two-stage − 1)", 100 * (b / a - 1), 2,
          RunRef(*one) + " / " + RunRef(*two));
  }
  return Status();
}

Result<LvTables> FillTables(const Paper& paper, const LvRuns& r) {
  LvTables t;
  for (auto [table, name] : {std::pair{&t.sp32, "sp32"},
                             {&t.sp64, "sp64"},
                             {&t.ctx, "ctx"},
                             {&t.zero3, "zero3"},
                             {&t.sharding, "sharding"}}) {
    MMTWIN_ASSIGN_OR_RETURN(*table, NewTable(paper, name));
  }
  MMTWIN_RETURN_IF_ERROR(Sp32Table(r, t.sp32));
  MMTWIN_RETURN_IF_ERROR(Sp64Table(r, t.sp64));
  MaxSeqTable(r, t.ctx);
  MMTWIN_RETURN_IF_ERROR(Zero3Table(r, t.zero3));
  MMTWIN_RETURN_IF_ERROR(ShardingTable(r, t.sharding));
  return t;
}

// Min and max of a figure over rows (NaN-free; NaN when none).
std::pair<double, double> Range(const ReportTable& t, const std::vector<std::string>& rows,
                                const std::string& figure) {
  double lo = kNaN, hi = kNaN;
  for (const std::string& row : rows) {
    const double v = Cell(t, row, figure);
    if (!std::isfinite(v)) continue;
    lo = std::isfinite(lo) ? std::min(lo, v) : v;
    hi = std::isfinite(hi) ? std::max(hi, v) : v;
  }
  return {lo, hi};
}

std::string RangeText(std::pair<double, double> r, int d, const std::string& unit = "×") {
  if (!std::isfinite(r.first)) return "n/a";
  if (Fixed(r.first, d) == Fixed(r.second, d)) return Fixed(r.first, d) + unit;
  return Fixed(r.first, d) + "–" + Fixed(r.second, d) + unit;
}

// The rows of `t` with label prefix `prefix` ("FSDP, ") for every length `seqs`.
std::vector<std::string> Rows(const std::string& prefix, const std::vector<std::string>& seqs) {
  std::vector<std::string> v;
  for (const std::string& s : seqs) v.push_back(prefix + s);
  return v;
}

// The lengths a table holds (its rows "PREFIX" + seq).
std::vector<std::string> SeqsIn(const ReportTable& t, const std::string& prefix) {
  std::vector<std::string> v;
  for (const std::string& s : kSeqs)
    if (std::isfinite(Cell(t, prefix + s, "iteration time (ms), 2d"))) v.push_back(s);
  return v;
}

// Adds a line to `c`, or, when an earlier line has the same values (within 0.1% wherever both have one), names it
// in that line's legend entry instead ("2d = zigzag-ring"): lines drawn on top of each other would hide one.
void AddMerged(ChartSpec& c, const std::string& name, const std::vector<double>& v, bool show_values) {
  for (ChartSeries& s : c.series) {
    bool same = s.values.size() == v.size();
    for (size_t i = 0; same && i < v.size(); ++i)
      if (std::isfinite(v[i]) && std::isfinite(s.values[i]))
        same = std::abs(v[i] - s.values[i]) <= 1e-3 * std::max(std::abs(v[i]), std::abs(s.values[i]));
    if (same) {
      s.name += " = " + name;
      for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(s.values[i])) s.values[i] = v[i];
      return;
    }
  }
  c.series.push_back({name, v, show_values});
}

// "1" for 1.0, "2.5" for 2.5 (a claim's bound in a chart's text).
std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Time per iteration by length per method on 32 and 64 GPUs.
Status TimeCharts(const LvTables& t, Plotter& plotter, ReportFiles& files, Bindings& b) {
  auto time_lines = [&](const ReportTable& tab, const std::string& prefix,
                        const std::vector<std::string>& methods, const std::string& title) {
    ChartSpec c;
    c.kind = ChartSpec::Kind::kLines;
    c.title = title;
    c.y_label = "iteration time (s)";
    c.x_label = "sequence length (tokens, 1K = 1,024)";
    c.categories = SeqsIn(tab, prefix);
    for (const std::string& m : methods) {
      std::vector<double> v;
      for (const std::string& s : c.categories)
        v.push_back(Cell(tab, prefix + s, "iteration time (ms), " + m) / 1e3);
      AddMerged(c, m == "2d" ? "2d (MM-SP)" : m, v, false);
    }
    c.value_decimals = -1;  // the lines meet; the table has every value
    return c;
  };
  MMTWIN_RETURN_IF_ERROR(
      AddChart(plotter, "sp32",
               time_lines(t.sp32, "FSDP, ", kMethods32,
                          "SP methods on 32 H100s, FSDP: time per iteration (mmtwin; cf. Fig. 9 left)"),
               files, b));
  return AddChart(plotter, "sp64",
                  time_lines(t.sp64, "", kMethods,
                             "SP methods on 64 H100s (FSDP; Megatron-LM on its own DP): time per iteration "
                             "(mmtwin; cf. Table 8)"),
                  files, b);
}

// Max context by GPU count (with the paper's 256-GPU point) and two-stage sharding against the paper's range.
Status ContextAndShardingCharts(const Paper& paper, const LvTables& t, Plotter& plotter, ReportFiles& files,
                                Bindings& b) {
  {
    ChartSpec c;
    c.kind = ChartSpec::Kind::kLines;
    c.title = "Longest trainable sequence by GPU count, no checkpointing (mmtwin; cf. Fig. 9 right)";
    c.y_label = "max context (K tokens)";
    c.x_label = "GPUs (H100, 8 per node)";
    for (const Figure& f : t.ctx.rows)
      if (f.figure == "max context (K tokens), 2d") c.categories.push_back(f.row);
    for (const std::string& m : kMaxSeqMethods) {
      std::vector<double> v;
      for (const std::string& g : c.categories) v.push_back(Cell(t.ctx, g, "max context (K tokens), " + m));
      AddMerged(c, m == "none" ? "DP only" : m, v, m == "2d");
    }
    std::vector<double> mg;
    for (const std::string& g : c.categories)
      mg.push_back(
          Cell(t.ctx, g, std::string("max context (K tokens), megatron-cp ") + kMegatronStatesLabel));
    AddMerged(c, "megatron-cp, dist. opt.", mg, false);
    MMTWIN_ASSIGN_OR_RETURN(PaperClaim point, paper.Claim("context_256_chart"));
    std::vector<double> p(c.categories.size(), kNaN);
    if (!c.categories.empty() && c.categories.back() == "256") p.back() = point.low;
    c.series.push_back({"paper: > 2M", p, false});
    c.value_decimals = 0;
    MMTWIN_RETURN_IF_ERROR(AddChart(plotter, "max-context", c, files, b));
  }
  MMTWIN_ASSIGN_OR_RETURN(PaperClaim two, paper.Claim("two_stage"));
  ChartSpec c;
  c.title = "Two-stage vs one-stage sharding: speed-up of two-stage (%) (paper gives " + Short(two.low) +
            "–" + Short(two.high) + "% over 2–8 GPUs)";
  c.y_label = "two-stage speed-up (%)";
  c.x_label = "GPUs (k frames per video, batch size k)";
  std::vector<double> mm, lo, hi;
  for (const std::string g : {"2", "4", "8"}) {
    c.categories.push_back(g);
    mm.push_back(Cell(t.sharding, g, "two-stage speed-up (%) (one-stage / two-stage − 1)"));
    lo.push_back(two.low);
    hi.push_back(two.high);
  }
  c.series = {{"mmtwin", mm},
              {"paper, low end of its range (" + Short(two.low) + "%)", lo},
              {"paper, high end (" + Short(two.high) + "%)", hi}};
  c.value_decimals = 2;
  return AddChart(plotter, "sharding", c, files, b);
}

// How a range of mmtwin's (lo..hi) stands to a claim: "yes" when they overlap, "direction only" when mmtwin's is
// on the claim's side of parity without reaching it, else "no".
std::string Verdict(std::pair<double, double> m, const PaperClaim& c) {
  if (!std::isfinite(m.first)) return "n/a";
  if (m.second >= c.low && m.first <= c.high) return "yes";
  if (m.first > c.parity) return "direction only";
  return "no";
}

// "At a glance": per claim of paper.yaml, mmtwin's range (read from the tables) and the verdict.
Status BindGlance(const Paper& paper, const LvTables& t, Bindings& b) {
  const std::vector<std::string> f32 = Rows("FSDP, ", SeqsIn(t.sp32, "FSDP, ")), s64 = SeqsIn(t.sp64, "");
  std::vector<std::string> gpu_rows;
  for (const int g : kMaxSeqGpus) gpu_rows.push_back(std::to_string(g));
  const std::string top = std::to_string(kMaxSeqGpus.back());
  b.SetValue("glance_top", top);
  auto bind = [&](const std::string& claim, std::pair<double, double> range,
                  const std::string& text) -> Status {
    MMTWIN_ASSIGN_OR_RETURN(PaperClaim c, paper.Claim(claim));
    b.SetValue("glance_" + claim, text);
    b.SetValue("verdict_" + claim, Verdict(range, c));
    return Status();
  };
  const auto zz = Range(t.sp32, f32, SpeedUpFigure("zigzag-ring"));
  MMTWIN_RETURN_IF_ERROR(bind("zigzag", zz, RangeText(zz, 2)));
  const auto ul = Range(t.sp32, f32, SpeedUpFigure("ulysses"));
  MMTWIN_RETURN_IF_ERROR(bind("ulysses", ul, RangeText(ul, 2)));
  const auto cptp = Range(t.sp64, s64, SpeedUpFigure("megatron-cp+tp"));
  MMTWIN_RETURN_IF_ERROR(bind("megatron_cp_tp", cptp, RangeText(cptp, 2)));
  const auto cp = Range(t.sp64, s64, SpeedUpFigure("megatron-cp"));
  MMTWIN_RETURN_IF_ERROR(bind("megatron_cp", cp, RangeText(cp, 2)));
  const double k2d = Cell(t.ctx, top, "max context (K tokens), 2d");
  MMTWIN_RETURN_IF_ERROR(bind("context_256", {k2d, k2d}, FixedOrNa(k2d, 0)));
  const double xu = Cell(t.ctx, top, "2d / ulysses max context");
  MMTWIN_RETURN_IF_ERROR(bind("context_vs_ulysses", {xu, xu}, FixedOrNa(xu, 1)));
  // The suite's reading (scenarios/validation/published.suite.yaml, longvila-8b-256-2m-megatron-cp): Megatron CP
  // alone, with Megatron-LM's own data-parallel states.
  const double xm = Cell(t.ctx, top, std::string("2d / megatron-cp max context, ") + kMegatronStatesLabel);
  MMTWIN_RETURN_IF_ERROR(bind("context_vs_megatron", {xm, xm}, FixedOrNa(xm, 2)));
  const double km =
      Cell(t.ctx, top, std::string("max context (K tokens), megatron-cp ") + kMegatronStatesLabel);
  MMTWIN_RETURN_IF_ERROR(bind("context_megatron", {km, km}, FixedOrNa(km, 0)));
  const auto dp = Range(t.ctx, gpu_rows, "max context (K tokens), none");
  b.SetValue("glance_dp_only", RangeText(dp, 0, "K"));
  b.SetValue("verdict_dp_only", dp.second < kLongContextK ? "yes" : "no");
  const auto two = Range(t.sharding, {"2", "4", "8"}, "two-stage speed-up (%) (one-stage / two-stage − 1)");
  return bind("two_stage", two, RangeText(two, 2, "%"));
}

// The values "Where mmtwin differs and why" computes beyond single cells (the template reads cells itself).
void BindDiffers(const LvTables& t, Bindings& b) {
  const std::vector<std::string> s32 = SeqsIn(t.sp32, "FSDP, ");
  const std::vector<std::string> s64 = SeqsIn(t.sp64, "");
  const std::string first64 = s64.empty() ? "" : s64.front(), last64 = s64.empty() ? "" : s64.back();
  b.SetValue("first64", first64);
  b.SetValue("last64", last64);
  b.SetValue("first64_k_per_gpu", std::to_string(first64.empty() ? 0 : std::atoi(first64.c_str()) / 64));
  b.SetValue("seq_range_32", s32.empty() ? "" : s32.front() + "–" + s32.back());
  b.SetValue("ctx_top", t.ctx.rows.empty() ? "" : t.ctx.rows.back().row);
  const std::vector<std::string> fsdp = Rows("FSDP, ", s32), ds = Rows("DeepSpeed ZeRO-3, ", s32);
  b.SetValue("zigzag_fsdp", RangeText(Range(t.sp32, fsdp, SpeedUpFigure("zigzag-ring")), 2));
  b.SetValue("zigzag_deepspeed", RangeText(Range(t.sp32, ds, SpeedUpFigure("zigzag-ring")), 2));
  b.SetValue("ring_vs_zigzag_fsdp", RangeText(Range(t.sp32, fsdp, "ring time / zigzag-ring time"), 2));
  b.SetValue("ulysses_fsdp", RangeText(Range(t.sp32, fsdp, SpeedUpFigure("ulysses")), 2));
  b.SetValue("ulysses_deepspeed", RangeText(Range(t.sp32, ds, SpeedUpFigure("ulysses")), 2));
  b.SetValue("megatron_cp_32", RangeText(Range(t.sp32, fsdp, SpeedUpFigure("megatron-cp")), 2));
  b.SetValue("megatron_cp_64", RangeText(Range(t.sp64, s64, SpeedUpFigure("megatron-cp")), 2));
  std::vector<std::string> gpu_rows;
  for (const int g : kMaxSeqGpus) gpu_rows.push_back(std::to_string(g));
  b.SetValue("dp_only_context", RangeText(Range(t.ctx, gpu_rows, "max context (K tokens), none"), 0, "K"));
  b.SetValue("two_stage", RangeText(Range(t.sharding, {"2", "4", "8"},
                                          "two-stage speed-up (%) (one-stage / two-stage − 1)"),
                                    2, "%"));
  b.SetValue(
      "fsdp_over_deepspeed",
      RangeText(Range(t.zero3, fsdp, "speed-up over DeepSpeed ZeRO-3 (DeepSpeed time / FSDP time), 2d"), 2));
}

Result<LvRuns> RunAll(const ReportOptions& o, const std::string& scenarios) {
  LvRuns runs;
  MMTWIN_RETURN_IF_ERROR(RunReportSweeps(o, scenarios,
                                         {{"longvila-32gpu", &runs.sp32, kReduced32Runs},
                                          {"longvila-64gpu", &runs.sp64, kReduced64Runs},
                                          {"longvila-sharding", &runs.sharding}}));
  for (const int gpus : kMaxSeqGpus) {
    MMTWIN_ASSIGN_OR_RETURN(MaxSeqSearch m, SearchMaxSeq(scenarios, gpus, "", o));
    runs.max_seq.push_back(std::move(m));
    MMTWIN_ASSIGN_OR_RETURN(MaxSeqSearch g,
                            SearchMaxSeq(scenarios, gpus, "", o, {kMegatronStates}, kMegatronMethods));
    runs.max_seq_megatron.push_back(std::move(g));
  }
  for (const std::string& z : {std::string("fsdp"), std::string("deepspeed")}) {
    MMTWIN_ASSIGN_OR_RETURN(MaxSeqSearch m, SearchMaxSeq(scenarios, kMaxSeqGpus.back(), z, o));
    runs.max_seq_zero3.push_back(std::move(m));
  }
  return runs;
}

}  // namespace

Status GenerateLongvila(const ReportOptions& o, const std::string& scenarios, Plotter& plotter,
                        ReportFiles& files) {
  MMTWIN_ASSIGN_OR_RETURN(ReportData data, LoadReportData(o, "longvila"));
  MMTWIN_ASSIGN_OR_RETURN(LvRuns runs, RunAll(o, scenarios));
  MMTWIN_ASSIGN_OR_RETURN(LvTables t, FillTables(data.paper, runs));
  if (!o.reduced) MMTWIN_RETURN_IF_ERROR(CheckPaperValuesShown(data.paper, t.all()));
  Bindings b;
  for (const ReportTable* x : t.all()) b.SetTable(x->name, x);
  ReportFiles images;
  MMTWIN_RETURN_IF_ERROR(TimeCharts(t, plotter, images, b));
  MMTWIN_RETURN_IF_ERROR(ContextAndShardingCharts(data.paper, t, plotter, images, b));
  b.SetValue("header", Header(o));
  b.SetValue("zero3_gpus", runs.max_seq.empty() ? "" : std::to_string(runs.max_seq.back().gpus));
  for (const auto& [name, rows] :
       {std::pair{"sp32", &runs.sp32}, {"sp64", &runs.sp64}, {"sharding", &runs.sharding}})
    b.SetValue(std::string(name) + "_iterations", Iterations(*rows));
  MMTWIN_RETURN_IF_ERROR(BindGlance(data.paper, t, b));
  BindDiffers(t, b);
  MMTWIN_ASSIGN_OR_RETURN(std::string md, Render(data.tmpl, b));
  files.emplace_back("README.md", std::move(md));
  for (auto& f : images) files.push_back(std::move(f));
  return Status();
}

}  // namespace mmtwin::report::internal

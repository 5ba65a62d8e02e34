// SPDX-License-Identifier: Apache-2.0
#include "core/plan/encoder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

namespace mmtwin {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A free interval of a rank: [start, end); `grows`: it ends where the rank's first op starts, so a larger shift
// lengthens it (the leading gap, or what a placed pass left of its end).
struct Gap {
  double start = 0, end = 0;
  bool grows = false;
  int32_t before = 0;  // the rank's schedule op it precedes (its op count: after the last)
};
using Gaps = std::vector<Gap>;

struct Placement {
  double violation = 0;  // > 0: a forward fits nowhere in time; the shift must grow by at least this much
  std::vector<int> rank;
  std::vector<double> fwd_start, bwd_start;
  std::vector<int32_t> fwd_before, bwd_before;  // the gaps' positions in the rank's schedule
};

class Scheduler {
 public:
  Scheduler(const EncoderTimeline& t, const EncoderPlacementOptions& o, int pp, int micro_batches)
      : t_(t), o_(o), P_(pp), M_(micro_batches) {}

  // Step 1 on the timeline shifted by `shift`.
  Placement Place(double shift) const {
    Placement pl;
    pl.rank.assign(M_, -1);
    pl.fwd_start.assign(M_, 0);
    pl.bwd_start.assign(M_, 0);
    pl.fwd_before.assign(M_, 0);
    pl.bwd_before.assign(M_, 0);
    std::vector<Gaps> fwd_gaps(P_), bwd_gaps(P_);
    for (int r = 0; r < P_; ++r) {
      fwd_gaps[r] = GapsOf(r, shift, /*forward=*/true);
      bwd_gaps[r] = GapsOf(r, shift, /*forward=*/false);
    }
    for (int m = 0; m < M_; ++m) {
      const double dur = t_.forward_us[m], bdur = t_.backward_us[m];
      // Per rank its earliest forward fit before the deadline; with a backward, where that rank would then run
      // it. The rank whose backward ends first takes the micro-batch (the tail is what a late backward
      // exposes), then the one whose forward ends first, then the lower rank.
      int best_rank = -1;
      size_t best_gap = 0;
      double best_finish = kInf, best_bfinish = kInf, need = kInf;
      int32_t best_bbefore = 0;
      for (int r = 0; r < P_; ++r) {
        const double deadline = t_.first_forward_start_us[m] + shift - (r != 0 ? t_.output_send_us[m] : 0.0);
        const Gaps& free = fwd_gaps[r];
        for (size_t g = 0; g < free.size(); ++g) {
          const double finish = free[g].start + dur;
          const bool fits = finish <= free[g].end;
          // How much more shift would let it fit here: a growing gap lengthens with it, the deadline moves too.
          if (fits || free[g].grows)
            need = std::min(need, std::max(finish - deadline, fits ? -kInf : finish - free[g].end));
          if (!fits || finish > deadline) continue;
          double bfinish = 0;
          int32_t bbefore = 0;
          if (t_.backward) {
            Gaps bfree = bwd_gaps[r];
            Remove(bfree, finish - dur, finish);
            const double arrival = Arrival(m, r, shift);
            bfinish = kInf;
            for (size_t k = 0; k < bfree.size(); ++k) {
              const double start = std::max(bfree[k].start, arrival);
              if (start + bdur <= bfree[k].end) {
                bfinish = start + bdur;
                bbefore = bfree[k].before;
                break;
              }
            }
          }
          if (bfinish < best_bfinish || (bfinish == best_bfinish && finish < best_finish)) {
            best_bfinish = bfinish;
            best_bbefore = bbefore;
            best_finish = finish;
            best_rank = r;
            best_gap = g;
          }
          break;  // the rank's earliest fit
        }
      }
      if (best_rank < 0) {
        pl.violation = std::max(need, 1e-6);
        return pl;
      }
      pl.rank[m] = best_rank;
      pl.fwd_start[m] = best_finish - dur;
      pl.fwd_before[m] = fwd_gaps[best_rank][best_gap].before;
      pl.bwd_before[m] = best_bbefore;
      Take(fwd_gaps[best_rank], best_gap, best_finish - dur, best_finish);
      Remove(bwd_gaps[best_rank], best_finish - dur, best_finish);  // the rank is busy then for backwards too
      if (t_.backward) {
        pl.bwd_start[m] = best_bfinish - bdur;
        Remove(bwd_gaps[best_rank], best_bfinish - bdur, best_bfinish);
        Remove(fwd_gaps[best_rank], best_bfinish - bdur, best_bfinish);
      }
    }
    return pl;
  }

 private:
  // When micro-batch m's output gradient reaches rank r.
  double Arrival(int m, int r, double shift) const {
    return t_.first_backward_end_us[m] + shift + (r != 0 ? t_.gradient_send_us[m] : 0.0);
  }
  // Rank r's bubbles on the shifted timeline, each before one of its schedule ops: the leading gap (before op 0),
  // the gap between op i - 1 and op i (from the latest end of ops 0..i-1 to op i's start, over the replicas;
  // fine: those of at least min_bubble_us), the trailing gap (after the latest end); coarse forwards use the
  // leading gap alone, coarse backwards the trailing one.
  Gaps GapsOf(int r, double shift, bool forward) const {
    const auto& start = t_.op_start_us[r];
    const auto& end = t_.op_end_us[r];
    const int32_t n = static_cast<int32_t>(start.size());
    double last = 0;
    for (double e : end) last = std::max(last, e);
    const Gap leading{0.0, n > 0 ? start[0] + shift : 0.0, true, 0}, trailing{last + shift, kInf, false, n};
    if (!o_.fine) return {forward ? leading : trailing};
    Gaps g{leading};
    double done = n > 0 ? end[0] : 0.0;
    for (int32_t i = 1; i < n; ++i) {
      const double a = done + shift, b = start[i] + shift;
      if (b > a && b - a >= o_.min_bubble_us) g.push_back({a, b, false, i});
      done = std::max(done, end[i]);
    }
    g.push_back(trailing);
    return g;
  }

  // Marks [a, b) of gap g taken: the gap keeps what is left on either side (the right part keeps `grows`).
  static void Take(Gaps& free, size_t g, double a, double b) {
    const Gap gap = free[g];
    free.erase(free.begin() + static_cast<std::ptrdiff_t>(g));
    Gaps parts;
    if (a > gap.start) parts.push_back({gap.start, a, false, gap.before});
    if (gap.end > b || gap.grows) parts.push_back({b, gap.end, gap.grows, gap.before});
    free.insert(free.begin() + static_cast<std::ptrdiff_t>(g), parts.begin(), parts.end());
  }
  // Removes [a, b) from whatever gaps overlap it.
  static void Remove(Gaps& free, double a, double b) {
    if (b <= a) return;
    Gaps out;
    for (const Gap& x : free) {
      if (x.end <= a || x.start >= b) {
        out.push_back(x);
        continue;
      }
      if (x.start < a) out.push_back({x.start, a, false, x.before});
      if (x.end > b) out.push_back({b, x.end, x.grows, x.before});
    }
    free = std::move(out);
  }

  const EncoderTimeline& t_;
  const EncoderPlacementOptions& o_;
  const int P_, M_;
};

Status CheckTimeline(const Schedule& s, const EncoderTimeline& t) {
  const size_t P = static_cast<size_t>(s.pp), M = static_cast<size_t>(s.micro_batches);
  if (t.op_start_us.size() != P || t.op_end_us.size() != P)
    return Error("encoder placement: the timeline has " + std::to_string(t.op_start_us.size()) +
                 " ranks, expected " + std::to_string(P));
  for (size_t r = 0; r < P; ++r)
    if (t.op_start_us[r].size() != s.per_rank[r].size() || t.op_end_us[r].size() != s.per_rank[r].size())
      return Error("encoder placement: rank " + std::to_string(r) + " has " +
                   std::to_string(t.op_start_us[r].size()) + " op starts for " +
                   std::to_string(s.per_rank[r].size()) + " schedule ops");
  for (const auto* v : {&t.first_forward_start_us, &t.first_backward_end_us, &t.forward_us, &t.backward_us,
                        &t.output_send_us, &t.gradient_send_us}) {
    if (v->size() != M)
      return Error("encoder placement: " + std::to_string(v->size()) + " micro-batch entries, expected " +
                   std::to_string(M));
    for (double x : *v)
      if (!(x >= 0) || !std::isfinite(x))
        return Error("encoder placement: times must be finite and >= 0, got " + std::to_string(x));
  }
  return Status();
}

}  // namespace

Result<std::vector<std::vector<EncoderPass>>> PlaceEncoderPasses(const Schedule& s, const EncoderTimeline& t,
                                                                 const EncoderPlacementOptions& o,
                                                                 EncoderPlacementReport* report) {
  MMTWIN_RETURN_IF_ERROR(CheckTimeline(s, t));
  const int P = s.pp, M = s.micro_batches;
  // Steps 1-2 for one fill; fine also tries the coarse one and keeps the shorter planned iteration (ties: fine).
  struct Solution {
    Placement pl;
    double shift = 0, planned_us = 0;
  };
  auto solve = [&](const EncoderPlacementOptions& opt) -> Result<Solution> {
    const Scheduler scheduler(t, opt, P, M);
    Solution x;
    x.pl = scheduler.Place(x.shift);
    for (int round = 0; x.pl.violation > 0 && round < 4 * M + 16; ++round) {
      x.shift += x.pl.violation;
      x.pl = scheduler.Place(x.shift);
    }
    if (x.pl.violation > 0) {  // rank 0's leading gap holds every forward in order before its deadline
      x.shift = std::accumulate(t.forward_us.begin(), t.forward_us.end(), 0.0) +
                *std::max_element(t.output_send_us.begin(), t.output_send_us.end());
      x.pl = scheduler.Place(x.shift);
      if (x.pl.violation > 0)
        return Error("encoder placement: no forward placement within " + std::to_string(x.shift) + " us");
    }
    x.planned_us = t.iteration_us + x.shift;
    for (int m = 0; m < M; ++m) {
      x.planned_us = std::max(x.planned_us, x.pl.fwd_start[m] + t.forward_us[m]);
      if (t.backward) x.planned_us = std::max(x.planned_us, x.pl.bwd_start[m] + t.backward_us[m]);
    }
    return x;
  };
  MMTWIN_ASSIGN_OR_RETURN(Solution best, solve(o));
  bool coarse_chosen = !o.fine;
  if (o.fine) {
    EncoderPlacementOptions c = o;
    c.fine = false;
    MMTWIN_ASSIGN_OR_RETURN(Solution alt, solve(c));
    if (alt.planned_us < best.planned_us) {
      best = std::move(alt);
      coarse_chosen = true;
    }
  }
  const Placement& pl = best.pl;
  const double shift = best.shift;
  // Step 3: each rank's passes, by position and then planned start, before the schedule op their gap precedes.
  struct Planned {
    double start;
    EncoderPass pass;
  };
  std::vector<std::vector<Planned>> planned(P);
  for (int m = 0; m < M; ++m) {
    planned[pl.rank[m]].push_back({pl.fwd_start[m], {PassKind::kForward, m, pl.fwd_before[m]}});
    if (t.backward)
      planned[pl.rank[m]].push_back({pl.bwd_start[m], {PassKind::kBackward, m, pl.bwd_before[m]}});
  }
  std::vector<std::vector<EncoderPass>> out(P);
  for (int r = 0; r < P; ++r) {
    auto& v = planned[r];
    std::stable_sort(v.begin(), v.end(), [](const Planned& a, const Planned& b) {
      if (a.pass.before != b.pass.before) return a.pass.before < b.pass.before;
      if (a.start != b.start) return a.start < b.start;
      return a.pass.kind == PassKind::kForward && b.pass.kind != PassKind::kForward;
    });
    for (const Planned& x : v) out[r].push_back(x.pass);
  }
  if (report) {
    report->shift_us = shift;
    report->planned_us = best.planned_us;
    report->coarse = coarse_chosen;
    report->rank_of_micro_batch = pl.rank;
    report->forward_start_us = pl.fwd_start;
    report->backward_start_us = pl.bwd_start;
  }
  return out;
}

namespace {

Result<std::vector<std::vector<EncoderPass>>> RunPipeline(const Schedule&, const EncoderTimeline&,
                                                          const Params&) {
  return std::vector<std::vector<EncoderPass>>{};
}

Result<std::vector<std::vector<EncoderPass>>> RunBubbles(const Schedule& s, const EncoderTimeline& t,
                                                         const Params& p) {
  EncoderPlacementOptions o;
  o.fine = p.Str("fill") == "fine";
  o.min_bubble_us = p.Double("min_bubble_us");
  return PlaceEncoderPasses(s, t, o);
}

}  // namespace

const PolicyRegistry<EncoderPlacementFn>& EncoderPlacements() {
  static const PolicyRegistry<EncoderPlacementFn> r(
      "encoder placement", "encoder placement",
      {{"pipeline",
        "the encoders are layers of the pipeline, partitioned with the LLM's (Megatron-LM: on the first "
        "chunk)",
        {},
        &RunPipeline},
       {"bubbles",
        "Optimus (ATC'25): the encoders leave the pipeline, every GPU holds a replica; each micro-batch's "
        "encoder forward and backward run whole on one rank, scheduled into the LLM pipeline's bubbles",
        {{"fill",
          ParamType::kString,
          "fine",
          "which bubbles: coarse (Optimus's InitSchedule: the warm-up and cool-down gaps before and after "
          "each "
          "rank's LLM work), fine (also the gaps between its ops)",
          {"fine", "coarse"}},
         {"min_bubble_us",
          ParamType::kDouble,
          "0",
          "fine: gaps shorter than this many microseconds are not used",
          {},
          0,
          1e12}},
        &RunBubbles}});
  return r;
}

int EncoderLayerCount(const ModelSpec& model, const std::vector<Layer>& layers) {
  int e = 0;
  while (e < static_cast<int>(layers.size()) &&
         model.components[layers[e].component].kind != ComponentKind::kLlm)
    ++e;
  return e == static_cast<int>(layers.size()) ? 0 : e;
}

}  // namespace mmtwin

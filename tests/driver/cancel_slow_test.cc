// SPDX-License-Identifier: Apache-2.0
// Cancelling a run at any moment — while the trace is generated, the data policy plans, BMP times its candidates,
// adaptive recomputation fits memory, or the iterations replay — ends it with the cancellation itself
// (Error::Cancelled: kind cancelled, message "cancelled", no file, line or key), never with an error that names a
// place in the scenario. The property is checked over cancel times spread across the whole run, measured on this
// machine (so it holds under sanitizers and load too), with the planning phase sampled densely.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "driver/planner.h"
#include "driver/simulate.h"

namespace mmtwin {
namespace {

using Clock = std::chrono::steady_clock;

// OmniBal's recipe on 16 GPUs: ISF, BMP, adaptive recomputation, 1F1B; BMP widened (radius 4, up to 100 candidates,
// none pruned, 32 micro-batches) so that timing its candidates on the op graph is most of the planning.
Scenario Recipe() {
  Scenario s;
  s.name = "cancel";
  s.path = "cancel.yaml";  // errors about a key would name this file
  s.trace.preset = "internvl-1.2m";
  s.trace.samples = 20000;
  s.trace.seed = 1;
  s.model = "internvl-1.5-6b-20b";
  s.cluster = "a100-4x200g";
  s.parallel.dp = 2;
  s.parallel.tp = 2;
  s.parallel.pp = 4;
  s.parallel.micro_batches = 32;
  s.parallel.zero_stage = 1;
  s.data = {"isf", {}};
  s.partition = {"bmp", {{"prune", "false"}, {"radius", "4"}, {"top_k", "100"}}};
  s.recompute = {"adaptive", {}};
  s.schedule = {"1f1b", {}};
  s.iterations = 8;
  s.seed = 1;
  return s;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Runs `work` with the cancel flag raised after `delay_s`; returns its result.
template <class Work>
auto CancelledAfter(double delay_s, Work work) {
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
    cancel = true;
  });
  auto r = work(&cancel);
  canceller.join();
  return r;
}

// ok, or the cancellation and nothing else.
template <class R>
void ExpectOkOrCancelled(const R& r, double delay_s, int& cancelled) {
  if (r.ok()) return;
  EXPECT_TRUE(r.error().cancelled()) << "cancel after " << delay_s
                                     << " s gave an error: " << r.error().message();
  EXPECT_EQ(r.error().message(), "cancelled") << "after " << delay_s << " s";
  cancelled += r.error().cancelled();
}

TEST(CancelTest, SimulateEndsWithTheCancellationAtAnyMoment) {
  const Scenario s = Recipe();
  const auto t0 = Clock::now();
  ASSERT_TRUE(BuildPlan(s, {}).ok());
  const double plan_s = Seconds(t0, Clock::now());
  const auto t1 = Clock::now();
  ASSERT_TRUE(Simulate(s, {}).ok());
  const double run_s = Seconds(t1, Clock::now());

  // 24 cancel times over the whole run, and 24 more inside planning (where BMP and adaptive recompute spend it).
  std::vector<double> delays;
  for (int k = 0; k < 24; ++k) delays.push_back(run_s * k / 24.0);
  for (int k = 0; k < 24; ++k) delays.push_back(plan_s * (k + 0.5) / 24.0);
  int cancelled = 0;
  for (double d : delays) {
    auto r = CancelledAfter(d, [&](const std::atomic<bool>* cancel) {
      SimulateOptions o;
      o.cancel = cancel;
      return Simulate(s, o);
    });
    ExpectOkOrCancelled(r, d, cancelled);
  }
  // Most cancel times land before the run ends (a loaded machine only makes the run longer).
  EXPECT_GE(cancelled, 24) << "plan " << plan_s << " s, run " << run_s << " s";
}

TEST(CancelTest, BuildPlanEndsWithTheCancellationAtAnyMoment) {
  const Scenario s = Recipe();
  const auto t0 = Clock::now();
  ASSERT_TRUE(BuildPlan(s, {}).ok());
  const double plan_s = Seconds(t0, Clock::now());
  Scenario uniform = s;
  uniform.partition = {"uniform", {}};
  const auto t1 = Clock::now();
  ASSERT_TRUE(BuildPlan(uniform, {}).ok());
  const double uniform_s = Seconds(t1, Clock::now());
  std::printf("planning %.3f s, of which BMP's search about %.0f%% (uniform partition: %.3f s)\n", plan_s,
              100 * std::max(0.0, 1 - uniform_s / plan_s), uniform_s);
  int cancelled = 0;
  for (int k = 0; k < 32; ++k) {
    const double d = plan_s * k / 32.0;
    auto r = CancelledAfter(d, [&](const std::atomic<bool>* cancel) {
      PlanOptions o;
      o.cancel = cancel;
      return BuildPlan(s, o);
    });
    ExpectOkOrCancelled(r, d, cancelled);
  }
  EXPECT_GE(cancelled, 16) << "plan " << plan_s << " s";
  // A flag raised before the start cancels at the first check.
  std::atomic<bool> raised{true};
  PlanOptions o;
  o.cancel = &raised;
  auto r = BuildPlan(s, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().cancelled());
}

}  // namespace
}  // namespace mmtwin

// SPDX-License-Identifier: Apache-2.0
// The single-process reference (train.h: RunReference) and the grads file (reference.h).
#include "backend/reference.h"

#include <torch/csrc/autograd/autograd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>

#include "backend/model.h"
#include "backend/optimizer.h"
#include "backend/torch_runtime.h"
#include "backend/train.h"
#include "core/scenario/scenario.h"
#include "driver/planner.h"

namespace mmtwin::backend {

void WriteGrads(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& named,
                double loss, bool values) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write("MMTG", 4);
  auto put = [&](const std::string& name, const float* data, uint64_t n) {
    const uint32_t len = static_cast<uint32_t>(name.size());
    out.write(reinterpret_cast<const char*>(&len), 4);
    out.write(name.data(), len);
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * 4));
  };
  const float l = static_cast<float>(loss);
  put("__loss__", &l, 1);
  for (const auto& [name, p] : named) {
    at::Tensor g = values               ? p.detach().contiguous()
                   : p.grad().defined() ? p.grad().contiguous()
                                        : at::zeros_like(p);
    put(name, g.data_ptr<float>(), static_cast<uint64_t>(g.numel()));
  }
}

int64_t LossTokens(const ModelSpec& m, const Trace& t, const IterationData& it) {
  int64_t n = 0;
  for (const auto& dp : it.micro_batches)
    for (const auto& mb : dp)
      for (uint32_t i : mb) n += TokensFor(m, t.samples[i]).llm_tokens;
  return n;
}

int RunReference(const std::string& scenario_path, const std::string& dir, std::ostream& out,
                 std::ostream& err, bool force_packed) {
  try {
    auto scenario = LoadScenario(scenario_path);
    if (!scenario) {
      err << "mmtwin-train: " << scenario.error().message() << "\n";
      return 2;
    }
    SetThreads(scenario->backend.threads);
    PlanOptions po;
    po.memory_report = false;
    auto run = BuildPlan(*scenario, po);
    if (!run) {
      err << "mmtwin-train: " << run.error().message() << "\n";
      return 2;
    }
    const Plan& plan = run->plan;
    const ModelSpec& m = run->model;
    const int n_layers = static_cast<int>(Layers(m).size());
    std::vector<std::unique_ptr<Layer>> layers;
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (int l = 0; l < n_layers; ++l) {
      layers.push_back(MakeLayer(m, l, plan.seed));
      for (auto& np : layers.back()->params()) named.push_back(np);
    }
    const IterationData& it = plan.iterations.at(0);
    const int64_t loss_tokens = LossTokens(m, *run->trace, it);
    double loss = 0;
    for (const auto& dp : it.micro_batches)
      for (const auto& samples : dp) {
        const MicroBatch mb =
            MakeMicroBatch(m, *run->trace, samples, plan.seed, loss_tokens, plan.packed || force_packed);
        State s;
        for (auto& l : layers) s = l->Forward(std::move(s), mb);
        loss += s.loss.item<double>();
        torch::autograd::backward({s.loss}, {});
      }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    WriteGrads(dir + "/grads.ref.bin", named, loss);
    {  // one AdamW step from zero moments, as every rank's first step
      at::NoGradGuard no_grad;
      for (auto& [name, p] : named) {
        at::Tensor m = at::zeros_like(p), v = at::zeros_like(p);
        if (p.grad().defined()) AdamW(p, p.grad(), m, v, 1);
      }
    }
    WriteGrads(dir + "/params.ref.bin", named, loss, true);
    out << "reference loss " << loss << " over " << loss_tokens << " tokens\n";
    return 0;
  } catch (const std::exception& e) {
    err << "mmtwin-train: reference: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace mmtwin::backend
